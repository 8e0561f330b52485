package chunked

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/nczarrfs/nczarrfs/nczarr/codec"
	"github.com/nczarrfs/nczarrfs/zmap"
)

// storedDecoded reports whether the array's innermost chunks are stored
// as their decoded bytes: no codec, no byte swap, no transpose (C order),
// at every level of a sharded array (an inner chunk of a shard is then a
// span of the shard object, found by its index), whatever the Zarr
// version.
func (a *Array) storedDecoded() bool {
	if a.swap > 1 || a.Meta.Outer != nil {
		return false
	}
	for p := a.Meta.Pipeline; p != nil; p = p.Shard.Inner {
		if p.Elems != nil || len(p.Perms) != 0 || p.Chain.Len() != 0 {
			return false
		}
		if p.Shard == nil {
			return true
		}
	}
	return false
}

// sharded reports whether the array's chunk keys name inner chunks of
// shards (innerKey).
func (a *Array) sharded() bool { return a.Meta.Pipeline != nil && a.Meta.Pipeline.Shard != nil }

// keptListing is a store that keeps listings (zmap/listcache): it gives
// an object's size with no request when a kept listing of its folder
// holds it.
type keptListing interface {
	Cached(key string) (zmap.Entry, bool)
}

// keptSize returns the stored size of the object key from a kept
// listing, with no request; ok is false when no listing says.
func (a *Array) keptSize(key string) (size int64, ok bool) {
	l, found := zmap.As[keptListing](a.src.store)
	if !found {
		return 0, false
	}
	e, ok := l.Cached(key)
	return e.Size, ok && !e.Dir
}

// rangedReads reports whether reads that are not sequential fetch only
// the bytes they need instead of whole chunks: for storedDecoded arrays
// in a store that is remote, where fetching a whole chunk for a few bytes
// of it costs a transfer, not just a copy. A remote store says so with a
// Remote method, on it or on a store it wraps.
func (a *Array) rangedReads() bool {
	if !a.storedDecoded() {
		return false
	}
	r, ok := zmap.As[interface{ Remote() bool }](a.src.store)
	return ok && r.Remote()
}

// vecReads reports whether reads that are not sequential read the bytes
// they need straight from the store into place, without the cache: for
// storedDecoded arrays in a store that offers zmap.VecReader (local
// files, stored zip entries), whose page cache keeps the stored bytes,
// which are the decoded ones. A read of a few bytes of a large chunk then
// reads those bytes, not the chunk, and evicts nothing. Sequential reads
// do better through the cache: read-ahead reads whole chunks on other
// cores while the reads copy (cat of a 256 MiB array, page cache warm,
// 8 alternating runs: 0.237 s through the cache, 0.275 s with ReadVec).
func (a *Array) vecReads() bool {
	return a.src.vec != nil && !a.src.noVec.Load() && a.storedDecoded() && !a.sharded()
}

// readVec is the copy step of read for vecReads arrays: the runs of each
// chunk that lie next to each other in the chunk are read from the store
// into their places in p with one ReadVec. A chunk that is not stored is
// fill; one whose stored size is not the chunk's is corrupt. A store
// that cannot (errors.ErrUnsupported) leaves p to the caller.
func (a *Array) readVec(ctx context.Context, p []byte, keys []string, ops []copyOp) error {
	// plan lists ops in output order, which within one chunk is the
	// chunk's order too: each chunk's runs, in order.
	byChunk := make([][]copyOp, len(keys))
	for _, op := range ops {
		byChunk[op.chunk] = append(byChunk[op.chunk], op)
	}
	chunkBytes := a.chunkElems * int64(a.ItemSize)
	return a.each(ctx, len(keys), func(ctx context.Context, i int) error {
		ops := byChunk[i]
		var bufs [][]byte
		for len(ops) > 0 {
			n := 1
			for n < len(ops) && ops[n].src == ops[n-1].src+ops[n-1].n {
				n++
			}
			bufs = bufs[:0]
			for _, op := range ops[:n] {
				bufs = append(bufs, p[op.dst:op.dst+op.n])
			}
			size, err := a.src.vec.ReadVec(ctx, keys[i], bufs, int64(ops[0].src))
			switch {
			case errors.Is(err, zmap.ErrNotFound):
				fill := a.filled()
				for _, op := range ops {
					copy(p[op.dst:op.dst+op.n], fill[op.src:op.src+op.n])
				}
				return nil
			case errors.Is(err, errors.ErrUnsupported):
				return err
			case err != nil && !errors.Is(err, io.ErrUnexpectedEOF):
				// A failure (or this read's cancellation), not a size.
				return fmt.Errorf("chunk %s: %w", keys[i], err)
			case size != chunkBytes:
				return fmt.Errorf("chunk %s: %w: stored %d bytes, want %d", keys[i], codec.ErrCorrupt, size, chunkBytes)
			case err != nil:
				return fmt.Errorf("chunk %s: %w", keys[i], err)
			}
			ops = ops[n:]
		}
		return nil
	})
}

// readRanged is the copy step of read for rangedReads arrays: chunks in
// the cache are used from there; of every other chunk, one ranged read
// fetches the span of it that the copies touch (of a sharded array, the
// span of the inner chunk inside its shard, which the shard's index
// locates). A chunk that is not stored is fill; one stored shorter than
// the span is corrupt, and so is one whose size a kept listing (or the
// shard's index) gives and is not the chunk's. A ranged read cannot see
// an object that is longer than the chunk: of a Zarr v3 chunk whose size
// no kept listing gives, the store is asked the size first (a chunk of
// at least sizeCheckMin), or the chunk is read whole through the cache,
// whose load tells one (TestV3MountS3's bad/long_raw_chunk); a v2 chunk
// is read by range all the same, as it always was.
func (a *Array) readRanged(ctx context.Context, p []byte, keys []string, ops []copyOp) error {
	type span struct {
		lo, hi int    // chunk bytes the copies touch
		data   []byte // bytes lo..hi, or the whole chunk (base 0)
		base   int
		ref    chunkRef
		put    func() // gives a fetched span's buffer back
	}
	spans := make([]span, len(keys))
	for i := range spans {
		spans[i].lo = -1
	}
	for _, op := range ops {
		s := &spans[op.chunk]
		if s.lo < 0 || op.src < s.lo {
			s.lo = op.src
		}
		s.hi = max(s.hi, op.src+op.n)
	}
	defer func() {
		for i := range spans {
			spans[i].ref.release()
			if spans[i].put != nil {
				spans[i].put()
			}
		}
	}()
	for i, key := range keys {
		if ref := a.src.cache.Peek(key); ref != nil {
			s := &spans[i]
			s.ref = chunkRef{data: ref.Value(), ref: ref}
			if s.data = s.ref.data; s.data == nil {
				s.data = a.filled()
			}
		}
	}
	err := a.each(ctx, len(keys), func(ctx context.Context, i int) error {
		s := &spans[i]
		if s.data != nil {
			return nil // cached
		}
		key, off, whole, err := a.rangedSource(ctx, keys[i])
		switch {
		case err != nil:
			return err
		case key == "":
			s.data = a.filled() // an inner chunk the index says is empty
			return nil
		case whole:
			if s.ref, err = a.chunk(ctx, keys[i]); err != nil {
				return err
			}
			s.data = s.ref.data
			return nil
		}
		buf, put := pooledBuffer(s.hi - s.lo)
		s.put = put
		n, err := a.src.store.ReadAt(ctx, key, buf, off+int64(s.lo))
		switch {
		case errors.Is(err, zmap.ErrNotFound):
			s.data = a.filled()
		case err != nil && err != io.EOF:
			return fmt.Errorf("chunk %s: %w", keys[i], err)
		case n < len(buf):
			return fmt.Errorf("chunk %s: %w: stored object ends before byte %d of the chunk's %d",
				keys[i], codec.ErrCorrupt, s.hi, int(a.chunkElems)*a.ItemSize)
		default:
			s.data, s.base = buf, s.lo
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, op := range ops {
		s := &spans[op.chunk]
		copy(p[op.dst:op.dst+op.n], s.data[op.src-s.base:op.src-s.base+op.n])
	}
	return nil
}

// rangedSource says where readRanged reads the chunk key from: the object
// key at offset off, or, when whole is true, not by range but the whole
// chunk through the cache. key is "" when the chunk is known not to be
// stored. A size that is not the chunk's is ErrCorrupt.
func (a *Array) rangedSource(ctx context.Context, chunkKey string) (key string, off int64, whole bool, err error) {
	chunkBytes := a.chunkElems * int64(a.ItemSize)
	if a.sharded() {
		shard, idx, err := parseInnerKey(chunkKey, len(a.Meta.Shape))
		if err != nil {
			return "", 0, false, err
		}
		r, _, ok, err := a.locateInner(ctx, shard, idx)
		switch {
		case err != nil:
			return "", 0, false, fmt.Errorf("chunk %s: %w", chunkKey, err)
		case !ok:
			return "", 0, false, nil
		case r.n != chunkBytes:
			return "", 0, false, fmt.Errorf("chunk %s: %w: stored %d bytes, want %d", chunkKey, codec.ErrCorrupt, r.n, chunkBytes)
		}
		return r.key, r.off, false, nil
	}
	size, known := a.keptSize(chunkKey)
	switch {
	case !known && a.Meta.Format == 3 && chunkBytes < sizeCheckMin:
		return chunkKey, 0, true, nil
	case !known && a.Meta.Format == 3:
		// A request for the size (a HEAD), then one for the span: less
		// than the whole chunk, until the kept listing can say.
		var err error
		if size, err = a.src.store.Size(ctx, chunkKey); errors.Is(err, zmap.ErrNotFound) {
			return "", 0, false, nil
		} else if err != nil {
			return "", 0, false, fmt.Errorf("chunk %s: %w", chunkKey, err)
		}
	case !known:
		return chunkKey, 0, false, nil // v2: by range, unchecked, as always
	}
	if size != chunkBytes {
		return "", 0, false, fmt.Errorf("chunk %s: %w: stored %d bytes, want %d", chunkKey, codec.ErrCorrupt, size, chunkBytes)
	}
	return chunkKey, 0, false, nil
}

// sizeCheckMin is the chunk size from which a ranged read of a Zarr v3
// chunk whose size no kept listing gives asks the store for the size
// (a HEAD) rather than reading the whole chunk: below it, one GET of the
// chunk costs about what the HEAD does.
const sizeCheckMin = 1 << 20
