package pcodec

import "math"

// halfToFloat64 converts IEEE binary16 bits exactly.
func halfToFloat64(h uint16) float64 {
	sign := uint64(h>>15) << 63
	exp := int(h>>10) & 0x1f
	man := uint64(h & 0x3ff)
	switch exp {
	case 0:
		return math.Float64frombits(sign | math.Float64bits(math.Ldexp(float64(man), -24)))
	case 31:
		return math.Float64frombits(sign | 0x7ff0000000000000 | man<<42)
	}
	return math.Float64frombits(sign | uint64(exp-15+1023)<<52 | man<<42)
}

// float64ToHalf rounds f to the nearest binary16, ties to even, as the
// half crate that pco uses does; NaN stays NaN.
func float64ToHalf(f float64) uint16 {
	bits := math.Float64bits(f)
	sign := uint16(bits>>48) & 0x8000
	if math.IsNaN(f) {
		return sign | 0x7e00 | uint16((bits>>42)&0x3ff)
	}
	a := math.Abs(f)
	if a >= 65520 { // halfway between the largest half and 2^16 rounds up
		return sign | 0x7c00
	}
	if a < 0x1p-14 {
		return sign | uint16(math.RoundToEven(a*0x1p24))
	}
	_, exp := math.Frexp(a) // a = frac * 2^exp, frac in [0.5, 1)
	e := exp - 1
	m := math.RoundToEven((math.Ldexp(a, -e) - 1) * 1024)
	if m == 1024 {
		e, m = e+1, 0
	}
	return sign | uint16(e+15)<<10 | uint16(m)
}
