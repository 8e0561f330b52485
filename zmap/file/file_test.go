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
// to a file inside the root is an object, a link to a directory inside it
// is a prefix, broken links and FIFOs are not there (and reading a FIFO must
// not block), and a link that leaves the root is a prefix every key of
// which is refused with ErrPermission; an absolute link whose target lies
// inside the root reads like a relative one.
func TestSpecialFiles(t *testing.T) {
	outside := t.TempDir()
	writeTree(t, outside, map[string][]byte{"secret": []byte("secret"), "d/x": []byte("x")})
	root := filepath.Join(outside, "root")
	writeTree(t, root, map[string][]byte{".zgroup": []byte("{}"), "real/a": []byte("abc"), "sub/b": []byte("b")})
	links := map[string]string{
		"filelink":     "real/a",
		"dirlink":      "real",
		"sub/uplink":   "../real/a",                      // climbs, but stays inside
		"outsidedir":   filepath.Join(outside, "d"),      // absolute, outside
		"outsidefile":  filepath.Join(outside, "secret"), // absolute, outside
		"climb":        "../d",                           // relative, outside
		"sub/climb2":   "../../secret",                   // relative, outside
		"absinside":    filepath.Join(root, "real"),      // absolute, inside
		"chain":        "outsidedir",                     // inside, to a link that leaves
		"broken":       "nowhere",
		"brokenescape": filepath.Join(outside, "nowhere"), // leaves, to nothing
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(root, filepath.FromSlash(name))); err != nil {
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
	t.Cleanup(func() { s.Close() })
	ctx := context.Background()
	got, err := s.Search(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	want := []zmap.Entry{
		{Name: ".zgroup", Size: 2},
		{Name: "absinside", Dir: true},
		{Name: "brokenescape", Dir: true},
		{Name: "chain", Dir: true},
		{Name: "climb", Dir: true},
		{Name: "dirlink", Dir: true},
		{Name: "filelink", Size: 3},
		{Name: "outsidedir", Dir: true},
		{Name: "outsidefile", Dir: true},
		{Name: "real", Dir: true},
		{Name: "sub", Dir: true},
	}
	if !slices.Equal(zmaptest.WithoutTimes(got), want) {
		t.Errorf("Search(\"\") = %v, want %v", got, want)
	}

	const (
		notFound = "\x00notfound"
		denied   = "\x00denied"
	)
	for _, tc := range []struct {
		key  string
		want string // content, or notFound, or denied
	}{
		{"filelink", "abc"},
		{"dirlink/a", "abc"},
		{"sub/uplink", "abc"},
		{"outsidedir/x", denied},
		{"outsidedir", denied},
		{"outsidefile", denied},
		{"climb/x", denied},
		{"sub/climb2", denied},
		{"absinside/a", "abc"},
		{"chain/x", denied},
		{"brokenescape", denied},
		{"broken", notFound},
		{"fifo", notFound},
		{"dirlink", notFound},
		{"../secret", notFound},
		{"real/../../secret", notFound},
		{"/etc/passwd", notFound},
	} {
		b, err := s.Get(ctx, tc.key)
		_, serr := s.Size(ctx, tc.key)
		_, rerr := s.ReadAt(ctx, tc.key, make([]byte, 1), 0)
		switch tc.want {
		case notFound, denied:
			kind := zmap.ErrNotFound
			if tc.want == denied {
				kind = zmap.ErrPermission
			}
			for op, err := range map[string]error{"Get": err, "Size": serr, "ReadAt": rerr} {
				if !errors.Is(err, kind) {
					t.Errorf("%s(%q): %v; want %v", op, tc.key, err, kind)
				}
			}
			if tc.want == denied && !strings.Contains(err.Error(), "out of the dataset root") {
				t.Errorf("Get(%q): %v does not say the link leaves the root", tc.key, err)
			}
		default:
			if err != nil || string(b) != tc.want {
				t.Errorf("Get(%q) = %q, %v; want %q", tc.key, b, err, tc.want)
			}
		}
	}
	for _, tc := range []struct {
		prefix string
		want   []zmap.Entry
		kind   error
	}{
		{"dirlink", []zmap.Entry{{Name: "a", Size: 3}}, nil},
		{"absinside", []zmap.Entry{{Name: "a", Size: 3}}, nil},
		{"sub", []zmap.Entry{{Name: "b", Size: 1}, {Name: "climb2", Dir: true}, {Name: "uplink", Size: 3}}, nil},
		{"..", nil, nil},
		{"filelink", nil, nil},
		{"outsidedir", nil, zmap.ErrPermission},
		{"climb", nil, zmap.ErrPermission},
		{"chain", nil, zmap.ErrPermission},
	} {
		got, err := s.Search(ctx, tc.prefix)
		if tc.kind != nil {
			if !errors.Is(err, tc.kind) || got != nil {
				t.Errorf("Search(%q) = %v, %v; want %v", tc.prefix, got, err, tc.kind)
			}
			continue
		}
		if err != nil || !slices.Equal(zmaptest.WithoutTimes(got), tc.want) {
			t.Errorf("Search(%q) = %v, %v; want %v", tc.prefix, got, err, tc.want)
		}
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

// TestFollowLinks opens a tree of links out of the root, as git-annex
// writes a dataset (each file a relative link into .git/annex/objects of
// a repository above the dataset folder), with and without FollowLinks:
// without, every key through them is refused; with, they read as the files
// they point at, and broken ones are not there.
func TestFollowLinks(t *testing.T) {
	repo := t.TempDir()
	writeTree(t, repo, map[string][]byte{"objects/k1": []byte("zarr"), "objects/k2/x": []byte("x")})
	root := filepath.Join(repo, "ds")
	writeTree(t, root, map[string][]byte{"plain": []byte("p")})
	for name, target := range map[string]string{
		"rel":    "../objects/k1",
		"abs":    filepath.Join(repo, "objects", "k1"),
		"dir":    "../objects/k2",
		"broken": "../objects/none",
	} {
		if err := os.Symlink(target, filepath.Join(root, name)); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	for _, follow := range []bool{false, true} {
		s, err := OpenWith(root, Options{FollowLinks: follow})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		for key, want := range map[string]string{"rel": "zarr", "abs": "zarr", "dir/x": "x", "plain": "p"} {
			b, err := s.Get(ctx, key)
			e, serr := s.Stat(ctx, key)
			switch {
			case key == "plain" || follow:
				if err != nil || string(b) != want || serr != nil || e.Size != int64(len(want)) {
					t.Errorf("follow %v: Get(%q) = %q, %v; Stat %+v, %v; want %q", follow, key, b, err, e, serr, want)
				}
			case !errors.Is(err, zmap.ErrPermission) || !errors.Is(serr, zmap.ErrPermission):
				t.Errorf("follow %v: Get(%q): %v, Stat: %v; want ErrPermission", follow, key, err, serr)
			}
		}
		_, err = s.Get(ctx, "broken")
		if want := map[bool]error{false: zmap.ErrPermission, true: zmap.ErrNotFound}[follow]; !errors.Is(err, want) {
			t.Errorf("follow %v: Get(broken): %v, want %v", follow, err, want)
		}
		got, err := s.Search(ctx, "")
		wantTop := []zmap.Entry{{Name: "abs", Dir: true}, {Name: "broken", Dir: true}, {Name: "dir", Dir: true}, {Name: "plain", Size: 1}, {Name: "rel", Dir: true}}
		if follow {
			wantTop = []zmap.Entry{{Name: "abs", Size: 4}, {Name: "dir", Dir: true}, {Name: "plain", Size: 1}, {Name: "rel", Size: 4}}
		}
		if err != nil || !slices.Equal(zmaptest.WithoutTimes(got), wantTop) {
			t.Errorf("follow %v: Search(\"\") = %v, %v; want %v", follow, got, err, wantTop)
		}
		got, err = s.Search(ctx, "dir")
		if follow && (err != nil || !slices.Equal(zmaptest.WithoutTimes(got), []zmap.Entry{{Name: "x", Size: 1}})) {
			t.Errorf("Search(dir) = %v, %v", got, err)
		}
		if !follow && !errors.Is(err, zmap.ErrPermission) {
			t.Errorf("Search(dir): %v, want ErrPermission", err)
		}
	}
}
