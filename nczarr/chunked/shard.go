package chunked

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/nczarrfs/nczarrfs/cache"
	"github.com/nczarrfs/nczarrfs/nczarr/codec"
	"github.com/nczarrfs/nczarrfs/nczarr/zarrmeta"
	"github.com/nczarrfs/nczarrfs/zmap"
)

// emptyChunk is the offset and length of an inner chunk that is not stored.
const emptyChunk = math.MaxUint64

// shardIndex is a decoded index: 2 uint64 (offset, length) per inner
// chunk, little-endian, then the size of the shard, which bounds them.
type shardIndex []byte

func (x shardIndex) shardSize() int64 {
	return int64(binary.LittleEndian.Uint64(x[len(x)-8:]))
}

func (x shardIndex) entry(i int64) (off, n uint64) {
	return binary.LittleEndian.Uint64(x[16*i:]), binary.LittleEndian.Uint64(x[16*i+8:])
}

// region is a byte range [off, off+n) of a stored object; n < 0 means
// up to the end of the object.
type region struct {
	key string
	off int64
	n   int64
}

// innerKey is the key under which the read path knows an inner chunk of a
// sharded array: the shard's key, "@", and the inner chunk's index in the
// array's grid of (innermost) chunks.
func innerKey(shard string, idx []int64) string {
	b := []byte(shard)
	b = append(b, '@')
	for i, x := range idx {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, x, 10)
	}
	return string(b)
}

// parseInnerKey undoes innerKey.
func parseInnerKey(key string, rank int) (shard string, idx []int64, err error) {
	at := strings.LastIndexByte(key, '@')
	if at < 0 {
		return "", nil, fmt.Errorf("%q is no inner chunk key", key)
	}
	var parts []string
	if rank > 0 {
		parts = strings.Split(key[at+1:], ",")
	}
	if len(parts) != rank {
		return "", nil, fmt.Errorf("%q is no inner chunk key", key)
	}
	idx = make([]int64, rank)
	for i, p := range parts {
		if idx[i], err = strconv.ParseInt(p, 10, 64); err != nil {
			return "", nil, fmt.Errorf("%q is no inner chunk key", key)
		}
	}
	return key[:at], idx, nil
}

// locateInner finds the stored bytes of the inner chunk with index idx
// in the array's grid of innermost chunks, inside the shard object key,
// descending through nested shards. ok is false when the chunk is not
// stored (its shard is missing, or the index says empty).
func (a *Array) locateInner(ctx context.Context, key string, idx []int64) (r region, leaf *zarrmeta.Pipeline, ok bool, err error) {
	m := &a.Meta
	rank := len(idx)
	// rel is the chunk's first element, relative to the current level's
	// shard.
	rel := make([]int64, rank)
	for d := range rank {
		rel[d] = (idx[d] * m.Chunks[d]) % m.Grid[d]
	}
	if m.Outer != nil {
		// The shard's inner chunks are laid out in the transposed axes.
		t := make([]int64, rank)
		for k, ax := range m.Outer {
			t[k] = rel[ax]
		}
		rel = t
	}
	r = region{key: key, n: -1}
	p := m.Pipeline
	for p.Shard != nil {
		s := p.Shard
		index, err := a.shardIndex(ctx, s, r)
		if err != nil || index == nil {
			return region{}, nil, false, err
		}
		lin := int64(0)
		for d := range rank {
			lin = lin*s.Per[d] + rel[d]/s.Chunks[d]
			rel[d] %= s.Chunks[d]
		}
		off, n := index.entry(lin)
		if off == emptyChunk && n == emptyChunk {
			return region{}, nil, false, nil
		}
		if off > math.MaxInt64/2 || n > maxChunkBytes {
			return region{}, nil, false, fmt.Errorf("shard %s: %w: index entry %d is (%d, %d)", key, codec.ErrCorrupt, lin, off, n)
		}
		if size := index.shardSize(); int64(off+n) > size {
			return region{}, nil, false, fmt.Errorf("shard %s: %w: index entry %d (%d, %d) is beyond the shard's %d bytes", key, codec.ErrCorrupt, lin, off, n, size)
		}
		r = region{key: key, off: r.off + int64(off), n: int64(n)}
		p = s.Inner
	}
	return r, p, true, nil
}

// shardIndex returns the decoded index of the shard stored in r, from the
// cache when there is one; nil when the shard is not stored.
func (a *Array) shardIndex(ctx context.Context, s *zarrmeta.Shard, r region) (shardIndex, error) {
	load := func(ctx context.Context) ([]byte, error) { return a.loadShardIndex(ctx, s, r) }
	if a.src.cache == nil {
		return load(ctx)
	}
	// The index is cached like a chunk, under a key no chunk has. A nested
	// shard may start where its outer one does: the length tells them apart.
	return a.src.cache.Get(ctx, fmt.Sprintf("%s#index@%d+%d", r.key, r.off, r.n), load)
}

func (a *Array) loadShardIndex(ctx context.Context, s *zarrmeta.Shard, r region) ([]byte, error) {
	if r.n < 0 {
		size, err := a.regionSize(ctx, r.key)
		if err != nil {
			if isNotFound(err) {
				return nil, nil
			}
			return nil, fmt.Errorf("shard %s: %w", r.key, err)
		}
		r.n = size
		// A shard stored whole is bounded by its index and inner
		// chunks' bounds; a nested one is its index entry, which its
		// outer shard's checks bounded.
		if r.off == 0 {
			if err := checkBound(r.key, size, a.shardBound()); err != nil {
				return nil, fmt.Errorf("shard %s: %w: %w", r.key, codec.ErrCorrupt, err)
			}
		}
	}
	if r.n < s.IndexLen {
		return nil, fmt.Errorf("shard %s: %w: %d bytes cannot hold an index of %d", r.key, codec.ErrCorrupt, r.n, s.IndexLen)
	}
	off := r.off
	if !s.AtStart {
		off += r.n - s.IndexLen
	}
	raw := make([]byte, s.IndexLen)
	if err := a.readRegion(ctx, r.key, raw, off); err != nil {
		if isNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("shard %s: index: %w", r.key, err)
	}
	index, err := s.IndexChain.DecodeInto(nil, raw, int(16*s.N))
	if err != nil {
		return nil, fmt.Errorf("shard %s: index: %w", r.key, err)
	}
	if s.IndexBig {
		swapBytes(index, 8)
	}
	return binary.LittleEndian.AppendUint64(index, uint64(r.n)), nil
}

// readFull reads exactly len(p) bytes of key at off; a short object is
// corrupt.
func (a *Array) readFull(ctx context.Context, key string, p []byte, off int64) error {
	n, err := a.src.store.ReadAt(ctx, key, p, off)
	if n == len(p) && (err == nil || err == io.EOF) {
		return nil
	}
	if err == nil || err == io.EOF {
		return fmt.Errorf("%w: %d bytes at %d, want %d", codec.ErrCorrupt, n, off, len(p))
	}
	return err
}

func isNotFound(err error) bool { return errors.Is(err, zmap.ErrNotFound) }

// readRegion reads exactly len(p) bytes at off of the shard stored as key:
// of the stored object, or when the shard went through bytes-to-bytes
// codecs (a crc32c of the whole shard), of the decoded shard.
func (a *Array) readRegion(ctx context.Context, key string, p []byte, off int64) error {
	if len(a.Meta.Pipeline.Whole) == 0 {
		return a.readFull(ctx, key, p, off)
	}
	b, err := a.wholeShard(ctx, key)
	if err != nil {
		return err
	}
	if b == nil {
		return fmt.Errorf("shard %s: %w", key, zmap.ErrNotFound)
	}
	if off < 0 || off > int64(len(b)) || int64(len(p)) > int64(len(b))-off {
		return fmt.Errorf("%w: %d bytes at %d of a shard of %d", codec.ErrCorrupt, len(p), off, len(b))
	}
	copy(p, b[off:])
	return nil
}

// regionSize is the size of the shard stored as key, decoded when it went
// through bytes-to-bytes codecs.
func (a *Array) regionSize(ctx context.Context, key string) (int64, error) {
	if len(a.Meta.Pipeline.Whole) == 0 {
		return a.src.store.Size(ctx, key)
	}
	b, err := a.wholeShard(ctx, key)
	if err != nil {
		return 0, err
	}
	if b == nil {
		return 0, fmt.Errorf("shard %s: %w", key, zmap.ErrNotFound)
	}
	return int64(len(b)), nil
}

// wholeShard reads the shard stored as key whole and decodes it with the
// bytes-to-bytes codecs after sharding_indexed; nil when it is not stored.
// It is cached like a chunk, under a key no chunk has.
func (a *Array) wholeShard(ctx context.Context, key string) ([]byte, error) {
	load := func(ctx context.Context) ([]byte, error) {
		b, err := a.getBounded(ctx, key, a.shardBound())
		if isNotFound(err) {
			return nil, nil
		}
		if zmap.IsTooLarge(err) {
			return nil, fmt.Errorf("shard %s: %w: %w", key, codec.ErrCorrupt, err)
		}
		if err != nil {
			return nil, fmt.Errorf("shard %s: %w", key, err)
		}
		for _, c := range a.Meta.Pipeline.Whole {
			if b, err = c.Decode(nil, b, -1, maxChunkBytes); err != nil {
				return nil, fmt.Errorf("shard %s: %w", key, err)
			}
		}
		return b, nil
	}
	if a.src.cache == nil {
		return load(ctx)
	}
	return a.src.cache.Get(ctx, key+"#whole", load)
}

// loadInner reads and decodes the inner chunk of a sharded array that
// key names (innerKey) into a buffer from alloc; (nil, nil) when it is not
// stored. leaf is the pipeline that encoded it.
func (a *Array) loadInner(ctx context.Context, key string, alloc cache.Alloc, size int, cpu chan struct{}) (data []byte, leaf *zarrmeta.Pipeline, err error) {
	shard, idx, err := parseInnerKey(key, len(a.Meta.Shape))
	if err != nil {
		return nil, nil, err
	}
	r, leaf, ok, err := a.locateInner(ctx, shard, idx)
	if err != nil {
		return nil, nil, fmt.Errorf("chunk %s: %w", key, err)
	}
	if !ok {
		return nil, nil, nil
	}
	// The index says the inner chunk's size: checked before anything is
	// allocated for it.
	if err := checkBound(key, r.n, a.innerBound(leaf)); err != nil {
		return nil, nil, chunkErr(key, err)
	}
	if leaf.Chain.Len() == 0 {
		if r.n != int64(size) {
			return nil, nil, fmt.Errorf("chunk %s: %w: stored %d bytes, want %d", key, codec.ErrCorrupt, r.n, size)
		}
		data = alloc(size)[:size]
		if err := a.readRegion(ctx, r.key, data, r.off); err != nil {
			return nil, nil, fmt.Errorf("chunk %s: %d bytes at %d: %w", key, r.n, r.off, err)
		}
		return data, leaf, nil
	}
	raw, put := pooledBuffer(int(r.n))
	if err := a.readRegion(ctx, r.key, raw, r.off); err != nil {
		put()
		return nil, nil, fmt.Errorf("chunk %s: %d bytes at %d: %w", key, r.n, r.off, err)
	}
	if data, err = decodeRaw(ctx, leaf.Chain, raw, put, alloc, size, cpu); err != nil {
		return nil, nil, fmt.Errorf("chunk %s: %w", key, err)
	}
	return data, leaf, nil
}
