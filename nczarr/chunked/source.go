// Package chunked reads an array's decoded bytes from its stored chunks:
// chunk keys and loads through the codec pipeline of the model
// (zarrmeta.Array), shards, variable-length elements, ranged and vectored
// reads of uncompressed chunks, and the per-reader read-ahead. Package
// nczarr opens the hierarchy and builds each Array with New; nothing
// here knows of groups, NCZarr metadata generations or listings.
package chunked

import (
	"sync/atomic"

	"github.com/nczarrfs/nczarrfs/cache"
	"github.com/nczarrfs/nczarrfs/zmap"
)

// Source is what the arrays of one dataset share to read their chunks:
// the store, the cache of decoded chunks, the bound on a read's
// concurrent requests and the read-ahead queues.
type Source struct {
	store zmap.Store
	cache *cache.Cache
	par   int
	ahead *queue         // read-ahead loads, in the order readers need them
	hint  willNeeder     // nil when the store reads nothing ahead on a hint
	hints *queue         // gives read-ahead's hints to hint, in order
	vec   zmap.VecReader // nil when the store cannot read into several buffers
	noVec atomic.Bool    // vec said errors.ErrUnsupported: it cannot
	floor int64          // the least bound of a stored chunk or shard (SetMaxObjectSize)
}

// NewSource returns the Source of arrays stored in store, cached in c
// (nil: a cache of budget 0, which shares concurrent loads, keeps nothing
// and does no read-ahead). par bounds the concurrent store requests of one
// read (at least 1); decoders bounds the read-ahead loads that decode at
// once (0: GOMAXPROCS).
func NewSource(store zmap.Store, c *cache.Cache, par, decoders int) *Source {
	if c == nil {
		c = cache.New(0)
	}
	par = max(par, 1)
	s := &Source{store: store, cache: c, par: par, ahead: newQueue(par, decoders), hints: newQueue(1, 0)}
	s.hint, _ = zmap.As[willNeeder](store)
	s.vec, _ = zmap.As[zmap.VecReader](store)
	return s
}
