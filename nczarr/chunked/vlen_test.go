package chunked_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/nczarrfs/nczarrfs/nczarr"
	"github.com/nczarrfs/nczarrfs/nczarr/codec"
	"github.com/nczarrfs/nczarrfs/zmap/file"
)

// TestObjectArraysMatchZarr checks the JSON of every object array that
// testdata/gen_vlen.py has zarr-python (and xarray) write against what
// zarr-python reads back, and that the arrays it spoils are refused.
func TestObjectArraysMatchZarr(t *testing.T) {
	dir := t.TempDir()
	if out, err := exec.Command("/usr/bin/python3", "testdata/gen_vlen.py", dir).CombinedOutput(); err != nil {
		t.Fatalf("gen_vlen.py (needs python3-zarr, python3-xarray, python3-msgpack): %v\n%s", err, out)
	}
	var expected map[string]any
	readJSONFile(t, filepath.Join(dir, "expected.json"), &expected)
	var bad map[string]string
	readJSONFile(t, filepath.Join(dir, "bad.json"), &bad)
	if len(expected) < 15 {
		t.Fatalf("gen_vlen.py wrote %d arrays, want at least 15", len(expected))
	}

	ctx := context.Background()
	store, err := file.Open(filepath.Join(dir, "ds"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	ds, err := nczarr.Open(ctx, store, nczarr.Options{})
	if err != nil {
		t.Fatal(err)
	}

	paths := make([]string, 0, len(expected))
	for p := range expected {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		a := ds.Array(p)
		if a == nil {
			t.Errorf("%s: not found", p)
			continue
		}
		if a.Err != nil || !a.Objects() || a.Size() != 0 {
			t.Errorf("%s: Err %v, Objects %v, Size %d; want an object array of no data bytes", p, a.Err, a.Objects(), a.Size())
			continue
		}
		doc, err := a.JSON(ctx)
		if err != nil {
			t.Errorf("%s: %v", p, err)
			continue
		}
		if !bytes.HasSuffix(doc, []byte("]\n")) && !bytes.HasSuffix(doc, []byte("\"\n")) {
			t.Errorf("%s: document does not end in one newline: %q", p, clipBytes(doc))
		}
		var got any
		if err := json.Unmarshal(doc, &got); err != nil {
			t.Errorf("%s: not JSON: %v: %q", p, err, clipBytes(doc))
			continue
		}
		if !reflect.DeepEqual(got, expected[p]) {
			t.Errorf("%s:\n got %s\nwant %s", p, clipBytes(doc), clipAny(expected[p]))
		}
		again, err := a.JSON(ctx)
		if err != nil || !bytes.Equal(again, doc) {
			t.Errorf("%s: a second call gives %q, %v", p, clipBytes(again), err)
		}
	}

	for p, why := range bad {
		a := ds.Array(p)
		if a == nil {
			t.Errorf("%s: not found", p)
			continue
		}
		_, err := a.JSON(ctx)
		switch why {
		case "corrupt":
			if a.Err != nil || !a.Objects() {
				t.Errorf("%s: Err %v, Objects %v; want an object array whose chunk fails", p, a.Err, a.Objects())
			}
			if !errors.Is(err, codec.ErrCorrupt) || !strings.Contains(err.Error(), p+"/1") {
				t.Errorf("%s: JSON error %v, want a corrupt-chunk error naming %s/1", p, err, p)
			}
		case "unsupported":
			if !errors.Is(a.Err, codec.ErrUnknown) || !strings.Contains(a.Err.Error(), "pickle") || a.Objects() {
				t.Errorf("%s: Err %v, want an unsupported-codec error naming pickle", p, a.Err)
			}
			if err == nil {
				t.Errorf("%s: JSON of an unusable array succeeds", p)
			}
		default:
			t.Fatalf("bad.json: unknown reason %q", why)
		}
	}

	if a := ds.Array("xr/v"); a == nil || a.Objects() {
		t.Errorf("xr/v, a float64 array: %+v is an object array", a)
	} else if _, err := a.JSON(ctx); err == nil {
		t.Errorf("xr/v: JSON of a numeric array succeeds")
	}
}

func readJSONFile(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

func clipBytes(b []byte) string {
	if len(b) > 300 {
		return string(b[:300]) + "..."
	}
	return string(b)
}

func clipAny(v any) string {
	b, _ := json.Marshal(v)
	return clipBytes(b)
}
