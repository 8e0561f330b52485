// Package stats keeps a mount's live counters: the requests its store
// served, what its chunk cache did, and the last errors a user saw. The
// FUSE tree shows them as .nczarrfs/stats and .nczarrfs/errors, so a slow
// or failing mount can be diagnosed with cat.
//
// Everything here is safe for concurrent use and cheap enough to stay on
// in production: a few atomic adds per store request.
package stats

import (
	"encoding/json"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nczarrfs/nczarrfs/cache"
	"github.com/nczarrfs/nczarrfs/zmap/diskcache"
)

// Mount gathers the counters of one mount. The zero value is ready to use;
// Store and Cache are optional and set before the mount starts.
type Mount struct {
	// Source names the dataset, as shown in the mount table.
	Source string
	// Store counts the store's requests; nil when they are not counted.
	Store *Store
	// Cache is the decoded-chunk cache; nil when there is none.
	Cache *cache.Cache
	// Disk is the folder of --cache-dir; nil when there is none.
	Disk *diskcache.Store
	// Kernel counts the kernel's requests that the daemon answered,
	// of the kinds its caches may spare (see Kernel).
	Kernel Kernel

	errorsOnce sync.Once
	errors     *ErrorLog
}

// Errors returns the mount's error log, made on first use with room for
// DefaultErrors entries.
func (m *Mount) Errors() *ErrorLog {
	m.errorsOnce.Do(func() {
		if m.errors == nil {
			m.errors = NewErrorLog(DefaultErrors)
		}
	})
	return m.errors
}

// Snapshot is the content of .nczarrfs/stats.
type Snapshot struct {
	Source string         `json:"source,omitempty"`
	Store  *StoreSnapshot `json:"store,omitempty"`
	Cache  *CacheSnapshot `json:"cache,omitempty"`
	// Disk counts the reads --cache-dir served (hits), those that went
	// to the store (misses), and the objects it kept (written).
	Disk *DiskSnapshot `json:"disk_cache,omitempty"`
	// Kernel counts the kernel's requests the daemon answered.
	Kernel KernelSnapshot `json:"kernel"`
	// Errors counts the failures returned to users, by kind (see
	// ErrorLog.Add); kinds that never happened are absent.
	Errors map[string]int64 `json:"errors"`
}

// CacheSnapshot is the part of cache.Stats a user can act on.
type CacheSnapshot struct {
	Hits      int64 `json:"hits"`
	Misses    int64 `json:"misses"`
	Evictions int64 `json:"evictions"`
	// DecodedBytes sums the decoded chunks loaded into the cache, and
	// LoadSeconds the time their loads took: fetching and decoding.
	DecodedBytes int64   `json:"decoded_bytes"`
	LoadSeconds  float64 `json:"load_seconds"`
	// ReadAheadLoads counts the chunk loads read-ahead started, and
	// ReadAheadHits those that a read then found in the cache.
	ReadAheadLoads int64 `json:"read_ahead_loads"`
	ReadAheadHits  int64 `json:"read_ahead_hits"`
	// Recycled counts chunk buffers reused instead of allocated.
	Recycled int64 `json:"recycled"`
	Entries  int   `json:"entries"`
	Bytes    int64 `json:"bytes"`
	Budget   int64 `json:"budget"`
}

// Kernel counts the kernel's FUSE requests that reached the daemon, of
// the kinds the kernel's caches of names, attributes and folder entries
// spare within --metadata-ttl: what a second ls -lR costs.
type Kernel struct {
	Lookups, Opendirs, Readdirs, Xattrs atomic.Int64
}

// KernelSnapshot is Kernel, now. Readdirs counts the listings the daemon
// gave the kernel for an open folder (none when the kernel answered
// from its cache of the folder's entries); Xattrs the getxattr and
// listxattr requests.
type KernelSnapshot struct {
	Lookups  int64 `json:"lookups"`
	Opendirs int64 `json:"opendirs"`
	Readdirs int64 `json:"readdirs"`
	Xattrs   int64 `json:"xattrs"`
}

// DiskSnapshot is diskcache.Stats. Checked counts the objects whose
// identity (ETag) was asked of the store with a HEAD, because no kept
// listing held it.
type DiskSnapshot struct {
	Hits    int64 `json:"hits"`
	Misses  int64 `json:"misses"`
	Written int64 `json:"written"`
	Checked int64 `json:"checked"`
}

// Snapshot reads every counter now.
func (m *Mount) Snapshot() Snapshot {
	s := Snapshot{Source: m.Source, Errors: m.Errors().Counts(), Kernel: KernelSnapshot{
		Lookups: m.Kernel.Lookups.Load(), Opendirs: m.Kernel.Opendirs.Load(),
		Readdirs: m.Kernel.Readdirs.Load(), Xattrs: m.Kernel.Xattrs.Load(),
	}}
	if m.Store != nil {
		st := m.Store.Snapshot()
		s.Store = &st
	}
	if m.Cache != nil {
		cs := m.Cache.Stats()
		s.Cache = &CacheSnapshot{
			Hits: cs.Hits, Misses: cs.Misses, Evictions: cs.Evictions,
			DecodedBytes: cs.LoadedBytes, LoadSeconds: cs.LoadTime.Seconds(),
			ReadAheadLoads: cs.Prefetched, ReadAheadHits: cs.PrefetchHits,
			Recycled: cs.Recycled, Entries: cs.Entries, Bytes: cs.Bytes, Budget: cs.Budget,
		}
	}
	if m.Disk != nil {
		ds := m.Disk.Stats()
		s.Disk = &DiskSnapshot{Hits: ds.Hits, Misses: ds.Misses, Written: ds.Written, Checked: ds.Checked}
	}
	return s
}

// JSON renders Snapshot as indented JSON with a final newline.
func (m *Mount) JSON() []byte {
	b, err := json.MarshalIndent(m.Snapshot(), "", "  ")
	if err != nil {
		panic(err) // only plain numbers, strings and maps
	}
	return append(b, '\n')
}

// DefaultErrors is how many errors a Mount's log keeps.
const DefaultErrors = 100

// Error is one failure returned to a user.
type Error struct {
	Time  time.Time `json:"time"`
	Op    string    `json:"op"`    // what was asked: "read data", "lookup", ...
	Key   string    `json:"key"`   // the store key or array path concerned
	Kind  string    `json:"kind"`  // a class of failure, as counted
	Errno string    `json:"errno"` // what the caller got, e.g. "EIO"
	Err   string    `json:"error"` // the full message
}

// ErrorLog counts errors by kind and keeps the last few.
type ErrorLog struct {
	mu     sync.Mutex
	ring   []Error          // GUARDED_BY(mu): the last len(ring) errors, ring[next] the oldest once full
	next   int              // GUARDED_BY(mu)
	full   bool             // GUARDED_BY(mu)
	counts map[string]int64 // GUARDED_BY(mu)
}

// NewErrorLog returns a log that keeps the last n errors (at least one).
func NewErrorLog(n int) *ErrorLog {
	return &ErrorLog{ring: make([]Error, max(n, 1)), counts: map[string]int64{}}
}

// Add counts e under e.Kind and keeps it, dropping the oldest kept error
// when the log is full.
func (l *ErrorLog) Add(e Error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.counts[e.Kind]++
	l.ring[l.next] = e
	l.next++
	if l.next == len(l.ring) {
		l.next, l.full = 0, true
	}
}

// Count counts an error of the given kind without keeping it: for
// failures too common to crowd out the others, such as interruptions.
func (l *ErrorLog) Count(kind string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.counts[kind]++
}

// Counts returns how many errors of each kind were added.
func (l *ErrorLog) Counts() map[string]int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return maps.Clone(l.counts)
}

// Last returns the kept errors, oldest first.
func (l *ErrorLog) Last() []Error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.full {
		return append([]Error(nil), l.ring[:l.next]...)
	}
	return append(append([]Error(nil), l.ring[l.next:]...), l.ring[:l.next]...)
}

// JSONLines renders Last as one JSON object per line, for cat and jq.
func (l *ErrorLog) JSONLines() []byte {
	var b []byte
	for _, e := range l.Last() {
		line, err := json.Marshal(e)
		if err != nil {
			panic(err) // strings and a time only
		}
		b = append(append(b, line...), '\n')
	}
	return b
}
