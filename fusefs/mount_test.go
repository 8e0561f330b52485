package fusefs

import (
	"archive/zip"
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"testing/fstest"

	"github.com/nczarrfs/nczarrfs/cache"
	"github.com/nczarrfs/nczarrfs/nczarr"
	"github.com/nczarrfs/nczarrfs/zmap"
	"github.com/nczarrfs/nczarrfs/zmap/file"
	zmapzip "github.com/nczarrfs/nczarrfs/zmap/zip"
)

// sample is the bundled dataset written by netcdf-c's ncgen.
const sample = "../examples/sample.zip"

// mountStore mounts the dataset in store in-process and unmounts it when
// the test ends; any mount error fails the test.
func mountStore(t *testing.T, store zmap.Store) string {
	t.Helper()
	return mountDataset(t, openDataset(t, store), store, Options{FsName: "test"})
}

// openDataset opens the dataset in store with a 1 MiB cache.
func openDataset(t *testing.T, store zmap.Store) *nczarr.Dataset {
	t.Helper()
	ds, err := nczarr.Open(context.Background(), store, nczarr.Options{Cache: cache.New(1 << 20)})
	if err != nil {
		t.Fatalf("open dataset: %v", err)
	}
	return ds
}

// mountDataset mounts ds with opts in a new folder, and unmounts it when
// the test ends.
func mountDataset(t *testing.T, ds *nczarr.Dataset, store zmap.Store, opts Options) string {
	t.Helper()
	mnt := t.TempDir()
	server, err := Mount(mnt, ds, store, opts)
	if err != nil {
		t.Fatalf("mount: %v", err)
	}
	t.Cleanup(func() {
		if err := server.Unmount(); err != nil {
			t.Errorf("unmount: %v", err)
		}
		server.Wait()
	})
	return mnt
}

// openSample opens the bundled sample, closed when the test ends.
func openSample(t *testing.T) *zmapzip.Store {
	t.Helper()
	store, err := zmapzip.Open(sample)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	return store
}

func mountSample(t *testing.T) (string, map[string][]byte) {
	t.Helper()
	store := openSample(t)
	// What the archive holds, keyed relative to the dataset root.
	zr, err := zip.OpenReader(sample)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	objects := map[string][]byte{}
	for _, f := range zr.File {
		if strings.HasSuffix(f.Name, "/") {
			continue
		}
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		objects[strings.TrimPrefix(f.Name, store.Root()+"/")] = b
	}
	return mountStore(t, store), objects
}

func TestMountedTreeMirrorsStore(t *testing.T) {
	mnt, objects := mountSample(t)
	var expected []string
	for key, want := range objects {
		expected = append(expected, key)
		got, err := os.ReadFile(filepath.Join(mnt, key))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: read %d bytes (%v), want the %d stored", key, len(got), err, len(want))
		}
	}
	arrays := []string{"temperature", "time", "lat", "lon", "station", "surface/level"}
	for _, a := range arrays {
		expected = append(expected, a+"/"+DataName)
	}
	expected = append(expected, synthFiles(arrays, "temperature")...)
	expected = append(expected, "surface/"+IndexName, "surface/"+ClassicName)
	// fstest checks ReadDir, Stat, Open and Read agree everywhere.
	if err := fstest.TestFS(os.DirFS(mnt), expected...); err != nil {
		t.Error(err)
	}
	// Nothing else is listed.
	var listed []string
	filepath.WalkDir(mnt, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			t.Error(err)
			return nil
		}
		if !d.IsDir() {
			rel, _ := filepath.Rel(mnt, p)
			listed = append(listed, rel)
		}
		return nil
	})
	if len(listed) != len(expected) {
		t.Errorf("listed %d files, want %d: %v", len(listed), len(expected), listed)
	}
}

func TestWritesFailWithEROFS(t *testing.T) {
	mnt, _ := mountSample(t)
	existing := filepath.Join(mnt, "temperature", ".zarray")
	ops := []struct {
		name string
		fn   func() error
	}{
		{"create", func() error { return os.WriteFile(filepath.Join(mnt, "new"), []byte("x"), 0o644) }},
		{"open for write", func() error {
			f, err := os.OpenFile(existing, os.O_WRONLY, 0)
			if err == nil {
				f.Close()
			}
			return err
		}},
		{"mkdir", func() error { return os.Mkdir(filepath.Join(mnt, "d"), 0o755) }},
		{"remove", func() error { return os.Remove(existing) }},
		{"rename", func() error { return os.Rename(existing, existing+".bak") }},
		{"truncate", func() error { return os.Truncate(existing, 0) }},
		{"chmod", func() error { return os.Chmod(existing, 0o777) }},
	}
	for _, op := range ops {
		if err := op.fn(); !errors.Is(err, syscall.EROFS) {
			t.Errorf("%s: err = %v, want EROFS", op.name, err)
		}
	}
}

func TestStatSizes(t *testing.T) {
	mnt, _ := mountSample(t)
	// shape [4,3,5] float32, [2] int32, [5] char (1 byte each).
	for path, size := range map[string]int64{"temperature/data": 240, "surface/level/data": 8, "station/data": 5} {
		info, err := os.Stat(filepath.Join(mnt, path))
		if err != nil || info.Size() != size || info.Mode().Perm() != 0o444 {
			t.Errorf("stat %s = %v, %v; want size %d, mode 0444", path, info, err, size)
		}
	}
	if _, err := os.Stat(filepath.Join(mnt, "nosuch")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("stat of a missing name: %v", err)
	}
	if _, err := os.Stat(filepath.Join(mnt, "temperature", "9.9.9")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("stat of a chunk that is not stored: %v", err)
	}
}

func TestMountOptions(t *testing.T) {
	// The mount shows as read-only fuse.nczarrfs in the mount table.
	mnt, _ := mountSample(t)
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) > 5 && f[4] == mnt {
			if !strings.Contains(line, "fuse.nczarrfs") || !strings.HasPrefix(f[5], "ro") {
				t.Errorf("mountinfo line %q: want fstype fuse.nczarrfs, options ro", line)
			}
			return
		}
	}
	t.Errorf("%s not in mountinfo", mnt)
}

// TestRootArray mounts a store whose root is an array, as zarr-python
// writes with zarr.open(path, shape=...): the mountpoint itself holds data.
func TestRootArray(t *testing.T) {
	dir := t.TempDir()
	script := `import sys, zarr, numpy as np
a = np.arange(35, dtype=">i2").reshape(5, 7)
zarr.open(sys.argv[1] + "/arr", mode="w", shape=a.shape, chunks=(2, 3), dtype=a.dtype, compressor=None)[:] = a
a.astype("<i2").tofile(sys.argv[1] + "/expected.bin")
`
	if out, err := exec.Command("/usr/bin/python3", "-c", script, dir).CombinedOutput(); err != nil {
		t.Fatalf("zarr-python: %v\n%s", err, out)
	}
	store, err := file.Open(filepath.Join(dir, "arr"))
	if err != nil {
		t.Fatal(err)
	}
	mnt := mountStore(t, store)
	want, err := os.ReadFile(filepath.Join(dir, "expected.bin"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(mnt, DataName))
	if err != nil || !bytes.Equal(got, want) {
		t.Errorf("data = %x (%v), want %x", got, err, want)
	}
	names, err := os.ReadDir(mnt)
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, e := range names {
		listed = append(listed, e.Name())
	}
	// 3x3 chunks of a 5x7 array, .zarray, data, and the synthesized names.
	if len(listed) != 11+len(rootSynth()) || !slices.Contains(listed, ".zarray") || !slices.Contains(listed, DataName) {
		t.Errorf("root lists %v", listed)
	}
}
