package chunked

import (
	"context"
	"runtime"
	"sync"

	"github.com/nczarrfs/nczarrfs/cache"
)

// Read-ahead tuning.
const (
	// seqSlack is how far a read may start from where the last one ended
	// and still count as sequential: the kernel sends its read-ahead
	// requests concurrently, so they arrive slightly out of order.
	seqSlack = 4 << 20
	// minWindow is the read-ahead window of a reader that just started
	// (or jumped): the decoded bytes past its last read whose chunks are
	// loaded in the background.
	minWindow = 4 << 20
	// demoteLag keeps chunks that ended this far behind a read from being
	// demoted, for the concurrent reads that arrive slightly late.
	demoteLag = 2 << 20
)

// willNeeder is a store that can start reading an object in the
// background, ahead of the read that will want it (a local store asks the
// kernel to read the file into its page cache).
type willNeeder interface {
	WillNeed(ctx context.Context, key string)
}

// Reader reads an array's decoded bytes for one consumer, typically an
// open file. A Reader that sees sequential reads loads the chunks ahead of
// them in the background, in the order it will need them, and tells the
// cache which chunks it is done with so that their buffers are reused.
// One whose reads walk across the array by a stride, along any axis
// (walk.go), loads the chunks of the walk's next steps instead.
//
// Its window (how far ahead it loads) starts at a few MiB and doubles
// each time a read had to wait for a chunk, up to a quarter of the cache's
// budget: a reader that keeps up costs little memory, one that outruns the
// decoders gets every core. It never reaches further ahead than the
// reader has read since its last jump, so that a read of one slice at
// some offset (dd skip=N count=1) decodes about the chunks of that slice,
// not the next window's too. On a store that takes hints (local files and
// zips), the stored bytes of the chunks as far again past the loads are
// read into the page cache in the background, so that the loads, which
// decode at most one per core, find them there instead of waiting for the
// disk while a core idles. The
// state belongs to the Reader, so two
// readers of one array do not disturb each other. A Reader is safe for
// concurrent use (the kernel sends a file's reads concurrently).
type Reader struct {
	a *Array

	mu       sync.Mutex
	next     int64 // GUARDED_BY(mu): where the last read ended
	runStart int64 // GUARDED_BY(mu): where the current sequential run began
	started  bool  // GUARDED_BY(mu): a first read came
	window   int64 // GUARDED_BY(mu): bytes to keep loading past next
	launched int64 // GUARDED_BY(mu): chunks with a lower ordinal were read or prefetched
	demoted  int64 // GUARDED_BY(mu): chunks with a lower ordinal were demoted
	hinted   int64 // GUARDED_BY(mu): chunks with a lower ordinal were hinted to the store
	walk     walk  // GUARDED_BY(mu): the reads seen as a walk (walk.go)
}

// NewReader returns a Reader of a's decoded bytes.
func (a *Array) NewReader() *Reader {
	return &Reader{a: a, window: minWindow}
}

// ReadAt reads decoded bytes at offset off, with io.ReaderAt semantics, and
// moves read-ahead along.
func (r *Reader) ReadAt(ctx context.Context, p []byte, off int64) (int, error) {
	n, hit, err := r.a.read(ctx, p, off, r.ahead)
	if n > 0 && !hit {
		r.mu.Lock()
		switch {
		case r.walk.period > 0:
			r.walk.window = min(2*r.walk.window, maxWalkChunks(r.a))
		case r.window < r.maxWindow() && off >= r.next-seqSlack:
			r.window *= 2
		}
		r.mu.Unlock()
	}
	return n, err
}

// maxWindow is the largest read-ahead window: a quarter of the cache.
func (r *Reader) maxWindow() int64 { return max(minWindow, r.a.src.cache.Budget()/4) }

// ahead is told about each read of [off, end) before it fetches its
// chunks: for a sequential reader it queues the loads of the chunks that
// start before end+window and demotes those that ended before off; for a
// walk (walk.go) it queues the loads of the chunks the next steps touch
// and demotes those the walk passed. It reports whether the read should
// go through the cache, where read-ahead puts the chunks: whether it
// continues a sequential run or a walk.
func (r *Reader) ahead(off, end int64) (sequential bool) {
	a := r.a
	g := a.grid()
	chunkBytes := a.chunkElems * int64(a.ItemSize)
	// The most chunks read-ahead may hold: a quarter of the cache.
	limit := a.src.cache.Budget() / 4 / chunkBytes
	if limit < 1 || g.n == 0 {
		return false
	}

	r.mu.Lock()
	// A local store reads an uncompressed array's bytes straight into
	// the reply (vecReads), faster than whole chunks through the cache.
	if r.walk.observe(off, end-off) && !a.vecReads() {
		r.started = false // a sequential run starts afresh after the walk
		launch, passed := r.walk.plan(a, g, int(min(limit, int64(maxWalkChunks(a)))))
		r.mu.Unlock()
		r.load(g, launch, passed)
		return true
	}
	if !r.started || off < r.next-seqSlack || off > r.next+seqSlack {
		r.started = true
		// A first read, or a jump: start following from here.
		r.next, r.window, r.runStart = end, minWindow, off
		r.launched = g.ordinalAt(end-1, a) + 1
		r.hinted = r.launched
		r.demoted = g.ordinalAt(off, a)
		r.mu.Unlock()
		return false
	}
	r.next = max(r.next, end)
	var demote []int64
	for r.demoted < g.n && g.end(r.demoted, a) <= min(off, r.next)-demoteLag {
		demote = append(demote, r.demoted)
		r.demoted++
	}
	current := g.ordinalAt(end-1, a)
	reach := min(r.window, end-r.runStart)
	horizon := end + reach
	var launch []int64
	for r.launched < g.n && r.launched-current <= limit && g.start(r.launched, a) < horizon {
		launch = append(launch, r.launched)
		r.launched++
	}
	var hint []int64
	if a.src.hint != nil {
		r.hinted = max(r.hinted, r.launched)
		for r.hinted < g.n && r.hinted-current <= 2*limit && g.start(r.hinted, a) < horizon+reach {
			hint = append(hint, r.hinted)
			r.hinted++
		}
	}
	r.mu.Unlock()

	r.load(g, launch, demote)
	if len(hint) > 0 {
		// Off the reader's path: opening a file whose inode is not
		// cached waits for the disk.
		a.src.hints.push(func() {
			for _, o := range hint {
				a.src.hint.WillNeed(context.Background(), a.ChunkKey(g.index(o)))
			}
		})
	}
	return true
}

// load demotes the chunks passed and queues the loads of the chunks
// launch, in order.
func (r *Reader) load(g chunkGrid, launch, passed []int64) {
	a := r.a
	for _, o := range passed {
		a.src.cache.Demote(a.ChunkKey(g.index(o)))
	}
	for _, o := range launch {
		key := a.ChunkKey(g.index(o))
		run, ok := a.src.cache.Prefetch(context.Background(), key, func(ctx context.Context, alloc cache.Alloc) ([]byte, error) {
			return a.load(ctx, key, alloc, a.src.ahead.cpu)
		})
		if ok {
			a.src.ahead.push(run)
		}
	}
}

// maxWalkChunks is the most chunks a walk keeps predicted: four times the
// store's concurrent requests, enough to keep them all busy while the
// reader takes the loaded ones.
func maxWalkChunks(a *Array) int { return 4 * a.src.par }

// chunkGrid numbers an array's chunks in C order of their grid index, the
// order in which a sequential read of the decoded bytes first touches them
// (and also the order in which it is done with them).
type chunkGrid struct {
	dims []int64 // chunks along each dimension
	n    int64   // chunks in all
}

func (a *Array) grid() chunkGrid {
	g := chunkGrid{dims: make([]int64, len(a.Meta.Shape)), n: 1}
	for d, s := range a.Meta.Shape {
		g.dims[d] = (s + a.Meta.Chunks[d] - 1) / a.Meta.Chunks[d]
		g.n *= g.dims[d]
	}
	return g
}

// index is the grid index of the chunk with ordinal o.
func (g chunkGrid) index(o int64) []int64 {
	idx := make([]int64, len(g.dims))
	for d := len(g.dims) - 1; d >= 0; d-- {
		idx[d] = o % g.dims[d]
		o /= g.dims[d]
	}
	return idx
}

// ordinalAt is the ordinal of the chunk holding the byte at off.
func (g chunkGrid) ordinalAt(off int64, a *Array) int64 {
	e := off / int64(a.ItemSize)
	shape, chunks := a.Meta.Shape, a.Meta.Chunks
	idx := make([]int64, len(shape))
	for d := len(shape) - 1; d >= 0; d-- {
		idx[d] = e % shape[d] / chunks[d]
		e /= shape[d]
	}
	var o int64
	for d, i := range idx {
		o = o*g.dims[d] + i
	}
	return o
}

// start is the offset of the first decoded byte of chunk o; end is the
// offset just past its last one.
func (g chunkGrid) start(o int64, a *Array) int64 { return g.offset(o, a, false) }
func (g chunkGrid) end(o int64, a *Array) int64   { return g.offset(o, a, true) }

func (g chunkGrid) offset(o int64, a *Array, last bool) int64 {
	shape, chunks := a.Meta.Shape, a.Meta.Chunks
	idx := g.index(o)
	var e int64
	for d := range shape {
		i := idx[d] * chunks[d]
		if last {
			i = min(i+chunks[d], shape[d]) - 1
		}
		e = e*shape[d] + i
	}
	if last {
		e++
	}
	return e * int64(a.ItemSize)
}

// queue runs read-ahead loads in the order they were pushed, on at most
// workers goroutines, so that the chunk a reader needs next is decoded
// first. Its goroutines exit when it is empty.
type queue struct {
	workers int
	cpu     chan struct{} // bounds the loads running at once to the cores

	mu      sync.Mutex
	jobs    []func() // GUARDED_BY(mu)
	running int      // GUARDED_BY(mu): worker goroutines
}

// newQueue returns a queue with up to workers goroutines; the loads among
// them that decode run at most decoders at a time (0: GOMAXPROCS).
func newQueue(workers, decoders int) *queue {
	if decoders <= 0 {
		decoders = runtime.GOMAXPROCS(0)
	}
	return &queue{workers: workers, cpu: make(chan struct{}, decoders)}
}

func (q *queue) push(job func()) {
	q.mu.Lock()
	q.jobs = append(q.jobs, job)
	start := q.running < q.workers
	if start {
		q.running++
	}
	q.mu.Unlock()
	if start {
		go q.work()
	}
}

func (q *queue) work() {
	for {
		q.mu.Lock()
		if len(q.jobs) == 0 {
			q.running--
			q.mu.Unlock()
			return
		}
		job := q.jobs[0]
		q.jobs[0] = nil
		q.jobs = q.jobs[1:]
		q.mu.Unlock()
		job()
	}
}
