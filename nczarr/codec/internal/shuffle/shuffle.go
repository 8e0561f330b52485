// Package shuffle undoes the byte shuffle of HDF5, numcodecs and c-blosc and
// the bit shuffle of c-blosc (the bitshuffle library's layout).
package shuffle

import "encoding/binary"

// Unshuffle undoes a byte shuffle of src into dst (len(dst) >= len(src)).
//
// A shuffled buffer stores byte 0 of every element, then byte 1 of every
// element, and so on; trailing bytes that do not make a whole element are
// stored as they are, after the shuffled part.
func Unshuffle(dst, src []byte, typesize int) {
	n := len(src)
	if typesize <= 1 || n < typesize {
		copy(dst, src)
		return
	}
	count := n / typesize
	switch typesize {
	case 2, 4, 8:
		// Slicing checks the lengths the vector loops rely on.
		whole := count * typesize
		d, s := dst[:whole], src[:whole]
		from := unshuffleVector(d, s, count, typesize)
		switch typesize {
		case 2:
			unshuffle2(d, s, count, from)
		case 4:
			unshuffle4(d, s, count, from)
		case 8:
			unshuffle8(d, s, count, from)
		}
	default:
		for j := 0; j < typesize; j++ {
			row := src[j*count : (j+1)*count]
			for i, b := range row {
				dst[i*typesize+j] = b
			}
		}
	}
	done := count * typesize
	copy(dst[done:n], src[done:])
}

// unshuffle2, unshuffle4 and unshuffle8 unshuffle elements from on of
// count elements of 2, 4 and 8 bytes, one at a time.
func unshuffle2(dst, src []byte, count, from int) {
	r0, r1 := src[:count], src[count:2*count]
	dst = dst[:2*count]
	for i := from; i < count; i++ {
		dst[2*i] = r0[i]
		dst[2*i+1] = r1[i]
	}
}

func unshuffle4(dst, src []byte, count, from int) {
	r0, r1, r2, r3 := src[:count], src[count:2*count], src[2*count:3*count], src[3*count:4*count]
	dst = dst[:4*count]
	for i := from; i < count; i++ {
		v := uint32(r0[i]) | uint32(r1[i])<<8 | uint32(r2[i])<<16 | uint32(r3[i])<<24
		binary.LittleEndian.PutUint32(dst[4*i:], v)
	}
}

func unshuffle8(dst, src []byte, count, from int) {
	r0, r1, r2, r3 := src[:count], src[count:2*count], src[2*count:3*count], src[3*count:4*count]
	r4, r5, r6, r7 := src[4*count:5*count], src[5*count:6*count], src[6*count:7*count], src[7*count:8*count]
	dst = dst[:8*count]
	for i := from; i < count; i++ {
		v := uint64(r0[i]) | uint64(r1[i])<<8 | uint64(r2[i])<<16 | uint64(r3[i])<<24 |
			uint64(r4[i])<<32 | uint64(r5[i])<<40 | uint64(r6[i])<<48 | uint64(r7[i])<<56
		binary.LittleEndian.PutUint64(dst[8*i:], v)
	}
}

// BitUnshuffle undoes the bit shuffle of count elements of typesize bytes
// (count a multiple of 8) from src into dst; tmp is scratch of the same
// size, needed when typesize > 1. None of the three may overlap.
//
// The shuffled layout has one row of count bits for every bit k of every
// byte j of an element, rows ordered by j then k; within a row, element i
// is bit i%8 of byte i/8. Undoing it transposes bits back into the
// byte-shuffled layout (byte j of every element, then byte j+1), which a
// byte unshuffle then turns into elements.
func BitUnshuffle(dst, src, tmp []byte, count, typesize int) {
	rowBytes := count / 8
	n := count * typesize
	bs := dst[:n]
	if typesize > 1 {
		bs = tmp[:n]
	}
	for j := 0; j < typesize; j++ {
		rows := src[j*8*rowBytes : (j+1)*8*rowBytes]
		out := bs[j*count : (j+1)*count]
		g := 0
		// Eight groups of eight elements at a time: load 8 bytes from each
		// of the 8 bit rows, transpose the bytes so that word m holds the
		// 8 bit-row bytes of group g+m, then transpose each word's bits.
		for ; g+8 <= rowBytes; g += 8 {
			var r [8]uint64
			for k := range r {
				r[k] = binary.LittleEndian.Uint64(rows[k*rowBytes+g:])
			}
			transposeBytes(&r)
			o := out[8*g : 8*g+64]
			for m, x := range r {
				binary.LittleEndian.PutUint64(o[8*m:], transpose8x8(x))
			}
		}
		for ; g < rowBytes; g++ {
			var x uint64
			for k := 0; k < 8; k++ {
				x |= uint64(rows[k*rowBytes+g]) << (8 * k)
			}
			binary.LittleEndian.PutUint64(out[8*g:], transpose8x8(x))
		}
	}
	if typesize > 1 {
		Unshuffle(dst[:n], bs, typesize)
	}
}

// transposeBytes transposes the 8x8 byte matrix whose row k is r[k] (byte
// m of r[k] being column m), by swapping ever smaller blocks.
func transposeBytes(r *[8]uint64) {
	const (
		lo32, hi32 = 0x00000000FFFFFFFF, 0xFFFFFFFF00000000
		lo16, hi16 = 0x0000FFFF0000FFFF, 0xFFFF0000FFFF0000
		lo8, hi8   = 0x00FF00FF00FF00FF, 0xFF00FF00FF00FF00
	)
	r0, r1, r2, r3, r4, r5, r6, r7 := r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7]
	r0, r4 = r0&lo32|r4<<32, r0>>32|r4&hi32
	r1, r5 = r1&lo32|r5<<32, r1>>32|r5&hi32
	r2, r6 = r2&lo32|r6<<32, r2>>32|r6&hi32
	r3, r7 = r3&lo32|r7<<32, r3>>32|r7&hi32
	r0, r2 = r0&lo16|(r2&lo16)<<16, (r0>>16)&lo16|r2&hi16
	r1, r3 = r1&lo16|(r3&lo16)<<16, (r1>>16)&lo16|r3&hi16
	r4, r6 = r4&lo16|(r6&lo16)<<16, (r4>>16)&lo16|r6&hi16
	r5, r7 = r5&lo16|(r7&lo16)<<16, (r5>>16)&lo16|r7&hi16
	r0, r1 = r0&lo8|(r1&lo8)<<8, (r0>>8)&lo8|r1&hi8
	r2, r3 = r2&lo8|(r3&lo8)<<8, (r2>>8)&lo8|r3&hi8
	r4, r5 = r4&lo8|(r5&lo8)<<8, (r4>>8)&lo8|r5&hi8
	r6, r7 = r6&lo8|(r7&lo8)<<8, (r6>>8)&lo8|r7&hi8
	*r = [8]uint64{r0, r1, r2, r3, r4, r5, r6, r7}
}

// transpose8x8 transposes the 8x8 bit matrix whose row r is byte r of x
// and whose column c is bit c of each byte.
func transpose8x8(x uint64) uint64 {
	t := (x ^ (x >> 7)) & 0x00AA00AA00AA00AA
	x ^= t ^ (t << 7)
	t = (x ^ (x >> 14)) & 0x0000CCCC0000CCCC
	x ^= t ^ (t << 14)
	t = (x ^ (x >> 28)) & 0x00000000F0F0F0F0
	x ^= t ^ (t << 28)
	return x
}
