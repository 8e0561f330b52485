package stats

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"github.com/nczarrfs/nczarrfs/zmap"
)

// Store is a zmap.Store that counts the requests it passes on to the
// store it wraps.
type Store struct {
	zmap.Store
	get, readAt, size, stat, search op

	// inFlight counts the requests under way. answered is when a request
	// last ended without an error (unix nanoseconds), and waiting when the
	// first request after that began, 0 once one has been answered: the
	// readiness of a mount (Health).
	inFlight, answered, waiting atomic.Int64
	// flat counts the flat listings (zmap.FlatLister) passed on; its
	// requests are the pages they took.
	flat op
}

// op counts one kind of request. Not-found answers are not errors: they
// are how a lookup learns that a name does not exist; nor is io.EOF from a
// read that reaches the end of an object.
type op struct {
	requests, bytes, errors atomic.Int64
	latency                 histogram
}

// begin notes a request starting and returns its start time, for end.
func (s *Store) begin() time.Time {
	now := time.Now()
	s.inFlight.Add(1)
	s.waiting.CompareAndSwap(0, now.UnixNano())
	return now
}

// end counts a request of kind o that began at start.
func (s *Store) end(o *op, start time.Time, n int64, err error) {
	now := time.Now()
	o.latency.observe(now.Sub(start))
	o.requests.Add(1)
	o.bytes.Add(n)
	if err != nil && !errors.Is(err, zmap.ErrNotFound) && !errors.Is(err, io.EOF) {
		o.errors.Add(1)
	} else {
		s.answered.Store(now.UnixNano())
		s.waiting.Store(0)
	}
	s.inFlight.Add(-1)
}

// CountStore wraps s so that its requests are counted.
func CountStore(s zmap.Store) *Store { return &Store{Store: s} }

// Unwrap returns the store it wraps, so that what it offers beyond
// zmap.Store (such as nczarr's Parallelism) is still found.
func (s *Store) Unwrap() zmap.Store { return s.Store }

// Get counts a request and the bytes it returned.
func (s *Store) Get(ctx context.Context, key string) ([]byte, error) {
	start := s.begin()
	b, err := s.Store.Get(ctx, key)
	s.end(&s.get, start, int64(len(b)), err)
	return b, err
}

// ReadAt counts a request and the bytes it read.
func (s *Store) ReadAt(ctx context.Context, key string, p []byte, off int64) (int, error) {
	start := s.begin()
	n, err := s.Store.ReadAt(ctx, key, p, off)
	s.end(&s.readAt, start, int64(n), err)
	return n, err
}

// ReadVec passes the call on to the store it wraps when that one offers
// zmap.VecReader, and counts it as a read; otherwise it fails with
// errors.ErrUnsupported, counted nowhere.
func (s *Store) ReadVec(ctx context.Context, key string, bufs [][]byte, off int64) (int64, error) {
	vr, ok := zmap.As[zmap.VecReader](s.Store)
	if !ok {
		return 0, fmt.Errorf("readvec %q: %w", key, errors.ErrUnsupported)
	}
	start := s.begin()
	size, err := vr.ReadVec(ctx, key, bufs, off)
	if errors.Is(err, errors.ErrUnsupported) {
		// Not a request after all: undo begin.
		s.waiting.CompareAndSwap(start.UnixNano(), 0)
		s.inFlight.Add(-1)
		return size, err
	}
	var n int64
	if err == nil {
		for _, b := range bufs {
			n += int64(len(b))
		}
	}
	s.end(&s.readAt, start, n, err)
	return size, err
}

// Size counts a request.
func (s *Store) Size(ctx context.Context, key string) (int64, error) {
	start := s.begin()
	n, err := s.Store.Size(ctx, key)
	s.end(&s.size, start, 0, err)
	return n, err
}

// Stat counts a request.
func (s *Store) Stat(ctx context.Context, key string) (zmap.Entry, error) {
	start := s.begin()
	e, err := s.Store.Stat(ctx, key)
	s.end(&s.stat, start, 0, err)
	return e, err
}

// Search counts a request; its "bytes" are the entries listed.
func (s *Store) Search(ctx context.Context, prefix string) ([]zmap.Entry, error) {
	start := s.begin()
	e, err := s.Store.Search(ctx, prefix)
	s.end(&s.search, start, int64(len(e)), err)
	return e, err
}

// ListFlat passes the call on to the store it wraps when that one offers
// zmap.FlatLister, and counts its pages as LIST requests; otherwise it
// fails with errors.ErrUnsupported, counted nowhere.
func (s *Store) ListFlat(ctx context.Context, prefix string, limit int) (zmap.FlatListing, error) {
	fl, ok := zmap.As[zmap.FlatLister](s.Store)
	if !ok {
		return zmap.FlatListing{}, fmt.Errorf("list %q: %w", prefix, errors.ErrUnsupported)
	}
	start := s.begin()
	l, err := fl.ListFlat(ctx, prefix, limit)
	// Its pages are requested several at once: it counts as many
	// requests as pages, but has no one latency (Latency leaves it out).
	s.end(&s.flat, start, int64(len(l.Entries)), err)
	s.flat.requests.Add(int64(max(l.Requests, 1)) - 1)
	return l, err
}

// OpSnapshot is the count of one kind of request.
type OpSnapshot struct {
	Requests int64 `json:"requests"`
	Bytes    int64 `json:"bytes,omitempty"`
	Entries  int64 `json:"entries,omitempty"`
	Errors   int64 `json:"errors"`
}

func (o *op) snapshot() OpSnapshot {
	return OpSnapshot{Requests: o.requests.Load(), Bytes: o.bytes.Load(), Errors: o.errors.Load()}
}

// StoreSnapshot is the store part of .nczarrfs/stats. Objects and Bytes
// sum the object fetches (Get and ReadAt), which is what a store bills.
type StoreSnapshot struct {
	Objects int64 `json:"objects"`
	Bytes   int64 `json:"bytes"`
	// InFlight is the number of requests under way.
	InFlight int64      `json:"in_flight"`
	Get      OpSnapshot `json:"get"`
	ReadAt   OpSnapshot `json:"read_at"`
	Size     OpSnapshot `json:"size"`
	Stat     OpSnapshot `json:"stat"`
	Search   OpSnapshot `json:"search"`
	// ListFlat counts the flat listings of a whole dataset (one request
	// per page of up to 1,000 keys), which answer every folder's Search.
	ListFlat OpSnapshot `json:"list_flat"`
	// Requests counts the same requests by the kind of request they are
	// on S3 (Kinds).
	Requests Kinds `json:"requests"`
	// Pacing is what a store that paces its requests (a remote one) did about a
	// busy or unreliable server; nil for other stores.
	Pacing *PacingSnapshot `json:"pacing,omitempty"`
}

// PacingSnapshot is how an S3 store coped with its server.
type PacingSnapshot struct {
	// Throttled counts the answers that asked it to slow down (503
	// SlowDown, 429), retried ones included.
	Throttled int64 `json:"throttled"`
	// RequestLimit bounds its requests in flight now; it halves when
	// the server throttles and grows back as answers succeed.
	// LowestRequestLimit is the lowest it has been.
	RequestLimit       int `json:"request_limit"`
	LowestRequestLimit int `json:"lowest_request_limit"`
	// Resumed counts answers whose body broke off (reset, cut short,
	// stalled) and was resumed where it broke; Changed counts reads
	// that failed because the object changed meanwhile.
	Resumed int64 `json:"resumed"`
	Changed int64 `json:"changed"`
}

// pacer is a store that paces its requests (a remote store: the counters
// of its zmap/remote.Reader).
type pacer interface {
	Throttled() int64
	RequestLimit() (now, lowest int)
	Resumed() (resumed, changed int64)
}

// Kinds counts a store's requests by kind, as S3 bills them: GET of a
// whole object (Get), ranged GET (ReadAt), HEAD (Size and Stat) and LIST
// (Search, counted once however many pages of 1,000 names it takes, and
// each page of a flat listing). On other stores they are the same calls:
// a file read, a stat, a directory listing.
type Kinds struct {
	GET       int64 `json:"GET"`
	RangedGET int64 `json:"ranged_GET"`
	HEAD      int64 `json:"HEAD"`
	LIST      int64 `json:"LIST"`
}

// Total is the sum of every kind.
func (k Kinds) Total() int64 { return k.GET + k.RangedGET + k.HEAD + k.LIST }

// Snapshot reads the counters now.
func (s *Store) Snapshot() StoreSnapshot {
	st := StoreSnapshot{
		Get:      s.get.snapshot(),
		ReadAt:   s.readAt.snapshot(),
		Size:     s.size.snapshot(),
		Stat:     s.stat.snapshot(),
		Search:   s.search.snapshot(),
		ListFlat: s.flat.snapshot(),
	}
	st.InFlight = s.inFlight.Load()
	st.Search.Entries, st.Search.Bytes = st.Search.Bytes, 0
	st.ListFlat.Entries, st.ListFlat.Bytes = st.ListFlat.Bytes, 0
	st.Requests = Kinds{
		GET:       st.Get.Requests,
		RangedGET: st.ReadAt.Requests,
		HEAD:      st.Size.Requests + st.Stat.Requests,
		LIST:      st.Search.Requests + st.ListFlat.Requests,
	}
	if p, ok := zmap.As[pacer](s.Store); ok {
		ps := &PacingSnapshot{Throttled: p.Throttled()}
		ps.RequestLimit, ps.LowestRequestLimit = p.RequestLimit()
		ps.Resumed, ps.Changed = p.Resumed()
		st.Pacing = ps
	}
	st.Objects = st.Get.Requests + st.ReadAt.Requests
	st.Bytes = st.Get.Bytes + st.ReadAt.Bytes
	return st
}

// Latency returns the latency histogram of each kind of request, by the
// name the kind has in StoreSnapshot's JSON. It is not part of
// .nczarrfs/stats (too long to read there); metrics show it.
func (s *Store) Latency() map[string]Histogram {
	return map[string]Histogram{
		"get":     s.get.latency.snapshot(),
		"read_at": s.readAt.latency.snapshot(),
		"size":    s.size.latency.snapshot(),
		"stat":    s.stat.latency.snapshot(),
		"search":  s.search.latency.snapshot(),
	}
}

// Health says whether the store is answering.
type Health struct {
	// Answered is when a request last ended without an error; zero if
	// none has.
	Answered time.Time
	// Waiting is when the store was first asked something after that
	// answer; zero when it has not been asked since.
	Waiting time.Time
}

// Health reads the store's health now.
func (s *Store) Health() Health {
	var h Health
	if ns := s.answered.Load(); ns != 0 {
		h.Answered = time.Unix(0, ns)
	}
	if ns := s.waiting.Load(); ns != 0 {
		h.Waiting = time.Unix(0, ns)
	}
	return h
}

// Stuck reports whether the store has been asked and has not answered
// for longer than d: it was asked at least d ago, and nothing it was
// asked since has ended well.
func (h Health) Stuck(now time.Time, d time.Duration) bool {
	return !h.Waiting.IsZero() && now.Sub(h.Waiting) > d
}
