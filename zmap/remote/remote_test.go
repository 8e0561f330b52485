package remote_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/nczarrfs/nczarrfs/internal/faultproxy"
	"github.com/nczarrfs/nczarrfs/zmap"
	"github.com/nczarrfs/nczarrfs/zmap/remote"
)

func TestParseContentRange(t *testing.T) {
	tests := []struct {
		cr               string
		start, end, size int64
		wantErr          bool
	}{
		{cr: "bytes 0-99/1000", start: 0, end: 99, size: 1000},
		{cr: "bytes 5-5/6", start: 5, end: 5, size: 6},
		{cr: "bytes 10-19/*", start: 10, end: 19, size: -1},
		{cr: "bytes 0-99", wantErr: true},
		{cr: "bytes 9-1/100", wantErr: true},
		{cr: "bytes 0-99/99", wantErr: true},
		{cr: "bytes -1-5/10", wantErr: true},
		{cr: "items 0-1/2", wantErr: true},
		{cr: "", wantErr: true},
	}
	for _, tt := range tests {
		start, end, size, err := remote.ParseContentRange(tt.cr)
		if tt.wantErr {
			if err == nil {
				t.Errorf("ParseContentRange(%q) = %d, %d, %d; want an error", tt.cr, start, end, size)
			}
			continue
		}
		if err != nil || start != tt.start || end != tt.end || size != tt.size {
			t.Errorf("ParseContentRange(%q) = %d, %d, %d, %v; want %d, %d, %d", tt.cr, start, end, size, err, tt.start, tt.end, tt.size)
		}
	}
}

// FuzzParseContentRange checks that an accepted Content-Range is a
// non-empty range inside its object.
func FuzzParseContentRange(f *testing.F) {
	for _, s := range []string{"bytes 0-99/1000", "bytes 10-19/*", "bytes 1-0/5", "bytes 0-0/0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, cr string) {
		start, end, size, err := remote.ParseContentRange(cr)
		if err != nil {
			return
		}
		if start < 0 || end < start || (size != -1 && size <= end) {
			t.Errorf("ParseContentRange(%q) = %d, %d, %d", cr, start, end, size)
		}
	})
}

func TestRangeHeaderAndETag(t *testing.T) {
	for r, want := range map[remote.Range]string{{0, 10}: "bytes=0-9", {5, 1}: "bytes=5-5", {7, -1}: "bytes=7-"} {
		if got := r.Header(); got != want {
			t.Errorf("%+v.Header() = %q, want %q", r, got, want)
		}
	}
	for v, want := range map[string]string{`"abc"`: "abc", `W/"abc"`: "W/abc", "": "", "bare": "bare"} {
		if got := remote.TrimETag(v); got != want {
			t.Errorf("TrimETag(%q) = %q, want %q", v, got, want)
		}
	}
}

// httpBackend is a Backend over plain HTTP GETs, the least a backend
// does: the test's own, so that Reader is tried against a real server
// without a cloud SDK.
type httpBackend struct {
	base string
	c    remote.Doer
}

func (b httpBackend) Open(ctx context.Context, key string, rng *remote.Range, etag string) (*remote.Answer, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.base+"/"+key, nil)
	if err != nil {
		return nil, err
	}
	if rng != nil {
		req.Header.Set("Range", rng.Header())
	}
	if etag != "" {
		req.Header.Set("If-Match", etag)
	}
	resp, err := b.c.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusPartialContent {
		resp.Body.Close()
		return nil, statusError(resp.StatusCode)
	}
	return &remote.Answer{Body: resp.Body, ContentRange: resp.Header.Get("Content-Range"),
		Length: resp.ContentLength, ETag: resp.Header.Get("ETag")}, nil
}

type statusError int

func (e statusError) Error() string { return fmt.Sprintf("status %d", int(e)) }

func (b httpBackend) Classify(err error) remote.Class {
	var s statusError
	switch {
	case !errors.As(err, &s):
		return remote.Transient // no answer: a connection error
	case s == 404:
		return remote.NotFound
	case s == 412:
		return remote.Changed
	case s == 416:
		return remote.RangeNotSatisfiable
	case remote.ThrottleStatus(int(s)):
		return remote.Throttled
	}
	return remote.Failed
}

func (b httpBackend) Err(ctx context.Context, op, key string, err error) error {
	if b.Classify(err) == remote.NotFound {
		return fmt.Errorf("%s %s: %w", op, key, zmap.ErrNotFound)
	}
	return fmt.Errorf("%s %s: %w", op, key, err)
}

// server serves objects with ETags (which http.ServeContent honours in
// If-Match and Range requests) behind a fault proxy. version changes
// every object's ETag and content when set.
type server struct {
	objects map[string][]byte
	etag    func(key string) string
}

func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key := strings.TrimPrefix(r.URL.Path, "/b/")
	data, ok := s.objects[key]
	if !ok {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("ETag", s.etag(key))
	http.ServeContent(w, r, key, time.Time{}, bytes.NewReader(data))
}

func startReader(t *testing.T, objects map[string][]byte, etag func(string) string, timeout time.Duration) (*remote.Reader, *faultproxy.Proxy) {
	t.Helper()
	srv := httptest.NewServer(&server{objects: objects, etag: etag})
	t.Cleanup(srv.Close)
	p := faultproxy.Start(t, srv.URL)
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	pacer := remote.NewPacer(remote.DefaultMaxInFlight)
	b := httpBackend{base: p.URL + "/b", c: remote.Watch(&http.Client{Transport: tr}, pacer, remote.StallAfter(timeout))}
	return remote.NewReader(b, remote.Options{Timeout: timeout, Pacer: pacer}), p
}

// TestReaderFaults breaks requests once in each way a connection breaks
// and checks that Get and ReadAt still return every byte, resumed from
// where the body broke.
func TestReaderFaults(t *testing.T) {
	data := make([]byte, 200_000)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range data {
		data[i] = byte(rng.UintN(256))
	}
	r, p := startReader(t, map[string][]byte{"obj": data}, func(string) string { return `"v1"` }, 5*time.Second)
	ctx := context.Background()
	for _, f := range []faultproxy.Fault{
		{Kind: faultproxy.ResetBeforeReply},
		{Kind: faultproxy.ResetMidBody},
		{Kind: faultproxy.CutBody},
		{Kind: faultproxy.CutBodyNoLength},
		{Kind: faultproxy.StallMidBody},
		{Kind: faultproxy.Answer, Status: 503},
		{Kind: faultproxy.Answer, Status: 429},
	} {
		t.Run(f.String(), func(t *testing.T) {
			// A whole body with neither a length nor a range that
			// ends cleanly cannot be told from a complete one: Get
			// (and a reader of the object with any HTTP client)
			// would return its bytes. Ranged reads know their length.
			if f.Kind != faultproxy.CutBodyNoLength {
				p.Inject("obj", f, 1)
				b, err := r.Get(ctx, "obj")
				if err != nil || !bytes.Equal(b, data) {
					t.Fatalf("Get: %d bytes, %v; want the object's %d", len(b), err, len(data))
				}
			}
			p.Inject("obj", f, 1)
			buf := make([]byte, 50_000)
			n, err := r.ReadAt(ctx, "obj", buf, 1234)
			if err != nil || n != len(buf) || !bytes.Equal(buf, data[1234:1234+len(buf)]) {
				t.Fatalf("ReadAt: %d bytes, %v", n, err)
			}
			p.Inject("obj", f, 1)
			n, err = r.ReadAt(ctx, "obj", buf, int64(len(data)-100))
			if err != io.EOF || n != 100 || !bytes.Equal(buf[:n], data[len(data)-100:]) {
				t.Fatalf("ReadAt at the end: %d bytes, %v; want 100 and io.EOF", n, err)
			}
		})
	}
	if resumed, _ := r.Resumed(); resumed == 0 {
		t.Errorf("no body was resumed")
	}
	if r.Throttled() < 2 {
		t.Errorf("Throttled = %d, want at least the 2 answers injected", r.Throttled())
	}
	n, err := r.ReadAt(ctx, "obj", make([]byte, 10), int64(len(data)))
	if n != 0 || err != io.EOF {
		t.Errorf("ReadAt at the end = %d, %v; want 0, io.EOF", n, err)
	}
	if _, err := r.Get(ctx, "missing"); !errors.Is(err, zmap.ErrNotFound) {
		t.Errorf("Get of a missing object: %v; want ErrNotFound", err)
	}
}

// TestReaderChanged replaces the object between a body that breaks off
// and its resumption: the read fails with ErrChanged, never mixing two
// versions.
func TestReaderChanged(t *testing.T) {
	data := bytes.Repeat([]byte("0123456789"), 20_000)
	calls := 0
	etag := func(string) string {
		calls++
		return fmt.Sprintf(`"v%d"`, calls) // every answer a new version
	}
	r, p := startReader(t, map[string][]byte{"obj": data}, etag, 5*time.Second)
	p.Inject("obj", faultproxy.Fault{Kind: faultproxy.ResetMidBody}, 1)
	_, err := r.ReadAt(context.Background(), "obj", make([]byte, 100_000), 0)
	if !errors.Is(err, remote.ErrChanged) {
		t.Fatalf("read across a replacement: %v; want ErrChanged", err)
	}
	if _, changed := r.Resumed(); changed != 1 {
		t.Errorf("changed = %d, want 1", changed)
	}
}

// TestReaderTimeout holds every request: the read fails within the
// timeout, not later, with context.DeadlineExceeded.
func TestReaderTimeout(t *testing.T) {
	r, p := startReader(t, map[string][]byte{"obj": make([]byte, 100_000)}, func(string) string { return `"v"` }, 500*time.Millisecond)
	p.Inject("obj", faultproxy.Fault{Kind: faultproxy.Answer, Status: 503}, -1)
	_, err := r.Get(context.Background(), "obj")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Get of an object always throttled: %v; want DeadlineExceeded", err)
	}
}
