package chunked

import "github.com/nczarrfs/nczarrfs/cache"

// chunkRef is a decoded chunk held by a read: data is valid until release.
type chunkRef struct {
	data []byte
	ref  *cache.Ref // nil when data is not counted (the fill value)
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

// hit reports whether the chunk was in the cache when the read asked.
func (c *chunkRef) hit() bool { return c.ref != nil && c.ref.Hit() }
