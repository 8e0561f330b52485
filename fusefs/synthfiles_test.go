package fusefs

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"golang.org/x/sys/unix"

	"github.com/nczarrfs/nczarrfs/internal/miniotest"
	"github.com/nczarrfs/nczarrfs/internal/testenv"
	"github.com/nczarrfs/nczarrfs/zmap/file"
	zmaps3 "github.com/nczarrfs/nczarrfs/zmap/s3"
	zmapzip "github.com/nczarrfs/nczarrfs/zmap/zip"
)

// The tests in this file check the synthesized files of a real FUSE mount
// with the tools they are made for: numpy.load, jq, gdalinfo and
// gdal_translate, getfattr, ncdump.

// mountZarr writes a dataset with the zarr-python script (run with the
// folder as its argument, writing the group ds in it) and mounts it.
func mountZarr(t *testing.T, script string) (dir, mnt string) {
	t.Helper()
	dir = t.TempDir()
	zarrPython(t, dir, script)
	store, err := file.Open(filepath.Join(dir, "ds"))
	if err != nil {
		t.Fatal(err)
	}
	mnt, _ = mountCounted(t, store)
	return dir, mnt
}

// python runs a check script with the given arguments and fails the test
// with its output when it fails.
func python(t *testing.T, script string, args ...string) {
	t.Helper()
	out, err := exec.Command(testenv.Python, append([]string{"-c", script}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("check script: %v\n%s", err, out)
	}
}

// tool returns the path of a command the test needs, or skips (fails under
// make test) when it is not installed.
func tool(t *testing.T, name, pkg string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	testenv.Require(t, name+" (Debian package "+pkg+")", err)
	return p
}

const npyFixture = `import sys, zarr, numpy as np, numcodecs
g = zarr.open_group(sys.argv[1] + "/ds", mode="w")
def put(name, a, chunks, **kw):
    g.create_dataset(name, shape=a.shape, chunks=chunks, dtype=a.dtype, **kw)[...] = a
put("be3", (np.arange(60) * 1.5).astype(">f8").reshape(3, 4, 5), (2, 3, 2), compressor=numcodecs.Zlib())
put("i2", np.arange(-3, 4, dtype="<i2"), (3,), compressor=None)
put("b", np.array([[True, False, True], [False, False, True]]), (1, 2))
put("z0", np.array(7, dtype="<i4"), ())
put("s", np.array([b"ab", b"cde", b"", b"f"], dtype="|S3"), (3,))
put("u", np.array(["x", "yz", "\u00e9"], dtype=">U2"), (2,))
put("f", np.arange(12, dtype="<u2").reshape(3, 4), (2, 3), order="F")
put("c", np.array([[1+2j, -3j], [0.5, 4]], dtype="<c16"), (1, 2))
put("dt", np.array(["2020-01-01", "2021-06-30"], dtype="<M8[D]"), (1,))
`

// TestNPYLoadsInNumpy loads every data.npy with numpy.load, read and
// memory-mapped, and compares it with zarr-python's reading of the array.
func TestNPYLoadsInNumpy(t *testing.T) {
	dir, mnt := mountZarr(t, npyFixture)
	python(t, `import sys, zarr, numpy as np
from numpy.lib import format as npf
g = zarr.open_group(sys.argv[1] + "/ds", mode="r")
names = sorted(g.array_keys())
assert len(names) == 9, names
for name in names:
    want = g[name][...]
    path = sys.argv[2] + "/" + name + "/data.npy"
    for mmap in (None, "r"):
        got = np.load(path, mmap_mode=mmap)
        assert got.dtype == want.dtype.newbyteorder("<"), (name, mmap, got.dtype, want.dtype)
        assert got.shape == want.shape, (name, mmap, got.shape, want.shape)
        assert np.array_equal(got, want), (name, mmap, got, want)
        if mmap:
            assert isinstance(got, np.memmap), (name, type(got))
    with open(path, "rb") as f:
        version = npf.read_magic(f)
        npf._read_array_header(f, version)
        assert f.tell() % 64 == 0, (name, f.tell())
    raw = open(sys.argv[2] + "/" + name + "/data", "rb").read()
    assert open(path, "rb").read()[-len(raw):] == raw or len(raw) == 0, name
`, dir, mnt)
}

// TestInfoJSON checks info.json against zarr-python's view of the array,
// and that jq reads it.
func TestInfoJSON(t *testing.T) {
	jq := tool(t, "jq", "jq")
	dir, mnt := mountZarr(t, `import sys, zarr, numpy as np, numcodecs
g = zarr.open_group(sys.argv[1] + "/ds", mode="w")
a = g.create_dataset("sub/t", shape=(4, 3, 5), chunks=(2, 3, 5), dtype=">f8", fill_value=-999.0,
                     compressor=numcodecs.Zlib(level=3), filters=[numcodecs.Shuffle(elementsize=8)])
a[...] = np.arange(60).reshape(4, 3, 5)
a.attrs.update({"_ARRAY_DIMENSIONS": ["time", "y", "x"], "units": "K", "valid_range": [0, 100], "scale": 0.5})
`)
	info := filepath.Join(mnt, "sub", "t", InfoName)
	python(t, `import sys, json, zarr, numpy as np
a = zarr.open_group(sys.argv[1] + "/ds", mode="r")["sub/t"]
info = json.load(open(sys.argv[2]))
want_attrs = {k: v for k, v in a.attrs.asdict().items() if k != "_ARRAY_DIMENSIONS"}
checks = {
    "name": (info["name"], "t"),
    "path": (info["path"], "/sub/t"),
    "shape": (info["shape"], list(a.shape)),
    "chunks": (info["chunks"], list(a.chunks)),
    "dtype": (info["dtype"], a.dtype.newbyteorder("<").str),
    "stored_dtype": (info["stored_dtype"], a.dtype.str),
    "itemsize": (info["itemsize"], a.dtype.itemsize),
    "data_size": (info["data_size"], a.nbytes),
    "fill_value": (info["fill_value"], a.fill_value),
    "dimensions": ([(d["name"], d["size"]) for d in info["dimensions"]],
                   list(zip(a.attrs["_ARRAY_DIMENSIONS"], a.shape))),
    "attributes": ({k: v["value"] for k, v in info["attributes"].items()}, want_attrs),
    "codecs": ([c["id"] for c in info["codecs"]], [f.codec_id for f in a.filters] + [a.compressor.codec_id]),
    "configuration": (info["codecs"][-1]["configuration"], a.compressor.get_config()),
}
bad = {k: v for k, v in checks.items() if v[0] != v[1]}
assert not bad, bad
assert "error" not in info, info["error"]
`, dir, info)
	out, err := exec.Command(jq, "-c", ".shape, .attributes.units.value", info).Output()
	if err != nil {
		t.Fatalf("jq: %v", err)
	}
	if string(out) != "[4,3,5]\n\"K\"\n" {
		t.Errorf("jq printed %q", out)
	}
}

// TestVRTWithGDAL opens data.vrt with gdalinfo and converts it with
// gdal_translate; the pixels must be zarr-python's reading of the array.
func TestVRTWithGDAL(t *testing.T) {
	gdalinfo := tool(t, "gdalinfo", "gdal-bin")
	translate := tool(t, "gdal_translate", "gdal-bin")
	dir, mnt := mountZarr(t, `import sys, zarr, numpy as np, numcodecs
g = zarr.open_group(sys.argv[1] + "/ds", mode="w")
t = (np.arange(60) * 0.25).astype(">f4").reshape(3, 4, 5)
t[1, 2, 3] = -999
g.create_dataset("t", shape=t.shape, chunks=(2, 3, 2), dtype=t.dtype, fill_value=-999,
                 compressor=numcodecs.Zlib())[...] = t
m = (np.arange(42) - 20).astype("<i2").reshape(6, 7)
g.create_dataset("m", shape=m.shape, chunks=(4, 4), dtype=m.dtype, fill_value=None, compressor=None)[...] = m
g.create_dataset("v", shape=(5,), chunks=(5,), dtype="<f4")
for name in ("t", "m"):
    a = g[name][...]
    a.astype(a.dtype.newbyteorder("<")).tofile(sys.argv[1] + "/" + name + ".bin")
`)
	for _, tc := range []struct {
		array    string
		bands    int
		gdalType string
		x, y     int
		noData   any // nil when the array has no fill value
	}{
		{array: "t", bands: 3, gdalType: "Float32", x: 5, y: 4, noData: -999.0},
		{array: "m", bands: 1, gdalType: "Int16", x: 7, y: 6},
	} {
		vrt := filepath.Join(mnt, tc.array, VRTName)
		out, err := exec.Command(gdalinfo, "-json", vrt).Output()
		if err != nil {
			t.Fatalf("gdalinfo %s: %v", vrt, err)
		}
		var info struct {
			Size  []int `json:"size"`
			Bands []struct {
				Type        string `json:"type"`
				NoDataValue any    `json:"noDataValue"`
			} `json:"bands"`
		}
		if err := json.Unmarshal(out, &info); err != nil {
			t.Fatalf("gdalinfo -json: %v\n%s", err, out)
		}
		if len(info.Size) != 2 || info.Size[0] != tc.x || info.Size[1] != tc.y || len(info.Bands) != tc.bands {
			t.Errorf("%s: gdalinfo size %v, %d bands; want [%d %d], %d", tc.array, info.Size, len(info.Bands), tc.x, tc.y, tc.bands)
		}
		for i, b := range info.Bands {
			if b.Type != tc.gdalType || b.NoDataValue != tc.noData {
				t.Errorf("%s band %d: type %s, nodata %v; want %s, %v", tc.array, i+1, b.Type, b.NoDataValue, tc.gdalType, tc.noData)
			}
		}
		// ENVI is raw band after band, in the machine's (little-endian)
		// order: for these arrays, exactly the C-order elements.
		dst := filepath.Join(t.TempDir(), tc.array+".envi")
		if out, err := exec.Command(translate, "-q", "-of", "ENVI", vrt, dst).CombinedOutput(); err != nil {
			t.Fatalf("gdal_translate %s: %v\n%s", vrt, err, out)
		}
		got, err := os.ReadFile(dst)
		if err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile(filepath.Join(dir, tc.array+".bin"))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: gdal_translate wrote %d bytes that differ from zarr-python's %d", tc.array, len(got), len(want))
		}
	}
	// A 1-D array gets no VRT.
	if _, err := os.Stat(filepath.Join(mnt, "v", VRTName)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("1-D array: stat %s: %v, want not found", VRTName, err)
	}
}

// TestXattrs reads the attributes zarr-python wrote as extended attributes
// of the array's directory, data and data.npy, with getfattr and with
// Python's os.getxattr.
func TestXattrs(t *testing.T) {
	getfattr := tool(t, "getfattr", "attr")
	dir, mnt := mountZarr(t, `import sys, zarr
g = zarr.open_group(sys.argv[1] + "/ds", mode="w")
g.attrs["title"] = "a test"
a = g.create_dataset("v", shape=(2, 3), chunks=(2, 3), dtype="<i4")
a.attrs.update({"units": "K", "valid_range": [0, 100], "scale": 0.5, "names": ["a", "b"], "one": ["c"], "nested": {"k": [1, 2]}})
`)
	// The value of each attribute, as docs/tree.md says: strings as they
	// are, anything else as compact JSON.
	python(t, `import sys, os, json, zarr
g = zarr.open_group(sys.argv[1] + "/ds", mode="r")
def want(attrs):
    out = {}
    for k, v in attrs.items():
        if isinstance(v, list) and len(v) == 1 and isinstance(v[0], str):
            v = v[0]
        out["user." + k] = (v if isinstance(v, str) else json.dumps(v, separators=(",", ":"))).encode()
    return out
mnt = sys.argv[2]
for path, attrs in [("", g.attrs), ("v", g["v"].attrs), ("v/data", g["v"].attrs), ("v/data.npy", g["v"].attrs)]:
    p = os.path.join(mnt, path)
    got = {n: os.getxattr(p, n) for n in os.listxattr(p)}
    assert got == want(attrs.asdict()), (path, got, want(attrs.asdict()))
try:
    os.getxattr(os.path.join(mnt, "v/data"), "user.missing")
    raise SystemExit("user.missing exists")
except OSError as e:
    import errno
    assert e.errno == errno.ENODATA, e
assert os.listxattr(os.path.join(mnt, "v/.zarray")) == []
`, dir, mnt)
	out, err := exec.Command(getfattr, "-d", filepath.Join(mnt, "v", DataName)).Output()
	if err != nil {
		t.Fatalf("getfattr: %v", err)
	}
	for _, line := range []string{`user.units="K"`, `user.valid_range="[0,100]"`} {
		if !strings.Contains(string(out), "\n"+line+"\n") {
			t.Errorf("getfattr -d shows no line %s:\n%s", line, out)
		}
	}
	// A buffer too small for a value is ERANGE, as listxattr(2) says.
	if n, err := unix.Getxattr(filepath.Join(mnt, "v", DataName), "user.units", nil); n != 1 || err != nil {
		t.Errorf("size query of user.units: %d, %v; want 1", n, err)
	}
	if _, err := unix.Getxattr(filepath.Join(mnt, "v", DataName), "user.valid_range", make([]byte, 2)); !errors.Is(err, syscall.ERANGE) {
		t.Errorf("getxattr into 2 bytes: %v, want ERANGE", err)
	}
}

// TestHeaderCDLMatchesNcdump compares the root's header.cdl with what
// Debian's ncdump -h prints for the same dataset (unzipped: Debian's
// netcdf-c is built without zip support).
func TestHeaderCDLMatchesNcdump(t *testing.T) {
	ncdump := tool(t, "ncdump", "netcdf-bin")
	mnt, objects := mountSample(t)
	tree := filepath.Join(t.TempDir(), "sample.file")
	for key, b := range objects {
		name := filepath.Join(tree, filepath.FromSlash(key))
		if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(name, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := exec.Command(ncdump, "-h", "file://"+tree+"#mode=nczarr,file").Output()
	if err != nil {
		t.Fatalf("ncdump -h: %v", err)
	}
	got, err := os.ReadFile(filepath.Join(mnt, HeaderName))
	if err != nil {
		t.Fatal(err)
	}
	// The first line names the dataset: "sample" for ncdump, "dataset"
	// for a mount without Options.Name.
	if want := strings.Replace(string(want), "netcdf sample {", "netcdf dataset {", 1); string(got) != want {
		t.Errorf("header.cdl:\n%s\nncdump -h:\n%s", got, want)
	}
	// With a name, the first line is ncdump's too.
	store := openSample(t)
	mnt, _ = mountWith(t, store, Options{Name: "sample"})
	if got, err := os.ReadFile(filepath.Join(mnt, HeaderName)); err != nil || string(got) != string(want) {
		t.Errorf("header.cdl named sample: %v\n%s", err, got)
	}
}

// mtime is the modification time stat reports for name.
func mtime(t *testing.T, name string) time.Time {
	t.Helper()
	fi, err := os.Stat(name)
	if err != nil {
		t.Fatal(err)
	}
	return fi.ModTime()
}

// TestTimesFromTheStore sets the times of the stored files and checks
// what the mount shows, across two mounts.
func TestTimesFromTheStore(t *testing.T) {
	dir := t.TempDir()
	zarrPython(t, dir, `import sys, zarr
g = zarr.open_group(sys.argv[1] + "/ds", mode="w")
g.create_dataset("v", shape=(4, 2), chunks=(2, 2), dtype="<i2", dimension_separator="/")[...] = 7
g.create_group("sub").create_dataset("w", shape=(2,), chunks=(2,), dtype="<i2")[...] = [5, 6]
`)
	ds := filepath.Join(dir, "ds")
	base := time.Date(2001, 2, 3, 4, 5, 6, 789000000, time.UTC)
	times := map[string]time.Time{
		".zgroup":       base,
		"v/.zarray":     base.Add(time.Hour),
		"v/0":           base.Add(2 * time.Hour), // the folder of chunk 0/...
		"v/0/0":         base.Add(3 * time.Hour), // dimension_separator "/"
		"sub/.zgroup":   base.Add(4 * time.Hour),
		"sub/w/.zarray": base.Add(5 * time.Hour),
	}
	for name, tm := range times {
		if err := os.Chtimes(filepath.Join(ds, name), tm, tm); err != nil {
			t.Fatal(err)
		}
	}
	store, err := file.Open(ds)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 { // the same on a second mount
		mnt, _ := mountCounted(t, store)
		for _, tc := range []struct {
			path string
			want time.Time
		}{
			{"", times[".zgroup"]},
			{".zgroup", times[".zgroup"]},
			{HeaderName, times[".zgroup"]},
			{IndexName, times[".zgroup"]},
			{ControlDir, times[".zgroup"]},
			{"v", times["v/.zarray"]},
			{"v/.zarray", times["v/.zarray"]},
			{"v/" + DataName, times["v/.zarray"]},
			{"v/" + NPYName, times["v/.zarray"]},
			{"v/" + InfoName, times["v/.zarray"]},
			{"v/" + PreviewName, times["v/.zarray"]},
			{"v/0", times["v/.zarray"]}, // a chunk folder: its array's
			{"v/0/0", times["v/0/0"]},
			{"sub", times["sub/.zgroup"]},
			{"sub/" + IndexName, times["sub/.zgroup"]},
			{"sub/w", times["sub/w/.zarray"]},
			{"sub/w/" + DataName, times["sub/w/.zarray"]},
		} {
			if got := mtime(t, filepath.Join(mnt, tc.path)); !got.Equal(tc.want) {
				t.Errorf("mtime of %q = %v, want %v", tc.path, got, tc.want)
			}
		}
	}
}

// TestTimesFromAZip checks that entries take the time Python's zipfile
// wrote in them: MS-DOS date and time, taken as UTC.
func TestTimesFromAZip(t *testing.T) {
	dir := t.TempDir()
	zarrPython(t, dir, `import sys, os, zarr, zipfile
d = sys.argv[1]
zarr.open_group(d + "/ds", mode="w").create_dataset("v", shape=(2,), chunks=(2,), dtype="<i2")[...] = [1, 2]
with zipfile.ZipFile(d + "/ds.zip", "w") as z:
    for i, name in enumerate([".zgroup", "v/.zarray", "v/0"]):
        info = zipfile.ZipInfo(name, date_time=(2010, 5, 6, 7, 8, 10 + 2 * i))
        z.writestr(info, open(d + "/ds/" + name, "rb").read())
with open(d + "/times", "w") as f:
    for info in zipfile.ZipFile(d + "/ds.zip").infolist():
        print(info.filename, "%04d-%02d-%02dT%02d:%02d:%02dZ" % info.date_time, file=f)
`)
	store, err := zmapzip.Open(filepath.Join(dir, "ds.zip"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	mnt, _ := mountCounted(t, store)
	b, err := os.ReadFile(filepath.Join(dir, "times"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]time.Time{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		name, stamp, _ := strings.Cut(line, " ")
		tm, err := time.Parse(time.RFC3339, stamp)
		if err != nil {
			t.Fatal(err)
		}
		want[name] = tm
	}
	for path, wantName := range map[string]string{
		".zgroup": ".zgroup", "": ".zgroup", "v/.zarray": "v/.zarray", "v": "v/.zarray",
		"v/" + DataName: "v/.zarray", "v/0": "v/0",
	} {
		if got := mtime(t, filepath.Join(mnt, path)); !got.Equal(want[wantName]) {
			t.Errorf("mtime of %q = %v, want %v (%s)", path, got, want[wantName], wantName)
		}
	}
}

// TestOwnerAndUmask mounts with Options.UID, GID and Umask.
func TestOwnerAndUmask(t *testing.T) {
	store := openSample(t)
	uid, gid := uint32(1234), uint32(5678)
	mnt, _ := mountWith(t, store, Options{UID: &uid, GID: &gid, Umask: 0o027})
	for path, mode := range map[string]os.FileMode{
		"":                        os.ModeDir | 0o550,
		"temperature":             os.ModeDir | 0o550,
		"temperature/.zarray":     0o440,
		"temperature/" + DataName: 0o440,
		"temperature/" + NPYName:  0o440,
		HeaderName:                0o440,
	} {
		fi, err := os.Stat(filepath.Join(mnt, path))
		if err != nil {
			t.Fatal(err)
		}
		st := fi.Sys().(*syscall.Stat_t)
		if fi.Mode() != mode || st.Uid != uid || st.Gid != gid {
			t.Errorf("%q: mode %v, owner %d:%d; want %v, %d:%d", path, fi.Mode(), st.Uid, st.Gid, mode, uid, gid)
		}
	}
}

// TestTimesFromS3 checks that objects take S3's LastModified (as
// HeadObject gives it, in whole seconds), whether found by a lookup (a
// HEAD) or in a listing first, and that arrays take their .zarray's.
func TestTimesFromS3(t *testing.T) {
	srv := miniotest.Start(t)
	for _, kv := range srv.Env() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	dir := t.TempDir()
	zarrPython(t, dir, `import sys, zarr
g = zarr.open_group(sys.argv[1] + "/ds", mode="w")
g.create_dataset("v", shape=(2, 2), chunks=(1, 2), dtype="<i2")[...] = 3
`)
	srv.CreateBucket(t, "times")
	srv.PutTree(t, "times", "ds", filepath.Join(dir, "ds"))
	client := srv.Client(t)
	lastModified := func(key string) time.Time {
		out, err := client.HeadObject(context.Background(), &awss3.HeadObjectInput{Bucket: aws.String("times"), Key: aws.String("ds/" + key)})
		if err != nil || out.LastModified == nil {
			t.Fatalf("HeadObject %s: %v", key, err)
		}
		return *out.LastModified
	}
	loc, err := zmaps3.ParseURL(srv.Endpoint + "/times/ds#mode=zarr,s3")
	if err != nil {
		t.Fatal(err)
	}
	store, err := zmaps3.Open(context.Background(), loc, zmaps3.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	for _, listFirst := range []bool{false, true} {
		mnt, _ := mountCounted(t, store)
		if listFirst {
			if _, err := os.ReadDir(filepath.Join(mnt, "v")); err != nil {
				t.Fatal(err)
			}
		}
		for path, key := range map[string]string{
			"": ".zgroup", ".zgroup": ".zgroup", "v": "v/.zarray", "v/.zarray": "v/.zarray",
			"v/0.0": "v/0.0", "v/1.0": "v/1.0", "v/" + DataName: "v/.zarray",
		} {
			if got, want := mtime(t, filepath.Join(mnt, path)), lastModified(key); !got.Equal(want) {
				t.Errorf("listFirst %v: mtime of %q = %v, want %v (LastModified of %s)", listFirst, path, got, want, key)
			}
		}
	}
}
