package fusefs

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nczarrfs/nczarrfs/nczarr"
	"github.com/nczarrfs/nczarrfs/zmap"
	"github.com/nczarrfs/nczarrfs/zmap/file"
)

// gated is a distant store (nczarr reads its groups lazily) whose Gets
// under a prefix wait for a gate to open.
type gated struct {
	zmap.Store
	prefix  string
	entered chan struct{} // gets a value for each Get that waits
	open    chan struct{} // closed to let them go
	armed   bool
}

func (g *gated) Remote() bool       { return true }
func (g *gated) Unwrap() zmap.Store { return g.Store }

func (g *gated) Get(ctx context.Context, key string) ([]byte, error) {
	if g.armed && strings.HasPrefix(key, g.prefix) {
		select {
		case g.entered <- struct{}{}:
		default:
		}
		<-g.open
	}
	return g.Store.Get(ctx, key)
}

// TestClassicSurvivesFirstCallersCancel interrupts the first caller of a
// group's dataset.nc while the file is being made (its arrays' metadata
// being read): that caller fails, and a caller waiting beside it gets the
// file, as does the next one.
func TestClassicSurvivesFirstCallersCancel(t *testing.T) {
	dir := t.TempDir()
	script := `import sys, zarr, numpy as np
g = zarr.open_group(sys.argv[1], mode="w")
sub = g.create_group("sub")
for i in range(3):
    sub.create_dataset("a%d" % i, data=np.arange(6, dtype="<f4"), chunks=(3,))
`
	if out, err := exec.Command("/usr/bin/python3", "-c", script, dir).CombinedOutput(); err != nil {
		t.Fatalf("zarr-python: %v\n%s", err, out)
	}
	fs, err := file.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	store := &gated{Store: fs, prefix: "sub/", entered: make(chan struct{}, 1), open: make(chan struct{})}
	ds, err := nczarr.Open(context.Background(), store, nczarr.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !ds.Unread() {
		t.Fatal("the dataset was read whole: the test needs sub's arrays unread")
	}
	store.armed = true
	tr := newTree(ds, store, Options{})

	first, cancel := context.WithCancel(context.Background())
	firstErr := make(chan error, 1)
	go func() {
		_, err := tr.classic(first, "sub")
		firstErr <- err
	}()
	<-store.entered // the file is being made, for the first caller
	var wg sync.WaitGroup
	var waiterErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		_, waiterErr = tr.classic(context.Background(), "sub")
	}()
	// Give the waiter time to join the making before the first caller
	// goes: not a bound on anything, only the order the test needs (were
	// it late, it would start the file again and pass either way).
	time.Sleep(100 * time.Millisecond)
	cancel()
	if err := <-firstErr; !errors.Is(err, context.Canceled) {
		t.Fatalf("the first caller, interrupted: %v, want context.Canceled", err)
	}
	close(store.open)
	wg.Wait()
	if waiterErr != nil {
		t.Fatalf("a caller waiting beside the interrupted one: %v", waiterErr)
	}
	c, err := tr.classic(context.Background(), "sub")
	if err != nil {
		t.Fatalf("the next caller: %v", err)
	}
	if c.Size() == 0 {
		t.Fatal("an empty classic file")
	}
}
