package filters

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/nczarrfs/nczarrfs/internal/npdtype"
	"github.com/nczarrfs/nczarrfs/nczarr/codec/internal/half"
)

// dtype is a numpy dtype as numcodecs filters name it in their
// configuration ("<f8", "|u1", ">i2", "|b1", "<M8[ns]", "<U5").
type dtype struct {
	kind byte // 'b' bool, 'i' signed, 'u' unsigned, 'f' float, 'U' unicode
	size int  // bytes per element
	big  bool // big-endian
	str  string
}

// parseDtype reads a numpy dtype string (see npdtype) and keeps the kinds a
// filter can handle. Datetimes and timedeltas are 64-bit integers to every
// filter.
func parseDtype(s string) (dtype, error) {
	p, err := npdtype.Parse(s)
	if err != nil {
		return dtype{str: s}, err
	}
	d := dtype{kind: p.Kind, size: p.Size, big: p.BigEndian, str: s}
	switch p.Kind {
	case 'b', 'i', 'u', 'f', 'U':
	case 'M', 'm':
		d.kind = 'i'
	default:
		return d, fmt.Errorf("dtype %q: unsupported by this filter", s)
	}
	return d, nil
}

// numeric reports whether d is bool, integer or float.
func (d dtype) numeric() bool {
	return d.kind == 'b' || d.kind == 'i' || d.kind == 'u' || d.kind == 'f'
}

func (d dtype) order() binary.ByteOrder {
	if d.big {
		return binary.BigEndian
	}
	return binary.LittleEndian
}

// bits loads the raw bits of the element at b.
func (d dtype) bits(b []byte) uint64 {
	o := d.order()
	switch d.size {
	case 1:
		return uint64(b[0])
	case 2:
		return uint64(o.Uint16(b))
	case 4:
		return uint64(o.Uint32(b))
	}
	return o.Uint64(b)
}

// putBits stores the low d.size bytes of v at b.
func (d dtype) putBits(b []byte, v uint64) {
	o := d.order()
	switch d.size {
	case 1:
		b[0] = byte(v)
	case 2:
		o.PutUint16(b, uint16(v))
	case 4:
		o.PutUint32(b, uint32(v))
	default:
		o.PutUint64(b, v)
	}
}

// num is one element's value: a float, or an integer (int64 bits, read as
// unsigned when uns is set).
type num struct {
	f     float64
	i     int64
	float bool
	uns   bool
	half  bool // f came from a float16, which numpy casts with scalar code
}

// load reads the element at b.
func (d dtype) load(b []byte) num {
	v := d.bits(b)
	switch d.kind {
	case 'f':
		switch d.size {
		case 2:
			return num{f: half.ToFloat64(uint16(v)), float: true, half: true}
		case 4:
			return num{f: float64(math.Float32frombits(uint32(v))), float: true}
		}
		return num{f: math.Float64frombits(v), float: true}
	case 'i':
		shift := 64 - 8*uint(d.size)
		return num{i: int64(v<<shift) >> shift}
	case 'b':
		if v != 0 {
			v = 1
		}
	}
	return num{i: int64(v), uns: true}
}

// store writes x at b, converted the way numpy's astype converts on x86-64
// (integers wrap; floats truncate toward zero, out-of-range values taking
// the bit patterns the hardware conversion gives).
func (d dtype) store(b []byte, x num) {
	switch d.kind {
	case 'b':
		var v uint64
		if (x.float && x.f != 0) || (!x.float && x.i != 0) {
			v = 1
		}
		b[0] = byte(v)
	case 'f':
		f := x.f
		if !x.float {
			if x.uns {
				f = float64(uint64(x.i))
			} else {
				f = float64(x.i)
			}
		}
		switch d.size {
		case 2:
			if !x.float {
				// numpy converts integers to half through float32.
				if x.uns {
					f = float64(float32(uint64(x.i)))
				} else {
					f = float64(float32(x.i))
				}
			}
			d.putBits(b, uint64(float64ToHalf(f)))
		case 4:
			d.putBits(b, uint64(math.Float32bits(float32(f))))
		default:
			d.putBits(b, math.Float64bits(f))
		}
	default: // 'i', 'u'
		if !x.float {
			d.putBits(b, uint64(x.i))
			return
		}
		if x.half && d.size == 4 && d.kind == 'u' {
			// numpy's scalar float16 loop converts through int64.
			d.putBits(b, uint64(cvtt64(x.f)))
			return
		}
		d.putBits(b, floatToIntBits(x.f, d.size, d.kind == 'u'))
	}
}

// floatToIntBits converts f to an integer of size bytes the way numpy
// 1.24 does on x86-64: a truncating 32-bit conversion for types of up to
// 32 bits (unsigned 32-bit values at and above 2^31 shifted down by 2^31
// first), a 64-bit one for int64, and for uint64 the same shift by 2^63.
// Out-of-range values, NaN and infinities give x86's "integer indefinite"
// results; numcodecs' tests pin them down.
func floatToIntBits(f float64, size int, unsigned bool) uint64 {
	switch {
	case size < 4 || (size == 4 && !unsigned):
		return uint64(cvtt32(f))
	case size == 4:
		if f >= 2147483648.0 {
			return uint64(uint32(cvtt32(f-2147483648.0)) ^ (1 << 31))
		}
		return uint64(cvtt32(f))
	case !unsigned:
		return uint64(cvtt64(f))
	}
	if f >= 9223372036854775808.0 {
		return uint64(cvtt64(f-9223372036854775808.0)) ^ (1 << 63)
	}
	return uint64(cvtt64(f))
}

// cvtt32 and cvtt64 mirror CVTTSD2SI: truncation, and the minimum integer
// for NaN or anything out of range.
func cvtt32(f float64) int32 {
	if !(f > -2147483649.0 && f < 2147483648.0) {
		return math.MinInt32
	}
	return int32(f)
}

func cvtt64(f float64) int64 {
	if !(f >= -9223372036854775808.0 && f < 9223372036854775808.0) {
		return math.MinInt64
	}
	return int64(f)
}

// float64ToHalf rounds f to the nearest binary16 (ties to even), as numpy
// does; NaN keeps the top of its payload.
func float64ToHalf(f float64) uint16 {
	bits := math.Float64bits(f)
	sign := uint16(bits>>48) & 0x8000
	if math.IsNaN(f) {
		h := uint16(0x7c00 + (bits&0xfffffffffffff)>>42)
		if h == 0x7c00 {
			h++
		}
		return sign | h
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
	if e > 15 {
		return sign | 0x7c00
	}
	return sign | uint16(e+15)<<10 | uint16(m)
}

// roundHalf rounds a float32 result to binary16 and back, the way numpy
// evaluates float16 arithmetic.
func roundHalf(f float64) float64 { return half.ToFloat64(float64ToHalf(f)) }

// castAll converts n elements from src (type from) to dst (type to).
func castAll(dst []byte, to dtype, src []byte, from dtype) {
	n := len(src) / from.size
	if from.str == to.str || (from.kind == to.kind && from.size == to.size && from.big == to.big) {
		copy(dst, src[:n*from.size])
		return
	}
	for i := 0; i < n; i++ {
		to.store(dst[i*to.size:], from.load(src[i*from.size:]))
	}
}
