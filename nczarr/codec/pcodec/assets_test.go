package pcodec

import (
	"encoding/binary"
	"math"

	"github.com/nczarrfs/nczarrfs/nczarr/codec/internal/half"
)

// assetWant gives, for each of pco's compatibility assets (pco/assets/*.pco
// in the pcodec repository), the numbers pco's own compatibility test
// (pco/src/tests/compatibility.rs) compresses into it and expects back, as
// little-endian bytes. The generators are restated here; the files are
// not in this repository.
var assetWant = map[string]func() []byte{
	"v0_0_0_classic.pco": func() []byte {
		var v []int32
		for i := int32(0); i < 1000; i++ {
			v = append(v, i)
		}
		for i := int32(2000); i < 3000; i++ {
			v = append(v, i)
		}
		return le(v)
	},
	"v0_0_0_delta_float_mult.pco": func() []byte {
		v := make([]float32, 2000)
		for i := range v {
			v[i] = float32(i)
		}
		v[1337] += 1.001
		return le(v)
	},
	"v0_1_0_delta_int_mult.pco": func() []byte {
		v := make([]int32, 2000)
		for i := range v {
			v[i] = int32(i) * 1000
		}
		v[1337]--
		return le(v)
	},
	"v0_1_1_standalone_versioned.pco": func() []byte { return []byte{} },
	"v0_3_0_f16.pco": func() []byte {
		return le(pseudorandomF16s())
	},
	"v0_3_0_float_quant.pco": func() []byte {
		var v []float32
		for _, h := range pseudorandomF16s() {
			x := float32(half.ToFloat64(h))
			if math.Abs(float64(x)) < 1.1 {
				x = math.Float32frombits(math.Float32bits(x) + 1)
			}
			v = append(v, x)
		}
		return le(v)
	},
	"v0_4_0_lookback_delta.pco": func() []byte {
		base := []uint32{1121827092, 729032807, 3968137854, 2875434067, 3775328080,
			431649926, 1048116090, 1906978350, 14752788, 1180462487}
		var v []uint32
		for range 100 {
			v = append(v, base...)
		}
		return le(v)
	},
	"v0_4_5_uniform_type.pco":  func() []byte { return le([]uint32{1, 2, 3, 4, 5}) },
	"v0_4_8_minor_version.pco": func() []byte { return le([]uint32{1, 2, 3, 4, 5}) },
	"v1_0_0_dict.pco": func() []byte {
		var v []uint64
		for range 1000 {
			v = append(v, 8924659283, 234897984367, 9827358920)
		}
		return le(v)
	},
	"v1_0_0_conv1.pco": func() []byte {
		var xm1, xm2 float32
		var v []int32
		for i := range 2000 {
			x := float32(xm1 * 1.99)
			x = float32(x - xm2)
			x = float32(x + float32((i*47)%77-38))
			v = append(v, satInt32(float32(x+10000)))
			xm2, xm1 = xm1, x
		}
		return le(v)
	},
	"v1_0_0_u8.pco": func() []byte {
		var v []byte
		for i := 0; i <= 64; i++ {
			v = append(v, byte(i))
		}
		for i := 192; i <= 255; i++ {
			v = append(v, byte(i))
		}
		return v
	},
	"v1_0_0_i8.pco": func() []byte {
		var v []byte
		for i := -128; i <= -64; i++ {
			v = append(v, byte(int8(i)))
		}
		for i := 64; i <= 127; i++ {
			v = append(v, byte(i))
		}
		return v
	},
}

// pseudorandomF16s is compatibility.rs's generate_pseudorandom_f16s:
// floats spread over (-2, -1] and [1, 2), in float32 arithmetic.
func pseudorandomF16s() []uint16 {
	num := float32(0.1)
	var v []uint16
	for range 2000 {
		num = float32(num * 77.7)
		num = float32(num + 0.1)
		num = float32(math.Mod(float64(num), 2))
		if num < 1 {
			v = append(v, float64ToHalf(float64(float32(-1-num))))
		} else {
			v = append(v, float64ToHalf(float64(num)))
		}
	}
	return v
}

// satInt32 converts as Rust's "as i32" does: toward zero, saturating.
func satInt32(x float32) int32 {
	switch {
	case x != x:
		return 0
	case x >= math.MaxInt32:
		return math.MaxInt32
	case x <= math.MinInt32:
		return math.MinInt32
	}
	return int32(x)
}

// le encodes numbers little-endian.
func le[T any](v []T) []byte {
	b, err := binary.Append(nil, binary.LittleEndian, v)
	if err != nil {
		panic(err)
	}
	return b
}
