package fusefs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"syscall"
	"testing"

	"github.com/nczarrfs/nczarrfs/nczarr/codec"
	"github.com/nczarrfs/nczarrfs/zmap"
	"github.com/nczarrfs/nczarrfs/zmap/listcache"
)

func TestErrnoOf(t *testing.T) {
	tests := []struct {
		err  error
		want syscall.Errno
	}{
		{nil, 0},
		{fmt.Errorf("get g/v/.zarray: %w", zmap.ErrNotFound), syscall.ENOENT},
		{fmt.Errorf("chunk v/0.0: %w", zmap.ErrPermission), syscall.EACCES},
		{fmt.Errorf("chunk v/0.0: %w", context.Canceled), syscall.EINTR},
		{fmt.Errorf("chunk v/0.0: %w", context.DeadlineExceeded), syscall.EIO},
		{fmt.Errorf("chunk v/0.0: zlib: %w", codec.ErrCorrupt), syscall.EIO},
		{fmt.Errorf("v/.zarray: %w", codec.ErrUnknown), syscall.EIO},
		{fmt.Errorf("wrapped: %w", syscall.EROFS), syscall.EROFS},
		{fmt.Errorf("%w: 10 bytes at 0 of 20", errShortRead), syscall.EIO},
		{errors.New("anything else"), syscall.EIO},
	}
	for _, tt := range tests {
		if got := errnoOf(tt.err); got != tt.want {
			t.Errorf("errnoOf(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
}

func TestReporterLogsOncePerFailure(t *testing.T) {
	var buf bytes.Buffer
	r := &reporter{log: slog.New(slog.NewTextHandler(&buf, nil)), seen: map[string]bool{}}
	bad := fmt.Errorf("chunk v/1.2: %w", codec.ErrCorrupt)
	for i := 0; i < 5; i++ {
		if e := r.errno("read data", "v", bad); e != syscall.EIO {
			t.Fatalf("errno %v, want EIO", e)
		}
	}
	r.errno("lookup", "x", fmt.Errorf("x: %w", zmap.ErrNotFound)) // expected: not logged
	out := buf.String()
	if n := strings.Count(out, "\n"); n != 1 || !strings.Contains(out, "v/1.2") {
		t.Errorf("log has %d lines, want 1 naming v/1.2:\n%s", n, out)
	}
}

func TestClamp(t *testing.T) {
	buf := make([]byte, 10)
	tests := []struct {
		off, size int64
		want      int
	}{
		{0, 100, 10}, {95, 100, 5}, {100, 100, 0}, {200, 100, 0}, {-1, 100, 0}, {0, 0, 0},
	}
	for _, tt := range tests {
		if got := len(clamp(buf, tt.off, tt.size)); got != tt.want {
			t.Errorf("clamp(off %d, size %d) = %d bytes, want %d", tt.off, tt.size, got, tt.want)
		}
	}
}

// shortStore answers every ReadAt with half the bytes asked for and
// io.EOF, as a store whose object is shorter than it was listed.
type shortStore struct{ zmap.Store }

func (shortStore) ReadAt(ctx context.Context, key string, p []byte, off int64) (int, error) {
	for i := range p[:len(p)/2] {
		p[i] = 'x'
	}
	return len(p) / 2, io.EOF
}

// TestObjectReadNeverShort reads a stored file whose store answers short
// before the size the file was listed with: the READ fails with EIO
// rather than pass the short answer on (which cat takes for the end), and
// the failure is logged once naming the key.
func TestObjectReadNeverShort(t *testing.T) {
	var buf bytes.Buffer
	tr := &tree{lc: listcache.New(shortStore{}, listcache.Options{TTL: listcache.Forever}), rep: &reporter{log: slog.New(slog.NewTextHandler(&buf, nil)), seen: map[string]bool{}}}
	o := &object{t: tr, key: "v/0", size: 100}
	for _, tc := range []struct{ off, n int64 }{{0, 100}, {50, 4096}, {99, 1}} {
		if _, errno := o.Read(context.Background(), nil, make([]byte, tc.n), tc.off); errno != syscall.EIO {
			t.Errorf("Read of %d bytes at %d with a short store answer: errno %v, want EIO", tc.n, tc.off, errno)
		}
	}
	// At and past the end: an empty answer, no request.
	if res, errno := o.Read(context.Background(), nil, make([]byte, 10), 100); errno != 0 || res.Size() != 0 {
		t.Errorf("Read at the end: %d bytes, errno %v; want 0, none", res.Size(), errno)
	}
	if !strings.Contains(buf.String(), "key=v/0") || !strings.Contains(buf.String(), "short read") {
		t.Errorf("log does not name the key and the short read:\n%s", buf.String())
	}
}
