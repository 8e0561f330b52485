package listcache_test

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nczarrfs/nczarrfs/internal/stats"
	"github.com/nczarrfs/nczarrfs/zmap"
	"github.com/nczarrfs/nczarrfs/zmap/file"
	"github.com/nczarrfs/nczarrfs/zmap/listcache"
)

// TestKeptEntriesRoundTrip checks that a kept listing answers with the
// entries the store listed, field for field: ETags of 32 hex digits (kept
// as 16 bytes), of an object uploaded in parts, none; times and none;
// folders.
func TestKeptEntriesRoundTrip(t *testing.T) {
	when := time.Date(2026, 11, 26, 7, 0, 0, 123456789, time.UTC)
	entries := []zmap.Entry{
		{Name: "0.0", Size: 10, ModTime: when, ETag: "d41d8cd98f00b204e9800998ecf8427e"},
		{Name: "0.1", Size: 11, ModTime: when.Add(time.Second), ETag: "D41D8CD98F00B204E9800998ECF8427E"},
		{Name: "0.2", Size: 12, ModTime: when, ETag: "9b2cf535f27731c974343645a3985328-3"},
		{Name: "0.3", Size: 0},
		{Name: "sub", Dir: true},
		{Name: "ü", Size: 1 << 40, ETag: "x"},
	}
	st := listStore{"p": entries}
	c := listcache.New(st, listcache.Options{TTL: time.Hour})
	got, err := c.Search(context.Background(), "p")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(entries) {
		t.Fatalf("Search = %v, want %v", got, entries)
	}
	for i, e := range entries {
		g := got[i]
		if g.Name != e.Name || g.Dir != e.Dir || g.Size != e.Size || g.ETag != e.ETag || !g.ModTime.Equal(e.ModTime) || g.ModTime.IsZero() != e.ModTime.IsZero() {
			t.Errorf("entry %d = %+v, want %+v", i, g, e)
		}
		if k, ok := c.Cached("p/" + e.Name); !ok || k.ETag != e.ETag || k.Size != e.Size || k.Dir != e.Dir {
			t.Errorf("Cached(p/%s) = %+v, %v; want %+v", e.Name, k, ok, e)
		}
	}
}

// listStore is a store that lists the entries it holds by prefix, and
// holds nothing else.
type listStore map[string][]zmap.Entry

func (s listStore) Search(ctx context.Context, prefix string) ([]zmap.Entry, error) {
	return append([]zmap.Entry{}, s[prefix]...), nil
}
func (listStore) Get(context.Context, string) ([]byte, error) { return nil, zmap.ErrNotFound }
func (listStore) ReadAt(context.Context, string, []byte, int64) (int, error) {
	return 0, zmap.ErrNotFound
}
func (listStore) Size(context.Context, string) (int64, error) { return 0, zmap.ErrNotFound }
func (listStore) Stat(context.Context, string) (zmap.Entry, error) {
	return zmap.Entry{}, zmap.ErrNotFound
}
func (listStore) Close() error { return nil }

// TestListingsBounded lists 120 folders of 40 objects each with room for
// about 30 of them: the kept listings stay within the bound, the least
// recently used go first, and a forgotten folder is listed again, so that
// every answer is the store's.
func TestListingsBounded(t *testing.T) {
	objects := map[string][]byte{}
	for i := range 120 {
		for j := range 40 {
			objects[fmt.Sprintf("v%03d/%d.0", i, j)] = []byte(strconv.Itoa(i * j))
		}
	}
	fs, err := file.Open(writeTree(t, objects))
	if err != nil {
		t.Fatal(err)
	}
	counted := stats.CountStore(fs)
	const bound = 32 << 10
	c := listcache.New(counted, listcache.Options{TTL: time.Hour, MaxBytes: bound})
	ctx := context.Background()
	check := func(folder string) {
		t.Helper()
		got, err := c.Search(ctx, folder)
		if err != nil {
			t.Fatal(err)
		}
		want, err := fs.Search(ctx, folder)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("Search(%q) = %v, want %v", folder, got, want)
		}
		e, err := c.Stat(ctx, folder+"/7.0")
		if err != nil || e.Size != int64(len(objects[folder+"/7.0"])) {
			t.Errorf("Stat(%s/7.0) = %+v, %v", folder, e, err)
		}
	}
	for i := range 120 {
		check(fmt.Sprintf("v%03d", i))
		// v000 is used between every other folder: it stays.
		check("v000")
		if s := c.ListingStats(); s.Bytes > bound {
			t.Fatalf("after %d folders the kept listings take %d bytes, over %d", i+1, s.Bytes, bound)
		}
	}
	s := c.ListingStats()
	t.Logf("kept listings: %+v", s)
	if s.Forgotten == 0 || s.Folders < 10 {
		t.Errorf("kept listings %+v: want some forgotten, and at least 10 kept", s)
	}
	before := counted.Snapshot().Requests
	check("v000")
	check("v119")
	if got := requests(counted, before); got.LIST != 0 {
		t.Errorf("the most recently used folders were listed again: %+v", got)
	}
	before = counted.Snapshot().Requests
	check("v001")
	if got := requests(counted, before); got.LIST != 1 {
		t.Errorf("a forgotten folder: %+v requests, want it listed again", got)
	}
}

// chunkStore lists one folder, "v", of n chunks named as a 3-D array's
// (i.j.k), each with a size, a time and an ETag, as S3 lists them.
type chunkStore struct {
	listStore
	n int
}

func (s chunkStore) Search(ctx context.Context, prefix string) ([]zmap.Entry, error) {
	if prefix != "v" {
		return []zmap.Entry{}, nil
	}
	out := make([]zmap.Entry, 0, s.n)
	when := time.Date(2026, 11, 26, 7, 0, 0, 0, time.UTC)
	for i := range s.n {
		sum := md5.Sum([]byte(strconv.Itoa(i)))
		out = append(out, zmap.Entry{
			Name:    fmt.Sprintf("%d.%d.%d", i/10000, i/100%100, i%100),
			Size:    int64(100000 + i%1000),
			ModTime: when.Add(time.Duration(i) * time.Second),
			ETag:    hex.EncodeToString(sum[:]),
		})
	}
	// Sorted by name, as a store lists them.
	slices.SortFunc(out, func(a, b zmap.Entry) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// TestMillionChunkListing keeps the listing of an array of 1,000,000
// chunks, with their S3 ETags, and measures the memory it takes: the
// kept listing's own count, the Go heap it holds (after a collection),
// and the process's resident memory. The bound asserted is the docs'
// (docs/stores.md): at most 64 MiB of heap for the listing.
func TestMillionChunkListing(t *testing.T) {
	if testing.Short() {
		t.Skip("lists 1,000,000 chunks")
	}
	const n = 1_000_000
	c := listcache.New(chunkStore{n: n}, listcache.Options{TTL: time.Hour})
	ctx := context.Background()
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	if _, err := c.Search(ctx, "v"); err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	debug.FreeOSMemory()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	s := c.ListingStats()
	heap := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("1,000,000 chunks listed: kept listing %.1f MiB by its count (%d bytes a chunk), Go heap +%.1f MiB, process RSS %s",
		float64(s.Bytes)/(1<<20), s.Bytes/n, float64(heap)/(1<<20), rss())
	if s.Bytes > 64<<20 || heap > 64<<20 {
		t.Errorf("the listing of %d chunks takes %d bytes by its count, %d of heap; want at most 64 MiB", n, s.Bytes, heap)
	}
	e, ok := c.Cached("v/99.99.99")
	if !ok || e.Size != 100999 || len(e.ETag) != 32 {
		t.Errorf("Cached(v/99.99.99) = %+v, %v", e, ok)
	}
	runtime.KeepAlive(c)
}

// rss is the process's resident memory, from /proc/self/status.
func rss() string {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return "unknown"
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

// failing is a store that fails every call, as a server that cannot be
// reached does, while down is set.
type failing struct {
	zmap.Store
	down bool
}

var errUnreachable = errors.New("no answer within 3s")

func (f *failing) Search(ctx context.Context, prefix string) ([]zmap.Entry, error) {
	if f.down {
		return nil, errUnreachable
	}
	return f.Store.Search(ctx, prefix)
}

func (f *failing) Get(ctx context.Context, key string) ([]byte, error) {
	if f.down {
		return nil, errUnreachable
	}
	return f.Store.Get(ctx, key)
}

// TestFailuresNotKept checks that a listing or a metadata object that
// could not be had from the store is not kept: once the store answers
// again, the same Store answers right, with no wait for the TTL.
func TestFailuresNotKept(t *testing.T) {
	fs, err := file.Open(writeTree(t, map[string][]byte{"v/.zarray": []byte(`{}`), "v/0": []byte("chunk")}))
	if err != nil {
		t.Fatal(err)
	}
	f := &failing{Store: fs, down: true}
	c := listcache.New(f, listcache.Options{TTL: time.Hour})
	ctx := context.Background()
	if _, err := c.Search(ctx, "v"); !errors.Is(err, errUnreachable) {
		t.Fatalf("Search while down: %v", err)
	}
	if _, err := c.Get(ctx, "v/.zarray"); !errors.Is(err, errUnreachable) {
		t.Fatalf("Get while down: %v", err)
	}
	f.down = false
	if got, err := c.Search(ctx, "v"); err != nil || len(got) != 2 {
		t.Errorf("Search once back: %v, %v; want the 2 objects", got, err)
	}
	if got, err := c.Get(ctx, "v/.zarray"); err != nil || string(got) != "{}" {
		t.Errorf("Get once back: %q, %v", got, err)
	}
}
