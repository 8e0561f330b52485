package nczarr

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// DType is a Zarr v2 "simple" data type such as "<i4", ">f8", "|S5" or
// "<M8[ns]". Structured (record) types are not supported.
type DType struct {
	Str       string // as written in .zarray
	Kind      byte   // numpy kind: b i u f c M m S U V
	BigEndian bool
	Size      int // bytes per element as stored
}

// ParseDType parses a .zarray "dtype" member.
func ParseDType(raw json.RawMessage) (DType, error) {
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return DType{}, fmt.Errorf("dtype %s: structured dtypes are not supported", raw)
	}
	if len(s) < 3 {
		return DType{}, fmt.Errorf("dtype %q: too short", s)
	}
	d := DType{Str: s, Kind: s[1]}
	switch s[0] {
	case '<', '|', '=':
	case '>':
		d.BigEndian = true
	default:
		return DType{}, fmt.Errorf("dtype %q: unknown byte order %q", s, s[0])
	}
	num := s[2:]
	if d.Kind == 'M' || d.Kind == 'm' {
		// datetime64/timedelta64 carry a unit: "<M8[ns]".
		if i := strings.IndexByte(num, '['); i >= 0 && strings.HasSuffix(num, "]") {
			num = num[:i]
		}
	}
	n, err := strconv.Atoi(num)
	if err != nil || n <= 0 || n > 1<<20 {
		return DType{}, fmt.Errorf("dtype %q: bad size", s)
	}
	d.Size = n
	ok := false
	switch d.Kind {
	case 'b':
		ok = n == 1
	case 'i', 'u':
		ok = n == 1 || n == 2 || n == 4 || n == 8
	case 'f':
		ok = n == 2 || n == 4 || n == 8
	case 'c':
		ok = n == 8 || n == 16
	case 'M', 'm':
		ok = n == 8
	case 'S', 'V':
		ok = true
	case 'U':
		d.Size = 4 * n
		ok = true
	}
	if !ok {
		return DType{}, fmt.Errorf("dtype %q is not supported", s)
	}
	return d, nil
}

// swapUnit is the size of the units whose bytes are reversed to turn a
// big-endian element into a little-endian one; 0 when nothing is swapped.
func (d DType) swapUnit() int {
	if !d.BigEndian {
		return 0
	}
	switch d.Kind {
	case 'i', 'u', 'f', 'M', 'm':
		if d.Size > 1 {
			return d.Size
		}
	case 'c':
		return d.Size / 2
	case 'U':
		return 4
	}
	return 0
}

// swapBytes reverses every unit-byte group of b in place.
func swapBytes(b []byte, unit int) {
	switch unit {
	case 2:
		for i := 0; i+1 < len(b); i += 2 {
			b[i], b[i+1] = b[i+1], b[i]
		}
	case 4:
		for i := 0; i+3 < len(b); i += 4 {
			binary.LittleEndian.PutUint32(b[i:], binary.BigEndian.Uint32(b[i:]))
		}
	case 8:
		for i := 0; i+7 < len(b); i += 8 {
			binary.LittleEndian.PutUint64(b[i:], binary.BigEndian.Uint64(b[i:]))
		}
	}
}

// encodeFill returns one element of fill value v (decoded from JSON with
// UseNumber) in the output form of `data`: little-endian, size bytes.
// For an NCZarr char (size 1 with kind U or S) the first byte of the string
// is used.
func (d DType) encodeFill(v any, size int) ([]byte, error) {
	out := make([]byte, size)
	if v == nil {
		return out, nil
	}
	bad := func() ([]byte, error) {
		return nil, fmt.Errorf("fill_value %v does not fit dtype %s", v, d.Str)
	}
	switch d.Kind {
	case 'b':
		switch x := v.(type) {
		case bool:
			if x {
				out[0] = 1
			}
		case json.Number:
			if x.String() != "0" {
				out[0] = 1
			}
		default:
			return bad()
		}
	case 'i', 'M', 'm':
		n, ok := v.(json.Number)
		if !ok {
			if s, isStr := v.(string); isStr && (d.Kind == 'M' || d.Kind == 'm') && s == "NaT" {
				n = json.Number(strconv.FormatInt(math.MinInt64, 10))
			} else {
				return bad()
			}
		}
		i, err := strconv.ParseInt(n.String(), 10, 64)
		if err != nil {
			f, ferr := strconv.ParseFloat(n.String(), 64)
			if ferr != nil || f != math.Trunc(f) {
				return bad()
			}
			i = int64(f)
		}
		putUint(out, uint64(i))
	case 'u':
		n, ok := v.(json.Number)
		if !ok {
			return bad()
		}
		u, err := strconv.ParseUint(n.String(), 10, 64)
		if err != nil {
			// netcdf-c writes some unsigned fills as negative numbers.
			i, ierr := strconv.ParseInt(n.String(), 10, 64)
			if ierr != nil {
				return bad()
			}
			u = uint64(i)
		}
		putUint(out, u)
	case 'f':
		f, err := jsonFloat(v)
		if err != nil {
			return bad()
		}
		putFloat(out, f)
	case 'c':
		parts, ok := v.([]any)
		if !ok || len(parts) != 2 {
			return bad()
		}
		re, err1 := jsonFloat(parts[0])
		im, err2 := jsonFloat(parts[1])
		if err1 != nil || err2 != nil {
			return bad()
		}
		putFloat(out[:size/2], re)
		putFloat(out[size/2:], im)
	case 'S', 'V':
		s, ok := v.(string)
		if !ok {
			if n, isNum := v.(json.Number); isNum && size == 1 {
				// NCZarr char fill written as a number.
				i, err := strconv.ParseInt(n.String(), 10, 64)
				if err != nil {
					return bad()
				}
				out[0] = byte(i)
				return out, nil
			}
			return bad()
		}
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			b = []byte(s) // NCZarr writes char fills as plain text
		}
		copy(out, b)
	case 'U':
		s, ok := v.(string)
		if !ok {
			return bad()
		}
		if size == 1 { // NCZarr char
			if s != "" {
				out[0] = s[0]
			}
			return out, nil
		}
		o := 0
		for _, r := range s {
			if o+4 > len(out) {
				break
			}
			if r == utf8.RuneError {
				r = 0xFFFD
			}
			binary.LittleEndian.PutUint32(out[o:], uint32(r))
			o += 4
		}
	default:
		return bad()
	}
	return out, nil
}

// putUint stores the low len(b) bytes of u little-endian.
func putUint(b []byte, u uint64) {
	for i := range b {
		b[i] = byte(u >> (8 * i))
	}
}

// putFloat stores f as a little-endian IEEE float of len(b) bytes.
func putFloat(b []byte, f float64) {
	switch len(b) {
	case 2:
		binary.LittleEndian.PutUint16(b, float16Bits(f))
	case 4:
		binary.LittleEndian.PutUint32(b, math.Float32bits(float32(f)))
	case 8:
		binary.LittleEndian.PutUint64(b, math.Float64bits(f))
	}
}

// quietNaN is the NaN numpy writes (0x7ff8000000000000); Go's math.NaN()
// has another payload, which would show in the bytes of data.
var quietNaN = math.Float64frombits(0x7ff8000000000000)

// jsonFloat reads a float fill value: a number or one of the strings
// "NaN", "Infinity", "-Infinity" that Zarr uses for non-finite values.
func jsonFloat(v any) (float64, error) {
	switch x := v.(type) {
	case json.Number:
		return strconv.ParseFloat(x.String(), 64)
	case string:
		switch x {
		case "NaN", "nan":
			return quietNaN, nil
		case "Infinity", "inf":
			return math.Inf(1), nil
		case "-Infinity", "-inf":
			return math.Inf(-1), nil
		}
	}
	return 0, fmt.Errorf("not a float: %v", v)
}

// float16Bits converts f to IEEE 754 binary16, rounding to nearest even.
func float16Bits(f float64) uint16 {
	bits := math.Float32bits(float32(f))
	sign := uint16(bits>>16) & 0x8000
	exp := int((bits >> 23) & 0xff)
	mant := bits & 0x7fffff
	switch {
	case exp == 0xff: // Inf or NaN
		if mant != 0 {
			return sign | 0x7e00
		}
		return sign | 0x7c00
	case exp-127+15 >= 0x1f: // overflow
		return sign | 0x7c00
	case exp-127+15 <= 0: // subnormal or zero in half precision
		e := exp - 127 + 15
		if e < -10 {
			return sign
		}
		m := mant | 0x800000
		shift := uint(14 - e)
		half := uint32(1) << (shift - 1)
		r := m >> shift
		rem := m & ((1 << shift) - 1)
		if rem > half || (rem == half && r&1 == 1) {
			r++
		}
		return sign | uint16(r)
	}
	e := uint16(exp - 127 + 15)
	r := mant >> 13
	rem := mant & 0x1fff
	h := sign | e<<10 | uint16(r)
	if rem > 0x1000 || (rem == 0x1000 && r&1 == 1) {
		h++ // may carry into the exponent, which is still right
	}
	return h
}
