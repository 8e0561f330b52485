package http_test

import (
	"context"
	"errors"
	"fmt"
	nethttp "net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nczarrfs/nczarrfs/zmap"
	zhttp "github.com/nczarrfs/nczarrfs/zmap/http"
)

// probeServer serves a dataset of arrays a and b (n chunk keys each, of
// which chunk 0 is stored) from consolidated metadata, counting the HEADs
// of each array's chunks; deny makes every HEAD of a chunk a 403.
type probeServer struct {
	n     int
	deny  bool
	mu    sync.Mutex
	heads map[string]int // by array
}

func (p *probeServer) ServeHTTP(w nethttp.ResponseWriter, r *nethttp.Request) {
	key := strings.TrimPrefix(r.URL.Path, "/ds/")
	if key == ".zmetadata" {
		meta := fmt.Sprintf(`{"shape": [%d], "chunks": [1], "dtype": "<i1", "compressor": null, "fill_value": 0, "order": "C", "filters": null, "zarr_format": 2}`, p.n)
		fmt.Fprintf(w, `{"zarr_consolidated_format": 1, "metadata": {".zgroup": {"zarr_format": 2}, "a/.zarray": %s, "b/.zarray": %s}}`, meta, meta)
		return
	}
	array, chunk, ok := strings.Cut(key, "/")
	if !ok || strings.HasPrefix(chunk, ".") {
		nethttp.NotFound(w, r)
		return
	}
	if r.Method == nethttp.MethodHead {
		p.mu.Lock()
		p.heads[array]++
		p.mu.Unlock()
	}
	switch {
	case p.deny:
		nethttp.Error(w, "no", nethttp.StatusForbidden)
	case chunk == "0":
		w.Write([]byte{1})
	default:
		nethttp.NotFound(w, r)
	}
}

func (p *probeServer) count(array string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.heads[array]
}

// TestProbesForgotten lists the folders of two arrays under a clock the
// test moves: a probe answers for its window, and once that is past it is
// forgotten (not kept for the life of the store), and asked again.
func TestProbesForgotten(t *testing.T) {
	ps := &probeServer{n: 20, heads: map[string]int{}}
	srv := httptest.NewServer(ps)
	t.Cleanup(srv.Close)
	s := open(t, srv.URL+"/ds", zhttp.Options{})
	t.Cleanup(func() { s.Close() })
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	zhttp.SetProbeClock(s, clock, 10*time.Second)
	ctx := context.Background()
	list := func(array string) {
		t.Helper()
		es, err := s.Search(ctx, array)
		if err != nil || len(es) != 1 || es[0].Name != "0" { // chunk 0 (the .zarray is not served)
			t.Fatalf("Search(%s) = %v, %v", array, es, err)
		}
	}
	list("a")
	if got := ps.count("a"); got != 20 {
		t.Fatalf("first listing of a: %d HEADs, want 20", got)
	}
	advance(5 * time.Second)
	list("a")
	if got := ps.count("a"); got != 20 {
		t.Errorf("listing of a within the window: %d HEADs, want none more than 20", got)
	}
	advance(6 * time.Second) // a's probe is 11 s old
	list("b")
	if got := zhttp.Probes(s); got != 1 {
		t.Errorf("after the window, %d probes kept; want only b's", got)
	}
	list("a")
	if got := ps.count("a"); got != 40 {
		t.Errorf("listing of a after the window: %d HEADs, want 40", got)
	}
}

// TestProbeStopsOnError lists the folder of an array of 1,000 chunk keys
// on a server that refuses every HEAD: the listing fails with the first
// refusal, having asked for a few keys, not for all of them.
func TestProbeStopsOnError(t *testing.T) {
	ps := &probeServer{n: 1000, deny: true, heads: map[string]int{}}
	srv := httptest.NewServer(ps)
	t.Cleanup(srv.Close)
	s := open(t, srv.URL+"/ds", zhttp.Options{})
	t.Cleanup(func() { s.Close() })
	_, err := s.Search(context.Background(), "a")
	heads := ps.count("a")
	if !errors.Is(err, zmap.ErrPermission) {
		t.Fatalf("Search: %v; want a permission error", err)
	}
	if heads > 2*zhttp.Parallelism {
		t.Errorf("%d HEADs after the first refusal; want at most %d", heads, 2*zhttp.Parallelism)
	}
	t.Logf("%d HEADs of 1000 keys", heads)
}
