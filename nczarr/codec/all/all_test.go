package all_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/nczarrfs/nczarrfs/internal/testenv"
	"github.com/nczarrfs/nczarrfs/nczarr/codec"
	_ "github.com/nczarrfs/nczarrfs/nczarr/codec/all"
	"github.com/nczarrfs/nczarrfs/nczarr/codec/internal/codectest"
)

func TestChains(t *testing.T) {
	for _, c := range codectest.Generate(t, "chains") {
		t.Run(c.Name, func(t *testing.T) {
			chain, err := codec.NewChain(c.Filters, c.Compressor)
			if err != nil {
				t.Fatal(err)
			}
			got, err := chain.Decode(c.Enc, c.Size)
			if err != nil {
				t.Fatalf("%s: %v", chain, err)
			}
			if !bytes.Equal(got, c.Raw) {
				t.Fatalf("%s: decoded bytes differ from numcodecs", chain)
			}
			if len(c.Enc) > 0 && len(got) > 0 && &got[0] == &c.Enc[0] {
				t.Fatal("result aliases the stored chunk")
			}
			if _, err := chain.Decode(c.Enc, c.Size+8); !errors.Is(err, codec.ErrCorrupt) {
				t.Fatalf("size+8: err = %v, want ErrCorrupt", err)
			}
			if len(c.Enc) > 1 {
				if _, err := chain.Decode(c.Enc[:len(c.Enc)/2], c.Size); !errors.Is(err, codec.ErrCorrupt) {
					t.Fatalf("truncated: err = %v, want ErrCorrupt", err)
				}
			}
		})
	}
}

// TestChainConcurrent decodes every chain from several goroutines at once
// (run with -race), since one Chain serves every reader of an array.
func TestChainConcurrent(t *testing.T) {
	cases := codectest.Generate(t, "chains")
	done := make(chan error)
	for g := 0; g < 4; g++ {
		go func() {
			for _, c := range cases {
				chain, err := codec.NewChain(c.Filters, c.Compressor)
				if err != nil {
					done <- err
					return
				}
				for i := 0; i < 3; i++ {
					got, err := chain.Decode(c.Enc, c.Size)
					if err != nil || !bytes.Equal(got, c.Raw) {
						done <- fmt.Errorf("%s: %v", c.Name, err)
						return
					}
				}
			}
			done <- nil
		}()
	}
	for g := 0; g < 4; g++ {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}

// TestAllCodecs checks that every numcodecs codec in the reference cases
// is registered, through the blank import of package all.
func TestAllCodecs(t *testing.T) {
	ids := map[string]bool{}
	for _, id := range codec.IDs() {
		ids[id] = true
	}
	for _, want := range []string{"blosc", "zlib", "gzip", "bz2", "lzma", "zstd", "lz4", "base64",
		"shuffle", "delta", "fixedscaleoffset", "quantize", "bitround", "astype", "packbits",
		"categorize", "crc32", "adler32", "fletcher32"} {
		if !ids[want] {
			t.Errorf("codec %q is not registered", want)
		}
	}
}

// TestHDF5IDs decodes reference chunks through configurations that name
// the filter by its HDF5 number, as NCZarr metadata may.
func TestHDF5IDs(t *testing.T) {
	var all []codectest.Case
	all = append(all, codectest.Generate(t, "compressors")...)
	all = append(all, codectest.Generate(t, "filters")...)
	all = append(all, codectest.Generate(t, "fletcher32")...)
	all = append(all, codectest.Generate(t, "blosc")...)
	byName := map[string]codectest.Case{}
	for _, c := range all {
		byName[c.Name] = c
	}
	tests := []struct {
		caseName string
		config   string
		opts     []codec.Option
		describe string
	}{
		{"zlib9-mid", `{"id": 1, "parameters": [9]}`, nil, "zlib (HDF5 1)"},
		{"zlib1-mid", `{"id": 1}`, nil, "zlib (HDF5 1)"},
		{"shuffle-8", `{"id": 2, "parameters": [8]}`, nil, "shuffle (HDF5 2)"},
		{"shuffle-4", `{"id": 2}`, []codec.Option{codec.ItemSize(4)}, "shuffle (HDF5 2)"},
		{"shuffle-2", `{"id": 2, "elementsize": 2}`, nil, "shuffle (HDF5 2)"},
		{"fletcher32-1000-i4", `{"id": 3}`, nil, "fletcher32 (HDF5 3)"},
		{"bz29-mid", `{"id": 307, "parameters": [9]}`, nil, "bz2 (HDF5 307)"},
		{"blosc-lz4-s1-t4-multi", `{"id": 32001, "parameters": [2, 2, 4, 0, 5, 1, 1]}`, nil, "blosc (HDF5 32001)"},
		{"zstd9-mid", `{"id": 32015, "parameters": [9]}`, nil, "zstd (HDF5 32015)"},
		{"zstd1-mid", `{"id": "zstd", "level": 1}`, nil, "zstd (HDF5 32015)"},
	}
	for _, tt := range tests {
		t.Run(tt.config, func(t *testing.T) {
			c, ok := byName[tt.caseName]
			if !ok {
				t.Fatalf("no case %s", tt.caseName)
			}
			chain, err := codec.NewChain(nil, json.RawMessage(tt.config), tt.opts...)
			if err != nil {
				t.Fatal(err)
			}
			if got := chain.Describe(); got != tt.describe {
				t.Errorf("Describe() = %q, want %q", got, tt.describe)
			}
			got, err := chain.Decode(c.Enc, c.Size)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, c.Raw) {
				t.Fatal("decoded bytes differ from the reference")
			}
		})
	}
}

// TestHDF5Chunks decodes chunks written by HDF5 itself through the HDF5
// filter ids and parameters of their pipelines.
func TestHDF5Chunks(t *testing.T) {
	testenv.Require(t, "HDF5's LZ4 filter plugin", testenv.HDF5Filter(32004))
	for _, c := range codectest.Generate(t, "hdf5") {
		t.Run(c.Name, func(t *testing.T) {
			chain, err := codec.NewChain(c.Filters, nil)
			if err != nil {
				t.Fatal(err)
			}
			got, err := chain.Decode(c.Enc, c.Size)
			if err != nil {
				t.Fatalf("%s: %v", chain.Describe(), err)
			}
			if !bytes.Equal(got, c.Raw) {
				t.Fatalf("%s: decoded bytes differ from HDF5's", chain.Describe())
			}
			if _, err := chain.Decode(c.Enc[:len(c.Enc)-1], c.Size); !errors.Is(err, codec.ErrCorrupt) {
				t.Fatalf("truncated: err = %v, want ErrCorrupt", err)
			}
		})
	}
}

func TestUnsupported(t *testing.T) {
	tests := []struct {
		filters    []string
		compressor string
		id         string
	}{
		{[]string{`{"id": "vlen-utf8"}`}, `null`, `"vlen-utf8"`},
		{[]string{`{"id": "pickle", "protocol": 5}`}, `{"id": "zstd", "level": 1}`, `"pickle"`},
		{nil, `{"id": "no-such-codec"}`, `"no-such-codec"`},
		{nil, `{"id": 32008}`, `"32008"`},
		{nil, `{"id": 99999}`, `"99999"`},
		{nil, `{"id": 4, "parameters": [4, 32]}`, `"4"`},
		{[]string{`{"id": 2}`}, `{"id": 1}`, `"2"`}, // HDF5 shuffle without an element size
		{nil, `{"id": "zfpy", "mode": 4}`, `"zfpy"`},
		{[]string{`{"id": "jenkins_lookup3", "initval": 0}`}, `null`, `"jenkins_lookup3"`},
		{[]string{`{"id": "vlen-array", "dtype": "<i4"}`}, `null`, `"vlen-array"`},
	}
	for _, tt := range tests {
		var filters []json.RawMessage
		for _, f := range tt.filters {
			filters = append(filters, json.RawMessage(f))
		}
		_, err := codec.NewChain(filters, json.RawMessage(tt.compressor))
		if !errors.Is(err, codec.ErrUnknown) {
			t.Errorf("%v %s: err = %v, want ErrUnknown", tt.filters, tt.compressor, err)
			continue
		}
		if !strings.Contains(err.Error(), tt.id) {
			t.Errorf("error %q does not name %s", err, tt.id)
		}
	}
}

func TestEmptyChain(t *testing.T) {
	for _, f := range [][]json.RawMessage{nil, {}, {json.RawMessage("null")}} {
		chain, err := codec.NewChain(f, json.RawMessage("null"))
		if err != nil {
			t.Fatal(err)
		}
		src := []byte{1, 2, 3}
		got, err := chain.Decode(src, 3)
		if err != nil || !bytes.Equal(got, src) || &got[0] == &src[0] {
			t.Fatalf("Decode = %v, %v", got, err)
		}
		if _, err := chain.Decode(src, 4); !errors.Is(err, codec.ErrCorrupt) {
			t.Fatalf("size 4: err = %v, want ErrCorrupt", err)
		}
		if chain.String() != "" || chain.Len() != 0 {
			t.Fatalf("String %q, Len %d", chain, chain.Len())
		}
	}
}

// fuzzChains are the chains FuzzChain runs on every input.
var fuzzChains = []struct {
	filters    []string
	compressor string
}{
	{[]string{`{"id": "delta", "dtype": "<i4"}`, `{"id": "shuffle", "elementsize": 4}`}, `{"id": "zstd", "level": 3}`},
	{[]string{`{"id": "fixedscaleoffset", "scale": 100, "offset": 0, "dtype": "<f8", "astype": "<i4"}`}, `{"id": "blosc"}`},
	{[]string{`{"id": "crc32"}`}, `{"id": "zlib"}`},
	{[]string{`{"id": "packbits"}`}, `{"id": "bz2"}`},
	{[]string{`{"id": "astype", "encode_dtype": "<f4", "decode_dtype": "<f8"}`}, `{"id": "lz4"}`},
	{[]string{`{"id": 2, "parameters": [4]}`, `{"id": 1}`, `{"id": 3}`}, `null`},
}

// FuzzChain feeds arbitrary bytes to every chain of fuzzChains, asking for
// 2400 bytes (the size of the seeds' arrays). Its seeds are chunks numcodecs
// encoded (testdata/fuzz, written by testdata/gen_fuzz_corpus.py).
func FuzzChain(f *testing.F) {
	var chains []*codec.Chain
	for _, fc := range fuzzChains {
		var filters []json.RawMessage
		for _, x := range fc.filters {
			filters = append(filters, json.RawMessage(x))
		}
		chain, err := codec.NewChain(filters, json.RawMessage(fc.compressor))
		if err != nil {
			f.Fatal(err)
		}
		chains = append(chains, chain)
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		for _, chain := range chains {
			for _, size := range []int{2400, 300, len(src)} {
				out, err := chain.Decode(src, size)
				if err == nil && len(out) != size {
					t.Fatalf("%s: %d bytes, want %d", chain, len(out), size)
				}
				if err != nil && !errors.Is(err, codec.ErrCorrupt) && !errors.Is(err, codec.ErrUnknown) {
					t.Fatalf("%s: %v wraps neither ErrCorrupt nor ErrUnknown", chain, err)
				}
			}
		}
	})
}
