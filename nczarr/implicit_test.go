package nczarr_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/nczarrfs/nczarrfs/nczarr"
	"github.com/nczarrfs/nczarrfs/zmap/file"
)

// rootlessStores has zarr-python write a group with a subgroup and arrays,
// then removes metadata objects the way stores in the wild lack them:
// "consolidated-only" keeps .zmetadata and the chunks only; "implicit-root"
// lacks the root's .zgroup and .zattrs. Each array's bytes, as zarr-python
// reads them before the removal, are in <store>.<path with / as ~>.bin, and
// the array paths in <store>.json.
func rootlessStores(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	script := `import sys, os, json, zarr, numpy as np
out = sys.argv[1]
for name in ["consolidated-only", "implicit-root"]:
    path = os.path.join(out, name)
    g = zarr.open_group(path, mode="w")
    g.attrs["title"] = "rootless"
    g.create_dataset("t", data=np.arange(30, dtype="<i4").reshape(5, 6), chunks=(2, 4), fill_value=-1)
    sub = g.create_group("sub")
    sub.create_dataset("x", data=np.linspace(0, 1, 7, dtype=">f8"), chunks=(3,))
    deep = sub.create_group("deep")
    deep.create_dataset("s", data=np.array([b"ab", b"c"], dtype="|S2"), chunks=(1,))
    arrays = sorted(a.path for _, a in g.arrays(recurse=True))
    for p in arrays:
        np.ascontiguousarray(g[p][...]).astype(g[p].dtype.newbyteorder("<")).tofile(
            os.path.join(out, name + "." + p.replace("/", "~") + ".bin"))
    with open(os.path.join(out, name + ".json"), "w") as f:
        json.dump(arrays, f)
    if name == "consolidated-only":
        zarr.consolidate_metadata(path)
        for root, dirs, files in os.walk(path):
            for f in files:
                if f in (".zgroup", ".zarray", ".zattrs"):
                    os.remove(os.path.join(root, f))
    else:
        os.remove(os.path.join(path, ".zgroup"))
        os.remove(os.path.join(path, ".zattrs"))
os.makedirs(os.path.join(out, "nothing", "a", "b"))
with open(os.path.join(out, "nothing", "a", "b", "0.0"), "wb") as f:
    f.write(b"not zarr")
`
	if out, err := exec.Command("/usr/bin/python3", "-c", script, dir).CombinedOutput(); err != nil {
		t.Fatalf("zarr-python: %v\n%s", err, out)
	}
	return dir
}

func TestRootlessStores(t *testing.T) {
	dir := rootlessStores(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name         string
		consolidated bool
		groups       []string
	}{
		{"consolidated-only", true, []string{"", "sub", "sub/deep"}},
		{"implicit-root", false, []string{"", "sub", "sub/deep"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var want []string
			b, err := os.ReadFile(filepath.Join(dir, tc.name+".json"))
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(b, &want); err != nil || len(want) != 3 {
				t.Fatalf("zarr-python listed %q, %v", want, err)
			}
			store, err := file.Open(filepath.Join(dir, tc.name))
			if err != nil {
				t.Fatal(err)
			}
			ds, err := nczarr.Open(ctx, store, nczarr.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if ds.Consolidated != tc.consolidated || ds.Generation != nczarr.PureZarr {
				t.Errorf("Consolidated %v, generation %s", ds.Consolidated, ds.Generation)
			}
			if got := ds.Arrays(); !slices.Equal(got, want) {
				t.Errorf("arrays %q, zarr-python %q", got, want)
			}
			if got := ds.Groups(); !slices.Equal(got, tc.groups) {
				t.Errorf("groups %q, want %q", got, tc.groups)
			}
			if g := ds.Group(""); g == nil || !slices.Equal(g.Arrays, []string{"t"}) || !slices.Equal(g.Groups, []string{"sub"}) {
				t.Errorf("root group %+v", g)
			}
			for _, p := range want {
				a := ds.Array(p)
				if a == nil || a.Err != nil {
					t.Fatalf("array %q: %+v", p, a)
				}
				wantBytes, err := os.ReadFile(filepath.Join(dir, tc.name+"."+strings.ReplaceAll(p, "/", "~")+".bin"))
				if err != nil {
					t.Fatal(err)
				}
				got := make([]byte, a.Size())
				if n, err := a.ReadAt(ctx, got, 0); err != nil || n != len(got) || !bytes.Equal(got, wantBytes) {
					t.Errorf("%s: read %d bytes, %v; %x, zarr-python %x", p, n, err, got, wantBytes)
				}
			}
		})
	}
	t.Run("nothing", func(t *testing.T) {
		store, err := file.Open(filepath.Join(dir, "nothing"))
		if err != nil {
			t.Fatal(err)
		}
		_, err = nczarr.Open(ctx, store, nczarr.Options{})
		if !errors.Is(err, nczarr.ErrNoDataset) {
			t.Fatalf("err = %v, want ErrNoDataset", err)
		}
		// The message names what was looked for, in both versions.
		for _, name := range []string{"zarr.json", ".zgroup", ".zarray", ".zmetadata", ".nczarr"} {
			if !strings.Contains(err.Error(), name) {
				t.Errorf("%q does not name %s", err, name)
			}
		}
	})
}

// TestV3ImplicitGroups opens the v3 stores with folders that have no
// zarr.json (gen_v3.mjs's v3-implicit-*): an OME-Zarr plate's row folder
// between two v3 groups, and a store with nothing at the top. Each folder
// with a node below it is a group; one without stays a plain folder.
// TestV3Fixtures reads their arrays against zarrita.
func TestV3ImplicitGroups(t *testing.T) {
	for _, tc := range []struct {
		name   string
		groups []string
		arrays []string
	}{
		{"v3-implicit-plate", []string{"", "A", "A/1", "A/1/0"}, []string{"A/1/0/0", "A/1/0/1"}},
		{"v3-implicit-root", []string{"", "deep", "deep/er", "group"}, []string{"deep/er/array", "group/array"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, _ := openV3Fixture(t, tc.name, nczarr.Options{})
			if d.Generation != nczarr.ZarrV3 {
				t.Errorf("generation %q", d.Generation)
			}
			if got := d.Groups(); !slices.Equal(got, tc.groups) {
				t.Errorf("groups %q, want %q", got, tc.groups)
			}
			if got := d.Arrays(); !slices.Equal(got, tc.arrays) {
				t.Errorf("arrays %q, want %q", got, tc.arrays)
			}
			for _, p := range tc.arrays {
				if a := d.Array(p); a == nil || a.Err != nil {
					t.Errorf("array %s: %+v", p, a)
				}
			}
		})
	}
}
