package nczarr_test

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/nczarrfs/nczarrfs/nczarr"
	"github.com/nczarrfs/nczarrfs/zmap/file"
)

// TestDeclaredNodeYieldsToObject opens a consolidated store whose
// .zmetadata declares arrays where stored objects are
// (test/fixtures/hidden_object.py): the objects win
// (the mount shows them byte for byte, test/TestHiddenObjectMount), the
// declared nodes are dropped with a log line, the rest of the tree reads.
func TestDeclaredNodeYieldsToObject(t *testing.T) {
	dir := t.TempDir()
	if out, err := exec.Command("/usr/bin/python3", "../test/fixtures/hidden_object.py", dir).CombinedOutput(); err != nil {
		t.Fatalf("zarr-python: %v\n%s", err, out)
	}
	store, err := file.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	d, err := nczarr.Open(context.Background(), store, nczarr.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if !d.Consolidated {
		t.Error("not read from .zmetadata")
	}
	if got, want := d.Arrays(), []string{"g/w", "v"}; !slices.Equal(got, want) {
		t.Errorf("arrays %q, want %q", got, want)
	}
	if g := d.Group("g"); g == nil || !slices.Equal(g.Arrays, []string{"g/w"}) {
		t.Errorf("group g: %+v", g)
	}
	for _, key := range []string{".zmetadata", "g/.zattrs", "g/notes.txt"} {
		if !strings.Contains(logs.String(), "key="+key) {
			t.Errorf("no log line names %s:\n%s", key, logs.String())
		}
	}
	if _, err := os.Stat(filepath.Join(dir, ".zmetadata")); err != nil {
		t.Fatal(err)
	}
}
