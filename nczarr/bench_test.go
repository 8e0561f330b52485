package nczarr_test

import (
	"context"
	"os"
	"testing"

	"github.com/nczarrfs/nczarrfs/cache"
	"github.com/nczarrfs/nczarrfs/nczarr"
	_ "github.com/nczarrfs/nczarrfs/nczarr/codec/all"
	"github.com/nczarrfs/nczarrfs/zmap/file"
)

// BenchmarkSequentialRead reads a whole array in 128 KiB requests, as the
// kernel does for `cat data`. Set NCZARRFS_BENCH_ARRAY to a Zarr array
// directory (e.g. one written by zarr-python) to run it.
func BenchmarkSequentialRead(b *testing.B) {
	dir := os.Getenv("NCZARRFS_BENCH_ARRAY")
	if dir == "" {
		b.Skip("set NCZARRFS_BENCH_ARRAY to a Zarr array directory")
	}
	store, err := file.Open(dir)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	for i := 0; i < b.N; i++ {
		ds, err := nczarr.Open(ctx, store, nczarr.Options{Cache: cache.New(256 << 20)})
		if err != nil {
			b.Fatal(err)
		}
		a := ds.Array("")
		buf := make([]byte, 128<<10)
		b.SetBytes(a.Size())
		for off := int64(0); off < a.Size(); off += int64(len(buf)) {
			if _, err := a.ReadAt(ctx, buf, off); err != nil && off+int64(len(buf)) < a.Size() {
				b.Fatal(err)
			}
		}
	}
}
