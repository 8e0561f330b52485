package codec

import (
	"encoding/json"
	"errors"
	"testing"
)

func TestDescribe(t *testing.T) {
	tests := []struct {
		id   string
		name string
		hdf5 int
	}{
		{"1", "zlib", 1},
		{"2", "shuffle", 2},
		{"3", "fletcher32", 3},
		{"4", "szip", 4},
		{"307", "bz2", 307},
		{"32001", "blosc", 32001},
		{"32004", "lz4", 32004},
		{"32015", "zstd", 32015},
		{"32008", "bitshuffle", 32008},
		{"55555", "55555", 55555},
		{"zlib", "zlib", 1},
		{"bz2", "bz2", 307},
		{"blosc", "blosc", 32001},
		{"delta", "delta", 0},
		{"gzip", "gzip", 0},
	}
	for _, tt := range tests {
		name, hdf5 := Describe(tt.id)
		if name != tt.name || hdf5 != tt.hdf5 {
			t.Errorf("Describe(%q) = %q, %d; want %q, %d", tt.id, name, hdf5, tt.name, tt.hdf5)
		}
	}
}

func TestHDF5Table(t *testing.T) {
	seen := map[int]bool{}
	for _, f := range hdf5Filters {
		if seen[f.ID] {
			t.Errorf("duplicate HDF5 id %d", f.ID)
		}
		seen[f.ID] = true
		if f.Codec != "" && HDF5ID(f.Codec) != f.ID {
			t.Errorf("HDF5ID(%q) = %d, want %d", f.Codec, HDF5ID(f.Codec), f.ID)
		}
	}
}

func TestFromHDF5(t *testing.T) {
	tests := []struct {
		config string
		opts   options
		want   map[string]any
	}{
		{`{"id": 1, "parameters": [6]}`, options{}, map[string]any{"id": "zlib", "level": 6.0}},
		{`{"id": 1, "level": 3, "parameters": [6]}`, options{}, map[string]any{"id": "zlib", "level": 3.0}},
		{`{"id": 2}`, options{itemSize: 8}, map[string]any{"id": "shuffle", "elementsize": 8.0}},
		{`{"id": 2, "parameters": [2]}`, options{itemSize: 8}, map[string]any{"id": "shuffle", "elementsize": 2.0}},
		{`{"id": 307, "parameters": [9]}`, options{}, map[string]any{"id": "bz2", "level": 9.0}},
		{`{"id": 32015, "parameters": [3]}`, options{}, map[string]any{"id": "zstd", "level": 3.0}},
		{`{"id": 32001}`, options{}, map[string]any{"id": "blosc"}},
	}
	for _, tt := range tests {
		id, err := ID(json.RawMessage(tt.config))
		if err != nil {
			t.Fatal(err)
		}
		out, err := fromHDF5(id, json.RawMessage(tt.config), tt.opts)
		if err != nil {
			t.Fatalf("%s: %v", tt.config, err)
		}
		var got map[string]any
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatal(err)
		}
		for k, v := range tt.want {
			if got[k] != v {
				t.Errorf("%s: %s = %v, want %v (config %s)", tt.config, k, got[k], v, out)
			}
		}
	}
	for _, bad := range []string{`{"id": 1, "parameters": "x"}`, `{"id": 1, "parameters": [-1]}`} {
		if _, err := fromHDF5("1", json.RawMessage(bad), options{}); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
	if _, err := fromHDF5("2", json.RawMessage(`{"id": 2}`), options{}); !errors.Is(err, ErrUnknown) {
		t.Errorf("shuffle without element size: err = %v, want ErrUnknown", err)
	}
}

func TestID(t *testing.T) {
	for config, want := range map[string]string{
		`{"id": "zlib", "level": 1}`: "zlib",
		`{"id": 32001}`:              "32001",
		`{"level": 1, "id": "x"}`:    "x",
	} {
		got, err := ID(json.RawMessage(config))
		if err != nil || got != want {
			t.Errorf("ID(%s) = %q, %v; want %q", config, got, err, want)
		}
	}
	for _, bad := range []string{`{}`, `{"id": ""}`, `{"id": null}`, `[1]`, `nope`, `{"id": true}`} {
		if _, err := ID(json.RawMessage(bad)); err == nil {
			t.Errorf("ID(%s): no error", bad)
		}
	}
}

// double is a test codec whose encoding repeats every byte twice.
type double struct{}

func (double) EncodedSize(n int) (int, bool) { return 2 * n, true }

func (double) Decode(dst, src []byte, size, max int) ([]byte, error) {
	if len(src)%2 != 0 || (size >= 0 && len(src)/2 != size) || len(src)/2 > max {
		return nil, ErrCorrupt
	}
	for i := 0; i < len(src); i += 2 {
		dst = append(dst, src[i])
	}
	return dst, nil
}

// sizeSpy records the size it is asked for and passes data through.
type sizeSpy struct{ got *[]int }

func (s sizeSpy) Decode(dst, src []byte, size, max int) ([]byte, error) {
	*s.got = append(*s.got, size)
	return append(dst, src...), nil
}

func TestChainSizes(t *testing.T) {
	var sizes []int
	Register("test-double", func(json.RawMessage) (Codec, error) { return double{}, nil })
	Register("test-spy", func(json.RawMessage) (Codec, error) { return sizeSpy{&sizes}, nil })
	defer func() {
		mu.Lock()
		delete(registry, "test-double")
		delete(registry, "test-spy")
		mu.Unlock()
	}()
	chain, err := NewChain([]json.RawMessage{json.RawMessage(`{"id":"test-double"}`), json.RawMessage(`{"id":"test-double"}`)},
		json.RawMessage(`{"id":"test-spy"}`))
	if err != nil {
		t.Fatal(err)
	}
	got, err := chain.Decode([]byte("aaaabbbb"), 2)
	if err != nil || string(got) != "ab" {
		t.Fatalf("Decode = %q, %v", got, err)
	}
	if len(sizes) != 1 || sizes[0] != 8 {
		t.Fatalf("compressor was asked for %v, want [8]", sizes)
	}
	if _, err := chain.Decode([]byte("aaaabbbbcccc"), 2); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("wrong size: err = %v", err)
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Error("duplicate Register did not panic")
			}
		}()
		Register("test-spy", nil)
	}()
}
