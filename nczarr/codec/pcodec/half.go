package pcodec

import "math"

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
