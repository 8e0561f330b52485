package shuffle

// Implemented in unshuffle_amd64.s: blocks*16 elements of 2, 4 or 8
// bytes from the planes at src (plane k at src+k*count) into dst.
//
//go:noescape
func unshuffle2x16(dst, src *byte, count, blocks int)

//go:noescape
func unshuffle4x16(dst, src *byte, count, blocks int)

//go:noescape
func unshuffle8x16(dst, src *byte, count, blocks int)

// unshuffleVector unshuffles the first count/16*16 elements with SSE2 and
// returns how many it did; the caller does the rest. dst and src hold
// count elements of typesize bytes (2, 4 or 8), checked by the caller.
func unshuffleVector(dst, src []byte, count, typesize int) int {
	blocks := count / 16
	if blocks == 0 {
		return 0
	}
	switch typesize {
	case 2:
		unshuffle2x16(&dst[0], &src[0], count, blocks)
	case 4:
		unshuffle4x16(&dst[0], &src[0], count, blocks)
	case 8:
		unshuffle8x16(&dst[0], &src[0], count, blocks)
	default:
		return 0
	}
	return blocks * 16
}
