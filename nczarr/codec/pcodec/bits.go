package pcodec

import "encoding/binary"

// bitReader reads pco's little-endian bit packing: the first value of a
// byte takes its lowest bits. Reads past the end of src see zeros, so a
// truncated stream never panics; callers check overrun at the end of each
// section and batch, as pco itself does, and report such input as corrupt.
type bitReader struct {
	src []byte
	pos int // in bits
}

// word returns the 8 bytes at byte i as a little-endian integer, zero past
// the end of src.
func (r *bitReader) word(i int) uint64 {
	if i+8 <= len(r.src) {
		return binary.LittleEndian.Uint64(r.src[i:])
	}
	var w uint64
	for k := 0; k < 8 && i+k < len(r.src); k++ {
		w |= uint64(r.src[i+k]) << (8 * k)
	}
	return w
}

// read reads n <= 57 bits.
func (r *bitReader) read(n uint) uint64 {
	v := r.word(r.pos>>3) >> (uint(r.pos) & 7)
	r.pos += int(n)
	return v & (1<<n - 1)
}

// bits returns the n <= 64 bits at bit position pos, without moving.
func (r *bitReader) bits(pos int, n uint) uint64 {
	sh := uint(pos) & 7
	w := r.word(pos>>3)>>sh | r.word(pos>>3+8)<<(64-sh)
	return w & (^uint64(0) >> (64 - n))
}

// readWide reads n <= 64 bits.
func (r *bitReader) readWide(n uint) uint64 {
	if n <= 57 {
		return r.read(n)
	}
	lo := r.read(32)
	return lo | r.read(n-32)<<32
}

// overrun reports whether reading has gone past the end of src.
func (r *bitReader) overrun() bool { return r.pos > 8*len(r.src) }

// remaining is the number of unread bits (negative after an overrun).
func (r *bitReader) remaining() int { return 8*len(r.src) - r.pos }

// align moves to the next byte boundary; the bits skipped must be zero.
func (r *bitReader) align(what string) error {
	if r.overrun() {
		return corrupt("%s: data ends early", what)
	}
	if k := uint(r.pos) & 7; k != 0 {
		if r.src[r.pos>>3]>>k != 0 {
			return corrupt("%s: nonzero padding bits", what)
		}
		r.pos += int(8 - k)
	}
	return nil
}

// byte reads one byte at a byte boundary.
func (r *bitReader) byte(what string) (byte, error) {
	if r.pos&7 != 0 {
		return 0, corrupt("%s: not byte-aligned", what)
	}
	i := r.pos >> 3
	if i >= len(r.src) {
		return 0, corrupt("%s: data ends early", what)
	}
	r.pos += 8
	return r.src[i], nil
}
