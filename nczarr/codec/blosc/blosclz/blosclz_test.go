package blosclz_test

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"

	"github.com/nczarrfs/nczarrfs/nczarr/codec/blosc"
	"github.com/nczarrfs/nczarrfs/nczarr/codec/blosc/blosclz"
	"github.com/nczarrfs/nczarrfs/nczarr/codec/internal/codectest"
)

// streams returns the BloscLZ streams of numcodecs frames that hold a
// single unshuffled, unsplit block, with the bytes each decodes to.
func streams(tb testing.TB) (encoded, decoded [][]byte) {
	for _, c := range codectest.Generate(tb, "blosc") {
		if !strings.HasPrefix(c.Name, "blosc-blosclz-s0-t1-") {
			continue
		}
		h, err := blosc.ParseHeader(c.Enc)
		if err != nil || h.Flags&blosc.FlagMemcpyed != 0 || h.BlockSize < h.NBytes {
			continue
		}
		start := binary.LittleEndian.Uint32(c.Enc[16:])
		n := binary.LittleEndian.Uint32(c.Enc[start:])
		s := c.Enc[start+4 : start+4+n]
		if len(s) == h.NBytes {
			continue // stored raw
		}
		encoded = append(encoded, s)
		decoded = append(decoded, c.Raw)
	}
	if len(encoded) == 0 {
		tb.Fatal("no single-block BloscLZ frames")
	}
	return encoded, decoded
}

func TestDecode(t *testing.T) {
	enc, dec := streams(t)
	for i := range enc {
		out := make([]byte, len(dec[i]))
		n, err := blosclz.Decode(out, enc[i])
		if err != nil || n != len(out) || !bytes.Equal(out, dec[i]) {
			t.Fatalf("stream %d: n=%d err=%v", i, n, err)
		}
		// One byte short of room must fail, not write past the end.
		short := make([]byte, len(dec[i])-1, len(dec[i])+64)
		if _, err := blosclz.Decode(short, enc[i]); err == nil {
			t.Fatalf("stream %d: decoded into a buffer one byte short", i)
		}
		if tail := short[len(short):cap(short)]; !bytes.Equal(tail, make([]byte, len(tail))) {
			t.Fatalf("stream %d: wrote past len(dst)", i)
		}
	}
}

func TestHandMade(t *testing.T) {
	tests := []struct {
		name string
		src  []byte
		want string
		err  bool
	}{
		{"empty", nil, "", false},
		{"literal", []byte{2, 'a', 'b', 'c'}, "abc", false},
		// Literal "ab", then a match of length 3+? at distance 2 ("ababa"),
		// then a literal "!" so the match is applied.
		{"overlapping match", []byte{1, 'a', 'b', 0x20, 1, 0, '!'}, "ababa!", false},
		{"run", []byte{0, 'z', 0x40, 0, 0, '.'}, "zzzzz.", false},
		{"match before start", []byte{0, 'a', 0x20, 5, 0, 'x'}, "", true},
		{"truncated literal", []byte{5, 'a'}, "", true},
		{"truncated match", []byte{0, 'a', 0x20}, "", true},
		{"long length truncated", []byte{0, 'a', 0xe0, 255}, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := make([]byte, 64)
			n, err := blosclz.Decode(out, tt.src)
			if (err != nil) != tt.err {
				t.Fatalf("err = %v, want error %v", err, tt.err)
			}
			if !tt.err && string(out[:n]) != tt.want {
				t.Fatalf("got %q, want %q", out[:n], tt.want)
			}
		})
	}
}

// FuzzDecode is seeded with streams from frames numcodecs made
// (testdata/fuzz, written by testdata/gen_fuzz_corpus.py).
func FuzzDecode(f *testing.F) {
	f.Fuzz(func(t *testing.T, src []byte) {
		out := make([]byte, 1<<16, 1<<16+16)
		n, _ := blosclz.Decode(out, src)
		if n < 0 || n > len(out) {
			t.Fatalf("n = %d", n)
		}
		if tail := out[len(out):cap(out)]; !bytes.Equal(tail, make([]byte, 16)) {
			t.Fatal("wrote past len(dst)")
		}
	})
}

func BenchmarkDecode(b *testing.B) {
	enc, dec := streams(b)
	s, want := enc[0], dec[0]
	for i := range enc {
		if len(dec[i]) > len(want) {
			s, want = enc[i], dec[i]
		}
	}
	out := make([]byte, len(want))
	b.SetBytes(int64(len(want)))
	for b.Loop() {
		if _, err := blosclz.Decode(out, s); err != nil {
			b.Fatal(err)
		}
	}
}
