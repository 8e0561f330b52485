package pcodec

import (
	"encoding/binary"
	"math"

	"github.com/nczarrfs/nczarrfs/nczarr/codec/internal/half"
)

// mantissaBits is the number of explicit mantissa bits of float type t.
func mantissaBits(t numType) uint {
	switch t.bits {
	case 16:
		return 10
	case 32:
		return 23
	}
	return 52
}

// fromOrdered maps a latent to the bits of its number: pco's
// order-preserving bijection (identity for unsigned integers, the sign bit
// flipped for signed ones, and for floats the sign bit flipped when set,
// every bit flipped when not).
func fromOrdered(t numType, l uint64) uint64 {
	m, sign := mask(t.bits), mid(t.bits)
	l &= m
	switch t.kind {
	case 'i':
		return l ^ sign
	case 'f':
		if l&sign != 0 {
			return l ^ sign
		}
		return ^l & m
	}
	return l
}

// toOrdered is fromOrdered's inverse for floats.
func toOrdered(t numType, bits uint64) uint64 {
	m, sign := mask(t.bits), mid(t.bits)
	if bits&sign != 0 {
		return ^bits & m
	}
	return bits ^ sign
}

// toFloat64 converts the bits of a float of type t to float64 exactly.
func toFloat64(t numType, bits uint64) float64 {
	switch t.bits {
	case 16:
		return half.ToFloat64(uint16(bits))
	case 32:
		return float64(math.Float32frombits(uint32(bits)))
	}
	return math.Float64frombits(bits)
}

// intFloat is pco's int_float_from_latent: the float of integer value
// l - mid (counting -0 apart from +0), where integers past the float's
// exact range continue as consecutive float bit patterns.
func intFloat(t numType, l uint64) float64 {
	c := mid(t.bits)
	l &= mask(t.bits)
	neg := l < c
	var abs uint64
	if neg {
		abs = c - 1 - l
	} else {
		abs = l - c
	}
	gpi := uint64(1) << (mantissaBits(t) + 1)
	var f float64
	if abs < gpi {
		f = float64(abs)
	} else {
		var gpiBits uint64
		switch t.bits {
		case 16:
			gpiBits = uint64(float64ToHalf(float64(gpi)))
		case 32:
			gpiBits = uint64(math.Float32bits(float32(gpi)))
		default:
			gpiBits = math.Float64bits(float64(gpi))
		}
		f = toFloat64(t, (gpiBits+abs-gpi)&mask(t.bits))
	}
	if neg {
		f = -f
	}
	return f
}

// floatBits rounds f to float type t and returns its bits.
func floatBits(t numType, f float64) uint64 {
	switch t.bits {
	case 16:
		return uint64(float64ToHalf(f))
	case 32:
		return uint64(math.Float32bits(float32(f)))
	}
	return math.Float64bits(f)
}

// join combines a page's primary and secondary latents into numbers of
// type t according to the chunk's mode, and writes them little-endian to
// dst.
func join(m *chunkMeta, t numType, primary, secondary []uint64, dst []byte) error {
	w := t.bits
	mk := mask(w)
	switch m.mode {
	case modeClassic:
		// primary as is
	case modeIntMult:
		for i, l := range primary {
			primary[i] = l*m.base + secondary[i]
		}
	case modeFloatMult:
		base := toFloat64(t, fromOrdered(t, m.base))
		c := mid(w)
		if w == 64 {
			floatMult64(primary, secondary, base)
			break
		}
		for i, l := range primary {
			var bits uint64
			if w == 32 {
				// float32 arithmetic, as pco does it.
				bits = uint64(math.Float32bits(float32(intFloat(t, l)) * float32(base)))
			} else {
				// Products of float16s are exact in float64 and round
				// once; float64 products are float64 arithmetic.
				bits = floatBits(t, intFloat(t, l)*base)
			}
			primary[i] = toOrdered(t, bits) + secondary[i] + c
		}
	case modeFloatQuant:
		k := m.k
		cutoff := mid(w) >> k
		low := uint64(1)<<k - 1
		for i, y := range primary {
			y &= mk
			s := secondary[i]
			if y < cutoff {
				s = low - s
			}
			primary[i] = y<<k + s
		}
	case modeDict:
		for i, l := range primary {
			idx := l & 0xffffffff
			if idx >= uint64(len(m.dict)) {
				return corrupt("dict index %d past the dict's %d values", idx, len(m.dict))
			}
			primary[i] = m.dict[idx]
		}
	}
	putNumbers(t, primary, dst)
	return nil
}

// floatMult64 is float-mult's join for float64: primary holds the
// multipliers as int-float latents, secondary the adjustments in ULPs.
func floatMult64(primary, secondary []uint64, base float64) {
	const c = 1 << 63
	const gpi = 1 << 53
	gpiBits := math.Float64bits(gpi)
	for i, l := range primary {
		var f float64
		if l >= c {
			if a := l - c; a < gpi {
				f = float64(a)
			} else {
				f = math.Float64frombits(gpiBits + a - gpi)
			}
		} else {
			if a := c - 1 - l; a < gpi {
				f = -float64(a)
			} else {
				f = -math.Float64frombits(gpiBits + a - gpi)
			}
		}
		bits := math.Float64bits(f * base)
		// to the ordered latent, plus the adjustment and the centre
		if bits&c != 0 {
			bits = ^bits
		} else {
			bits ^= c
		}
		primary[i] = bits + secondary[i] + c
	}
}

// putNumbers writes latents as little-endian numbers of type t, through
// fromOrdered, one loop per width and kind.
func putNumbers(t numType, l []uint64, dst []byte) {
	switch t.bits {
	case 8:
		x := byte(0)
		if t.kind == 'i' {
			x = 0x80
		}
		for i, v := range l {
			dst[i] = byte(v) ^ x
		}
	case 16:
		dst = dst[:2*len(l)]
		switch t.kind {
		case 'f':
			for i, v := range l {
				binary.LittleEndian.PutUint16(dst[2*i:], uint16(fromOrdered(t, v)))
			}
		default:
			x := uint16(0)
			if t.kind == 'i' {
				x = 0x8000
			}
			for i, v := range l {
				binary.LittleEndian.PutUint16(dst[2*i:], uint16(v)^x)
			}
		}
	case 32:
		dst = dst[:4*len(l)]
		switch t.kind {
		case 'f':
			for i, v := range l {
				u := uint32(v)
				if u&(1<<31) != 0 {
					u ^= 1 << 31
				} else {
					u = ^u
				}
				binary.LittleEndian.PutUint32(dst[4*i:], u)
			}
		default:
			x := uint32(0)
			if t.kind == 'i' {
				x = 1 << 31
			}
			for i, v := range l {
				binary.LittleEndian.PutUint32(dst[4*i:], uint32(v)^x)
			}
		}
	default:
		dst = dst[:8*len(l)]
		switch t.kind {
		case 'f':
			for i, v := range l {
				if v&(1<<63) != 0 {
					v ^= 1 << 63
				} else {
					v = ^v
				}
				binary.LittleEndian.PutUint64(dst[8*i:], v)
			}
		default:
			x := uint64(0)
			if t.kind == 'i' {
				x = 1 << 63
			}
			for i, v := range l {
				binary.LittleEndian.PutUint64(dst[8*i:], v^x)
			}
		}
	}
}
