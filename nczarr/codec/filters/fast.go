package filters

import (
	"encoding/binary"
	"math"
)

// Fast paths for the common little-endian cases. Each returns false when
// it does not apply, and then the generic element-by-element code runs;
// both give the same bytes (the reference tests run both).

var le = binary.LittleEndian

// littleNative reports whether d is stored little-endian or has one byte.
func littleNative(d dtype) bool { return !d.big || d.size == 1 }

// fastDelta undoes a delta whose encoded and decoded types are the same
// little-endian integer or float type.
func fastDelta(out, src []byte, n int, dec, enc dtype) bool {
	if dec.kind != enc.kind || dec.size != enc.size || !littleNative(dec) || !littleNative(enc) {
		return false
	}
	switch {
	case dec.kind == 'i' || dec.kind == 'u':
		switch dec.size {
		case 1:
			var acc byte
			for i := 0; i < n; i++ {
				acc += src[i]
				out[i] = acc
			}
		case 2:
			var acc uint16
			for i := 0; i < n; i++ {
				acc += le.Uint16(src[2*i:])
				le.PutUint16(out[2*i:], acc)
			}
		case 4:
			var acc uint32
			for i := 0; i < n; i++ {
				acc += le.Uint32(src[4*i:])
				le.PutUint32(out[4*i:], acc)
			}
		default:
			var acc uint64
			for i := 0; i < n; i++ {
				acc += le.Uint64(src[8*i:])
				le.PutUint64(out[8*i:], acc)
			}
		}
		return true
	case dec.kind == 'f' && dec.size == 8:
		var acc float64
		for i := 0; i < n; i++ {
			acc += math.Float64frombits(le.Uint64(src[8*i:]))
			le.PutUint64(out[8*i:], math.Float64bits(acc))
		}
		return true
	case dec.kind == 'f' && dec.size == 4:
		var acc float32
		for i := 0; i < n; i++ {
			acc += math.Float32frombits(le.Uint32(src[4*i:]))
			le.PutUint32(out[4*i:], math.Float32bits(acc))
		}
		return true
	}
	return false
}

// fastFloats loads n elements of a little-endian integer or float type as
// float64 into f, reporting false for other types.
func fastFloats(f []float64, src []byte, n int, enc dtype) bool {
	if !littleNative(enc) {
		return false
	}
	switch {
	case enc.kind == 'u' && enc.size == 1:
		for i := 0; i < n; i++ {
			f[i] = float64(src[i])
		}
	case enc.kind == 'i' && enc.size == 1:
		for i := 0; i < n; i++ {
			f[i] = float64(int8(src[i]))
		}
	case enc.kind == 'u' && enc.size == 2:
		for i := 0; i < n; i++ {
			f[i] = float64(le.Uint16(src[2*i:]))
		}
	case enc.kind == 'i' && enc.size == 2:
		for i := 0; i < n; i++ {
			f[i] = float64(int16(le.Uint16(src[2*i:])))
		}
	case enc.kind == 'u' && enc.size == 4:
		for i := 0; i < n; i++ {
			f[i] = float64(le.Uint32(src[4*i:]))
		}
	case enc.kind == 'i' && enc.size == 4:
		for i := 0; i < n; i++ {
			f[i] = float64(int32(le.Uint32(src[4*i:])))
		}
	case enc.kind == 'i' && enc.size == 8:
		for i := 0; i < n; i++ {
			f[i] = float64(int64(le.Uint64(src[8*i:])))
		}
	case enc.kind == 'f' && enc.size == 4:
		for i := 0; i < n; i++ {
			f[i] = float64(math.Float32frombits(le.Uint32(src[4*i:])))
		}
	case enc.kind == 'f' && enc.size == 8:
		for i := 0; i < n; i++ {
			f[i] = math.Float64frombits(le.Uint64(src[8*i:]))
		}
	default:
		return false
	}
	return true
}

// fastStoreFloats writes float64 values as a little-endian float type,
// reporting false for other types.
func fastStoreFloats(out []byte, f []float64, dec dtype) bool {
	if dec.kind != 'f' || dec.big {
		return false
	}
	switch dec.size {
	case 8:
		for i, v := range f {
			le.PutUint64(out[8*i:], math.Float64bits(v))
		}
	case 4:
		for i, v := range f {
			le.PutUint32(out[4*i:], math.Float32bits(float32(v)))
		}
	default:
		return false
	}
	return true
}
