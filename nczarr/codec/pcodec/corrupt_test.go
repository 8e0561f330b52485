package pcodec

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/nczarrfs/nczarrfs/nczarr/codec"
)

// seedStreams are small streams of several modes and delta encodings, for
// the corruption test and the fuzz corpus.
func seedStreams() [][]byte {
	var out [][]byte
	for i, c := range roundTripCases() {
		if i%7 == 0 && len(c.want()) <= 4096 {
			out = append(out, encodeStandalone(0, c.chunks...))
		}
	}
	return out
}

// decodeChecked decodes src with only a maximum size and checks the
// decoder's contract: an error wraps ErrCorrupt, a result fits the
// maximum and decoding again with its exact size agrees.
func decodeChecked(t *testing.T, src []byte, max int) {
	t.Helper()
	out, err := decoder{}.Decode(nil, src, -1, max)
	if err != nil {
		if !errors.Is(err, codec.ErrCorrupt) {
			t.Fatalf("%v does not wrap ErrCorrupt", err)
		}
		return
	}
	if len(out) > max {
		t.Fatalf("decoded %d bytes, max %d", len(out), max)
	}
	again, err := decoder{}.Decode(nil, src, len(out), -1)
	if err != nil || !bytes.Equal(again, out) {
		t.Fatalf("exact-size decode disagrees: %v", err)
	}
}

// TestCorrupt truncates every seed stream at every length and flips
// random bits in it: each decode fails with ErrCorrupt or gives a result
// within the size limit, and never panics.
func TestCorrupt(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, src := range seedStreams() {
		// Every cut of a short stream, 300 cuts of a longer one.
		step := max(1, len(src)/300)
		for n := 0; n < len(src); n += step {
			if _, err := (decoder{}).Decode(nil, src[:n], -1, 1<<20); !errors.Is(err, codec.ErrCorrupt) {
				t.Fatalf("stream cut to %d of %d bytes: err = %v, want ErrCorrupt", n, len(src), err)
			}
		}
		for range 100 {
			bad := bytes.Clone(src)
			for range 1 + rng.IntN(3) {
				bad[rng.IntN(len(bad))] ^= 1 << rng.IntN(8)
			}
			decodeChecked(t, bad, 1<<16)
		}
	}
}

// TestSizeBound checks that a stream's counts are held to the declared
// size before anything is allocated for them.
func TestSizeBound(t *testing.T) {
	// One chunk declaring 2^24 numbers in a few bytes: a single bin of
	// 0 offset bits would make them from nothing.
	big := encChunk{typ: tU64, nums: make([]uint64, 1<<12), bins: 1}
	src := encodeStandalone(0, big)
	// encodeStandalone's header: "pco!", version, uniform type (6 bytes),
	// the 70-bit count hint (9 bytes), format 4.1 (2), then the chunk's
	// type byte and its count - 1 in 3 bytes.
	if src[17] != tU64.code {
		t.Fatalf("byte 17 is %d, not the chunk's number type", src[17])
	}
	src[18], src[19], src[20] = 0xff, 0xff, 0xff // count - 1 = 2^24 - 1
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := decoder{}.Decode(nil, src, -1, 1<<15)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, codec.ErrCorrupt) {
		t.Fatalf("2^24 numbers for 2^15 bytes: err = %v, want ErrCorrupt", err)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 1<<20 {
		t.Errorf("refusing the stream allocated %d bytes", grew)
	}
	// The same stream's true count is refused under an exact size too.
	if _, err := (decoder{}).Decode(nil, encodeStandalone(0, big), 8<<12-8, -1); !errors.Is(err, codec.ErrCorrupt) {
		t.Errorf("exact size one number short: err = %v, want ErrCorrupt", err)
	}
}

func FuzzDecode(f *testing.F) {
	for _, src := range seedStreams() {
		f.Add(src)
	}
	// The reference fixtures too, when present.
	for _, dir := range fixtureDirsOf(os.Getenv(FixturesEnv)) {
		filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() && (filepath.Ext(path) == ".pco" || filepath.Ext(path) == ".dat") {
				if b, err := os.ReadFile(path); err == nil && len(b) < 1<<16 {
					f.Add(b)
				}
			}
			return nil
		})
	}
	f.Fuzz(func(t *testing.T, src []byte) { decodeChecked(t, src, 1<<20) })
}

func fixtureDirsOf(env string) []string {
	if env == "" {
		return nil
	}
	return []string{env}
}
