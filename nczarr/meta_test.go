package nczarr

import (
	"strings"
	"testing"

	"github.com/nczarrfs/nczarrfs/nczarr/zarrmeta"
)

func TestParseZarrayErrors(t *testing.T) {
	valid := `{"zarr_format":2,"shape":[4,5],"chunks":[2,5],"dtype":"<f4","compressor":null,"fill_value":"NaN","order":"C","filters":null}`
	if _, _, err := zarrmeta.ParseZarray([]byte(valid)); err != nil {
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
		_, _, err := zarrmeta.ParseZarray([]byte(tt.doc))
		if err == nil || !strings.Contains(err.Error(), tt.errPart) {
			t.Errorf("%s: err = %v, want one mentioning %q", tt.name, err, tt.errPart)
		}
	}
}

func TestGroupInfoGenerations(t *testing.T) {
	docs := []string{
		`{"dims": {"x": 3, "t": 2}, "vars": ["v", "c"], "groups": ["g"]}`,
		`{"dimensions": {"x": 3, "t": {"size": 2, "unlimited": 1}}, "arrays": ["v", "c"], "groups": ["g"]}`,
	}
	for _, doc := range docs {
		o, err := parseObject([]byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		g, ok := parseGroupInfo(o)
		if !ok || strings.Join(g.Arrays, ",") != "v,c" || strings.Join(g.Groups, ",") != "g" || g.Dims["x"].Size != 3 || g.Dims["t"].Size != 2 {
			t.Errorf("%s: got %+v %v", doc, g, ok)
		}
	}
}

func FuzzParseZarray(f *testing.F) {
	f.Add([]byte(`{"zarr_format":2,"shape":[4,5],"chunks":[2,5],"dtype":"<f4","compressor":{"id":"zlib","level":1},"fill_value":NaN,"order":"F","filters":[{"id":"delta","dtype":"<f4"}],"dimension_separator":"/"}`))
	f.Add([]byte(`{"zarr_format": 2, "shape": [1], "dtype": "<U1", "chunks": [1], "fill_value": "", "order": "C", "compressor": null, "filters": null, "_NCZARR_ARRAY": {"dimrefs": [], "storage": "scalar"}}`))
	f.Add([]byte(`{"shape":[],"chunks":[],"dtype":"|S5","fill_value":"AAAAAAA="}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, o, err := zarrmeta.ParseZarray(data)
		if err != nil {
			return
		}
		if len(m.Shape) != len(m.Chunks) || m.DType.Size <= 0 {
			t.Fatalf("accepted inconsistent metadata %+v", m)
		}
		// The rest of the array setup must not panic either.
		d := &Dataset{Generation: NCZarr48}
		newArray(d, "v", data, o, nil)
	})
}
