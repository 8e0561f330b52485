// Package dtype is the model of Zarr's data types, v2 (numpy's type
// strings, "<i4", "|S5", "<M8[ns]") and v3 (core names and the
// zarr-python 3 and zarr-extensions types), and of their fill values in
// the output form the read path serves. It knows nothing of stores.
package dtype

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"

	"github.com/nczarrfs/nczarrfs/internal/npdtype"
)

// DType is a data type: a Zarr v2 "simple" type such as "<i4", ">f8",
// "|S5", "<M8[ns]" or "|O" (variable-length objects; v2 structured types
// are not supported), or a Zarr v3 one (ParseV3), spelled as numpy does.
type DType struct {
	Str       string // as written in .zarray; for v3, numpy's spelling (Numpy)
	Kind      byte   // numpy kind: b i u f c M m S U V O
	BigEndian bool
	Size      int // bytes per element as stored; 0 for "|O"
	// Unit is a Zarr v3 datetime64 or timedelta64 unit, with its scale
	// ("ns", "10us"); "" for generic and for other kinds.
	Unit string
	// Fields are the fields of a Zarr v3 struct, in order and packed;
	// nil for other types.
	Fields []Field
}

// Parse parses a .zarray "dtype" member.
func Parse(raw json.RawMessage) (DType, error) {
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return DType{}, fmt.Errorf("dtype %s: structured dtypes are not supported", raw)
	}
	p, err := npdtype.Parse(s)
	if err != nil {
		return DType{}, err
	}
	return DType{Str: s, Kind: p.Kind, BigEndian: p.BigEndian, Size: p.Size}, nil
}

// SwapUnit is the size of the units whose bytes are reversed to turn a
// big-endian element into a little-endian one; 0 when nothing is swapped.
func (d DType) SwapUnit() int {
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

// EncodeFill returns one element of fill value v (decoded from JSON with
// UseNumber) in the output form of `data`: little-endian, size bytes.
//
// It accepts what zarr-python 2 reads (Metadata2.decode_fill_value, then
// numpy's conversion to the dtype), since older writers stored fills that
// today's would not: numbers for string dtypes ("fill_value": 0 for "<U4"
// is the string "0"), numeric strings and booleans for numbers, base64 or
// plain text for "|S", base64 for "|V", "NaN", "Infinity" and "-Infinity"
// for floats, [re, im] for complex numbers, "NaT" for datetimes. Integers
// out of the dtype's range wrap as numpy 1.24 wraps them. For an NCZarr
// char (size 1 with kind U) the first byte of the string, or the number,
// is used.
func (d DType) EncodeFill(v any, size int) ([]byte, error) {
	out := make([]byte, size)
	if v == nil {
		return out, nil
	}
	var ok bool
	switch d.Kind {
	case 'b':
		ok = fillBool(out, v)
	case 'i', 'u':
		ok = fillInt(out, v, d.Kind == 'u')
	case 'M', 'm':
		ok = fillTime(out, v)
	case 'f':
		var f float64
		if f, ok = fillFloat(v); ok {
			putFloat(out, f)
		}
	case 'c':
		ok = fillComplex(out, v)
	case 'S':
		ok = fillBytes(out, v)
	case 'V':
		var s string
		if s, ok = v.(string); ok {
			var b []byte
			b, ok = Base64(s)
			copy(out, b)
		}
	case 'U':
		ok = fillUnicode(out, v)
	}
	if !ok {
		return nil, fmt.Errorf("fill_value %v does not fit dtype %s", v, d.Str)
	}
	return out, nil
}

// fillBool converts like numpy's bool(): numbers are true unless zero,
// strings unless empty.
func fillBool(out []byte, v any) bool {
	var t bool
	switch x := v.(type) {
	case bool:
		t = x
	case json.Number:
		f, err := strconv.ParseFloat(x.String(), 64)
		if err != nil && !errors.Is(err, strconv.ErrRange) {
			return false
		}
		t = f != 0
	case string:
		t = x != ""
	default:
		return false
	}
	if t {
		out[0] = 1
	}
	return true
}

// fillInt converts a JSON integer, a float (truncated), a boolean, or a
// string Python's int() reads, and stores its low len(out) bytes.
func fillInt(out []byte, v any, unsigned bool) bool {
	var u uint64
	switch x := v.(type) {
	case bool:
		if x {
			u = 1
		}
	case json.Number:
		s := x.String()
		if !isJSONInt(s) {
			f, err := strconv.ParseFloat(s, 64)
			if err != nil || math.IsNaN(f) || f <= -0x1p63 || f >= 0x1p63 {
				return false // numpy leaves these undefined
			}
			u = uint64(int64(f))
			break
		}
		var ok bool
		if u, ok = intBits(s, unsigned); !ok {
			return false
		}
	case string:
		s, ok := pyNumberText(x, false)
		if !ok {
			return false
		}
		if u, ok = intBits(s, unsigned); !ok {
			return false
		}
	default:
		return false
	}
	putUint(out, u)
	return true
}

// intBits parses a decimal integer that numpy accepts for an integer
// dtype, which must fit int64, or uint64 for an unsigned dtype.
func intBits(s string, unsigned bool) (uint64, bool) {
	if i, err := strconv.ParseInt(s, 10, 64); err == nil {
		return uint64(i), true
	}
	if !unsigned {
		return 0, false
	}
	u, err := strconv.ParseUint(strings.TrimPrefix(s, "+"), 10, 64)
	return u, err == nil
}

// isJSONInt reports whether a JSON number has no fraction or exponent,
// which Python's json module reads as an int.
func isJSONInt(s string) bool { return !strings.ContainsAny(s, ".eE") }

// fillTime takes a JSON integer or "NaT".
func fillTime(out []byte, v any) bool {
	switch x := v.(type) {
	case json.Number:
		if !isJSONInt(x.String()) {
			return false
		}
		i, err := strconv.ParseInt(x.String(), 10, 64)
		if err != nil {
			return false
		}
		putUint(out, uint64(i))
		return true
	case string:
		if strings.EqualFold(x, "NaT") {
			putUint(out, 1<<63)
			return true
		}
	}
	return false
}

// fillFloat reads "NaN", "Infinity", "-Infinity", a number, a boolean, or
// a string Python's float() reads.
func fillFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case json.Number:
		f, err := strconv.ParseFloat(x.String(), 64)
		if err != nil && !errors.Is(err, strconv.ErrRange) {
			return 0, false
		}
		return f, true
	case bool:
		if x {
			return 1, true
		}
		return 0, true
	case string:
		switch x {
		case "NaN":
			return quietNaN, true
		case "Infinity":
			return math.Inf(1), true
		case "-Infinity":
			return math.Inf(-1), true
		}
		s, ok := pyNumberText(x, true)
		if !ok {
			return 0, false
		}
		sign := 1.0
		if t := strings.TrimLeft(s, "+-"); strings.EqualFold(t, "nan") {
			if s[0] == '-' {
				sign = -1
			}
			return math.Copysign(quietNaN, sign), true
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil && !errors.Is(err, strconv.ErrRange) {
			return 0, false
		}
		return f, true
	}
	return 0, false
}

// pyNumberText checks a string the way Python's int() (or float(), when
// float is set) reads it: surrounding white space, an optional sign, digits
// with single underscores between them (and for float a fraction, an
// exponent, or inf, infinity, nan in any case). It returns the number
// without white space and underscores.
func pyNumberText(s string, float bool) (string, bool) {
	s = strings.TrimSpace(s)
	body := strings.TrimLeft(s, "+-")
	if len(s)-len(body) > 1 || body == "" {
		return "", false
	}
	if float {
		switch strings.ToLower(body) {
		case "inf", "infinity", "nan":
			return s, true
		}
	}
	var b strings.Builder
	prevDigit := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9':
			prevDigit = true
		case c == '_':
			if !prevDigit || i+1 == len(s) || s[i+1] < '0' || s[i+1] > '9' {
				return "", false
			}
			continue
		case c == '+' || c == '-':
			if i != 0 && !(float && (s[i-1] == 'e' || s[i-1] == 'E')) {
				return "", false
			}
			prevDigit = false
		case float && (c == '.' || c == 'e' || c == 'E'):
			prevDigit = false
		default:
			return "", false
		}
		b.WriteByte(c)
	}
	return b.String(), true
}

// fillComplex reads [re, im], each part as a float fill, and combines them
// as zarr-python does (re + 1j*im), so a non-finite imaginary part makes
// the real part NaN.
func fillComplex(out []byte, v any) bool {
	parts, ok := v.([]any)
	if !ok || len(parts) < 2 {
		return false
	}
	re, ok1 := fillFloat(parts[0])
	im, ok2 := fillFloat(parts[1])
	if !ok1 || !ok2 {
		return false
	}
	zero := 0.0
	half := len(out) / 2
	if half == 4 { // each part is first a float32
		re, im = float64(float32(re)), float64(float32(im))
	}
	putFloat(out[:half], re+(zero*im-zero))
	putFloat(out[half:], zero+im)
	return true
}

// fillBytes reads a "|S" fill: base64 (decoded as leniently as Python
// does), else ASCII text, or a number or boolean as Python prints it.
func fillBytes(out []byte, v any) bool {
	switch x := v.(type) {
	case string:
		b, ok := Base64(x)
		if !ok {
			for i := 0; i < len(x); i++ {
				if x[i] >= 0x80 {
					return false
				}
			}
			b = []byte(x) // NCZarr writes char fills as plain text
		}
		copy(out, b)
	case json.Number, bool:
		copy(out, pyStr(x))
	default:
		return false
	}
	return true
}

// fillUnicode reads a "<U" fill: a string, or a number or boolean as
// Python prints it, stored as UTF-32LE.
func fillUnicode(out []byte, v any) bool {
	var s string
	switch x := v.(type) {
	case string:
		s = x
	case json.Number:
		if len(out) == 1 { // NCZarr char fill written as a number
			i, err := strconv.ParseInt(x.String(), 10, 64)
			if err != nil {
				return false
			}
			out[0] = byte(i)
			return true
		}
		s = pyStr(x)
	case bool:
		s = pyStr(x)
	default:
		return false
	}
	if len(out) == 1 { // NCZarr char
		if s != "" {
			out[0] = s[0]
		}
		return true
	}
	o := 0
	for _, r := range s {
		if o+4 > len(out) {
			break
		}
		binary.LittleEndian.PutUint32(out[o:], uint32(r))
		o += 4
	}
	return true
}

// pyStr prints a JSON number or boolean as Python's str() prints the value
// its json module reads: ints in decimal, floats in repr form ("1.5",
// "1e+20", "-0.0"), booleans "True" and "False".
func pyStr(v any) string {
	switch x := v.(type) {
	case bool:
		if x {
			return "True"
		}
		return "False"
	case json.Number:
		s := x.String()
		if isJSONInt(s) {
			if i, ok := new(big.Int).SetString(s, 10); ok {
				return i.String()
			}
			return s
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil && !errors.Is(err, strconv.ErrRange) {
			return s
		}
		return pyFloatRepr(f)
	}
	return fmt.Sprint(v)
}

// pyFloatRepr formats f as Python's repr: the shortest digits that read
// back as f, positional for exponents -4 to 15 (always with a fraction),
// scientific otherwise.
func pyFloatRepr(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	case math.IsNaN(f):
		return "nan"
	}
	e := strconv.FormatFloat(f, 'e', -1, 64)
	exp, _ := strconv.Atoi(e[strings.IndexByte(e, 'e')+1:])
	if exp < -4 || exp >= 16 {
		return e
	}
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.Contains(s, ".") {
		s += ".0"
	}
	return s
}

// Base64 decodes standard base64 as Python's base64.standard_b64decode
// does: characters outside the alphabet are skipped, and decoding stops at
// the padding that completes a quantum. It fails for input that does not
// end on a whole quantum and for non-ASCII input.
func Base64(s string) ([]byte, bool) {
	var out []byte
	var acc uint32     // the previous character's value
	quad, pads := 0, 0 // characters into the current quantum, padding seen
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x80 {
			return nil, false
		}
		if c == '=' {
			pads++
			if quad >= 2 && quad+pads >= 4 {
				return out, true
			}
			continue
		}
		var x uint32
		switch {
		case c >= 'A' && c <= 'Z':
			x = uint32(c - 'A')
		case c >= 'a' && c <= 'z':
			x = uint32(c-'a') + 26
		case c >= '0' && c <= '9':
			x = uint32(c-'0') + 52
		case c == '+':
			x = 62
		case c == '/':
			x = 63
		default:
			continue
		}
		switch quad {
		case 1:
			out = append(out, byte(acc<<2|x>>4))
		case 2:
			out = append(out, byte(acc<<4|x>>2))
		case 3:
			out = append(out, byte(acc<<6|x))
		}
		acc, quad, pads = x, (quad+1)%4, 0
	}
	if quad != 0 {
		return nil, false
	}
	return out, true
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
