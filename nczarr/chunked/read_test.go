package chunked_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/nczarrfs/nczarrfs/cache"
	"github.com/nczarrfs/nczarrfs/nczarr"
	"github.com/nczarrfs/nczarrfs/nczarr/chunked"
	"github.com/nczarrfs/nczarrfs/zmap"
	"github.com/nczarrfs/nczarrfs/zmap/file"
)

// readArrays writes arrays with zarr-python, each next to its decoded
// bytes as numpy gives them (C order, little-endian), and returns the
// folder. Chunk rows are small so that reads cross many, and edge chunks
// are partial.
func readArrays(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	script := `import sys, zarr, numcodecs, numpy as np
out = sys.argv[1]
a = np.random.default_rng(2).standard_normal((300, 260))
cases = {
    "none": dict(dtype="<f8", compressor=None),
    "zstd": dict(dtype="<f8", compressor=numcodecs.Zstd(1)),
    "blosc": dict(dtype="<f8", compressor=numcodecs.Blosc("lz4", 5, numcodecs.Blosc.SHUFFLE)),
    "bigendian-F": dict(dtype=">f8", compressor=numcodecs.Zlib(1), order="F"),
    "sparse": dict(dtype="<f8", compressor=numcodecs.Zstd(1), fill_value=-1.5),
}
for name, kw in cases.items():
    z = zarr.open(out + "/" + name, mode="w", shape=a.shape, chunks=(64, 50), **kw)
    if name == "sparse":
        z[100:150, 20:240] = a[100:150, 20:240]
    else:
        z[:] = a
    np.ascontiguousarray(z[:]).astype("<f8").tofile(out + "/" + name + ".bin")
`
	if out, err := exec.Command("/usr/bin/python3", "-c", script, dir).CombinedOutput(); err != nil {
		t.Fatalf("zarr-python: %v\n%s", err, out)
	}
	return dir
}

// TestReadThroughSmallCache reads arrays through a cache that holds a few
// chunks, so that chunks are evicted, demoted and their buffers recycled
// while read-ahead runs: sequentially in kernel-sized requests, and from
// several goroutines at once at random offsets mixed with sequential runs.
// Every read must match numpy's bytes. The uncompressed array is read
// twice: straight from the files (vecReads), when the cache stays empty,
// and from a store that offers no zmap.VecReader, through the cache.
func TestReadThroughSmallCache(t *testing.T) {
	dir := readArrays(t)
	const chunkBytes = 64 * 50 * 8
	for _, tc := range []struct {
		name   string
		chunks int64 // cache budget in chunks
		plain  bool  // hide the store's ReadVec
	}{
		// 8: no room for read-ahead beside a row of 6 chunks; 24: read-ahead
		// and demotion, and still less than the array's 30 chunks.
		{"none", 8, false}, {"none", 8, true}, {"none", 24, true}, {"zstd", 8, false}, {"zstd", 24, false},
		{"blosc", 24, false}, {"bigendian-F", 24, false}, {"sparse", 24, false},
	} {
		name := tc.name
		t.Run(fmt.Sprintf("%s/%d/plain=%v", name, tc.chunks, tc.plain), func(t *testing.T) {
			want, err := os.ReadFile(filepath.Join(dir, name+".bin"))
			if err != nil {
				t.Fatal(err)
			}
			fs, err := file.Open(filepath.Join(dir, name))
			if err != nil {
				t.Fatal(err)
			}
			var store zmap.Store = fs
			if tc.plain {
				store = struct{ zmap.Store }{fs}
			}
			c := cache.New(tc.chunks * chunkBytes)
			ds, err := nczarr.Open(context.Background(), store, nczarr.Options{Cache: c})
			if err != nil {
				t.Fatal(err)
			}
			a := ds.Array("")
			if a.Size() != int64(len(want)) {
				t.Fatalf("size %d, want %d", a.Size(), len(want))
			}
			for _, req := range []int{128 << 10, 4096, 1000} {
				got := readSeq(t, a, req)
				if !bytes.Equal(got, want) {
					t.Fatalf("sequential %d-byte reads differ from numpy", req)
				}
			}

			seed := rand.Int63()
			t.Logf("seed %d", seed)
			var wg sync.WaitGroup
			errs := make(chan error, 4)
			for g := 0; g < 4; g++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					errs <- readMixed(a, want, seed+int64(g))
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				if err != nil {
					t.Error(err)
				}
			}
			switch st := c.Stats(); {
			case name == "none" && !tc.plain:
				if st.LoadedBytes != 0 {
					t.Errorf("stats %+v: an uncompressed array in files was read through the cache", st)
				}
			case name != "sparse" && st.Recycled == 0:
				t.Errorf("stats %+v: no buffer was recycled", st)
			}
		})
	}
}

// readSeq reads a whole array in order in requests of n bytes.
func readSeq(t *testing.T, a *nczarr.Array, n int) []byte {
	t.Helper()
	out := make([]byte, 0, a.Size())
	buf := make([]byte, n)
	for off := int64(0); off < a.Size(); {
		m, err := a.ReadAt(context.Background(), buf, off)
		if m == 0 {
			t.Fatalf("ReadAt(%d) = 0, %v", off, err)
		}
		out = append(out, buf[:m]...)
		off += int64(m)
	}
	return out
}

// readMixed alternates random reads with short sequential runs and checks
// each against want.
func readMixed(a *nczarr.Array, want []byte, seed int64) error {
	rng := rand.New(rand.NewSource(seed))
	for i := 0; i < 40; i++ {
		off := rng.Int63n(a.Size())
		for run := 0; run < 1+rng.Intn(8) && off < a.Size(); run++ {
			buf := make([]byte, 1+rng.Intn(96<<10))
			n, _ := a.ReadAt(context.Background(), buf, off)
			end := min(off+int64(len(buf)), a.Size())
			if int64(n) != end-off || !bytes.Equal(buf[:n], want[off:end]) {
				return fmt.Errorf("seed %d: ReadAt(len %d, off %d) = %d bytes, differing from numpy", seed, len(buf), off, n)
			}
			off = end
		}
	}
	return nil
}

// TestDecodeIntoReusesDst decodes stored chunks with Decode and with
// DecodeInto over a dirty buffer: same bytes, and the buffer's storage is
// used for codecs that decode into dst.
func TestDecodeIntoReusesDst(t *testing.T) {
	dir := readArrays(t)
	for _, name := range []string{"none", "zstd", "blosc"} {
		t.Run(name, func(t *testing.T) {
			store, err := file.Open(filepath.Join(dir, name))
			if err != nil {
				t.Fatal(err)
			}
			ds, err := nczarr.Open(context.Background(), store, nczarr.Options{})
			if err != nil {
				t.Fatal(err)
			}
			a := ds.Array("")
			raw, err := store.Get(context.Background(), "0.0")
			if err != nil {
				t.Fatal(err)
			}
			size := 64 * 50 * 8
			want, err := a.Chain.Decode(raw, size)
			if err != nil {
				t.Fatal(err)
			}
			dst := bytes.Repeat([]byte{0xAA}, size)
			got, err := a.Chain.DecodeInto(dst, raw, size)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatal("DecodeInto differs from Decode")
			}
			if &got[0] != &dst[0] {
				t.Error("DecodeInto did not decode into dst")
			}
		})
	}
}

// TestSequentialReadLoadsAhead reads the first chunk row of an array in
// order through a Reader and waits for the cache to receive the next row,
// which no read asked for (read-ahead holds at most a quarter of the
// cache: 6 chunks).
func TestSequentialReadLoadsAhead(t *testing.T) {
	dir := readArrays(t)
	store, err := file.Open(filepath.Join(dir, "zstd"))
	if err != nil {
		t.Fatal(err)
	}
	c := cache.New(24 * 64 * 50 * 8)
	ds, err := nczarr.Open(context.Background(), store, nczarr.Options{Cache: c})
	if err != nil {
		t.Fatal(err)
	}
	r := ds.Array("").NewReader()
	rowBytes := int64(64 * 260 * 8)
	buf := make([]byte, 4096)
	for off := int64(0); off < rowBytes; off += int64(len(buf)) {
		if _, err := r.ReadAt(context.Background(), buf[:min(int64(len(buf)), rowBytes-off)], off); err != nil {
			t.Fatal(err)
		}
	}
	// Row 0 has 6 chunks; read-ahead brings row 1's 6 more.
	deadline := time.Now().Add(30 * time.Second)
	for c.Stats().Entries < 12 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if s := c.Stats(); s.Entries != 12 || s.Prefetched < 6 {
		t.Errorf("stats %+v, want 12 chunks cached, row 1's 6 prefetched", s)
	}
}

// TestSliceReadStaysInItsRow jumps to the second chunk row and reads a
// third of it sequentially, as `dd skip=N count=1` of one slice of a 3-D
// array does: read-ahead reaches no further than the reader has read since
// the jump, so nothing of the next chunk row is loaded.
func TestSliceReadStaysInItsRow(t *testing.T) {
	dir := readArrays(t)
	store, err := file.Open(filepath.Join(dir, "zstd"))
	if err != nil {
		t.Fatal(err)
	}
	c := cache.New(1 << 20) // holds the whole array (30 chunks)
	ds, err := nczarr.Open(context.Background(), store, nczarr.Options{Cache: c})
	if err != nil {
		t.Fatal(err)
	}
	r := ds.Array("").NewReader()
	rowBytes := int64(64 * 260 * 8)
	buf := make([]byte, 4096)
	for off := rowBytes; off < rowBytes+rowBytes/3; off += int64(len(buf)) {
		if _, err := r.ReadAt(context.Background(), buf, off); err != nil {
			t.Fatal(err)
		}
	}
	// Let any load under way finish: the count is then final.
	for last := -1; c.Stats().Entries != last; {
		last = c.Stats().Entries
		time.Sleep(100 * time.Millisecond)
	}
	if s := c.Stats(); s.Entries > 6 {
		t.Errorf("stats %+v: %d chunks loaded, want at most row 1's 6", s, s.Entries)
	}
}

// TestReadersFollowedSeparately reads one array through two Readers in
// turn, one from the start and one from the middle, each sequentially:
// each keeps its own read-ahead state, so both are followed and their
// chunks are loaded ahead, while plain ReadAt calls load nothing ahead.
func TestReadersFollowedSeparately(t *testing.T) {
	dir := readArrays(t)
	store, err := file.Open(filepath.Join(dir, "zstd"))
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join(dir, "zstd.bin"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, tc := range []struct {
		name      string
		readers   bool
		wantAhead bool
	}{{"two Readers", true, true}, {"ReadAt", false, false}} {
		t.Run(tc.name, func(t *testing.T) {
			c := cache.New(1 << 20) // holds the whole array (30 chunks of 25600 bytes)
			ds, err := nczarr.Open(ctx, store, nczarr.Options{Cache: c})
			if err != nil {
				t.Fatal(err)
			}
			a := ds.Array("")
			read := []func(context.Context, []byte, int64) (int, error){a.ReadAt, a.ReadAt}
			if tc.readers {
				read = []func(context.Context, []byte, int64) (int, error){a.NewReader().ReadAt, a.NewReader().ReadAt}
			}
			const step = 4096
			starts := []int64{0, a.Size() / 2 / step * step}
			buf := make([]byte, step)
			for i := int64(0); i < 20; i++ {
				for r, start := range starts {
					off := start + i*step
					n, err := read[r](ctx, buf, off)
					if err != nil {
						t.Fatal(err)
					}
					if !bytes.Equal(buf[:n], want[off:off+int64(n)]) {
						t.Fatalf("reader %d: bytes at %d differ from zarr-python's", r, off)
					}
				}
			}
			if got := c.Stats().Prefetched > 0; got != tc.wantAhead {
				t.Errorf("read ahead: %v, want %v (stats %+v)", got, tc.wantAhead, c.Stats())
			}
		})
	}
}

// hints is a file store that records the keys it is told a read will
// want soon.
type hints struct {
	*file.Store
	mu   sync.Mutex
	keys []string
}

func (h *hints) WillNeed(ctx context.Context, key string) {
	h.mu.Lock()
	h.keys = append(h.keys, key)
	h.mu.Unlock()
	h.Store.WillNeed(ctx, key)
}

// TestSequentialReadHintsFurther reads chunk row 0 sequentially: the
// store is told about each chunk once, in order, and at the end as far
// past the loads (row 1) as they are past the reader: row 2, not row 3.
// Plain ReadAt calls and a reader's first read hint nothing.
func TestSequentialReadHintsFurther(t *testing.T) {
	dir := readArrays(t)
	ctx := context.Background()
	const chunkBytes, rowBytes = 64 * 50 * 8, 64 * 260 * 8
	for _, tc := range []struct {
		name   string
		reader bool
		reads  int64 // bytes read from the start
		want   []string
	}{
		{"Reader, row 0", true, rowBytes, []string{"1.0", "1.1", "1.2", "1.3", "1.4", "1.5", "2.0", "2.1", "2.2", "2.3", "2.4", "2.5"}},
		{"Reader, first read only", true, 4096, nil},
		{"ReadAt, row 0", false, rowBytes, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs, err := file.Open(filepath.Join(dir, "zstd"))
			if err != nil {
				t.Fatal(err)
			}
			store := &hints{Store: fs}
			c := cache.New(48 * chunkBytes) // read-ahead may hold 12 chunks
			ds, err := nczarr.Open(ctx, store, nczarr.Options{Cache: c})
			if err != nil {
				t.Fatal(err)
			}
			a := ds.Array("")
			read := a.ReadAt
			if tc.reader {
				read = a.NewReader().ReadAt
			}
			buf := make([]byte, 4096)
			for off := int64(0); off < tc.reads; off += int64(len(buf)) {
				if _, err := read(ctx, buf[:min(int64(len(buf)), tc.reads-off)], off); err != nil {
					t.Fatal(err)
				}
			}
			chunked.HintsGiven(a)
			store.mu.Lock()
			got := store.keys
			store.mu.Unlock()
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("hinted %v, want %v", got, tc.want)
			}
		})
	}
}
