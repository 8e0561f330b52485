package listcache_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nczarrfs/nczarrfs/internal/miniotest"
	"github.com/nczarrfs/nczarrfs/internal/stats"
	"github.com/nczarrfs/nczarrfs/zmap"
	"github.com/nczarrfs/nczarrfs/zmap/file"
	"github.com/nczarrfs/nczarrfs/zmap/listcache"
	"github.com/nczarrfs/nczarrfs/zmap/s3"
	"github.com/nczarrfs/nczarrfs/zmap/zmaptest"
)

// writeTree writes objects under a new folder and returns it.
func writeTree(t *testing.T, objects map[string][]byte) string {
	t.Helper()
	dir := t.TempDir()
	for k, v := range objects {
		p := filepath.Join(dir, filepath.FromSlash(k))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, v, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestConformance runs the zmap conformance suite over a kept-listing
// store, kept for ever and not at all: it answers as the store it wraps.
func TestConformance(t *testing.T) {
	for _, ttl := range []time.Duration{listcache.Forever, 0} {
		t.Run(fmt.Sprint("ttl ", ttl), func(t *testing.T) {
			zmaptest.Run(t, func(t *testing.T, objects map[string][]byte) zmap.Store {
				s, err := file.Open(writeTree(t, objects))
				if err != nil {
					t.Fatal(err)
				}
				return listcache.New(s, listcache.Options{TTL: ttl})
			})
		})
	}
}

// clock is a time a test moves.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// requests is the count of requests s passed on since before.
func requests(s *stats.Store, before stats.Kinds) stats.Kinds {
	now := s.Snapshot().Requests
	return stats.Kinds{GET: now.GET - before.GET, RangedGET: now.RangedGET - before.RangedGET,
		HEAD: now.HEAD - before.HEAD, LIST: now.LIST - before.LIST}
}

// TestKeptListing checks what a kept listing saves: a folder is listed
// once within the TTL, names in it are stat'ed from it, names not in it
// fail with no request, metadata objects are fetched once, and all of it
// is asked again once the TTL has passed.
func TestKeptListing(t *testing.T) {
	dir := writeTree(t, map[string][]byte{
		".zgroup": []byte(`{"zarr_format":2}`), "v/.zarray": []byte(`{}`), "v/0.0": []byte("chunk"),
	})
	fs, err := file.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	counted := stats.CountStore(fs)
	c := listcache.New(counted, listcache.Options{TTL: time.Minute})
	clk := &clock{t: time.Now()}
	c.SetClock(clk.now)
	ctx := context.Background()

	steps := []struct {
		what string
		do   func() error
		want stats.Kinds
	}{
		{"list v", func() error { _, err := c.Search(ctx, "v"); return err }, stats.Kinds{LIST: 1}},
		{"list v again", func() error { _, err := c.Search(ctx, "v"); return err }, stats.Kinds{}},
		{"stat v/0.0", func() error {
			e, err := c.Stat(ctx, "v/0.0")
			if err == nil && e.Size != 5 {
				err = fmt.Errorf("size %d, want 5", e.Size)
			}
			return err
		}, stats.Kinds{}},
		{"size v/.zarray", func() error { _, err := c.Size(ctx, "v/.zarray"); return err }, stats.Kinds{}},
		{"get v/.zattrs (not listed)", func() error { return wantNotFound(c.Get(ctx, "v/.zattrs")) }, stats.Kinds{}},
		{"stat v/.git", func() error { _, err := c.Stat(ctx, "v/.git"); return wantNotFound(nil, err) }, stats.Kinds{}},
		{"list v/__pycache__", func() error {
			e, err := c.Search(ctx, "v/__pycache__")
			if err == nil && len(e) != 0 {
				err = fmt.Errorf("listed %v", e)
			}
			return err
		}, stats.Kinds{}},
		{"get v/.zarray", func() error { _, err := c.Get(ctx, "v/.zarray"); return err }, stats.Kinds{GET: 1}},
		{"get v/.zarray again", func() error { _, err := c.Get(ctx, "v/.zarray"); return err }, stats.Kinds{}},
		{"get .zattrs (root not listed)", func() error { return wantNotFound(c.Get(ctx, ".zattrs")) }, stats.Kinds{GET: 1}},
		{"get .zattrs again", func() error { return wantNotFound(c.Get(ctx, ".zattrs")) }, stats.Kinds{}},
		{"get v/0.0 (a chunk: not kept)", func() error { _, err := c.Get(ctx, "v/0.0"); return err }, stats.Kinds{GET: 1}},
		{"a minute later: list v", func() error {
			clk.add(time.Minute)
			_, err := c.Search(ctx, "v")
			return err
		}, stats.Kinds{LIST: 1}},
		{"get v/.zarray", func() error { _, err := c.Get(ctx, "v/.zarray"); return err }, stats.Kinds{GET: 1}},
	}
	for _, s := range steps {
		before := counted.Snapshot().Requests
		if err := s.do(); err != nil {
			t.Fatalf("%s: %v", s.what, err)
		}
		if got := requests(counted, before); got != s.want {
			t.Errorf("%s: requests %+v, want %+v", s.what, got, s.want)
		}
	}

	// A new object shows once the TTL has passed, not before.
	if err := os.WriteFile(filepath.Join(dir, "v", "1.0"), []byte("new"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Stat(ctx, "v/1.0"); !errors.Is(err, zmap.ErrNotFound) {
		t.Errorf("new object within the TTL: %v, want not found from the kept listing", err)
	}
	clk.add(time.Minute)
	if _, err := c.Search(ctx, "v"); err != nil {
		t.Fatal(err)
	}
	if e, err := c.Stat(ctx, "v/1.0"); err != nil || e.Size != 3 {
		t.Errorf("new object after the TTL: %+v, %v", e, err)
	}

	// TTL 0 keeps nothing.
	none := listcache.New(counted, listcache.Options{TTL: 0})
	before := counted.Snapshot().Requests
	for range 2 {
		none.Search(ctx, "v")
		none.Get(ctx, "v/.zarray")
	}
	if got := requests(counted, before); got != (stats.Kinds{GET: 2, LIST: 2}) {
		t.Errorf("TTL 0: requests %+v, want every call passed on", got)
	}
}

func wantNotFound(_ []byte, err error) error {
	if !errors.Is(err, zmap.ErrNotFound) {
		return fmt.Errorf("got %v, want not found", err)
	}
	return nil
}

// TestFlatListing checks, on MinIO, that a dataset within the limit is
// listed flat once and that every folder is then answered, as the store
// itself lists it, with no further request; past the limit, or when the
// listing takes more memory than the kept listings may, folders are listed
// one by one.
func TestFlatListing(t *testing.T) {
	srv := miniotest.Start(t)
	for _, kv := range srv.Env() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	empty := filepath.Join(t.TempDir(), "empty")
	os.WriteFile(empty, nil, 0o600)
	t.Setenv("AWS_CONFIG_FILE", empty)
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", empty)
	srv.CreateBucket(t, "flat")
	objects := map[string][]byte{".zgroup": []byte(`{}`), "g/.zgroup": []byte(`{}`), "g/a.b": []byte("x"), "g/a/c": []byte("y")}
	for i := range 50 {
		objects[fmt.Sprintf("v%02d/.zarray", i)] = []byte(`{}`)
		objects[fmt.Sprintf("v%02d/0", i)] = []byte("chunk")
		objects[fmt.Sprintf("v%02d/n/0.0", i)] = []byte("nested")
	}
	put := map[string][]byte{}
	for k, v := range objects {
		put["ds/"+k] = v
	}
	srv.Put(t, "flat", put)
	loc, err := s3.ParseURL(srv.Endpoint + "/flat/ds#mode=zarr,s3")
	if err != nil {
		t.Fatal(err)
	}
	st, err := s3.Open(context.Background(), loc, s3.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	var folders []string
	for k := range objects {
		for dir := k; dir != ""; {
			i := strings.LastIndexByte(dir, '/')
			if i < 0 {
				dir = ""
			} else {
				dir = dir[:i]
			}
			folders = append(folders, dir)
		}
	}

	for _, tc := range []struct {
		limit    int
		maxBytes int64 // of the kept listings
		wantFlat bool
	}{{1000, 0, true}, {100, 0, false}, {1000, 8 << 10, false}} {
		t.Run(fmt.Sprint("limit ", tc.limit, " max ", tc.maxBytes), func(t *testing.T) {
			counted := stats.CountStore(st)
			c := listcache.New(counted, listcache.Options{TTL: time.Hour, FlatLimit: tc.limit, MaxBytes: tc.maxBytes})
			if _, err := c.Get(ctx, ".zgroup"); err != nil {
				t.Fatal(err)
			}
			snap := counted.Snapshot()
			if tc.wantFlat && (snap.ListFlat.Requests != 1 || snap.ListFlat.Entries != int64(len(objects))) {
				t.Errorf("flat listing: %+v, want 1 request of %d keys", snap.ListFlat, len(objects))
			}
			before := counted.Snapshot().Requests
			for _, f := range folders {
				got, err := c.Search(ctx, f)
				if err != nil {
					t.Fatal(err)
				}
				want, err := st.Search(ctx, f)
				if err != nil {
					t.Fatal(err)
				}
				if fmt.Sprint(zmaptest.WithoutTimes(got)) != fmt.Sprint(zmaptest.WithoutTimes(want)) {
					t.Errorf("Search(%q) = %v, want %v", f, got, want)
				}
			}
			for _, k := range []string{"v00/.zattrs", "nothing/here", "g/a.b/x"} {
				if _, err := c.Get(ctx, k); !errors.Is(err, zmap.ErrNotFound) {
					t.Errorf("Get(%q): %v, want not found", k, err)
				}
			}
			got := requests(counted, before)
			if tc.wantFlat && got != (stats.Kinds{}) {
				t.Errorf("after the flat listing: requests %+v, want none", got)
			}
			if !tc.wantFlat && got.LIST == 0 {
				t.Errorf("past the limit: requests %+v, want folders listed", got)
			}
		})
	}
}

// TestPrefetch checks that listing a folder lists its sub-folders in the
// background, one level down only: a walk then finds them kept.
func TestPrefetch(t *testing.T) {
	dir := writeTree(t, map[string][]byte{
		"a/x/1": []byte("1"), "a/y/2": []byte("2"), "a/y/deeper/3": []byte("3"), "b": []byte("b"),
	})
	fs, err := file.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	counted := stats.CountStore(fs)
	c := listcache.New(counted, listcache.Options{TTL: time.Hour, Prefetch: 2})
	ctx := context.Background()
	if _, err := c.Search(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !c.Listed("a/x") || !c.Listed("a/y") {
		if time.Now().After(deadline) {
			t.Fatal("the sub-folders of a were not listed in the background")
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond) // a deeper listing would have started by now
	if c.Listed("a/y/deeper") {
		t.Error("a/y/deeper was listed: the background listings went more than one level down")
	}
	before := counted.Snapshot().Requests
	for _, p := range []string{"a/x", "a/y"} {
		if _, err := c.Search(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	if got := requests(counted, before); got != (stats.Kinds{}) {
		t.Errorf("listing the prefetched folders made %+v requests, want none", got)
	}
}

// gated is a real store whose listings of sub-folders wait for open to
// close, counting how many wait at once.
type gated struct {
	zmap.Store
	open             chan struct{}
	mu               sync.Mutex
	waiting, maxWait int
	listed           int
}

func (g *gated) Search(ctx context.Context, prefix string) ([]zmap.Entry, error) {
	if prefix != "top" {
		g.mu.Lock()
		g.waiting++
		g.maxWait = max(g.maxWait, g.waiting)
		g.mu.Unlock()
		<-g.open
		g.mu.Lock()
		g.waiting--
		g.listed++
		g.mu.Unlock()
	}
	return g.Store.Search(ctx, prefix)
}

// TestPrefetchGoroutines lists a folder of 2,000 sub-folders whose
// listings wait: the background listings take at most Prefetch
// goroutines, not one per sub-folder, and all of them are listed in the
// end, after which those goroutines are gone.
func TestPrefetchGoroutines(t *testing.T) {
	const n, prefetch = 2000, 3
	tree := map[string][]byte{}
	for i := range n {
		tree[fmt.Sprintf("top/d%04d/x", i)] = []byte("x")
	}
	fs, err := file.Open(writeTree(t, tree))
	if err != nil {
		t.Fatal(err)
	}
	g := &gated{Store: fs, open: make(chan struct{})}
	c := listcache.New(g, listcache.Options{TTL: time.Hour, Prefetch: prefetch})
	before := runtime.NumGoroutine()
	entries, err := c.Search(context.Background(), "top")
	if err != nil || len(entries) != n {
		t.Fatalf("Search(top) = %d entries, %v", len(entries), err)
	}
	// Wait until the workers are all waiting in the store.
	waitFor(t, "the background listings to start", func() bool {
		g.mu.Lock()
		defer g.mu.Unlock()
		return g.waiting == prefetch
	})
	if extra := runtime.NumGoroutine() - before; extra > prefetch {
		t.Errorf("%d goroutines more with %d sub-folders queued; want at most %d", extra, n, prefetch)
	}
	close(g.open)
	for i := range n {
		p := fmt.Sprintf("top/d%04d", i)
		waitFor(t, p+" to be listed", func() bool { return c.Listed(p) })
	}
	waitFor(t, "the background goroutines to end", func() bool { return runtime.NumGoroutine() <= before })
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.maxWait > prefetch || g.listed != n {
		t.Errorf("%d listings at once, %d listed; want at most %d at once, %d listed", g.maxWait, g.listed, prefetch, n)
	}
}

// waitFor waits until cond holds, failing t after a minute.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited a minute for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}
