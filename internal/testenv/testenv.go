// Package testenv lets a test say what it needs from the machine (a MinIO
// binary, an HDF5 filter plugin) so that a missing prerequisite is a skip
// with a reason under a plain "go test ./...", and a failure under
// "make test" and CI, which install everything and must run every test.
package testenv

import (
	"bytes"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// RequireAllEnv names the environment variable that turns every missing
// prerequisite into a test failure. "make test" sets it.
const RequireAllEnv = "NCZARRFS_REQUIRE_ALL"

// Python is the interpreter that has the reference tools' Python packages
// (zarr, numcodecs, h5py); the python3 on PATH may be another one.
const Python = "/usr/bin/python3"

// Require does nothing when err is nil. Otherwise the prerequisite what is
// missing, for the reason err: t is skipped with that reason, or fails
// when RequireAllEnv is set to a non-empty value.
func Require(t testing.TB, what string, err error) {
	t.Helper()
	if err == nil {
		return
	}
	msg := fmt.Sprintf("needs %s: %v", what, err)
	if os.Getenv(RequireAllEnv) != "" {
		t.Fatalf("%s (%s is set, so a missing prerequisite fails the test)", msg, RequireAllEnv)
	}
	t.Skipf("%s (skipped; with %s=1 this fails, as in make test)", msg, RequireAllEnv)
}

// HDF5Filter returns nil when h5py can use the HDF5 filter with the given
// id (32004 is LZ4, from Debian's hdf5-filter-plugin), and otherwise an
// error that says why not. HDF5 finds plugins through HDF5_PLUGIN_PATH or
// its default plugin folder.
func HDF5Filter(id int) error {
	script := fmt.Sprintf("import sys, h5py\nsys.exit(0 if h5py.h5z.filter_avail(%d) else 3)", id)
	cmd := exec.Command(Python, "-c", script)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() == 3 {
		return fmt.Errorf("HDF5 filter %d is not available to h5py (install hdf5-filter-plugin, or check HDF5_PLUGIN_PATH=%q)", id, os.Getenv("HDF5_PLUGIN_PATH"))
	}
	if err != nil {
		return fmt.Errorf("probing HDF5 filter %d with %s and h5py: %w: %s", id, Python, err, bytes.TrimSpace(out.Bytes()))
	}
	return nil
}

// FreeAddr returns a 127.0.0.1 address with a port that was free a moment
// ago, for a server a test starts.
func FreeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// ReadTree returns every regular file under dir by its path relative to
// dir, slash-separated, after prefix/ (none when prefix is ""): the
// objects a test uploads to a store. A tree with no file is an error.
func ReadTree(dir, prefix string) (map[string][]byte, error) {
	objects := map[string][]byte{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		key := filepath.ToSlash(rel)
		if prefix != "" {
			key = prefix + "/" + key
		}
		objects[key] = data
		return nil
	})
	if err == nil && len(objects) == 0 {
		err = fmt.Errorf("no files under %s", dir)
	}
	return objects, err
}
