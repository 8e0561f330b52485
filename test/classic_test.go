package test

// Tests of dataset.nc, the netCDF classic file in every group: what
// netcdf-c's own tools, xarray, scipy, CDO, NCO, GDAL and ncview read from
// it, against what they read from the source or from a classic file
// netcdf-c wrote (test/fixtures/classic.cdl, test/fixtures/classic.py).

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nczarrfs/nczarrfs/internal/miniotest"
	"github.com/nczarrfs/nczarrfs/internal/stats"
	"github.com/nczarrfs/nczarrfs/internal/testenv"
)

// requireTools skips (or under make test fails) a test whose tools are
// not installed.
func requireTools(t *testing.T, tools ...string) {
	t.Helper()
	for _, tool := range tools {
		_, err := exec.LookPath(tool)
		testenv.Require(t, tool+" (scripts/install-deps.sh installs it)", err)
	}
}

// run runs a command and returns its standard output; the test fails
// when it fails.
func run(t *testing.T, name string, args ...string) []byte {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, clip(stderr.String()))
	}
	return stdout.Bytes()
}

// classicScript runs test/fixtures/classic.py.
func classicScript(t *testing.T, args ...string) {
	t.Helper()
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	run(t, python, append([]string{filepath.Join(root, "test", "fixtures", "classic.py")}, args...)...)
}

// fixtureCDL reads a CDL file of test/fixtures.
func fixtureCDL(t *testing.T, name string) string {
	t.Helper()
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, "test", "fixtures", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// netcdf4Only drops the lines of a CDL that a classic file cannot hold
// (storage attributes), so that ncgen can write it as one.
var netcdf4Only = regexp.MustCompile(`(?m)^\s*\w*:_(ChunkSizes|Endianness|Storage|DeflateLevel) = .*\n`)

// nczarrFromCDL writes cdl with ncgen as an NCZarr tree under dir and
// returns the tree's path.
func nczarrFromCDL(t *testing.T, dir, name, cdl string) string {
	t.Helper()
	src := filepath.Join(dir, name+".cdl")
	if err := os.WriteFile(src, []byte(cdl), 0o644); err != nil {
		t.Fatal(err)
	}
	tree := filepath.Join(dir, name+".file")
	run(t, "ncgen", "-4", "-o", "file://"+tree+"#mode=nczarr,file", src)
	return tree
}

// ncdump runs ncdump with args and returns its output without the first
// line, which names the file.
func ncdump(t *testing.T, args ...string) string {
	t.Helper()
	return withoutFirstLine(run(t, "ncdump", args...))
}

func sameLines(t *testing.T, what, got, want string) {
	t.Helper()
	if got == want {
		return
	}
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := 0; i < len(g) || i < len(w); i++ {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			t.Fatalf("%s: line %d differs:\n got: %q\nwant: %q\n\ngot:\n%s\nwant:\n%s", what, i+2, gl, wl, clip(got), clip(want))
		}
	}
}

// TestClassicAgreesWithNetcdfC: ncdump of dataset.nc is, but for its
// first line, ncdump of the classic file netcdf-c writes from the same
// data: nccopy's copy of the NCZarr dataset (CDF-2 and CDF-5), or ncgen's
// classic file from the CDL for what netcdf-c 4.9.0's NCZarr cannot read
// or write (an unlimited dimension, scalars). The mounted datasets are
// compressed with zlib; ncdump -h of dataset.nc makes no store request.
func TestClassicAgreesWithNetcdfC(t *testing.T) {
	requireTools(t, "ncgen", "ncdump", "nccopy")
	base := fixtureCDL(t, "classic.cdl")
	for _, tc := range []struct {
		name   string
		cdl    string
		kind   string // ncdump -k of the file
		nccopy bool   // the reference is nccopy's copy, else ncgen's file
		unlim  string // a dimension to make unlimited
	}{
		{name: "cdf2", cdl: base, kind: "64-bit offset", nccopy: true},
		{name: "cdf5", cdl: strings.Replace(base, "\tdouble d(x) ;", "\tubyte u(x) ;\n\tushort us(x) ;\n\tint64 i64(time) ;\n\tdouble d(x) ;", 1), kind: "cdf5", nccopy: true},
		{name: "unlimited", cdl: base, kind: "64-bit offset", unlim: "time"},
		{name: "scalar", cdl: fixtureCDL(t, "nczarr_scalar.cdl"), kind: "cdf5"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			cdl := tc.cdl
			if tc.name == "scalar" {
				// netcdf-c 4.9.0 writes a big-endian variable's bytes
				// little-endian under a ">f8" dtype, which zarr-python
				// and nczarrfs read as the dtype says: no such variable.
				cdl = netcdf4Only.ReplaceAllString(cdl, "")
			}
			if tc.name == "cdf5" {
				cdl = strings.Replace(cdl, "data:\n", "data:\n u = 0, 1, 254, 255, _ ;\n us = 1, 65535, 3, 4, 5 ;\n i64 = -9223372036854775807, 0, 9223372036854775807 ;\n", 1)
			}
			tree := nczarrFromCDL(t, dir, tc.name, cdl)
			want := filepath.Join(dir, "want.nc")
			if tc.nccopy {
				run(t, "nccopy", "-k", tc.kind, "file://"+tree+"#mode=nczarr,file", want)
			} else {
				classic := netcdf4Only.ReplaceAllString(cdl, "")
				if tc.unlim != "" {
					classic = strings.Replace(classic, "\t"+tc.unlim+" = 3 ;", "\t"+tc.unlim+" = UNLIMITED ;", 1)
					classicScript(t, "unlimited", tree, tc.unlim)
				}
				src := filepath.Join(dir, "classic.cdl")
				if err := os.WriteFile(src, []byte(classic), 0o644); err != nil {
					t.Fatal(err)
				}
				run(t, "ncgen", "-k", tc.kind, "-o", want, src)
			}
			classicScript(t, "deflate", tree)
			mnt := mount(t, tree)
			nc := filepath.Join(mnt, "dataset.nc")
			st, err := os.Stat(nc)
			if err != nil {
				t.Fatal(err)
			}
			// netcdf-c reads the header in one block of st_blksize
			// (at least 8 KiB): no variable begins in it.
			blk := st.Sys().(*syscall.Stat_t).Blksize
			if blk < 8192 {
				t.Errorf("st_blksize %d, want at least netcdf-c's 8 KiB", blk)
			}
			f, err := os.Open(nc)
			if err != nil {
				t.Fatal(err)
			}
			for v, b := range classicBegins(t, f) {
				if b < blk {
					t.Errorf("%s begins at %d, in the header's block of %d", v, b, blk)
				}
			}
			f.Close()
			before := readRequests(t, mnt)
			header := ncdump(t, "-h", nc)
			if got := minus(readRequests(t, mnt), before); got != (stats.Kinds{}) {
				t.Errorf("ncdump -h made store requests: %+v", got)
			}
			sameLines(t, "ncdump -h", header, ncdump(t, "-h", want))
			sameLines(t, "ncdump", ncdump(t, nc), ncdump(t, want))
			if got := strings.TrimSpace(string(run(t, "ncdump", "-k", nc))); got != tc.kind {
				t.Errorf("ncdump -k: %q, want %q", got, tc.kind)
			}
			if tc.unlim != "" && !strings.Contains(header, tc.unlim+" = UNLIMITED ;") {
				t.Errorf("ncdump -h shows no unlimited %s:\n%s", tc.unlim, header)
			}
			// nczarrfs export writes the same bytes without a mount.
			exported := filepath.Join(dir, "export.nc")
			r := nczarrfsCommand(t, "export", tree, "-o", exported)
			if r.err != nil || !strings.Contains(r.stderr, "as netCDF CDF-") {
				t.Fatalf("nczarrfs export: %v\n%s", r.err, r.stderr)
			}
			got, err := os.ReadFile(exported)
			if err != nil {
				t.Fatal(err)
			}
			mounted, err := os.ReadFile(nc)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, mounted) {
				t.Errorf("export wrote %d bytes, not the %d of dataset.nc", len(got), len(mounted))
			}
		})
	}
}

// TestClassicAgreesWithXarray: for a CF dataset xarray wrote as pure Zarr
// (datetime coordinate, zstd and blosc), xarray opens dataset.nc as a
// dataset identical to what it opens from the Zarr source, and CDO reads
// its grid, time axis and values.
func TestClassicAgreesWithXarray(t *testing.T) {
	requireTools(t, "ncdump")
	dir := t.TempDir()
	tree := filepath.Join(dir, "cf.zarr")
	classicScript(t, "cf", tree)
	mnt := mount(t, tree)
	script := `
import sys, xarray as xr
src, nc = sys.argv[1], sys.argv[2]
want = xr.open_zarr(src).load()
got = xr.open_dataset(nc, engine="netcdf4").load()
if not got.identical(want):
    print("not identical:\n", got, "\n", want, "\n", [(k, got[k].attrs, want[k].attrs) for k in want.variables])
    xr.testing.assert_identical(got, want)
    sys.exit(1)
print(got.time.values[0], got.temp.dtype)
`
	out := run(t, python, "-c", script, tree, filepath.Join(mnt, "dataset.nc"))
	if !strings.HasPrefix(string(out), "2000-01-01T00:00:00") {
		t.Errorf("first time %q, want 2000-01-01", out)
	}
	if got := strings.TrimSpace(string(run(t, "ncdump", "-k", filepath.Join(mnt, "dataset.nc")))); got != "cdf5" {
		t.Errorf("ncdump -k: %q, want cdf5 (time is int64)", got)
	}
	// CDO finds the CF grid and time axis, and prints temp's values as
	// xarray reads them from the Zarr source.
	requireTools(t, "cdo")
	nc := filepath.Join(mnt, "dataset.nc")
	info := string(run(t, "cdo", "-s", "sinfon", nc))
	for _, want := range []string{"lon : 0 to 40 by 10 degrees_east", "time : 6 steps", "RefTime =  2000-01-01 00:00:00", ": temp", ": precip"} {
		if !strings.Contains(info, want) {
			t.Errorf("cdo sinfon lacks %q:\n%s", want, info)
		}
	}
	tab := filepath.Join(dir, "tab.txt")
	if err := os.WriteFile(tab, run(t, "cdo", "-s", "outputtab,date,lon,lat,value", "-selname,temp", nc), 0o644); err != nil {
		t.Fatal(err)
	}
	check := `
import sys, numpy as np, xarray as xr
want = xr.open_zarr(sys.argv[1]).temp.to_dataframe().reset_index()
rows = [l.split() for l in open(sys.argv[2]) if not l.startswith("#")]
assert len(rows) == len(want), (len(rows), len(want))
got = {(r[0], float(r[1]), float(r[2])): float(r[3]) for r in rows}
for _, w in want.iterrows():
    g = got[(str(w.time.date()), w.lon, w.lat)]
    assert (np.isnan(g) and np.isnan(w.temp)) or abs(g - w.temp) < 1e-3, (w, g)
print("ok", len(rows))
`
	if out := run(t, python, "-c", check, tree, tab); !strings.HasPrefix(string(out), "ok 120") {
		t.Errorf("cdo outputtab against xarray: %s", out)
	}
}

// classicCDF2 mounts the zlib NCZarr of classic.cdl (a CDF-2 file) and
// returns the mountpoint and what nccopy -k '64-bit offset' writes from
// the NCZarr dataset (before its compression, which netcdf-c 4.9.0 cannot
// read without its plugins).
func classicCDF2(t *testing.T) (mnt, ref string) {
	t.Helper()
	requireTools(t, "ncgen", "nccopy")
	dir := t.TempDir()
	tree := nczarrFromCDL(t, dir, "classic", fixtureCDL(t, "classic.cdl"))
	ref = filepath.Join(dir, "ref.nc")
	run(t, "nccopy", "-k", "64-bit offset", "file://"+tree+"#mode=nczarr,file", ref)
	classicScript(t, "deflate", tree)
	return mount(t, tree), ref
}

// TestClassicTools: netCDF4-python and scipy (CDF-2) read every variable
// and attribute of dataset.nc as netCDF4-python reads them from netcdf-c's
// own copy; NCO and GDAL open it.
func TestClassicTools(t *testing.T) {
	requireTools(t, "ncks", "gdalinfo")
	mnt, ref := classicCDF2(t)
	nc := filepath.Join(mnt, "dataset.nc")
	script := `
import sys, numpy as np, netCDF4, scipy.io
ref, nc = sys.argv[1], sys.argv[2]
def same(a, b):
    if isinstance(b, str):
        b = b.encode()
    if isinstance(a, str):
        a = a.encode()
    return np.array_equal(np.atleast_1d(a), np.atleast_1d(b))
with netCDF4.Dataset(nc) as d, netCDF4.Dataset(ref) as r, scipy.io.netcdf_file(nc, mmap=False, maskandscale=False) as s:
    assert d.file_format == "NETCDF3_64BIT_OFFSET", d.file_format
    assert s.version_byte == 2, s.version_byte
    assert list(d.variables) == list(r.variables), (list(d.variables), list(r.variables))
    assert d.ncattrs() == r.ncattrs(), (d.ncattrs(), r.ncattrs())
    for a in r.ncattrs():
        assert same(d.getncattr(a), r.getncattr(a)), a
        assert same(s._attributes[a], r.getncattr(a)), ("scipy", a)
    for k in r.variables:
        for f in (d, r):
            f.variables[k].set_auto_maskandscale(False)
            f.variables[k].set_auto_chartostring(False)
        want = np.ma.getdata(r.variables[k][...])
        got = np.ma.getdata(d.variables[k][...])
        assert got.dtype == want.dtype and np.array_equal(got, want), (k, got, want)
        got = s.variables[k][...]
        assert np.array_equal(got, want), ("scipy", k, got, want)
        assert d.variables[k].ncattrs() == r.variables[k].ncattrs(), k
        for a in r.variables[k].ncattrs():
            assert same(d.variables[k].getncattr(a), r.variables[k].getncattr(a)), (k, a)
            assert same(s.variables[k]._attributes[a], r.variables[k].getncattr(a)), ("scipy", k, a)
print("ok", len(r.variables))
`
	if out := run(t, python, "-c", script, ref, nc); !strings.HasPrefix(string(out), "ok 7") {
		t.Errorf("python: %s", out)
	}
	// ncks copies one variable; its ncdump equals netcdf-c's own.
	out := filepath.Join(t.TempDir(), "out.nc")
	run(t, "ncks", "-O", "-v", "temp", nc, out)
	if got, want := ncdump(t, "-v", "temp", out), ncdump(t, "-v", "temp", nc); !strings.Contains(got, "temp =\n  1, 2, 3, _, 5,") || !strings.Contains(want, "temp =\n  1, 2, 3, _, 5,") {
		t.Errorf("ncks copy of temp:\n%s\nfrom:\n%s", got, want)
	}
	gdal := string(run(t, "gdalinfo", `NETCDF:"`+nc+`":temp`))
	if !strings.Contains(gdal, "Size is 5, 3") || !strings.Contains(gdal, "temp#long_name=temperature") {
		t.Errorf("gdalinfo:\n%s", gdal)
	}
}

// TestClassicNcview opens dataset.nc in ncview under Xvfb and waits for
// its window; the screenshot is left in the test's log folder for a look
// (NCZARRFS_NCVIEW_SHOT names where to copy it).
func TestClassicNcview(t *testing.T) {
	requireTools(t, "ncview", "Xvfb", "xwininfo", "import")
	mnt, _ := classicCDF2(t)
	display := fmt.Sprintf(":%d", 90+os.Getpid()%100)
	x := exec.Command("Xvfb", display, "-screen", "0", "1024x768x24", "-nolisten", "tcp")
	if err := x.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { x.Process.Kill(); x.Wait() })
	env := append(os.Environ(), "DISPLAY="+display)
	for start := time.Now(); ; time.Sleep(100 * time.Millisecond) {
		cmd := exec.Command("xwininfo", "-root")
		cmd.Env = env
		if cmd.Run() == nil {
			break
		}
		if time.Since(start) > 30*time.Second {
			t.Fatalf("Xvfb %s did not come up", display)
		}
	}
	nv := exec.Command("ncview", filepath.Join(mnt, "dataset.nc"))
	nv.Env = env
	var nvOut bytes.Buffer
	nv.Stdout, nv.Stderr = &nvOut, &nvOut
	if err := nv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nv.Process.Kill(); nv.Wait() })
	deadline := time.Now().Add(30 * time.Second)
	for {
		cmd := exec.Command("xwininfo", "-root", "-tree")
		cmd.Env = env
		tree, _ := cmd.CombinedOutput()
		if bytes.Contains(tree, []byte(`"Ncview`)) || bytes.Contains(tree, []byte(`"ncview`)) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no ncview window after 30 s:\n%s\nncview said:\n%s", tree, nvOut.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
	shot := filepath.Join(t.TempDir(), "ncview.png")
	if to := os.Getenv("NCZARRFS_NCVIEW_SHOT"); to != "" {
		shot = to
	}
	time.Sleep(time.Second) // let it draw
	imp := exec.Command("import", "-window", "root", shot)
	imp.Env = env
	if out, err := imp.CombinedOutput(); err != nil {
		t.Fatalf("import: %v\n%s", err, out)
	}
}

// TestClassicBadInput: a corrupt chunk fails with EIO the reads of its
// variable's granule, with a log line naming its key, while the header
// and the other variables read; arrays of types netCDF classic lacks are
// named in nczarrfs_omitted; a group with no arrays has a valid file.
func TestClassicBadInput(t *testing.T) {
	requireTools(t, "ncdump")
	dir := t.TempDir()
	tree := filepath.Join(dir, "odd.zarr")
	classicScript(t, "odd", tree)
	d := startDaemon(t, tree)
	nc := filepath.Join(d.mnt, "dataset.nc")
	header := ncdump(t, "-h", nc)
	for _, want := range []string{
		"\tfloat good(y, x) ;",
		"\tint bad(y, w) ;",
		`:nczarrfs_omitted = "cplx: dtype <c8 has no netCDF classic type\n",`,
		`"flags: dtype |b1 has no netCDF classic type\n",`,
		`"names: variable-length elements (dtype |O) have no netCDF classic type" ;`,
	} {
		if !strings.Contains(header, want) {
			t.Errorf("ncdump -h lacks %q:\n%s", want, header)
		}
	}
	f, err := os.Open(nc)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, _ := f.Stat()
	begins := classicBegins(t, f)
	// good: 12 floats; bad: 4096 ints, the second chunk (rows 2-3) corrupt.
	good, bad := begins["good"], begins["bad"]
	if good == 0 || bad == 0 {
		t.Fatalf("begins %v", begins)
	}
	// The file is read through the page cache in granules of 1 MiB cut
	// to each variable: a failure covers bad's granule, whose first
	// chunk is good, and no other variable's bytes; every variable
	// begins on st_blksize.
	blk := st.Sys().(*syscall.Stat_t).Blksize
	if good%blk != 0 || bad%blk != 0 {
		t.Errorf("begins %d, %d not on st_blksize %d", good, bad, blk)
	}
	buf := make([]byte, 8192)
	if _, err := f.ReadAt(buf[:48], good); err != nil {
		t.Errorf("reading good: %v", err)
	}
	if _, err := f.ReadAt(buf, bad); !errors.Is(err, syscall.EIO) {
		t.Errorf("reading bad's first chunk, in the corrupt one's granule: %v, want EIO", err)
	}
	if _, err := f.ReadAt(buf[:4], bad+8192+100); !errors.Is(err, syscall.EIO) {
		t.Errorf("reading bad's corrupt chunk: %v, want EIO", err)
	}
	if _, err := f.ReadAt(buf[:48], good); err != nil {
		t.Errorf("reading good after bad failed: %v", err)
	}
	if _, err := f.ReadAt(make([]byte, st.Size()), 0); !errors.Is(err, syscall.EIO) {
		t.Errorf("reading the whole file: %v, want EIO", err)
	}
	if !strings.Contains(d.output.String(), "bad/1.0") {
		t.Errorf("no log line names the chunk bad/1.0:\n%s", d.output.String())
	}
	if got := ncdump(t, "-v", "good", "-h", nc); !strings.Contains(got, "good") {
		t.Errorf("ncdump -v good: %s", got)
	}
	// info.json says where each array is, or why it is not.
	for _, tc := range []struct{ array, want string }{
		{"good", `{"file":"/dataset.nc","format":"64-bit offset"}`},
		{"flags", `{"file":"/dataset.nc","format":"64-bit offset","omitted":"dtype |b1 has no netCDF classic type"}`},
	} {
		b, err := os.ReadFile(filepath.Join(d.mnt, tc.array, "info.json"))
		if err != nil {
			t.Fatal(err)
		}
		var info struct {
			NetCDF json.RawMessage `json:"netcdf_classic"`
		}
		if err := json.Unmarshal(b, &info); err != nil {
			t.Fatal(err)
		}
		var compact bytes.Buffer
		json.Compact(&compact, info.NetCDF)
		if compact.String() != tc.want {
			t.Errorf("%s/info.json netcdf_classic: %s, want %s", tc.array, compact.String(), tc.want)
		}
	}
	// export fails, naming the chunk, and leaves no file; the empty
	// group exports.
	out := filepath.Join(dir, "odd.nc")
	if r := nczarrfsCommand(t, "export", tree, "-o", out); r.err == nil || !strings.Contains(r.stderr, "bad/1.0") {
		t.Errorf("export of a corrupt chunk: %v\n%s", r.err, r.stderr)
	}
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a failed export left %s: %v", out, err)
	}
	if r := nczarrfsCommand(t, "export", tree, "/empty", "-o", out); r.err != nil {
		t.Errorf("export of the empty group: %v\n%s", r.err, r.stderr)
	}
	empty := ncdump(t, filepath.Join(d.mnt, "empty", "dataset.nc"))
	if exported := ncdump(t, out); exported != empty {
		t.Errorf("ncdump of the exported empty group:\n%s\nof its dataset.nc:\n%s", exported, empty)
	}
	if !strings.Contains(empty, `:comment = "a group with no arrays" ;`) || strings.Contains(empty, "variables:") || strings.Contains(empty, "nczarrfs_omitted") {
		t.Errorf("ncdump of the empty group:\n%s", empty)
	}
}

// classicBegins reads the begins of a classic file's variables with the
// test's own parse of the header (independent of describe/netcdf3).
func classicBegins(t *testing.T, f *os.File) map[string]int64 {
	t.Helper()
	b := make([]byte, 4096)
	n, _ := f.ReadAt(b, 0)
	b = b[:n]
	if len(b) < 4 || string(b[:3]) != "CDF" || (b[3] != 2 && b[3] != 5) {
		t.Fatalf("no CDF-2 or CDF-5 header: %q", b[:min(8, len(b))])
	}
	five := b[3] == 5
	i := 4
	u32 := func() int64 {
		v := int64(b[i])<<24 | int64(b[i+1])<<16 | int64(b[i+2])<<8 | int64(b[i+3])
		i += 4
		return v
	}
	u64 := func() int64 { v := u32()<<32 | u32(); return v }
	nonNeg := func() int64 {
		if five {
			return u64()
		}
		return u32()
	}
	name := func() string {
		l := int(nonNeg())
		s := string(b[i : i+l])
		i += (l + 3) &^ 3
		return s
	}
	size := map[int64]int64{1: 1, 2: 1, 3: 2, 4: 4, 5: 4, 6: 8, 7: 1, 8: 2, 9: 4, 10: 8, 11: 8}
	attrs := func() {
		u32()
		for range nonNeg() {
			name()
			typ := u32()
			i += int((nonNeg()*size[typ] + 3) &^ 3)
		}
	}
	nonNeg() // numrecs
	u32()
	for range nonNeg() {
		name()
		nonNeg()
	}
	attrs()
	u32()
	out := map[string]int64{}
	for range nonNeg() {
		v := name()
		for range nonNeg() {
			nonNeg()
		}
		attrs()
		u32()
		nonNeg()
		out[v] = u64()
	}
	return out
}

// TestClassicS3: on S3 (MinIO), read lazily, dataset.nc shows size 0
// until its first open makes it (ls -l reads no array's metadata), then
// its exact size; ncdump of it equals ncdump of the one a local mount of
// the same tree serves.
func TestClassicS3(t *testing.T) {
	requireTools(t, "ncgen", "ncdump")
	srv := miniotest.Start(t)
	s3Env(t, srv)
	srv.CreateBucket(t, "classic")
	tree := nczarrFromCDL(t, t.TempDir(), "classic", fixtureCDL(t, "classic.cdl"))
	classicScript(t, "deflate", tree)
	srv.PutTree(t, "classic", "ds", tree)
	local := filepath.Join(mount(t, tree), "dataset.nc")
	remote := filepath.Join(mount(t, srv.Endpoint+"/classic/ds#mode=nczarr,s3"), "dataset.nc")
	st, err := os.Stat(remote)
	if err != nil {
		t.Fatal(err)
	}
	if st.Size() != 0 {
		t.Errorf("dataset.nc made at a stat (size %d): it reads every array's metadata", st.Size())
	}
	sameLines(t, "ncdump", ncdump(t, remote), ncdump(t, local))
	want, err := os.Stat(local)
	if err != nil {
		t.Fatal(err)
	}
	if st, err = os.Stat(remote); err != nil || st.Size() != want.Size() {
		t.Errorf("stat after the open: %v, %v; want size %d", st.Size(), err, want.Size())
	}
}
