package test

// End-to-end tests of Zarr v3 datasets (issue 12): fixtures written at test
// time by zarrita, the npm Zarr v3 implementation (test/fixtures/gen_v3.mjs,
// installed by scripts/install-zarrita.sh), and zarrita's own reading of
// every array as the expected data. Each dataset is mounted from its
// directory tree, from a zip of it, and from MinIO.

import (
	"archive/zip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/nczarrfs/nczarrfs/internal/miniotest"
	"github.com/nczarrfs/nczarrfs/internal/testenv"
)

var (
	v3Once sync.Once
	v3Set  fixtureSet
	v3Err  error // node or zarrita missing: skip (or fail under make test)
	v3Fail error // the generator failed: always a failure
)

// v3Fixtures runs gen_v3.mjs once per test process, zips every dataset it
// wrote (stored and deflated entries alternate), and returns the set.
func v3Fixtures(t *testing.T) fixtureSet {
	t.Helper()
	v3Once.Do(func() { v3Set, v3Err, v3Fail = generateV3() })
	testenv.Require(t, "zarrita (node and npm; scripts/install-zarrita.sh)", v3Err)
	if v3Fail != nil {
		t.Fatal(v3Fail)
	}
	return v3Set
}

func generateV3() (set fixtureSet, missing, failed error) {
	if _, err := exec.LookPath("node"); err != nil {
		return set, err, nil
	}
	mods, err := exec.Command("../scripts/install-zarrita.sh").Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			err = fmt.Errorf("%w: %s", err, ee.Stderr)
		}
		return set, err, nil
	}
	out := filepath.Join(workDir, "fixtures", "gen_v3")
	if err := os.MkdirAll(out, 0o755); err != nil {
		return set, nil, err
	}
	cmd := exec.Command("node", "fixtures/gen_v3.mjs", out)
	cmd.Env = append(os.Environ(), "NCZARRFS_NODE_MODULES="+strings.TrimSpace(string(mods)))
	if msg, err := cmd.CombinedOutput(); err != nil {
		return set, nil, fmt.Errorf("gen_v3.mjs: %v\n%s", err, msg)
	}
	set = fixtureSet{Dir: out, Generator: "gen_v3.mjs"}
	raw, err := os.ReadFile(filepath.Join(out, "manifest.json"))
	if err == nil {
		err = json.Unmarshal(raw, &set)
	}
	if err != nil || len(set.Datasets) == 0 {
		return set, nil, fmt.Errorf("gen_v3.mjs: manifest.json: %v (%d datasets)", err, len(set.Datasets))
	}
	for i := range set.Datasets {
		ds := &set.Datasets[i]
		for _, a := range ds.Arrays {
			if _, err := os.Stat(filepath.Join(ds.TreePath(set), a.Path, "zarr.json")); err != nil {
				return set, nil, fmt.Errorf("gen_v3.mjs: dataset %s: array %q: %w", ds.Name, a.Path, err)
			}
		}
		// Every other zip holds the dataset under a top folder, as
		// "zip -r x.zip x.zarr" writes it.
		ds.Zip = ds.Name + ".zip"
		if i%2 == 1 {
			ds.ZipRoot = ds.Tree
		}
		if err := zipTree(ds.TreePath(set), ds.ZipPath(set), ds.ZipRoot, i%2 == 0); err != nil {
			return set, nil, err
		}
	}
	return set, nil, nil
}

// zipTree writes every file under dir into a new zip at name, under the
// folder root ("" for the top, as zarr-python's ZipStore writes), deflated
// or stored.
func zipTree(dir, name, root string, deflate bool) error {
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	zw := zip.NewWriter(f)
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		h := &zip.FileHeader{Name: path.Join(root, filepath.ToSlash(rel)), Method: zip.Store}
		if deflate {
			h.Method = zip.Deflate
		}
		w, err := zw.CreateHeader(h)
		if err != nil {
			return err
		}
		src, err := os.Open(p)
		if err != nil {
			return err
		}
		defer src.Close()
		_, err = io.Copy(w, src)
		return err
	})
	if err == nil {
		err = zw.Close()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// TestV3Mount mounts every zarrita dataset from its directory and from
// its zip, and checks the mount against the stored tree (every zarr.json,
// chunk and shard object byte for byte) and every array's data against
// zarrita's reading; the arrays meant to fail give EIO.
func TestV3Mount(t *testing.T) {
	set := v3Fixtures(t)
	for _, ds := range set.Datasets {
		for _, form := range []string{"dir", "zip"} {
			t.Run(ds.Name+"/"+form, func(t *testing.T) {
				t.Parallel()
				source := ds.TreePath(set)
				if form == "zip" {
					checkZipMatchesTree(t, set, ds)
					source = ds.ZipPath(set)
				}
				mnt := mount(t, source)
				checkDataset(t, mnt, set, ds)
				checkV3NPY(t, mnt, ds)
			})
		}
	}
}

// npyScript loads each ARRAY's data.npy under MNT with numpy and prints a
// line for each that does not have the DTYPE and SHAPE given, or whose
// elements are not the bytes of the array's data file.
//
//	npyScript MNT ARRAY DTYPE SHAPE [ARRAY DTYPE SHAPE ...]
const npyScript = `
import ast, json, os, sys
import numpy as np
mnt, args = sys.argv[1], sys.argv[2:]
for i in range(0, len(args), 3):
    path, dtype, shape = args[i], args[i + 1], tuple(json.loads(args[i + 2]))
    if dtype.startswith("["):
        dtype = ast.literal_eval(dtype)  # a structured type
    a = np.load(os.path.join(mnt, path, "data.npy"))
    with open(os.path.join(mnt, path, "data"), "rb") as f:
        raw = f.read()
    if a.dtype != np.dtype(dtype) or a.shape != shape or a.tobytes() != raw:
        print("%s: data.npy has dtype %s shape %s, %d bytes; want %s %s and data's %d bytes" % (path, a.dtype.str, a.shape, a.nbytes, dtype, shape, len(raw)))
`

// checkV3NPY has numpy load every readable array's data.npy: its dtype and
// shape must be the reference's, and its elements data's bytes.
func checkV3NPY(t *testing.T, mnt string, ds dataset) {
	t.Helper()
	args := []string{"-c", npyScript, mnt}
	for _, a := range ds.Arrays {
		if a.Error || a.JSON != "" {
			continue
		}
		shape, _ := json.Marshal(a.Shape)
		args = append(args, a.Path, a.Dtype, string(shape))
	}
	out, err := exec.Command(python, args...).CombinedOutput()
	if err != nil || len(out) > 0 {
		t.Errorf("numpy.load of data.npy: %v\n%s", err, out)
	}
}

// TestV3MountS3 uploads every zarrita dataset to MinIO and mounts it
// through the endpoint URL form: shards are read by ranged GETs.
func TestV3MountS3(t *testing.T) {
	set := v3Fixtures(t)
	srv := miniotest.Start(t)
	s3Env(t, srv)
	srv.CreateBucket(t, "zarrv3")
	for _, ds := range set.Datasets {
		srv.PutTree(t, "zarrv3", ds.Name, ds.TreePath(set))
	}
	for _, ds := range set.Datasets {
		t.Run(ds.Name, func(t *testing.T) {
			t.Parallel()
			mnt := mount(t, srv.Endpoint+"/zarrv3/"+ds.Name+"#mode=zarr,s3")
			checkDataset(t, mnt, set, ds)
		})
	}
}
