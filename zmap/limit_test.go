package zmap_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"

	"github.com/nczarrfs/nczarrfs/zmap"
)

func TestMaxSize(t *testing.T) {
	ctx := context.Background()
	if got := zmap.MaxSize(ctx); got != zmap.DefaultMaxSize {
		t.Errorf("MaxSize(Background) = %d, want %d", got, zmap.DefaultMaxSize)
	}
	if got := zmap.MaxSize(zmap.WithMaxSize(ctx, 10)); got != 10 {
		t.Errorf("MaxSize(WithMaxSize(10)) = %d", got)
	}
	err := zmap.CheckSize(zmap.WithMaxSize(ctx, 10), "a/0", 11)
	var tl *zmap.TooLargeError
	if !errors.As(err, &tl) || tl.Key != "a/0" || tl.Size != 11 || tl.Bound != 10 {
		t.Errorf("CheckSize(11 over 10) = %v", err)
	}
	if err := zmap.CheckSize(zmap.WithMaxSize(ctx, 10), "a/0", 10); err != nil {
		t.Errorf("CheckSize(10 within 10) = %v", err)
	}
}

// endless is a body that never ends; it counts what was read of it.
type endless struct{ read int64 }

func (e *endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'x'
	}
	e.read += int64(len(p))
	return len(p), nil
}

func TestReadBounded(t *testing.T) {
	for _, tt := range []struct {
		name  string
		size  int
		bound int64
		ok    bool
	}{
		{"empty", 0, 0, true},
		{"empty bound 1", 0, 1, true},
		{"at bound", 1000, 1000, true},
		{"one over", 1001, 1000, false},
		{"under", 999, 1000, true},
		{"far over", 1 << 20, 100, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			src := bytes.Repeat([]byte{7}, tt.size)
			got, err := zmap.ReadBounded(io.LimitReader(bytes.NewReader(src), int64(tt.size)), "k", tt.bound)
			if tt.ok {
				if err != nil || !bytes.Equal(got, src) {
					t.Fatalf("ReadBounded = %d bytes, %v; want %d bytes", len(got), err, tt.size)
				}
				return
			}
			var tl *zmap.TooLargeError
			if !errors.As(err, &tl) || !tl.AtLeast || tl.Size != tt.bound+1 || tl.Bound != tt.bound || got != nil {
				t.Fatalf("ReadBounded = %d bytes, %v; want a TooLargeError at %d", len(got), err, tt.bound+1)
			}
		})
	}
	// An endless body: at most bound+1 bytes are read of it.
	e := &endless{}
	_, err := zmap.ReadBounded(e, "k", 1<<20)
	if !zmap.IsTooLarge(err) || e.read != 1<<20+1 {
		t.Errorf("endless body: %v after %d bytes; want TooLarge after %d", err, e.read, 1<<20+1)
	}
	// A broken body keeps its error.
	broken := io.MultiReader(bytes.NewReader([]byte("abc")), iotestErr{})
	got, err := zmap.ReadBounded(broken, "k", 100)
	if !errors.Is(err, errBroken) || string(got) != "abc" {
		t.Errorf("broken body: %q, %v", got, err)
	}
}

var errBroken = errors.New("broken")

type iotestErr struct{}

func (iotestErr) Read([]byte) (int, error) { return 0, errBroken }
