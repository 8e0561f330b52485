package filters_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/nczarrfs/nczarrfs/nczarr/codec"
	"github.com/nczarrfs/nczarrfs/nczarr/codec/filters"
	"github.com/nczarrfs/nczarrfs/nczarr/codec/internal/codectest"
)

func cases(tb testing.TB) []codectest.Case {
	return append(codectest.Generate(tb, "filters"), codectest.Generate(tb, "fletcher32")...)
}

func TestDecodeNumcodecs(t *testing.T) {
	for _, c := range cases(t) {
		t.Run(c.Name, func(t *testing.T) {
			dec, err := codec.Lookup(c.Config())
			if err != nil {
				t.Fatal(err)
			}
			codectest.CheckDecode(t, dec, c)
		})
	}
}

func TestChecksumMismatch(t *testing.T) {
	n := 0
	for _, c := range cases(t) {
		if !strings.HasPrefix(c.Name, "crc32-") && !strings.HasPrefix(c.Name, "adler32-") && !strings.HasPrefix(c.Name, "fletcher32-") {
			continue
		}
		dec, err := codec.Lookup(c.Config())
		if err != nil {
			t.Fatal(err)
		}
		for i := range c.Enc {
			bad := append([]byte(nil), c.Enc...)
			bad[i] ^= 0x01
			if _, err := dec.Decode(nil, bad, c.Size, -1); !errors.Is(err, codec.ErrCorrupt) {
				t.Fatalf("%s with bit 0 of byte %d flipped: err = %v, want ErrCorrupt", c.Name, i, err)
			}
			if i > 64 {
				break
			}
		}
		n++
	}
	if n < 10 {
		t.Fatalf("only %d checksum cases", n)
	}
}

func TestFletcher32Reversed(t *testing.T) {
	// HDF5 accepts the checksum with the bytes of each 16-bit half swapped,
	// as written before HDF5 1.6.3.
	for _, c := range codectest.Generate(t, "fletcher32") {
		enc := append([]byte(nil), c.Enc...)
		sum := enc[len(enc)-4:]
		sum[0], sum[1], sum[2], sum[3] = sum[1], sum[0], sum[3], sum[2]
		dec, _ := codec.Lookup(c.Config())
		got, err := dec.Decode(nil, enc, c.Size, -1)
		if err != nil || !bytes.Equal(got, c.Raw) {
			t.Fatalf("%s: %v", c.Name, err)
		}
		if filters.Fletcher32(c.Raw) != leUint32(c.Enc[len(c.Enc)-4:]) {
			t.Fatalf("%s: Fletcher32 disagrees with HDF5", c.Name)
		}
	}
}

func leUint32(b []byte) uint32 {
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
}

func TestBadConfig(t *testing.T) {
	for _, cfg := range []string{
		`{"id":"delta"}`,
		`{"id":"delta","dtype":"<U3"}`,
		`{"id":"delta","dtype":"<i3"}`,
		`{"id":"delta","dtype":"!i4"}`,
		`{"id":"astype","encode_dtype":"<f8"}`,
		`{"id":"fixedscaleoffset","dtype":"<f8","astype":"<u1","scale":"x","offset":0}`,
		`{"id":"quantize","digits":2,"dtype":"<i4"}`,
		`{"id":"categorize","labels":["a"],"dtype":"<i4","astype":"|u1"}`,
		`{"id":"shuffle","elementsize":-1}`,
		`{"id":"shuffle","elementsize":"x"}`,
	} {
		if _, err := codec.Lookup(json.RawMessage(cfg)); err == nil {
			t.Errorf("%s: no error", cfg)
		}
	}
	_, err := codec.Lookup(json.RawMessage(`{"id":"categorize","labels":["a"],"dtype":"|O","astype":"|u1"}`))
	if !errors.Is(err, codec.ErrUnknown) {
		t.Errorf("categorize to object: err = %v, want ErrUnknown", err)
	}
}

func TestBadInput(t *testing.T) {
	tests := []struct {
		config string
		src    []byte
		size   int
	}{
		{`{"id":"shuffle","elementsize":4}`, make([]byte, 6), 6},
		{`{"id":"delta","dtype":"<i4"}`, make([]byte, 6), -1},
		{`{"id":"packbits"}`, nil, -1},
		{`{"id":"packbits"}`, []byte{8, 0xff}, -1},
		{`{"id":"packbits"}`, []byte{3}, -1},
		{`{"id":"crc32"}`, []byte{1, 2, 3}, -1},
		{`{"id":"fletcher32"}`, []byte{1, 2}, -1},
		{`{"id":"astype","encode_dtype":"<f8","decode_dtype":"<f4"}`, make([]byte, 12), -1},
	}
	for _, tt := range tests {
		dec, err := codec.Lookup(json.RawMessage(tt.config))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := dec.Decode(nil, tt.src, tt.size, 1<<20); !errors.Is(err, codec.ErrCorrupt) {
			t.Errorf("%s on %x: err = %v, want ErrCorrupt", tt.config, tt.src, err)
		}
	}
}

// fuzzConfigs are the filters FuzzFilters runs on every input.
var fuzzConfigs = []string{
	`{"id": "shuffle", "elementsize": 8}`,
	`{"id": "shuffle", "elementsize": 3}`,
	`{"id": "delta", "dtype": "<i4", "astype": "<i4"}`,
	`{"id": "delta", "dtype": "<i4", "astype": "<i2"}`,
	`{"id": "delta", "dtype": ">f8", "astype": "<f2"}`,
	`{"id": "fixedscaleoffset", "scale": 10, "offset": 0, "dtype": "<f8", "astype": "<i2"}`,
	`{"id": "fixedscaleoffset", "scale": 0.5, "offset": 1.5, "dtype": "<f4", "astype": "<f2"}`,
	`{"id": "quantize", "digits": 2, "dtype": "<f8", "astype": "<f4"}`,
	`{"id": "astype", "encode_dtype": "<f2", "decode_dtype": "<u8"}`,
	`{"id": "astype", "encode_dtype": "<f8", "decode_dtype": "|u1"}`,
	`{"id": "bitround", "keepbits": 3}`,
	`{"id": "packbits"}`,
	`{"id": "categorize", "labels": ["a", "bb", "ccc"], "dtype": "<U3", "astype": "|u1"}`,
	`{"id": "crc32"}`,
	`{"id": "adler32"}`,
	`{"id": "fletcher32"}`,
}

// FuzzFilters runs every filter of fuzzConfigs on arbitrary input: errors
// are allowed, panics and oversized output are not. Its seeds are chunks
// numcodecs encoded (testdata/fuzz, written by testdata/gen_fuzz_corpus.py).
func FuzzFilters(f *testing.F) {
	var decs []codec.Codec
	for _, c := range fuzzConfigs {
		dec, err := codec.Lookup(json.RawMessage(c))
		if err != nil {
			f.Fatal(err)
		}
		decs = append(decs, dec)
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		const max = 1 << 16
		for i, dec := range decs {
			out, err := dec.Decode(nil, src, -1, max)
			if err != nil {
				if !errors.Is(err, codec.ErrCorrupt) {
					t.Fatalf("%s: %v does not wrap ErrCorrupt", fuzzConfigs[i], err)
				}
				continue
			}
			if len(out) > max {
				t.Fatalf("%s: decoded %d bytes, max %d", fuzzConfigs[i], len(out), max)
			}
			again, err := dec.Decode(nil, src, len(out), -1)
			if err != nil || !bytes.Equal(again, out) {
				t.Fatalf("%s: exact-size decode disagrees: %v", fuzzConfigs[i], err)
			}
		}
	})
}

// BenchmarkDecode decodes realistic 1 MiB chunks with each filter, and
// reports numcodecs' speed on the same chunk beside ours.
func BenchmarkDecode(b *testing.B) {
	for _, c := range codectest.Generate(b, "bench") {
		if c.Group != "bench-filters" {
			continue
		}
		dec, err := codec.Lookup(c.Config())
		if err != nil {
			b.Fatal(err)
		}
		b.Run(strings.TrimPrefix(c.Name, "bench-"), func(b *testing.B) {
			b.SetBytes(int64(c.Size))
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

// BenchmarkFletcher32 verifies and strips the checksum of a 1 MiB chunk
// (numcodecs 0.11 has no fletcher32 to compare with).
func BenchmarkFletcher32(b *testing.B) {
	data := make([]byte, 1<<20)
	for i := range data {
		data[i] = byte(i * 7)
	}
	sum := filters.Fletcher32(data)
	enc := append(data, byte(sum), byte(sum>>8), byte(sum>>16), byte(sum>>24))
	dec, err := codec.Lookup(json.RawMessage(`{"id": "fletcher32"}`))
	if err != nil {
		b.Fatal(err)
	}
	dst := make([]byte, 0, len(data))
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := dec.Decode(dst, enc, len(data), -1); err != nil {
			b.Fatal(err)
		}
	}
}
