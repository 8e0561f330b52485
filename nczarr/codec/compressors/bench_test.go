package compressors_test

import (
	"strings"
	"testing"

	"github.com/nczarrfs/nczarrfs/nczarr/codec"
	"github.com/nczarrfs/nczarrfs/nczarr/codec/internal/codectest"
)

// BenchmarkDecode decodes a 1 MiB chunk of float64 data with each
// compressor at numcodecs' default settings, and reports numcodecs' speed
// on the same chunk beside ours.
func BenchmarkDecode(b *testing.B) {
	for _, c := range codectest.Generate(b, "bench") {
		if c.Group != "bench-compressors" {
			continue
		}
		dec, err := codec.Lookup(c.Compressor)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(strings.TrimPrefix(c.Name, "bench-"), func(b *testing.B) {
			b.SetBytes(int64(c.Size))
			b.ReportAllocs()
			dst := make([]byte, 0, c.Size)
			for b.Loop() {
				if _, err := dec.Decode(dst, c.Enc, c.Size, -1); err != nil {
					b.Fatal(err)
				}
			}
			// numcodecs on the same chunk, measured by the generator.
			b.ReportMetric(c.NumcodecsMBps, "numcodecs-MB/s")
		})
	}
}
