package nczarr

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/nczarrfs/nczarrfs/zmap"
)

// FuzzOpen runs Open, and everything the mount then asks of the metadata
// (the groups, their attributes and layout, each array's decoded bytes),
// on a store made from the fuzzer's input, so that every metadata
// representation is fuzzed through the path a mount takes: Zarr v2
// .zgroup/.zarray/.zattrs, consolidated .zmetadata, each NCZarr
// generation (4.8 V1 objects, _NCZARR_* keys in .zgroup/.zarray, the
// superblock in .zattrs), and Zarr v3 zarr.json (plain, consolidated,
// sharded, NCZarr v3).
//
// The seeds in testdata/open are the metadata objects (every object whose
// name starts with ".", and zarr.json) of each dataset tree that
// test/fixtures/gen_zarr.py, gen_nczarr.py and gen_v3.mjs write with
// zarr-python, ncgen and zarrita, and zarr-objects.txt, object arrays
// (vlen-utf8, vlen-bytes, JSON, MsgPack) with their chunks, written by
// zarr-python; packed in the format parseMemStore reads
// (testdata/open/README.md says how). Crashers the fuzzer finds are kept by go test in
// testdata/fuzz/FuzzOpen and rerun by every go test.
func FuzzOpen(f *testing.F) {
	seeds, err := filepath.Glob(filepath.Join("testdata", "open", "*.txt"))
	if err != nil || len(seeds) == 0 {
		f.Fatalf("no seeds in testdata/open (%v)", err)
	}
	for _, name := range seeds {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	f.Fuzz(func(t *testing.T, data []byte) {
		ctx := context.Background()
		st := parseMemStore(data)
		d, err := Open(ctx, st, Options{Logger: log, Parallel: 2})
		if err != nil {
			return
		}
		// The tree is a tree: every path is canonical, and every child
		// sits one level below its group (else walking it could loop).
		for _, path := range append(d.Groups(), d.Arrays()...) {
			if path != "" && !zmap.ValidKey(path) {
				t.Fatalf("a node has the path %q", path)
			}
		}
		for _, path := range d.Groups() {
			g := d.Group(path)
			if g == nil {
				t.Fatalf("Groups lists %q, Group(%q) is nil", path, path)
			}
			for _, c := range append(slices.Clone(g.Groups), g.Arrays...) {
				if parent, _ := splitKey(c); c == "" || parent != path {
					t.Fatalf("group %q lists the child %q", path, c)
				}
			}
			// Bad metadata may make these fail; they must not panic.
			_, _ = d.Attrs(ctx, path)
			_, _ = d.Layout(ctx, path)
		}
		for _, path := range d.Arrays() {
			a := d.Array(path)
			if a == nil {
				t.Fatalf("Arrays lists %q, Array(%q) is nil", path, path)
			}
			_, _ = d.Attrs(ctx, path)
			if a.Err == nil && a.Objects() {
				// Object arrays are read whole, as one JSON document.
				if n, ok := product(a.Meta.Shape); ok && n <= 1<<16 {
					_, _ = a.JSON(ctx)
				}
				continue
			}
			if a.Err != nil {
				buf := make([]byte, 8)
				if n, err := a.ReadAt(ctx, buf, 0); err == nil && n > 0 {
					t.Fatalf("array %q has Err %v, yet ReadAt returned %d bytes", path, a.Err, n)
				}
				continue
			}
			if a.Size() < 0 || a.ItemSize <= 0 {
				t.Fatalf("array %q: size %d, item size %d", path, a.Size(), a.ItemSize)
			}
			// Read small arrays of few chunks whole: chunks that are
			// not stored are the fill value, stored ones are decoded.
			chunkElems, _ := product(a.Meta.Chunks)
			chunk := chunkElems * int64(a.ItemSize)
			if a.Size() > 1<<20 || chunk > 1<<20 || a.Size() > 4096*max(chunk, 1) {
				continue
			}
			buf := make([]byte, a.Size()+1)
			n, err := a.ReadAt(ctx, buf, 0)
			if err == nil || errors.Is(err, io.EOF) {
				if int64(n) != a.Size() {
					t.Fatalf("array %q: read %d bytes of %d, %v", path, n, a.Size(), err)
				}
			}
		}
	})
}

// TestOpenSeeds checks that every seed of FuzzOpen opens as the
// representation it was written in, with arrays that can be read, so that
// the fuzzer starts from inputs that reach deep into the metadata paths.
func TestOpenSeeds(t *testing.T) {
	type kind struct {
		prefix       string // of the seed's file name
		gen          Generation
		consolidated bool
	}
	want := []kind{
		{"nczarr-4.8-v1", NCZarrV1, false},
		{"nczarr-4.9.0-", NCZarr48, false},
		{"nczarr-4.9.2-", NCZarr49, false},
		{"nczarr-4.9.3-", NCZarr2, false},
		{"zarr-consolidated", PureZarr, true},
		{"zarr-xarray", PureZarr, true}, // xarray's to_zarr consolidates
		{"zarr-", PureZarr, false},
		{"v3-consolidated", ZarrV3, true},
		{"v3-nczarr", NCZarrV3, false},
		{"v3-", ZarrV3, false},
	}
	seeds, err := filepath.Glob(filepath.Join("testdata", "open", "*.txt"))
	if err != nil || len(seeds) == 0 {
		t.Fatalf("no seeds in testdata/open (%v)", err)
	}
	seen := map[Generation]bool{}
	for _, name := range seeds {
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		d, err := Open(context.Background(), parseMemStore(data), Options{})
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		base := filepath.Base(name)
		i := slices.IndexFunc(want, func(w kind) bool { return strings.HasPrefix(base, w.prefix) })
		if i < 0 {
			t.Errorf("%s: no expected generation for this name", name)
			continue
		}
		if d.Generation != want[i].gen || d.Consolidated != want[i].consolidated {
			t.Errorf("%s: opened as %q (consolidated %v), want %q (%v)", name, d.Generation, d.Consolidated, want[i].gen, want[i].consolidated)
		}
		seen[d.Generation] = true
		good := 0
		for _, path := range d.Arrays() {
			a := d.Array(path)
			if a.Err != nil {
				continue
			}
			good++
			if a.Objects() {
				if _, err := a.JSON(context.Background()); err != nil {
					t.Errorf("%s: object array %s: %v", name, path, err)
				}
			}
		}
		if good == 0 {
			t.Errorf("%s: no readable array among %q", name, d.Arrays())
		}
	}
	if len(seen) != 7 {
		t.Errorf("the seeds cover %d of the 7 generations: %v", len(seen), seen)
	}
}

// TestMemStore checks the fuzz store against the zmap contract on one
// seed, so that a fuzz failure is Open's and not the store's.
func TestMemStore(t *testing.T) {
	st := parseMemStore([]byte("-- .zgroup --\n{}\n\n-- g/v/.zarray --\nA\n-- g/v/0 --\nBC\n\n-- g/../x --\nbad\n-- h/ --\nbad"))
	ctx := context.Background()
	for key, want := range map[string]string{".zgroup": "{}\n", "g/v/.zarray": "A", "g/v/0": "BC\n"} {
		got, err := st.Get(ctx, key)
		if err != nil || string(got) != want {
			t.Errorf("Get(%q) = %q, %v; want %q", key, got, err, want)
		}
	}
	for _, key := range []string{"g/../x", "x", "h/", "h", "g", ""} {
		if _, err := st.Get(ctx, key); !errors.Is(err, zmap.ErrNotFound) {
			t.Errorf("Get(%q) = %v, want ErrNotFound", key, err)
		}
	}
	p := make([]byte, 4)
	if n, err := st.ReadAt(ctx, "g/v/0", p, 1); n != 2 || err != io.EOF || string(p[:n]) != "C\n" {
		t.Errorf("ReadAt(g/v/0, 4 at 1) = %d %q, %v; want 2 %q, EOF", n, p[:n], err, "C\n")
	}
	for prefix, want := range map[string]string{"": ".zgroup g/", "g": "v/", "g/v": ".zarray 0", "x": ""} {
		es, err := st.Search(ctx, prefix)
		var names []string
		for _, e := range es {
			n := e.Name
			if e.Dir {
				n += "/"
			}
			names = append(names, n)
		}
		if err != nil || strings.Join(names, " ") != want || es == nil {
			t.Errorf("Search(%q) = %q, %v; want %q", prefix, names, err, want)
		}
	}
}

// memStore is a zmap.Store over objects in memory.
type memStore struct {
	objects map[string][]byte
}

// parseMemStore reads a store from data: a sequence of objects, each a
// header line "-- KEY --" followed by the object's bytes, which end one
// newline before the next header line or the end of data (so that a
// binary chunk can be stored exactly). Keys that are not canonical
// (zmap.ValidKey) are dropped; a later object replaces an earlier one.
func parseMemStore(data []byte) *memStore {
	s := &memStore{objects: map[string][]byte{}}
	key, valid := "", false
	var body []byte
	flush := func() {
		if valid {
			s.objects[key] = bytes.TrimSuffix(body, []byte("\n"))
		}
	}
	for len(data) > 0 {
		line, rest, found := bytes.Cut(data, []byte("\n"))
		if found {
			line = data[:len(line)+1]
		}
		data = rest
		if k, ok := header(line); ok {
			flush()
			key, valid, body = k, zmap.ValidKey(k), []byte{}
			continue
		}
		body = append(body, line...)
	}
	flush()
	return s
}

// header returns the key of a header line "-- KEY --\n".
func header(line []byte) (string, bool) {
	l := strings.TrimSuffix(string(line), "\n")
	k, ok := strings.CutPrefix(l, "-- ")
	if !ok {
		return "", false
	}
	return strings.CutSuffix(k, " --")
}

func (s *memStore) object(op, key string) ([]byte, error) {
	b, ok := s.objects[key]
	if !ok {
		return nil, fmt.Errorf("mem: %s %q: %w", op, key, zmap.ErrNotFound)
	}
	return b, nil
}

func (s *memStore) Get(ctx context.Context, key string) ([]byte, error) {
	b, err := s.object("get", key)
	return slices.Clone(b), err
}

func (s *memStore) ReadAt(ctx context.Context, key string, p []byte, off int64) (int, error) {
	b, err := s.object("read", key)
	if err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, fmt.Errorf("mem: read %q: negative offset %d", key, off)
	}
	if off >= int64(len(b)) {
		return 0, io.EOF
	}
	n := copy(p, b[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (s *memStore) Size(ctx context.Context, key string) (int64, error) {
	b, err := s.object("size", key)
	return int64(len(b)), err
}

// Stat is the object's Entry (no modification time).
func (s *memStore) Stat(ctx context.Context, key string) (zmap.Entry, error) {
	b, err := s.object("stat", key)
	if err != nil {
		return zmap.Entry{}, err
	}
	_, name := splitKey(key)
	return zmap.Entry{Name: name, Size: int64(len(b))}, nil
}

func (s *memStore) Search(ctx context.Context, prefix string) ([]zmap.Entry, error) {
	lead := ""
	if prefix != "" {
		if !zmap.ValidKey(prefix) {
			return nil, fmt.Errorf("mem: search %q: %w", prefix, zmap.ErrNotFound)
		}
		lead = prefix + "/"
	}
	seen := map[string]int{}
	entries := []zmap.Entry{}
	for key, b := range s.objects {
		rest, ok := strings.CutPrefix(key, lead)
		if !ok {
			continue
		}
		name, _, deeper := strings.Cut(rest, "/")
		if i, ok := seen[name]; ok {
			if deeper {
				entries[i] = zmap.Entry{Name: name, Dir: true}
			}
			continue
		}
		seen[name] = len(entries)
		if deeper {
			entries = append(entries, zmap.Entry{Name: name, Dir: true})
		} else {
			entries = append(entries, zmap.Entry{Name: name, Size: int64(len(b))})
		}
	}
	slices.SortFunc(entries, func(a, b zmap.Entry) int { return strings.Compare(a.Name, b.Name) })
	return entries, nil
}

func (s *memStore) Close() error { return nil }

// product multiplies sizes, reporting overflow.
func product(dims []int64) (int64, bool) {
	n := int64(1)
	for _, d := range dims {
		if d < 0 || d > 0 && n > math.MaxInt64/d {
			return 0, false
		}
		n *= d
	}
	return n, true
}
