package nczarr_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
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

// outage fails the Get and Search of the keys and prefixes in down with
// an error that is no answer of the store (as a timeout or a reset is),
// until they are taken out of it.
type outage struct {
	remote
	mu   sync.Mutex
	down map[string]bool
}

var errReset = errors.New("connection reset by peer")

func (o *outage) failing(key string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.down[key] || o.down["*"]
}

func (o *outage) Get(ctx context.Context, key string) ([]byte, error) {
	if o.failing(key) {
		o.count(key)
		return nil, fmt.Errorf("get %s: %w", key, errReset)
	}
	return o.remote.Get(ctx, key)
}

func (o *outage) Search(ctx context.Context, prefix string) ([]zmap.Entry, error) {
	if o.failing(prefix + "/") {
		return nil, fmt.Errorf("list %s: %w", prefix, errReset)
	}
	return o.remote.Search(ctx, prefix)
}

func (o *outage) restore() {
	o.mu.Lock()
	o.down = nil
	o.mu.Unlock()
}

// TestLazyWalkForgetsFailures reads lazily read groups while the store
// cannot be reached for some of their metadata: the arrays and groups
// concerned fail (nczarr.Unreachable), and once the store answers again
// the same Dataset reads them right, asking again only for what failed.
func TestLazyWalkForgetsFailures(t *testing.T) {
	dir := t.TempDir()
	script := `import sys, zarr, numpy as np
g = zarr.open_group(sys.argv[1], mode="w")
for i in range(3):
    g.create_dataset("a%d" % i, data=np.arange(10, dtype="<i4") + i, chunks=(4,))
sub = g.create_group("sub")
sub.attrs["title"] = "sub"
sub.create_dataset("b", data=np.ones(3), chunks=(2,))
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
	tests := []struct {
		name string
		down []string // what fails during the first look
		path string   // what is looked at
	}{
		{"array attributes", []string{"a1/.zattrs"}, "a1"},
		{"group attributes", []string{"sub/.zattrs"}, "sub/b"},
		{"group listing", []string{"sub/"}, "sub/b"},
		{"everything", []string{"*"}, "sub/b"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			counted := &requests{Store: fs, n: map[string]int{}}
			o := &outage{remote: remote{counted}}
			ds, err := nczarr.Open(context.Background(), o, nczarr.Options{})
			if err != nil {
				t.Fatal(err)
			}
			o.mu.Lock()
			o.down = map[string]bool{}
			for _, k := range tc.down {
				o.down[k] = true
			}
			o.mu.Unlock()
			err = ds.Ready(context.Background(), tc.path)
			if err == nil {
				err = ds.Array(tc.path).Err
			}
			if !nczarr.Unreachable(err) || !errors.Is(err, errReset) {
				t.Fatalf("first look at %s with %v failing: %v; want the failure, marked unreachable", tc.path, tc.down, err)
			}
			if a := ds.Array(tc.path); a != nil && a.Err == nil {
				t.Fatalf("%s read with %v failing", tc.path, tc.down)
			}
			before := maps.Clone(counted.n)
			o.restore()
			if err := ds.Ready(context.Background(), tc.path); err != nil {
				t.Fatalf("once the store is back: %v", err)
			}
			if a := ds.Array(tc.path); a == nil || a.Err != nil || a.Size() != eager.Array(tc.path).Size() {
				t.Fatalf("%s once the store is back: %+v", tc.path, a)
			}
			if got, want := ds.Arrays(), eager.Arrays(); !slices.Equal(got, want) {
				t.Errorf("Arrays() = %v, want %v", got, want)
			}
			if got, want := ds.Groups(), eager.Groups(); !slices.Equal(got, want) {
				t.Errorf("Groups() = %v, want %v", got, want)
			}
			for _, p := range eager.Arrays() {
				if a := ds.Array(p); a == nil || a.Err != nil {
					t.Errorf("array %s: %+v", p, a)
				}
			}
			attrs, err := ds.Attrs(context.Background(), "sub")
			if err != nil || len(attrs) != 1 {
				t.Errorf("attributes of sub: %v, %v", attrs, err)
			}
			if tc.down[0] != "*" {
				// Open had fetched every .zarray (to tell arrays from
				// groups), and the first look parsed those that did
				// not fail.
				// What the first look read is not read again.
				for _, key := range []string{"a0/.zarray", "a2/.zarray"} {
					if n := counted.n[key] - before[key]; n != 0 && before[key] > 0 {
						t.Errorf("%s read %d more times after the outage; want it kept", key, n)
					}
				}
			}
		})
	}
}

// TestOpenUnreachable opens a distant dataset while the store cannot be
// reached for a child's metadata: Open fails (a mount would otherwise show
// a root without that child until it ends), and succeeds once it can.
func TestOpenUnreachable(t *testing.T) {
	dir := t.TempDir()
	script := `import sys, zarr, numpy as np
g = zarr.open_group(sys.argv[1], mode="w")
g.create_dataset("a", data=np.arange(10, dtype="<i4"), chunks=(4,))
g.create_dataset("b", data=np.arange(10, dtype="<i4"), chunks=(4,))
`
	if out, err := exec.Command("/usr/bin/python3", "-c", script, dir).CombinedOutput(); err != nil {
		t.Fatalf("zarr-python: %v\n%s", err, out)
	}
	fs, err := file.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	o := &outage{remote: remote{&requests{Store: fs, n: map[string]int{}}}, down: map[string]bool{"b/.zarray": true}}
	if _, err := nczarr.Open(context.Background(), o, nczarr.Options{}); !nczarr.Unreachable(err) || !errors.Is(err, errReset) {
		t.Fatalf("Open with b/.zarray failing: %v; want the failure", err)
	}
	o.restore()
	ds, err := nczarr.Open(context.Background(), o, nczarr.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := ds.Arrays(); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("Arrays() = %v", got)
	}
}

// TestLazyWalkConcurrentLooks looks at the dataset (the root included, as
// a FUSE getattr of the mount's root does) while lazily read groups are
// read, and read again after a failure: every look must be guarded, or
// the race detector (and, without it, Go's map checks) stops the test.
func TestLazyWalkConcurrentLooks(t *testing.T) {
	dir := t.TempDir()
	script := `import sys, zarr, numpy as np
g = zarr.open_group(sys.argv[1], mode="w")
for i in range(4):
    sub = g.create_group("g%d" % i)
    for j in range(8):
        sub.create_dataset("a%d" % j, data=np.arange(4, dtype="<i2"), chunks=(2,))
`
	if out, err := exec.Command("/usr/bin/python3", "-c", script, dir).CombinedOutput(); err != nil {
		t.Fatalf("zarr-python: %v\n%s", err, out)
	}
	fs, err := file.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	for round := 0; round < 20; round++ {
		o := &outage{remote: remote{&requests{Store: fs, n: map[string]int{}}}}
		ds, err := nczarr.Open(context.Background(), o, nczarr.Options{})
		if err != nil {
			t.Fatal(err)
		}
		// The first reads of g0 and g1 fail for some arrays, so that
		// their groups are read again while others look.
		o.mu.Lock()
		o.down = map[string]bool{"g0/a3/.zarray": true, "g1/a5/.zarray": true}
		o.mu.Unlock()
		var wg sync.WaitGroup
		stop := make(chan struct{})
		for range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					if _, group := ds.Has(""); !group {
						t.Error("the root is not a group")
						return
					}
					ds.Has("g2")
				}
			}()
		}
		for i := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ds.Ready(context.Background(), fmt.Sprintf("g%d/a3", i))
			}()
		}
		ds.Ready(context.Background(), "g0/a3")
		o.restore()
		for i := range 4 {
			if err := ds.Ready(context.Background(), fmt.Sprintf("g%d/a3", i)); err != nil {
				t.Fatalf("round %d: g%d once the store is back: %v", round, i, err)
			}
		}
		close(stop)
		wg.Wait()
		if got := len(ds.Arrays()); got != 32 {
			t.Fatalf("round %d: %d arrays, want 32", round, got)
		}
	}
}
