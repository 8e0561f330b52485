package chunked_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/nczarrfs/nczarrfs/cache"
	"github.com/nczarrfs/nczarrfs/nczarr"
	"github.com/nczarrfs/nczarrfs/zmap/file"
)

// benchRead reads the array of each compressor whole, in requests of
// reqSize, opening the dataset (with a fresh cache of budget bytes) every
// iteration when cold, or once when warm.
func benchRead(b *testing.B, reqSize int, budget int64, cold bool) {
	dir := benchArrays(b)
	for _, name := range []string{"none", "zstd", "blosc-lz4"} {
		b.Run(name, func(b *testing.B) {
			store, err := file.Open(filepath.Join(dir, name))
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			open := func() *nczarr.Array {
				ds, err := nczarr.Open(ctx, store, nczarr.Options{Cache: cache.New(budget)})
				if err != nil {
					b.Fatal(err)
				}
				return ds.Array("")
			}
			a := open()
			buf := make([]byte, reqSize)
			read := func() {
				for off := int64(0); off < a.Size(); off += int64(len(buf)) {
					if _, err := a.ReadAt(ctx, buf, off); err != nil && off+int64(len(buf)) < a.Size() {
						b.Fatal(err)
					}
				}
			}
			if !cold {
				read()
			}
			b.SetBytes(a.Size())
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if cold {
					a = open()
				}
				read()
			}
		})
	}
}

// BenchmarkReadDataSeq128K reads as the kernel does for `cat data` on the
// mount: 128 KiB requests in order, from a cold cache each iteration.
func BenchmarkReadDataSeq128K(b *testing.B) { benchRead(b, 128<<10, 256<<20, true) }

// BenchmarkReadDataSmallCache reads in 128 KiB requests through a cache a
// quarter the array's size, so that chunks are evicted and recycled.
func BenchmarkReadDataSmallCache(b *testing.B) { benchRead(b, 128<<10, 8<<20, true) }

// BenchmarkReadDataWarm reads in 1 MiB requests from a cache that holds
// the whole array already.
func BenchmarkReadDataWarm(b *testing.B) { benchRead(b, 1<<20, 256<<20, false) }
