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
// The cache owns only what it writes: its files live in a layout of its
// own under the folder given (layout.go), tagged with a CACHEDIR.TAG, and
// whatever else the folder holds is never read, counted, touched or
// removed. Nothing in the layout follows a symbolic link.
//
// Every read of a cached file is checked: the file keeps a CRC-32C of
// each 16 KiB block of the object (format.go), and a read checks the
// blocks it touches, so that a damaged file is removed and the object
// fetched again rather than served.
//
// Several processes may share one folder. Each object is written to a
// temporary file and renamed into place, so a reader sees a whole object
// or none; eviction deletes the cache's least recently used files (by
// their modification time, which a hit refreshes) until the layout is
// under its budget again, and a file deleted under a reader is a miss,
// not an error. The files of objects that were rewritten are never read
// again, and go first.
package diskcache

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/nczarrfs/nczarrfs/zmap"
)

// Options configure New.
type Options struct {
	// MaxBytes is the budget of the cache's own files in the folder
	// (nothing else there counts); 0 means DefaultMaxBytes.
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
	inner  zmap.Store
	root   string   // the folder given, where the layout is
	v1     *os.File // the layout's version folder, whose files the budget bounds
	dsDir  *os.File // this dataset's folder in it
	dsPath string   // its path, for messages
	max    int64
	log    *slog.Logger

	unscanned atomic.Int64 // bytes written since the layout was last counted
	evicting  sync.Mutex   // one eviction scan at a time in this process

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
	ds := datasetName(id)
	v1, dsDir, err := openLayout(dir, ds)
	if err != nil {
		return nil, fmt.Errorf("diskcache: %w", err)
	}
	s := &Store{
		inner:  inner,
		root:   dir,
		v1:     v1,
		dsDir:  dsDir,
		dsPath: filepath.Join(dir, topName, layoutVer, ds),
		max:    opts.MaxBytes,
		log:    opts.Logger,
		seen:   map[string]seenEntry{},
	}
	// Whoever used the layout may have left more than the budget.
	if err := s.evict(0); err != nil {
		return nil, fmt.Errorf("diskcache: %w", err)
	}
	return s, nil
}

// datasetName is the name of the folder of the dataset id in the layout.
func datasetName(id string) string {
	sum := sha256.Sum256([]byte(id))
	return hex.EncodeToString(sum[:datasetLen/2])
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

// Get returns the object, from the cache folder when it is there.
func (s *Store) Get(ctx context.Context, key string) ([]byte, error) {
	if !zmap.ValidKey(key) {
		return s.inner.Get(ctx, key)
	}
	e, err := s.identify(ctx, key)
	if err != nil {
		return nil, err
	}
	// The object's identity tells its size: one over the request's bound
	// is refused before anything is read, from the folder or the store.
	if err := zmap.CheckSize(ctx, key, e.Size); err != nil {
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

// name returns the shard folder and file name of the version v of key.
func name(key, v string) (shard, file string) {
	sum := sha256.Sum256([]byte(key + "\x00" + v))
	h := hex.EncodeToString(sum[:16])
	return h[:shardLen], h[shardLen:]
}

// open opens the cache file of the version v of key: ok is false when it
// is not cached, or something not the cache's is in its place.
func (s *Store) open(key, v string) (f cacheFD, size int64, shard, file string, ok bool) {
	shard, file = name(key, v)
	f, size, err := openFile(fd(s.dsDir), shard, file)
	runtime.KeepAlive(s.dsDir)
	if err != nil {
		if err != unix.ENOENT {
			s.log.Warn("diskcache: cannot open a cached object; fetching it", "key", key, "file", filepath.Join(s.dsPath, shard, file), "err", err)
		}
		return -1, 0, shard, file, false
	}
	return f, size, shard, file, true
}

// readFile returns the cached object and true, or false when it is not
// cached (or its file cannot be read or is damaged: the store is asked
// then).
func (s *Store) readFile(key, v string) ([]byte, bool) {
	f, size, shard, file, ok := s.open(key, v)
	if !ok {
		return nil, false
	}
	defer f.Close()
	if size > fileSize(maxObject) {
		s.damaged(key, shard, file)
		return nil, false
	}
	buf := make([]byte, size)
	if _, err := f.ReadAt(buf, 0); err != nil {
		s.log.Warn("diskcache: cannot read a cached object; fetching it", "key", key, "file", filepath.Join(s.dsPath, shard, file), "err", err)
		return nil, false
	}
	data, ok := decode(buf)
	if !ok {
		s.damaged(key, shard, file)
		return nil, false
	}
	s.hit(f)
	return data, true
}

// readFileAt is ReadAt from the cache file, with ok false when the object
// is not cached. Every read checks the CRCs of the blocks it touches.
func (s *Store) readFileAt(key, v string, p []byte, off int64) (n int, err error, ok bool) {
	f, size, shard, file, ok := s.open(key, v)
	if !ok {
		return 0, nil, false
	}
	defer f.Close()
	n, err, ok = readChecked(f, size, p, off)
	if !ok {
		s.damaged(key, shard, file)
		return 0, nil, false
	}
	s.hit(f)
	return n, err, true
}

// damaged removes a cache file that failed its check (or could not be
// read).
func (s *Store) damaged(key, shard, file string) {
	s.log.Warn("diskcache: removing a damaged cached object; fetching it", "key", key, "file", filepath.Join(s.dsPath, shard, file))
	d, err := openDir(fd(s.dsDir), shard)
	runtime.KeepAlive(s.dsDir)
	if err != nil {
		return
	}
	defer d.Close()
	var st unix.Stat_t
	if unix.Fstatat(fd(d), file, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFREG && st.Nlink == 1 {
		unix.Unlinkat(fd(d), file, 0)
	}
}

// hit counts a hit and marks the file f recently used.
func (s *Store) hit(f cacheFD) {
	s.hits.Add(1)
	now := unix.NsecToTimeval(time.Now().UnixNano())
	_ = unix.Futimes(int(f), []unix.Timeval{now, now}) // best effort: it only orders eviction
}

// put writes the version v of an object to the cache folder: into a
// temporary file, then renamed into place, so that no reader sees part of
// it.
func (s *Store) put(key, v string, data []byte) {
	if len(data) > maxObject || fileSize(int64(len(data))) > s.max/8 {
		return
	}
	s.reserve(fileSize(int64(len(data))))
	shard, file := name(key, v)
	d, err := makeDir(fd(s.dsDir), shard)
	runtime.KeepAlive(s.dsDir)
	if err != nil {
		s.log.Warn("diskcache: cannot cache", "key", key, "folder", filepath.Join(s.dsPath, shard), "err", err)
		return
	}
	defer d.Close()
	f, tmp, err := createTemp(fd(d))
	if err != nil {
		s.log.Warn("diskcache: cannot cache", "key", key, "err", err)
		return
	}
	_, err = f.Write(data)
	if err == nil {
		_, err = f.Write(tail(data))
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = unix.Renameat(fd(d), tmp, fd(d), file)
	}
	if err != nil {
		unix.Unlinkat(fd(d), tmp, 0)
		s.log.Warn("diskcache: cannot cache", "key", key, "err", err)
		return
	}
	s.written.Add(1)
}

// reserve makes room for a file of n bytes: when this Store has written
// more than a twentieth of the budget since it last counted the folder,
// it counts again and evicts (see evict).
func (s *Store) reserve(n int64) {
	if s.unscanned.Add(n) <= s.max/20 {
		return
	}
	if err := s.evict(n); err != nil {
		s.log.Warn("diskcache: eviction failed", "dir", s.root, "err", err)
	}
}

// staleTemp is the age past which a temporary file is a crash's leftover.
const staleTemp = time.Hour

// evict counts the bytes of the cache's files in the layout (every
// dataset's, and other processes' too) and, when they and reserve more
// exceed 90% of the budget, deletes the least recently used files until
// they are at 80% of it. Temporary files older than staleTemp go in any
// case. Nothing else in the folder is counted or removed.
//
// Each Store counts the folder again once it has written a twentieth of
// the budget (reserve), so that two mounts sharing the folder keep it
// within the budget; each further one may pass it by a twentieth.
func (s *Store) evict(reserve int64) error {
	if !s.evicting.TryLock() {
		return nil // another goroutine is at it
	}
	defer s.evicting.Unlock()
	defer runtime.KeepAlive(s.v1)
	files, err := scan(fd(s.v1))
	if err != nil {
		return err
	}
	var total int64
	keep := files[:0]
	for _, f := range files {
		if f.temp && time.Since(f.mtime) > staleTemp {
			if err := remove(fd(s.v1), f); err != nil {
				return err
			}
			continue
		}
		total += f.size
		if !f.temp { // being written
			keep = append(keep, f)
		}
	}
	if total+reserve > s.max/10*9 {
		oldest(keep)
		for _, f := range keep {
			if total+reserve <= s.max/10*8 {
				break
			}
			if err := remove(fd(s.v1), f); err != nil {
				return err
			}
			total -= f.size
		}
	}
	s.unscanned.Store(reserve)
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

// Close closes the store it wraps; the folder stays. The descriptors of
// the layout's folders are released with the Store (so that no read still
// running uses a descriptor number closed and reused).
func (s *Store) Close() error { return s.inner.Close() }

// Unwrap returns the store it wraps.
func (s *Store) Unwrap() zmap.Store { return s.inner }
