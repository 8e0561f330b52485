package pcodec

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/nczarrfs/nczarrfs/nczarr/codec"
	_ "github.com/nczarrfs/nczarrfs/nczarr/codec/compressors" // zstd, for comparison
)

// benchCases are 1 MiB chunks pco suits: a float64 random walk (classic
// mode, first-order delta, 64 bins), float64 multiples of 0.01 (float-mult,
// second order) and int32 counts (classic, 256 bins).
func benchCases() []rtCase {
	rng := rand.New(rand.NewPCG(5, 6))
	const n = 1 << 17
	walk := make([]uint64, n)
	x := 0.0
	for i := range walk {
		x += rng.NormFloat64()
		walk[i] = math.Float64bits(x)
	}
	mults := make([]uint64, n)
	for i := range mults {
		mults[i] = math.Float64bits(math.Round(rng.NormFloat64()*1e4) * 0.01)
	}
	counts := make([]uint64, 2*n)
	for i := range counts {
		counts[i] = uint64(uint32(rng.ExpFloat64() * 1000))
	}
	return []rtCase{
		{"f64-walk", []encChunk{{typ: tF64, nums: walk, delta: deltaConsecutive, order: 1, bins: 64}}},
		{"f64-mult", []encChunk{{typ: tF64, nums: mults, mode: modeFloatMult, base: math.Float64bits(0.01), bins: 256}}},
		{"i32-counts", []encChunk{{typ: tI32, nums: counts, bins: 256}}},
	}
}

// BenchmarkDecode decodes each case with pcodec and, beside it, the same
// numbers compressed with zstd (level 3) through the zstd codec.
func BenchmarkDecode(b *testing.B) {
	zdec, err := codec.Lookup(json.RawMessage(`{"id": "zstd", "level": 3}`))
	if err != nil {
		b.Fatal(err)
	}
	enc, err := zstd.NewWriter(nil)
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range benchCases() {
		raw := c.want()
		pco := encodeStandalone(0, c.chunks...)
		zst := enc.EncodeAll(raw, nil)
		for _, k := range []struct {
			name string
			dec  codec.Codec
			src  []byte
		}{{"pcodec", decoder{}, pco}, {"zstd", zdec, zst}} {
			b.Run(c.name+"/"+k.name, func(b *testing.B) {
				b.SetBytes(int64(len(raw)))
				b.ReportAllocs()
				dst := make([]byte, 0, len(raw))
				for b.Loop() {
					if _, err := k.dec.Decode(dst, k.src, len(raw), -1); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(len(raw))/float64(len(k.src)), "ratio")
			})
		}
	}
}

// BenchmarkReference decodes the streams bench_*.pco (with their numbers
// in bench_*.raw) found in the reference fixture folders: pco's own
// encodings of 1 MiB of numbers with its defaults.
func BenchmarkReference(b *testing.B) {
	var dirs []string
	if d := os.Getenv(FixturesEnv); d != "" {
		dirs = append(dirs, d)
	}
	var files []string
	for _, d := range dirs {
		m, _ := filepath.Glob(filepath.Join(d, "bench_*.pco"))
		files = append(files, m...)
	}
	if len(files) == 0 {
		b.Skipf("no bench_*.pco in %s", FixturesEnv)
	}
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		raw, err := os.ReadFile(strings.TrimSuffix(f, ".pco") + ".raw")
		if err != nil {
			b.Fatal(err)
		}
		b.Run(strings.TrimSuffix(filepath.Base(f), ".pco"), func(b *testing.B) {
			b.SetBytes(int64(len(raw)))
			dst := make([]byte, 0, len(raw))
			for b.Loop() {
				out, err := decoder{}.Decode(dst, src, len(raw), -1)
				if err != nil || len(out) != len(raw) {
					b.Fatal(err)
				}
			}
		})
	}
}
