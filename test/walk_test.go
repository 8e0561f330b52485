package test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// walkScript writes, with zarr-python, a (300, 64, 64) float32 zstd array
// "v" chunked (10, 32, 32) and a (512, 256) float32 zstd array "p"
// chunked (16, 32), with the data files zarr reads back in expected/.
const walkScript = `
import os, sys
import numpy as np, zarr, numcodecs as nc
out = sys.argv[1]
g = zarr.open_group(zarr.DirectoryStore(os.path.join(out, "tree")), mode="w")
os.makedirs(os.path.join(out, "expected"))
rng = np.random.default_rng(7)
for name, shape, chunks in [("v", (300, 64, 64), (10, 32, 32)), ("p", (512, 256), (16, 32))]:
    x = rng.integers(0, 1000, size=shape).astype("<f4")
    g.create_dataset(name, shape=shape, chunks=chunks, dtype="<f4", compressor=nc.Zstd(level=1))[:] = x
    g[name][...].astype("<f4").tofile(os.path.join(out, "expected", name + ".bin"))
`

// TestS3MountWalkReadsAhead reads, through a mount of MinIO 20 ms away, a
// time series at one point by 4-byte preads down axis 0 of a 3-D array,
// and a column of a 2-D array from the bottom up, as a legacy program
// does. Each walk's chunks are requested once, read-ahead loaded them
// before the reads that needed them (.nczarrfs/stats counts the reads that
// found a read-ahead load), chunks off the walk are requested only before
// the walk is found (in its first chunk along the walk), and the bytes are
// zarr-python's.
func TestS3MountWalkReadsAhead(t *testing.T) {
	dir := t.TempDir()
	if out, err := exec.Command(python, "-c", walkScript, dir).CombinedOutput(); err != nil {
		t.Fatalf("writing the arrays with zarr-python: %v\n%s", err, out)
	}
	m := startNetMount(t, dir, []string{"v", "p"}, 10*time.Millisecond, "--cache-size", "64MiB")
	for _, tc := range []struct {
		name  string
		shape []int64
		steps int64
		at    func(i int64) []int64 // the element read at step i
		chunk func(i int64) string  // its chunk's key
		first func(key string) bool // whether key lies in the walk's first chunk along it
	}{
		{"v", []int64{300, 64, 64}, 300,
			func(i int64) []int64 { return []int64{i, 40, 7} },
			func(i int64) string { return fmt.Sprintf("ds/v/%d.1.0", i/10) },
			func(key string) bool { return bytes.HasPrefix([]byte(key), []byte("ds/v/0.")) }},
		{"p", []int64{512, 256}, 512,
			func(i int64) []int64 { return []int64{511 - i, 100} },
			func(i int64) string { return fmt.Sprintf("ds/p/%d.3", (511-i)/16) },
			func(key string) bool { return bytes.HasPrefix([]byte(key), []byte("ds/p/31.")) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := m.readAhead(t)
			f := m.openData(t, tc.name)
			want := m.want[tc.name]
			walk := map[string]bool{}
			buf := make([]byte, 4)
			for i := range tc.steps {
				var e int64
				for d, x := range tc.at(i) {
					e = e*tc.shape[d] + x
				}
				if _, err := f.ReadAt(buf, 4*e); err != nil {
					t.Fatalf("step %d: %v", i, err)
				}
				if !bytes.Equal(buf, want[4*e:4*e+4]) {
					t.Fatalf("step %d at %v: %x, zarr-python has %x", i, tc.at(i), buf, want[4*e:4*e+4])
				}
				walk[tc.chunk(i)] = true
			}
			for key := range walk {
				if n := m.proxy.Count(key); n != 1 {
					t.Errorf("chunk %s of the walk requested %d times, want once", key, n)
				}
			}
			for _, key := range m.chunkKeys(t, tc.name, tc.shape) {
				if !walk[key] && !tc.first(key) && m.proxy.Count(key) > 0 {
					t.Errorf("chunk %s, off the walk, requested %d times", key, m.proxy.Count(key))
				}
			}
			// The first chunk is read by the first read; the walk is
			// found in it; every later one is loaded ahead.
			if hits := m.readAhead(t) - before; hits < int64(len(walk)-1) {
				t.Errorf("%d reads found a chunk loaded ahead, want the walk's %d chunks but its first", hits, len(walk)-1)
			}
		})
	}
}

// readAhead reads the reads that found a chunk read-ahead loaded, from
// .nczarrfs/stats.
func (m *netMount) readAhead(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(m.d.mnt, ".nczarrfs", "stats"))
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Cache struct {
			Hits int64 `json:"read_ahead_hits"`
		} `json:"cache"`
	}
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatalf(".nczarrfs/stats: %v\n%s", err, b)
	}
	return s.Cache.Hits
}

// chunkKeys lists every chunk key of the array name of shape (the
// chunks of walkScript), as the proxy names them.
func (m *netMount) chunkKeys(t *testing.T, name string, shape []int64) []string {
	t.Helper()
	chunks := map[string][]int64{"v": {10, 32, 32}, "p": {16, 32}}[name]
	var keys []string
	var rec func(prefix string, d int)
	rec = func(prefix string, d int) {
		if d == len(shape) {
			keys = append(keys, "ds/"+name+"/"+prefix[1:])
			return
		}
		for i := int64(0); i < (shape[d]+chunks[d]-1)/chunks[d]; i++ {
			rec(fmt.Sprintf("%s.%d", prefix, i), d+1)
		}
	}
	rec("", 0)
	return keys
}
