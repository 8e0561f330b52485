package test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nczarrfs/nczarrfs/internal/testenv"
)

// linksScript writes, with zarr-python 2, a group with a chunked array
// "t" at sys.argv[1], and zarr-python's reading of t to sys.argv[2].
const linksScript = `import sys, numpy as np, zarr
g = zarr.open_group(sys.argv[1], mode="w")
t = g.create_dataset("t", data=np.arange(60, dtype="<f8").reshape(6, 10), chunks=(4, 4))
t[...].tofile(sys.argv[2])
`

// writeLinked writes the dataset into dir/ds.zarr and returns its path and
// zarr-python's bytes of t.
func writeLinked(t *testing.T, dir string) (string, []byte) {
	t.Helper()
	src, want := filepath.Join(dir, "ds.zarr"), filepath.Join(t.TempDir(), "t.bin")
	if out, err := exec.Command(python, "-c", linksScript, src, want).CombinedOutput(); err != nil {
		t.Fatalf("zarr-python: %v\n%s", err, out)
	}
	b, err := os.ReadFile(want)
	if err != nil {
		t.Fatal(err)
	}
	return src, b
}

// TestGitAnnexLinks mounts a dataset kept in git-annex: git annex add
// turns every object into a relative symbolic link into .git/annex/objects,
// outside the dataset folder. Without --follow-links the dataset is
// refused (its .zgroup is such a link); with it the mount reads every
// object byte for byte and t as zarr-python does.
func TestGitAnnexLinks(t *testing.T) {
	_, err := exec.LookPath("git-annex")
	testenv.Require(t, "git-annex (apt-get install git-annex)", err)
	repo := t.TempDir()
	src, want := writeLinked(t, repo)
	// The stored objects, before git-annex replaces them by links.
	stored := map[string][]byte{}
	err = filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		stored[rel], err = os.ReadFile(p)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	git := func(args ...string) {
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@localhost"}, args...)...)
		cmd.Dir = repo
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	git("init", "-q")
	git("annex", "init", "-q", "test")
	git("annex", "add", "-q", "--force-large", "ds.zarr")
	if fi, err := os.Lstat(filepath.Join(src, ".zgroup")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("git annex add left .zgroup a %v (%v), want a link", fi.Mode(), err)
	}

	out, err := exec.Command(nczarrfsBinary(t), "ls", src).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "out of the dataset root") {
		t.Errorf("ls without --follow-links: %v\n%s\nwant a refusal naming the link", err, out)
	}

	mnt := mount(t, src, "--follow-links")
	for rel, b := range stored {
		got, err := os.ReadFile(filepath.Join(mnt, rel))
		if err != nil || !bytes.Equal(got, b) {
			t.Errorf("/%s: %v; %d bytes, stored %d", rel, err, len(got), len(b))
		}
	}
	got, err := os.ReadFile(filepath.Join(mnt, "t", "data"))
	if err != nil || !bytes.Equal(got, want) {
		t.Errorf("t/data: %v; %d bytes differ from zarr-python's %d", err, len(got), len(want))
	}
}

// TestAbsoluteLinksInside mounts a dataset whose chunks of t are absolute
// symbolic links to files inside the dataset folder, and whose "u" is an
// absolute link to the folder t (so an array too): both read as relative
// links do, without --follow-links.
func TestAbsoluteLinksInside(t *testing.T) {
	src, want := writeLinked(t, t.TempDir())
	store := filepath.Join(src, "store")
	if err := os.Mkdir(store, 0o755); err != nil {
		t.Fatal(err)
	}
	chunks, err := filepath.Glob(filepath.Join(src, "t", "[0-9]*"))
	if err != nil || len(chunks) == 0 {
		t.Fatalf("no chunks (%v)", err)
	}
	for _, c := range chunks {
		moved := filepath.Join(store, filepath.Base(c))
		if err := os.Rename(c, moved); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(moved, c); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(src, "t"), filepath.Join(src, "u")); err != nil {
		t.Fatal(err)
	}
	mnt := mount(t, src)
	for _, p := range []string{"t/data", "u/data"} {
		got, err := os.ReadFile(filepath.Join(mnt, p))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: %v; %d bytes, want %d", p, err, len(got), len(want))
		}
	}
}
