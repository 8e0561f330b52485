package all_test

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"

	"github.com/nczarrfs/nczarrfs/internal/testenv"
	"github.com/nczarrfs/nczarrfs/nczarr/codec"
	_ "github.com/nczarrfs/nczarrfs/nczarr/codec/all"
	"github.com/nczarrfs/nczarrfs/nczarr/codec/internal/codectest"
)

// boundScript encodes, with numcodecs, random bytes (which do not
// compress: every encoder's worst case) and a run of one byte, of each
// size, through each chain of filters and a compressor, and prints the
// stored sizes as JSON: [[len for each size] for each chain].
const boundScript = `
import sys, json, os, numpy as np, numcodecs
chains, sizes = json.loads(sys.argv[1]), json.loads(sys.argv[2])
rng = np.random.default_rng(7)
out = []
for chain in chains:
    codecs = [numcodecs.get_codec(c) for c in chain]
    lens = []
    for n in sizes:
        if n == 0 and len(codecs) > 1:
            lens += [0, 0]  # numcodecs' filters refuse empty input
            continue
        for data in (rng.integers(0, 256, n, dtype=np.uint8).tobytes(), b"\x07" * n):
            for c in codecs:
                data = bytes(c.encode(np.frombuffer(data, dtype=np.uint8)))
            lens.append(len(data))
    out.append(lens)
print(json.dumps(out))
`

// TestChainBound checks MaxEncodedSize against what numcodecs writes for
// the worst input (random bytes) and a compressible one, through every
// compressor and a few chains: no stored chunk is over its bound, and
// the bound of a single compressor is not far over the chunk's size.
func TestChainBound(t *testing.T) {
	chains := [][]string{
		{`{"id":"zlib","level":1}`}, {`{"id":"zlib","level":9}`},
		{`{"id":"gzip","level":1}`}, {`{"id":"gzip","level":9}`},
		{`{"id":"bz2","level":1}`}, {`{"id":"bz2","level":9}`},
		{`{"id":"zstd","level":1}`}, {`{"id":"zstd","level":12}`},
		{`{"id":"lz4","acceleration":1}`}, {`{"id":"lz4","acceleration":50}`},
		{`{"id":"lzma"}`}, {`{"id":"base64"}`},
		{`{"id":"blosc","cname":"lz4","clevel":5,"shuffle":1}`},
		{`{"id":"blosc","cname":"zstd","clevel":9,"shuffle":2}`},
		{`{"id":"blosc","cname":"blosclz","clevel":9,"shuffle":0}`},
		{`{"id":"blosc","cname":"zlib","clevel":1,"shuffle":1,"blocksize":256}`},
		{`{"id":"shuffle","elementsize":4}`, `{"id":"zlib","level":5}`},
		{`{"id":"delta","dtype":"<u1"}`, `{"id":"zstd","level":3}`},
		{`{"id":"crc32"}`, `{"id":"zlib","level":1}`},
		{`{"id":"base64"}`, `{"id":"zstd","level":1}`},
		{`{"id":"zstd","level":1}`, `{"id":"base64"}`},
	}
	sizes := []int{0, 4, 100, 4096, 65540, 200_000, 1 << 20}
	cj, _ := json.Marshal(func() [][]json.RawMessage {
		var out [][]json.RawMessage
		for _, c := range chains {
			var steps []json.RawMessage
			for _, s := range c {
				steps = append(steps, json.RawMessage(s))
			}
			out = append(out, steps)
		}
		return out
	}())
	sj, _ := json.Marshal(sizes)
	out, err := exec.Command(codectest.Python, "-c", boundScript, string(cj), string(sj)).Output()
	if ee, ok := err.(*exec.ExitError); ok {
		t.Fatalf("%s: %v: %s", codectest.Python, err, ee.Stderr)
	}
	testenv.Require(t, "numcodecs in "+codectest.Python, err)
	var lens [][]int64
	if err := json.Unmarshal(out, &lens); err != nil || len(lens) != len(chains) {
		t.Fatalf("script printed %.200s: %v", out, err)
	}
	for i, c := range chains {
		var filters []json.RawMessage
		for _, s := range c[:len(c)-1] {
			filters = append(filters, json.RawMessage(s))
		}
		chain, err := codec.NewChain(filters, json.RawMessage(c[len(c)-1]))
		if err != nil {
			t.Fatal(err)
		}
		name := strings.Join(c, ",")
		for j, n := range sizes {
			bound := chain.MaxEncodedSize(int64(n))
			for k, what := range []string{"random", "constant"} {
				if got := lens[i][2*j+k]; got > bound {
					t.Errorf("%s: %d %s bytes stored as %d, over the bound %d", name, n, what, got, bound)
				}
			}
			if len(c) == 1 && !strings.Contains(name, "base64") && bound > codec.UnknownBound(int64(n))+codec.BoundSlack {
				t.Errorf("%s: bound of %d bytes is %d, looser than an unknown codec's", name, n, bound)
			}
		}
	}
}

// TestStepBound checks the bound of the codecs that have no Bounder:
// filters by their exact size, others by UnknownBound, and the sums
// saturate rather than overflow.
func TestStepBound(t *testing.T) {
	chain, err := codec.NewChain([]json.RawMessage{json.RawMessage(`{"id":"astype","encode_dtype":"<f8","decode_dtype":"<i1"}`), json.RawMessage(`{"id":"crc32"}`)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := chain.MaxEncodedSize(1000), int64(8*1000+4+codec.BoundSlack); got != want {
		t.Errorf("astype(i1->f8),crc32 of 1000 bytes: bound %d, want %d", got, want)
	}
	pc, err := codec.NewChain(nil, json.RawMessage(`{"id":"pcodec"}`))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := pc.MaxEncodedSize(1<<20), codec.UnknownBound(1<<20)+codec.BoundSlack; got != want {
		t.Errorf("pcodec of 1 MiB: bound %d, want %d", got, want)
	}
	z, _ := codec.NewChain(nil, json.RawMessage(`{"id":"zstd"}`))
	if got := z.MaxEncodedSize(1 << 62); got <= 1<<62 {
		t.Errorf("zstd bound of 2^62 bytes = %d: overflowed", got)
	}
}
