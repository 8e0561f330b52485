package main

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// TestExportKeepsOutput exports a group, then exports it again after one
// of its chunks was made corrupt, and cats an array to the same file: the
// failing runs leave the first output byte for byte, with its mode and
// time, and no temporary file beside it.
func TestExportKeepsOutput(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "src.zarr")
	script := `import sys, zarr, numpy as np, numcodecs
g = zarr.open_group(sys.argv[1], mode="w")
g.create_dataset("v", data=np.arange(100, dtype="<f8"), chunks=(10,), compressor=numcodecs.Zlib())
`
	if out, err := exec.Command("/usr/bin/python3", "-c", script, src).CombinedOutput(); err != nil {
		t.Fatalf("zarr-python: %v\n%s", err, out)
	}
	outDir := filepath.Join(dir, "out")
	if err := os.Mkdir(outDir, 0o755); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(outDir, "out.nc")
	run := func(args ...string) error {
		return newApp(io.Discard, io.Discard).Run(append([]string{"nczarrfs"}, args...))
	}
	if err := run("export", "-o", out, src); err != nil {
		t.Fatalf("export: %v", err)
	}
	if err := os.Chmod(out, 0o640); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour).Truncate(time.Second)
	if err := os.Chtimes(out, old, old); err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(want, []byte("CDF")) {
		t.Fatalf("the export is not a classic file: % x", want[:min(8, len(want))])
	}
	if err := os.WriteFile(filepath.Join(src, "v", "3"), []byte("not zlib at all"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"export", "-o", out, src},
		{"cat", "-o", out, src, "v"},
	} {
		if err := run(args...); err == nil {
			t.Fatalf("%v succeeded with a corrupt chunk", args)
		}
		got, err := os.ReadFile(out)
		if err != nil {
			t.Fatalf("after %v: %v", args, err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("after %v the earlier output changed", args)
		}
		fi, err := os.Stat(out)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o640 || !fi.ModTime().Equal(old) {
			t.Errorf("after %v: mode %v, time %v; want 0640, %v", args, fi.Mode().Perm(), fi.ModTime(), old)
		}
		if names, _ := filepath.Glob(filepath.Join(outDir, "*")); len(names) != 1 {
			t.Errorf("after %v the folder holds %v", args, names)
		}
		if names, _ := filepath.Glob(filepath.Join(outDir, ".*")); len(names) != 0 {
			t.Errorf("after %v the folder holds %v", args, names)
		}
	}
	// A run that succeeds replaces the file, keeping its mode.
	if err := os.Remove(filepath.Join(src, "v", "3")); err != nil {
		t.Fatal(err)
	}
	if err := run("cat", "-o", out, src, "v"); err != nil {
		t.Fatalf("cat: %v", err)
	}
	fi, err := os.Stat(out)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() != 800 || fi.Mode().Perm() != 0o640 {
		t.Errorf("after a good cat: %d bytes, mode %v; want 800, 0640", fi.Size(), fi.Mode().Perm())
	}
}
