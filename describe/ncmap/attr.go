package ncmap

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"strconv"

	"github.com/nczarrfs/nczarrfs/describe/netcdf3"
	"github.com/nczarrfs/nczarrfs/nczarr"
)

// Non-numeric attribute types, as nczarr.Attr names them.
const (
	Char   = "char"   // a string: its characters
	String = "string" // a list of strings (netCDF-4 only)
	JSON   = "json"   // any other JSON value: a char attribute of its JSON text
)

// Decode decodes an attribute's JSON value, numbers as json.Number.
func Decode(raw json.RawMessage) (any, error) {
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("more than one JSON value")
	}
	return v, nil
}

// nonFinite reports the spellings of NaN and the infinities in stored
// attribute values (bare ones are quoted on reading, nczarr.Attr.Value).
func nonFinite(s string) bool { return s == "NaN" || s == "Infinity" || s == "-Infinity" }

// AttrType is the netCDF type of attribute a: a numeric type name
// (netcdf3.Type's), or Char, String or JSON. five says whether the
// file can hold the types only CDF-5 has (true for header.cdl's
// netCDF-4 model). why is set, and typ "", when the attribute has no
// form that keeps its values: it is left out and reported.
func AttrType(a nczarr.Attr, five bool) (typ, why string) {
	v, err := Decode(a.Value)
	if err != nil {
		return "", "its value is not JSON"
	}
	if a.DType != "" {
		return declared(a.Type, v, five)
	}
	return inferred(a.Type, v, five)
}

// declared types a value of declared type t: kept, or in a CDF-2 file
// widened to a classic type that holds it.
func declared(t string, v any, five bool) (string, string) {
	nt, ok := netcdf3.TypeOf(t)
	if !ok || nt == netcdf3.Char || five || !nt.CDF5Only() {
		if !ok && t != String && t != JSON {
			return "", fmt.Sprintf("type %s has no netCDF form", t)
		}
		return t, ""
	}
	switch nt {
	case netcdf3.Ubyte:
		return "short", ""
	case netcdf3.Ushort:
		return "int", ""
	case netcdf3.Uint:
		return "double", ""
	}
	// int64, uint64: double when every value is exact.
	for _, e := range asList(v) {
		if i, ok := integer(e); ok && !exactDouble(i) {
			return "", fmt.Sprintf("%s value %s has no exact CDF-2 form", t, i)
		}
	}
	return "double", ""
}

// inferred types a value with no declared type; nczarrType is the type
// package nczarr inferred, which tells a bare NaN (double) from the
// string "NaN" (char).
func inferred(nczarrType string, v any, five bool) (string, string) {
	switch x := v.(type) {
	case string:
		if nonFinite(x) && nczarrType == "double" {
			return "double", ""
		}
		return Char, ""
	case bool, json.Number:
		return numeric([]any{x}, five)
	case []any:
		if len(x) == 0 {
			return JSON, ""
		}
		strs, nums := 0, 0
		for _, e := range x {
			switch y := e.(type) {
			case string:
				if nonFinite(y) {
					nums++ // a NaN among numbers, or of a list of NaNs
				}
				strs++
			case bool, json.Number:
				nums++
			default:
				return JSON, ""
			}
		}
		switch {
		case nums == len(x) && (strs < len(x) || nczarrType == "double"):
			return numeric(x, five)
		case strs == len(x):
			return String, ""
		}
	}
	return JSON, ""
}

// numeric is the smallest of byte, short, int and double that holds
// every element of list exactly: double when any is not an integer.
// When five, int64 and uint64 take double's place for integers.
func numeric(list []any, five bool) (string, string) {
	lo, hi := new(big.Int), new(big.Int)
	for k, e := range list {
		i, ok := integer(e)
		if !ok {
			return "double", ""
		}
		if k == 0 || i.Cmp(lo) < 0 {
			lo.Set(i)
		}
		if k == 0 || i.Cmp(hi) > 0 {
			hi.Set(i)
		}
	}
	for _, r := range []struct {
		name   string
		lo, hi int64
	}{{"byte", math.MinInt8, math.MaxInt8}, {"short", math.MinInt16, math.MaxInt16}, {"int", math.MinInt32, math.MaxInt32}} {
		if lo.Cmp(big.NewInt(r.lo)) >= 0 && hi.Cmp(big.NewInt(r.hi)) <= 0 {
			return r.name, ""
		}
	}
	if five {
		// netCDF-4 and CDF-5 have 64-bit integers: exact, and shown so.
		if lo.IsInt64() && hi.IsInt64() {
			return "int64", ""
		}
		if lo.Sign() >= 0 && hi.IsUint64() {
			return "uint64", ""
		}
	}
	for _, e := range list {
		if i, _ := integer(e); !exactDouble(i) {
			return "", fmt.Sprintf("integer %s has no exact netCDF %s form", i, map[bool]string{true: "CDF-5", false: "CDF-2"}[five])
		}
	}
	return "double", ""
}

// integer is e as an integer: a JSON integer, or a bool as 0 or 1.
func integer(e any) (*big.Int, bool) {
	switch x := e.(type) {
	case bool:
		if x {
			return big.NewInt(1), true
		}
		return big.NewInt(0), true
	case json.Number:
		return new(big.Int).SetString(x.String(), 10)
	}
	return nil, false
}

// exactDouble reports whether a double holds i exactly.
func exactDouble(i *big.Int) bool {
	f, acc := new(big.Float).SetInt(i).Float64()
	return acc == big.Exact && !math.IsInf(f, 0)
}

func asList(v any) []any {
	if l, ok := v.([]any); ok {
		return l
	}
	return []any{v}
}

// Attr is attribute a in a classic file (its name unescaped): typed by
// AttrType, its values encoded big-endian. five says whether the file is
// CDF-5. why is set when it has no classic form, and it is left out.
func Attr(a nczarr.Attr, five bool) (netcdf3.Attr, string) {
	typ, why := AttrType(a, five)
	if why != "" {
		return netcdf3.Attr{}, why
	}
	v, _ := Decode(a.Value)
	switch typ {
	case Char:
		if s, ok := v.(string); ok {
			return netcdf3.Attr{Name: a.Name, Type: netcdf3.Char, Values: []byte(s)}, ""
		}
		fallthrough
	case JSON:
		return netcdf3.Attr{Name: a.Name, Type: netcdf3.Char, Values: []byte(JSONText(a.Value))}, ""
	case String:
		list := asList(v)
		if len(list) != 1 {
			return netcdf3.Attr{}, fmt.Sprintf("a list of %d strings has no netCDF classic form", len(list))
		}
		s, ok := list[0].(string)
		if !ok {
			s = compact(list[0])
		}
		return netcdf3.Attr{Name: a.Name, Type: netcdf3.Char, Values: []byte(s)}, ""
	}
	t, _ := netcdf3.TypeOf(typ)
	out := netcdf3.Attr{Name: a.Name, Type: t}
	for _, e := range asList(v) {
		b, ok := Encode(t, e)
		if !ok {
			return netcdf3.Attr{}, fmt.Sprintf("value %s is not a number", compact(e))
		}
		out.Values = append(out.Values, b...)
	}
	return out, ""
}

// Encode is one JSON value as a big-endian value of t. Values of the
// type AttrType gives are exact; a declared type's values convert as
// netcdf-c converts them (integers keep their low bits, non-integers are
// truncated). Booleans are 0 and 1; "NaN", "Infinity" and "-Infinity"
// are the float values (0 for integer types).
func Encode(t netcdf3.Type, v any) ([]byte, bool) {
	var f float64
	i, isInt := integer(v)
	switch x := v.(type) {
	case bool:
		f = float64(i.Int64())
	case json.Number:
		var err error
		if f, err = strconv.ParseFloat(x.String(), 64); err != nil && !math.IsInf(f, 0) {
			return nil, false
		}
	case string:
		switch x {
		case "NaN":
			f = math.NaN()
		case "Infinity":
			f = math.Inf(1)
		case "-Infinity":
			f = math.Inf(-1)
		default:
			return nil, false
		}
	default:
		return nil, false
	}
	switch t {
	case netcdf3.Float:
		return binary.BigEndian.AppendUint32(nil, math.Float32bits(float32(f))), true
	case netcdf3.Double:
		return binary.BigEndian.AppendUint64(nil, math.Float64bits(f)), true
	}
	if !isInt {
		i = big.NewInt(0)
		if !math.IsNaN(f) && !math.IsInf(f, 0) {
			i, _ = big.NewFloat(math.Trunc(f)).Int(nil)
		}
	}
	low := new(big.Int).And(i, new(big.Int).SetUint64(math.MaxUint64)).Uint64()
	b := binary.BigEndian.AppendUint64(nil, low)
	return b[8-t.Size():], true
}

// compact is v as JSON without Go's escaping of <, > and &.
func compact(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return ""
	}
	return string(bytes.TrimSuffix(b.Bytes(), []byte("\n")))
}
