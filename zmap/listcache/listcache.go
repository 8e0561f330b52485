// Package listcache keeps a store's listings and metadata objects for a
// while, so that browsing a distant dataset costs no request per name.
//
// A Store wraps another zmap.Store. A folder listed once is not listed
// again within the TTL, and what the kept listing says answers Stat and
// Size of the names in it, and Get, ReadAt, Stat and Size of the names
// not in it (ErrNotFound, with no request): the probes of shells and
// Python (.git, __pycache__) and the optional metadata objects a walk
// looks for (.zattrs) are then free. Metadata objects (.zgroup, .zarray,
// .zattrs, .zmetadata, zarr.json, ...) that were fetched are kept as well.
//
// When the wrapped store lists flat (zmap.FlatLister, S3) and the dataset
// holds at most Options.FlatLimit keys, the first request lists the whole
// dataset at once, and every folder is answered from that listing, as
// rclone's --fast-list. Larger datasets are listed folder by folder, and a
// folder's listing starts, in the background, the listings of the folders
// in it (Options.Prefetch).
//
// Nothing here imports FUSE: the mount and the commands that read without
// mounting use it alike.
package listcache

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nczarrfs/nczarrfs/zmap"
)

// Forever is the TTL of listings that never expire (--metadata-ttl
// forever): for data that never change.
const Forever = time.Duration(math.MaxInt64)

// DefaultTTL is how long a listing is kept unless told otherwise, as
// rclone's --dir-cache-time.
const DefaultTTL = 5 * time.Minute

// DefaultFlatLimit is the most keys a dataset may hold to be listed flat.
const DefaultFlatLimit = 200_000

// maxMetaBytes bounds the metadata objects kept, all together.
const maxMetaBytes = 256 << 20

// DefaultMaxBytes bounds the listings kept, all together, unless told
// otherwise: about 2,500,000 chunks' names, sizes, times and ETags
// (folder.go).
const DefaultMaxBytes = 128 << 20

// Options configure New.
type Options struct {
	// TTL is how long a listing or metadata object is kept. 0 keeps
	// nothing (every call goes to the store); Forever keeps them for
	// the life of the Store.
	TTL time.Duration
	// FlatLimit is the most keys a dataset may hold for its first
	// listing to be a flat one of every key. 0 lists folder by folder.
	FlatLimit int
	// Prefetch is how many listings of the folders in a listed folder
	// run at once in the background; 0 starts none.
	Prefetch int
	// MaxBytes bounds the memory the kept listings take, all together:
	// past it the least recently used folders are forgotten (and listed
	// again when next needed). A dataset listed flat is held whole, or,
	// when its listing alone takes more, listed folder by folder. 0
	// means DefaultMaxBytes.
	MaxBytes int64
	// Logger receives debug messages; nil means slog.Default().
	Logger *slog.Logger
}

// Store is a zmap.Store that keeps the listings and metadata objects of
// the store it wraps (see the package comment). Safe for concurrent use.
type Store struct {
	zmap.Store
	opts Options
	now  func() time.Time
	flat zmap.FlatLister // nil: folder by folder

	mu        sync.Mutex
	dirs      map[string]*folder  // GUARDED_BY(mu): by prefix
	lru       list.List           // GUARDED_BY(mu): of the *folder in dirs, most recently used first
	dirBytes  int64               // GUARDED_BY(mu): what the folders in dirs take
	forgotten int64               // GUARDED_BY(mu): folders forgotten to stay within MaxBytes
	meta      map[string]*doc     // GUARDED_BY(mu): by key
	metaBytes int64               // GUARDED_BY(mu)
	listing   map[string]*call    // GUARDED_BY(mu): Searches in flight, by prefix
	flatState flatState           // GUARDED_BY(mu)
	flatDone  chan struct{}       // GUARDED_BY(mu): closed when the flat listing in flight ends
	queued    map[string]struct{} // GUARDED_BY(mu): background listings queued or running
	pending   []string            // GUARDED_BY(mu): background listings not started, oldest first
	workers   int                 // GUARDED_BY(mu): goroutines draining pending, at most Prefetch
}

// maxPending bounds the background listings waiting: past it, folders are
// listed when asked for, not before.
const maxPending = 1 << 16

// flatState is where a Store is with its flat listing.
type flatState int

const (
	flatNotTried flatState = iota
	flatRunning
	flatHeld    // the dataset is in dirs, from a flat listing
	flatTooLong // more keys than FlatLimit: folder by folder
)

// doc is a kept metadata object, or the answer that it is not stored.
type doc struct {
	at   time.Time
	data []byte // nil when missing
}

// call is a Search in flight, which others asking for the same wait for.
type call struct {
	done    chan struct{}
	entries []zmap.Entry
	err     error
}

// New wraps s.
func New(s zmap.Store, opts Options) *Store {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = DefaultMaxBytes
	}
	c := &Store{
		Store:   s,
		opts:    opts,
		now:     time.Now,
		dirs:    map[string]*folder{},
		meta:    map[string]*doc{},
		listing: map[string]*call{},
		queued:  map[string]struct{}{},
	}
	if fl, ok := zmap.As[zmap.FlatLister](s); ok && opts.FlatLimit > 0 && opts.TTL > 0 {
		c.flat = fl
	}
	return c
}

// Unwrap returns the store it wraps, so that what that one offers beyond
// zmap.Store is still found (zmap.As).
func (c *Store) Unwrap() zmap.Store { return c.Store }

// TTL is how long the Store keeps what it learnt.
func (c *Store) TTL() time.Duration { return c.opts.TTL }

// fresh reports whether something learnt at at is still to be believed.
func (c *Store) fresh(at time.Time) bool {
	return c.opts.TTL == Forever || (c.opts.TTL > 0 && c.now().Sub(at) < c.opts.TTL)
}

// splitKey splits "a/b/c" into "a/b" and "c".
func splitKey(key string) (dir, name string) {
	if i := strings.LastIndexByte(key, '/'); i >= 0 {
		return key[:i], key[i+1:]
	}
	return "", key
}

// known says what a kept listing says of key without a request: its entry
// (ok true, found true), that it is not there (ok true, found false), or
// nothing (ok false).
func (c *Store) known(key string) (e zmap.Entry, found, ok bool) {
	dir, name := splitKey(key)
	if !zmap.ValidKey(key) {
		return zmap.Entry{}, false, false // the store says what it says of those
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	f := c.dirs[dir]
	if (f == nil || !c.fresh(f.at)) && c.flatState == flatHeld {
		// Every folder of the dataset is in dirs: one that is not
		// has nothing in it.
		if root := c.dirs[""]; root != nil && c.fresh(root.at) {
			return zmap.Entry{}, false, true
		}
	}
	if f == nil || !c.fresh(f.at) {
		return zmap.Entry{}, false, false
	}
	c.use(f)
	e, found = f.find(name)
	return e, found, true
}

// Cached returns the entry of key from a kept listing, with no request:
// ok is false when no fresh listing of its folder holds it.
func (c *Store) Cached(key string) (e zmap.Entry, ok bool) {
	e, found, ok := c.known(key)
	return e, ok && found
}

// Listed reports whether a fresh listing of the folder prefix is kept (or
// a listing that says it holds nothing), with no request.
func (c *Store) Listed(prefix string) bool {
	c.mu.Lock()
	f := c.dirs[prefix]
	c.mu.Unlock()
	if f != nil && c.fresh(f.at) {
		return true
	}
	if prefix == "" {
		return false
	}
	e, found, ok := c.known(prefix)
	return ok && (!found || !e.Dir)
}

// ListedAt returns when the fresh kept listing of the folder prefix was
// made, with no request: two calls that return the same time saw the same
// listing. ok is false when no fresh listing of it is kept.
func (c *Store) ListedAt(prefix string) (at time.Time, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if f := c.dirs[prefix]; f != nil && c.fresh(f.at) {
		return f.at, true
	}
	return time.Time{}, false
}

// notFound is the error of a key a kept listing does not hold.
func notFound(key string) error {
	return fmt.Errorf("%s: %w (not in the kept listing)", key, zmap.ErrNotFound)
}

// object answers from a kept listing whether key is an object: (entry,
// nil), an error wrapping ErrNotFound, or ok false when no listing says.
func (c *Store) object(ctx context.Context, key string, relist bool) (zmap.Entry, error, bool) {
	if err := ctx.Err(); err != nil {
		return zmap.Entry{}, fmt.Errorf("%s: %w", key, err), true
	}
	c.listFlat(ctx, relist)
	e, found, ok := c.known(key)
	switch {
	case !ok:
		return zmap.Entry{}, nil, false
	case !found || e.Dir:
		return zmap.Entry{}, notFound(key), true
	}
	return e, nil, true
}

// Stat answers from a kept listing, else asks the store.
func (c *Store) Stat(ctx context.Context, key string) (zmap.Entry, error) {
	if e, err, ok := c.object(ctx, key, true); ok {
		return e, err
	}
	return c.Store.Stat(ctx, key)
}

// Size answers from a kept listing, else asks the store.
func (c *Store) Size(ctx context.Context, key string) (int64, error) {
	if e, err, ok := c.object(ctx, key, true); ok {
		return e.Size, err
	}
	return c.Store.Size(ctx, key)
}

// ReadAt fails at once for a key a kept listing does not hold, reads a
// kept metadata object from memory, and otherwise reads from the store.
func (c *Store) ReadAt(ctx context.Context, key string, p []byte, off int64) (int, error) {
	if e, err, ok := c.object(ctx, key, false); ok {
		if err != nil {
			return 0, err
		}
		if off >= e.Size && len(p) > 0 {
			return 0, io.EOF
		}
	}
	if d := c.keptMeta(key); d != nil && d.data != nil && off >= 0 {
		if off >= int64(len(d.data)) {
			return 0, io.EOF
		}
		n := copy(p, d.data[off:])
		if n < len(p) {
			return n, io.EOF
		}
		return n, nil
	}
	return c.Store.ReadAt(ctx, key, p, off)
}

// keptMeta returns the fresh kept metadata object key, or nil.
func (c *Store) keptMeta(key string) *doc {
	if !isMeta(key) {
		return nil
	}
	c.mu.Lock()
	d := c.meta[key]
	c.mu.Unlock()
	if d == nil || !c.fresh(d.at) {
		return nil
	}
	return d
}

// isMeta reports whether key names a metadata object, which is kept.
func isMeta(key string) bool {
	_, name := splitKey(key)
	return strings.HasPrefix(name, ".z") || strings.HasPrefix(name, ".ncz") || name == "zarr.json"
}

// Get fails at once for a key a kept listing does not hold, answers a
// metadata object from what it kept, and otherwise fetches.
func (c *Store) Get(ctx context.Context, key string) ([]byte, error) {
	if _, err, ok := c.object(ctx, key, false); ok && err != nil {
		return nil, err
	}
	if !zmap.ValidKey(key) {
		return c.Store.Get(ctx, key)
	}
	meta := isMeta(key) && c.opts.TTL > 0
	if d := c.keptMeta(key); d != nil {
		if d.data == nil {
			return nil, notFound(key)
		}
		return slices.Clone(d.data), nil
	}
	at := c.now()
	data, err := c.Store.Get(ctx, key)
	if meta && (err == nil || errors.Is(err, zmap.ErrNotFound)) {
		c.keepMeta(key, &doc{at: at, data: data})
		if err == nil {
			data = slices.Clone(data) // the caller's own
		}
	}
	return data, err
}

// keepMeta keeps d under key, within maxMetaBytes.
func (c *Store) keepMeta(key string, d *doc) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if old := c.meta[key]; old != nil {
		c.metaBytes -= int64(len(old.data))
	}
	if c.metaBytes+int64(len(d.data)) > maxMetaBytes {
		delete(c.meta, key)
		return
	}
	c.meta[key] = d
	c.metaBytes += int64(len(d.data))
}

// Search answers from a kept listing: the folder's own, or its parent's
// when that says prefix is no folder (no children). Otherwise it lists the
// folder, once however many ask at the same time, and keeps the listing.
func (c *Store) Search(ctx context.Context, prefix string) ([]zmap.Entry, error) {
	return c.searchFor(ctx, prefix, true)
}

// searchFor is Search; with prefetch, a listing made starts the listings
// of its sub-folders in the background (those do not start more: one
// level, so that the background work stays bounded).
func (c *Store) searchFor(ctx context.Context, prefix string, prefetch bool) ([]zmap.Entry, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("list %s: %w", prefix, err)
	}
	c.listFlat(ctx, true)
	if entries, ok := c.keptListing(prefix); ok {
		return entries, nil
	}
	for {
		c.mu.Lock()
		cl := c.listing[prefix]
		leader := cl == nil
		if leader {
			cl = &call{done: make(chan struct{})}
			c.listing[prefix] = cl
		}
		c.mu.Unlock()
		if leader {
			c.search(ctx, prefix, cl, prefetch)
		} else {
			select {
			case <-cl.done:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		if cl.err != nil && ctx.Err() == nil && (errors.Is(cl.err, context.Canceled) || errors.Is(cl.err, context.DeadlineExceeded)) && !leader {
			continue // the one that listed gave up; we have not
		}
		if cl.err != nil {
			return nil, cl.err
		}
		return slices.Clone(cl.entries), nil
	}
}

// keptListing returns a fresh kept listing of prefix.
func (c *Store) keptListing(prefix string) ([]zmap.Entry, bool) {
	c.mu.Lock()
	f := c.dirs[prefix]
	if f != nil && c.fresh(f.at) {
		c.use(f)
		c.mu.Unlock()
		return f.entries(), true // a kept folder does not change
	}
	c.mu.Unlock()
	if prefix == "" {
		return nil, false
	}
	if e, found, ok := c.known(prefix); ok && (!found || !e.Dir) {
		return []zmap.Entry{}, true
	}
	return nil, false
}

// search lists prefix for cl and keeps the listing.
func (c *Store) search(ctx context.Context, prefix string, cl *call, prefetch bool) {
	at := c.now()
	cl.entries, cl.err = c.Store.Search(ctx, prefix)
	var f *folder
	if cl.err == nil && c.opts.TTL > 0 {
		f = pack(prefix, at, cl.entries)
	}
	c.mu.Lock()
	delete(c.listing, prefix)
	if f != nil {
		c.keep(f)
	}
	c.mu.Unlock()
	close(cl.done)
	if cl.err == nil && prefetch {
		c.prefetchIn(prefix, cl.entries)
	}
}

// prefetchIn queues background listings of the folders in prefix that
// are not kept, and starts goroutines to drain the queue: at most
// Options.Prefetch, however many folders wait, each of which ends when the
// queue is empty.
func (c *Store) prefetchIn(prefix string, entries []zmap.Entry) {
	if c.opts.Prefetch <= 0 || c.opts.TTL <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range entries {
		if !e.Dir {
			continue
		}
		if len(c.pending) >= maxPending {
			break
		}
		key := zmap.Join(prefix, e.Name)
		if _, queued := c.queued[key]; queued {
			continue
		}
		if f := c.dirs[key]; f != nil && c.fresh(f.at) {
			continue
		}
		c.queued[key] = struct{}{}
		c.pending = append(c.pending, key)
	}
	for c.workers < c.opts.Prefetch && c.workers < len(c.pending) {
		c.workers++
		go c.drain()
	}
}

// drain lists the queued folders, one at a time, until none is left.
func (c *Store) drain() {
	for {
		c.mu.Lock()
		if len(c.pending) == 0 {
			c.workers--
			c.pending = nil // let the array go
			c.mu.Unlock()
			return
		}
		key := c.pending[0]
		c.pending = c.pending[1:]
		c.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		if _, err := c.searchFor(ctx, key, false); err != nil {
			c.opts.Logger.Debug("background listing failed", "key", key, "err", err)
		}
		cancel()
		c.mu.Lock()
		delete(c.queued, key)
		c.mu.Unlock()
	}
}

// listFlat lists the whole dataset flat when that is cheap and not done,
// or, with relist, no longer fresh, and keeps every folder of it. Those
// who call it while it runs wait for it. Reads of objects (Get, ReadAt)
// do not list again once the listing is stale: a read of data must not
// wait for a listing of the whole dataset every TTL; the next listing,
// stat or lookup lists it again.
func (c *Store) listFlat(ctx context.Context, relist bool) {
	if c.flat == nil {
		return
	}
	c.mu.Lock()
	switch c.flatState {
	case flatTooLong:
		c.mu.Unlock()
		return
	case flatRunning:
		done := c.flatDone
		c.mu.Unlock()
		select {
		case <-done:
		case <-ctx.Done():
		}
		return
	case flatHeld:
		if f := c.dirs[""]; !relist || (f != nil && c.fresh(f.at)) {
			c.mu.Unlock()
			return
		}
	}
	c.flatState = flatRunning
	done := make(chan struct{})
	c.flatDone = done
	c.mu.Unlock()

	at := c.now()
	l, err := c.flat.ListFlat(ctx, "", c.opts.FlatLimit)
	c.mu.Lock()
	defer func() {
		c.mu.Unlock()
		close(done)
	}()
	switch {
	case err != nil:
		c.opts.Logger.Debug("flat listing failed; listing folder by folder", "err", err)
		c.flatState = flatNotTried // tried again at the next call
		return
	case !l.Complete:
		c.opts.Logger.Debug("dataset too large to list flat; listing folder by folder", "limit", c.opts.FlatLimit)
		c.flatState = flatTooLong
		return
	}
	// The folders of an earlier flat listing that this one does not
	// hold are gone.
	dirs := folders(l.Entries, at)
	var total int64
	for _, f := range dirs {
		total += f.bytes()
	}
	if total > c.opts.MaxBytes {
		c.opts.Logger.Debug("dataset's listing too large to keep whole; listing folder by folder", "bytes", total, "max", c.opts.MaxBytes)
		c.flatState = flatTooLong
		return
	}
	c.dirs = map[string]*folder{}
	c.lru.Init()
	c.dirBytes = 0
	for _, f := range dirs {
		c.keep(f)
	}
	c.flatState = flatHeld
	c.opts.Logger.Debug("listed the dataset flat", "keys", len(l.Entries), "requests", l.Requests)
}

// folders turns a flat listing (keys, sorted) made at at into the
// listing of every folder in it; the root's is there even when empty.
func folders(keys []zmap.Entry, at time.Time) map[string]*folder {
	lists := map[string][]zmap.Entry{"": nil}
	add := func(dir string, e zmap.Entry) {
		l := lists[dir]
		if n := len(l); n > 0 && l[n-1].Name == e.Name {
			return // a folder already added
		}
		lists[dir] = append(l, e)
	}
	for _, k := range keys {
		dir, name := splitKey(k.Name)
		add(dir, zmap.Entry{Name: name, Size: k.Size, ModTime: k.ModTime, ETag: k.ETag})
		for dir != "" {
			parent, sub := splitKey(dir)
			add(parent, zmap.Entry{Name: sub, Dir: true})
			dir = parent
		}
	}
	out := make(map[string]*folder, len(lists))
	for dir, l := range lists {
		// Keys sort with their folders' names in place ("a.b" before
		// "a/x" but "a" before both): sort again, keeping one entry of
		// each name, a folder over an object of the same name.
		slices.SortStableFunc(l, func(a, b zmap.Entry) int {
			if c := strings.Compare(a.Name, b.Name); c != 0 {
				return c
			}
			switch {
			case a.Dir && !b.Dir:
				return -1
			case b.Dir && !a.Dir:
				return 1
			}
			return 0
		})
		l = slices.CompactFunc(l, func(a, b zmap.Entry) bool { return a.Name == b.Name })
		out[dir] = pack(dir, at, l)
	}
	return out
}

// keep adds f to the kept listings, in the place of the folder's earlier
// one, and forgets the least recently used others while they take more
// than MaxBytes. A dataset held from a flat listing is then no longer
// known whole: a folder not kept is listed, not taken to be empty.
// c.mu is held.
func (c *Store) keep(f *folder) {
	if old := c.dirs[f.prefix]; old != nil {
		c.forget(old)
	}
	c.dirs[f.prefix] = f
	f.el = c.lru.PushFront(f)
	c.dirBytes += f.bytes()
	for c.dirBytes > c.opts.MaxBytes && c.lru.Len() > 1 {
		c.forget(c.lru.Back().Value.(*folder))
		c.forgotten++
		if c.flatState == flatHeld {
			c.flatState = flatNotTried
		}
	}
}

// forget drops the kept listing f. c.mu is held.
func (c *Store) forget(f *folder) {
	if c.dirs[f.prefix] == f {
		delete(c.dirs, f.prefix)
	}
	if f.el != nil {
		c.lru.Remove(f.el)
		f.el = nil
		c.dirBytes -= f.bytes()
	}
}

// use marks f as just used. c.mu is held.
func (c *Store) use(f *folder) {
	if f.el != nil {
		c.lru.MoveToFront(f.el)
	}
}

// ListingStats says what the kept listings take.
type ListingStats struct {
	Folders   int   // listings kept
	Bytes     int64 // the memory they take, about
	Forgotten int64 // listings forgotten to stay within Options.MaxBytes
}

// ListingStats returns what the kept listings take now.
func (c *Store) ListingStats() ListingStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return ListingStats{Folders: len(c.dirs), Bytes: c.dirBytes, Forgotten: c.forgotten}
}
