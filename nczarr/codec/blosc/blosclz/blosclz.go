// Package blosclz decodes BloscLZ, the FastLZ (level 2) derivative that is
// c-blosc's default inner compressor.
//
// A stream is a sequence of instructions. The low 5 bits of the first byte
// are its control value; each later control value is a whole byte.
//
//   - ctrl < 32: a literal run of ctrl+1 bytes follows.
//   - ctrl >= 32: a match. Its length is (ctrl>>5)+2; a length code of 7
//     is extended by following bytes (each added, 255 meaning another
//     follows). The distance is ((ctrl&31)<<8) + next byte + 1, except that
//     a distance byte of 255 with high bits 31 announces a 16-bit big-endian
//     distance to which 8191 is added.
//
// The stream ends where the input ends.
package blosclz

import "errors"

// maxDistance is the largest distance of the short match form.
const maxDistance = 8191

// Errors reported by Decode.
var (
	ErrTruncated = errors.New("blosclz: truncated input")
	ErrOverflow  = errors.New("blosclz: output exceeds the expected size")
	ErrDistance  = errors.New("blosclz: match refers to data before the start")
)

// Decode decompresses src into dst and returns the number of bytes written.
// It never writes past len(dst); a stream that would is an error.
func Decode(dst, src []byte) (int, error) {
	if len(src) == 0 {
		return 0, nil
	}
	ip, op := 0, 0
	ctrl := int(src[ip] & 31)
	ip++
	for {
		if ctrl >= 32 {
			length := (ctrl >> 5) - 1
			ofs := (ctrl & 31) << 8
			if length == 7-1 {
				for {
					if ip+1 >= len(src) {
						return op, ErrTruncated
					}
					code := int(src[ip])
					ip++
					length += code
					if length > len(dst) {
						return op, ErrOverflow
					}
					if code != 255 {
						break
					}
				}
			} else if ip+1 >= len(src) {
				return op, ErrTruncated
			}
			code := int(src[ip])
			ip++
			length += 3
			dist := ofs + code + 1
			if code == 255 && ofs == 31<<8 {
				if ip+1 >= len(src) {
					return op, ErrTruncated
				}
				dist = (int(src[ip])<<8 | int(src[ip+1])) + maxDistance + 1
				ip += 2
			}
			if length > len(dst)-op {
				return op, ErrOverflow
			}
			if dist > op {
				return op, ErrDistance
			}
			// Like c-blosc, a match that ends the input is not applied:
			// valid streams always end with a literal run.
			if ip >= len(src) {
				return op, nil
			}
			ctrl = int(src[ip])
			ip++
			copyMatch(dst, op, dist, length)
			op += length
		} else {
			n := ctrl + 1
			if n > len(dst)-op {
				return op, ErrOverflow
			}
			if n > len(src)-ip {
				return op, ErrTruncated
			}
			copy(dst[op:op+n], src[ip:ip+n])
			op += n
			ip += n
			if ip >= len(src) {
				return op, nil
			}
			ctrl = int(src[ip])
			ip++
		}
	}
}

// copyMatch copies length bytes starting dist bytes back from buf[op] to
// buf[op:]. When the two overlap (dist < length) the pattern repeats, as a
// byte-by-byte copy would make it.
func copyMatch(buf []byte, op, dist, length int) {
	out := buf[op : op+length]
	ref := op - dist
	if dist >= length {
		copy(out, buf[ref:ref+length])
		return
	}
	if dist == 1 {
		b := buf[ref]
		for i := range out {
			out[i] = b
		}
		return
	}
	// Copy the dist-byte pattern once, then double the copied span.
	n := copy(out, buf[ref:op])
	for n < length {
		n += copy(out[n:], out[:n])
	}
}
