package test

import (
	"bytes"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nczarrfs/nczarrfs/internal/miniotest"
)

// keptFile is what one of the user's files (or links) held before a
// mount used the folder.
type keptFile struct {
	mode  fs.FileMode
	data  []byte
	link  string
	mtime time.Time
}

// userFiles records every file and link under roots, by path.
func userFiles(t *testing.T, roots ...string) map[string]keptFile {
	t.Helper()
	out := map[string]keptFile{}
	for _, root := range roots {
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			info, err := os.Lstat(p)
			if err != nil {
				return err
			}
			k := keptFile{mode: info.Mode().Type(), mtime: info.ModTime()}
			if k.mode&fs.ModeSymlink != 0 {
				k.link, err = os.Readlink(p)
			} else {
				k.data, err = os.ReadFile(p)
			}
			out[p] = k
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// TestS3DiskCacheForeignFiles mounts a dataset from MinIO with a
// --cache-dir that holds the user's files (one of 2 MiB, nested ones,
// one inside the cache's own folder, one named as the cache named its
// files before it had a folder of its own, a link to a file outside), all
// older than anything the cache writes, and a --cache-dir-size of 1 MiB
// that the user's files alone exceed. Two mounts sharing the folder read
// every array: the values are the reference tools', the second mount
// reads objects the first left in the folder, every file of the user's
// keeps its bytes and modification time, and the cache's own files stay
// within the budget. (Before the cache had a layout of its own, the
// mount deleted every one of the user's files.)
func TestS3DiskCacheForeignFiles(t *testing.T) {
	srv := miniotest.Start(t)
	s3Env(t, srv)
	srv.CreateBucket(t, "owned")
	set, ds := basicDataset(t)
	srv.PutTree(t, "owned", ds.Name, ds.TreePath(set))
	source := srv.Endpoint + "/owned/" + ds.Name + "#mode=" + s3Mode(set)

	dir, outside := t.TempDir(), t.TempDir()
	old := time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)
	rng := rand.NewChaCha8([32]byte{33})
	for _, f := range []struct {
		path string
		size int
	}{
		{"big.bin", 2 << 20},
		{"notes.txt", 300},
		{"sub/deep/table.csv", 64 << 10},
		{"nczarrfs-cache/README", 100},
		{"nczarrfs-cache/v1/mine.txt", 4 << 10},
		{strings.Repeat("0", 24) + "/12/" + strings.Repeat("3", 30), 200 << 10},
	} {
		p := filepath.Join(dir, f.path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		b := make([]byte, f.size)
		rng.Read(b)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
	}
	target := filepath.Join(outside, "elsewhere.bin")
	if err := os.WriteFile(target, bytes.Repeat([]byte("elsewhere"), 10000), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, filepath.Join(dir, "link.bin")); err != nil {
		t.Fatal(err)
	}
	before := userFiles(t, dir, outside)

	args := []string{"--cache-dir", dir, "--cache-dir-size", "1MiB"}
	first := mount(t, source, args...)
	checkDataset(t, first, set, ds)
	s1 := readSnapshot(t, first)
	// The second mount reads every array whole (the first has checked
	// the rest).
	second := mount(t, source, args...)
	for _, a := range ds.Arrays {
		if a.Error || a.JSON != "" {
			continue
		}
		want, err := os.ReadFile(filepath.Join(set.Dir, a.Expected))
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(second, a.Path, "data"))
		if err != nil || !sameData(a, got, want) {
			t.Errorf("second mount: %s/data: %d bytes, %v; want the %d expected%s", a.Path, len(got), err, len(want), firstDiff(got, want, a.Itemsize))
		}
	}
	s2 := readSnapshot(t, second)
	t.Logf("first mount: disk %+v; second: disk %+v", *s1.Disk, *s2.Disk)
	if s1.Disk.Written == 0 || s2.Disk.Hits == 0 {
		t.Errorf("first mount wrote %d objects, the second read %d from the folder; want some of each", s1.Disk.Written, s2.Disk.Hits)
	}

	after := userFiles(t, dir, outside)
	kept := 0
	for p, b := range before {
		a, ok := after[p]
		switch {
		case !ok:
			t.Errorf("%s: gone", p)
		case a.mode != b.mode || a.link != b.link || !bytes.Equal(a.data, b.data):
			t.Errorf("%s: changed (%d bytes, now %d)", p, len(b.data), len(a.data))
		case !a.mtime.Equal(b.mtime):
			t.Errorf("%s: modified at %v, now %v", p, b.mtime, a.mtime)
		default:
			kept++
		}
	}
	t.Logf("%d of the user's %d files kept byte for byte with their times", kept, len(before))

	var ownFiles int
	var ownBytes int64
	filepath.WalkDir(filepath.Join(dir, "nczarrfs-cache", "v1"), func(p string, d fs.DirEntry, err error) error {
		if _, mine := before[p]; err == nil && d.Type().IsRegular() && !mine {
			info, _ := d.Info()
			ownFiles++
			ownBytes += info.Size()
		}
		return nil
	})
	if ownFiles == 0 || ownBytes > 1<<20 {
		t.Errorf("the cache holds %d files of %d bytes; want some, within 1 MiB", ownFiles, ownBytes)
	}
	if tag, err := os.ReadFile(filepath.Join(dir, "nczarrfs-cache", "CACHEDIR.TAG")); err != nil ||
		!bytes.HasPrefix(tag, []byte("Signature: 8a477f597d28d172789f06886806bc55")) {
		t.Errorf("CACHEDIR.TAG: %q, %v", tag, err)
	}
}
