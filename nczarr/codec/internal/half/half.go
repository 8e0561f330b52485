// Package half converts IEEE 754 binary16 (float16) bits, for the codecs
// that read them (the filters' fixed-scale offset, pcodec's f16).
package half

import "math"

// ToFloat64 converts binary16 bits to the float64 of the same value,
// exactly: subnormals, infinities, and NaN with its payload.
func ToFloat64(h uint16) float64 {
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
