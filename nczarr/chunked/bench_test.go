package chunked_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/nczarrfs/nczarrfs/cache"
	"github.com/nczarrfs/nczarrfs/nczarr"
	_ "github.com/nczarrfs/nczarrfs/nczarr/codec/all"
	"github.com/nczarrfs/nczarrfs/zmap/file"
)

// benchArrays writes a 2000x2000 float64 array (32 MB, 500x500 chunks) with
// each compressor, using zarr-python, and returns the folder.
func benchArrays(b *testing.B) string {
	b.Helper()
	dir := b.TempDir()
	script := `import sys, zarr, numcodecs, numpy as np
a = np.random.default_rng(1).standard_normal((2000, 2000))
comps = {"none": None, "zlib": numcodecs.Zlib(1), "zstd": numcodecs.Zstd(1),
         "blosc-lz4": numcodecs.Blosc("lz4", 5, numcodecs.Blosc.SHUFFLE)}
for name, comp in comps.items():
    zarr.open(sys.argv[1] + "/" + name, mode="w", shape=a.shape, chunks=(500, 500),
              dtype="<f8", compressor=comp)[:] = a
`
	if out, err := exec.Command("/usr/bin/python3", "-c", script, dir).CombinedOutput(); err != nil {
		b.Fatalf("zarr-python: %v\n%s", err, out)
	}
	return dir
}

// BenchmarkReadData reads a whole array in 1 MiB requests, as the kernel
// does for `cat data` on the mount, from a cold cache each iteration.
func BenchmarkReadData(b *testing.B) {
	dir := benchArrays(b)
	for _, name := range []string{"none", "zlib", "zstd", "blosc-lz4"} {
		b.Run(name, func(b *testing.B) {
			store, err := file.Open(filepath.Join(dir, name))
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			buf := make([]byte, 1<<20)
			for i := 0; i < b.N; i++ {
				ds, err := nczarr.Open(ctx, store, nczarr.Options{Cache: cache.New(256 << 20)})
				if err != nil {
					b.Fatal(err)
				}
				a := ds.Array("")
				b.SetBytes(a.Size())
				for off := int64(0); off < a.Size(); off += int64(len(buf)) {
					if _, err := a.ReadAt(ctx, buf, off); err != nil && off+int64(len(buf)) < a.Size() {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
