package blosc_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"github.com/nczarrfs/nczarrfs/nczarr/codec"
	"github.com/nczarrfs/nczarrfs/nczarr/codec/blosc"
	"github.com/nczarrfs/nczarrfs/nczarr/codec/internal/codectest"
)

func TestDecodeNumcodecs(t *testing.T) {
	cases := codectest.Generate(t, "blosc")
	seen := map[string]bool{}
	for _, c := range cases {
		if h, err := blosc.ParseHeader(c.Enc); err == nil && h.Flags&blosc.FlagMemcpyed == 0 {
			seen[h.FormatName()] = true
		}
	}
	for _, f := range []string{"blosclz", "lz4", "snappy", "zlib", "zstd"} {
		if !seen[f] {
			t.Errorf("no compressed frame used inner codec %s", f)
		}
	}
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			h, err := blosc.ParseHeader(c.Enc)
			if err != nil {
				t.Fatal(err)
			}
			dec, err := codec.Lookup(c.Compressor)
			if err != nil {
				t.Fatal(err)
			}
			got, err := dec.Decode(nil, c.Enc, c.Size, -1)
			if err != nil {
				t.Fatalf("header %+v: %v", h, err)
			}
			if !bytes.Equal(got, c.Raw) {
				t.Fatalf("header %+v: decoded bytes differ from numcodecs", h)
			}
			// Unknown size, bounded by max.
			got, err = blosc.Decode(make([]byte, 0, 10), c.Enc, -1, c.Size)
			if err != nil || !bytes.Equal(got, c.Raw) {
				t.Fatalf("size -1: %v", err)
			}
			if c.Size > 0 {
				if _, err := blosc.Decode(nil, c.Enc, c.Size-1, -1); !errors.Is(err, codec.ErrCorrupt) {
					t.Fatalf("wrong size: err = %v, want ErrCorrupt", err)
				}
				if _, err := blosc.Decode(nil, c.Enc, -1, c.Size-1); !errors.Is(err, codec.ErrCorrupt) {
					t.Fatalf("over max: err = %v, want ErrCorrupt", err)
				}
			}
		})
	}
}

// TestCorrupt damages real frames every way a short loop can: truncation
// at every length and a flipped byte at every position must give an error
// or the right size, never a panic.
func TestCorrupt(t *testing.T) {
	cases := codectest.Generate(t, "blosc")
	n := 0
	for _, c := range cases {
		if !strings.HasSuffix(c.Name, "-c5-b0-smooth") || !strings.Contains(c.Name, "-t4-") {
			continue
		}
		n++
		src := c.Enc
		for i := 0; i < len(src); i++ {
			if _, err := blosc.Decode(nil, src[:i], c.Size, -1); err == nil {
				t.Fatalf("%s truncated to %d bytes decoded without error", c.Name, i)
			}
		}
		buf := append([]byte(nil), src...)
		for i := 0; i < len(buf); i += 1 + len(buf)/500 {
			buf[i] ^= 0xa5
			out, err := blosc.Decode(nil, buf, c.Size, -1)
			if err == nil && len(out) != c.Size {
				t.Fatalf("%s with byte %d flipped: %d bytes, no error", c.Name, i, len(out))
			}
			buf[i] ^= 0xa5
		}
	}
	if n == 0 {
		t.Fatal("no frames to corrupt")
	}
}

func TestHeaderErrors(t *testing.T) {
	frame := func(mod func(h []byte)) []byte {
		h := make([]byte, 16+8)
		h[0], h[1], h[2], h[3] = 2, 1, blosc.FlagMemcpyed, 1
		binary.LittleEndian.PutUint32(h[4:], 8)
		binary.LittleEndian.PutUint32(h[8:], 8)
		binary.LittleEndian.PutUint32(h[12:], 24)
		mod(h)
		return h
	}
	tests := []struct {
		name string
		src  []byte
		size int
		ok   bool
	}{
		{"valid memcpyed", frame(func([]byte) {}), 8, true},
		{"empty", nil, 8, false},
		{"short header", frame(func([]byte) {})[:15], 8, false},
		{"version 0", frame(func(h []byte) { h[0] = 0 }), 8, false},
		{"blosc2 version", frame(func(h []byte) { h[0] = 5 }), 8, false},
		{"typesize 0", frame(func(h []byte) { h[3] = 0 }), 8, false},
		{"cbytes past end", frame(func(h []byte) { binary.LittleEndian.PutUint32(h[12:], 25) }), 8, false},
		{"cbytes below header", frame(func(h []byte) { binary.LittleEndian.PutUint32(h[12:], 3) }), 8, false},
		{"memcpyed too short", frame(func(h []byte) { binary.LittleEndian.PutUint32(h[12:], 23) }), 8, false},
		{"huge nbytes", frame(func(h []byte) { binary.LittleEndian.PutUint32(h[4:], 1<<30) }), 8, false},
		{"negative nbytes", frame(func(h []byte) { binary.LittleEndian.PutUint32(h[4:], 0xffffffff) }), 8, false},
		{"zero blocksize", frame(func(h []byte) { h[2] = 0; binary.LittleEndian.PutUint32(h[8:], 0) }), 8, false},
		{"block table past end", frame(func(h []byte) { h[2] = 0; binary.LittleEndian.PutUint32(h[8:], 1) }), 8, false},
		{"block start in table", frame(func(h []byte) { h[2] = 0; binary.LittleEndian.PutUint32(h[16:], 4) }), 8, false},
		{"unknown inner codec", frame(func(h []byte) { h[2] = 7 << 5; binary.LittleEndian.PutUint32(h[16:], 20) }), 8, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := blosc.Decode(nil, tt.src, tt.size, -1)
			if tt.ok != (err == nil) {
				t.Fatalf("err = %v, want ok=%v", err, tt.ok)
			}
			if err != nil && !errors.Is(err, codec.ErrCorrupt) {
				t.Fatalf("err = %v does not wrap ErrCorrupt", err)
			}
		})
	}
}

// FuzzDecode is seeded with frames numcodecs made (testdata/fuzz, written
// by testdata/gen_fuzz_corpus.py).
func FuzzDecode(f *testing.F) {
	f.Fuzz(func(t *testing.T, src []byte) {
		const max = 1 << 20
		out, err := blosc.Decode(nil, src, -1, max)
		if err != nil {
			return
		}
		h, _ := blosc.ParseHeader(src)
		if len(out) != h.NBytes || len(out) > max {
			t.Fatalf("decoded %d bytes, header says %d", len(out), h.NBytes)
		}
	})
}

// BenchmarkDecode decodes 1 MiB chunks of float64 data compressed with
// each inner codec at clevel 5, and reports numcodecs' speed on the same
// chunk (one thread) beside ours.
func BenchmarkDecode(b *testing.B) {
	for _, c := range codectest.Generate(b, "bench") {
		if c.Group != "bench-blosc" {
			continue
		}
		b.Run(strings.TrimPrefix(c.Name, "bench-blosc-"), func(b *testing.B) {
			b.SetBytes(int64(c.Size))
			dst := make([]byte, 0, c.Size)
			for b.Loop() {
				if _, err := blosc.Decode(dst, c.Enc, c.Size, -1); err != nil {
					b.Fatal(err)
				}
			}
			// numcodecs on the same chunk, measured by the generator.
			b.ReportMetric(c.NumcodecsMBps, "numcodecs-MB/s")
		})
	}
}
