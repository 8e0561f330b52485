package describe

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/nczarrfs/nczarrfs/nczarr"
	"github.com/nczarrfs/nczarrfs/zmap/file"
)

// TestV3CodecsAsStored checks that info.json lists a Zarr v3 array's
// codecs as its zarr.json states them, sharding_indexed with its inner
// chain included, and HDF5 ids where the codec has one.
func TestV3CodecsAsStored(t *testing.T) {
	dir := t.TempDir()
	arrays := map[string]string{
		"sharded": `{"zarr_format": 3, "node_type": "array", "shape": [8, 8], "data_type": "float32",
			"chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [4, 4]}},
			"chunk_key_encoding": {"name": "default"}, "fill_value": 0,
			"codecs": [{"name": "sharding_indexed", "configuration": {"chunk_shape": [2, 2],
				"codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "zstd", "configuration": {"level": 1, "checksum": false}}],
				"index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}]}}]}`,
		"bigendian-zstd": `{"zarr_format": 3, "node_type": "array", "shape": [8], "data_type": "int16",
			"chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [4]}},
			"chunk_key_encoding": {"name": "default"}, "fill_value": 0,
			"codecs": [{"name": "bytes", "configuration": {"endian": "big"}}, {"name": "zstd", "configuration": {"level": 3, "checksum": false}}]}`,
	}
	if err := os.WriteFile(filepath.Join(dir, "zarr.json"), []byte(`{"zarr_format": 3, "node_type": "group"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, meta := range arrays {
		if err := os.MkdirAll(filepath.Join(dir, name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name, "zarr.json"), []byte(meta), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	st, err := file.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ds, err := nczarr.Open(ctx, st, nczarr.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for name, meta := range arrays {
		info, err := ReadArrayInfo(ctx, ds, name)
		if err != nil {
			t.Fatal(err)
		}
		if info.Error != "" {
			t.Fatalf("%s: %s", name, info.Error)
		}
		var stored struct {
			Codecs []struct {
				Name          string          `json:"name"`
				Configuration json.RawMessage `json:"configuration"`
			} `json:"codecs"`
		}
		if err := json.Unmarshal([]byte(meta), &stored); err != nil {
			t.Fatal(err)
		}
		if len(info.Codecs) != len(stored.Codecs) {
			t.Fatalf("%s: info.json codecs %+v, want the %d stored", name, info.Codecs, len(stored.Codecs))
		}
		for i, c := range stored.Codecs {
			got := info.Codecs[i]
			if got.ID != c.Name || !sameJSON(t, got.Configuration, c.Configuration) {
				t.Errorf("%s: codec %d is %s %s, want %s %s", name, i, got.ID, got.Configuration, c.Name, c.Configuration)
			}
		}
	}
	if info, _ := ReadArrayInfo(ctx, ds, "bigendian-zstd"); info.Codecs[1].HDF5ID != 32015 {
		t.Errorf("zstd's HDF5 id is %d, want 32015", info.Codecs[1].HDF5ID)
	}
}

func sameJSON(t *testing.T, a, b json.RawMessage) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatalf("%s: %v", a, err)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	xs, _ := json.Marshal(x)
	ys, _ := json.Marshal(y)
	return string(xs) == string(ys)
}
