package icechunk

import (
	"context"
	"sync/atomic"

	"github.com/nczarrfs/nczarrfs/zmap"
)

// counted counts the requests made of the repository's storage, by kind,
// for stores that do not count their own.
type counted struct {
	zmap.Store
	get, ranged, head, list atomic.Int64
}

func (c *counted) Get(ctx context.Context, key string) ([]byte, error) {
	c.get.Add(1)
	return c.Store.Get(ctx, key)
}

func (c *counted) ReadAt(ctx context.Context, key string, p []byte, off int64) (int, error) {
	c.ranged.Add(1)
	return c.Store.ReadAt(ctx, key, p, off)
}

func (c *counted) Stat(ctx context.Context, key string) (zmap.Entry, error) {
	c.head.Add(1)
	return c.Store.Stat(ctx, key)
}

func (c *counted) Size(ctx context.Context, key string) (int64, error) {
	c.head.Add(1)
	return c.Store.Size(ctx, key)
}

func (c *counted) Search(ctx context.Context, prefix string) ([]zmap.Entry, error) {
	c.list.Add(1)
	return c.Store.Search(ctx, prefix)
}

// Unwrap gives the storage, for its Remote, Parallelism and such.
func (c *counted) Unwrap() zmap.Store { return c.Store }

// RequestKinds counts the requests made of the repository's storage: its
// own count when it keeps one, else the calls made of it.
func (r *Repository) RequestKinds() (get, rangedGET, head, list int64) {
	if rc, ok := zmap.As[interface {
		RequestKinds() (get, rangedGET, head, list int64)
	}](r.st); ok {
		return rc.RequestKinds()
	}
	c := r.st.(*counted)
	return c.get.Load(), c.ranged.Load(), c.head.Load(), c.list.Load()
}
