package nczarr

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/nczarrfs/nczarrfs/cache"
	"github.com/nczarrfs/nczarrfs/nczarr/chunked"
	"github.com/nczarrfs/nczarrfs/zmap"
)

// v3Base is a valid zarr.json; the cases below replace its members.
const v3Base = `{"zarr_format": 3, "node_type": "array", "shape": [10, 6], "data_type": "int16",
 "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [4, 6]}},
 "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
 "fill_value": 0, "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}]}`

// v3Edit returns v3Base with the members of edit (a JSON object) set.
func v3Edit(t testing.TB, edit string) []byte {
	t.Helper()
	doc, err := parseObject([]byte(v3Base))
	if err != nil {
		t.Fatal(err)
	}
	e, err := parseObject([]byte(edit))
	if err != nil {
		t.Fatalf("%s: %v", edit, err)
	}
	for k, v := range e {
		doc[k] = v
	}
	out, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// vlenSharded is an edit of v3Base into a string array in shards whose
// inner codecs are inner, with after following sharding_indexed.
func vlenSharded(inner, after string) string {
	return `{"data_type": "string", "fill_value": "", "codecs": [{"name": "sharding_indexed", "configuration": {"chunk_shape": [2, 3], "codecs": ` +
		inner + `, "index_codecs": [{"name": "bytes"}, {"name": "crc32c"}]}}` + after + `]}`
}

// TestV3Metadata checks that metadata nczarrfs cannot read faithfully is
// refused with an error that names the problem, and that what the spec
// allows is accepted.
func TestV3Metadata(t *testing.T) {
	sharding := func(inner, index, loc string) string {
		return `{"codecs": [{"name": "sharding_indexed", "configuration": {"chunk_shape": ` + inner +
			`, "codecs": [{"name": "bytes"}], "index_codecs": ` + index + `, "index_location": "` + loc + `"}}]}`
	}
	for _, tc := range []struct {
		name, edit, want string // want: a part of the error, "" for none
	}{
		{"base", `{}`, ""},
		{"extension member may be ignored", `{"x": {"must_understand": false}}`, ""},
		{"extension member must be understood", `{"x": {"name": "y"}}`, `member "x" is not understood`},
		{"storage transformer", `{"storage_transformers": [{"name": "chunk-manifest-json"}]}`, `storage_transformers "chunk-manifest-json" are not supported`},
		{"empty storage transformers", `{"storage_transformers": []}`, ""},
		{"rectilinear grid", `{"chunk_grid": {"name": "rectilinear", "configuration": {}}}`, "chunk_grid"},
		{"grid rank", `{"chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [4]}}}`, "differ in rank"},
		{"zero chunk", `{"chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [0, 6]}}}`, "chunk_shape"},
		{"key encoding", `{"chunk_key_encoding": {"name": "v4"}}`, "chunk_key_encoding"},
		{"key separator", `{"chunk_key_encoding": {"name": "default", "configuration": {"separator": "-"}}}`, "separator"},
		{"no key encoding is default", `{"chunk_key_encoding": null}`, ""},
		{"v2 keys", `{"chunk_key_encoding": {"name": "v2"}}`, ""},
		{"no array-to-bytes codec", `{"codecs": [{"name": "gzip", "configuration": {"level": 1}}]}`, "array-to-bytes"},
		{"two array-to-bytes codecs", `{"codecs": [{"name": "bytes"}, {"name": "bytes"}]}`, "two array-to-bytes"},
		{"transpose after bytes", `{"codecs": [{"name": "bytes"}, {"name": "transpose", "configuration": {"order": [1, 0]}}]}`, "transpose after"},
		{"transpose not a permutation", `{"codecs": [{"name": "transpose", "configuration": {"order": [0, 0]}}, {"name": "bytes"}]}`, "not a permutation"},
		{"transpose F", `{"codecs": [{"name": "transpose", "configuration": {"order": "F"}}, {"name": "bytes"}]}`, ""},
		{"endian", `{"codecs": [{"name": "bytes", "configuration": {"endian": "middle"}}]}`, "endian"},
		{"unknown codec", `{"codecs": [{"name": "bytes"}, {"name": "lzw"}]}`, "lzw"},
		{"numcodecs name", `{"codecs": [{"name": "bytes"}, {"name": "numcodecs.zlib", "configuration": {"level": 1}}]}`, ""},
		{"pcodec array-to-bytes", `{"codecs": [{"name": "numcodecs.pcodec", "configuration": {"level": 8}}, {"name": "crc32c"}]}`, ""},
		{"pcodec after transpose", `{"codecs": [{"name": "transpose", "configuration": {"order": [1, 0]}}, {"name": "numcodecs.pcodec"}]}`, ""},
		{"pcodec and bytes", `{"codecs": [{"name": "bytes"}, {"name": "numcodecs.pcodec"}]}`, "two array-to-bytes"},
		{"blosc shuffle name", `{"codecs": [{"name": "bytes"}, {"name": "blosc", "configuration": {"cname": "lz4", "clevel": 1, "shuffle": "twist", "typesize": 2, "blocksize": 0}}]}`, "shuffle"},
		{"short codec form", `{"codecs": ["bytes", "crc32c"]}`, ""},
		{"sharding", sharding(`[2, 3]`, `[{"name": "bytes"}, {"name": "crc32c"}]`, "end"), ""},
		{"sharding index start", sharding(`[2, 3]`, `[{"name": "bytes"}]`, "start"), ""},
		{"sharding index location", sharding(`[2, 3]`, `[{"name": "bytes"}]`, "middle"), "index_location"},
		{"sharding does not divide", sharding(`[3, 3]`, `[{"name": "bytes"}]`, "end"), "does not divide"},
		{"sharding rank", sharding(`[2]`, `[{"name": "bytes"}]`, "end"), "does not match"},
		{"sharding index gzip", sharding(`[2, 3]`, `[{"name": "bytes"}, {"name": "gzip", "configuration": {"level": 1}}]`, "end"), "fixed-size"},
		{"sharding too many chunks", `{"shape": [1152921504606846976, 1], "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [1152921504606846976, 1]}}, "codecs": [{"name": "sharding_indexed", "configuration": {"chunk_shape": [1, 1], "codecs": [{"name": "bytes"}], "index_codecs": [{"name": "bytes"}]}}]}`, "inner chunks"},
		// Variable-length elements inside sharding_indexed.
		{"vlen sharded", vlenSharded(`[{"name": "vlen-utf8"}, {"name": "gzip", "configuration": {"level": 1}}]`, ``), ""},
		{"vlen sharded numcodecs name", vlenSharded(`[{"name": "numcodecs.vlen-utf8"}]`, ``), ""},
		{"vlen sharded wrong codec", vlenSharded(`[{"name": "vlen-bytes"}]`, ``), "does not fit"},
		{"vlen sharded bytes", vlenSharded(`[{"name": "bytes"}]`, ``), "needs vlen-utf8"},
		{"vlen sharded crc32c after", vlenSharded(`[{"name": "vlen-utf8"}]`, `, {"name": "crc32c"}`), "not supported"},
		{"vlen codec on int32", `{"data_type": "int32", "codecs": [{"name": "sharding_indexed", "configuration": {"chunk_shape": [2, 3], "codecs": [{"name": "vlen-utf8"}], "index_codecs": [{"name": "bytes"}]}}]}`, "does not fit"},
		{"int7", `{"data_type": "int7"}`, "int7"},
		{"raw bits", `{"data_type": "r12", "fill_value": [0, 0]}`, "multiple of 8"},
		{"extension data type", `{"data_type": {"name": "datetime64"}}`, "data_type"},
		{"hex fill size", `{"data_type": "float32", "fill_value": "0x7fc0"}`, "hex digits"},
		{"hex fill float64", `{"data_type": "float64", "fill_value": "0x7ff8000000000000"}`, ""},
		{"complex fill scalar", `{"data_type": "complex64", "fill_value": 1}`, "fill_value"},
		{"complex fill pair", `{"data_type": "complex64", "fill_value": ["NaN", "0x3f800000"]}`, ""},
		{"raw fill length", `{"data_type": "r16", "fill_value": [1, 2, 3]}`, "fill_value"},
		{"raw fill byte", `{"data_type": "r16", "fill_value": [1, 256]}`, "fill_value"},
		{"int fill fraction", `{"fill_value": 2.5}`, "fill_value"},
		{"int fill integral float", `{"fill_value": 2.0}`, ""},
		{"int fill range", `{"data_type": "int8", "fill_value": 200}`, "fill_value"},
		{"bool fill", `{"data_type": "bool", "fill_value": true}`, ""},
		{"alias char", `{"data_type": "uint8", "attributes": {"_nczarr_array": {"type_alias": "char"}}}`, ""},
		{"alias char on float", `{"data_type": "float32", "attributes": {"_nczarr_array": {"type_alias": "char"}}}`, "type_alias"},
		{"chunk bytes overflow", `{"data_type": "r8388608", "fill_value": null, "shape": [4], "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [4611686018427387904]}}}`, "more than"},
		{"huge chunks", `{"chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [65536, 65536]}}}`, "more than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw := v3Edit(t, tc.edit)
			doc, err := v3Doc(raw)
			if err != nil {
				t.Fatal(err)
			}
			a := newArrayV3(&Dataset{}, "v", doc, raw)
			switch {
			case tc.want == "" && a.Err != nil:
				t.Errorf("error %v, want none", a.Err)
			case tc.want != "" && a.Err == nil:
				t.Errorf("no error, want one about %q", tc.want)
			case tc.want != "" && !strings.Contains(a.Err.Error(), tc.want):
				t.Errorf("error %q does not say %q", a.Err, tc.want)
			case a.Err != nil && !strings.Contains(a.Err.Error(), "v/zarr.json"):
				t.Errorf("error %q does not name the key v/zarr.json", a.Err)
			}
		})
	}
}

// TestV3ChunkKeys checks the chunk keys of each chunk_key_encoding (v3
// core specification, "chunk key encoding"), and of the inner chunks of a
// sharded array, which name their shard.
func TestV3ChunkKeys(t *testing.T) {
	for _, tc := range []struct {
		edit string
		idx  []int64
		want string
	}{
		{`{}`, []int64{1, 0}, "v/c/1/0"},
		{`{"chunk_key_encoding": {"name": "default", "configuration": {"separator": "."}}}`, []int64{2, 0}, "v/c.2.0"},
		{`{"chunk_key_encoding": {"name": "v2"}}`, []int64{1, 0}, "v/1.0"},
		{`{"chunk_key_encoding": {"name": "v2", "configuration": {"separator": "/"}}}`, []int64{1, 0}, "v/1/0"},
		{`{"shape": [], "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": []}}}`, []int64{}, "v/c"},
		{`{"shape": [], "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": []}}, "chunk_key_encoding": {"name": "v2"}}`, []int64{}, "v/0"},
		{`{"codecs": [{"name": "sharding_indexed", "configuration": {"chunk_shape": [2, 3], "codecs": [{"name": "bytes"}], "index_codecs": [{"name": "bytes"}]}}]}`, []int64{3, 1}, "v/c/1/0@3,1"},
	} {
		raw := v3Edit(t, tc.edit)
		doc, err := v3Doc(raw)
		if err != nil {
			t.Fatal(err)
		}
		a := newArrayV3(&Dataset{}, "v", doc, raw)
		if a.Err != nil {
			t.Fatalf("%s: %v", tc.edit, a.Err)
		}
		if got := a.ChunkKey(tc.idx); got != tc.want {
			t.Errorf("%s: ChunkKey(%v) = %q, want %q", tc.edit, tc.idx, got, tc.want)
		}
	}
}

// FuzzV3Array parses arbitrary zarr.json documents into arrays and reads
// the first bytes of each from an empty store: nothing may panic, and an
// array that parsed has a consistent size.
func FuzzV3Array(f *testing.F) {
	f.Add([]byte(v3Base))
	f.Add(v3Edit(f, `{"codecs": [{"name": "sharding_indexed", "configuration": {"chunk_shape": [2, 3], "codecs": [{"name": "transpose", "configuration": {"order": [1, 0]}}, {"name": "bytes", "configuration": {"endian": "big"}}, {"name": "zstd"}], "index_codecs": [{"name": "bytes"}, {"name": "crc32c"}], "index_location": "start"}}]}`))
	f.Add(v3Edit(f, `{"data_type": "complex128", "fill_value": ["0x7ff8000000000000", "-Infinity"]}`))
	f.Add(v3Edit(f, `{"data_type": "r24", "fill_value": [1, 2, 3], "chunk_key_encoding": {"name": "v2"}}`))
	f.Add(v3Edit(f, vlenSharded(`[{"name": "vlen-utf8"}, {"name": "gzip", "configuration": {"level": 1}}]`, ``)))
	f.Fuzz(func(t *testing.T, data []byte) {
		doc, err := v3Doc(data)
		if err != nil {
			return
		}
		d := &Dataset{store: emptyStore{}, par: 2, src: chunked.NewSource(emptyStore{}, cache.New(0), 2, 0)}
		a := newArrayV3(d, "v", doc, data)
		if a.Err != nil {
			return
		}
		if a.Objects() {
			// Variable-length elements: no data, only JSON (all fill).
			if _, err := a.JSON(context.Background()); err != nil {
				t.Fatalf("JSON of an array with no chunk stored: %v", err)
			}
			return
		}
		if a.ItemSize <= 0 || a.Size() < 0 || a.Size()%int64(a.ItemSize) != 0 {
			t.Fatalf("item size %d, size %d", a.ItemSize, a.Size())
		}
		_ = a.ChunkKey(make([]int64, len(a.Meta.Shape)))
		_, _ = a.ReadAt(context.Background(), make([]byte, min(a.Size(), 64)), 0)
	})
}

// emptyStore holds no objects.
type emptyStore struct{ zmap.Store }

func (emptyStore) Get(_ context.Context, key string) ([]byte, error) {
	return nil, fmt.Errorf("%s: %w", key, zmap.ErrNotFound)
}

func (emptyStore) ReadAt(_ context.Context, key string, _ []byte, _ int64) (int, error) {
	return 0, fmt.Errorf("%s: %w", key, zmap.ErrNotFound)
}

func (emptyStore) Size(_ context.Context, key string) (int64, error) {
	return 0, fmt.Errorf("%s: %w", key, zmap.ErrNotFound)
}

// oneObject is a store holding one object.
type oneObject struct {
	emptyStore
	key  string
	data []byte
}

func (s oneObject) ReadAt(ctx context.Context, key string, p []byte, off int64) (int, error) {
	if key != s.key {
		return s.emptyStore.ReadAt(ctx, key, p, off)
	}
	if off >= int64(len(s.data)) {
		return 0, io.EOF
	}
	n := copy(p, s.data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (s oneObject) Size(ctx context.Context, key string) (int64, error) {
	if key != s.key {
		return s.emptyStore.Size(ctx, key)
	}
	return int64(len(s.data)), nil
}

// FuzzV3Shard reads a nested sharded array whose one shard object is
// arbitrary bytes: a read either fails or returns every byte, and never
// panics.
func FuzzV3Shard(f *testing.F) {
	inner := `{"name": "sharding_indexed", "configuration": {"chunk_shape": [2, 3], "codecs": [{"name": "bytes"}], "index_codecs": [{"name": "bytes"}]}}`
	doc, err := v3Doc(v3Edit(f, `{"chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [8, 6]}},
		"codecs": [{"name": "sharding_indexed", "configuration": {"chunk_shape": [4, 6], "codecs": [`+inner+`], "index_codecs": [{"name": "bytes"}, {"name": "crc32c"}], "index_location": "start"}}]}`))
	if err != nil {
		f.Fatal(err)
	}
	f.Add([]byte{})
	f.Add(make([]byte, 2*16+4))
	f.Add(bytes.Repeat([]byte{0xff}, 100))
	f.Fuzz(func(t *testing.T, shard []byte) {
		store := oneObject{key: "v/c/0/0", data: shard}
		d := &Dataset{store: store, par: 2, src: chunked.NewSource(store, cache.New(1<<20), 2, 0)}
		a := newArrayV3(d, "v", doc, nil)
		if a.Err != nil {
			t.Fatal(a.Err)
		}
		buf := make([]byte, a.Size())
		n, err := a.ReadAt(context.Background(), buf, 0)
		if err == nil && n != len(buf) {
			t.Fatalf("read %d of %d bytes without an error", n, len(buf))
		}
	})
}

// mapStore holds the objects of a map; it lists nothing.
type mapStore struct {
	emptyStore
	objects map[string]string
}

func (s mapStore) Get(ctx context.Context, key string) ([]byte, error) {
	if v, ok := s.objects[key]; ok {
		return []byte(v), nil
	}
	return s.emptyStore.Get(ctx, key)
}

func (s mapStore) Size(ctx context.Context, key string) (int64, error) {
	if v, ok := s.objects[key]; ok {
		return int64(len(v)), nil
	}
	return s.emptyStore.Size(ctx, key)
}

func (s mapStore) Search(context.Context, string) ([]zmap.Entry, error) { return nil, nil }

// TestGroupCycles opens datasets whose groups list themselves or their
// parent as a child (names "", ".", "..", and paths): such names are
// skipped, where walking them would never end.
func TestGroupCycles(t *testing.T) {
	bad := `["", ".", "..", "g/..", "g"]`
	for _, tc := range []struct {
		name    string
		objects map[string]string
		want    string
	}{
		// v3 skips a listed child without zarr.json; the v2 walker keeps
		// a listed group whose .zgroup is missing.
		{"nczarr v3", map[string]string{
			"zarr.json":   `{"zarr_format": 3, "node_type": "group", "attributes": {"_nczarr_superblock": {"format": 3}, "_nczarr_group": {"arrays": [], "subgroups": ` + bad + `}}}`,
			"g/zarr.json": `{"zarr_format": 3, "node_type": "group", "attributes": {"_nczarr_group": {"arrays": [], "subgroups": ` + bad + `}}}`,
		}, "[ g]"},
		{"nczarr v2", map[string]string{
			".zgroup":   `{"zarr_format": 2}`,
			".zattrs":   `{"_nczarr_superblock": {"version": "2.0.0"}, "_nczarr_group": {"dimensions": {}, "arrays": [], "groups": ` + bad + `}}`,
			"g/.zgroup": `{"zarr_format": 2}`,
			"g/.zattrs": `{"_nczarr_group": {"dimensions": {}, "arrays": [], "groups": ` + bad + `}}`,
		}, "[ g g/g]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := Open(context.Background(), mapStore{objects: tc.objects}, Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			if err != nil {
				t.Fatal(err)
			}
			if got := fmt.Sprint(d.Groups()); got != tc.want {
				t.Errorf("groups %q, want %s", got, tc.want)
			}
		})
	}
}

// TestChunkBytesOverflow: chunks whose byte size overflows int64 are
// refused, in v2 as in v3, rather than wrapping to a small size.
func TestChunkBytesOverflow(t *testing.T) {
	zarray := `{"zarr_format": 2, "shape": [4], "chunks": [2305843009213693953], "dtype": "|V1024", "order": "C", "compressor": null, "fill_value": null, "filters": null}`
	a := newArray(&Dataset{}, "v", []byte(zarray), nil, nil)
	if a.Err == nil || !strings.Contains(a.Err.Error(), "more than") {
		t.Errorf("error %v, want chunks that hold more than the limit", a.Err)
	}
}
