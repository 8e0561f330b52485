package zip

import (
	stdzip "archive/zip"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/nczarrfs/nczarrfs/internal/testenv"
	"github.com/nczarrfs/nczarrfs/zmap"
	"github.com/nczarrfs/nczarrfs/zmap/zmaptest"
)

// python is the reference interpreter with the project's packages; the
// python3 on PATH may be another one.
const python = "/usr/bin/python3"

// member is one entry to write into a test archive.
type member struct {
	name    string
	content []byte
}

// sortedMembers returns objects as members in key order, with each name
// under folder (when not "").
func sortedMembers(objects map[string][]byte, folder string) []member {
	ms := make([]member, 0, len(objects))
	for key, content := range objects {
		ms = append(ms, member{zmap.Join(folder, key), content})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].name < ms[j].name })
	return ms
}

// goZip builds an archive with archive/zip's Writer, every entry with
// method. dirs are written as directory entries first, as "zip -r" does.
func goZip(t testing.TB, method uint16, dirs []string, members []member) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := stdzip.NewWriter(&buf)
	for _, d := range dirs {
		if _, err := w.CreateHeader(&stdzip.FileHeader{Name: d + "/", Method: stdzip.Store}); err != nil {
			t.Fatal(err)
		}
	}
	for _, m := range members {
		fw, err := w.CreateHeader(&stdzip.FileHeader{Name: m.name, Method: method})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := fw.Write(m.content); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// pyZipScript writes archives with Python's zipfile, which keeps names as
// given (absolute, with ".."), unlike most tools. Its standard input is a
// JSON object: archive path -> {"zip64": bool, "members": [[name,
// base64 content]]}; a name ending in "/" is a directory entry.
const pyZipScript = `
import base64, json, sys, zipfile
for path, spec in json.load(sys.stdin).items():
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED) as z:
        for name, content in spec["members"]:
            info = zipfile.ZipInfo(name)
            if name.endswith("/"):
                z.writestr(info, b"")
                continue
            with z.open(info, "w", force_zip64=spec["zip64"]) as f:
                f.write(base64.b64decode(content))
`

// pyZip is one archive for pyZips to write.
type pyZip struct {
	zip64   bool
	members []member
}

// pyZips writes each archive with Python's zipfile in one run of the
// interpreter.
func pyZips(t testing.TB, archives map[string]pyZip) {
	t.Helper()
	type spec struct {
		Zip64   bool        `json:"zip64"`
		Members [][2]string `json:"members"`
	}
	arg := map[string]spec{}
	for path, a := range archives {
		sp := spec{Zip64: a.zip64, Members: [][2]string{}}
		for _, m := range a.members {
			sp.Members = append(sp.Members, [2]string{m.name, base64.StdEncoding.EncodeToString(m.content)})
		}
		arg[path] = sp
	}
	js, err := json.Marshal(arg)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(python, "-c", pyZipScript)
	cmd.Stdin = bytes.NewReader(js)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("python zipfile: %v\n%s", err, out)
	}
}

// infoZip writes members to a directory and archives it with Info-ZIP's
// zip, passing it flags.
func infoZip(t testing.TB, members []member, flags ...string) string {
	t.Helper()
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	for _, m := range members {
		name := filepath.Join(src, filepath.FromSlash(m.name))
		if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(name, m.content, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(dir, "out.zip")
	cmd := exec.Command("zip", append(append([]string{"-q", "-r", "-D"}, flags...), out, ".")...)
	cmd.Dir = src
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("zip %v: %v\n%s", flags, err, b)
	}
	return out
}

func writeFile(t testing.TB, data []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "data.zip")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func openPath(t *testing.T, path string) *Store {
	t.Helper()
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestConformance(t *testing.T) {
	t.Run("Store", func(t *testing.T) {
		zmaptest.Run(t, func(t *testing.T, objects map[string][]byte) zmap.Store {
			return openPath(t, writeFile(t, goZip(t, stdzip.Store, nil, sortedMembers(objects, ""))))
		})
	})
	t.Run("Deflate", func(t *testing.T) {
		zmaptest.Run(t, func(t *testing.T, objects map[string][]byte) zmap.Store {
			data := goZip(t, stdzip.Deflate, nil, sortedMembers(objects, ""))
			s, err := newStore(bytes.NewReader(data), int64(len(data)))
			if err != nil {
				t.Fatal(err)
			}
			return s
		})
	})
	t.Run("Folder", func(t *testing.T) {
		// As "zip -r x.zip x.file" writes it, directory entries included.
		zmaptest.Run(t, func(t *testing.T, objects map[string][]byte) zmap.Store {
			dirs := []string{"x.file"}
			for key := range objects {
				for i := range len(key) {
					if key[i] == '/' {
						dirs = append(dirs, "x.file/"+key[:i])
					}
				}
			}
			slices.Sort(dirs)
			s := openPath(t, writeFile(t, goZip(t, stdzip.Deflate, slices.Compact(dirs), sortedMembers(objects, "x.file"))))
			if want := "x.file"; len(objects) > 0 && s.Root() != want {
				t.Fatalf("Root() = %q, want %q", s.Root(), want)
			}
			return s
		})
	})
	t.Run("InfoZIP64", func(t *testing.T) {
		zmaptest.Run(t, func(t *testing.T, objects map[string][]byte) zmap.Store {
			if len(objects) == 0 { // zip refuses to write an empty archive
				return openPath(t, writeFile(t, goZip(t, stdzip.Store, nil, nil)))
			}
			path := infoZip(t, sortedMembers(objects, ""), "-fz")
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Contains(data, []byte("PK\x06\x06")) {
				t.Fatal("zip -fz wrote no zip64 end of central directory record")
			}
			return openPath(t, path)
		})
	})
	t.Run("PythonZip64", func(t *testing.T) {
		// zarr-python's ZipStore writes with zipfile, stored.
		zmaptest.Run(t, func(t *testing.T, objects map[string][]byte) zmap.Store {
			path := filepath.Join(t.TempDir(), "py.zip")
			pyZips(t, map[string]pyZip{path: {zip64: true, members: sortedMembers(objects, "")}})
			return openPath(t, path)
		})
	})
}

// TestLayout checks root detection and which entries are left out, on
// archives written by Python's zipfile, which keeps any name.
func TestLayout(t *testing.T) {
	m := func(names ...string) []member {
		ms := make([]member, len(names))
		for i, n := range names {
			ms[i] = member{n, []byte("content of " + n)}
		}
		return ms
	}
	tests := []struct {
		name    string
		members []member
		root    string
		keys    []string // every key the store holds
	}{
		{"zgroup at top", m(".zgroup", "v/.zarray", "v/0.0"), "", []string{".zgroup", "v/.zarray", "v/0.0"}},
		{"zattrs at top", m(".zattrs", "v/.zarray"), "", []string{".zattrs", "v/.zarray"}},
		{"zarray at top", m(".zarray", "0.0"), "", []string{".zarray", "0.0"}},
		{"nczarr at top", m(".nczarr", "v/.nczarray"), "", []string{".nczarr", "v/.nczarray"}},
		{"netcdf-c folder", m("x.file/", "x.file/.zgroup", "x.file/v/", "x.file/v/.zarray", "x.file/v/0"), "x.file", []string{".zgroup", "v/.zarray", "v/0"}},
		{"nczarr v1 folder", m("d/.nczarr", "d/v/.nczarray"), "d", []string{".nczarr", "v/.nczarray"}},
		{"zarray folder", m("a.zarr/.zarray", "a.zarr/0"), "a.zarr", []string{".zarray", "0"}},
		{"folder without marker", m("x.file/g/.zgroup"), "", []string{"x.file/g/.zgroup"}},
		{"marker is a folder", m("x.file/.zgroup/y"), "", []string{"x.file/.zgroup/y"}},
		{"two folders: the first entry's", m("a/.zgroup", "b/.zgroup"), "a", []string{".zgroup"}},
		{"two folders, no group marker", m("a/.zarray", "b/.zarray"), "", []string{"a/.zarray", "b/.zarray"}},
		{"folder and top object", m("x.file/.zgroup", "README"), "x.file", []string{".zgroup"}},
		{"top object first", m("README", "x.file/.zgroup"), "", []string{"README", "x.file/.zgroup"}},
		// A dataset both at the top and under a folder: netcdf-c roots it at
		// the folder of the first entry.
		{"both, folder first", m("x.file/", "x.file/.zgroup", "x.file/v/.zarray", ".zgroup", "w/.zarray"), "x.file", []string{".zgroup", "v/.zarray"}},
		{"both, consolidated folder first", m("x.zarr/.zmetadata", ".zgroup", "x.zarr/v/0"), "x.zarr", []string{".zmetadata", "v/0"}},
		{"array folder of the top dataset first", m("v/.zarray", "v/0", ".zgroup"), "", []string{".zgroup", "v/.zarray", "v/0"}},
		{"top marker wins", m(".zgroup", "x.file/.zgroup"), "", []string{".zgroup", "x.file/.zgroup"}},
		{"two levels", m("a/b.file/.zgroup"), "", []string{"a/b.file/.zgroup"}},
		{"empty", nil, "", nil},
		{"only directories", m("a/", "a/b/"), "", nil},
		{
			"unsafe names left out",
			m("../evil", "/abs", "/x.file/.zgroup", "a/../../evil", "a/../b", "./c", "d/./e", "f//g", "h/", "x.file/.zgroup", "x.file/v/0"),
			"x.file",
			[]string{".zgroup", "v/0"},
		},
		{"unsafe names at top", m(".zgroup", "../.zgroup", "/.zarray", "..", "."), "", []string{".zgroup"}},
		// Zarr v3: zarr.json marks a root at the top (rule 2) and in the
		// only top folder (rule 3), not in the first entry's folder when
		// something lies beside it (rule 1 looks for v2 group markers).
		{"v3 at top", m("zarr.json", "v/zarr.json", "v/c/0/0"), "", []string{"v/c/0/0", "v/zarr.json", "zarr.json"}},
		{"v3 folder", m("x.zarr/", "x.zarr/zarr.json", "x.zarr/v/", "x.zarr/v/zarr.json", "x.zarr/v/c/0/0"), "x.zarr", []string{"v/c/0/0", "v/zarr.json", "zarr.json"}},
		{"v3 array folder", m("a.zarr/zarr.json", "a.zarr/c/0", "a.zarr/c/1"), "a.zarr", []string{"c/0", "c/1", "zarr.json"}},
		{"v3 folder without its zarr.json", m("x.zarr/g/zarr.json", "x.zarr/g/v/zarr.json"), "", []string{"x.zarr/g/v/zarr.json", "x.zarr/g/zarr.json"}},
		{"v3 folder and top object", m("x.zarr/zarr.json", "README"), "", []string{"README", "x.zarr/zarr.json"}},
		{"v3 both, folder first", m("x.zarr/zarr.json", "zarr.json", "w/zarr.json"), "", []string{"w/zarr.json", "x.zarr/zarr.json", "zarr.json"}},
		{"v3 two folders", m("a/zarr.json", "b/zarr.json"), "", []string{"a/zarr.json", "b/zarr.json"}},
		{"v3 beside a v2 group folder first", m("x.file/.zgroup", "x.file/v/zarr.json", "README"), "x.file", []string{".zgroup", "v/zarr.json"}},
	}
	dir := t.TempDir()
	archives := map[string]pyZip{}
	for i, tc := range tests {
		archives[filepath.Join(dir, strings.Repeat("z", i+1)+".zip")] = pyZip{members: tc.members}
	}
	pyZips(t, archives)
	ctx := context.Background()
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := openPath(t, filepath.Join(dir, strings.Repeat("z", i+1)+".zip"))
			defer s.Close()
			if s.Root() != tc.root {
				t.Errorf("Root() = %q, want %q", s.Root(), tc.root)
			}
			if got := allKeys(t, s, ""); !slices.Equal(got, tc.keys) {
				t.Errorf("keys = %q, want %q", got, tc.keys)
			}
			for _, key := range tc.keys {
				b, err := s.Get(ctx, key)
				want := "content of " + zmap.Join(tc.root, key)
				if err != nil || string(b) != want {
					t.Errorf("Get(%q) = %q, %v; want %q", key, b, err, want)
				}
			}
			for _, key := range []string{"../evil", "evil", "/abs", "abs", "b", "c", "e", "g", "h"} {
				if slices.Contains(tc.keys, key) {
					continue
				}
				if _, err := s.Get(ctx, key); !errors.Is(err, zmap.ErrNotFound) {
					t.Errorf("Get(%q): %v, want ErrNotFound", key, err)
				}
			}
		})
	}
}

// allKeys walks the tree with Search and returns every object key, sorted.
func allKeys(t *testing.T, s zmap.Store, prefix string) []string {
	t.Helper()
	entries, err := s.Search(context.Background(), prefix)
	if err != nil {
		t.Fatalf("Search(%q): %v", prefix, err)
	}
	var keys []string
	for _, e := range entries {
		key := zmap.Join(prefix, e.Name)
		if e.Dir {
			keys = append(keys, allKeys(t, s, key)...)
		} else {
			keys = append(keys, key)
		}
	}
	return keys
}

// TestDuplicatesAndConflicts: the later of two same-named entries wins, and
// a name that is both an object and a prefix is listed as a Dir but can
// still be read.
func TestDuplicatesAndConflicts(t *testing.T) {
	data := goZip(t, stdzip.Deflate, nil, []member{
		{"a", []byte("first")},
		{"b/c", []byte("c")},
		{"a", []byte("second")},
		{"b", []byte("object b")},
		{"d", []byte("object d")},
		{"d/e", []byte("e")},
	})
	s, err := newStore(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	got, err := s.Search(ctx, "")
	want := []zmap.Entry{{Name: "a", Size: 6}, {Name: "b", Dir: true}, {Name: "d", Dir: true}}
	if err != nil || !slices.Equal(zmaptest.WithoutTimes(got), want) {
		t.Errorf("Search(\"\") = %v, %v; want %v", got, err, want)
	}
	for key, want := range map[string]string{"a": "second", "b": "object b", "b/c": "c", "d": "object d", "d/e": "e"} {
		if b, err := s.Get(ctx, key); err != nil || string(b) != want {
			t.Errorf("Get(%q) = %q, %v; want %q", key, b, err, want)
		}
	}
}

func TestNotZip(t *testing.T) {
	valid := goZip(t, stdzip.Deflate, nil, []member{{".zgroup", []byte("{}")}, {"v/0", bytes.Repeat([]byte("x"), 1000)}})
	end := bytes.LastIndex(valid, []byte("PK\x05\x06"))
	dirStart := bytes.Index(valid, []byte("PK\x01\x02"))
	badDir := slices.Clone(valid)
	copy(badDir[dirStart:], "XX")
	r := rand.New(rand.NewPCG(1, 2))
	noise := make([]byte, 300)
	for i := range noise {
		noise[i] = byte(r.UintN(256))
	}
	for _, tc := range []struct {
		name string
		data []byte
	}{
		{"empty", nil},
		{"text", []byte("hello, this is not a zip file\n")},
		{"noise", noise},
		{"gzip", []byte("\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03\x03\x00\x00\x00\x00\x00\x00\x00\x00\x00")},
		{"truncated", valid[:len(valid)-10]},
		{"no end record", valid[:end]},
		{"bad central directory", badDir},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeFile(t, tc.data)
			_, err := Open(path)
			if !errors.Is(err, ErrNotZip) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "not a zip file") {
				t.Errorf("Open = %v; want an error wrapping ErrNotZip naming %s", err, path)
			}
			if _, err := newStore(bytes.NewReader(tc.data), int64(len(tc.data))); !errors.Is(err, ErrNotZip) {
				t.Errorf("newStore = %v; want an error wrapping ErrNotZip", err)
			}
		})
	}
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.zip")
	if _, err := Open(missing); !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), missing) {
		t.Errorf("Open(missing) = %v; want fs.ErrNotExist naming the path", err)
	}
	if _, err := Open(dir); err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Errorf("Open(directory) = %v; want an 'is a directory' error", err)
	}
}

// TestCorrupt flips a byte of each entry's data: Get must fail rather than
// return wrong bytes, and so must ReadAt of a deflated entry.
func TestCorrupt(t *testing.T) {
	content := bytes.Repeat([]byte("0123456789abcdef"), 500)
	for _, method := range []uint16{stdzip.Store, stdzip.Deflate} {
		data := goZip(t, method, nil, []member{{".zgroup", []byte("{}")}, {"v/0", content}})
		zr, err := stdzip.NewReader(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			t.Fatal(err)
		}
		off, err := zr.File[1].DataOffset()
		if err != nil {
			t.Fatal(err)
		}
		data[off+int64(zr.File[1].CompressedSize64)/2] ^= 0x55
		s, err := newStore(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		b, err := s.Get(ctx, "v/0")
		if err == nil {
			t.Errorf("method %d: Get of a corrupt entry = %d bytes, nil; want an error", method, len(b))
		}
		if method == stdzip.Store {
			// Only the CRC can tell; a ranged ReadAt cannot check it.
			if !errors.Is(err, stdzip.ErrChecksum) {
				t.Errorf("Get of a corrupt stored entry: %v; want zip.ErrChecksum", err)
			}
			continue
		}
		if n, err := s.ReadAt(ctx, "v/0", make([]byte, 10), 0); err == nil {
			t.Errorf("method %d: ReadAt of a corrupt entry = %d, nil; want an error", method, n)
		}
	}
}

// TestCorruptSizes checks that a central directory claiming sizes the data
// cannot have is refused at open.
func TestCorruptSizes(t *testing.T) {
	data := goZip(t, stdzip.Store, nil, []member{{"a", []byte("hello")}})
	// The central directory header's uncompressed size field is at offset
	// 24 from its signature.
	dir := bytes.Index(data, []byte("PK\x01\x02"))
	copy(data[dir+24:], []byte{0xff, 0xff, 0xff, 0x7f})
	_, err := newStore(bytes.NewReader(data), int64(len(data)))
	if !errors.Is(err, stdzip.ErrFormat) || !strings.Contains(err.Error(), "corrupt") {
		t.Errorf("newStore = %v; want a corrupt-archive error", err)
	}
}

// TestInfoZipMethods reads archives written by Info-ZIP's zip: encrypted
// entries and bzip2 entries are listed but fail to read with a clear error.
func TestInfoZipMethods(t *testing.T) {
	content := bytes.Repeat([]byte("compressible "), 200)
	members := []member{{".zgroup", []byte("{}")}, {"v/0", content}}
	for _, tc := range []struct {
		name  string
		flags []string
		want  string // error text for v/0; "" means it reads fine
	}{
		{"deflate", nil, ""},
		{"stored", []string{"-0"}, ""},
		{"bzip2", []string{"-Z", "bzip2"}, "compression method 12 is not supported"},
		{"encrypted stored", []string{"-0", "-P", "secret"}, "encrypted"},
		{"encrypted deflate", []string{"-P", "secret"}, "encrypted"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := openPath(t, infoZip(t, members, tc.flags...))
			defer s.Close()
			ctx := context.Background()
			if size, err := s.Size(ctx, "v/0"); err != nil || size != int64(len(content)) {
				t.Errorf("Size = %d, %v; want %d", size, err, len(content))
			}
			b, err := s.Get(ctx, "v/0")
			p := make([]byte, 100)
			n, rerr := s.ReadAt(ctx, "v/0", p, 50)
			if tc.want == "" {
				if err != nil || !bytes.Equal(b, content) {
					t.Errorf("Get = %d bytes, %v; want the content", len(b), err)
				}
				if rerr != nil || n != len(p) || !bytes.Equal(p, content[50:150]) {
					t.Errorf("ReadAt = %d, %v; want the content", n, rerr)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Get = %d bytes, %v; want an error with %q", len(b), err, tc.want)
			}
			if rerr == nil || !strings.Contains(rerr.Error(), tc.want) {
				t.Errorf("ReadAt = %d, %v; want an error with %q", n, rerr, tc.want)
			}
		})
	}
}

// countingReaderAt counts the bytes read through it.
type countingReaderAt struct {
	r     io.ReaderAt
	bytes atomic.Int64
	calls atomic.Int64
}

func (c *countingReaderAt) ReadAt(p []byte, off int64) (int, error) {
	c.calls.Add(1)
	n, err := c.r.ReadAt(p, off)
	c.bytes.Add(int64(n))
	return n, err
}

// TestStoredRange checks that ReadAt of a stored entry reads only the
// requested range (plus the entry's local header, once), not the entry.
func TestStoredRange(t *testing.T) {
	content := make([]byte, 1<<20)
	for i := range content {
		content[i] = byte(i * 7)
	}
	data := goZip(t, stdzip.Store, nil, []member{{".zgroup", []byte("{}")}, {"v/0", content}})
	cr := &countingReaderAt{r: bytes.NewReader(data)}
	s, err := newStore(cr, int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i, off := range []int64{0, 12345, 1<<20 - 10} {
		before := cr.bytes.Load()
		p := make([]byte, 10)
		if n, err := s.ReadAt(ctx, "v/0", p, off); n != 10 || err != nil || !bytes.Equal(p, content[off:off+10]) {
			t.Fatalf("ReadAt(off %d) = %d, %v", off, n, err)
		}
		read := cr.bytes.Load() - before
		limit := int64(10)
		if i == 0 {
			limit += 30 + 64 // the local header, read once
		}
		if read > limit {
			t.Errorf("ReadAt of 10 bytes at %d read %d bytes of the archive, want at most %d", off, read, limit)
		}
	}
}

// TestClose checks that a Store from Open closes its file and one from newStore
// leaves the caller's ReaderAt open.
func TestClose(t *testing.T) {
	path := writeFile(t, goZip(t, stdzip.Store, nil, []member{{".zgroup", []byte("{}")}}))
	s := openPath(t, path)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ReadAt(context.Background(), ".zgroup", make([]byte, 2), 0); err == nil {
		t.Error("ReadAt after Close succeeded; want an error from the closed file")
	}

	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	s, err = newStore(f, fi.Size())
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := f.ReadAt(make([]byte, 1), 0); err != nil {
		t.Errorf("the caller's file after Close: %v", err)
	}
}

func TestWindow(t *testing.T) {
	input := []byte("0123456789abcdefghij")
	for _, tc := range []struct {
		off    int64
		n      int
		chunks []int
	}{
		{0, 20, []int{20}},
		{5, 3, []int{1, 1, 1, 1, 1, 1, 1, 1, 12}},
		{5, 10, []int{4, 2, 14}},
		{19, 1, []int{7, 7, 6}},
		{0, 1, []int{3, 17}},
		{3, 0, []int{20}},
	} {
		w := &window{p: make([]byte, tc.n), off: tc.off}
		rest := input
		for _, c := range tc.chunks {
			if n, err := w.Write(rest[:c]); n != c || err != nil {
				t.Fatalf("Write = %d, %v", n, err)
			}
			rest = rest[c:]
		}
		if want := input[tc.off : tc.off+int64(tc.n)]; !bytes.Equal(w.p, want) {
			t.Errorf("window(off %d, n %d, chunks %v) = %q, want %q", tc.off, tc.n, tc.chunks, w.p, want)
		}
	}
}

// FuzzOpen feeds arbitrary bytes to newStore and reads whatever store comes
// out: nothing may panic or hang, and the methods must agree.
func FuzzOpen(f *testing.F) {
	small := []member{{".zgroup", []byte("{}")}, {"v/.zarray", []byte(`{"shape":[2]}`)}, {"v/0", bytes.Repeat([]byte{1, 2, 3}, 50)}, {"e", nil}}
	f.Add(goZip(f, stdzip.Store, nil, small))
	f.Add(goZip(f, stdzip.Deflate, nil, small))
	f.Add(goZip(f, stdzip.Deflate, []string{"x.file", "x.file/v"}, sortedMembers(map[string][]byte{".zgroup": {}, "v/0": []byte("abc")}, "x.file")))
	f.Add(goZip(f, stdzip.Store, nil, nil))
	f.Add([]byte("PK\x05\x06"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := newStore(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			return
		}
		defer s.Close()
		ctx := context.Background()
		var walk func(prefix string, depth int)
		walk = func(prefix string, depth int) {
			entries, err := s.Search(ctx, prefix)
			if err != nil {
				t.Fatalf("Search(%q): %v", prefix, err)
			}
			for _, e := range entries {
				key := zmap.Join(prefix, e.Name)
				if e.Dir {
					walk(key, depth+1)
					continue
				}
				size, err := s.Size(ctx, key)
				if err != nil || size != e.Size {
					t.Fatalf("Size(%q) = %d, %v; Search said %d", key, size, err, e.Size)
				}
				b, gerr := s.Get(ctx, key)
				if gerr == nil && int64(len(b)) != size {
					t.Fatalf("Get(%q) = %d bytes, Size %d", key, len(b), size)
				}
				p := make([]byte, 7)
				off := size / 2
				n, rerr := s.ReadAt(ctx, key, p, off)
				if n > len(p) || (n < len(p) && rerr == nil) {
					t.Fatalf("ReadAt(%q) = %d, %v", key, n, rerr)
				}
				if gerr == nil && (rerr == nil || rerr == io.EOF) && !bytes.Equal(p[:n], b[off:off+int64(n)]) {
					t.Fatalf("ReadAt(%q) disagrees with Get", key)
				}
			}
		}
		walk("", 0)
	})
}

// benchZip builds an archive with one 16 MiB entry written with method.
func benchZip(b *testing.B, method uint16, size int) (*Store, []byte) {
	content := make([]byte, size)
	r := rand.New(rand.NewPCG(3, 4))
	for i := range content {
		content[i] = byte(r.UintN(16)) // compressible, not trivially
	}
	path := writeFile(b, goZip(b, method, nil, []member{{".zgroup", []byte("{}")}, {"v/0", content}}))
	s, err := Open(path)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s, content
}

// BenchmarkReadAtStored reads 64 KiB at random offsets of a 16 MiB stored
// entry of a zip file.
func BenchmarkReadAtStored(b *testing.B) {
	s, content := benchZip(b, stdzip.Store, 16<<20)
	benchReadAt(b, s, content, 64<<10)
}

// BenchmarkReadAtDeflated does the same on a 1 MiB deflated entry, which
// each ReadAt inflates.
func BenchmarkReadAtDeflated(b *testing.B) {
	s, content := benchZip(b, stdzip.Deflate, 1<<20)
	benchReadAt(b, s, content, 64<<10)
}

func benchReadAt(b *testing.B, s *Store, content []byte, n int) {
	ctx := context.Background()
	p := make([]byte, n)
	r := rand.New(rand.NewPCG(5, 6))
	b.SetBytes(int64(n))
	for b.Loop() {
		off := r.Int64N(int64(len(content) - n))
		if got, err := s.ReadAt(ctx, "v/0", p, off); got != n || err != nil {
			b.Fatalf("ReadAt = %d, %v", got, err)
		}
	}
}

// TestReferenceTools opens archives that the reference tools write:
// zarr-python's ZipStore (dataset at the top level) and netcdf-c's tree
// zipped with "zip -r" (dataset under one folder, the layout netcdf-c's
// own zip mode uses). Every object must list and read as the tool wrote it.
func TestReferenceTools(t *testing.T) {
	dir := t.TempDir()
	cdl := filepath.Join(dir, "t.cdl")
	if err := os.WriteFile(cdl, []byte(`netcdf t {
dimensions:
  x = 6 ;
  y = 5 ;
variables:
  int v(x, y) ;
  double w(y) ;
data:
  v = 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19,
      20, 21, 22, 23, 24, 25, 26, 27, 28, 29 ;
  w = 0.5, 1.5, 2.5, 3.5, 4.5 ;
}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	ncgen := exec.Command("ncgen", "-4", "-lb", "-o", "file://"+filepath.Join(dir, "t.file")+"#mode=nczarr,file", cdl)
	if out, err := ncgen.CombinedOutput(); err != nil {
		t.Fatalf("ncgen: %v\n%s", err, out)
	}
	zipCmd := exec.Command("zip", "-q", "-r", "t.zip", "t.file")
	zipCmd.Dir = dir
	if out, err := zipCmd.CombinedOutput(); err != nil {
		t.Fatalf("zip: %v\n%s", err, out)
	}

	// zarr-python writes its own zip; python reads back every member.
	zarrZip := filepath.Join(dir, "z.zip")
	script := `
import base64, json, sys, zipfile
import numpy as np, zarr
st = zarr.ZipStore(sys.argv[1], mode="w")
g = zarr.group(store=st)
a = g.create_dataset("g1/v", shape=(5, 7), chunks=(2, 3), dtype="<i4")
a[:] = np.arange(35).reshape(5, 7)
g.attrs["title"] = "zarr zip"
st.close()
with zipfile.ZipFile(sys.argv[1]) as z:
    json.dump({n: base64.b64encode(z.read(n)).decode() for n in z.namelist()}, sys.stdout)
`
	out, err := exec.Command(python, "-c", script, zarrZip).Output()
	if err != nil {
		t.Fatalf("zarr-python: %v", err)
	}
	var zarrWant map[string][]byte // encoding/json decodes base64 into []byte
	if err := json.Unmarshal(out, &zarrWant); err != nil {
		t.Fatal(err)
	}

	checkArchives(t, []archiveCase{
		{"netcdf-c tree zipped", filepath.Join(dir, "t.zip"), "t.file", treeObjects(t, filepath.Join(dir, "t.file"))},
		{"zarr-python ZipStore", zarrZip, "", zarrWant},
	})
}

// archiveCase is an archive a reference tool wrote, the root it must have
// and every object the store must hold under it.
type archiveCase struct {
	name, path, root string
	want             map[string][]byte
}

// checkArchives opens each archive and checks its root, its keys and the
// bytes of every object.
func checkArchives(t *testing.T, cases []archiveCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := openPath(t, tc.path)
			defer s.Close()
			if s.Root() != tc.root {
				t.Errorf("Root() = %q, want %q", s.Root(), tc.root)
			}
			wantKeys := make([]string, 0, len(tc.want))
			for k := range tc.want {
				wantKeys = append(wantKeys, k)
			}
			slices.Sort(wantKeys)
			if got := allKeys(t, s, ""); !slices.Equal(got, wantKeys) {
				t.Errorf("keys = %q, want %q", got, wantKeys)
			}
			for _, key := range wantKeys {
				if b, err := s.Get(context.Background(), key); err != nil || !bytes.Equal(b, tc.want[key]) {
					t.Errorf("Get(%q) = %q, %v; want %q", key, b, err, tc.want[key])
				}
			}
		})
	}
}

// treeObjects returns every file under tree, by its slash-separated path
// relative to tree.
func treeObjects(t *testing.T, tree string) map[string][]byte {
	t.Helper()
	objects := map[string][]byte{}
	err := filepath.WalkDir(tree, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(tree, path)
		if err != nil {
			return err
		}
		objects[filepath.ToSlash(rel)], err = os.ReadFile(path)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return objects
}

// zarritaScript writes, with zarrita (Zarr v3), a group with a sub-group
// and arrays into the folder argv[1], and a lone array into argv[2].
const zarritaScript = `
import path from "node:path";
import { pathToFileURL } from "node:url";
const mods = process.env.NCZARRFS_NODE_MODULES;
const zarr = await import(pathToFileURL(path.join(mods, "zarrita/dist/src/index.js")).href);
const FileSystemStore = (await import(pathToFileURL(path.join(mods, "@zarrita/storage/dist/src/fs.js")).href)).default;
const root = zarr.root(new FileSystemStore(process.argv[1]));
await zarr.create(root, { attributes: { title: "zarrita zip" } });
await zarr.create(root.resolve("g1"), { attributes: {} });
const v = await zarr.create(root.resolve("g1/v"), { shape: [5, 7], chunkShape: [2, 3], dtype: "int32" });
await zarr.set(v, null, { data: Int32Array.from({ length: 35 }, (_, i) => i), shape: [5, 7], stride: [7, 1] });
const w = await zarr.create(root.resolve("w"), { shape: [4], chunkShape: [3], dtype: "float64", chunkSeparator: "." });
await zarr.set(w, null, { data: Float64Array.from([0.5, 1.5, 2.5, 3.5]), shape: [4], stride: [1] });
const lone = zarr.root(new FileSystemStore(process.argv[2]));
const a = await zarr.create(lone, { shape: [6], chunkShape: [4], dtype: "uint8" });
await zarr.set(a, null, { data: Uint8Array.from([1, 2, 3, 4, 5, 6]), shape: [6], stride: [1] });
`

// TestZarritaZipped opens Zarr v3 stores that zarrita wrote, zipped by
// Info-ZIP's zip as people zip them: with their folder ("zip -r x.zip
// x.zarr", rooted at that folder by its zarr.json), from inside it (rooted
// at the top), and an array alone with its folder.
func TestZarritaZipped(t *testing.T) {
	_, err := exec.LookPath("node")
	testenv.Require(t, "node (Debian package nodejs)", err)
	mods, err := exec.Command("../../scripts/install-zarrita.sh").Output()
	testenv.Require(t, "zarrita (npm: scripts/install-zarrita.sh)", err)
	dir := t.TempDir()
	node := exec.Command("node", "--input-type=module", "-e", zarritaScript, filepath.Join(dir, "x.zarr"), filepath.Join(dir, "a.zarr"))
	node.Env = append(os.Environ(), "NCZARRFS_NODE_MODULES="+strings.TrimSpace(string(mods)))
	if out, err := node.CombinedOutput(); err != nil {
		t.Fatalf("zarrita: %v\n%s", err, out)
	}
	zipIn := func(wd, name string, args ...string) string {
		cmd := exec.Command("zip", append([]string{"-q", "-r", filepath.Join(dir, name)}, args...)...)
		cmd.Dir = wd
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("zip: %v\n%s", err, out)
		}
		return filepath.Join(dir, name)
	}
	x, a := treeObjects(t, filepath.Join(dir, "x.zarr")), treeObjects(t, filepath.Join(dir, "a.zarr"))
	if len(x) < 10 || x["zarr.json"] == nil || x["g1/v/c/2/2"] == nil || x["w/c.1"] == nil {
		t.Fatalf("zarrita wrote %d objects, not the store the test expects", len(x))
	}
	checkArchives(t, []archiveCase{
		{"group zipped with its folder", zipIn(dir, "x.zip", "x.zarr"), "x.zarr", x},
		{"group zipped from inside", zipIn(filepath.Join(dir, "x.zarr"), "top.zip", "."), "", x},
		{"array zipped with its folder", zipIn(dir, "a.zip", "a.zarr"), "a.zarr", a},
	})
}
