package zip

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestSymlinkEntriesNotFollowed zips, with Info-ZIP's zip -y, a tree
// holding symbolic links that leave it: the archive stores each link as an
// entry whose bytes are the link's target, and the store serves those bytes
// as they are, never the file the link names.
func TestSymlinkEntriesNotFollowed(t *testing.T) {
	dir := t.TempDir()
	tree := filepath.Join(dir, "tree")
	if err := os.Mkdir(tree, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tree, ".zgroup"), []byte(`{"zarr_format": 2}`), 0o644); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(dir, "secret")
	if err := os.WriteFile(outside, []byte("not for the store\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	links := map[string]string{"abs": outside, "up": "../secret", "etc": "/etc/hostname"}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(tree, name)); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(dir, "links.zip")
	cmd := exec.Command("zip", "-q", "-r", "-y", out, ".")
	cmd.Dir = tree
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("zip -y: %v: %s", err, msg)
	}
	s := openPath(t, out)
	defer s.Close()
	for name, target := range links {
		got, err := s.Get(context.Background(), name)
		if err != nil || string(got) != target {
			t.Errorf("Get(%q) = %q, %v; want the link's target text %q", name, got, err, target)
		}
	}
}
