package nczarr_test

import (
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/nczarrfs/nczarrfs/internal/testenv"
	"github.com/nczarrfs/nczarrfs/nczarr"
	"github.com/nczarrfs/nczarrfs/zmap/file"
)

// storedAttrs is a Python script that prints, for every folder under
// argv[1] holding a .zattrs or a zarr.json, the attributes Python's json
// module reads from it, in stored order, without NCZarr's own and
// _ARRAY_DIMENSIONS: {path: [[name, value], ...]}, non-finite floats as
// the strings Dataset.Attrs quotes them to.
const storedAttrs = `import json, math, os, sys
def finite(v):
    if isinstance(v, float) and not math.isfinite(v):
        return "NaN" if v != v else ("Infinity" if v > 0 else "-Infinity")
    if isinstance(v, list):
        return [finite(e) for e in v]
    if isinstance(v, dict):
        return {k: finite(e) for k, e in v.items()}
    return v
out = {}
root = sys.argv[1]
for d, _, files in os.walk(root):
    rel = os.path.relpath(d, root).replace(os.sep, "/")
    rel = "" if rel == "." else rel
    if "zarr.json" in files:
        attrs = (json.load(open(os.path.join(d, "zarr.json"))).get("attributes") or {})
    elif ".zattrs" in files:
        attrs = json.load(open(os.path.join(d, ".zattrs")))
    else:
        continue
    out[rel] = [[k, finite(v)] for k, v in attrs.items()
                if not k.lower().startswith("_nczarr_") and k != "_ARRAY_DIMENSIONS"]
json.dump(out, sys.stdout)
`

// TestAttrsFromTheModel opens datasets the reference tools wrote (ncgen's
// NCZarr, zarr-python's consolidated Zarr v2 with bare NaN and attributes
// out of alphabetical order, zarrita's Zarr v3 fixtures) and checks that
// Dataset.Attrs of every group and array asks the store nothing once the
// dataset is open, and gives what Python's json reads from the stored
// documents: the same names, in stored order, and the same values.
func TestAttrsFromTheModel(t *testing.T) {
	dir := t.TempDir()
	ncgen, err := exec.LookPath("ncgen")
	testenv.Require(t, "ncgen (Debian package netcdf-bin)", err)
	cdl, _ := filepath.Abs("../test/fixtures/nczarr_basic.cdl")
	if out, err := exec.Command(ncgen, "-4", "-lb", "-o", "file://"+filepath.Join(dir, "basic.file")+"#mode=nczarr,file", cdl).CombinedOutput(); err != nil {
		t.Fatalf("ncgen: %v\n%s", err, out)
	}
	if out, err := exec.Command(testenv.Python, "-c", `import sys, zarr, numpy as np
g = zarr.open_group(sys.argv[1], mode="w")
g.attrs.update({"zeta": 1, "alpha": float("nan"), "mid": [1.5, float("inf")], "title": "consolidated"})
s = g.create_group("sub")
s.attrs.update({"b": "x", "a": {"k": [1, 2]}})
v = s.create_dataset("v", data=np.arange(6, dtype="<i2"), chunks=(3,))
v.attrs.update({"units": "K", "_FillValue": -1, "scale": 0.5, "_ARRAY_DIMENSIONS": ["x"]})
zarr.consolidate_metadata(g.store)
`, filepath.Join(dir, "consolidated.zarr")).CombinedOutput(); err != nil {
		t.Fatalf("zarr-python: %v\n%s", err, out)
	}
	trees := []string{filepath.Join(dir, "basic.file"), filepath.Join(dir, "consolidated.zarr")}
	v3dir, m := zarritaFixtures(t)
	for _, ds := range m.Datasets {
		trees = append(trees, filepath.Join(v3dir, ds.Tree))
	}
	ctx := context.Background()
	for _, tree := range trees {
		t.Run(filepath.Base(tree), func(t *testing.T) {
			out, err := exec.Command(testenv.Python, "-c", storedAttrs, tree).Output()
			if err != nil {
				t.Fatalf("python: %v", err)
			}
			var want map[string][][2]any
			if err := json.Unmarshal(out, &want); err != nil {
				t.Fatal(err)
			}
			fs, err := file.Open(tree)
			if err != nil {
				t.Fatal(err)
			}
			defer fs.Close()
			store := &countingStore{Store: fs, ranges: map[string][][2]int64{}}
			d, err := nczarr.Open(ctx, store, nczarr.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if tree == trees[1] && !d.Consolidated {
				t.Fatal("zarr-python's dataset not read from .zmetadata")
			}
			nodes := append(d.Groups(), d.Arrays()...)
			store.gets = nil
			for _, p := range nodes {
				attrs, err := d.Attrs(ctx, p)
				if err != nil {
					t.Errorf("%q: %v", p, err)
					continue
				}
				var got [][2]any
				for _, a := range attrs {
					var v any
					if err := json.Unmarshal(a.Value, &v); err != nil {
						t.Errorf("%q: attribute %s: %v", p, a.Name, err)
					}
					got = append(got, [2]any{a.Name, v})
				}
				if w := want[p]; len(got)+len(w) > 0 && !reflect.DeepEqual(got, w) {
					t.Errorf("%q: attributes\n%v\nwant (Python's reading)\n%v", p, got, w)
				}
			}
			if len(store.gets) > 0 || len(store.ranges) > 0 {
				t.Errorf("Attrs read the store: %v %v", store.gets, store.ranges)
			}
			if len(nodes) == 0 || len(want) == 0 {
				t.Errorf("nodes %q, Python found %d documents", nodes, len(want))
			}
		})
	}
}
