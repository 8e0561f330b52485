package chunked

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/nczarrfs/nczarrfs/nczarr/codec"
	"github.com/nczarrfs/nczarrfs/nczarr/zarrmeta"
	"github.com/nczarrfs/nczarrfs/zmap"
)

// Every stored object a chunk is read from has a bound known before it is
// read (docs/codecs.md, "Bounds on stored objects"): what its codecs can
// have written for its decoded size. An object over its bound is corrupt:
// it fails with a *zmap.TooLargeError, which the store gives as soon as it
// knows the size (a stat, a Content-Length), and no more of it is read.

// ElemsBound bounds a stored chunk of variable-length elements (vlen-utf8,
// vlen-bytes, json2, msgpack2), whose size does not follow from its
// element count.
const ElemsBound = 256 << 20

// SetMaxObjectSize raises the bound of every stored chunk and shard to
// at least n (--max-object-size); it never lowers one. Call it before
// the arrays are read.
func (s *Source) SetMaxObjectSize(n int64) { s.floor = max(n, 0) }

// raise is bound raised to the Source's floor (SetMaxObjectSize).
func (s *Source) raise(bound int64) int64 { return max(bound, s.floor) }

// chunkBound is the bound of a chunk of size decoded bytes stored whole
// through chain.
func (a *Array) chunkBound(chain *codec.Chain, size int) int64 {
	return a.src.raise(chain.MaxEncodedSize(int64(size)))
}

// innerBound is the bound of an inner chunk of a shard, stored through
// leaf (its pipeline): without the slack, which the shard has once.
func (a *Array) innerBound(leaf *zarrmeta.Pipeline) int64 {
	size := a.chunkElems * int64(a.ItemSize)
	if leaf.Elems != nil {
		return a.src.raise(ElemsBound)
	}
	return a.src.raise(codec.AddBound(leaf.Chain.EncodedBound(size), codec.BoundSlack))
}

// shardBound is the bound of a stored shard of the array: its index and
// every inner chunk's bound (nested shards likewise), through the
// bytes-to-bytes codecs after sharding, plus the slack.
func (a *Array) shardBound() int64 {
	size := a.chunkElems * int64(a.ItemSize)
	var level func(p *zarrmeta.Pipeline) int64
	level = func(p *zarrmeta.Pipeline) int64 {
		if p.Shard == nil {
			if p.Elems != nil {
				return ElemsBound
			}
			return p.Chain.EncodedBound(size)
		}
		s := p.Shard
		inner := level(s.Inner)
		n := int64(math.MaxInt64)
		if s.N <= 0 || inner <= (math.MaxInt64-s.IndexLen)/s.N {
			n = s.IndexLen + s.N*inner
		}
		// Whole is in decoding order: encode from its end.
		for i := len(p.Whole) - 1; i >= 0; i-- {
			n = codec.StepBound(p.Whole[i], n)
		}
		return n
	}
	return a.src.raise(codec.AddBound(level(a.Meta.Pipeline), codec.BoundSlack))
}

// checkBound fails with a *zmap.TooLargeError when size, what the store
// or a shard's index says an object (or an inner chunk) holds, is over
// bound.
func checkBound(key string, size, bound int64) error {
	if size > bound {
		return &zmap.TooLargeError{Key: key, Size: size, Bound: bound}
	}
	return nil
}

// chunkErr wraps err, the failure to read the chunk key, marking an
// object over its bound as corrupt (codec.ErrCorrupt), as it is.
func chunkErr(key string, err error) error {
	var tl *zmap.TooLargeError
	if errors.As(err, &tl) && !errors.Is(err, codec.ErrCorrupt) {
		return fmt.Errorf("chunk %s: %w: %w", key, codec.ErrCorrupt, err)
	}
	return fmt.Errorf("chunk %s: %w", key, err)
}

// getBounded is the store's Get of key under bound.
func (a *Array) getBounded(ctx context.Context, key string, bound int64) ([]byte, error) {
	return a.src.store.Get(zmap.WithMaxSize(ctx, bound), key)
}
