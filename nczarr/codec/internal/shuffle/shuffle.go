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
	case 2:
		unshuffle2(dst, src, count)
	case 4:
		unshuffle4(dst, src, count)
	case 8:
		unshuffle8(dst, src, count)
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

func unshuffle2(dst, src []byte, count int) {
	r0, r1 := src[:count], src[count:2*count]
	dst = dst[:2*count]
	for i := range r0 {
		dst[2*i] = r0[i]
		dst[2*i+1] = r1[i]
	}
}

func unshuffle4(dst, src []byte, count int) {
	r0, r1, r2, r3 := src[:count], src[count:2*count], src[2*count:3*count], src[3*count:4*count]
	dst = dst[:4*count]
	for i := range r0 {
		v := uint32(r0[i]) | uint32(r1[i])<<8 | uint32(r2[i])<<16 | uint32(r3[i])<<24
		binary.LittleEndian.PutUint32(dst[4*i:], v)
	}
}

func unshuffle8(dst, src []byte, count int) {
	r0, r1, r2, r3 := src[:count], src[count:2*count], src[2*count:3*count], src[3*count:4*count]
	r4, r5, r6, r7 := src[4*count:5*count], src[5*count:6*count], src[6*count:7*count], src[7*count:8*count]
	dst = dst[:8*count]
	for i := range r0 {
		v := uint64(r0[i]) | uint64(r1[i])<<8 | uint64(r2[i])<<16 | uint64(r3[i])<<24 |
			uint64(r4[i])<<32 | uint64(r5[i])<<40 | uint64(r6[i])<<48 | uint64(r7[i])<<56
		binary.LittleEndian.PutUint64(dst[8*i:], v)
	}
}

// BitUnshuffle undoes the bit shuffle of count elements of typesize bytes
// (count a multiple of 8) from src into dst, which must not overlap and
// must each hold count*typesize bytes.
//
// The shuffled layout has one row of count bits for every bit k of every
// byte j of an element, rows ordered by j then k; within a row, element i
// is bit i%8 of byte i/8.
func BitUnshuffle(dst, src []byte, count, typesize int) {
	rowBytes := count / 8
	for j := 0; j < typesize; j++ {
		rows := src[j*8*rowBytes : (j+1)*8*rowBytes]
		for g := 0; g < rowBytes; g++ {
			// Gather bit k of byte j of the 8 elements of group g into
			// byte k of x, then transpose the 8x8 bit matrix so byte r of x
			// becomes byte j of element 8g+r.
			x := uint64(rows[g]) |
				uint64(rows[rowBytes+g])<<8 |
				uint64(rows[2*rowBytes+g])<<16 |
				uint64(rows[3*rowBytes+g])<<24 |
				uint64(rows[4*rowBytes+g])<<32 |
				uint64(rows[5*rowBytes+g])<<40 |
				uint64(rows[6*rowBytes+g])<<48 |
				uint64(rows[7*rowBytes+g])<<56
			x = transpose8x8(x)
			base := 8*g*typesize + j
			for r := 0; r < 8; r++ {
				dst[base+r*typesize] = byte(x >> (8 * r))
			}
		}
	}
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
