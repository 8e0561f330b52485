// Package cache keeps decoded chunks in memory under a byte budget, with
// least-recently-used eviction, and makes concurrent readers of one chunk
// share a single load.
//
// A load runs detached from the context of the caller that started it:
// a caller whose request is interrupted returns at once with its context's
// error, while the load goes on for the callers still waiting (and for the
// cache). A failed load is not cached; the next Get tries again.
package cache

import (
	"container/list"
	"context"
	"sync"
)

// entryOverhead is what an entry costs beyond its value's bytes, so that
// nil values (chunks not stored) are not free.
const entryOverhead = 64

// Cache is an LRU of byte slices with a byte budget. It is safe for
// concurrent use. Values handed out are shared: callers must not modify them.
type Cache struct {
	budget int64

	mu      sync.Mutex
	used    int64                    // GUARDED_BY(mu): cost of entries in lru
	lru     *list.List               // GUARDED_BY(mu): *entry, most recent first
	entries map[string]*list.Element // GUARDED_BY(mu)
	loads   map[string]*load         // GUARDED_BY(mu): loads in flight

	hits, misses int64 // GUARDED_BY(mu)
}

type entry struct {
	key   string
	value []byte
}

// load is one load in flight; done is closed when value and err are set.
type load struct {
	done  chan struct{}
	value []byte
	err   error
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

// Get returns the value cached under key, or runs load (once for all
// concurrent callers of the same key) and caches its result.
func (c *Cache) Get(ctx context.Context, key string, fn func(context.Context) ([]byte, error)) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c.mu.Lock()
	if el, ok := c.entries[key]; ok {
		c.lru.MoveToFront(el)
		c.hits++
		c.mu.Unlock()
		return el.Value.(*entry).value, nil
	}
	c.misses++
	l, inFlight := c.loads[key]
	if !inFlight {
		l = &load{done: make(chan struct{})}
		c.loads[key] = l
		go c.run(context.WithoutCancel(ctx), key, l, fn)
	}
	c.mu.Unlock()

	select {
	case <-l.done:
		return l.value, l.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (c *Cache) run(ctx context.Context, key string, l *load, fn func(context.Context) ([]byte, error)) {
	l.value, l.err = fn(ctx)
	c.mu.Lock()
	delete(c.loads, key)
	if l.err == nil {
		c.add(key, l.value)
	}
	c.mu.Unlock()
	close(l.done)
}

// add inserts a value and evicts the least recently used entries over
// budget. A value larger than the whole budget is not kept.
func (c *Cache) add(key string, value []byte) {
	cost := int64(len(value)) + entryOverhead
	if cost > c.budget {
		return
	}
	c.entries[key] = c.lru.PushFront(&entry{key: key, value: value})
	c.used += cost
	for c.used > c.budget {
		el := c.lru.Back()
		e := el.Value.(*entry)
		c.lru.Remove(el)
		delete(c.entries, e.key)
		c.used -= int64(len(e.value)) + entryOverhead
	}
}

// Stats reports the cache's state.
type Stats struct {
	Entries      int
	Bytes        int64 // cost of the entries, overhead included
	Budget       int64
	Hits, Misses int64
}

// Stats returns a snapshot of the cache's counters.
func (c *Cache) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return Stats{Entries: c.lru.Len(), Bytes: c.used, Budget: c.budget, Hits: c.hits, Misses: c.misses}
}
