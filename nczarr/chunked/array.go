package chunked

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"sync"
	"sync/atomic"

	"github.com/nczarrfs/nczarrfs/cache"
	"github.com/nczarrfs/nczarrfs/nczarr/codec"
	"github.com/nczarrfs/nczarrfs/nczarr/zarrmeta"
	"github.com/nczarrfs/nczarrfs/zmap"
)

// maxChunkBytes bounds one decoded chunk; metadata asking for more is
// refused rather than allocated.
const maxChunkBytes = 1 << 30

// Array is an array of the dataset. Its decoded bytes (see ReadAt) are
// every element in C order, little-endian, ItemSize bytes each.
type Array struct {
	Path string
	// Meta is the array's metadata model (package zarrmeta), the same
	// for both Zarr versions: the read path sees nothing else.
	Meta     zarrmeta.Array
	DimNames []string     // NCZarr dimension references, the Zarr dimension names, or anonymous
	Scalar   bool         // NCZarr scalar (shape [1], storage "scalar")
	DimRefs  []string     // NCZarr dimension references, as written
	ItemSize int          // bytes per element of the decoded data
	Chain    *codec.Chain // the bytes-to-bytes codecs of a (innermost) chunk

	// Err is set when the array's metadata or codecs cannot be used: the
	// array is listed, and every read fails with Err.
	Err error

	src        *Source
	size       int64 // decoded bytes in all
	chunkElems int64 // elements in one chunk
	swap       int   // byte-swap unit of a big-endian array, 0 for none
	fill       []byte
	fillOnce   sync.Once
	fillChunk  []byte
	objects    *objects // set for variable-length elements (vlen.go)
}

// loadElems reads and decodes a chunk stored through an element codec
// (json2, msgpack2) into a buffer from alloc: each element converted to the dtype as zarr-python
// converts it (numpy's conversion of the decoded list); nil when the
// chunk is not stored.
func (a *Array) loadElems(ctx context.Context, key string, alloc cache.Alloc, cpu chan struct{}) ([]byte, error) {
	data, err := a.getBounded(ctx, key, a.src.raise(ElemsBound))
	if errors.Is(err, zmap.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, chunkErr(key, err)
	}
	if cpu != nil {
		cpu <- struct{}{}
		defer func() { <-cpu }()
	}
	elems := a.Meta.Pipeline.Elems
	steps := elems.Steps
	for i := len(steps) - 1; i >= 0; i-- {
		if data, err = steps[i].Decode(nil, data, -1, maxChunkBytes); err != nil {
			return nil, fmt.Errorf("chunk %s: %w", key, err)
		}
	}
	n := int(a.chunkElems)
	list, err := objectCodecs[elems.Codec](data, n)
	if err == nil && len(list) != n {
		err = fmt.Errorf("%d elements, want %d", len(list), n)
	}
	if err != nil {
		return nil, fmt.Errorf("chunk %s: %w: %s: %w", key, codec.ErrCorrupt, elems.Codec, err)
	}
	is := a.ItemSize
	out := alloc(n * is)[:n*is]
	for i, e := range list {
		var v any
		if err := zarrmeta.DecodeJSON(e, &v); err != nil {
			return nil, fmt.Errorf("chunk %s: %w: element %d: %w", key, codec.ErrCorrupt, i, err)
		}
		b, err := a.Meta.DType.EncodeFill(v, is)
		if err != nil {
			return nil, fmt.Errorf("chunk %s: %w: element %d: %w", key, codec.ErrCorrupt, i, err)
		}
		copy(out[i*is:], b)
	}
	return out, nil
}

// product multiplies sizes, reporting overflow. The product of no sizes
// (a 0-d array) is 1.
func product(dims []int64) (int64, bool) {
	n := uint64(1)
	for _, d := range dims {
		hi, lo := bits.Mul64(n, uint64(d))
		if hi != 0 || lo > math.MaxInt64 {
			return 0, false
		}
		n = lo
	}
	return int64(n), true
}

// Size is the length in bytes of the decoded array.
func (a *Array) Size() int64 { return a.size }

// ChunkKey is the read path's key of the chunk with grid index idx: the
// stored chunk's, or for a sharded array an inner chunk's in its shard
// (innerKey).
func (a *Array) ChunkKey(idx []int64) string {
	m := &a.Meta
	if m.Pipeline == nil || m.Pipeline.Shard == nil {
		return m.Keys.Key(a.Path, idx)
	}
	shard := make([]int64, len(idx))
	for d, x := range idx {
		shard[d] = x * m.Chunks[d] / m.Grid[d]
	}
	return innerKey(m.Keys.Key(a.Path, shard), idx)
}

// copyOp copies n bytes at off of chunk number chunk to dst.
type copyOp struct {
	chunk    int
	src, dst int
	n        int
}

// ReadAt reads decoded bytes at offset off, with io.ReaderAt semantics.
// It fetches and decodes the chunks the range touches concurrently, and
// reads nothing ahead: a sequential reader uses a Reader.
func (a *Array) ReadAt(ctx context.Context, p []byte, off int64) (int, error) {
	n, _, err := a.read(ctx, p, off, nil)
	return n, err
}

// read is ReadAt; it also reports whether every chunk was cached already,
// and calls before, when not nil, with the range it is about to read.
// A read that before does not call sequential (and every read without
// before) of an uncompressed array fetches only the bytes it needs
// (ranged.go): straight into p from a local store (vecReads), else by
// ranged reads from a remote one (rangedReads). Sequential reads go
// through the cache, which read-ahead fills in the background.
func (a *Array) read(ctx context.Context, p []byte, off int64, before func(off, end int64) (sequential bool)) (n int, hit bool, err error) {
	if a.Err != nil {
		return 0, false, a.Err
	}
	if off < 0 {
		return 0, false, fmt.Errorf("negative offset %d", off)
	}
	if off >= a.size {
		return 0, false, io.EOF
	}
	want := len(p)
	if rest := a.size - off; int64(want) > rest {
		p = p[:rest]
	}
	sequential := false
	if before != nil {
		sequential = before(off, off+int64(len(p)))
	}
	keys, ops := a.plan(off, len(p))
	if !sequential && a.vecReads() {
		err := a.readVec(ctx, p, keys, ops)
		if !errors.Is(err, errors.ErrUnsupported) {
			if err != nil {
				return 0, false, err
			}
			if len(p) < want {
				return len(p), false, io.EOF
			}
			return len(p), false, nil
		}
		// The store cannot after all (a zip of compressed entries):
		// this read and every later one go through the cache.
		a.src.noVec.Store(true)
	}
	if !sequential && a.rangedReads() {
		if err := a.readRanged(ctx, p, keys, ops); err != nil {
			return 0, false, err
		}
		if len(p) < want {
			return len(p), false, io.EOF
		}
		return len(p), false, nil
	}
	chunks := make([]chunkRef, len(keys))
	defer func() {
		for i := range chunks {
			chunks[i].release()
		}
	}()
	if err := a.fetch(ctx, keys, chunks); err != nil {
		return 0, false, err
	}
	hit = true
	for _, c := range chunks {
		hit = hit && c.hit()
	}
	for _, op := range ops {
		copy(p[op.dst:op.dst+op.n], chunks[op.chunk].data[op.src:op.src+op.n])
	}
	if len(p) < want {
		return len(p), hit, io.EOF
	}
	return len(p), hit, nil
}

// plan lists the chunks that bytes [off, off+n) touch and the copies that
// assemble them, one per run of elements contiguous in both the output and
// a (C-ordered) chunk. A run is at most one chunk row long, so a request
// has many runs per chunk: chunks are told apart by their ordinal, and
// each chunk's key is built once.
func (a *Array) plan(off int64, n int) (keys []string, ops []copyOp) {
	is := int64(a.ItemSize)
	shape, chunks := a.Meta.Shape, a.Meta.Chunks
	rank := len(shape)
	e0, e1 := off/is, (off+int64(n)+is-1)/is
	idx := make([]int64, rank)
	grid := make([]int64, rank)
	gridDims := make([]int64, rank)
	for d := range rank {
		gridDims[d] = (shape[d] + chunks[d] - 1) / chunks[d]
	}
	if rank > 0 {
		ops = make([]copyOp, 0, (e1-e0)/chunks[rank-1]+2)
	}
	seen := map[int64]int{}
	lastOrd, lastCI := int64(-1), 0
	for e := e0; e < e1; {
		// Unravel e into a multi-index, its chunk and its place there.
		rem := e
		for d := rank - 1; d >= 0; d-- {
			idx[d] = rem % shape[d]
			rem /= shape[d]
		}
		run := e1 - e
		within, ord := int64(0), int64(0)
		for d := 0; d < rank; d++ {
			grid[d] = idx[d] / chunks[d]
			within = within*chunks[d] + idx[d]%chunks[d]
			ord = ord*gridDims[d] + grid[d]
		}
		if rank > 0 {
			last := rank - 1
			run = min(run, chunks[last]-idx[last]%chunks[last], shape[last]-idx[last])
		}
		ci := lastCI
		if ord != lastOrd {
			var ok bool
			if ci, ok = seen[ord]; !ok {
				ci = len(keys)
				seen[ord] = ci
				keys = append(keys, a.ChunkKey(grid))
			}
			lastOrd, lastCI = ord, ci
		}
		// Clip the run's bytes to the requested range.
		lo := max(e*is, off)
		hi := min((e+run)*is, off+int64(n))
		src := within*is + (lo - e*is)
		ops = append(ops, copyOp{chunk: ci, src: int(src), dst: int(lo - off), n: int(hi - lo)})
		e += run
	}
	return keys, ops
}

// fetch fills chunks[i] with the decoded chunk keys[i]. Chunks already
// cached are taken at once, in this goroutine; the others are waited for
// (joined when read-ahead loads them, else loaded), at most the source's parallelism at a
// time. The first error wins. The caller releases every chunks[i], also
// on error.
//
// Taking cached chunks without a goroutine matters to a sequential reader,
// whose chunks read-ahead has almost always decoded: a goroutine started
// for each would wait for a processor behind the decodes, which keep every
// one busy, and hold up the reply by a whole decode.
func (a *Array) fetch(ctx context.Context, keys []string, chunks []chunkRef) error {
	var missed []int
	for i, key := range keys {
		if ref := a.src.cache.Peek(key); ref != nil {
			chunks[i] = a.chunkOf(ref)
		} else {
			missed = append(missed, i)
		}
	}
	return a.each(ctx, len(missed), func(ctx context.Context, i int) (err error) {
		chunks[missed[i]], err = a.chunk(ctx, keys[missed[i]])
		return err
	})
}

// each runs fn for 0..n-1 on at most the source's parallelism of goroutines, and cancels the
// rest after an error. It returns the first error that is not a
// cancellation the error caused. Each goroutine runs fn for one i after
// another: a store request runs deep in its client's stack, which a
// goroutine of its own would grow (copying it) every time.
func (a *Array) each(ctx context.Context, n int, fn func(ctx context.Context, i int) error) error {
	switch n {
	case 0:
		return nil
	case 1:
		return fn(ctx, 0)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make([]error, n)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(n, a.src.par) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				if errs[i] = fn(ctx, i); errs[i] != nil {
					cancel()
				}
			}
		}()
	}
	wg.Wait()
	var first error
	for _, err := range errs {
		if err != nil && !errors.Is(err, context.Canceled) {
			return err
		}
		if first == nil {
			first = err
		}
	}
	return first
}

// chunk returns a decoded chunk in output form: C order, little-endian,
// ItemSize bytes an element. A chunk that is not stored is the fill value.
// The caller must release the result once it no longer reads it.
func (a *Array) chunk(ctx context.Context, key string) (chunkRef, error) {
	ref, err := a.src.cache.Acquire(ctx, key, func(ctx context.Context, alloc cache.Alloc) ([]byte, error) {
		return a.load(ctx, key, alloc, nil)
	})
	if err != nil {
		return chunkRef{}, err
	}
	return a.chunkOf(ref), nil
}

// chunkOf is the chunk a cache reference holds: the fill chunk when the
// chunk is not stored.
func (a *Array) chunkOf(ref *cache.Ref) chunkRef {
	c := chunkRef{data: ref.Value(), ref: ref}
	if c.data == nil {
		c.data = a.filled()
	}
	return c
}

// load reads and decodes one chunk; (nil, nil) when it is not stored.
// The decoded bytes go into a buffer from alloc when alloc is not nil.
// When cpu is not nil, the decoding waits for a slot in it (the reading
// does not: on S3 it is mostly waiting). The pipeline says how: an
// element codec (loadElems), a chunk stored whole (loadStored) or an
// inner chunk of a shard (loadInner); then the bytes are swapped to
// little-endian and the transposes undone (a v2 array's Fortran order is
// one).
func (a *Array) load(ctx context.Context, key string, alloc cache.Alloc, cpu chan struct{}) ([]byte, error) {
	alloc = allocOrMake(alloc)
	size := int(a.chunkElems) * a.ItemSize
	p := a.Meta.Pipeline
	leaf := p
	var data []byte
	var err error
	switch {
	case p.Elems != nil:
		data, err = a.loadElems(ctx, key, alloc, cpu)
	case p.Shard == nil:
		data, err = a.loadStored(ctx, key, p.Chain, alloc, size, cpu)
	default:
		data, leaf, err = a.loadInner(ctx, key, alloc, size, cpu)
	}
	if data == nil || err != nil {
		return nil, err
	}
	if a.swap > 1 {
		swapBytes(data, a.swap)
	}
	if len(leaf.Perms) > 0 {
		data = untranspose(data, a.Meta.Inner, leaf.Perms, a.ItemSize)
	}
	if a.Meta.Outer != nil {
		data = untranspose(data, a.Meta.Chunks, p.Perms, a.ItemSize)
	}
	return data, nil
}

// allocOrMake is alloc, or plain allocation when alloc is nil.
func allocOrMake(alloc cache.Alloc) cache.Alloc {
	if alloc == nil {
		return func(n int) []byte { return make([]byte, n) }
	}
	return alloc
}

// loadStored reads the object key, a chunk stored whole, and decodes it
// with chain into a buffer from alloc; (nil, nil) when it is not stored.
// With no codec the stored bytes are the chunk: they are read straight
// into place, one byte more than the chunk to tell an oversized object.
// Otherwise the decoding waits for a slot in cpu (when not nil); the
// reading does not: on S3 it is mostly waiting. Byte order and element
// order are the caller's.
func (a *Array) loadStored(ctx context.Context, key string, chain *codec.Chain, alloc cache.Alloc, size int, cpu chan struct{}) ([]byte, error) {
	if chain.Len() == 0 {
		buf := alloc(size + 1)
		n, err := a.src.store.ReadAt(ctx, key, buf, 0)
		switch {
		case errors.Is(err, zmap.ErrNotFound):
			return nil, nil
		case err != nil && err != io.EOF:
			return nil, fmt.Errorf("chunk %s: %w", key, err)
		case n != size:
			stored := int64(n)
			if n == len(buf) {
				stored, err = a.src.store.Size(ctx, key)
				if err != nil {
					return nil, fmt.Errorf("chunk %s: %w", key, err)
				}
			}
			return nil, fmt.Errorf("chunk %s: %w: stored %d bytes, want %d", key, codec.ErrCorrupt, stored, size)
		}
		return buf[:size], nil
	}
	raw, put, err := a.readRaw(ctx, key, size, a.chunkBound(chain, size))
	if errors.Is(err, zmap.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, chunkErr(key, err)
	}
	data, err := decodeRaw(ctx, chain, raw, put, alloc, size, cpu)
	if err != nil {
		return nil, fmt.Errorf("chunk %s: %w", key, err)
	}
	return data, nil
}

// decodeRaw decodes raw with chain into a buffer from alloc, waiting for
// a slot in cpu (when not nil), and then calls put to return raw's
// buffer. It tells the cache that the load running with ctx needs the
// store no more: from here on, its callers wait past their deadlines.
func decodeRaw(ctx context.Context, chain *codec.Chain, raw []byte, put func(), alloc cache.Alloc, size int, cpu chan struct{}) ([]byte, error) {
	cache.Fetched(ctx)
	defer put()
	if cpu != nil {
		cpu <- struct{}{}
		defer func() { <-cpu }()
	}
	return chain.DecodeInto(alloc(size), raw, size)
}

// rawBuffers recycles the buffers that stored (encoded) chunks are read
// into, for the same reason the cache recycles decoded ones: fresh memory
// is slow to touch. It holds *[]byte.
var rawBuffers sync.Pool

// pooledBuffer returns a buffer of n bytes from rawBuffers (a new one when
// the one there does not fit without wasting more than n: that one goes
// back, for a read of its size) and the func that gives it back.
func pooledBuffer(n int) (buf []byte, put func()) {
	bp, _ := rawBuffers.Get().(*[]byte)
	if bp == nil || cap(*bp) < n || cap(*bp) > 2*n {
		if bp != nil {
			rawBuffers.Put(bp)
		}
		b := make([]byte, n)
		bp = &b
	}
	return (*bp)[:n], func() { rawBuffers.Put(bp) }
}

// readRaw returns the stored bytes of a chunk whose decoded size is size
// and whose stored object may hold at most bound bytes, read into a
// pooled buffer when they fit one; put returns the buffer to the pool once
// the caller is done with raw. An object over bound is a
// *zmap.TooLargeError, found before more than bound+1 bytes are read.
func (a *Array) readRaw(ctx context.Context, key string, size int, bound int64) (raw []byte, put func(), err error) {
	// Encoded chunks rarely exceed their decoded size by more than a
	// frame's overhead; bigger ones, up to the bound, take the store's
	// Get, which refuses an object over it.
	if stored, ok := a.keptSize(key); ok && stored > bound {
		// A kept listing says the size before any request.
		return nil, nil, &zmap.TooLargeError{Key: key, Size: stored, Bound: bound}
	}
	first := min(int64(size)+int64(size)/8+4096, bound+1)
	buf, put := pooledBuffer(int(first))
	n, err := a.src.store.ReadAt(ctx, key, buf, 0)
	switch {
	case err == io.EOF:
		return buf[:n], put, nil
	case err != nil:
		put()
		return nil, nil, err
	}
	put() // the object is larger than buf
	// Over the bound when buf held bound+1 bytes: then the store's Get
	// says so from the first thing that tells it the size (a stat, a
	// Content-Length, bound+1 bytes of a body with no length), which
	// names the size where a store knows it.
	raw, err = a.getBounded(ctx, key, bound)
	return raw, func() {}, err
}

// filled is a whole chunk of fill values, made once and shared.
func (a *Array) filled() []byte {
	a.fillOnce.Do(func() {
		a.fillChunk = make([]byte, int(a.chunkElems)*a.ItemSize)
		for i := 0; i < len(a.fillChunk); i += a.ItemSize {
			copy(a.fillChunk[i:], a.fill)
		}
	})
	return a.fillChunk
}

// swapBytes reverses every unit-byte group of b in place.
func swapBytes(b []byte, unit int) {
	switch unit {
	case 2:
		for i := 0; i+1 < len(b); i += 2 {
			b[i], b[i+1] = b[i+1], b[i]
		}
	case 4:
		for i := 0; i+3 < len(b); i += 4 {
			binary.LittleEndian.PutUint32(b[i:], binary.BigEndian.Uint32(b[i:]))
		}
	case 8:
		for i := 0; i+7 < len(b); i += 8 {
			binary.LittleEndian.PutUint64(b[i:], binary.BigEndian.Uint64(b[i:]))
		}
	}
}
