package nczarr_test

import (
	"context"
	"os/exec"
	"sync"
	"testing"

	"github.com/nczarrfs/nczarrfs/nczarr"
	"github.com/nczarrfs/nczarrfs/zmap"
	"github.com/nczarrfs/nczarrfs/zmap/file"
)

// requests is a store that counts the requests for each key.
type requests struct {
	zmap.Store
	mu sync.Mutex
	n  map[string]int
}

func (r *requests) count(key string) {
	r.mu.Lock()
	r.n[key]++
	r.mu.Unlock()
}

func (r *requests) Get(ctx context.Context, key string) ([]byte, error) {
	r.count(key)
	return r.Store.Get(ctx, key)
}

func (r *requests) Size(ctx context.Context, key string) (int64, error) {
	r.count(key)
	return r.Store.Size(ctx, key)
}

func (r *requests) Stat(ctx context.Context, key string) (zmap.Entry, error) {
	r.count(key)
	return r.Store.Stat(ctx, key)
}

// TestWalkFetchesMetadataOnce opens a Zarr group without .zmetadata, whose
// children the walk must tell apart by their metadata objects: each
// child's .zarray or .zgroup is asked for once, the probe's answer being
// the object the next step reads.
func TestWalkFetchesMetadataOnce(t *testing.T) {
	dir := t.TempDir()
	script := `import sys, zarr, numpy as np
g = zarr.open_group(sys.argv[1], mode="w")
for i in range(5):
    g.create_dataset("a%d" % i, data=np.arange(10, dtype="<i4") + i, chunks=(4,))
sub = g.create_group("sub")
sub.create_dataset("b", data=np.ones(3), chunks=(2,))
`
	if out, err := exec.Command("/usr/bin/python3", "-c", script, dir).CombinedOutput(); err != nil {
		t.Fatalf("zarr-python: %v\n%s", err, out)
	}
	fs, err := file.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	store := &requests{Store: fs, n: map[string]int{}}
	ds, err := nczarr.Open(context.Background(), store, nczarr.Options{})
	if err != nil {
		t.Fatal(err)
	}
	keys := []string{"sub/.zgroup", "sub/b/.zarray"}
	for _, p := range []string{"a0", "a1", "a2", "a3", "a4"} {
		keys = append(keys, p+"/.zarray")
	}
	for _, key := range keys {
		if n := store.n[key]; n != 1 {
			t.Errorf("%s: %d requests, want 1", key, n)
		}
	}
	for _, p := range []string{"a0", "a4", "sub/b"} {
		if a := ds.Array(p); a == nil || a.Err != nil {
			t.Errorf("array %s: %+v", p, a)
		}
	}
	if g := ds.Group("sub"); g == nil || len(g.Arrays) != 1 {
		t.Errorf("group sub: %+v", g)
	}
}
