// Package diskcache keeps the objects a zmap.Store fetched in a local
// folder, so that a remount, or a second mount of the same dataset, reads
// them from disk instead of the network (mount-s3's --cache, rclone's VFS
// cache). It wraps any zmap.Store; it is meant for S3.
//
// Whole objects are cached: an object enters the cache when a read
// fetched all of it (a chunk load reads from offset 0 into a buffer larger
// than the object). Partial ranged reads pass through uncached. Listings
// and sizes pass through too: the dataset's metadata is read once per
// mount anyway.
//
// A cache file is named by the dataset, the object's key and what the
// store says identifies the object's content: its ETag, else its size and
// modification time (version). That identity is taken from the kept
// listing of the object's folder (SetListing: zmap/listcache, whose S3
// listings carry ETags), with no request; where no listing holds the
// object it is asked of the store (a Stat, S3's HEAD) and believed for
// Options.TTL. A rewritten object has another identity, so another file:
// no read serves a rewritten object once the listing or the identity it
// read is older than the TTL, in this mount or any other sharing the
// folder. An object fetched is kept only when its bytes agree with the
// identity it was fetched under (its size, and the MD5 that a plain S3
// ETag is), so that an object rewritten between the listing and the read
// is not kept under its old identity.
//
// Several processes may share one folder. Each object is written to a
// temporary file and renamed into place, so a reader sees a whole object
// or none; eviction deletes the least recently used files (by their
// modification time, which a hit refreshes) until the folder is under
// its budget again, and a file deleted under a reader is a miss, not an
// error. The files of objects that were rewritten are never read again,
// and go first.
package diskcache

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nczarrfs/nczarrfs/zmap"
)

// Options configure New.
type Options struct {
	// MaxBytes is the folder's budget; 0 means DefaultMaxBytes.
	MaxBytes int64
	// Logger receives warnings about the cache folder (a full disk, a
	// file that cannot be written); nil discards them. A cache problem
	// never fails a read: the object is then served from the store.
	Logger *slog.Logger
}

// Listing says, with no request, what a kept listing holds of an object
// (zmap/listcache.Store.Cached): ok is false when no fresh listing of its
// folder holds it.
type Listing interface {
	Cached(key string) (e zmap.Entry, ok bool)
}

// maxSeen bounds the identities a Store remembers from Stat.
const maxSeen = 1 << 16

// DefaultMaxBytes is the budget of a cache folder when none is given.
const DefaultMaxBytes = 10 << 30

// maxObject bounds the objects cached: larger ones are not kept.
const maxObject = 1 << 30

// Store is a zmap.Store that caches the objects of another on disk.
type Store struct {
	inner zmap.Store
	dir   string // this dataset's folder inside the cache folder
	root  string // the cache folder, whose total the budget bounds
	max   int64
	log   *slog.Logger

	used     atomic.Int64 // bytes in root, as last counted plus added since
	evicting sync.Mutex   // one eviction scan at a time in this process

	mu      sync.Mutex
	listing Listing              // GUARDED_BY(mu): nil when none
	ttl     time.Duration        // GUARDED_BY(mu): how long seen is believed
	seen    map[string]seenEntry // GUARDED_BY(mu): identities from Stat, by key

	hits, misses, written, checked atomic.Int64
}

// seenEntry is an object's entry as a Stat gave it, at at.
type seenEntry struct {
	e  zmap.Entry
	at time.Time
}

var _ zmap.Store = (*Store)(nil)

// New returns a Store that caches inner's objects under dir. id names the
// dataset (for S3: endpoint, bucket and prefix), so that datasets sharing
// dir do not share objects. dir is made if missing.
func New(inner zmap.Store, dir, id string, opts Options) (*Store, error) {
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = DefaultMaxBytes
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	sum := sha256.Sum256([]byte(id))
	s := &Store{
		inner: inner,
		root:  dir,
		dir:   filepath.Join(dir, hex.EncodeToString(sum[:12])),
		max:   opts.MaxBytes,
		log:   opts.Logger,
		seen:  map[string]seenEntry{},
	}
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return nil, fmt.Errorf("diskcache: %w", err)
	}
	// Whoever made the folder may have left more than the budget.
	if err := s.evict(); err != nil {
		return nil, fmt.Errorf("diskcache: %w", err)
	}
	return s, nil
}

// SetListing makes s take the identity of objects from l, the kept
// listings of the store that wraps s (zmap/listcache), before it asks the
// store, and believe what the store said for ttl (the mount's
// --metadata-ttl; math.MaxInt64 for ever). Until it is called, the store
// is asked at every read.
func (s *Store) SetListing(l Listing, ttl time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.listing, s.ttl = l, ttl
}

// version is what identifies the content of the object e describes: its
// ETag, else its size and modification time; "" when the store says
// neither.
func version(e zmap.Entry) string {
	switch {
	case e.ETag != "":
		return "etag " + e.ETag
	case !e.ModTime.IsZero():
		return fmt.Sprintf("size %d time %d", e.Size, e.ModTime.UnixNano())
	}
	return ""
}

// identify returns the entry of key: from the kept listing, else from a
// Stat not older than the TTL, else from a new Stat.
func (s *Store) identify(ctx context.Context, key string) (zmap.Entry, error) {
	s.mu.Lock()
	l, ttl := s.listing, s.ttl
	se, ok := s.seen[key]
	s.mu.Unlock()
	if l != nil {
		if e, ok := l.Cached(key); ok {
			return e, nil
		}
	}
	if ok && time.Since(se.at) < ttl {
		return se.e, nil
	}
	at := time.Now()
	s.checked.Add(1)
	e, err := s.inner.Stat(ctx, key)
	if err != nil {
		return zmap.Entry{}, err
	}
	if ttl > 0 {
		s.mu.Lock()
		if len(s.seen) >= maxSeen {
			clear(s.seen) // rare, and costs one Stat per object read again
		}
		s.seen[key] = seenEntry{e: e, at: at}
		s.mu.Unlock()
	}
	return e, nil
}

// matches reports whether data may be the content of the object e
// describes: its size, and its MD5 when the ETag is one (an object
// written in one part, without SSE-KMS).
func matches(e zmap.Entry, data []byte) bool {
	if int64(len(data)) != e.Size {
		return false
	}
	if len(e.ETag) == 2*md5.Size {
		if want, err := hex.DecodeString(e.ETag); err == nil {
			sum := md5.Sum(data)
			return bytes.Equal(sum[:], want)
		}
	}
	return true
}

// path is the cache file of the version v of key.
func (s *Store) path(key, v string) string {
	sum := sha256.Sum256([]byte(key + "\x00" + v))
	h := hex.EncodeToString(sum[:16])
	return filepath.Join(s.dir, h[:2], h[2:])
}

// Get returns the object, from the cache folder when it is there.
func (s *Store) Get(ctx context.Context, key string) ([]byte, error) {
	if !zmap.ValidKey(key) {
		return s.inner.Get(ctx, key)
	}
	e, err := s.identify(ctx, key)
	if err != nil {
		return nil, err
	}
	v := version(e)
	if v == "" {
		return s.inner.Get(ctx, key)
	}
	if data, ok := s.readFile(key, v); ok {
		return data, nil
	}
	s.misses.Add(1)
	data, err := s.inner.Get(ctx, key)
	if err != nil {
		return nil, err
	}
	if matches(e, data) {
		s.put(key, v, data)
	}
	return data, nil
}

// ReadAt reads from the cached object when it is there; otherwise from
// the store, caching the object when the read reached its end from
// offset 0, that is when it fetched the whole object.
func (s *Store) ReadAt(ctx context.Context, key string, p []byte, off int64) (int, error) {
	if !zmap.ValidKey(key) || off < 0 {
		return s.inner.ReadAt(ctx, key, p, off)
	}
	e, err := s.identify(ctx, key)
	if err != nil {
		return 0, err
	}
	v := version(e)
	if v == "" {
		return s.inner.ReadAt(ctx, key, p, off)
	}
	if n, err, ok := s.readFileAt(key, v, p, off); ok {
		return n, err
	}
	s.misses.Add(1)
	n, err := s.inner.ReadAt(ctx, key, p, off)
	if off == 0 && err == io.EOF && matches(e, p[:n]) {
		s.put(key, v, p[:n])
	}
	return n, err
}

// A cache file is the object followed by a trailer: its length (8 bytes)
// and CRC-32C (4 bytes), little-endian, so that a damaged file is
// noticed and refetched rather than served.
const trailerSize = 12

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// readFile returns the cached object and true, or false when it is not
// cached (or its file cannot be read or is damaged: the store is asked
// then).
func (s *Store) readFile(key, v string) ([]byte, bool) {
	name := s.path(key, v)
	data, err := os.ReadFile(name)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			s.log.Warn("diskcache: cannot read a cached object; fetching it", "key", key, "file", name, "err", err)
		}
		return nil, false
	}
	n, sum, ok := trailer(data, int64(len(data)))
	if !ok || crc32.Checksum(data[:n], castagnoli) != sum {
		s.damaged(key, name)
		return nil, false
	}
	s.hit(name)
	return data[:n:n], true
}

// readFileAt is ReadAt from the cache file, with ok false when the object
// is not cached. A read of the whole object verifies its checksum; a
// partial read verifies its length.
func (s *Store) readFileAt(key, v string, p []byte, off int64) (n int, err error, ok bool) {
	name := s.path(key, v)
	f, err := os.Open(name)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			s.log.Warn("diskcache: cannot open a cached object; fetching it", "key", key, "file", name, "err", err)
		}
		return 0, nil, false
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return 0, nil, false
	}
	var tr [trailerSize]byte
	if info.Size() < trailerSize {
		s.damaged(key, name)
		return 0, nil, false
	}
	if _, err := f.ReadAt(tr[:], info.Size()-trailerSize); err != nil {
		return 0, nil, false
	}
	size, sum, good := trailer(tr[:], info.Size())
	if !good {
		s.damaged(key, name)
		return 0, nil, false
	}
	if off >= int64(size) {
		s.hit(name)
		return 0, io.EOF, true
	}
	want := min(int64(len(p)), int64(size)-off)
	n, err = f.ReadAt(p[:want], off)
	if err != nil {
		s.log.Warn("diskcache: cannot read a cached object; fetching it", "key", key, "file", name, "err", err)
		return 0, nil, false
	}
	if off == 0 && n == size && crc32.Checksum(p[:n], castagnoli) != sum {
		s.damaged(key, name)
		return 0, nil, false
	}
	s.hit(name)
	if int64(n) < int64(len(p)) {
		return n, io.EOF, true
	}
	return n, nil, true
}

// trailer parses the trailer at the end of b, a file of fileSize bytes,
// and checks the length it records against fileSize.
func trailer(b []byte, fileSize int64) (size int, sum uint32, ok bool) {
	if len(b) < trailerSize {
		return 0, 0, false
	}
	t := b[len(b)-trailerSize:]
	n := binary.LittleEndian.Uint64(t)
	if n != uint64(fileSize-trailerSize) {
		return 0, 0, false
	}
	return int(n), binary.LittleEndian.Uint32(t[8:]), true
}

// damaged removes a cache file that failed its check.
func (s *Store) damaged(key, name string) {
	s.log.Warn("diskcache: removing a damaged cached object; fetching it", "key", key, "file", name)
	os.Remove(name)
}

// hit counts a hit and marks the file recently used.
func (s *Store) hit(name string) {
	s.hits.Add(1)
	now := time.Now()
	_ = os.Chtimes(name, now, now) // best effort: it only orders eviction
}

// put writes the version v of an object to the cache folder: into a
// temporary file, then renamed into place, so that no reader sees part of
// it.
func (s *Store) put(key, v string, data []byte) {
	if len(data) > maxObject || int64(len(data)) > s.max/8 {
		return
	}
	name := s.path(key, v)
	if err := os.MkdirAll(filepath.Dir(name), 0o700); err != nil {
		s.log.Warn("diskcache: cannot cache", "key", key, "err", err)
		return
	}
	f, err := os.CreateTemp(filepath.Dir(name), ".tmp-*")
	if err != nil {
		s.log.Warn("diskcache: cannot cache", "key", key, "err", err)
		return
	}
	var tr [trailerSize]byte
	binary.LittleEndian.PutUint64(tr[:], uint64(len(data)))
	binary.LittleEndian.PutUint32(tr[8:], crc32.Checksum(data, castagnoli))
	_, err = f.Write(data)
	if err == nil {
		_, err = f.Write(tr[:])
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), name)
	}
	if err != nil {
		os.Remove(f.Name())
		s.log.Warn("diskcache: cannot cache", "key", key, "err", err)
		return
	}
	s.written.Add(1)
	if s.used.Add(int64(len(data))) > s.max {
		if err := s.evict(); err != nil {
			s.log.Warn("diskcache: eviction failed", "dir", s.root, "err", err)
		}
	}
}

// evict counts the bytes under the cache folder (every dataset's, and
// other processes' too) and, when they exceed the budget, deletes the
// least recently used files until they are at 90% of it.
func (s *Store) evict() error {
	if !s.evicting.TryLock() {
		return nil // another goroutine is at it
	}
	defer s.evicting.Unlock()
	type file struct {
		path  string
		size  int64
		mtime time.Time
	}
	var files []file
	var total int64
	err := filepath.WalkDir(s.root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // deleted by another process meanwhile
			}
			return err
		}
		if d.IsDir() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		if strings.HasPrefix(d.Name(), ".tmp-") && time.Since(info.ModTime()) < time.Hour {
			return nil // being written, or a recent crash's leftover
		}
		files = append(files, file{p, info.Size(), info.ModTime()})
		total += info.Size()
		return nil
	})
	if err != nil {
		return err
	}
	if total > s.max {
		slices.SortFunc(files, func(a, b file) int { return a.mtime.Compare(b.mtime) })
		for _, f := range files {
			if total <= s.max/10*9 {
				break
			}
			if err := os.Remove(f.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
			total -= f.size
		}
	}
	s.used.Store(total)
	return nil
}

// Stats are a Store's counters.
type Stats struct {
	Hits, Misses, Written, Checked int64
}

// Stats returns the counters: reads served from the folder, reads that
// went to the store, objects written to the folder, and identities asked
// of the store (a Stat: no kept listing held the object).
func (s *Store) Stats() Stats {
	return Stats{Hits: s.hits.Load(), Misses: s.misses.Load(), Written: s.written.Load(), Checked: s.checked.Load()}
}

// Size, Stat and Search ask the store.
func (s *Store) Size(ctx context.Context, key string) (int64, error) {
	return s.inner.Size(ctx, key)
}

func (s *Store) Stat(ctx context.Context, key string) (zmap.Entry, error) {
	return s.inner.Stat(ctx, key)
}

func (s *Store) Search(ctx context.Context, prefix string) ([]zmap.Entry, error) {
	return s.inner.Search(ctx, prefix)
}

// Close closes the store it wraps; the folder stays.
func (s *Store) Close() error { return s.inner.Close() }

// Unwrap returns the store it wraps.
func (s *Store) Unwrap() zmap.Store { return s.inner }
