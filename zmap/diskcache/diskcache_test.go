package diskcache_test

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nczarrfs/nczarrfs/zmap"
	"github.com/nczarrfs/nczarrfs/zmap/diskcache"
	"github.com/nczarrfs/nczarrfs/zmap/file"
)

// counting is a real store that counts the reads and stats that reach it.
type counting struct {
	zmap.Store
	dir          string // the folder it reads, when made by objects
	reads, stats atomic.Int64
}

func (c *counting) Stat(ctx context.Context, key string) (zmap.Entry, error) {
	c.stats.Add(1)
	return c.Store.Stat(ctx, key)
}

func (c *counting) Get(ctx context.Context, key string) ([]byte, error) {
	c.reads.Add(1)
	return c.Store.Get(ctx, key)
}

func (c *counting) ReadAt(ctx context.Context, key string, p []byte, off int64) (int, error) {
	c.reads.Add(1)
	return c.Store.ReadAt(ctx, key, p, off)
}

// objects writes n objects of distinct content and sizes under a fresh
// folder and returns a file store over it with their contents.
func objects(t *testing.T, n, size int) (*counting, map[string][]byte) {
	t.Helper()
	dir := t.TempDir()
	want := map[string][]byte{}
	for i := range n {
		key := fmt.Sprintf("a/%d.0", i)
		data := bytes.Repeat([]byte{byte(i), byte(i >> 8), 7}, size/3+i)
		if err := os.MkdirAll(filepath.Join(dir, "a"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, key), data, 0o644); err != nil {
			t.Fatal(err)
		}
		want[key] = data
	}
	st, err := file.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	return &counting{Store: st, dir: dir}, want
}

func TestGetAndReadAtFromCache(t *testing.T) {
	ctx := context.Background()
	inner, want := objects(t, 3, 3000)
	dir := t.TempDir()
	s, err := diskcache.New(inner, dir, "ds", diskcache.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for key, data := range want {
		for round := range 2 {
			got, err := s.Get(ctx, key)
			if err != nil || !bytes.Equal(got, data) {
				t.Fatalf("round %d: Get(%s) = %d bytes, %v; want %d bytes", round, key, len(got), err, len(data))
			}
		}
	}
	if n := inner.reads.Load(); n != 3 {
		t.Errorf("the store was read %d times for 3 objects read twice each, want 3", n)
	}

	// A new Store over the same folder (a remount) reads from disk, whole
	// and in part, and never short.
	inner2, _ := objects(t, 0, 0)
	inner2.Store = inner.Store
	s2, err := diskcache.New(inner2, dir, "ds", diskcache.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for key, data := range want {
		buf := make([]byte, len(data)+10)
		n, err := s2.ReadAt(ctx, key, buf, 0)
		if err != io.EOF || !bytes.Equal(buf[:n], data) {
			t.Errorf("ReadAt(%s, 0) = %d, %v; want the %d bytes and EOF", key, n, err, len(data))
		}
		n, err = s2.ReadAt(ctx, key, buf[:100], 50)
		if err != nil || !bytes.Equal(buf[:n], data[50:150]) {
			t.Errorf("ReadAt(%s, 50) = %d, %v; want bytes 50-150", key, n, err)
		}
		n, err = s2.ReadAt(ctx, key, buf[:100], int64(len(data))-10)
		if err != io.EOF || !bytes.Equal(buf[:n], data[len(data)-10:]) {
			t.Errorf("ReadAt(%s) past the end = %d, %v; want the last 10 bytes and EOF", key, n, err)
		}
	}
	if n := inner2.reads.Load(); n != 0 {
		t.Errorf("the remount read the store %d times, want 0", n)
	}
	if st := s2.Stats(); st.Hits != 9 || st.Misses != 0 {
		t.Errorf("stats %+v, want 9 hits and no miss", st)
	}

	// Another dataset in the same folder does not see these objects.
	inner3, _ := objects(t, 0, 0)
	inner3.Store = inner.Store
	s3, err := diskcache.New(inner3, dir, "another", diskcache.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s3.Get(ctx, "a/0.0"); err != nil || inner3.reads.Load() != 1 {
		t.Errorf("another dataset's Get: %v, %d store reads; want 1", err, inner3.reads.Load())
	}
}

func TestPartialReadsAreNotCached(t *testing.T) {
	ctx := context.Background()
	inner, want := objects(t, 1, 3000)
	s, err := diskcache.New(inner, t.TempDir(), "ds", diskcache.Options{})
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 100)
	for range 2 {
		n, err := s.ReadAt(ctx, "a/0.0", buf, 0)
		if err != nil || !bytes.Equal(buf[:n], want["a/0.0"][:100]) {
			t.Fatalf("ReadAt = %d, %v", n, err)
		}
	}
	if n := inner.reads.Load(); n != 2 {
		t.Errorf("two partial reads reached the store %d times, want 2", n)
	}
	if _, err := s.Get(ctx, "missing"); err == nil {
		t.Error("Get of a missing object succeeded")
	}
}

func TestDamagedFilesAreRefetched(t *testing.T) {
	ctx := context.Background()
	inner, want := objects(t, 1, 3000)
	dir := t.TempDir()
	s, err := diskcache.New(inner, dir, "ds", diskcache.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "a/0.0"); err != nil {
		t.Fatal(err)
	}
	var cached []string
	filepath.WalkDir(filepath.Join(dir, "nczarrfs-cache", "v1"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			cached = append(cached, p)
		}
		return nil
	})
	if len(cached) != 1 {
		t.Fatalf("cache folder holds %v, want one file", cached)
	}
	damage := map[string]func(b []byte) []byte{
		"flipped byte": func(b []byte) []byte { b[10] ^= 1; return b },
		"truncated":    func(b []byte) []byte { return b[:len(b)-20] },
		"empty":        func(b []byte) []byte { return nil },
	}
	for name, f := range damage {
		b, err := os.ReadFile(cached[0])
		if err != nil {
			b = nil
		}
		if err := os.WriteFile(cached[0], f(b), 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := s.Get(ctx, "a/0.0")
		if err != nil || !bytes.Equal(got, want["a/0.0"]) {
			t.Errorf("%s: Get = %d bytes, %v; want the object", name, len(got), err)
		}
		if _, err := os.Stat(cached[0]); err != nil {
			t.Errorf("%s: the refetched object was not cached again: %v", name, err)
		}
		// ReadAt checks too.
		b, _ = os.ReadFile(cached[0])
		os.WriteFile(cached[0], f(b), 0o600)
		buf := make([]byte, 5000)
		n, err := s.ReadAt(ctx, "a/0.0", buf, 0)
		if err != io.EOF || !bytes.Equal(buf[:n], want["a/0.0"]) {
			t.Errorf("%s: ReadAt = %d bytes, %v; want the object and EOF", name, n, err)
		}
	}
}

func TestEvictionKeepsBudgetAndRecentObjects(t *testing.T) {
	ctx := context.Background()
	inner, want := objects(t, 40, 3000)
	dir := t.TempDir()
	const budget = 40 << 10 // about 13 objects
	s, err := diskcache.New(inner, dir, "ds", diskcache.Options{MaxBytes: budget})
	if err != nil {
		t.Fatal(err)
	}
	// a/0.0 is read between every other object, so it stays recent.
	for i := 1; i < 40; i++ {
		if _, err := s.Get(ctx, "a/0.0"); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Millisecond) // distinct modification times
		if _, err := s.Get(ctx, fmt.Sprintf("a/%d.0", i)); err != nil {
			t.Fatal(err)
		}
		if total := folderBytes(t, dir); total > budget {
			t.Fatalf("after %d objects the folder holds %d bytes, over the budget %d", i+1, total, budget)
		}
	}
	before := inner.reads.Load()
	got, err := s.Get(ctx, "a/0.0")
	if err != nil || !bytes.Equal(got, want["a/0.0"]) || inner.reads.Load() != before {
		t.Errorf("the most recently used object was evicted (store reads %d -> %d)", before, inner.reads.Load())
	}
	if _, err := s.Get(ctx, "a/1.0"); err != nil || inner.reads.Load() != before+1 {
		t.Errorf("the least recently used object was kept")
	}
}

// TestSharedFolder has two stores (two mounts) read the same objects at
// once through one folder: every read gets the right bytes.
func TestSharedFolder(t *testing.T) {
	ctx := context.Background()
	inner, want := objects(t, 30, 9000)
	dir := t.TempDir()
	var wg sync.WaitGroup
	for m := range 2 {
		s, err := diskcache.New(inner, dir, "ds", diskcache.Options{MaxBytes: 100 << 10})
		if err != nil {
			t.Fatal(err)
		}
		for g := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				buf := make([]byte, 20000)
				for round := range 5 {
					for i := range 30 {
						key := fmt.Sprintf("a/%d.0", (i*7+g+m+round)%30)
						n, err := s.ReadAt(ctx, key, buf, 0)
						if err != io.EOF || !bytes.Equal(buf[:n], want[key]) {
							t.Errorf("mount %d: ReadAt(%s) = %d bytes, %v; want %d bytes", m, key, n, err, len(want[key]))
							return
						}
					}
				}
			}()
		}
	}
	wg.Wait()
}

// folderBytes is what the cache's files under dir take.
func folderBytes(t *testing.T, dir string) int64 {
	var total int64
	filepath.WalkDir(filepath.Join(dir, "nczarrfs-cache", "v1"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if info, err := d.Info(); err == nil {
				total += info.Size()
			}
		}
		return nil
	})
	return total
}

// listing is a kept listing: the entries it holds, by key.
type listing map[string]zmap.Entry

func (l listing) Cached(key string) (zmap.Entry, bool) {
	e, ok := l[key]
	return e, ok
}

// etagOf is the ETag S3 gives an object written in one part.
func etagOf(data []byte) string {
	sum := md5.Sum(data)
	return hex.EncodeToString(sum[:])
}

// TestRewrittenObjectIsNotServed rewrites a cached object in the store:
// once the identity the cache read is older than the TTL (here 0: every
// read), the same Store and a new one over the same folder read the new
// bytes, and the new version is cached in turn.
func TestRewrittenObjectIsNotServed(t *testing.T) {
	ctx := context.Background()
	inner, want := objects(t, 2, 3000)
	dir := t.TempDir()
	s, err := diskcache.New(inner, dir, "ds", diskcache.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if got, err := s.Get(ctx, "a/0.0"); err != nil || !bytes.Equal(got, want["a/0.0"]) {
			t.Fatalf("Get = %d bytes, %v", len(got), err)
		}
	}
	if st := s.Stats(); st.Hits != 1 || st.Written != 1 {
		t.Fatalf("stats %+v, want 1 hit and 1 object written", st)
	}
	// The same size, other bytes: only the modification time tells.
	newer := bytes.Clone(want["a/1.0"][:len(want["a/0.0"])])
	if err := os.WriteFile(filepath.Join(inner.dir, "a", "0.0"), newer, 0o644); err != nil {
		t.Fatal(err)
	}
	s2, err := diskcache.New(inner, dir, "ds", diskcache.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for name, st := range map[string]*diskcache.Store{"the same store": s, "a new store": s2} {
		got, err := st.Get(ctx, "a/0.0")
		if err != nil || !bytes.Equal(got, newer) {
			t.Errorf("%s: Get of the rewritten object = %d bytes, %v; want the new bytes", name, len(got), err)
		}
		buf := make([]byte, len(newer)+1)
		n, err := st.ReadAt(ctx, "a/0.0", buf, 0)
		if err != io.EOF || !bytes.Equal(buf[:n], newer) {
			t.Errorf("%s: ReadAt of the rewritten object = %d bytes, %v; want the new bytes", name, n, err)
		}
	}
	if st := s2.Stats(); st.Hits == 0 {
		t.Errorf("the new version was not cached: %+v", st)
	}
}

// TestIdentityFromListing reads objects whose kept listing gives their
// ETag: no Stat reaches the store, and an object whose bytes do not
// match the ETag it was read under (rewritten after the listing) is
// served but not kept.
func TestIdentityFromListing(t *testing.T) {
	ctx := context.Background()
	inner, want := objects(t, 2, 3000)
	s, err := diskcache.New(inner, t.TempDir(), "ds", diskcache.Options{})
	if err != nil {
		t.Fatal(err)
	}
	l := listing{}
	for key, data := range want {
		l[key] = zmap.Entry{Name: filepath.Base(key), Size: int64(len(data)), ModTime: time.Now(), ETag: etagOf(data)}
	}
	stale := want["a/1.0"][:len(want["a/1.0"])-1]
	l["a/1.0"] = zmap.Entry{Name: "1.0", Size: int64(len(stale)), ETag: etagOf(stale)}
	s.SetListing(l, time.Hour)
	for range 2 {
		for key, data := range want {
			got, err := s.Get(ctx, key)
			if err != nil || !bytes.Equal(got, data) {
				t.Fatalf("Get(%s) = %d bytes, %v", key, len(got), err)
			}
		}
	}
	if n := inner.stats.Load(); n != 0 {
		t.Errorf("%d Stat requests; want none, the listing had every ETag", n)
	}
	if st := s.Stats(); st.Written != 1 || st.Hits != 1 || st.Checked != 0 {
		t.Errorf("stats %+v; want a/0.0 kept and read from the folder, a/1.0 (not its listed ETag) not kept", st)
	}

	// Without a listing, the identity a Stat gave is believed for the TTL.
	s.SetListing(nil, time.Hour)
	for range 3 {
		if _, err := s.Get(ctx, "a/0.0"); err != nil {
			t.Fatal(err)
		}
	}
	if n := inner.stats.Load(); n != 1 {
		t.Errorf("%d Stat requests for 3 reads within the TTL; want 1", n)
	}
}

// entry is the store's entry of key, which names its cache file.
func (c *counting) entry(t testing.TB, key string) zmap.Entry {
	t.Helper()
	e, err := c.Store.Stat(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// openCounting returns a counting file store over dir.
func openCounting(t testing.TB, dir string) *counting {
	t.Helper()
	st, err := file.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	return &counting{Store: st, dir: dir}
}
