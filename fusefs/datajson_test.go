package fusefs

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"syscall"
	"testing"

	_ "github.com/nczarrfs/nczarrfs/nczarr/codec/all" // blosc and zlib, which the fixtures use
	"github.com/nczarrfs/nczarrfs/zmap/file"
)

// TestDataJSON mounts the object arrays that zarr-python and xarray write
// (../nczarr/chunked/testdata/gen_vlen.py) and checks that each directory holds
// data.json instead of data, with the elements zarr-python reads, and that
// a corrupt chunk makes data.json fail with EIO.
func TestDataJSON(t *testing.T) {
	dir := t.TempDir()
	if out, err := exec.Command("/usr/bin/python3", "../nczarr/chunked/testdata/gen_vlen.py", dir).CombinedOutput(); err != nil {
		t.Fatalf("gen_vlen.py (needs python3-zarr, python3-xarray, python3-msgpack): %v\n%s", err, out)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "expected.json"))
	if err != nil {
		t.Fatal(err)
	}
	var expected map[string]any
	if err := json.Unmarshal(raw, &expected); err != nil {
		t.Fatal(err)
	}
	store, err := file.Open(filepath.Join(dir, "ds"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	mnt := mountStore(t, store)

	for p, want := range expected {
		entries, err := os.ReadDir(filepath.Join(mnt, p))
		if err != nil {
			t.Errorf("%s: %v", p, err)
			continue
		}
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		if !slices.Contains(names, DataJSONName) || slices.Contains(names, DataName) {
			t.Errorf("%s lists %v: want %s and no %s", p, names, DataJSONName, DataName)
		}
		if _, err := os.Stat(filepath.Join(mnt, p, DataName)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s/%s: stat gives %v, want ENOENT", p, DataName, err)
		}
		path := filepath.Join(mnt, p, DataJSONName)
		doc, err := os.ReadFile(path)
		if err != nil {
			t.Errorf("%s: %v", path, err)
			continue
		}
		if fi, err := os.Stat(path); err != nil || fi.Size() != int64(len(doc)) {
			t.Errorf("%s: stat %v, %v; read %d bytes", path, fi, err, len(doc))
		}
		var got any
		if err := json.Unmarshal(doc, &got); err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %v\n got %.200s\nwant %.200v", path, err, doc, want)
		}
	}

	if _, err := os.ReadFile(filepath.Join(mnt, "corrupt", DataJSONName)); !errors.Is(err, syscall.EIO) {
		t.Errorf("corrupt/%s: %v, want EIO", DataJSONName, err)
	}
	// A numeric array keeps data, and has no data.json.
	if _, err := os.Stat(filepath.Join(mnt, "xr", "v", DataName)); err != nil {
		t.Errorf("xr/v/%s: %v", DataName, err)
	}
	if _, err := os.Stat(filepath.Join(mnt, "xr", "v", DataJSONName)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("xr/v/%s: stat gives %v, want ENOENT", DataJSONName, err)
	}
}
