package compressors_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/nczarrfs/nczarrfs/nczarr/codec"
	_ "github.com/nczarrfs/nczarrfs/nczarr/codec/compressors"
	"github.com/nczarrfs/nczarrfs/nczarr/codec/internal/codectest"
)

func TestDecodeNumcodecs(t *testing.T) {
	for _, c := range codectest.Generate(t, "compressors") {
		t.Run(c.Name, func(t *testing.T) {
			dec, err := codec.Lookup(c.Compressor)
			if err != nil {
				t.Fatal(err)
			}
			codectest.CheckDecode(t, dec, c)
			if c.Size > 0 {
				if _, err := dec.Decode(nil, c.Enc, c.Size-1, -1); !errors.Is(err, codec.ErrCorrupt) {
					t.Fatalf("size-1: err = %v, want ErrCorrupt", err)
				}
				if _, err := dec.Decode(nil, c.Enc, -1, c.Size-1); !errors.Is(err, codec.ErrCorrupt) {
					t.Fatalf("max size-1: err = %v, want ErrCorrupt", err)
				}
			}
		})
	}
}

// TestCorrupt truncates and damages real chunks: the result is an error
// wrapping ErrCorrupt or (where the format has no checksum) bytes of the
// right size, never a panic.
func TestCorrupt(t *testing.T) {
	for _, c := range codectest.Generate(t, "compressors") {
		slow := strings.HasPrefix(c.Name, "lzma") || strings.HasPrefix(c.Name, "bz2")
		if !strings.HasSuffix(c.Name, "-small") && (slow || !strings.HasSuffix(c.Name, "-mid")) {
			continue
		}
		t.Run(c.Name, func(t *testing.T) {
			dec, err := codec.Lookup(c.Compressor)
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range []int{0, 1, 3, 4, 5, 13, len(c.Enc) / 2, len(c.Enc) - 1} {
				if n >= len(c.Enc) {
					continue
				}
				_, err := dec.Decode(nil, c.Enc[:n], c.Size, -1)
				if err == nil {
					t.Fatalf("truncated to %d bytes: no error", n)
				}
				if !errors.Is(err, codec.ErrCorrupt) {
					t.Fatalf("truncated to %d bytes: %v does not wrap ErrCorrupt", n, err)
				}
			}
			buf := append([]byte(nil), c.Enc...)
			for i := 0; i < len(buf); i += 1 + len(buf)/100 {
				buf[i] ^= 0x5a
				out, err := dec.Decode(nil, buf, c.Size, -1)
				if err == nil && len(out) != c.Size {
					t.Fatalf("byte %d flipped: %d bytes, no error", i, len(out))
				}
				if err != nil && !errors.Is(err, codec.ErrCorrupt) {
					t.Fatalf("byte %d flipped: %v does not wrap ErrCorrupt", i, err)
				}
				buf[i] ^= 0x5a
			}
		})
	}
}

// TestBomb checks that a small chunk that inflates hugely is refused
// without producing the output.
func TestBomb(t *testing.T) {
	for _, c := range codectest.Generate(t, "compressors") {
		if !strings.HasSuffix(c.Name, "-big") {
			continue
		}
		t.Run(c.Name, func(t *testing.T) {
			dec, err := codec.Lookup(c.Compressor)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := dec.Decode(nil, c.Enc, 16, -1); !errors.Is(err, codec.ErrCorrupt) {
				t.Fatalf("size 16: err = %v, want ErrCorrupt", err)
			}
			out, err := dec.Decode(nil, c.Enc, -1, 16)
			if !errors.Is(err, codec.ErrCorrupt) {
				t.Fatalf("max 16: err = %v, want ErrCorrupt", err)
			}
			if out != nil {
				t.Fatalf("max 16: returned %d bytes with the error", len(out))
			}
		})
	}
}

func TestLZMAConfig(t *testing.T) {
	for _, cfg := range []string{
		`{"id":"lzma","format":3,"filters":null}`,
		`{"id":"lzma","format":3,"filters":[{"id":3,"dist":4},{"id":33}]}`,
		`{"id":"lzma","format":7}`,
	} {
		if _, err := codec.Lookup(json.RawMessage(cfg)); !errors.Is(err, codec.ErrUnknown) {
			t.Errorf("%s: err = %v, want ErrUnknown", cfg, err)
		}
	}
}

// fuzzCodec fuzzes the codec config names. Its seeds are chunks numcodecs
// encoded (testdata/fuzz, written by testdata/gen_fuzz_corpus.py).
func fuzzCodec(f *testing.F, config string) {
	dec, err := codec.Lookup(json.RawMessage(config))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		const max = 1 << 20
		out, err := dec.Decode(nil, src, -1, max)
		if err != nil {
			if !errors.Is(err, codec.ErrCorrupt) {
				t.Fatalf("%v does not wrap ErrCorrupt", err)
			}
			return
		}
		if len(out) > max {
			t.Fatalf("decoded %d bytes, max %d", len(out), max)
		}
		// Decoding again with the exact size must agree.
		again, err := dec.Decode(nil, src, len(out), -1)
		if err != nil || !bytes.Equal(again, out) {
			t.Fatalf("exact-size decode disagrees: %v", err)
		}
	})
}

func FuzzZlib(f *testing.F) { fuzzCodec(f, `{"id": "zlib", "level": 1}`) }
func FuzzGzip(f *testing.F) { fuzzCodec(f, `{"id": "gzip", "level": 1}`) }
func FuzzBZ2(f *testing.F)  { fuzzCodec(f, `{"id": "bz2", "level": 1}`) }
func FuzzZstd(f *testing.F) { fuzzCodec(f, `{"id": "zstd", "level": 1}`) }
func FuzzLZ4(f *testing.F)  { fuzzCodec(f, `{"id": "lz4", "acceleration": 1}`) }
func FuzzLZMA(f *testing.F) {
	fuzzCodec(f, `{"id": "lzma", "format": 1, "check": -1, "preset": null, "filters": null}`)
}
func FuzzBase64(f *testing.F)  { fuzzCodec(f, `{"id": "base64"}`) }
func FuzzHDF5LZ4(f *testing.F) { fuzzCodec(f, `{"id": 32004}`) }
