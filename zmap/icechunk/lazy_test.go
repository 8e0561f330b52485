package icechunk_test

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/nczarrfs/nczarrfs/zmap"
	"github.com/nczarrfs/nczarrfs/zmap/file"
	"github.com/nczarrfs/nczarrfs/zmap/icechunk"
)

// logged is a store that records the keys asked of it.
type logged struct {
	zmap.Store
	mu   sync.Mutex
	keys []string
}

func (l *logged) add(op, key string) {
	l.mu.Lock()
	l.keys = append(l.keys, op+" "+key)
	l.mu.Unlock()
}

func (l *logged) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	k := l.keys
	l.keys = nil
	return k
}

func (l *logged) Get(ctx context.Context, key string) ([]byte, error) {
	l.add("get", key)
	return l.Store.Get(ctx, key)
}

func (l *logged) ReadAt(ctx context.Context, key string, p []byte, off int64) (int, error) {
	l.add("readat", key)
	return l.Store.ReadAt(ctx, key, p, off)
}

func (l *logged) Stat(ctx context.Context, key string) (zmap.Entry, error) {
	l.add("stat", key)
	return l.Store.Stat(ctx, key)
}

func (l *logged) Search(ctx context.Context, prefix string) ([]zmap.Entry, error) {
	l.add("search", prefix)
	return l.Store.Search(ctx, prefix)
}

// TestLazy counts what each step reads of a split repository: opening
// reads the repo file, a version its snapshot, listings and zarr.json
// nothing more, and a chunk only the one manifest (of the 17 split ones)
// that covers it, then one ranged read of its chunk file.
func TestLazy(t *testing.T) {
	ctx := context.Background()
	fst, err := file.Open(filepath.Join(fixtures, "split-repo-v2"))
	if err != nil {
		t.Fatal(err)
	}
	defer fst.Close()
	st := &logged{Store: fst}
	kinds := func(keys []string) string {
		var out []string
		for _, k := range keys {
			op, key, _ := strings.Cut(k, " ")
			dir, _, _ := strings.Cut(key, "/")
			out = append(out, op+" "+dir)
		}
		return strings.Join(out, ", ")
	}
	r, err := icechunk.Open(ctx, st, icechunk.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := kinds(st.take()); got != "get repo" {
		t.Errorf("open read %q", got)
	}
	id, err := r.Branch(ctx, "main")
	if err != nil {
		t.Fatal(err)
	}
	v, err := r.Version(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if got := kinds(st.take()); got != "get snapshots" {
		t.Errorf("version read %q", got)
	}
	if _, err := v.Search(ctx, "group1"); err != nil {
		t.Fatal(err)
	}
	if _, err := v.Get(ctx, "group1/split/zarr.json"); err != nil {
		t.Fatal(err)
	}
	if got := st.take(); len(got) != 0 {
		t.Errorf("listing and zarr.json read %q", got)
	}
	if _, err := v.Get(ctx, "group1/split/c/3/2"); err != nil {
		t.Fatal(err)
	}
	if got := kinds(st.take()); got != "get manifests, readat chunks" {
		t.Errorf("a chunk read %q", got)
	}
	// small_chunks is split in threes: c/0 and c/1 share a manifest,
	// and their chunks are inline.
	for i, want := range []string{"get manifests", ""} {
		if _, err := v.Get(ctx, "group1/small_chunks/c/"+string(rune('0'+i))); err != nil {
			t.Fatal(err)
		}
		if got := kinds(st.take()); got != want {
			t.Errorf("small_chunks/c/%d read %q, want %q", i, got, want)
		}
	}
}
