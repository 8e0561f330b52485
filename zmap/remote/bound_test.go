package remote_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nczarrfs/nczarrfs/internal/faultproxy"
	"github.com/nczarrfs/nczarrfs/zmap"
	"github.com/nczarrfs/nczarrfs/zmap/remote"
)

// boundServer answers, for key "len/N", N bytes with a Content-Length;
// for "chunked/N", N bytes with none (chunked); for "endless", a chunked
// body that never ends (until the client goes); for "broken/N", the first
// half of N bytes with no length and then a reset, and a range request
// with the rest and its total in Content-Range.
type boundServer struct{ sent chan int64 }

func (s *boundServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key := strings.TrimPrefix(r.URL.Path, "/b/")
	kind, arg, _ := strings.Cut(key, "/")
	var n int64
	fmt.Sscan(arg, &n)
	w.Header().Set("ETag", `"v1"`)
	fl := w.(http.Flusher)
	switch kind {
	case "len":
		w.Header().Set("Content-Length", fmt.Sprint(n))
		w.Write(make([]byte, n))
	case "chunked":
		w.Write(make([]byte, n))
		fl.Flush()
	case "endless":
		var sent int64
		defer func() { s.sent <- sent }()
		buf := make([]byte, 64<<10)
		for r.Context().Err() == nil {
			m, err := w.Write(buf)
			sent += int64(m)
			if err != nil {
				return
			}
			fl.Flush()
		}
	case "broken":
		if rng := r.Header.Get("Range"); rng != "" {
			var from int64
			fmt.Sscanf(rng, "bytes=%d-", &from)
			w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", from, n-1, n))
			w.Header().Set("Content-Length", fmt.Sprint(n-from))
			w.WriteHeader(http.StatusPartialContent)
			w.Write(make([]byte, n-from))
			return
		}
		w.Write(make([]byte, n/2))
		fl.Flush()
		panic(http.ErrAbortHandler) // the connection breaks off
	}
}

// TestReaderBound reads objects over and within the request's bound,
// however their answers tell their size: a Content-Length, none, none
// and no end, or the total of a resumed answer's Content-Range.
func TestReaderBound(t *testing.T) {
	s := &boundServer{sent: make(chan int64, 1)}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	r := remote.NewReader(httpBackend{base: srv.URL + "/b", c: &http.Client{Transport: tr}}, remote.Options{Timeout: 10 * time.Second})
	const bound = 100_000
	ctx := zmap.WithMaxSize(context.Background(), bound)
	for _, tt := range []struct {
		key     string
		size    int64 // what the error says; 0 when the Get succeeds
		atLeast bool
	}{
		{key: "len/100000"},
		{key: "len/100001", size: 100001},
		{key: "len/5000000000", size: 5000000000},
		{key: "chunked/100000"},
		{key: "chunked/100001", size: bound + 1, atLeast: true},
		{key: "chunked/0"},
		{key: "broken/100000"},
		{key: "broken/150000", size: 150000},
		{key: "endless", size: bound + 1, atLeast: true},
	} {
		t.Run(tt.key, func(t *testing.T) {
			b, err := r.Get(ctx, tt.key)
			if tt.size == 0 {
				var want int64
				fmt.Sscan(strings.SplitN(tt.key, "/", 2)[1], &want)
				if err != nil || int64(len(b)) != want {
					t.Fatalf("Get = %d bytes, %v; want %d", len(b), err, want)
				}
				return
			}
			var tl *zmap.TooLargeError
			if !errors.As(err, &tl) || b != nil {
				t.Fatalf("Get = %d bytes, %v; want a TooLargeError", len(b), err)
			}
			if tl.Key != tt.key || tl.Size != tt.size || tl.Bound != bound || tl.AtLeast != tt.atLeast {
				t.Errorf("TooLargeError = %+v; want key %s, size %d, bound %d, at least %v", *tl, tt.key, tt.size, bound, tt.atLeast)
			}
			if !strings.Contains(err.Error(), tt.key) || !strings.Contains(err.Error(), fmt.Sprint(tt.size)) || !strings.Contains(err.Error(), fmt.Sprint(bound)) {
				t.Errorf("error %q does not name the key and both sizes", err)
			}
		})
	}
	// The endless body's server stopped once the reader went: it sent
	// the bound and what was in flight, not gigabytes.
	select {
	case sent := <-s.sent:
		if sent > 64<<20 {
			t.Errorf("the endless body's server sent %d bytes", sent)
		}
	case <-time.After(10 * time.Second):
		t.Errorf("the endless body's server is still sending")
	}
}

// TestReaderBrokenBodyCause breaks every body off until the timeout: the
// error says both that the time ran out and what broke the body.
func TestReaderBrokenBodyCause(t *testing.T) {
	data := make([]byte, 200_000)
	r, p := startReader(t, map[string][]byte{"obj": data}, func(string) string { return `"v1"` }, 700*time.Millisecond)
	p.Inject("obj", faultproxy.Fault{Kind: faultproxy.ResetMidBody}, -1)
	_, err := r.ReadAt(context.Background(), "obj", make([]byte, 150_000), 0)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("ReadAt: %v; want DeadlineExceeded", err)
	}
	if !errors.Is(err, syscall.ECONNRESET) && !strings.Contains(err.Error(), "reset") && !strings.Contains(err.Error(), "EOF") {
		t.Errorf("ReadAt: %v; want the body's own error (a reset) kept", err)
	}
}

// TestReaderShortRange answers a range request with fewer bytes than
// asked though the Content-Range total says the object goes on: that is a
// body cut short, read to the end (here: resumed), never a short read
// taken for the object's end.
func TestReaderShortRange(t *testing.T) {
	data := make([]byte, 10_000)
	for i := range data {
		data[i] = byte(i * 7)
	}
	short := true
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var from, to int64
		fmt.Sscanf(r.Header.Get("Range"), "bytes=%d-%d", &from, &to)
		if short {
			short = false
			to = from + 99 // 100 bytes, whatever was asked
		}
		to = min(to, int64(len(data)-1))
		w.Header().Set("ETag", `"v1"`)
		w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", from, to, len(data)))
		w.WriteHeader(http.StatusPartialContent)
		w.Write(data[from : to+1])
	}))
	t.Cleanup(srv.Close)
	r := remote.NewReader(httpBackend{base: srv.URL + "/b", c: srv.Client()}, remote.Options{Timeout: 5 * time.Second})
	p := make([]byte, 5000)
	n, err := r.ReadAt(context.Background(), "obj", p, 1000)
	if err != nil || n != len(p) || !bytes.Equal(p, data[1000:6000]) {
		t.Fatalf("ReadAt = %d, %v; want all %d bytes", n, err, len(p))
	}
	// The object's end, as its total says it: io.EOF after the rest.
	short = true
	n, err = r.ReadAt(context.Background(), "obj", p, 9800)
	if n != 200 || err == nil || !bytes.Equal(p[:n], data[9800:]) {
		t.Fatalf("ReadAt at the end = %d, %v; want 200 and io.EOF", n, err)
	}
}
