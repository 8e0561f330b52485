package file

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/nczarrfs/nczarrfs/zmap"
	"github.com/nczarrfs/nczarrfs/zmap/zmaptest"
)

// writeTree writes objects as files under dir.
func writeTree(t testing.TB, dir string, objects map[string][]byte) {
	t.Helper()
	for key, content := range objects {
		name := filepath.Join(dir, filepath.FromSlash(key))
		if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(name, content, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestConformance(t *testing.T) {
	zmaptest.Run(t, func(t *testing.T, objects map[string][]byte) zmap.Store {
		dir := t.TempDir()
		writeTree(t, dir, objects)
		s, err := Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.file")
	_, err := Open(missing)
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), missing) {
		t.Errorf("Open(missing) = %v; want an error wrapping fs.ErrNotExist naming %s", err, missing)
	}
	regular := filepath.Join(dir, "regular")
	if err := os.WriteFile(regular, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Open(regular)
	if !errors.Is(err, syscall.ENOTDIR) || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("Open(regular file) = %v; want a 'not a directory' error", err)
	}
}

// TestRelativeRoot checks that a Store opened on a relative path keeps
// working after the working directory changes.
func TestRelativeRoot(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string][]byte{"ds/.zgroup": []byte("{}")})
	t.Chdir(dir)
	s, err := Open("ds")
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())
	if b, err := s.Get(context.Background(), ".zgroup"); err != nil || string(b) != "{}" {
		t.Errorf("Get after chdir = %q, %v", b, err)
	}
}

// TestSpecialFiles checks how links and non-regular files show up: a link
// to a file is an object, a link to a directory is a prefix, broken links
// and FIFOs are not there (and reading a FIFO must not block).
func TestSpecialFiles(t *testing.T) {
	outside := t.TempDir()
	writeTree(t, outside, map[string][]byte{"secret": []byte("secret"), "d/x": []byte("x")})
	root := filepath.Join(outside, "root")
	writeTree(t, root, map[string][]byte{".zgroup": []byte("{}"), "real/a": []byte("abc")})
	links := map[string]string{
		"filelink":   "real/a",
		"dirlink":    "real",
		"outsidedir": filepath.Join(outside, "d"),
		"broken":     "nowhere",
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(root, name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Mkfifo(filepath.Join(root, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := Open(root)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	got, err := s.Search(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	want := []zmap.Entry{
		{Name: ".zgroup", Size: 2},
		{Name: "dirlink", Dir: true},
		{Name: "filelink", Size: 3},
		{Name: "outsidedir", Dir: true},
		{Name: "real", Dir: true},
	}
	if !slices.Equal(got, want) {
		t.Errorf("Search(\"\") = %v, want %v", got, want)
	}

	for _, tc := range []struct {
		key  string
		want string // "" means ErrNotFound
	}{
		{"filelink", "abc"},
		{"dirlink/a", "abc"},
		{"outsidedir/x", "x"},
		{"broken", ""},
		{"fifo", ""},
		{"dirlink", ""},
		{"../secret", ""},
		{"real/../../secret", ""},
	} {
		b, err := s.Get(ctx, tc.key)
		if tc.want == "" {
			if !errors.Is(err, zmap.ErrNotFound) {
				t.Errorf("Get(%q) = %q, %v; want ErrNotFound", tc.key, b, err)
			}
			if _, err := s.Size(ctx, tc.key); !errors.Is(err, zmap.ErrNotFound) {
				t.Errorf("Size(%q): %v; want ErrNotFound", tc.key, err)
			}
			if _, err := s.ReadAt(ctx, tc.key, make([]byte, 1), 0); !errors.Is(err, zmap.ErrNotFound) {
				t.Errorf("ReadAt(%q): %v; want ErrNotFound", tc.key, err)
			}
			continue
		}
		if err != nil || string(b) != tc.want {
			t.Errorf("Get(%q) = %q, %v; want %q", tc.key, b, err, tc.want)
		}
	}
	if got, err := s.Search(ctx, "dirlink"); err != nil || !slices.Equal(got, []zmap.Entry{{Name: "a", Size: 3}}) {
		t.Errorf("Search(dirlink) = %v, %v", got, err)
	}
	if got, err := s.Search(ctx, ".."); err != nil || len(got) != 0 {
		t.Errorf("Search(..) = %v, %v; want nothing", got, err)
	}
}

func TestMapErr(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want error
	}{
		{&fs.PathError{Op: "open", Path: "/x", Err: syscall.ENOENT}, zmap.ErrNotFound},
		{&fs.PathError{Op: "open", Path: "/x/y", Err: syscall.ENOTDIR}, zmap.ErrNotFound},
		{&fs.PathError{Op: "read", Path: "/x", Err: syscall.EISDIR}, zmap.ErrNotFound},
		{&fs.PathError{Op: "open", Path: "/x", Err: syscall.EACCES}, zmap.ErrPermission},
		{&fs.PathError{Op: "open", Path: "/x", Err: syscall.EPERM}, zmap.ErrPermission},
		{&fs.PathError{Op: "read", Path: "/x", Err: syscall.EIO}, syscall.EIO},
	} {
		got := mapErr("get", "k", tc.err)
		if !errors.Is(got, tc.want) || !errors.Is(got, tc.err) {
			t.Errorf("mapErr(%v) = %v; want it to wrap %v and the original", tc.err, got, tc.want)
		}
		for _, other := range []error{zmap.ErrNotFound, zmap.ErrPermission} {
			if other != tc.want && errors.Is(got, other) {
				t.Errorf("mapErr(%v) = %v also wraps %v", tc.err, got, other)
			}
		}
	}
}
