package nczarr

import (
	"context"

	"github.com/nczarrfs/nczarrfs/cache"
)

// refCache is a ChunkCache that hands out counted references, so that it
// can recycle the buffers of evicted chunks for later decodes; cache.Cache
// implements it. A read uses it when Options.Cache has it.
type refCache interface {
	Acquire(ctx context.Context, key string, load func(context.Context, cache.Alloc) ([]byte, error)) (*cache.Ref, error)
}

// chunkRef is a decoded chunk held by a read: data is valid until release.
type chunkRef struct {
	data []byte
	ref  *cache.Ref // nil when data is not counted (no cache, fill value)
}

// release gives the chunk back to the cache. It is safe on a zero
// chunkRef and idempotent.
func (c *chunkRef) release() {
	if c.ref != nil {
		c.ref.Release()
		c.ref = nil
	}
	c.data = nil
}
