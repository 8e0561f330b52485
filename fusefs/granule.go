package fusefs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

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

// granuleReader reads a classic file a granule at a time, keeping the
// last granules read, so that the kernel's smaller reads of one granule
// read its variable's bytes once. It is safe for concurrent use.
type granuleReader struct {
	f extents
	r interface {
		ReadAt(ctx context.Context, p []byte, off int64) (int, error)
	}
	mu     sync.Mutex
	lo, hi int64  // GUARDED_BY(mu): the bytes buf holds, [lo, hi)
	buf    []byte // GUARDED_BY(mu)
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
	g.mu.Lock()
	defer g.mu.Unlock()
	if off >= g.lo && end <= g.hi {
		copy(p, g.buf[off-g.lo:])
		return nil
	}
	lo, hi := g.span(off, end)
	if cap(g.buf) < int(hi-lo) {
		g.buf = make([]byte, hi-lo)
	}
	buf := g.buf[:hi-lo]
	g.lo, g.hi = 0, 0
	n, err := g.r.ReadAt(ctx, buf, lo)
	if n < len(buf) {
		if err == nil || errors.Is(err, io.EOF) {
			err = fmt.Errorf("%w: %d bytes at %d", errShortRead, n, lo)
		}
		return err
	}
	g.lo, g.hi = lo, hi
	copy(p, buf[off-lo:])
	return nil
}
