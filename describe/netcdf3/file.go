package netcdf3

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"sync"
)

// Block sizes. netcdf-c reads a classic file in blocks of st_blksize
// (at least MinBlock), each aligned to its size; every variable (and the
// records) begins on a multiple of the file's block (BlockSize), so that
// no block netcdf-c reads of one variable holds bytes of another, and a
// variable that fails to read fails no other variable's blocks. MaxBlock
// is the largest block, so that the padding stays small.
const (
	MinBlock = 8 << 10
	MaxBlock = 512 << 10
)

// BlockSize is the block of h's file, the st_blksize to serve it with: a
// power of two from MinBlock to MaxBlock, about a 256th of the variables'
// bytes so that netcdf-c reads large files in large blocks, and small
// enough that the padding to it (at most a block a variable) stays
// within a 16th of them.
func BlockSize(h *Header) int64 {
	var data int64
	for i := range h.Vars {
		v := &h.Vars[i]
		n := vsize(h, v)
		if isRec(h, v) {
			n = mulSat(n, h.Dims[h.RecDim].Len)
		}
		data = addSat(data, n)
	}
	vars := int64(len(h.Vars)) + 1
	b := int64(MinBlock)
	for b < MaxBlock && b*256 < data && 2*b*vars*16 <= data {
		b *= 2
	}
	return b
}

// addSat and mulSat are a+b and a*b of non-negative values, saturated at
// math.MaxInt64.
func addSat(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

func mulSat(a, b int64) int64 {
	if a != 0 && b > math.MaxInt64/a {
		return math.MaxInt64
	}
	return a * b
}

// errOverflow is wrapped by New for a layout past the largest offset.
var errOverflow = errors.New("the layout overflows 64-bit offsets")

// layout sums a file's offsets, checking each step for overflow.
type layout struct{ err error }

func (l *layout) add(a, b int64) int64 {
	if a < 0 || b < 0 || a > math.MaxInt64-b {
		l.fail(a, "+", b)
		return 0
	}
	return a + b
}

func (l *layout) mul(a, b int64) int64 {
	if a < 0 || b < 0 || (a != 0 && b > math.MaxInt64/a) {
		l.fail(a, "*", b)
		return 0
	}
	return a * b
}

// roundUp is n rounded up to a multiple of to.
func (l *layout) roundUp(n, to int64) int64 {
	return l.add(n, to-1) / to * to
}

func (l *layout) fail(a int64, op string, b int64) {
	if l.err == nil {
		l.err = fmt.Errorf("%w: %d %s %d", errOverflow, a, op, b)
	}
}

// File is the layout of a classic file: where the header, each
// variable's values and the records lie. It is immutable and safe for
// concurrent use; reads go through a Reader.
type File struct {
	h        *Header
	header   []byte
	begins   []int64 // by variable, in definition order
	fixed    []int   // the fixed-size variables, in order of begin
	rec      []int   // the record variables, in order of begin
	recStart int64
	recSize  int64
	numRecs  int64
	size     int64
	block    int64
}

// New lays out the file of h: the header, then the fixed-size variables
// in definition order, then the records. Begins increase in definition
// order within each kind, as netcdf-c's NC_check_voffs requires, and are
// multiples of BlockSize(h). Every offset is checked: a layout past
// 2^63 bytes is an error.
func New(h *Header) (*File, error) {
	if err := h.validate(); err != nil {
		return nil, err
	}
	f := &File{h: h, begins: make([]int64, len(h.Vars)), block: BlockSize(h)}
	if h.RecDim >= 0 {
		f.numRecs = h.Dims[h.RecDim].Len
	}
	var l layout
	// The header's size does not depend on the begins' values.
	hsize := int64(len(encode(h, f.numRecs, f.begins)))
	pos := hsize
	if len(h.Vars) > 0 {
		pos = l.roundUp(l.add(hsize, h.DataGap), f.block)
	}
	for i := range h.Vars {
		v := &h.Vars[i]
		if isRec(h, v) {
			f.rec = append(f.rec, i)
			continue
		}
		pos = l.roundUp(pos, f.block)
		f.begins[i] = pos
		f.fixed = append(f.fixed, i)
		pos = l.add(pos, vsize(h, v))
	}
	f.size = pos
	f.recStart = pos
	if len(f.rec) > 0 {
		f.recStart = l.roundUp(pos, f.block)
		off := f.recStart
		for _, i := range f.rec {
			f.begins[i] = off
			off = l.add(off, vsize(h, &h.Vars[i]))
		}
		f.recSize = off - f.recStart
		if len(f.rec) == 1 {
			// One record variable: records are not padded.
			f.recSize = slab(h, &h.Vars[f.rec[0]])
		}
		f.size = l.add(f.recStart, l.mul(f.numRecs, f.recSize))
		if f.numRecs == 0 {
			f.size = f.recStart
		}
	}
	if l.err != nil {
		return nil, l.err
	}
	f.header = encode(h, f.numRecs, f.begins)
	return f, nil
}

func roundUp(n, to int64) int64 { return (n + to - 1) / to * to }

// BlockSize is the file's block: every variable begins on a multiple
// of it (see MinBlock).
func (f *File) BlockSize() int64 { return f.block }

// Extent is the stretch of the file that holds off: the header with
// the gap after it, a fixed-size variable with its padding, or the
// records. Each begins on a block, so a read confined to one extent
// reads one variable (or the records, which their variables share).
func (f *File) Extent(off int64) (start, end int64) {
	start, end = 0, f.size
	if len(f.fixed) > 0 {
		end = f.begins[f.fixed[0]]
	} else if len(f.rec) > 0 {
		end = f.recStart
	}
	if off < end {
		return start, end
	}
	// The last fixed-size variable that begins at or before off.
	k := sort.Search(len(f.fixed), func(k int) bool { return f.begins[f.fixed[k]] > off }) - 1
	if k >= 0 {
		start, end = f.begins[f.fixed[k]], f.recStart
		if k+1 < len(f.fixed) {
			end = f.begins[f.fixed[k+1]]
		}
		if off < end || len(f.rec) == 0 {
			return start, max(end, start)
		}
	}
	return f.recStart, f.size
}

// Size is the file's length in bytes.
func (f *File) Size() int64 { return f.size }

// Header is the file's header bytes (shared: do not modify).
func (f *File) Header() []byte { return f.header }

// Format is the file's format.
func (f *File) Format() Format { return f.h.Format }

// Begin is the offset of variable i's first value.
func (f *File) Begin(i int) int64 { return f.begins[i] }

// Reader reads a File's bytes. It opens each variable's reader on first
// use and keeps it, so each variable's read-ahead follows this reader.
// It is safe for concurrent use.
type Reader struct {
	f  *File
	mu sync.Mutex
	rs map[int]ReaderAt // GUARDED_BY(mu)
}

// NewReader returns a reader of the file.
func (f *File) NewReader() *Reader { return &Reader{f: f, rs: map[int]ReaderAt{}} }

func (r *Reader) reader(i int) ReaderAt {
	r.mu.Lock()
	defer r.mu.Unlock()
	rd, ok := r.rs[i]
	if !ok {
		rd = r.f.h.Vars[i].Open()
		r.rs[i] = rd
	}
	return rd
}

// VarError is the error of a read that failed in a variable's values.
type VarError struct {
	Var string
	Err error
}

func (e *VarError) Error() string { return fmt.Sprintf("variable %s: %v", e.Var, e.Err) }
func (e *VarError) Unwrap() error { return e.Err }

// ReadAt reads the file's bytes at off, with io.ReaderAt semantics: a
// read that reaches the end returns io.EOF with what it read. Padding
// and gaps read as zeros. A failure to read a variable's values fails
// the read with a *VarError; ranges holding only the header, padding or
// other variables still read.
func (r *Reader) ReadAt(ctx context.Context, p []byte, off int64) (int, error) {
	f := r.f
	if off < 0 {
		return 0, errors.New("netcdf3: negative offset")
	}
	if off >= f.size {
		return 0, io.EOF
	}
	var eof error
	if rest := f.size - off; int64(len(p)) > rest {
		p, eof = p[:rest], io.EOF
	}
	end := off + int64(len(p))
	// pos is how far p is filled; gaps up to a section are zeroed.
	pos := off
	fill := func(start, stop int64, read func(dst []byte, at int64) error) error {
		start, stop = max(start, pos), min(stop, end)
		if start >= stop {
			return nil
		}
		clear(p[pos-off : start-off])
		if err := read(p[start-off:stop-off], start); err != nil {
			return err
		}
		pos = stop
		return nil
	}
	h := int64(len(f.header))
	if err := fill(0, h, func(dst []byte, at int64) error {
		copy(dst, f.header[at:])
		return nil
	}); err != nil {
		return 0, err
	}
	// Fixed-size variables: the first that ends after off, and on.
	k := sort.Search(len(f.fixed), func(k int) bool {
		i := f.fixed[k]
		return f.begins[i]+slab(f.h, &f.h.Vars[i]) > off
	})
	for ; k < len(f.fixed) && pos < end; k++ {
		i := f.fixed[k]
		b := f.begins[i]
		if b >= end {
			break
		}
		if err := fill(b, b+slab(f.h, &f.h.Vars[i]), func(dst []byte, at int64) error {
			return r.readVar(ctx, i, dst, at-b)
		}); err != nil {
			return 0, err
		}
	}
	// Records.
	if len(f.rec) > 0 && f.numRecs > 0 && end > f.recStart {
		first := max(0, (pos-f.recStart)/f.recSize)
		for rec := first; rec < f.numRecs && pos < end; rec++ {
			base := f.recStart + rec*f.recSize
			if base >= end {
				break
			}
			for _, i := range f.rec {
				v := &f.h.Vars[i]
				b := base + f.begins[i] - f.recStart
				n := slab(f.h, v)
				if b >= end {
					break
				}
				if err := fill(b, b+n, func(dst []byte, at int64) error {
					return r.readVar(ctx, i, dst, rec*n+at-b)
				}); err != nil {
					return 0, err
				}
			}
		}
	}
	clear(p[pos-off:])
	return len(p), eof
}

// readVar fills dst with variable i's big-endian bytes from its decoded
// byte at: the values dst covers are read whole, and swapped.
func (r *Reader) readVar(ctx context.Context, i int, dst []byte, at int64) error {
	v := &r.f.h.Vars[i]
	es := int64(v.Type.Size())
	rd := r.reader(i)
	read := func(buf []byte, at int64) error {
		n, err := rd.ReadAt(ctx, buf, at)
		if n == len(buf) {
			return nil
		}
		if err == nil || errors.Is(err, io.EOF) {
			err = fmt.Errorf("%d bytes at %d: %w", n, at, io.ErrUnexpectedEOF)
		}
		return &VarError{Var: v.Name, Err: err}
	}
	if es == 1 {
		return read(dst, at)
	}
	// The whole values inside [at, at+len(dst)) are read in place; a
	// value cut at either end is read into a small buffer.
	end := at + int64(len(dst))
	first := roundUp(at, es)
	last := end / es * es
	var one [8]byte
	part := func(start int64) error {
		e := one[:es]
		if err := read(e, start); err != nil {
			return err
		}
		swap(e, int(es))
		lo, hi := max(start, at), min(start+es, end)
		copy(dst[lo-at:hi-at], e[lo-start:hi-start])
		return nil
	}
	if first > last {
		// Within one value.
		return part(at / es * es)
	}
	if first > at {
		if err := part(first - es); err != nil {
			return err
		}
	}
	if last > first {
		mid := dst[first-at : last-at]
		if err := read(mid, first); err != nil {
			return err
		}
		swap(mid, int(es))
	}
	if end > last {
		return part(last)
	}
	return nil
}

// swap reverses the bytes of each unit-byte value of b: a load and a
// store in the other byte order, which the compiler makes one byte-swap
// instruction.
func swap(b []byte, unit int) {
	switch unit {
	case 2:
		for i := 0; i+1 < len(b); i += 2 {
			binary.BigEndian.PutUint16(b[i:], binary.LittleEndian.Uint16(b[i:]))
		}
	case 4:
		for i := 0; i+3 < len(b); i += 4 {
			binary.BigEndian.PutUint32(b[i:], binary.LittleEndian.Uint32(b[i:]))
		}
	case 8:
		for i := 0; i+7 < len(b); i += 8 {
			binary.BigEndian.PutUint64(b[i:], binary.LittleEndian.Uint64(b[i:]))
		}
	}
}
