package kerchunk

import (
	"bytes"
	"compress/gzip"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
)

func TestParseJSON(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    Set
		errPart string
	}{
		{
			name: "v0",
			in:   `{".zgroup": "{\"zarr_format\": 2}", "x/0": ["s3://b/f.nc", 100, 20], "x/1": ["s3://b/g.nc"], "x/.zattrs": {"a": [1, 2]}, "bin": "base64:AAEC"}`,
			want: Set{
				".zgroup":   {Data: []byte(`{"zarr_format": 2}`), Len: 18},
				"x/0":       {URL: "s3://b/f.nc", Off: 100, Len: 20},
				"x/1":       {URL: "s3://b/g.nc", Len: -1},
				"x/.zattrs": {Data: []byte(`{"a":[1,2]}`), Len: 11},
				"bin":       {Data: []byte{0, 1, 2}, Len: 3},
			},
		},
		{
			// The example of kerchunk's spec.rst, which says what it
			// expands to.
			name: "v1 spec example",
			in: `{"version": 1, "templates": {"u": "server.domain/path", "f": "{{c}}"},
			  "gen": [{"key": "gen_key{{i}}", "url": "http://{{u}}_{{i}}", "offset": "{{(i + 1) * 1000}}", "length": "1000", "dimensions": {"i": {"stop": 5}}}],
			  "refs": {"key0": "data", "key1": ["http://target_url", 10000, 100], "key2": ["http://{{u}}", 10000, 100], "key3": ["http://{{f(c='text')}}", 10000, 100]}}`,
			want: Set{
				"key0":     {Data: []byte("data"), Len: 4},
				"key1":     {URL: "http://target_url", Off: 10000, Len: 100},
				"key2":     {URL: "http://server.domain/path", Off: 10000, Len: 100},
				"key3":     {URL: "http://text", Off: 10000, Len: 100},
				"gen_key0": {URL: "http://server.domain/path_0", Off: 1000, Len: 1000},
				"gen_key1": {URL: "http://server.domain/path_1", Off: 2000, Len: 1000},
				"gen_key2": {URL: "http://server.domain/path_2", Off: 3000, Len: 1000},
				"gen_key3": {URL: "http://server.domain/path_3", Off: 4000, Len: 1000},
				"gen_key4": {URL: "http://server.domain/path_4", Off: 5000, Len: 1000},
			},
		},
		{
			name: "gen product, lists, whole objects",
			in:   `{"version": 1, "gen": [{"key": "v/{{j}}.{{i}}", "url": "s3://b/{{name}}{{i // 2}}", "dimensions": {"j": [0, 1], "i": {"start": 1, "stop": 5, "step": 2}, "name": ["f"]}}]}`,
			want: Set{
				"v/0.1": {URL: "s3://b/f0", Len: -1},
				"v/0.3": {URL: "s3://b/f1", Len: -1},
				"v/1.1": {URL: "s3://b/f0", Len: -1},
				"v/1.3": {URL: "s3://b/f1", Len: -1},
			},
		},
		{name: "not JSON", in: "CDF\x01", errPart: "not a JSON reference file"},
		{name: "not an object", in: "[1]", errPart: "not a JSON reference file"},
		{name: "empty", in: "{}", errPart: "no references"},
		{name: "v1 empty", in: `{"version": 1, "refs": {}}`, errPart: "no references"},
		{name: "version 2", in: `{"version": 2, "refs": {"a": "b"}}`, errPart: "version 2"},
		{name: "undefined template", in: `{"version": 1, "refs": {"a": ["s3://{{nope}}/x", 0, 1]}}`, errPart: `"nope" is not defined`},
		{name: "unclosed template", in: `{"version": 1, "refs": {"a": ["s3://{{u/x", 0, 1]}}`, errPart: "not closed"},
		{name: "gen without stop", in: `{"version": 1, "gen": [{"key": "k{{i}}", "url": "s3://b/x", "dimensions": {"i": {"start": 1}}}]}`, errPart: `no "stop"`},
		{name: "gen offset alone", in: `{"version": 1, "gen": [{"key": "k{{i}}", "url": "s3://b/x", "offset": "1", "dimensions": {"i": {"stop": 1}}}]}`, errPart: "go together"},
		{name: "gen bad expression", in: `{"version": 1, "gen": [{"key": "k{{i}}", "url": "s3://b/x", "offset": "{{i +}}", "length": "1", "dimensions": {"i": {"stop": 1}}}]}`, errPart: "gen rule 0: offset"},
		{name: "bad list", in: `{"a": ["s3://b/x", 1]}`, errPart: "not [url]"},
		{name: "negative range", in: `{"a": ["s3://b/x", -1, 5]}`, errPart: "not a range"},
		{name: "bad key", in: `{"../a": "x"}`, errPart: "is not a key"},
		{name: "bad base64", in: `{"a": "base64:!!"}`, errPart: "base64"},
		{name: "null", in: `{"a": null}`, errPart: "neither"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseJSON([]byte(tt.in))
			if tt.errPart != "" {
				if err == nil || !strings.Contains(err.Error(), tt.errPart) {
					t.Fatalf("error %v, want one containing %q", err, tt.errPart)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got\n\t%+v\nwant\n\t%+v", got, tt.want)
			}
		})
	}
	if _, err := ParseJSON([]byte("{}")); !errors.Is(err, ErrNoRefs) {
		t.Errorf("{}: %v does not wrap ErrNoRefs", err)
	}
}

func TestParseCompressed(t *testing.T) {
	doc := []byte(`{"a": "b", "x/0": ["s3://b/f", 1, 2]}`)
	var gz bytes.Buffer
	w := gzip.NewWriter(&gz)
	w.Write(doc)
	w.Close()
	enc, _ := zstd.NewWriter(nil)
	zs := enc.EncodeAll(doc, nil)
	for name, data := range map[string][]byte{"plain": doc, "gzip": gz.Bytes(), "zstd": zs} {
		if !LooksLikeJSON(data) {
			t.Errorf("%s: LooksLikeJSON false", name)
		}
		set, err := ParseJSON(data)
		if err != nil || len(set) != 2 || set["x/0"].Off != 1 {
			t.Errorf("%s: %v, %v", name, set, err)
		}
	}
	if LooksLikeJSON([]byte("PK\x03\x04")) || LooksLikeJSON([]byte("\x89HDF")) {
		t.Error("LooksLikeJSON true for a zip or HDF5 file")
	}
	if _, err := ParseJSON(gz.Bytes()[:10]); err == nil {
		t.Error("a cut gzip file parsed")
	}
}

func TestRenderArithmetic(t *testing.T) {
	vars := map[string]any{"i": int64(7), "s": "ab"}
	for in, want := range map[string]string{
		"{{i}}":              "7",
		"{{ i * 2 + 1 }}":    "15",
		"{{(i + 1) * 1000}}": "8000",
		"{{i // 2}}":         "3",
		"{{-i // 2}}":        "-4",
		"{{-i % 3}}":         "2",
		"{{i - 10}}":         "-3",
		"x{{s + 'c'}}y":      "xabcy",
		"{{14 / 7}}":         "2",
	} {
		got, err := render(in, vars, nil, 0)
		if err != nil || got != want {
			t.Errorf("render(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"{{1/0}}", "{{i / 2}}", "{{s * 2}}", "{{(i}}", "{{i | int}}", "{{99999999999999999999}}", "{{4611686018427387904 * 4}}"} {
		if got, err := render(in, vars, nil, 0); err == nil {
			t.Errorf("render(%q) = %q, want an error", in, got)
		}
	}
	// Templates that name themselves end.
	if _, err := render("{{a}}", nil, map[string]string{"a": "{{a}}"}, 0); err == nil {
		t.Error("a template naming itself rendered")
	}
}

// FuzzParseJSON checks that ParseJSON never panics, and that what it
// accepts is keys with valid references, within bounds.
func FuzzParseJSON(f *testing.F) {
	for _, s := range []string{
		`{".zgroup": "{\"zarr_format\": 2}", "x/0": ["s3://b/f.nc", 100, 20], "x/1": ["s3://b/g.nc"], "a": {"b": 1}, "bin": "base64:AAEC"}`,
		`{"version": 1, "templates": {"u": "server/path", "f": "{{c}}"}, "gen": [{"key": "k{{i}}", "url": "http://{{u}}_{{i}}", "offset": "{{(i + 1) * 1000}}", "length": "1000", "dimensions": {"i": {"stop": 5}, "j": [1, "a"]}}], "refs": {"key3": ["http://{{f(c='text')}}", 10000, 100]}}`,
		"{}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		set, err := parseJSON(data, 1000)
		if err != nil {
			return
		}
		if len(set) == 0 || len(set) > 1000+len(data) {
			t.Fatalf("%d references", len(set))
		}
		for k, r := range set {
			if k == "" || r.URL == "" && r.Len != int64(len(r.Data)) || r.URL != "" && (r.Off < 0 || r.Len < -1) {
				t.Fatalf("key %q: bad reference %+v", k, r)
			}
		}
	})
}
