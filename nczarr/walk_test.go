package nczarr_test

import (
	"context"
	"errors"
	"os/exec"
	"slices"
	"sync"
	"testing"
	"time"

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

// remote is a store that says its requests cost a round trip, as S3's do:
// nczarr.Open then reads groups' children lazily.
type remote struct{ *requests }

func (remote) Remote() bool { return true }

// Unwrap lets zmap.As find what the counted store offers.
func (r remote) Unwrap() zmap.Store { return r.requests }

// TestLazyWalk opens a group without .zmetadata from a distant store:
// Open reads the root and names its children without reading their
// metadata; the first Array or Group call under a group reads all of that
// group's children once, concurrent callers included, and the dataset is
// then the one an eager Open reads.
func TestLazyWalk(t *testing.T) {
	dir := t.TempDir()
	script := `import sys, zarr, numpy as np
g = zarr.open_group(sys.argv[1], mode="w")
for i in range(20):
    g.create_dataset("a%02d" % i, data=np.arange(10, dtype="<i4") + i, chunks=(4,))
sub = g.create_group("sub")
sub.create_dataset("b", data=np.ones(3), chunks=(2,))
sub.create_group("deeper").create_dataset("c", data=np.ones(2), chunks=(2,))
`
	if out, err := exec.Command("/usr/bin/python3", "-c", script, dir).CombinedOutput(); err != nil {
		t.Fatalf("zarr-python: %v\n%s", err, out)
	}
	fs, err := file.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	eager, err := nczarr.Open(context.Background(), fs, nczarr.Options{})
	if err != nil {
		t.Fatal(err)
	}
	counted := &requests{Store: fs, n: map[string]int{}}
	ds, err := nczarr.Open(context.Background(), remote{counted}, nczarr.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// Telling arrays from groups fetched each child's .zarray (or
	// .zgroup) and kept it; none was parsed into an array yet, and
	// nothing below sub was read.
	if n := counted.n["sub/b/.zarray"]; n != 0 {
		t.Errorf("Open read sub/b/.zarray %d times; want it left for later", n)
	}
	if g := ds.Group(""); g == nil || len(g.Arrays) != 20 || len(g.Groups) != 1 {
		t.Fatalf("root group: %+v", g)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if a := ds.Array("sub/deeper/c"); a == nil || a.Err != nil {
				t.Errorf("sub/deeper/c: %+v", a)
			}
			if a := ds.Array("a07"); a == nil || a.Err != nil || a.Size() != 40 {
				t.Errorf("a07: %+v", a)
			}
		}()
	}
	wg.Wait()
	for _, key := range []string{"a07/.zarray", "sub/b/.zarray", "sub/deeper/c/.zarray", "sub/.zgroup"} {
		if n := counted.n[key]; n != 1 {
			t.Errorf("%s: %d requests, want 1", key, n)
		}
	}
	if got, want := ds.Arrays(), eager.Arrays(); !slices.Equal(got, want) {
		t.Errorf("Arrays() = %v, want %v", got, want)
	}
	if got, want := ds.Groups(), eager.Groups(); !slices.Equal(got, want) {
		t.Errorf("Groups() = %v, want %v", got, want)
	}
	if ds.Array("nothing") != nil || ds.Group("a07") != nil || ds.Array("sub/nothing/x") != nil {
		t.Error("names that are no array or group were found")
	}
}

// gate holds the Get of sub/b/.zarray until it is opened.
type gate struct {
	remote
	open chan struct{}
}

func (g gate) Get(ctx context.Context, key string) ([]byte, error) {
	if key == "sub/b/.zarray" {
		select {
		case <-g.open:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return g.remote.Get(ctx, key)
}

// TestReadyIsBounded checks that a caller bound in time stops waiting for
// a lazily read group when its context ends, and that the reading goes on
// for the next caller.
func TestReadyIsBounded(t *testing.T) {
	dir := t.TempDir()
	script := `import sys, zarr, numpy as np
g = zarr.open_group(sys.argv[1], mode="w")
g.create_group("sub").create_dataset("b", data=np.arange(4, dtype="<i2"), chunks=(2,))
`
	if out, err := exec.Command("/usr/bin/python3", "-c", script, dir).CombinedOutput(); err != nil {
		t.Fatalf("zarr-python: %v\n%s", err, out)
	}
	fs, err := file.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	g := gate{remote: remote{&requests{Store: fs, n: map[string]int{}}}, open: make(chan struct{})}
	ds, err := nczarr.Open(context.Background(), g, nczarr.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := ds.Ready(ctx, "sub/b"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Ready while sub/b/.zarray is held: %v, want a deadline error", err)
	}
	close(g.open)
	if err := ds.Ready(context.Background(), "sub/b"); err != nil {
		t.Fatal(err)
	}
	if a := ds.Array("sub/b"); a == nil || a.Err != nil || a.Size() != 8 {
		t.Errorf("sub/b after the wait: %+v", a)
	}
}
