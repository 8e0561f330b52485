// Package zmaptest is the conformance suite every zmap.Store backend runs.
//
// A backend's test calls Run with a function that builds a store holding
// exactly a given set of objects (writing files, a zip archive, uploading to
// a bucket...). Run checks every method against the contract written in
// package zmap. Building a store may be slow (an upload), so Run opens only
// two stores: one rich store that most subtests share, and an empty one.
package zmaptest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/iotest"
	"time"

	"github.com/nczarrfs/nczarrfs/zmap"
)

// OpenFunc builds a store holding exactly objects (key -> content) and
// returns it open. It fails t (t.Fatal) when it cannot. Keys follow the
// zmap rules: slash-separated, no leading or trailing slash, and no key is
// also a prefix of another key. Run closes the store it gets.
type OpenFunc = func(t *testing.T, objects map[string][]byte) zmap.Store

// bigSize is the size of the one large object in the rich store: big
// enough to span several read buffers, small enough to upload quickly.
const bigSize = 300_000

// seed makes the rich store's random content and the random reads
// reproducible. It is logged by the subtests that use it.
const seed = 20240607

// Objects returns the rich object set Run stores: zarr metadata keys with
// dots, chunk keys with dots and with nested slashes, an empty object, a
// large random object, names whose sort order is easy to get wrong, names
// with spaces and non-ASCII letters, and a deep path.
func Objects() map[string][]byte {
	r := rand.New(rand.NewPCG(seed, seed))
	random := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(r.UintN(256))
		}
		return b
	}
	return map[string][]byte{
		".zgroup":          []byte(`{"zarr_format": 2}`),
		".zattrs":          []byte(`{"_nczarr_superblock": {"version": "2.0.0"}}`),
		"g1/.zgroup":       []byte(`{"zarr_format": 2}`),
		"g1/v/.zarray":     []byte(`{"chunks": [2, 2, 2], "dtype": "<i4", "shape": [4, 2, 4]}`),
		"g1/v/.zattrs":     []byte(`{}`),
		"g1/v/0.0.0":       random(32),
		"g1/v/0.0.1":       random(32),
		"g1/v/1.0.1":       random(17),
		"g1/empty":         {},
		"nested/v/.zarray": []byte(`{"dimension_separator": "/"}`),
		"nested/v/0/0/1":   random(8),
		"nested/v/0/1/0":   random(9),
		"nested/v/1/0/0":   random(10),
		"big.bin":          random(bigSize),
		// Sorted by bytes: "10" < "9", "B" < "_" < "a" < "a-b" < "a.b" < "b".
		// In a raw S3 listing the prefix "a/" comes after "a.b".
		"order/a/x":               []byte("x"),
		"order/a-b":               []byte("a-b"),
		"order/a.b":               []byte("a.b"),
		"order/B":                 []byte("B"),
		"order/b":                 []byte("b"),
		"order/10":                []byte("10"),
		"order/9":                 []byte("9"),
		"order/_":                 []byte("_"),
		"with space/a b":          []byte("space"),
		"ünïcødé/数据/.zarray":      []byte(`{}`),
		"ünïcødé/émoji-🙂":         []byte("🙂"),
		"deep/a/b/c/d/e/f/g/leaf": []byte("leaf"),
	}
}

// Run runs the conformance suite against the backend that open builds.
//
// Beyond the plain reading of the zmap contract it holds backends to
// these points, which callers rely on:
//   - ReadAt returns io.EOF itself, not wrapped, when the object ends
//     before p is full (io.ReaderAt's rule; io.SectionReader and friends
//     compare with ==). A zero-length ReadAt inside the object returns
//     0, nil; at or past the end it may return io.EOF. A negative offset
//     is an error.
//   - A missing key, a prefix that is not an object, and a key below an
//     object all fail with an error wrapping zmap.ErrNotFound.
//   - Keys that are not canonical ("", "/a", "a/", "a//b", "./a", "a/../b")
//     fail every method, even when cleaning them would name an object,
//     and Search lists nothing for them.
//   - A done context fails Get, ReadAt, Size and Search with an error
//     wrapping ctx.Err(), also for objects the backend could answer from
//     memory.
//   - Search lists children sorted by name as Go compares strings (bytes),
//     so "a" (a prefix) sorts before "a-b" and "a.b".
//   - Every object has a modification time, and Stat returns exactly the
//     Entry that Search lists for it; Dir entries have none.
//   - A store with a WillNeed method (a hint that a key will be read soon)
//     takes it for any key and context, and reads the same afterwards.
func Run(t *testing.T, open OpenFunc) { RunWith(t, open, Options{}) }

// Options adapt RunWith to a backend.
type Options struct {
	// Own, when set, returns the objects the backend needs beside a set
	// of objects to hold them: the consolidated metadata through which a
	// server that cannot be listed is read. open gets them with the
	// suite's objects, and the suite expects them in the store as it
	// expects its own.
	Own func(objects map[string][]byte) map[string][]byte
}

// RunWith is Run for a backend that needs objects of its own (Options).
func RunWith(t *testing.T, open OpenFunc, opts Options) {
	t.Helper()
	withOwn := func(objects map[string][]byte) map[string][]byte {
		if opts.Own != nil {
			maps.Copy(objects, opts.Own(maps.Clone(objects)))
		}
		return objects
	}
	objects := withOwn(Objects())
	store := openStore(t, open, objects)

	t.Run("Get", func(t *testing.T) { testGet(t, store, objects) })
	t.Run("GetBound", func(t *testing.T) { testGetBound(t, store, objects) })
	t.Run("Size", func(t *testing.T) { testSize(t, store, objects) })
	t.Run("Stat", func(t *testing.T) { testStat(t, store, objects) })
	t.Run("ReadAt", func(t *testing.T) { testReadAt(t, store, objects) })
	t.Run("ReadAtRandom", func(t *testing.T) { testReadAtRandom(t, store, objects) })
	t.Run("IOTest", func(t *testing.T) { testIOTest(t, store, objects) })
	t.Run("Search", func(t *testing.T) { testSearch(t, store, objects) })
	t.Run("SearchEmpty", func(t *testing.T) { testSearchEmpty(t, store) })
	t.Run("NotFound", func(t *testing.T) { testNotFound(t, store) })
	t.Run("InvalidKeys", func(t *testing.T) { testInvalidKeys(t, store) })
	t.Run("Canceled", func(t *testing.T) { testCanceled(t, store) })
	t.Run("Concurrent", func(t *testing.T) { testConcurrent(t, store, objects) })
	if wn, ok := store.(willNeeder); ok {
		t.Run("WillNeed", func(t *testing.T) { testWillNeed(t, store, wn, objects) })
	}
	if vr, ok := store.(zmap.VecReader); ok {
		t.Run("ReadVec", func(t *testing.T) { testReadVec(t, vr, objects) })
	}
	t.Run("EmptyStore", func(t *testing.T) {
		own := withOwn(map[string][]byte{})
		empty := openStore(t, open, own)
		testEmptyStore(t, empty, own)
	})
}

// testReadVec reads every object into buffers of several sizes at several
// offsets: each call fills them with the object's bytes and returns its
// size, or fails with errors.ErrUnsupported (a compressed zip entry).
// Reading past the end fails with io.ErrUnexpectedEOF, a missing key with
// ErrNotFound.
func testReadVec(t *testing.T, vr zmap.VecReader, objects map[string][]byte) {
	ctx := context.Background()
	for _, key := range sortedKeys(objects) {
		content := objects[key]
		size := len(content)
		for _, r := range []struct{ off, n, parts int }{
			{0, size, 1}, {0, size, 3}, {size / 3, size - size/3, 2}, {size, 0, 1}, {size / 2, 0, 2},
		} {
			bufs := make([][]byte, r.parts)
			for i := range bufs {
				lo, hi := r.n*i/r.parts, r.n*(i+1)/r.parts
				bufs[i] = make([]byte, hi-lo)
			}
			got, err := vr.ReadVec(ctx, key, bufs, int64(r.off))
			switch {
			case errors.Is(err, errors.ErrUnsupported):
				continue
			case err != nil:
				t.Errorf("ReadVec(%q, %d parts of %d bytes at %d): %v", key, r.parts, r.n, r.off, err)
			case got != int64(size):
				t.Errorf("ReadVec(%q) returned size %d, want %d", key, got, size)
			case !bytes.Equal(bytes.Join(bufs, nil), content[r.off:r.off+r.n]):
				t.Errorf("ReadVec(%q, %d parts of %d bytes at %d) read other bytes than the object's", key, r.parts, r.n, r.off)
			}
		}
		_, err := vr.ReadVec(ctx, key, [][]byte{make([]byte, 2), make([]byte, 2)}, int64(max(size-3, 0)))
		if !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, errors.ErrUnsupported) {
			t.Errorf("ReadVec(%q) of 4 bytes up to past the end: %v, want io.ErrUnexpectedEOF", key, err)
		}
	}
	if _, err := vr.ReadVec(ctx, "no/such/key", [][]byte{make([]byte, 1)}, 0); !errors.Is(err, zmap.ErrNotFound) {
		t.Errorf("ReadVec of a missing key: %v, want ErrNotFound", err)
	}
}

// willNeeder is a store that takes hints of reads to come (file, zip).
type willNeeder interface {
	WillNeed(ctx context.Context, key string)
}

// testWillNeed gives hints for every object, for keys that name nothing
// or are not valid, and under a done context: none may fail or change
// what a read then returns.
func testWillNeed(t *testing.T, s zmap.Store, wn willNeeder, objects map[string][]byte) {
	ctx := context.Background()
	done, cancel := context.WithCancel(ctx)
	cancel()
	for _, key := range append(append(sortedKeys(objects), invalidKeys...), "no/such/key") {
		wn.WillNeed(ctx, key)
		wn.WillNeed(done, key)
	}
	testGet(t, s, objects)
	testReadAt(t, s, objects)
}

// openStore builds a store and closes it when t ends, failing t if Close
// fails.
func openStore(t *testing.T, open OpenFunc, objects map[string][]byte) zmap.Store {
	t.Helper()
	s := open(t, objects)
	if s == nil {
		t.Fatal("open returned a nil store")
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

// sortedKeys returns the keys of objects in byte order, so that failures
// come out in a stable order.
func sortedKeys(objects map[string][]byte) []string {
	return slices.Sorted(maps.Keys(objects))
}

func testGet(t *testing.T, s zmap.Store, objects map[string][]byte) {
	ctx := context.Background()
	for _, key := range sortedKeys(objects) {
		got, err := s.Get(ctx, key)
		if err != nil {
			t.Errorf("Get(%q): %v", key, err)
			continue
		}
		if !bytes.Equal(got, objects[key]) {
			t.Errorf("Get(%q) = %s, want %s", key, summary(got), summary(objects[key]))
		}
	}
}

// boundKeys are the objects testGetBound reads: chunks and plain
// objects, not metadata documents, which a store may keep in memory
// (zmap/listcache) once read under the bound of metadata.
var boundKeys = []string{"big.bin", "g1/v/0.0.0", "g1/v/1.0.1", "g1/empty", "nested/v/0/0/1", "order/a-b"}

// testGetBound reads objects under bounds at, just below and far below
// their sizes: within it Get returns the object, over it a
// *zmap.TooLargeError naming the key, the bound and a size over it.
func testGetBound(t *testing.T, s zmap.Store, objects map[string][]byte) {
	for _, key := range boundKeys {
		want, ok := objects[key]
		if !ok {
			continue
		}
		size := int64(len(want))
		for _, bound := range []int64{size + 1000, size, size - 1, size / 3} {
			if bound <= 0 {
				continue
			}
			got, err := s.Get(zmap.WithMaxSize(context.Background(), bound), key)
			if bound >= size {
				if err != nil || !bytes.Equal(got, want) {
					t.Errorf("Get(%q) within a bound of %d: %s, %v", key, bound, summary(got), err)
				}
				continue
			}
			var tl *zmap.TooLargeError
			switch {
			case !errors.As(err, &tl):
				t.Errorf("Get(%q) of %d bytes under a bound of %d: %s, %v; want a TooLargeError", key, size, bound, summary(got), err)
			case got != nil:
				t.Errorf("Get(%q) over its bound returned %d bytes", key, len(got))
			case tl.Key != key || tl.Bound != bound || tl.Size <= bound || tl.Size > size || (!tl.AtLeast && tl.Size != size):
				t.Errorf("Get(%q) of %d bytes under a bound of %d: %+v", key, size, bound, *tl)
			}
		}
	}
	// Reads at an offset are bounded by their buffer, not the bound.
	if want, ok := objects["big.bin"]; ok {
		p := make([]byte, 1000)
		n, err := s.ReadAt(zmap.WithMaxSize(context.Background(), 10), "big.bin", p, 5)
		if err != nil || n != len(p) || !bytes.Equal(p, want[5:1005]) {
			t.Errorf("ReadAt under a bound of 10: %d, %v", n, err)
		}
	}
}

func testSize(t *testing.T, s zmap.Store, objects map[string][]byte) {
	ctx := context.Background()
	for _, key := range sortedKeys(objects) {
		got, err := s.Size(ctx, key)
		if err != nil {
			t.Errorf("Size(%q): %v", key, err)
			continue
		}
		if want := int64(len(objects[key])); got != want {
			t.Errorf("Size(%q) = %d, want %d", key, got, want)
		}
	}
}

// testStat checks that Stat agrees with Size and with the entry Search
// lists, modification time and ETag included, and that every object has
// a modification time.
func testStat(t *testing.T, s zmap.Store, objects map[string][]byte) {
	ctx := context.Background()
	listed := map[string]zmap.Entry{}
	for _, prefix := range prefixes(objects) {
		entries, err := s.Search(ctx, prefix)
		if err != nil {
			t.Fatalf("Search(%q): %v", prefix, err)
		}
		for _, e := range entries {
			listed[zmap.Join(prefix, e.Name)] = e
		}
	}
	for _, key := range sortedKeys(objects) {
		got, err := s.Stat(ctx, key)
		if err != nil {
			t.Errorf("Stat(%q): %v", key, err)
			continue
		}
		name := key[strings.LastIndexByte(key, '/')+1:]
		if got.Name != name || got.Dir || got.Size != int64(len(objects[key])) || got.ModTime.IsZero() {
			t.Errorf("Stat(%q) = %+v, want name %q, size %d and a modification time", key, got, name, len(objects[key]))
		}
		if e := listed[key]; !e.ModTime.Equal(got.ModTime) || e.Size != got.Size || e.Name != got.Name || e.Dir || e.ETag != got.ETag {
			t.Errorf("Stat(%q) = %+v, but Search lists %+v", key, got, e)
		}
	}
}

// testReadAt checks io.ReaderAt semantics at the edges of every object.
func testReadAt(t *testing.T, s zmap.Store, objects map[string][]byte) {
	ctx := context.Background()
	for _, key := range sortedKeys(objects) {
		content := objects[key]
		size := int64(len(content))
		type read struct {
			off int64
			n   int
		}
		reads := []read{
			{0, len(content)},        // exactly the object
			{0, len(content) + 10},   // past the end
			{size / 2, 1},            // one byte inside
			{size / 3, len(content)}, // from inside, past the end
			{size, 1},                // at the end
			{size + 5, 3},            // past the end
			{size - 1, 1},            // the last byte
			{0, 1},                   // the first byte
		}
		for _, r := range reads {
			if r.off < 0 || r.n <= 0 {
				continue
			}
			checkReadAt(t, s, key, content, r.off, r.n)
		}
		// Zero-length reads never fail inside the object; at or past its
		// end they may report io.EOF.
		for _, off := range []int64{0, size / 2, size, size + 1} {
			n, err := s.ReadAt(ctx, key, []byte{}, off)
			if n != 0 || (err != nil && (off < size || err != io.EOF)) {
				t.Errorf("ReadAt(%q, len 0, off %d) = %d, %v; want 0, nil (or io.EOF at/past the end)", key, off, n, err)
			}
		}
		// A negative offset is an error.
		if n, err := s.ReadAt(ctx, key, make([]byte, 4), -1); n != 0 || err == nil {
			t.Errorf("ReadAt(%q, off -1) = %d, %v; want 0 and an error", key, n, err)
		}
	}
}

// checkReadAt reads n bytes of key at off and checks the result against
// content with the rules of io.ReaderAt: all of p, or fewer bytes and
// exactly io.EOF when the object ends first. Reading exactly to the end
// may return nil or io.EOF.
func checkReadAt(t *testing.T, s zmap.Store, key string, content []byte, off int64, n int) {
	t.Helper()
	p := make([]byte, n)
	got, err := s.ReadAt(context.Background(), key, p, off)
	size := int64(len(content))
	want := 0
	if off < size {
		want = int(min(int64(n), size-off))
	}
	switch {
	case got != want:
		t.Errorf("ReadAt(%q, len %d, off %d) read %d bytes (err %v), want %d", key, n, off, got, err, want)
		return
	case want < n && err != io.EOF:
		t.Errorf("ReadAt(%q, len %d, off %d) = %d, %v; want %d, io.EOF (unwrapped)", key, n, off, got, err, want)
		return
	case want == n && err != nil && !(err == io.EOF && off+int64(n) == size):
		t.Errorf("ReadAt(%q, len %d, off %d) = %d, %v; want %d, nil", key, n, off, got, err, want)
		return
	}
	if want > 0 && !bytes.Equal(p[:got], content[off:off+int64(got)]) {
		t.Errorf("ReadAt(%q, len %d, off %d) = %s, want %s", key, n, off, summary(p[:got]), summary(content[off:off+int64(got)]))
	}
}

// testReadAtRandom reads random ranges of the large object, some running
// past its end, and compares them with the reference content.
func testReadAtRandom(t *testing.T, s zmap.Store, objects map[string][]byte) {
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 1))
	content := objects["big.bin"]
	for range 200 {
		off := r.Int64N(int64(len(content)) + 100)
		n := 1 + r.IntN(70_000)
		checkReadAt(t, s, "big.bin", content, off, n)
		if t.Failed() {
			return
		}
	}
}

// readerAt adapts one stored object to io.ReaderAt for testing/iotest.
type readerAt struct {
	s   zmap.Store
	key string
}

func (r readerAt) ReadAt(p []byte, off int64) (int, error) {
	return r.s.ReadAt(context.Background(), r.key, p, off)
}

// testIOTest runs testing/iotest over a section reader on a few small
// objects, which drives ReadAt through Read, Seek and ReadAt with many
// shapes. It reads a few bytes per call, so the objects must stay small.
func testIOTest(t *testing.T, s zmap.Store, objects map[string][]byte) {
	for _, key := range []string{"g1/v/0.0.0", "g1/empty", "ünïcødé/émoji-🙂"} {
		content := objects[key]
		sr := io.NewSectionReader(readerAt{s, key}, 0, int64(len(content)))
		if err := iotest.TestReader(sr, content); err != nil {
			t.Errorf("iotest.TestReader(%q): %v", key, err)
		}
	}
}

// expectedEntries computes what Search(prefix) must return from the
// object set.
func expectedEntries(objects map[string][]byte, prefix string) []zmap.Entry {
	children := map[string]zmap.Entry{}
	lead := prefix
	if lead != "" {
		lead += "/"
	}
	for key, content := range objects {
		rest, ok := strings.CutPrefix(key, lead)
		if !ok {
			continue
		}
		if name, _, deeper := strings.Cut(rest, "/"); deeper {
			children[name] = zmap.Entry{Name: name, Dir: true}
		} else {
			children[name] = zmap.Entry{Name: name, Size: int64(len(content))}
		}
	}
	return slices.SortedFunc(maps.Values(children), func(a, b zmap.Entry) int { return strings.Compare(a.Name, b.Name) })
}

// WithoutTimes returns entries with their ModTime and ETag cleared, to
// compare them with entries built from an object set, which has neither.
func WithoutTimes(entries []zmap.Entry) []zmap.Entry {
	out := slices.Clone(entries)
	for i := range out {
		out[i].ModTime = time.Time{}
		out[i].ETag = ""
	}
	return out
}

// prefixes returns every directory prefix of the object set, "" included.
func prefixes(objects map[string][]byte) []string {
	set := map[string]bool{"": true}
	for key := range objects {
		for i := range len(key) {
			if key[i] == '/' {
				set[key[:i]] = true
			}
		}
	}
	return slices.Sorted(maps.Keys(set))
}

func testSearch(t *testing.T, s zmap.Store, objects map[string][]byte) {
	ctx := context.Background()
	for _, prefix := range prefixes(objects) {
		got, err := s.Search(ctx, prefix)
		if err != nil {
			t.Errorf("Search(%q): %v", prefix, err)
			continue
		}
		for _, e := range got {
			if e.Dir != e.ModTime.IsZero() {
				t.Errorf("Search(%q): %+v: a Dir entry has no time, an object has one", prefix, e)
			}
			if e.Dir && e.ETag != "" {
				t.Errorf("Search(%q): %+v: a Dir entry has no ETag", prefix, e)
			}
		}
		// Times are checked against Stat in testStat.
		if want := expectedEntries(objects, prefix); !slices.Equal(WithoutTimes(got), want) {
			t.Errorf("Search(%q) =\n\t%v\nwant\n\t%v", prefix, got, want)
		}
	}
}

// testSearchEmpty checks that a prefix with no object under it, and a key
// that is an object, list nothing and do not fail.
func testSearchEmpty(t *testing.T, s zmap.Store) {
	ctx := context.Background()
	for _, prefix := range []string{
		"nothing",
		"g1/nothing",
		"g1/nothing/deeper",
		"orde", // a prefix of a name, not of a segment
		".zgroup",
		"big.bin",
		"g1/v/0.0.0",
		"g1/empty",
		"nested/v/0/0/1",
	} {
		got, err := s.Search(ctx, prefix)
		if err != nil || len(got) != 0 {
			t.Errorf("Search(%q) = %v, %v; want empty, nil", prefix, got, err)
		}
	}
}

// missingKeys are keys with no object in the rich store; some are
// prefixes of objects, some lie below an object.
var missingKeys = []string{
	"missing",
	".zarray",
	"g1/missing",
	"g1",           // a prefix, not an object
	"g1/v",         // a prefix, not an object
	"g1/v/0.0.0/x", // below an object
	"G1/.zgroup",   // keys are case-sensitive
	"order/a",      // a prefix
	"ünïcødé",
	"big.bin.",
}

func testNotFound(t *testing.T, s zmap.Store) {
	ctx := context.Background()
	for _, key := range missingKeys {
		if b, err := s.Get(ctx, key); !errors.Is(err, zmap.ErrNotFound) || b != nil {
			t.Errorf("Get(%q) = %s, %v; want nil and an error wrapping zmap.ErrNotFound", key, summary(b), err)
		}
		if n, err := s.Size(ctx, key); !errors.Is(err, zmap.ErrNotFound) {
			t.Errorf("Size(%q) = %d, %v; want an error wrapping zmap.ErrNotFound", key, n, err)
		}
		if e, err := s.Stat(ctx, key); !errors.Is(err, zmap.ErrNotFound) {
			t.Errorf("Stat(%q) = %+v, %v; want an error wrapping zmap.ErrNotFound", key, e, err)
		}
		if n, err := s.ReadAt(ctx, key, make([]byte, 4), 0); n != 0 || !errors.Is(err, zmap.ErrNotFound) {
			t.Errorf("ReadAt(%q) = %d, %v; want 0 and an error wrapping zmap.ErrNotFound", key, n, err)
		}
	}
}

// invalidKeys are not well-formed keys. Some of them name a stored object
// once "cleaned" (a directory-tree backend must not resolve them). Every
// method must fail on them, and Search must list nothing.
var invalidKeys = []string{
	"",
	"/.zgroup",
	".zgroup/",
	"./.zgroup",
	"g1/../.zgroup",
	"g1/./.zgroup",
	"g1//.zgroup",
	"../.zgroup",
	"..",
	".",
	"/",
}

func testInvalidKeys(t *testing.T, s zmap.Store) {
	ctx := context.Background()
	for _, key := range invalidKeys {
		if b, err := s.Get(ctx, key); err == nil || b != nil {
			t.Errorf("Get(%q) = %s, %v; want nil and an error", key, summary(b), err)
		}
		if n, err := s.Size(ctx, key); err == nil {
			t.Errorf("Size(%q) = %d, nil; want an error", key, n)
		}
		if e, err := s.Stat(ctx, key); err == nil {
			t.Errorf("Stat(%q) = %+v, nil; want an error", key, e)
		}
		if n, err := s.ReadAt(ctx, key, make([]byte, 4), 0); n != 0 || err == nil {
			t.Errorf("ReadAt(%q) = %d, %v; want 0 and an error", key, n, err)
		}
		if key == "" {
			continue // the root: Search("") lists it
		}
		if got, _ := s.Search(ctx, key); len(got) != 0 {
			t.Errorf("Search(%q) = %v; want nothing", key, got)
		}
	}
}

// testCanceled checks that every method fails with an error wrapping
// ctx.Err() once the context is done, even for objects that exist.
func testCanceled(t *testing.T, s zmap.Store) {
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancel2 := context.WithDeadline(context.Background(), time.Unix(0, 0))
	defer cancel2()
	for _, c := range []struct {
		ctx  context.Context
		want error
	}{{canceled, context.Canceled}, {expired, context.DeadlineExceeded}} {
		if _, err := s.Get(c.ctx, "g1/v/.zarray"); !errors.Is(err, c.want) {
			t.Errorf("Get with a done context: %v, want an error wrapping %v", err, c.want)
		}
		if _, err := s.Search(c.ctx, "g1"); !errors.Is(err, c.want) {
			t.Errorf("Search with a done context: %v, want an error wrapping %v", err, c.want)
		}
		if _, err := s.Size(c.ctx, "g1/v/.zarray"); !errors.Is(err, c.want) {
			t.Errorf("Size with a done context: %v, want an error wrapping %v", err, c.want)
		}
		if _, err := s.Stat(c.ctx, "g1/v/.zarray"); !errors.Is(err, c.want) {
			t.Errorf("Stat with a done context: %v, want an error wrapping %v", err, c.want)
		}
		if _, err := s.ReadAt(c.ctx, "big.bin", make([]byte, 10), 5); !errors.Is(err, c.want) {
			t.Errorf("ReadAt with a done context: %v, want an error wrapping %v", err, c.want)
		}
	}
}

// testConcurrent runs every method from several goroutines at once; run
// it under -race.
func testConcurrent(t *testing.T, s zmap.Store, objects map[string][]byte) {
	keys := sortedKeys(objects)
	dirs := prefixes(objects)
	const workers, ops = 8, 60
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(seed, uint64(w)))
			ctx := context.Background()
			for range ops {
				key := keys[r.IntN(len(keys))]
				content := objects[key]
				switch r.IntN(4) {
				case 0:
					got, err := s.Get(ctx, key)
					if err != nil || !bytes.Equal(got, content) {
						t.Errorf("concurrent Get(%q) = %s, %v; want %s", key, summary(got), err, summary(content))
					}
				case 1:
					off := r.Int64N(int64(len(content)) + 1)
					p := make([]byte, 1+r.IntN(4096))
					n, err := s.ReadAt(ctx, key, p, off)
					end := min(off+int64(len(p)), int64(len(content)))
					if int64(n) != end-off || (n < len(p) && err != io.EOF) || (n == len(p) && err != nil && err != io.EOF) ||
						!bytes.Equal(p[:n], content[off:end]) {
						t.Errorf("concurrent ReadAt(%q, len %d, off %d) = %d, %v", key, len(p), off, n, err)
					}
				case 2:
					size, err := s.Size(ctx, key)
					if err != nil || size != int64(len(content)) {
						t.Errorf("concurrent Size(%q) = %d, %v; want %d", key, size, err, len(content))
					}
				case 3:
					prefix := dirs[r.IntN(len(dirs))]
					got, err := s.Search(ctx, prefix)
					if want := expectedEntries(objects, prefix); err != nil || !slices.Equal(WithoutTimes(got), want) {
						t.Errorf("concurrent Search(%q) = %v, %v; want %v", prefix, got, err, want)
					}
				}
			}
		}()
	}
	wg.Wait()
}

// testEmptyStore checks a store that holds nothing but the backend's own
// objects, own.
func testEmptyStore(t *testing.T, s zmap.Store, own map[string][]byte) {
	ctx := context.Background()
	for _, prefix := range []string{"", "g1", ".zgroup"} {
		got, err := s.Search(ctx, prefix)
		if want := expectedEntries(own, prefix); err != nil || !slices.Equal(WithoutTimes(got), want) {
			t.Errorf("Search(%q) on an empty store = %v, %v; want %v, nil", prefix, got, err, want)
		}
	}
	for _, key := range []string{".zgroup", "g1/.zarray"} {
		if _, err := s.Get(ctx, key); !errors.Is(err, zmap.ErrNotFound) {
			t.Errorf("Get(%q) on an empty store: %v, want an error wrapping zmap.ErrNotFound", key, err)
		}
		if _, err := s.Size(ctx, key); !errors.Is(err, zmap.ErrNotFound) {
			t.Errorf("Size(%q) on an empty store: %v, want an error wrapping zmap.ErrNotFound", key, err)
		}
		if _, err := s.ReadAt(ctx, key, make([]byte, 1), 0); !errors.Is(err, zmap.ErrNotFound) {
			t.Errorf("ReadAt(%q) on an empty store: %v, want an error wrapping zmap.ErrNotFound", key, err)
		}
	}
}

// summary shortens content for failure messages.
func summary(b []byte) string {
	if b == nil {
		return "nil"
	}
	if len(b) <= 40 {
		return fmt.Sprintf("%q", b)
	}
	return fmt.Sprintf("%q... (%d bytes)", b[:40], len(b))
}
