package nczarr

import (
	"context"
	"runtime"
	"sync"

	"github.com/nczarrfs/nczarrfs/cache"
)

// aheadCache is a cache that read-ahead can use; cache.Cache implements it.
type aheadCache interface {
	refCache
	// Prefetch starts loading key in the background unless it is cached
	// or loading already.
	Prefetch(ctx context.Context, key string, load func(context.Context, cache.Alloc) ([]byte, error)) bool
	// Demote marks key as unlikely to be read again soon, so that its
	// buffer is recycled first.
	Demote(key string)
	// Budget is the cache's byte budget; read-ahead stays within a quarter.
	Budget() int64
}

// Read-ahead tuning.
const (
	// seqSlack is how far a read may start from where the last one ended
	// and still count as sequential: the kernel sends its read-ahead
	// requests concurrently, so they arrive slightly out of order.
	seqSlack = 4 << 20
	// minAheadChunks is how many chunks read-ahead wants in flight at
	// least, so that every core has a chunk to decode.
	minAheadChunks = 4
)

// readAhead follows an array's reads. When they are sequential, a read
// starting in chunk row k (the chunks sharing their index along the first
// dimension, a contiguous byte range of the decoded array) demotes rows
// k-2 and k-1 in the cache and starts loading the rows after k in the
// background, which then reuse the demoted rows' buffers: a scan touches
// fresh memory for two rows only. (Starting from the row a read ends in
// would be a read earlier, but would need a third row of buffers.)
type readAhead struct {
	mu       sync.Mutex
	next     int64         // GUARDED_BY(mu): where the last read ended
	launched int64         // GUARDED_BY(mu): rows below this have been prefetched (or read)
	demoted  int64         // GUARDED_BY(mu): rows below this have been demoted
	sem      chan struct{} // bounds concurrent read-ahead decodes; made on first use
}

// rowBytes is the size in the decoded array of one chunk row, and the
// number of chunk rows; 0, 0 for a scalar.
func (a *Array) rows() (rowBytes, nrows int64) {
	if len(a.Meta.Shape) == 0 || a.Meta.Shape[0] == 0 {
		return 0, 0
	}
	s0, c0 := a.Meta.Shape[0], a.Meta.Chunks[0]
	return min(c0, s0) * (a.size / s0), (s0 + c0 - 1) / c0
}

// afterRead is told about each successful read of n bytes at off, and
// starts read-ahead and demotion for a sequential reader.
func (a *Array) afterRead(off int64, n int) {
	ac, ok := a.d.cache.(aheadCache)
	if !ok || n == 0 {
		return
	}
	rowBytes, nrows := a.rows()
	if rowBytes == 0 {
		return
	}
	chunkBytes := a.chunkElems * int64(a.ItemSize)
	perRow := a.chunksPerRow()
	// At most a quarter of the budget, and never so much that the row
	// being read (which the next reads need again) could be evicted.
	budget := ac.Budget()
	limit := min(budget/4, budget/2-min(perRow, budget)*chunkBytes) / chunkBytes
	if limit <= 0 {
		return
	}
	end := off + int64(n)
	first, last := off/rowBytes, (end-1)/rowBytes
	ahead := max(1, (minAheadChunks+perRow-1)/perRow)

	ra := &a.ra
	ra.mu.Lock()
	if off < ra.next-seqSlack || off > ra.next+seqSlack {
		// A jump: start following from here.
		ra.next, ra.launched, ra.demoted = end, last+1, first
		ra.mu.Unlock()
		return
	}
	ra.next = max(ra.next, end)
	var demote []int64
	for k := max(ra.demoted, first-2); k < first; k++ {
		demote = append(demote, k)
	}
	ra.demoted = max(ra.demoted, first)
	from, to := max(ra.launched, first+1), min(first+1+ahead, nrows)
	ra.launched = max(ra.launched, to)
	if ra.sem == nil {
		ra.sem = make(chan struct{}, runtime.GOMAXPROCS(0))
	}
	sem := ra.sem
	ra.mu.Unlock()

	for _, k := range demote {
		a.rowKeys(k, perRow, func(key string) bool { ac.Demote(key); return true })
	}
	var keys []string
	for k := from; k < to && int64(len(keys)) < limit; k++ {
		a.rowKeys(k, limit-int64(len(keys)), func(key string) bool {
			keys = append(keys, key)
			return true
		})
	}
	for _, key := range keys {
		ac.Prefetch(context.Background(), key, func(ctx context.Context, alloc cache.Alloc) ([]byte, error) {
			sem <- struct{}{}
			defer func() { <-sem }()
			return a.load(ctx, key, alloc)
		})
	}
}

// chunksPerRow is the number of chunks in one chunk row.
func (a *Array) chunksPerRow() int64 {
	n := int64(1)
	for d := 1; d < len(a.Meta.Shape); d++ {
		n *= (a.Meta.Shape[d] + a.Meta.Chunks[d] - 1) / a.Meta.Chunks[d]
		if n > 1<<20 {
			return n // enough to know it is large
		}
	}
	return n
}

// rowKeys calls fn with the keys of the first n chunks of chunk row k,
// in C order, until fn returns false.
func (a *Array) rowKeys(k, n int64, fn func(key string) bool) {
	shape, chunks := a.Meta.Shape, a.Meta.Chunks
	rank := len(shape)
	grid := make([]int64, rank)
	grid[0] = k
	for i := int64(0); i < n; i++ {
		if !fn(a.ChunkKey(grid)) {
			return
		}
		d := rank - 1
		for ; d > 0; d-- {
			grid[d]++
			if grid[d]*chunks[d] < shape[d] {
				break
			}
			grid[d] = 0
		}
		if d == 0 {
			return // the row is done
		}
	}
}
