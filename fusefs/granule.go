package fusefs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"

	"github.com/nczarrfs/nczarrfs/describe/netcdf3"
)

// granuleSize is the stretch of a classic file that reads as a whole: a
// read of dataset.nc reads every granule it touches, each the aligned
// 1 MiB of the file cut to the extent (header, variable, records) it lies
// in, and fails when any byte of those fails.
//
// Why: through the page cache, the kernel serves a read(2) from the pages
// it has and asks for the rest; when the rest fails, read(2) returns the
// bytes before it, a short read that netcdf-c takes for zeros. Failing a
// whole granule means no page of a granule holding a failing chunk is
// ever cached, so a read within one granule (every block netcdf-c reads:
// blocks are at most netcdf3.MaxBlock and aligned) returns all or EIO.
// Cutting granules at extents keeps a failing chunk to its own variable.
const granuleSize = 1 << 20

// extents is how a file divides into extents (netcdf3.File).
type extents interface {
	Extent(off int64) (start, end int64)
	Size() int64
}

// granuleReader reads a classic file a granule at a time. A read that
// covers its granules exactly reads into the caller's buffer; a smaller
// one reads its granule into a buffer kept among the last few, so that
// the kernel's smaller reads of one granule (concurrent ones included)
// decode it once. Reads of different granules run concurrently. It is
// safe for concurrent use.
type granuleReader struct {
	f extents
	r interface {
		ReadAt(ctx context.Context, p []byte, off int64) (int, error)
	}
	mu   sync.Mutex
	kept []*granule // GUARDED_BY(mu): the last granules read, oldest first
}

// keptGranules is how many granules a reader keeps: enough for the
// kernel's read-ahead in flight around a sequential read.
const keptGranules = 4

// granule is the bytes [lo, hi) of the file, read once: done is closed
// when buf or err is set.
type granule struct {
	lo, hi int64
	done   chan struct{}
	buf    []byte // set under granuleReader.mu before done is closed
	err    error
	// GUARDED_BY(granuleReader.mu): the reads holding it, and whether
	// the reader no longer keeps it.
	refs    int
	dropped bool
}

func newGranuleReader(f *netcdf3.File) *granuleReader {
	return &granuleReader{f: f, r: f.NewReader()}
}

// span is the stretch of whole granules that a read of [off, end) reads.
func (g *granuleReader) span(off, end int64) (lo, hi int64) {
	s, _ := g.f.Extent(off)
	_, e := g.f.Extent(end - 1)
	lo = max(off/granuleSize*granuleSize, s)
	hi = min((end+granuleSize-1)/granuleSize*granuleSize, e, g.f.Size())
	return lo, hi
}

// ReadAt fills p with the file's bytes at off, which with len(p) lies
// within the file: all of them, or an error when any granule p touches
// fails to read.
func (g *granuleReader) ReadAt(ctx context.Context, p []byte, off int64) error {
	if len(p) == 0 {
		return nil
	}
	end := off + int64(len(p))
	if off < 0 || end > g.f.Size() {
		return fmt.Errorf("read [%d, %d) of a file of %d bytes", off, end, g.f.Size())
	}
	lo, hi := g.span(off, end)
	if lo == off && hi == end && hi-lo <= granuleSize {
		// One whole granule: read it in place.
		return g.read(ctx, p, off)
	}
	// Granule by granule, each through the kept ones: the kernel's reads
	// are not aligned to granules, and each granule is read once.
	for glo := lo; glo < hi; {
		ghi := min((glo/granuleSize+1)*granuleSize, hi)
		if _, e := g.f.Extent(glo); e < ghi {
			ghi = e
		}
		if err := g.copyFrom(ctx, p, off, glo, ghi); err != nil {
			return err
		}
		glo = ghi
	}
	return nil
}

// copyFrom copies into p (the bytes at off) what it shares with the
// granule [lo, hi), reading the granule first unless it is kept.
func (g *granuleReader) copyFrom(ctx context.Context, p []byte, off, lo, hi int64) error {
	gr, load := g.granule(lo, hi)
	defer g.unref(gr)
	if load {
		buf := granuleBuf(hi - lo)
		err := g.read(ctx, buf, lo)
		g.mu.Lock()
		if gr.err = err; err == nil {
			gr.buf = buf
		} else {
			granulePool.Put(&buf)
			g.drop(gr) // a later read tries again
		}
		g.mu.Unlock()
		close(gr.done)
	} else {
		select {
		case <-gr.done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	// gr.buf and gr.err are set before done is closed, and this read's
	// reference keeps buf out of the pool.
	if gr.err != nil {
		return gr.err
	}
	end := off + int64(len(p))
	from, to := max(lo, off), min(hi, end)
	if from < to {
		copy(p[from-off:to-off], gr.buf[from-lo:to-lo])
	}
	return nil
}

// granule returns the kept granule [lo, hi), or a new one to load (load
// is true), kept in place of the oldest; the caller holds a reference
// to it until unref.
func (g *granuleReader) granule(lo, hi int64) (gr *granule, load bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, k := range g.kept {
		if k.lo == lo && k.hi == hi {
			k.refs++
			return k, false
		}
	}
	gr = &granule{lo: lo, hi: hi, done: make(chan struct{}), refs: 1}
	if len(g.kept) >= keptGranules {
		g.drop(g.kept[0])
	}
	g.kept = append(g.kept, gr)
	return gr, true
}

// granulePool holds granule buffers (of granuleSize), so that reading a
// large file allocates and zeroes a few, not one a granule.
var granulePool = sync.Pool{New: func() any { b := make([]byte, granuleSize); return &b }}

// granuleBuf returns a buffer of n <= granuleSize bytes.
func granuleBuf(n int64) []byte { return (*granulePool.Get().(*[]byte))[:n] }

// drop stops keeping gr; its buffer goes back to the pool once no read
// holds it. Called with g.mu held.
func (g *granuleReader) drop(gr *granule) {
	for i, k := range g.kept {
		if k == gr {
			g.kept = append(g.kept[:i], g.kept[i+1:]...)
			break
		}
	}
	gr.dropped = true
	g.recycle(gr)
}

// unref ends a read's hold on gr.
func (g *granuleReader) unref(gr *granule) {
	g.mu.Lock()
	defer g.mu.Unlock()
	gr.refs--
	g.recycle(gr)
}

// recycle puts the buffer of a dropped granule that no read holds back
// in the pool. Called with g.mu held.
func (g *granuleReader) recycle(gr *granule) {
	if gr.dropped && gr.refs == 0 && gr.buf != nil {
		b := gr.buf[:cap(gr.buf)]
		gr.buf = nil
		granulePool.Put(&b)
	}
}

// read reads [off, off+len(p)) whole.
func (g *granuleReader) read(ctx context.Context, p []byte, off int64) error {
	n, err := g.r.ReadAt(ctx, p, off)
	if n < len(p) {
		if err == nil || errors.Is(err, io.EOF) {
			err = fmt.Errorf("%w: %d bytes at %d", errShortRead, n, off)
		}
		return err
	}
	return nil
}

var _ fs.FileReleaser = (*classicHandle)(nil)

// Release returns the granules the handle kept to the pool when the
// file is closed, so that an open file holds at most keptGranules
// granules, and a closed one none.
func (h *classicHandle) Release(ctx context.Context) syscall.Errno {
	h.g.mu.Lock()
	defer h.g.mu.Unlock()
	for len(h.g.kept) > 0 {
		h.g.drop(h.g.kept[0])
	}
	return 0
}
