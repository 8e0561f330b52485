package chunked_test

import (
	"context"
	"encoding/binary"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/nczarrfs/nczarrfs/nczarr"
	"github.com/nczarrfs/nczarrfs/nczarr/codec"
	"github.com/nczarrfs/nczarrfs/zmap"
	"github.com/nczarrfs/nczarrfs/zmap/file"
	"github.com/nczarrfs/nczarrfs/zmap/listcache"
)

// boundArrays writes, with zarr-python, a zstd array, an uncompressed
// one and one of variable-length strings, one chunk of 64x50 elements
// each, and by hand a Zarr v3 array of int32 in one shard of four inner
// chunks of 2x3 (bytes codec, index at the end).
func boundArrays(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	script := `import sys, zarr, numcodecs, numpy as np
out = sys.argv[1]
a = np.random.default_rng(2).standard_normal((64, 50))
zarr.open(out + "/zstd", mode="w", shape=a.shape, chunks=a.shape, dtype="<f8", compressor=numcodecs.Zstd(1))[:] = a
zarr.open(out + "/raw", mode="w", shape=a.shape, chunks=a.shape, dtype="<f8", compressor=None)[:] = a
s = zarr.open(out + "/vlen", mode="w", shape=(10,), chunks=(10,), dtype=object, object_codec=numcodecs.VLenUTF8())
s[:] = ["x" * i for i in range(10)]
`
	if out, err := exec.Command("/usr/bin/python3", "-c", script, dir).CombinedOutput(); err != nil {
		t.Fatalf("zarr-python: %v\n%s", err, out)
	}
	sh := filepath.Join(dir, "shard")
	if err := os.MkdirAll(filepath.Join(sh, "c", "0"), 0o755); err != nil {
		t.Fatal(err)
	}
	meta := `{"zarr_format": 3, "node_type": "array", "shape": [4, 6], "data_type": "int32", "fill_value": 0,
"chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [4, 6]}},
"chunk_key_encoding": {"name": "default"},
"codecs": [{"name": "sharding_indexed", "configuration": {"chunk_shape": [2, 3],
  "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
  "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}]}}]}`
	if err := os.WriteFile(filepath.Join(sh, "zarr.json"), []byte(meta), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// writeShard writes the shard of boundArrays' v3 array: four inner
// chunks of 24 bytes, the first of which the index says holds first
// bytes, and the whole shard padded (sparse) to at least size bytes.
func writeShard(t *testing.T, dir string, first, size int64) {
	t.Helper()
	index := make([]byte, 64)
	for i := range 4 {
		n := uint64(24)
		if i == 0 {
			n = uint64(first)
		}
		binary.LittleEndian.PutUint64(index[16*i:], uint64(24*i))
		binary.LittleEndian.PutUint64(index[16*i+8:], n)
	}
	f, err := os.Create(filepath.Join(dir, "shard", "c", "0", "0"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	total := max(size, 96+64)
	if err := f.Truncate(total); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(index, total-64); err != nil {
		t.Fatal(err)
	}
}

// sparse replaces the object key under dir with a sparse file of size
// bytes.
func sparse(t *testing.T, dir, key string, size int64) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(key))
	if err := os.Truncate(p, 0); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(p, size); err != nil {
		t.Fatal(err)
	}
}

// TestChunkBounds reads chunks, shards and inner chunks over their
// bounds (3 GiB sparse files among them): each read fails as corrupt with
// a *zmap.TooLargeError naming the object and both sizes, having
// allocated little; --max-object-size raises a bound and never lowers it.
func TestChunkBounds(t *testing.T) {
	dir := boundArrays(t)
	const chunk = 64 * 50 * 8
	// ZSTD_COMPRESSBOUND(25600) = 25600 + 25600/256 + (128 KiB - 25600)/2048,
	// and the slack.
	const zstdBound = chunk + chunk/256 + (128<<10-chunk)>>11 + codec.BoundSlack
	const huge = 3 << 30
	tests := []struct {
		name, array, key string
		size             int64 // the object's size, 0 to leave it
		shardEntry       int64 // the first inner chunk's length, for the shard
		floor            int64 // MaxObjectSize
		tooLarge         bool  // fails with a TooLargeError (else another ErrCorrupt)
		bound            int64 // the TooLargeError's bound, when known
	}{
		{name: "zstd 3 GiB", array: "zstd", key: "zstd/0.0", size: huge, tooLarge: true, bound: zstdBound},
		{name: "zstd bound+1", array: "zstd", key: "zstd/0.0", size: zstdBound + 1, tooLarge: true, bound: zstdBound},
		{name: "zstd at its bound", array: "zstd", key: "zstd/0.0", size: zstdBound},
		{name: "zstd raised", array: "zstd", key: "zstd/0.0", size: zstdBound + 1, floor: zstdBound + 1},
		{name: "zstd not lowered", array: "zstd", key: "zstd/0.0", size: zstdBound + 1, floor: 100, tooLarge: true, bound: zstdBound},
		{name: "raw 3 GiB", array: "raw", key: "raw/0.0", size: huge},
		{name: "vlen 300 MiB", array: "vlen", key: "vlen/0", size: 300 << 20, tooLarge: true, bound: 256 << 20},
		{name: "shard 3 GiB", array: "shard", key: "shard/c/0/0", size: huge, shardEntry: 24, tooLarge: true, bound: 64 + 96 + codec.BoundSlack},
		{name: "shard over its bound", array: "shard", key: "shard/c/0/0", size: 64 + 96 + codec.BoundSlack + 1, shardEntry: 24, tooLarge: true, bound: 64 + 96 + codec.BoundSlack},
		{name: "inner chunk over its bound", array: "shard", key: "shard/c/0/0", size: 4250, shardEntry: 24 + codec.BoundSlack + 1, tooLarge: true, bound: 24 + codec.BoundSlack},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.array == "shard" {
				writeShard(t, dir, tt.shardEntry, tt.size)
			} else {
				sparse(t, dir, tt.key, tt.size)
			}
			store, err := file.Open(filepath.Join(dir, tt.array))
			if err != nil {
				t.Fatal(err)
			}
			ds, err := nczarr.Open(context.Background(), store, nczarr.Options{MaxObjectSize: tt.floor})
			if err != nil {
				t.Fatal(err)
			}
			a := ds.Array("")
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			if a.Objects() {
				_, err = a.JSON(context.Background())
			} else {
				_, err = a.ReadAt(context.Background(), make([]byte, 64), 0)
			}
			runtime.ReadMemStats(&after)
			if n := after.TotalAlloc - before.TotalAlloc; n > 64<<20 {
				t.Errorf("the read allocated %d bytes", n)
			}
			if !errors.Is(err, codec.ErrCorrupt) {
				t.Fatalf("read: %v; want ErrCorrupt", err)
			}
			var tl *zmap.TooLargeError
			if !tt.tooLarge {
				if errors.As(err, &tl) {
					t.Fatalf("read: %v; want no TooLargeError", err)
				}
				return
			}
			if !errors.As(err, &tl) {
				t.Fatalf("read: %v; want a TooLargeError", err)
			}
			if tt.bound != 0 && tl.Bound != tt.bound {
				t.Errorf("bound %d, want %d", tl.Bound, tt.bound)
			}
			if tl.Size <= tl.Bound || (tt.size == huge && tl.Size != huge) {
				t.Errorf("TooLargeError %+v", *tl)
			}
			msg := err.Error()
			if !strings.Contains(msg, tl.Key) || !strings.Contains(msg, "bound") {
				t.Errorf("error %q does not name the object and its bound", msg)
			}
		})
	}
}

// countReads counts the store's reads of chunk objects.
type countReads struct {
	zmap.Store
	reads int
}

func (c *countReads) Get(ctx context.Context, key string) ([]byte, error) {
	if !strings.Contains(key, ".z") {
		c.reads++
	}
	return c.Store.Get(ctx, key)
}

func (c *countReads) ReadAt(ctx context.Context, key string, p []byte, off int64) (int, error) {
	if !strings.Contains(key, ".z") {
		c.reads++
	}
	return c.Store.ReadAt(ctx, key, p, off)
}

// TestChunkBoundFromListing reads a zstd chunk of 3 GiB whose size a kept
// listing already says: it fails over its bound with no read of the
// object at all.
func TestChunkBoundFromListing(t *testing.T) {
	dir := boundArrays(t)
	sparse(t, dir, "zstd/0.0", 3<<30)
	fs, err := file.Open(filepath.Join(dir, "zstd"))
	if err != nil {
		t.Fatal(err)
	}
	counted := &countReads{Store: fs}
	store := listcache.New(counted, listcache.Options{TTL: listcache.Forever})
	ctx := context.Background()
	if _, err := store.Search(ctx, ""); err != nil {
		t.Fatal(err)
	}
	ds, err := nczarr.Open(ctx, store, nczarr.Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = ds.Array("").ReadAt(ctx, make([]byte, 64), 0)
	var tl *zmap.TooLargeError
	if !errors.As(err, &tl) || !errors.Is(err, codec.ErrCorrupt) || tl.Size != 3<<30 {
		t.Fatalf("read: %v; want a TooLargeError of 3 GiB", err)
	}
	if counted.reads != 0 {
		t.Errorf("%d reads of the chunk object; want none", counted.reads)
	}
}
