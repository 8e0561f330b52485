package netcdf3

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/nczarrfs/nczarrfs/internal/testenv"
)

// TestHeadersWithNetCDFC writes files of random models (the fuzz
// target's generator) and has netcdf-c (through netCDF4-python) and,
// for CDF-2, scipy read them: dimensions, variables, their types and
// values, and attributes must be the model's.
func TestHeadersWithNetCDFC(t *testing.T) {
	check := exec.Command(testenv.Python, "-c", "import netCDF4, scipy.io, numpy")
	testenv.Require(t, "python3-netcdf4 and python3-scipy", check.Run())
	seed := rand.Int63()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewSource(seed))
	dir := t.TempDir()
	type varWant struct {
		Name  string   `json:"name"`
		Shape []int64  `json:"shape"`
		Type  string   `json:"type"`
		Data  string   `json:"data"` // little-endian, hex
		Attrs []string `json:"attrs"`
	}
	type fileWant struct {
		Path  string           `json:"path"`
		CDF2  bool             `json:"cdf2"`
		Dims  map[string]int64 `json:"dims"`
		Rec   string           `json:"rec"`
		Attrs []string         `json:"attrs"`
		Vars  []varWant        `json:"vars"`
	}
	var files []fileWant
	for k := range 40 {
		b := make([]byte, 300)
		rng.Read(b)
		h, data := (&gen{b: b, ascii: true}).model()
		f, err := New(h)
		if err != nil {
			t.Fatal(err)
		}
		p := make([]byte, f.Size())
		if _, err := f.NewReader().ReadAt(context.Background(), p, 0); err != nil && f.Size() > 0 {
			t.Fatal(err)
		}
		path := filepath.Join(dir, fmt.Sprintf("f%d.nc", k))
		if err := os.WriteFile(path, p, 0o644); err != nil {
			t.Fatal(err)
		}
		w := fileWant{Path: path, CDF2: h.Format == CDF2, Dims: map[string]int64{}, Attrs: []string{}, Vars: []varWant{}}
		for i, d := range h.Dims {
			w.Dims[d.Name] = d.Len
			if i == h.RecDim {
				w.Rec = d.Name
			}
		}
		for _, a := range h.Attrs {
			w.Attrs = append(w.Attrs, a.Name)
		}
		for i, v := range h.Vars {
			vw := varWant{Name: v.Name, Type: v.Type.String(), Data: hex.EncodeToString(data[i]), Shape: []int64{}, Attrs: []string{}}
			for _, d := range v.Dims {
				vw.Shape = append(vw.Shape, h.Dims[d].Len)
			}
			for _, a := range v.Attrs {
				vw.Attrs = append(vw.Attrs, a.Name)
			}
			w.Vars = append(w.Vars, vw)
		}
		files = append(files, w)
	}
	want, err := json.Marshal(files)
	if err != nil {
		t.Fatal(err)
	}
	spec := filepath.Join(dir, "want.json")
	if err := os.WriteFile(spec, want, 0o644); err != nil {
		t.Fatal(err)
	}
	script := `
import sys, json, numpy as np, netCDF4, scipy.io
types = {"byte": "i1", "char": "S1", "short": "i2", "int": "i4", "float": "f4", "double": "f8",
         "ubyte": "u1", "ushort": "u2", "uint": "u4", "int64": "i8", "uint64": "u8"}
for w in json.load(open(sys.argv[1])):
    with netCDF4.Dataset(w["path"]) as d:
        d.set_auto_maskandscale(False)
        d.set_auto_chartostring(False)
        assert {k: len(v) for k, v in d.dimensions.items()} == w["dims"], (w["path"], d.dimensions)
        rec = [k for k, v in d.dimensions.items() if v.isunlimited()]
        assert rec == ([w["rec"]] if w["rec"] else []), (w["path"], rec)
        assert d.ncattrs() == w["attrs"], (w["path"], d.ncattrs(), w["attrs"])
        assert list(d.variables) == [v["name"] for v in w["vars"]], w["path"]
        for v in w["vars"]:
            x = d.variables[v["name"]]
            assert list(x.shape) == v["shape"], (w["path"], v["name"], x.shape)
            assert x.ncattrs() == v["attrs"], (w["path"], v["name"])
            got = np.asarray(x[...]).astype("<" + types[v["type"]]).tobytes().hex()
            assert got == v["data"], (w["path"], v["name"], got, v["data"])
    if w["cdf2"]:
        with scipy.io.netcdf_file(w["path"], mmap=False, maskandscale=False) as s:
            assert s.version_byte == 2
            assert list(s.variables) == [v["name"] for v in w["vars"]], w["path"]
            for v in w["vars"]:
                got = np.asarray(s.variables[v["name"]][...]).astype("<" + types[v["type"]]).tobytes().hex()
                assert got == v["data"], ("scipy", w["path"], v["name"])
print("ok", len(json.load(open(sys.argv[1]))))
`
	out, err := exec.Command(testenv.Python, "-c", script, spec).CombinedOutput()
	if err != nil || string(out) != "ok 40\n" {
		t.Fatalf("python: %v\n%s", err, out)
	}
}
