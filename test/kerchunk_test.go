package test

// Kerchunk reference sets (zmap/kerchunk): a netCDF-4 file that
// netCDF4-python writes and an HDF5 file that h5py writes, at test time,
// referenced as kerchunk's SingleHdf5ToZarr references them
// (test/fixtures/kerchunk_refs.py), mounted from local reference files and
// Parquet folders, and with the originals and references in MinIO.

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/nczarrfs/nczarrfs/internal/miniotest"
	"github.com/nczarrfs/nczarrfs/internal/netem"
	"github.com/nczarrfs/nczarrfs/zmap/kerchunk"
)

// kerchunkFiles is what kerchunk_refs.py wrote, once per test process.
type kerchunkFiles struct {
	dir    string
	nc, h5 []string // variable paths
}

var kerchunkGen struct {
	once sync.Once
	kf   kerchunkFiles
	err  error
}

func kerchunkFixture(t *testing.T) kerchunkFiles {
	t.Helper()
	requireTools(t, python)
	kerchunkGen.once.Do(func() {
		root, err := moduleRoot()
		if err != nil {
			kerchunkGen.err = err
			return
		}
		dir, err := os.MkdirTemp(workDir, "kerchunk")
		if err != nil {
			kerchunkGen.err = err
			return
		}
		out, err := exec.Command(python, filepath.Join(root, "test", "fixtures", "kerchunk_refs.py"), dir).CombinedOutput()
		if err != nil {
			kerchunkGen.err = fmt.Errorf("kerchunk_refs.py: %v\n%s", err, out)
			return
		}
		kf := kerchunkFiles{dir: dir}
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			f := strings.Fields(line)
			switch {
			case len(f) > 0 && f[0] == "nc":
				kf.nc = f[1:]
			case len(f) > 0 && f[0] == "h5":
				kf.h5 = f[1:]
			}
		}
		if len(kf.nc) == 0 || len(kf.h5) == 0 {
			kerchunkGen.err = fmt.Errorf("kerchunk_refs.py named no variables:\n%s", out)
		}
		kerchunkGen.kf = kf
	})
	if kerchunkGen.err != nil {
		t.Fatal(kerchunkGen.err)
	}
	return kerchunkGen.kf
}

// refs returns reference file name with its placeholders replaced.
func (kf kerchunkFiles) refs(t *testing.T, name string, repl ...string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(kf.dir, "refs", name))
	if err != nil {
		t.Fatal(err)
	}
	return []byte(strings.NewReplacer(repl...).Replace(string(b)))
}

func writeFile(t *testing.T, p string, data []byte) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// checkKerchunkVars checks that the mounted data of every variable
// equals the generator's raw read of the original, bit for bit.
func checkKerchunkVars(t *testing.T, mnt string, kf kerchunkFiles, kind string, vars []string) {
	t.Helper()
	for _, v := range vars {
		want, err := os.ReadFile(filepath.Join(kf.dir, "expected", kind+"."+strings.ReplaceAll(v, "/", ".")+".bin"))
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(mnt, v, "data"))
		if err != nil {
			t.Errorf("%s/data: %v", v, err)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s/data: %d bytes differ from the original's %d", v, len(got), len(want))
		}
	}
}

// pqRow is a row of a Parquet record file, as fsspec writes it.
type pqRow struct {
	Path   *string `parquet:"path,optional,dict"`
	Offset int64   `parquet:"offset"`
	Size   int64   `parquet:"size"`
	Raw    []byte  `parquet:"raw,optional"`
}

// writeParquetRefs writes a JSON reference set as a Parquet reference
// folder (fsspec's LazyReferenceMapper layout), recordSize rows a file,
// the last file padded as fsspec pads it.
func writeParquetRefs(t *testing.T, doc []byte, dir string, recordSize int) {
	t.Helper()
	set, err := kerchunk.ParseJSON(doc)
	if err != nil {
		t.Fatal(err)
	}
	meta := map[string]json.RawMessage{}
	arrays := map[string][]int64{}
	for k, r := range set {
		name := k[strings.LastIndexByte(k, '/')+1:]
		if !strings.HasPrefix(name, ".") {
			continue
		}
		meta[k] = r.Data
		if name == ".zarray" {
			var za struct{ Shape, Chunks []int64 }
			if err := json.Unmarshal(r.Data, &za); err != nil {
				t.Fatal(err)
			}
			grid := []int64{1}
			if len(za.Shape) > 0 {
				grid = make([]int64, len(za.Shape))
				for d := range grid {
					grid[d] = (za.Shape[d] + za.Chunks[d] - 1) / za.Chunks[d]
				}
			}
			arrays[strings.TrimSuffix(strings.TrimSuffix(k, ".zarray"), "/")] = grid
		}
	}
	zm, err := json.Marshal(map[string]any{"metadata": meta, "record_size": recordSize})
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, ".zmetadata"), zm)
	for p, grid := range arrays {
		n := int64(1)
		for _, g := range grid {
			n *= g
		}
		var rows []pqRow
		for c := int64(0); c < n || len(rows)%recordSize != 0; c++ {
			var row pqRow
			if c < n {
				idx := make([]string, len(grid))
				rest := c
				for d := len(grid) - 1; d >= 0; d-- {
					idx[d] = fmt.Sprint(rest % grid[d])
					rest /= grid[d]
				}
				if r, ok := set[p+"/"+strings.Join(idx, ".")]; ok {
					if r.URL == "" {
						row.Raw = r.Data
					} else {
						u := r.URL
						row.Path, row.Offset, row.Size = &u, r.Off, r.Len
					}
				}
			}
			rows = append(rows, row)
			if len(rows) == recordSize {
				var b bytes.Buffer
				if err := parquet.Write(&b, rows); err != nil {
					t.Fatal(err)
				}
				writeFile(t, filepath.Join(dir, p, fmt.Sprintf("refs.%d.parq", c/int64(recordSize))), b.Bytes())
				rows = nil
			}
		}
	}
}

// TestKerchunkLocal mounts local reference sets of local files: JSON v0
// with bare paths, v1 with a template and inlined chunks, v0 gzipped, a
// Parquet folder and the HDF5 file's references; every variable's data
// equals the original's, and dataset.nc reads as the original through
// netCDF4-python. Reference files that are not JSON or hold no refs are
// refused in one line, exit status 1.
func TestKerchunkLocal(t *testing.T) {
	kf := kerchunkFixture(t)
	dir := t.TempDir()
	nc, h5 := filepath.Join(kf.dir, "orig.nc"), filepath.Join(kf.dir, "orig.h5")
	v0 := kf.refs(t, "v0.json", `"ORIGNC"`, fmt.Sprintf("%q", nc))
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(v0)
	zw.Close()
	writeParquetRefs(t, v0, filepath.Join(dir, "refs.parq"), 5)
	sources := []struct {
		name, src, kind string
	}{
		{"v0", writeFile(t, filepath.Join(dir, "v0.json"), v0), "nc"},
		{"v1", writeFile(t, filepath.Join(dir, "v1.json"), kf.refs(t, "v1.json", `"ORIGNC"`, fmt.Sprintf("%q", "file://"+nc))), "nc"},
		{"gzip", writeFile(t, filepath.Join(dir, "refs.json.gz"), gz.Bytes()), "nc"},
		{"parquet", filepath.Join(dir, "refs.parq"), "nc"},
		{"h5", writeFile(t, filepath.Join(dir, "h5.json"), kf.refs(t, "h5.json", `"ORIGH5"`, fmt.Sprintf("%q", h5))), "h5"},
	}
	for _, s := range sources {
		t.Run(s.name, func(t *testing.T) {
			mnt := mount(t, s.src)
			vars := kf.nc
			if s.kind == "h5" {
				vars = kf.h5
			}
			checkKerchunkVars(t, mnt, kf, s.kind, vars)
			if s.name != "v0" {
				return
			}
			// dataset.nc holds the original's values and attributes.
			script := `
import sys, numpy as np, netCDF4
with netCDF4.Dataset(sys.argv[1]) as d, netCDF4.Dataset(sys.argv[2]) as o:
    d.set_auto_maskandscale(False); o.set_auto_maskandscale(False)
    n = 0
    for name, v in o.variables.items():
        w = d.variables[name]
        assert np.array_equal(np.asarray(w[...]), np.asarray(v[...])), name
        for a in v.ncattrs():
            if a != "_FillValue":
                assert str(w.getncattr(a)) == str(v.getncattr(a)), (name, a)
        n += 1
    print("ok", n)
`
			out := run(t, python, "-c", script, filepath.Join(mnt, "dataset.nc"), nc)
			if !strings.HasPrefix(string(out), "ok 6") {
				t.Errorf("dataset.nc: %s", out)
			}
		})
	}
	t.Run("broken reference", func(t *testing.T) {
		// One chunk of temp points past the end of the file: temp
		// reads EIO, with a log line naming the key and the URL, and
		// the rest of the mount reads.
		var doc map[string]any
		if err := json.Unmarshal(v0, &doc); err != nil {
			t.Fatal(err)
		}
		doc["temp/0.0.0"] = []any{nc, 1 << 30, 100}
		b, err := json.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		d := startDaemon(t, writeFile(t, filepath.Join(dir, "broken.json"), b))
		if got, err := os.ReadFile(filepath.Join(d.mnt, "temp", "data")); !errors.Is(err, syscall.EIO) {
			t.Errorf("temp/data: %d bytes, %v; want EIO", len(got), err)
		}
		var rest []string
		for _, v := range kf.nc {
			if v != "temp" {
				rest = append(rest, v)
			}
		}
		checkKerchunkVars(t, d.mnt, kf, "nc", rest)
		if out := d.output.String(); !strings.Contains(out, "temp/0.0.0") || !strings.Contains(out, "orig.nc") {
			t.Errorf("no log line names the key and the URL:\n%s", clip(out))
		}
	})
	t.Run("refused", func(t *testing.T) {
		for name, content := range map[string]string{"notjson.json": "CDF\x01 not json", "empty.json": "{}", "v1empty.json": `{"version": 1, "refs": {}}`} {
			p := writeFile(t, filepath.Join(dir, name), []byte(content))
			out, err := mountFails(t, "file://"+p+"#mode=kerchunk")
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 1 {
				t.Errorf("%s: %v, want exit status 1", name, err)
			}
			if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 1 || !strings.Contains(out, "reference") {
				t.Errorf("%s: not one line naming the reference file:\n%s", name, out)
			}
		}
	})
}

// TestKerchunkS3 puts the netCDF-4 file, its references (JSON and
// Parquet) and the same 12-chunk variable as plain Zarr in MinIO, and
// mounts the references from a local file and from the bucket; a
// reference set in the bucket that points at a local file reads EIO.
// 20 ms away, it compares a whole 12-chunk variable read through the
// references with the plain Zarr store.
func TestKerchunkS3(t *testing.T) {
	kf := kerchunkFixture(t)
	srv := miniotest.Start(t)
	s3Env(t, srv)
	srv.CreateBucket(t, "kerchunk")
	dir := t.TempDir()
	nc := filepath.Join(kf.dir, "orig.nc")
	orig, err := os.ReadFile(nc)
	if err != nil {
		t.Fatal(err)
	}
	s3url := fmt.Sprintf("%q", "s3://kerchunk/orig.nc")
	v0 := kf.refs(t, "v0.json", `"ORIGNC"`, s3url)
	writeParquetRefs(t, v0, filepath.Join(dir, "refs.parq"), 7)
	srv.Put(t, "kerchunk", map[string][]byte{
		"orig.nc":         orig,
		"refs/v0.json":    v0,
		"refs/v1.json":    kf.refs(t, "v1.json", `"ORIGNC"`, s3url),
		"refs/local.json": kf.refs(t, "v0.json", `"ORIGNC"`, fmt.Sprintf("%q", "file://"+nc)),
	})
	srv.PutTree(t, "kerchunk", "refs.parq", filepath.Join(dir, "refs.parq"))
	srv.PutTree(t, "kerchunk", "zarr12", filepath.Join(kf.dir, "zarr12"))
	ep := srv.Endpoint
	refsEndpoint := "--references-endpoint=s3://kerchunk/=" + ep

	t.Run("local refs", func(t *testing.T) {
		mnt := mount(t, writeFile(t, filepath.Join(dir, "v1.json"), kf.refs(t, "v1.json", `"ORIGNC"`, s3url)), "--endpoint-url", ep)
		checkKerchunkVars(t, mnt, kf, "nc", kf.nc)
	})
	t.Run("bucket refs", func(t *testing.T) {
		mnt := mount(t, ep+"/kerchunk/refs/v0.json", refsEndpoint)
		checkKerchunkVars(t, mnt, kf, "nc", kf.nc)
	})
	t.Run("bucket parquet", func(t *testing.T) {
		mnt := mount(t, ep+"/kerchunk/refs.parq", refsEndpoint)
		checkKerchunkVars(t, mnt, kf, "nc", kf.nc)
	})
	t.Run("bucket parquet of another name", func(t *testing.T) {
		// Read as Zarr, its .zmetadata would list every array, all of
		// them fill values: the mount refuses it, naming the mode.
		srv.PutTree(t, "kerchunk", "refsfolder", filepath.Join(dir, "refs.parq"))
		out, err := mountFails(t, ep+"/kerchunk/refsfolder", refsEndpoint)
		if err == nil || !strings.Contains(out, "record_size") || !strings.Contains(out, "#mode=kerchunk") {
			t.Errorf("mount of a Parquet reference folder named as a Zarr store: %v\n%s", err, out)
		}
		mnt := mount(t, ep+"/kerchunk/refsfolder#mode=kerchunk", refsEndpoint)
		checkKerchunkVars(t, mnt, kf, "nc", kf.nc)
	})
	t.Run("bucket refs to a local file", func(t *testing.T) {
		mnt := mount(t, ep+"/kerchunk/refs/local.json")
		for _, v := range []string{"temp", "v12", "contig"} {
			b, err := os.ReadFile(filepath.Join(mnt, v, "data"))
			if !errors.Is(err, syscall.EIO) {
				t.Errorf("%s/data: %d bytes, %v; want EIO", v, len(b), err)
			}
		}
	})

	t.Run("cost 20ms away", func(t *testing.T) {
		link := netem.Start(t, srv.Addr, netem.Options{Delay: 10 * time.Millisecond}) // 20 ms a round trip
		far := "http://" + link.Addr
		zmnt := mount(t, far+"/kerchunk/zarr12#mode=zarr,s3")
		kmnt := mount(t, far+"/kerchunk/refs/v0.json", "--references-endpoint=s3://kerchunk/="+far)
		want, err := os.ReadFile(filepath.Join(kf.dir, "expected", "nc.v12.bin"))
		if err != nil {
			t.Fatal(err)
		}
		read := func(mnt, p string) (time.Duration, int64) {
			before := readRequests(t, mnt)
			start := time.Now()
			got, err := os.ReadFile(filepath.Join(mnt, p, "data"))
			took := time.Since(start)
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("%s/%s/data: %d bytes, %v", mnt, p, len(got), err)
			}
			d := minus(readRequests(t, mnt), before)
			return took, d.GET + d.RangedGET
		}
		// The first read of a mount opens its store of the bucket
		// (the AWS configuration): both are warmed first.
		for _, p := range []string{filepath.Join(zmnt, ".zarray"), filepath.Join(kmnt, "time", "data")} {
			if _, err := os.ReadFile(p); err != nil {
				t.Fatal(err)
			}
		}
		zt, zr := read(zmnt, "")
		kt, kr := read(kmnt, "v12")
		t.Logf("12 chunks 20 ms away: kerchunk %v with %d requests, plain Zarr %v with %d requests (%.2fx)", kt, kr, zt, zr, float64(kt)/float64(zt))
		if kr > 12 || kr < 1 {
			t.Errorf("kerchunk read 12 chunks with %d requests, want 1 to 12", kr)
		}
	})
}
