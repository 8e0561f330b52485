package chunked_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/nczarrfs/nczarrfs/cache"
	"github.com/nczarrfs/nczarrfs/nczarr"
	"github.com/nczarrfs/nczarrfs/nczarr/chunked"
	"github.com/nczarrfs/nczarrfs/zmap"
	"github.com/nczarrfs/nczarrfs/zmap/file"
)

// walkArrays writes with zarr-python a (800, 64, 64) float32 cube chunked
// (10, 32, 32) and a (512, 256) float32 plane chunked (16, 32), both zstd,
// each next to its bytes as numpy gives them. The cube is larger than the
// sequential read-ahead's slack (4 MiB) twice over, so that reads far
// apart in it are jumps.
func walkArrays(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	script := `import sys, zarr, numcodecs, numpy as np
out = sys.argv[1]
rng = np.random.default_rng(3)
for name, shape, chunks in [("cube", (800, 64, 64), (10, 32, 32)), ("plane", (512, 256), (16, 32))]:
    a = rng.integers(0, 1000, size=shape).astype("<f4")
    zarr.open(out + "/" + name, mode="w", shape=shape, chunks=chunks, dtype="<f4",
              compressor=numcodecs.Zstd(1))[:] = a
    a.tofile(out + "/" + name + ".bin")
`
	if out, err := exec.Command("/usr/bin/python3", "-c", script, dir).CombinedOutput(); err != nil {
		t.Fatalf("zarr-python: %v\n%s", err, out)
	}
	return dir
}

// countingStore counts the requests for each key.
type countingStore struct {
	zmap.Store
	mu sync.Mutex
	n  map[string]int
}

func (s *countingStore) count(key string) {
	s.mu.Lock()
	s.n[key]++
	s.mu.Unlock()
}

func (s *countingStore) Get(ctx context.Context, key string) ([]byte, error) {
	s.count(key)
	return s.Store.Get(ctx, key)
}

func (s *countingStore) ReadAt(ctx context.Context, key string, p []byte, off int64) (int, error) {
	s.count(key)
	return s.Store.ReadAt(ctx, key, p, off)
}

func (s *countingStore) counts() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := make(map[string]int, len(s.n))
	for k, v := range s.n {
		if k[0] != '.' && !strings.HasSuffix(k, "zarr.json") { // chunks only
			m[k] = v
		}
	}
	return m
}

// box is a read of the elements [lo, hi) of the last axis at the
// coordinates of the other axes, lo included.
type box struct {
	at     []int64 // coordinates of the first element
	length int64   // elements along the last axis
}

// walkArray is a test array: its shape, chunks and store.
type walkArray struct {
	name          string
	shape, chunks []int64
}

func (w walkArray) offset(at []int64) int64 {
	var e int64
	for d, i := range at {
		e = e*w.shape[d] + i
	}
	return 4 * e
}

// keys lists the chunk keys a read touches, by the chunk grid, as
// zarr-python names them.
func (w walkArray) keys(b box) []string {
	var out []string
	last := len(b.at) - 1
	for x := b.at[last]; x < b.at[last]+b.length; x++ {
		idx := make([]any, len(b.at))
		for d := range b.at {
			i := b.at[d]
			if d == last {
				i = x
			}
			idx[d] = i / w.chunks[d]
		}
		k := strings.Trim(strings.ReplaceAll(fmt.Sprint(idx), " ", "."), "[]")
		if !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	return out
}

var (
	cube  = walkArray{"cube", []int64{800, 64, 64}, []int64{10, 32, 32}}
	plane = walkArray{"plane", []int64{512, 256}, []int64{16, 32}}
)

// openWalk opens array w of dir through a counting store, with 4
// requests at a time, and returns it with the store and numpy's bytes.
func openWalk(t *testing.T, dir string, w walkArray) (*nczarr.Array, *countingStore, []byte) {
	t.Helper()
	fs, err := file.Open(filepath.Join(dir, w.name))
	if err != nil {
		t.Fatal(err)
	}
	store := &countingStore{Store: fs, n: map[string]int{}}
	ds, err := nczarr.Open(context.Background(), store, nczarr.Options{Cache: cache.New(64 << 20), Parallel: 4})
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join(dir, w.name+".bin"))
	if err != nil {
		t.Fatal(err)
	}
	return ds.Array(""), store, want
}

// readBox reads b through r and checks the bytes against numpy's.
func readBox(t *testing.T, r *nczarr.Reader, w walkArray, b box, want []byte) {
	t.Helper()
	off := w.offset(b.at)
	buf := make([]byte, 4*b.length)
	if _, err := r.ReadAt(context.Background(), buf, off); err != nil {
		t.Fatalf("read %v: %v", b.at, err)
	}
	if !bytes.Equal(buf, want[off:off+int64(len(buf))]) {
		t.Fatalf("read %v: bytes differ from numpy's", b.at)
	}
}

// TestWalkLoadsAhead reads arrays by walks (a time series at a point, down
// axis 0 and back up, a column, every 5th row, and a window of 4 rows
// moved along axis 0) through a Reader, and checks after each read, once
// read-ahead settled: that once the walk is found (after 2 steps and a
// read), every chunk a read touches was requested before the read; that
// from then on no chunk off the walk is requested (before, the sequential
// read-ahead may have guessed some); that no chunk is requested twice;
// and that the bytes are numpy's.
func TestWalkLoadsAhead(t *testing.T) {
	dir := walkArrays(t)
	series := func(from, to, step int64, y, x int64) (out [][]box) {
		for t := from; t != to; t += step {
			out = append(out, []box{{at: []int64{t, y, x}, length: 1}})
		}
		return out
	}
	var column, rows, window [][]box
	for i := range int64(512) {
		column = append(column, []box{{at: []int64{i, 100}, length: 1}})
	}
	for i := int64(0); i < 512; i += 5 {
		rows = append(rows, []box{{at: []int64{i, 0}, length: 256}})
	}
	for t := range int64(800) {
		var step []box
		for y := int64(30); y < 34; y++ {
			step = append(step, box{at: []int64{t, y, 28}, length: 9})
		}
		window = append(window, step)
	}
	for _, tc := range []struct {
		name  string
		array walkArray
		steps [][]box
	}{
		{"time series", cube, series(0, 800, 1, 40, 7)},
		{"time series backwards", cube, series(799, -1, -1, 3, 60)},
		{"time series every 3rd", cube, series(5, 800, 3, 33, 33)},
		{"column", plane, column},
		{"every 5th row", plane, rows},
		{"window of rows", cube, window},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, store, want := openWalk(t, dir, tc.array)
			r := a.NewReader()
			onWalk := map[string]bool{}
			for _, step := range tc.steps {
				for _, b := range step {
					for _, k := range tc.array.keys(b) {
						onWalk[k] = true
					}
				}
			}
			p := len(tc.steps[0])
			found := false
			var atFound map[string]int // the requests when the walk was found
			i := 0
			for _, step := range tc.steps {
				for _, b := range step {
					if found {
						got := store.counts()
						for _, k := range tc.array.keys(b) {
							if got[k] == 0 {
								t.Fatalf("read %d at %v: chunk %s not requested ahead", i, b.at, k)
							}
						}
					}
					readBox(t, r, tc.array, b, want)
					chunked.Settled(a)
					if found {
						for k, n := range store.counts() {
							if !onWalk[k] && n > atFound[k] {
								t.Fatalf("read %d at %v: chunk %s, off the walk, requested", i, b.at, k)
							}
							if n > 1 {
								t.Fatalf("read %d at %v: chunk %s requested %d times", i, b.at, k, n)
							}
						}
					}
					i++
					if !found && i > 2*p {
						found, atFound = true, store.counts()
					}
				}
			}
			got := store.counts()
			for k := range onWalk {
				if got[k] == 0 {
					t.Errorf("chunk %s of the walk never requested", k)
				}
			}
		})
	}
}

// TestWalkStops walks down axis 0 of the cube and then reads at random
// points (seed logged), each far from the last: after the walk breaks, the
// only chunks requested are the ones the random reads touch.
func TestWalkStops(t *testing.T) {
	dir := walkArrays(t)
	a, store, want := openWalk(t, dir, cube)
	r := a.NewReader()
	for ti := range int64(100) {
		readBox(t, r, cube, box{at: []int64{ti, 40, 7}, length: 1}, want)
	}
	chunked.Settled(a)
	before := store.counts()
	if before["9.1.0"] == 0 {
		t.Fatalf("the walk loaded nothing ahead: %v", before)
	}
	seed := rand.Int63()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewSource(seed))
	touched := map[string]bool{}
	for i := range 30 {
		ti := 100 + rng.Int63n(200) // alternately far before and far after
		if i%2 == 1 {
			ti = 600 + rng.Int63n(200)
		}
		b := box{at: []int64{ti, rng.Int63n(64), rng.Int63n(64)}, length: 1}
		for _, k := range cube.keys(b) {
			touched[k] = true
		}
		readBox(t, r, cube, b, want)
		chunked.Settled(a)
	}
	for k, n := range store.counts() {
		if n > before[k] && !touched[k] {
			t.Errorf("chunk %s requested after the walk broke, and no read touched it", k)
		}
	}
}
