package nczarr_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nczarrfs/nczarrfs/cache"
	"github.com/nczarrfs/nczarrfs/internal/testenv"
	"github.com/nczarrfs/nczarrfs/nczarr"
	"github.com/nczarrfs/nczarrfs/nczarr/codec"
	"github.com/nczarrfs/nczarrfs/zmap"
	"github.com/nczarrfs/nczarrfs/zmap/file"
	"github.com/nczarrfs/nczarrfs/zmap/listcache"
)

// remoteCounting is a countingStore that says it is remote, as S3 does:
// reads that are not sequential then fetch only what they need.
type remoteCounting struct{ *countingStore }

func (remoteCounting) Remote() bool { return true }

// openRemote opens the zarrita dataset tree through a counting store that
// says it is remote, and with kept listings above it when listed is true
// (as a mount keeps them).
func openRemote(t *testing.T, tree string, listed bool) (*nczarr.Dataset, *countingStore, *listcache.Store) {
	t.Helper()
	fs, err := file.Open(tree)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fs.Close() })
	counting := &countingStore{Store: fs, ranges: map[string][][2]int64{}}
	var store zmap.Store = remoteCounting{counting}
	var lc *listcache.Store
	if listed {
		lc = listcache.New(store, listcache.Options{TTL: time.Hour})
		store = lc
	}
	d, err := nczarr.Open(context.Background(), store, nczarr.Options{Cache: cache.New(16 << 20)})
	if err != nil {
		t.Fatal(err)
	}
	return d, counting, lc
}

// expected returns zarrita's reading of the array at path of dataset ds.
func expected(t *testing.T, dir string, m v3Manifest, ds, path string) []byte {
	t.Helper()
	for _, d := range m.Datasets {
		if d.Name != ds {
			continue
		}
		for _, a := range d.Arrays {
			if a.Path == path {
				b, err := os.ReadFile(filepath.Join(dir, a.Expected))
				if err != nil {
					t.Fatal(err)
				}
				return b
			}
		}
	}
	t.Fatalf("%s/%s is not in the manifest", ds, path)
	return nil
}

// spanReads returns the ReadAt calls made of objects under prefix, and
// fails the test on a whole-object Get of one.
func spanReads(t *testing.T, s *countingStore, prefix string) [][2]int64 {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	var got [][2]int64
	for k, r := range s.ranges {
		if strings.HasPrefix(k, prefix) {
			got = append(got, r...)
		}
	}
	for _, k := range s.gets {
		if strings.HasPrefix(k, prefix) && !strings.HasSuffix(k, "zarr.json") {
			t.Errorf("Get(%s): an object read whole", k)
		}
	}
	return got
}

// TestV3RangedReads reads a few bytes of uncompressed Zarr v3 arrays that
// zarrita wrote from a remote store: an inner chunk of a shard is read by
// one ranged read of the bytes asked for (after the shard's index), and a
// plain chunk too once a kept listing gives its size; without one the
// chunk is read whole, so that a chunk stored longer than its size is
// still told (ErrCorrupt), as it is from the listing's size.
func TestV3RangedReads(t *testing.T) {
	dir, m := zarritaFixtures(t)
	ctx := context.Background()
	read := func(t *testing.T, a *nczarr.Array, want []byte, off, n int64) {
		t.Helper()
		buf := make([]byte, n)
		if got, err := a.ReadAt(ctx, buf, off); err != nil || !bytes.Equal(buf[:got], want[off:off+n]) {
			t.Fatalf("ReadAt(%d, %d) = %d, %v: differs from zarrita's values", off, n, got, err)
		}
	}

	t.Run("sharded", func(t *testing.T) {
		want := expected(t, dir, m, "v3-sharded", "end_raw")
		d, s, _ := openRemote(t, filepath.Join(dir, "v3-sharded.zarr"), false)
		a := d.Array("end_raw")
		// Row 5, columns 11-12 (8 bytes): inner chunk (1, 2) of shard
		// (0, 1), its row 1 and columns 1-2.
		read(t, a, want, (5*30+11)*4, 8)
		got := spanReads(t, s, "end_raw/c/")
		if len(got) != 2 || got[1][1] != 8 {
			t.Errorf("reads of the shard %v, want its index and then the 8 bytes asked for", got)
		}
		// Every element, 12 bytes at a time, from inner chunks stored or
		// not (rows 26.. were not written), none read whole.
		for off := int64(0); off+12 <= int64(len(want)); off += 12 * 37 {
			read(t, a, want, off, 12)
		}
		for _, r := range spanReads(t, s, "end_raw/c/") {
			if r[1] > 12 && r[1] != 16*6+4 {
				t.Errorf("a read of %d bytes: more than asked for, and not the index", r[1])
			}
		}
	})

	t.Run("plain", func(t *testing.T) {
		want := expected(t, dir, m, "v3-basic", "types/int32")
		for _, listed := range []bool{true, false} {
			d, s, lc := openRemote(t, filepath.Join(dir, "v3-basic.zarr"), listed)
			if listed {
				if _, err := lc.Search(ctx, "types/int32/c/1"); err != nil {
					t.Fatal(err)
				}
			}
			a := d.Array("types/int32")
			// Row 5, columns 3-4: chunk (1, 1) of 4 x 3.
			read(t, a, want, (5*7+3)*4, 8)
			got := spanReads(t, s, "types/int32/c/")
			const chunkBytes = 4 * 3 * 4
			switch {
			case listed && (len(got) != 1 || got[0] != [2]int64{(1*3 + 0) * 4, 8}):
				t.Errorf("listed: reads %v, want one of the 8 bytes asked for", got)
			case !listed && (len(got) != 1 || got[0][1] < chunkBytes):
				t.Errorf("not listed: reads %v, want the whole chunk (%d bytes)", got, chunkBytes)
			}
		}
	})

	t.Run("longer than its size", func(t *testing.T) {
		// zarrita's bad/long_raw_chunk: one uncompressed chunk (8 x 5
		// int32 of a 20 x 13 array) stored 5 bytes too long.
		tree := filepath.Join(dir, "v3-basic.zarr")
		var long string
		err := filepath.WalkDir(filepath.Join(tree, "bad", "long_raw_chunk", "c"), func(p string, e os.DirEntry, err error) error {
			if err == nil && !e.IsDir() {
				if info, err := e.Info(); err == nil && info.Size() != 8*5*4 {
					long, _ = filepath.Rel(tree, p)
				}
			}
			return err
		})
		if err != nil || long == "" {
			t.Fatalf("no chunk of the wrong size in bad/long_raw_chunk (%v)", err)
		}
		long = filepath.ToSlash(long)
		parts := strings.Split(long, "/") // bad/long_raw_chunk/c/I/J
		i, _ := strconv.Atoi(parts[len(parts)-2])
		j, _ := strconv.Atoi(parts[len(parts)-1])
		off := int64((i*8*13 + j*5) * 4)
		for _, listed := range []bool{true, false} {
			d, s, lc := openRemote(t, tree, listed)
			if listed {
				if _, err := lc.Search(ctx, filepath.ToSlash(filepath.Dir(long))); err != nil {
					t.Fatal(err)
				}
			}
			a := d.Array("bad/long_raw_chunk")
			if _, err := a.ReadAt(ctx, make([]byte, 4), off); !errors.Is(err, codec.ErrCorrupt) {
				t.Errorf("listed %v: ReadAt of %s: %v, want ErrCorrupt", listed, long, err)
			}
			if got := spanReads(t, s, long); listed && len(got) != 0 {
				t.Errorf("listed: %s read %v, want no request (its size is known)", long, got)
			}
		}
	})
}

// TestV3ShardedVLenCorrupt damages the shards of zarrita's sharded
// variable-length arrays: a damaged inner chunk, or a shard cut short,
// fails data.json's JSON with ErrCorrupt naming the chunk, never wrong
// elements.
func TestV3ShardedVLenCorrupt(t *testing.T) {
	dir, _ := zarritaFixtures(t)
	tree := filepath.Join(dir, "v3-dtypes.zarr")
	for _, tc := range []struct {
		name, array, shard string
		damage             func([]byte) []byte
	}{
		{"inner chunk", "string_sharded", "c/0/0", func(b []byte) []byte { b[12] ^= 0xff; b[13] ^= 0xff; return b }},
		{"cut short", "bytes_sharded", "c/0", func(b []byte) []byte { return b[:len(b)-5] }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := filepath.Join(tree, tc.array, filepath.FromSlash(tc.shard))
			orig, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			defer os.WriteFile(f, orig, 0o644)
			if err := os.WriteFile(f, tc.damage(bytes.Clone(orig)), 0o644); err != nil {
				t.Fatal(err)
			}
			d, _, _ := openRemote(t, tree, false)
			a := d.Array(tc.array)
			if a == nil || a.Err != nil {
				t.Fatalf("array %s: %v", tc.array, a)
			}
			got, err := a.JSON(context.Background())
			if !errors.Is(err, codec.ErrCorrupt) || !strings.Contains(err.Error(), tc.array+"/"+tc.shard) {
				t.Errorf("JSON of a damaged shard: %q, %v; want ErrCorrupt naming %s", got, err, tc.shard)
			}
		})
	}
}

// TestV3RangedReadsLargeChunk reads 8 bytes of a Zarr v3 array of 1 MiB
// uncompressed chunks that zarrita wrote, from a remote store with no
// kept listing: the store is asked the chunk's size, and then only the 8
// bytes are read; a chunk stored 5 bytes too long fails with ErrCorrupt,
// without being read whole.
func TestV3RangedReadsLargeChunk(t *testing.T) {
	if _, err := exec.LookPath("node"); err != nil {
		testenv.Require(t, "node (Debian package nodejs)", err)
	}
	mods, err := exec.Command("../scripts/install-zarrita.sh").Output()
	testenv.Require(t, "zarrita (npm: scripts/install-zarrita.sh)", err)
	tree := filepath.Join(t.TempDir(), "big.zarr")
	node := exec.Command("node", "--input-type=module", "-e", `
import path from "node:path";
import fs from "node:fs";
import { pathToFileURL } from "node:url";
const mods = process.env.NCZARRFS_NODE_MODULES;
const zarr = await import(pathToFileURL(path.join(mods, "zarrita/dist/src/index.js")).href);
const FileSystemStore = (await import(pathToFileURL(path.join(mods, "@zarrita/storage/dist/src/fs.js")).href)).default;
const root = zarr.root(new FileSystemStore(process.argv[1]));
await zarr.create(root, { attributes: {} });
const a = await zarr.create(root.resolve("big"), { shape: [512, 1024], chunkShape: [256, 1024], dtype: "int32",
	codecs: [{ name: "bytes", configuration: { endian: "little" } }] });
await zarr.set(a, null, { data: Int32Array.from({ length: 512 * 1024 }, (_, i) => i * 7), shape: [512, 1024], stride: [1024, 1] });
const got = await zarr.get(await zarr.open(root.resolve("big"), { kind: "array" }));
fs.writeFileSync(path.join(process.argv[1], "expected.bin"), new Uint8Array(got.data.buffer));
`, tree)
	node.Env = append(os.Environ(), "NCZARRFS_NODE_MODULES="+strings.TrimSpace(string(mods)))
	if out, err := node.CombinedOutput(); err != nil {
		t.Fatalf("zarrita: %v\n%s", err, out)
	}
	want, err := os.ReadFile(filepath.Join(tree, "expected.bin"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	d, s, _ := openRemote(t, tree, false)
	a := d.Array("big")
	off := int64((300*1024 + 5) * 4) // row 300: chunk (1, 0)
	buf := make([]byte, 8)
	if _, err := a.ReadAt(ctx, buf, off); err != nil || !bytes.Equal(buf, want[off:off+8]) {
		t.Fatalf("ReadAt: %v; differs from zarrita's values", err)
	}
	if got := spanReads(t, s, "big/c/"); len(got) != 1 || got[0] != [2]int64{(44*1024 + 5) * 4, 8} {
		t.Errorf("reads %v, want one of the 8 bytes asked for", got)
	}

	chunk := filepath.Join(tree, "big", "c", "0", "0")
	b, err := os.ReadFile(chunk)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(chunk, append(b, 1, 2, 3, 4, 5), 0o644); err != nil {
		t.Fatal(err)
	}
	d, s, _ = openRemote(t, tree, false)
	if _, err := d.Array("big").ReadAt(ctx, buf, 16); !errors.Is(err, codec.ErrCorrupt) {
		t.Errorf("ReadAt of a chunk stored 5 bytes too long: %v, want ErrCorrupt", err)
	}
	if got := spanReads(t, s, "big/c/0/0"); len(got) != 0 {
		t.Errorf("the long chunk was read: %v", got)
	}
}
