package fusefs

import (
	"bytes"
	"context"
	"errors"
	"image/png"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/nczarrfs/nczarrfs/describe/preview"
	"github.com/nczarrfs/nczarrfs/zmap/file"
)

// TestPreviewMadeAtOpen checks that listing an array folder with its
// attributes (ls -l) decodes nothing, that preview.png is the picture
// package preview draws, made at the first open and kept, and that stat
// shows 0 bytes until then and its size after.
func TestPreviewMadeAtOpen(t *testing.T) {
	dir := t.TempDir()
	zarrPython(t, dir, `import sys, zarr, numpy as np, numcodecs
g = zarr.open_group(sys.argv[1] + "/ds", mode="w")
a = g.create_dataset("t", shape=(3, 20, 30), chunks=(1, 10, 10), dtype="<f4", compressor=numcodecs.Zstd())
a[:] = np.arange(1800, dtype="<f4").reshape(3, 20, 30)
g.create_dataset("one", shape=(5,), dtype="<i4")
`)
	store, err := file.Open(filepath.Join(dir, "ds"))
	if err != nil {
		t.Fatal(err)
	}
	mnt, m := mountCounted(t, store)
	arr := filepath.Join(mnt, "t")
	entries, err := os.ReadDir(arr)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, e := range entries {
		if _, err := e.Info(); err != nil {
			t.Fatal(err)
		}
		found = found || e.Name() == PreviewName
	}
	if !found {
		t.Fatalf("%s not listed in %v", PreviewName, entries)
	}
	if _, err := os.Stat(filepath.Join(mnt, "one", PreviewName)); !os.IsNotExist(err) {
		t.Errorf("a 1-D array has %s: %v", PreviewName, err)
	}
	name := filepath.Join(arr, PreviewName)
	if size := statSize(t, name); size != 0 {
		t.Errorf("size before the first open %d, want 0", size)
	}
	if loaded := m.Cache.Stats().LoadedBytes; loaded != 0 {
		t.Errorf("ls -l decoded %d bytes", loaded)
	}
	got, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	ds := openDataset(t, store)
	want, err := preview.Render(context.Background(), ds, "t", preview.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want.PNG) {
		t.Errorf("read %d bytes, preview.Render drew %d", len(got), len(want.PNG))
	}
	if img, err := png.Decode(bytes.NewReader(got)); err != nil || img.Bounds().Dx() != 30 || img.Bounds().Dy() != 20 {
		t.Errorf("not a 30x20 PNG: %v", err)
	}
	if size := statSize(t, name); size != int64(len(got)) {
		t.Errorf("size after the first open %d, want %d", size, len(got))
	}
	loaded := m.Cache.Stats().LoadedBytes
	again, err := os.ReadFile(name)
	if err != nil || !bytes.Equal(again, got) {
		t.Errorf("second read differs: %v", err)
	}
	if l := m.Cache.Stats().LoadedBytes; l != loaded {
		t.Errorf("second open loaded %d more bytes: the picture was not kept", l-loaded)
	}
}

// TestPreviewOfACorruptChunk checks that a picture whose chunk does not
// decode fails to open with EIO, logged naming the chunk, and that the
// rest of the array folder still works.
func TestPreviewOfACorruptChunk(t *testing.T) {
	mnt, _ := mountCounted(t, corruptArray(t))
	for range 2 { // a failure is not kept: the second open tries again
		if _, err := os.ReadFile(filepath.Join(mnt, "v", PreviewName)); !errors.Is(err, syscall.EIO) {
			t.Fatalf("open of the picture of a corrupt array: %v, want EIO", err)
		}
	}
	log, err := os.ReadFile(filepath.Join(mnt, ControlDir, ErrorsName))
	if err != nil || !strings.Contains(string(log), "v/1.0") || !strings.Contains(string(log), "open "+PreviewName) {
		t.Errorf("errors file %q (%v), want the open of %s naming v/1.0", log, err, PreviewName)
	}
	if _, err := os.ReadFile(filepath.Join(mnt, "v", InfoName)); err != nil {
		t.Errorf("info.json of the corrupt array: %v", err)
	}
}

// TestPreviewSizeBeforeFirstRead checks that readers that trust st_size
// get the whole picture on a fresh mount: a reader that opens the file
// and then asks its size (fstat: Python's read, mmap) sees the picture's
// size before its first read; a browser that opened the group's
// index.html and then stats each picture by path sees it too; and a stat
// before either (ls -l) still decodes nothing.
func TestPreviewSizeBeforeFirstRead(t *testing.T) {
	dir := t.TempDir()
	zarrPython(t, dir, `import sys, zarr, numpy as np, numcodecs
g = zarr.open_group(sys.argv[1] + "/ds", mode="w")
for i in range(6):
    a = g.create_dataset("a%d" % i, shape=(20, 30 + i), chunks=(10, 10), dtype="<f4", compressor=numcodecs.Zstd())
    a[:] = np.arange(20 * (30 + i), dtype="<f4").reshape(20, 30 + i) * (i + 1)
s = g.create_group("sub")
s.create_dataset("b", data=np.arange(200, dtype="<i4").reshape(10, 20), chunks=(5, 5))
`)
	store, err := file.Open(filepath.Join(dir, "ds"))
	if err != nil {
		t.Fatal(err)
	}
	mnt, m := mountCounted(t, store)
	ds := openDataset(t, store)
	want := func(array string) []byte {
		p, err := preview.Render(context.Background(), ds, array, preview.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return p.PNG
	}
	for i := range 6 {
		if size := statSize(t, filepath.Join(mnt, "a"+strconv.Itoa(i), PreviewName)); size != 0 {
			t.Errorf("a%d: size at the first stat %d, want 0", i, size)
		}
	}
	if loaded := m.Cache.Stats().LoadedBytes; loaded != 0 {
		t.Fatalf("stat decoded %d bytes", loaded)
	}

	// Stat, open, fstat, read and map, in another process (this one
	// serves the mount, and must not fault on its own mapping), as
	// Chromium's file loader and mmap readers do.
	python(t, `import sys, os, mmap
for name in sys.argv[1:4]:
    assert os.stat(name).st_size == 0, name  # the kernel keeps it for a tick
    with open(name, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        assert size > 0, (name, "fstat after open shows size 0")
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
            mapped = bytes(m)
        data = f.read()
    assert len(data) == size and mapped == data, (name, size, len(data), len(mapped))
    assert data[-8:-4] == b"IEND", name
    sys.stdout.write("%s %d\n" % (name, size))
`, filepath.Join(mnt, "a0", PreviewName), filepath.Join(mnt, "a1", PreviewName), filepath.Join(mnt, "a2", PreviewName))
	for i := range 3 {
		name := "a" + strconv.Itoa(i)
		if size, w := statSize(t, filepath.Join(mnt, name, PreviewName)), len(want(name)); size != int64(w) {
			t.Errorf("%s: size after the open %d, want %d", name, size, w)
		}
	}

	// A browser: the page first, then a stat of each picture by path.
	if _, err := os.ReadFile(filepath.Join(mnt, IndexName)); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"a3", "a4", "a5"} {
		if size, w := statSize(t, filepath.Join(mnt, name, PreviewName)), len(want(name)); size != int64(w) {
			t.Errorf("%s: size at the stat after index.html was opened %d, want %d", name, size, w)
		}
	}
	// Only the pictures of the page opened: the sub-group's page was not.
	if size := statSize(t, filepath.Join(mnt, "sub", "b", PreviewName)); size != 0 {
		t.Errorf("sub/b: size %d before its page was opened, want 0", size)
	}
	if _, err := os.ReadFile(filepath.Join(mnt, "sub", IndexName)); err != nil {
		t.Fatal(err)
	}
	if size, w := statSize(t, filepath.Join(mnt, "sub", "b", PreviewName)), len(want("sub/b")); size != int64(w) {
		t.Errorf("sub/b: size after its page was opened %d, want %d", size, w)
	}
}
