package zarrmeta

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	_ "github.com/nczarrfs/nczarrfs/nczarr/codec/all"
)

// seeds returns every object of the FuzzOpen seeds (../testdata/open,
// metadata of datasets that netcdf-c, zarr-python and zarrita wrote), by
// file and key. Each file is a list of "-- KEY --" lines, each followed
// by the object's bytes and a newline.
func seeds(tb testing.TB) map[string][]byte {
	tb.Helper()
	files, err := filepath.Glob("../testdata/open/*.txt")
	if err != nil || len(files) == 0 {
		tb.Fatalf("no seeds in ../testdata/open (%v)", err)
	}
	out := map[string][]byte{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			tb.Fatal(err)
		}
		key := ""
		var body []byte
		flush := func() {
			if key != "" {
				out[filepath.Base(f)+":"+key] = bytes.TrimSuffix(body, []byte("\n"))
			}
		}
		for len(data) > 0 {
			line, rest, found := bytes.Cut(data, []byte("\n"))
			if found {
				line = data[:len(line)+1]
			}
			data = rest
			l := strings.TrimSuffix(string(line), "\n")
			if k, ok := strings.CutPrefix(l, "-- "); ok && strings.HasSuffix(k, " --") {
				flush()
				key, body = strings.TrimSuffix(k, " --"), nil
				continue
			}
			body = append(body, line...)
		}
		flush()
	}
	return out
}

func TestParseV2Errors(t *testing.T) {
	valid := `{"zarr_format":2,"shape":[4,5],"chunks":[2,5],"dtype":"<f4","compressor":null,"fill_value":"NaN","order":"C","filters":null}`
	if _, err := ParseV2([]byte(valid), nil); err != nil {
		t.Fatalf("valid .zarray rejected: %v", err)
	}
	tests := []struct{ name, doc, errPart string }{
		{"v3", strings.Replace(valid, `"zarr_format":2`, `"zarr_format":3`, 1), "zarr_format"},
		{"rank", strings.Replace(valid, `"chunks":[2,5]`, `"chunks":[2]`, 1), "rank"},
		{"zero chunk", strings.Replace(valid, `"chunks":[2,5]`, `"chunks":[0,5]`, 1), "bad shape"},
		{"order", strings.Replace(valid, `"order":"C"`, `"order":"X"`, 1), "order"},
		{"sep", strings.Replace(valid, `"filters":null`, `"filters":null,"dimension_separator":"-"`, 1), "dimension_separator"},
		{"no shape", strings.Replace(valid, `"shape":[4,5],`, ``, 1), "shape"},
		{"negative", strings.Replace(valid, `"shape":[4,5]`, `"shape":[-4,5]`, 1), "shape"},
		{"not json", `{"shape":`, "unexpected"},
	}
	for _, tt := range tests {
		m, err := ParseV2([]byte(tt.doc), nil)
		if err == nil || !strings.Contains(err.Error(), tt.errPart) {
			t.Errorf("%s: err = %v, want one mentioning %q", tt.name, err, tt.errPart)
		}
		if m != nil {
			t.Errorf("%s: a model for an unreadable .zarray", tt.name)
		}
	}
	// A codec that cannot be used still leaves a model to describe.
	m, err := ParseV2([]byte(strings.Replace(valid, `"compressor":null`, `"compressor":{"id":"lzw"}`, 1)), nil)
	if err == nil || !strings.Contains(err.Error(), "lzw") || m == nil || m.Pipeline != nil || len(m.Shape) != 2 {
		t.Errorf("unknown compressor: model %+v, err %v", m, err)
	}
}

// checkModel checks what the read path relies on in a model a parser
// accepted.
func checkModel(t *testing.T, m *Array) {
	t.Helper()
	rank := len(m.Shape)
	if len(m.Chunks) != rank || len(m.Grid) != rank || len(m.Inner) != rank {
		t.Fatalf("ranks differ: shape %v chunks %v grid %v inner %v", m.Shape, m.Chunks, m.Grid, m.Inner)
	}
	for d := range rank {
		if m.Chunks[d] <= 0 || m.Grid[d]%m.Chunks[d] != 0 {
			t.Fatalf("chunks %v do not tile the grid's %v", m.Chunks, m.Grid)
		}
	}
	if m.Outer != nil {
		p := slices.Clone(m.Outer)
		slices.Sort(p)
		for k, x := range p {
			if x != k {
				t.Fatalf("outer %v is no permutation", m.Outer)
			}
		}
	}
	if m.DimNames != nil && len(m.DimNames) != rank {
		t.Fatalf("%d dimension names for rank %d", len(m.DimNames), rank)
	}
	if m.Leaf() == nil {
		t.Fatal("no pipeline")
	}
	idx := make([]int64, rank)
	if k := m.Keys.Key("a", idx); !strings.HasPrefix(k, "a/") {
		t.Fatalf("chunk key %q is not under the array", k)
	}
	_, _ = m.EncodeFill(m.Fill, m.DType.Size) // must not panic
}

func FuzzParseV2(f *testing.F) {
	all := seeds(f)
	for k, v := range all {
		if strings.HasSuffix(k, ".zarray") {
			f.Add(v, all[strings.TrimSuffix(k, ".zarray")+".zattrs"])
		}
	}
	f.Add([]byte(`{"zarr_format":2,"shape":[4,5],"chunks":[2,5],"dtype":"<f4","compressor":{"id":"zlib","level":1},"fill_value":NaN,"order":"F","filters":[{"id":"delta","dtype":"<f4"}],"dimension_separator":"/"}`), []byte(`{"_ARRAY_DIMENSIONS":["y","x"]}`))
	f.Add([]byte(`{"zarr_format": 2, "shape": [1], "dtype": "<U1", "chunks": [1], "fill_value": "", "order": "C", "compressor": null, "filters": null, "_NCZARR_ARRAY": {"dimrefs": [], "storage": "scalar"}}`), []byte(nil))
	f.Add([]byte(`{"shape":[],"chunks":[],"dtype":"|S5","fill_value":"AAAAAAA="}`), []byte(nil))
	f.Add([]byte(`{"shape":[3],"chunks":[2],"dtype":"|O","filters":[{"id":"json2"}],"fill_value":null}`), []byte(nil))
	f.Fuzz(func(t *testing.T, zarray, zattrs []byte) {
		var attrs map[string]any
		if DecodeJSON(zattrs, &attrs) != nil {
			attrs = nil
		}
		m, err := ParseV2(zarray, attrs)
		if m == nil {
			if err == nil {
				t.Fatal("no model and no error")
			}
			return
		}
		if m.Format != 2 || m.Order != 'C' && m.Order != 'F' {
			t.Fatalf("format %d, order %q", m.Format, m.Order)
		}
		if err != nil {
			if m.Pipeline != nil {
				t.Fatalf("a pipeline despite %v", err)
			}
			return
		}
		checkModel(t, m)
		if m.DType.Kind == 'O' && m.Pipeline.Elems == nil {
			t.Fatal("an object dtype without an element codec")
		}
		if m.DType.Kind != 'O' && m.DType.Size <= 0 {
			t.Fatalf("dtype %+v has no size", m.DType)
		}
	})
}

func FuzzParseV3(f *testing.F) {
	for k, v := range seeds(f) {
		if strings.HasSuffix(k, "zarr.json") && bytes.Contains(v, []byte(`"array"`)) {
			f.Add(v)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var doc map[string]any
		if DecodeJSON(data, &doc) != nil {
			return
		}
		m, err := ParseV3(doc)
		if err != nil {
			if m != nil {
				t.Fatalf("a model despite %v", err)
			}
			return
		}
		if m.Format != 3 || m.Order != 'C' {
			t.Fatalf("format %d, order %q", m.Format, m.Order)
		}
		checkModel(t, m)
		if (m.DType.Kind == 'O') != (m.Pipeline.Elems != nil) {
			t.Fatalf("dtype %q with element codec %+v", m.DType.Str, m.Pipeline.Elems)
		}
	})
}

// TestV2AndV3Agree parses the same arrays written as v2 and as v3 (as
// zarr-python 2 and 3 write them) and compares the models where the
// formats say the same thing.
func TestV2AndV3Agree(t *testing.T) {
	for _, tc := range []struct {
		name           string
		zarray, zattrs string
		zarrJSON       string
	}{
		{
			"int16 zlib named dims",
			`{"zarr_format": 2, "shape": [7, 5], "chunks": [3, 2], "dtype": "<i2", "order": "C", "fill_value": -1,
			  "compressor": {"id": "zlib", "level": 5}, "filters": null, "dimension_separator": "."}`,
			`{"_ARRAY_DIMENSIONS": ["y", "x"], "units": "m"}`,
			`{"zarr_format": 3, "node_type": "array", "shape": [7, 5], "data_type": "int16",
			  "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [3, 2]}},
			  "chunk_key_encoding": {"name": "v2", "configuration": {"separator": "."}}, "fill_value": -1,
			  "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "numcodecs.zlib", "configuration": {"level": 5}}],
			  "dimension_names": ["y", "x"], "attributes": {"units": "m"}}`,
		},
		{
			"big-endian float64 Fortran order NaN fill",
			`{"zarr_format": 2, "shape": [4, 6], "chunks": [2, 3], "dtype": ">f8", "order": "F", "fill_value": "NaN",
			  "compressor": null, "filters": null, "dimension_separator": "/"}`,
			``,
			`{"zarr_format": 3, "node_type": "array", "shape": [4, 6], "data_type": "float64",
			  "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2, 3]}},
			  "chunk_key_encoding": {"name": "v2", "configuration": {"separator": "/"}}, "fill_value": "NaN",
			  "codecs": [{"name": "transpose", "configuration": {"order": [1, 0]}}, {"name": "bytes", "configuration": {"endian": "big"}}]}`,
		},
		{
			"variable-length strings zstd",
			`{"zarr_format": 2, "shape": [5], "chunks": [2], "dtype": "|O", "order": "C", "fill_value": "",
			  "compressor": {"id": "zstd", "level": 1}, "filters": [{"id": "vlen-utf8"}]}`,
			``,
			`{"zarr_format": 3, "node_type": "array", "shape": [5], "data_type": "string",
			  "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2]}},
			  "chunk_key_encoding": {"name": "v2", "configuration": {"separator": "."}}, "fill_value": "",
			  "codecs": [{"name": "vlen-utf8"}, {"name": "zstd", "configuration": {"level": 1, "checksum": false}}]}`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var attrs, doc map[string]any
			if tc.zattrs != "" {
				if err := DecodeJSON([]byte(tc.zattrs), &attrs); err != nil {
					t.Fatal(err)
				}
			}
			if err := DecodeJSON([]byte(tc.zarrJSON), &doc); err != nil {
				t.Fatal(err)
			}
			v2, err := ParseV2([]byte(tc.zarray), attrs)
			if err != nil {
				t.Fatalf("v2: %v", err)
			}
			v3, err := ParseV3(doc)
			if err != nil {
				t.Fatalf("v3: %v", err)
			}
			same := func(what string, a, b any) {
				t.Helper()
				if !reflect.DeepEqual(a, b) {
					t.Errorf("%s: v2 %v, v3 %v", what, a, b)
				}
			}
			same("shape", v2.Shape, v3.Shape)
			same("chunks", v2.Chunks, v3.Chunks)
			same("grid", v2.Grid, v3.Grid)
			same("keys", v2.Keys, v3.Keys)
			same("chunk key", v2.Keys.Key("a", []int64{1, 0}[:len(v2.Shape)]), v3.Keys.Key("a", []int64{1, 0}[:len(v3.Shape)]))
			same("dimension names", v2.DimNames, v3.DimNames)
			delete(attrs, "_ARRAY_DIMENSIONS")
			if len(attrs) == 0 {
				attrs = nil
			}
			same("attributes", attrs, v3.Attrs)
			same("dtype kind", string(v2.DType.Kind), string(v3.DType.Kind))
			p2, p3 := v2.Pipeline, v3.Pipeline
			if v2.DType.Kind == 'O' {
				same("element codec", p2.Elems.Codec, p3.Elems.Codec)
				same("element codec steps", len(p2.Elems.Steps), len(p3.Elems.Steps))
				same("fill", v2.Fill, v3.Fill)
				return
			}
			same("dtype", v2.DType, v3.DType)
			same("transposes", p2.Perms, p3.Perms)
			same("big-endian", p2.BigEndian, p3.BigEndian)
			same("codecs", p2.Chain.String(), p3.Chain.String())
			f2, err2 := v2.EncodeFill(v2.Fill, v2.DType.Size)
			f3, err3 := v3.EncodeFill(v3.Fill, v3.DType.Size)
			if err2 != nil || err3 != nil {
				t.Fatalf("fill: %v, %v", err2, err3)
			}
			same("fill", f2, f3)
		})
	}
}
