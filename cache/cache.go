// Package cache keeps decoded chunks in memory under a byte budget, with
// least-recently-used eviction, and makes concurrent readers of one chunk
// share a single load.
//
// A load runs detached from the context of the caller that started it:
// a caller whose request is interrupted returns at once with its context's
// error, while the load goes on for the callers still waiting (and for the
// cache). A failed load is not cached; the next Get tries again.
//
// A caller's deadline bounds its wait for the store, not for the
// processor: once a load says it has what it needs from the store
// (Fetched), its callers wait for it to end even past their deadlines, so
// that a slow decode on a busy machine is not an error.
//
// Values obtained with Acquire are reference counted, so that the cache can
// recycle the buffer of an evicted value for a later load once nobody reads
// it any more. Touching fresh memory is expensive (page faults), and all
// chunks of an array have one size, so a steady sequential read then decodes
// into the same few buffers over and over.
package cache

import (
	"container/list"
	"context"
	"errors"
	"sync"
	"time"
)

// entryOverhead is what an entry costs beyond its value's bytes, so that
// nil values (chunks not stored) are not free.
const entryOverhead = 64

// maxFree bounds the buffers kept for recycling between an eviction and
// the next load that can use one.
const maxFree = 4

// maxColdScan bounds how far from the LRU's tail Alloc looks for a demoted
// entry to reuse.
const maxColdScan = 64

// Cache is an LRU of byte slices with a byte budget. It is safe for
// concurrent use. Values handed out are shared: callers must not modify them.
//
// The budget covers the cached values, the buffers kept for recycling and
// the buffers that loads in flight took from Alloc. Values that were evicted
// while a caller still held a Ref are not counted; they are bounded by the
// number of concurrent readers.
type Cache struct {
	budget int64
	// maxAge, when positive, is how long an entry serves: an older one
	// is loaded again at its next use (SetMaxAge).
	maxAge time.Duration

	mu      sync.Mutex
	used    int64                    // GUARDED_BY(mu): cost of lru entries, free buffers and reservations
	lru     *list.List               // GUARDED_BY(mu): *entry, most recent first
	entries map[string]*list.Element // GUARDED_BY(mu)
	loads   map[string]*load         // GUARDED_BY(mu): loads in flight
	free    [][]byte                 // GUARDED_BY(mu): unreferenced buffers to recycle

	hits, misses, recycled, evictions, prefetched int64         // GUARDED_BY(mu)
	prefetchHits, loadedBytes                     int64         // GUARDED_BY(mu)
	loadTime                                      time.Duration // GUARDED_BY(mu)
}

// entry is one loaded value. Every field is GUARDED_BY(Cache.mu).
type entry struct {
	key   string
	value []byte
	refs  int  // Refs not yet released
	inLRU bool // counted in Cache.used and listed in lru
	cold  bool // demoted: its buffer may be reused before the budget is reached
	// shared is set once value escaped without a reference (through Get):
	// it can then never be recycled.
	shared bool
	// prefetched is set for an entry Prefetch loaded until its first hit.
	prefetched bool
	// loaded is when its load ended.
	loaded time.Time
}

// load is one load in flight; done is closed when its entry's value and
// err are set.
type load struct {
	done     chan struct{}
	e        *entry
	err      error
	reserved int64 // GUARDED_BY(Cache.mu): bytes handed out by Alloc

	// fetched is closed by Fetched once the load needs the store no more.
	fetched     chan struct{}
	fetchedOnce sync.Once
	// start runs a load registered by Prefetch, once, whoever calls it
	// first: the queue it was handed to, or a caller that needs it now.
	start func()
}

func newLoad(e *entry) *load {
	return &load{done: make(chan struct{}), e: e, fetched: make(chan struct{})}
}

// loadKey keys the *load in the context a load function runs with.
type loadKey struct{}

// Fetched tells the cache that the load running with ctx has read what
// it needs from the store and only computes from now on: its callers then
// wait for it past their deadlines. It does nothing for another ctx.
func Fetched(ctx context.Context) {
	if l, ok := ctx.Value(loadKey{}).(*load); ok {
		l.fetchedOnce.Do(func() { close(l.fetched) })
	}
}

// isFetched reports whether Fetched was called for l.
func (l *load) isFetched() bool {
	select {
	case <-l.fetched:
		return true
	default:
		return false
	}
}

// New returns a cache holding at most budget bytes. A budget of 0 caches
// nothing but still shares concurrent loads.
func New(budget int64) *Cache {
	return &Cache{
		budget:  budget,
		lru:     list.New(),
		entries: map[string]*list.Element{},
		loads:   map[string]*load{},
	}
}

// SetMaxAge makes entries older than d be loaded again at their next use,
// so that a value that changed in the store shows within d (the mount's
// --metadata-ttl); d <= 0 keeps entries until they are evicted. Call it
// before the cache is used.
func (c *Cache) SetMaxAge(d time.Duration) { c.maxAge = d }

// lookup returns the element of key if it is cached and not too old; an
// entry past its age is dropped. c.mu is held.
func (c *Cache) lookup(key string) (*list.Element, bool) {
	el, ok := c.entries[key]
	if !ok {
		return nil, false
	}
	if e := el.Value.(*entry); c.maxAge > 0 && time.Since(e.loaded) > c.maxAge {
		c.unlink(el)
		if e.refs == 0 {
			c.recycle(e)
		}
		return nil, false
	}
	return el, true
}

// Get returns the value cached under key, or runs load (once for all
// concurrent callers of the same key) and caches its result. The value is
// never recycled: use Acquire for that.
func (c *Cache) Get(ctx context.Context, key string, fn func(context.Context) ([]byte, error)) ([]byte, error) {
	ref, err := c.acquire(ctx, key, func(ctx context.Context, _ Alloc) ([]byte, error) { return fn(ctx) })
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	ref.e.shared = true
	c.mu.Unlock()
	v := ref.Value()
	ref.Release()
	return v, nil
}

// Alloc returns a buffer of length n for a load to fill, recycled from an
// evicted value when one fits, and counts it against the cache's budget
// until the load ends. Its contents are arbitrary.
type Alloc func(n int) []byte

// A Ref is a counted reference to a value obtained with Acquire. The value
// stays valid, and is not recycled, until Release.
type Ref struct {
	c   *Cache
	e   *entry
	hit bool
}

// Hit reports whether the value was cached when Acquire was called, so
// that the caller did not wait for a load.
func (r *Ref) Hit() bool { return r.hit }

// Value returns the referenced value; callers must not modify it.
func (r *Ref) Value() []byte { return r.e.value }

// Release gives up the reference. Value must not be used afterwards.
// Release must be called exactly once.
func (r *Ref) Release() {
	c := r.c
	c.mu.Lock()
	defer c.mu.Unlock()
	e := r.e
	r.e = nil // a second Release panics rather than corrupting counts
	e.refs--
	if e.refs == 0 && !e.inLRU {
		c.recycle(e)
	}
}

// Acquire is Get with a reference: it returns the value cached under key,
// or runs load (once for all concurrent callers of the same key) and caches
// its result. load may take the buffer it fills from alloc; whatever value
// it returns becomes the cache's, which may hand it to a later load once it
// is evicted and every Ref to it is released.
func (c *Cache) Acquire(ctx context.Context, key string, fn func(ctx context.Context, alloc Alloc) ([]byte, error)) (*Ref, error) {
	return c.acquire(ctx, key, fn)
}

// Peek returns a Ref to the value cached under key, or nil when there is
// none (a load in flight is none): it starts no load, for callers that
// read what they need another way on a miss. A Ref it returns is a hit.
func (c *Cache) Peek(key string) *Ref {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.lookup(key); ok {
		return c.hit(el)
	}
	return nil
}

// hit counts a hit on a cached entry and returns a Ref to it. c.mu is held.
func (c *Cache) hit(el *list.Element) *Ref {
	c.lru.MoveToFront(el)
	c.hits++
	e := el.Value.(*entry)
	e.refs++
	e.cold = false
	if e.prefetched {
		e.prefetched = false
		c.prefetchHits++
	}
	return &Ref{c: c, e: e, hit: true}
}

func (c *Cache) acquire(ctx context.Context, key string, fn func(context.Context, Alloc) ([]byte, error)) (*Ref, error) {
	return c.acquireTry(ctx, key, fn, true)
}

// acquireTry is acquire; with retry, a caller whose joined load fails
// tries once more.
func (c *Cache) acquireTry(ctx context.Context, key string, fn func(context.Context, Alloc) ([]byte, error), retry bool) (*Ref, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c.mu.Lock()
	if el, ok := c.lookup(key); ok {
		ref := c.hit(el)
		c.mu.Unlock()
		return ref, nil
	}
	c.misses++
	l, inFlight := c.loads[key]
	if !inFlight {
		l = newLoad(&entry{key: key})
		c.loads[key] = l
		go c.run(context.WithoutCancel(ctx), l, fn)
	}
	l.e.refs++ // taken now, so the value cannot be recycled before we read it
	c.mu.Unlock()
	ref := &Ref{c: c, e: l.e}
	if l.start != nil {
		// Read-ahead queued this load and may not have started it:
		// this caller needs it now.
		go l.start()
	}

	select {
	case <-l.done:
	case <-ctx.Done():
		if !errors.Is(ctx.Err(), context.DeadlineExceeded) || !l.isFetched() {
			ref.Release()
			return nil, ctx.Err()
		}
		// Past the store: the rest is the processor's time.
		<-l.done
	}
	if l.err != nil {
		ref.Release()
		if retry && inFlight && ctx.Err() == nil {
			// The load this caller joined was started earlier, by
			// another caller or read-ahead, maybe while the store was
			// failing: try once more, with a load of its own, within
			// what is left of this caller's time.
			return c.acquireTry(ctx, key, fn, false)
		}
		return nil, l.err
	}
	return ref, nil
}

func (c *Cache) run(ctx context.Context, l *load, fn func(context.Context, Alloc) ([]byte, error)) {
	ctx = context.WithValue(ctx, loadKey{}, l)
	start := time.Now()
	value, err := fn(ctx, func(n int) []byte { return c.alloc(l, n) })
	took := time.Since(start)
	c.mu.Lock()
	c.loadTime += took
	delete(c.loads, l.e.key)
	c.used -= l.reserved
	l.e.value, l.err = value, err
	if err == nil {
		c.loadedBytes += int64(len(value))
		l.e.loaded = time.Now()
		c.add(l.e)
	} else {
		l.e.value = nil
	}
	c.mu.Unlock()
	close(l.done)
}

// alloc makes room for n bytes under the budget, evicting least recently
// used entries, and returns a buffer of length n: the first fitting one
// that eviction freed or that was kept for recycling, else a new one.
func (c *Cache) alloc(l *load, n int) []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	var buf []byte
	take := func(b []byte) bool {
		if buf == nil && fits(b, n) {
			buf = b
			return true
		}
		return false
	}
	for i := 0; i < len(c.free); i++ {
		if take(c.free[i]) {
			c.used -= int64(cap(buf))
			c.free = append(c.free[:i], c.free[i+1:]...)
			break
		}
	}
	// A demoted entry is reused before anything else is evicted, even
	// when the budget has room: a sequential scan then cycles through a
	// few buffers instead of touching fresh memory for every chunk.
	scanned := 0
	for el := c.lru.Back(); buf == nil && el != nil && scanned < maxColdScan; scanned++ {
		e := el.Value.(*entry)
		prev := el.Prev()
		if e.cold && e.refs == 0 && !e.shared && take(e.value) {
			c.unlink(el)
			e.value = nil
		}
		el = prev
	}
	for c.used+int64(n) > c.budget {
		if c.dropFree() {
			continue
		}
		el := c.lru.Back()
		if el == nil {
			break
		}
		e := el.Value.(*entry)
		c.unlink(el)
		if e.refs == 0 && !e.shared && take(e.value) {
			e.value = nil
		}
	}
	c.used += int64(n)
	l.reserved += int64(n)
	if buf == nil {
		return make([]byte, n)
	}
	c.recycled++
	return buf[:n]
}

// dropFree forgets the newest spare buffer, if there is one, and gives
// its bytes back to the budget.
func (c *Cache) dropFree() bool {
	last := len(c.free) - 1
	if last < 0 {
		return false
	}
	c.used -= int64(cap(c.free[last]))
	c.free[last] = nil
	c.free = c.free[:last]
	return true
}

// fits reports whether b can hold n bytes without wasting much.
func fits(b []byte, n int) bool { return cap(b) >= n && cap(b)-n <= n/4 }

// add inserts a loaded entry and evicts the least recently used entries
// over budget. A value larger than the whole budget is not kept.
func (c *Cache) add(e *entry) {
	cost := int64(len(e.value)) + entryOverhead
	if cost > c.budget {
		return
	}
	c.entries[e.key] = c.lru.PushFront(e)
	e.inLRU = true
	c.used += cost
	for c.used > c.budget {
		if c.dropFree() {
			continue
		}
		el := c.lru.Back()
		if el == c.lru.Front() {
			// Only the new entry is left: the excess is other loads'
			// reservations, which end with them.
			break
		}
		c.unlink(el)
		if e := el.Value.(*entry); e.refs == 0 {
			c.recycle(e)
		}
	}
}

// unlink removes an entry from the LRU.
func (c *Cache) unlink(el *list.Element) {
	e := el.Value.(*entry)
	c.lru.Remove(el)
	delete(c.entries, e.key)
	e.inLRU = false
	c.used -= int64(len(e.value)) + entryOverhead
	c.evictions++
}

// recycle keeps the buffer of an entry that is neither cached nor
// referenced for a later load, if the budget has room for it.
func (c *Cache) recycle(e *entry) {
	b := e.value
	e.value = nil
	if e.shared || cap(b) == 0 || len(c.free) >= maxFree || c.used+int64(cap(b)) > c.budget {
		return
	}
	c.free = append(c.free, b)
	c.used += int64(cap(b))
}

// Demote tells the cache that key's value is unlikely to be read again
// soon, typically because a sequential reader went past it: the entry moves
// to the tail of the LRU and its buffer may be handed to the next load of a
// fitting size even before the budget is reached. A later hit undoes it.
func (c *Cache) Demote(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.entries[key]; ok {
		el.Value.(*entry).cold = true
		c.lru.MoveToBack(el)
	}
}

// Prefetch registers a load of key, as Acquire would, unless key is cached
// or loading already, and returns the function that runs it; ok is false
// when there is nothing to load. The caller runs run, in any goroutine and
// at any time; the load runs once, at the first call of run or as soon as
// an Acquire caller of key needs it, whichever comes first (later calls of
// run return at once). This lets read-ahead queue its loads in the order a
// reader will need them, without a reader ever waiting for the queue.
// The result is cached for later callers; a failed load is forgotten.
func (c *Cache) Prefetch(ctx context.Context, key string, fn func(ctx context.Context, alloc Alloc) ([]byte, error)) (run func(), ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.lookup(key); ok {
		return nil, false
	}
	if _, ok := c.loads[key]; ok {
		return nil, false
	}
	l := newLoad(&entry{key: key, prefetched: true})
	var once sync.Once
	l.start = func() { once.Do(func() { c.run(context.WithoutCancel(ctx), l, fn) }) }
	c.loads[key] = l
	c.prefetched++
	return l.start, true
}

// Budget returns the byte budget the cache was made with.
func (c *Cache) Budget() int64 { return c.budget }

// Stats reports the cache's state.
type Stats struct {
	Entries      int
	Bytes        int64 // cost of the entries, overhead included
	Budget       int64
	Hits, Misses int64
	// Recycled counts the buffers Alloc reused instead of allocating.
	Recycled int64
	// Free is the number of buffers kept for recycling.
	Free int
	// Evictions counts entries dropped from the LRU (to make room, or
	// reused after a Demote); Prefetched counts loads Prefetch registered,
	// PrefetchHits the prefetched entries that a later Acquire found.
	Evictions, Prefetched, PrefetchHits int64
	// LoadedBytes is the size of every value loaded, decoded chunks for
	// nczarr.
	LoadedBytes int64
	// LoadTime sums the time loads took, failed ones too: for nczarr,
	// fetching chunks from the store and decoding them.
	LoadTime time.Duration
}

// Stats returns a snapshot of the cache's counters.
func (c *Cache) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	var bytes int64
	for el := c.lru.Front(); el != nil; el = el.Next() {
		bytes += int64(len(el.Value.(*entry).value)) + entryOverhead
	}
	return Stats{Entries: c.lru.Len(), Bytes: bytes, Budget: c.budget, Hits: c.hits, Misses: c.misses,
		Recycled: c.recycled, Free: len(c.free), Evictions: c.evictions, Prefetched: c.prefetched,
		PrefetchHits: c.prefetchHits, LoadedBytes: c.loadedBytes, LoadTime: c.loadTime}
}
