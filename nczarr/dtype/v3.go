package dtype

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Field is one field of a structured (struct) data type.
type Field struct {
	Name  string
	DType DType
}

// v3ExtDType reads the zarr-python 3 and zarr-extensions data types that
// have a configuration, or a name other than a core type's:
//
//   - "string" (variable-length UTF-8, vlen-utf8), "variable_length_bytes"
//     and "bytes" (vlen-bytes): kind 'O', served as JSON;
//   - "fixed_length_utf32" {length_bytes}: numpy's "<U(n/4)";
//   - "null_terminated_bytes" {length_bytes}: "|Sn"; "raw_bytes": "|Vn";
//   - "numpy.datetime64" / "numpy.timedelta64" (and the zarr-extensions
//     names "datetime64", "timedelta64") {unit, scale_factor}: "<M8[10us]";
//   - "struct" / "structured" {fields}: a packed numpy structured type,
//     each field a data type of its own, fields as {name, data_type} or
//     [name, data_type].
//
// ok is false when v is no such type.
func v3ExtDType(v any) (d DType, ok bool, err error) {
	name, cfg := "", map[string]any(nil)
	switch x := v.(type) {
	case string:
		name = x
	case map[string]any:
		name, _ = x["name"].(string)
		cfg, _ = x["configuration"].(map[string]any)
	}
	length := func() (int, error) {
		n, ok := cfg["length_bytes"].(json.Number)
		i, err := strconv.Atoi(string(n))
		if !ok || err != nil || i < 1 || i > 1<<30 {
			return 0, fmt.Errorf("data_type %s: length_bytes %v is not a positive size", name, cfg["length_bytes"])
		}
		return i, nil
	}
	switch name {
	case "string":
		return DType{Str: "string", Kind: 'O'}, true, nil
	case "variable_length_bytes", "bytes":
		return DType{Str: name, Kind: 'O'}, true, nil
	case "fixed_length_utf32":
		n, err := length()
		if err == nil && n%4 != 0 {
			err = fmt.Errorf("data_type %s: length_bytes %d is not a multiple of 4", name, n)
		}
		return DType{Str: name, Kind: 'U', Size: n}, true, err
	case "null_terminated_bytes":
		n, err := length()
		return DType{Str: name, Kind: 'S', Size: n}, true, err
	case "raw_bytes":
		n, err := length()
		return DType{Str: name, Kind: 'V', Size: n}, true, err
	case "numpy.datetime64", "numpy.timedelta64", "datetime64", "timedelta64":
		kind := byte('M')
		if strings.HasSuffix(name, "timedelta64") {
			kind = 'm'
		}
		unit, _ := cfg["unit"].(string)
		if unit == "μs" {
			unit = "us"
		}
		switch unit {
		case "Y", "M", "W", "D", "h", "m", "s", "ms", "us", "ns", "ps", "fs", "as", "generic":
		default:
			return DType{}, true, fmt.Errorf("data_type %s: unit %v is not a numpy time unit", name, cfg["unit"])
		}
		n, _ := cfg["scale_factor"].(json.Number)
		scale, err := strconv.ParseInt(string(n), 10, 32)
		if err != nil || scale < 1 {
			return DType{}, true, fmt.Errorf("data_type %s: scale_factor %v is not in [1, 2^31-1]", name, cfg["scale_factor"])
		}
		d := DType{Kind: kind, Size: 8}
		switch {
		case unit == "generic":
			d.Unit = ""
		case scale == 1:
			d.Unit = unit
		default:
			d.Unit = strconv.FormatInt(scale, 10) + unit
		}
		return d, true, nil
	case "struct", "structured":
		list, _ := cfg["fields"].([]any)
		if len(list) == 0 {
			return DType{}, true, fmt.Errorf("data_type %s: no fields", name)
		}
		d := DType{Kind: 'V'}
		seen := map[string]bool{}
		for i, f := range list {
			var fname string
			var fdt any
			switch x := f.(type) {
			case map[string]any:
				fname, _ = x["name"].(string)
				fdt = x["data_type"]
			case []any:
				if len(x) == 2 {
					fname, _ = x[0].(string)
					fdt = x[1]
				}
			}
			if fname == "" || seen[fname] || strings.ContainsAny(fname, "'\\") {
				return DType{}, true, fmt.Errorf("data_type %s: field %d has no name of its own, or one numpy cannot spell", name, i)
			}
			seen[fname] = true
			ft, err := ParseV3(fdt)
			if err == nil && ft.Kind == 'O' {
				err = fmt.Errorf("a variable-length type has no fixed size")
			}
			if err != nil {
				return DType{}, true, fmt.Errorf("data_type %s: field %q: %w", name, fname, err)
			}
			if d.Size > 1<<30-ft.Size {
				return DType{}, true, fmt.Errorf("data_type %s: too large", name)
			}
			ft.Str = ft.Numpy()
			d.Fields = append(d.Fields, Field{Name: fname, DType: ft})
			d.Size += ft.Size
		}
		return d, true, nil
	}
	return DType{}, false, nil
}

// structDescr spells a structured type as numpy's descr does in a .npy
// header: [('a', '<i4'), ('b', [('c', '|u1')])], little-endian.
func structDescr(fields []Field) string {
	var b strings.Builder
	b.WriteByte('[')
	for i, f := range fields {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "('%s', ", f.Name)
		if len(f.DType.Fields) > 0 {
			b.WriteString(structDescr(f.DType.Fields))
		} else {
			le := f.DType
			le.BigEndian = false
			fmt.Fprintf(&b, "'%s'", le.Numpy())
		}
		b.WriteByte(')')
	}
	b.WriteByte(']')
	return b.String()
}

// structFill reads a struct fill_value: an object of field values (each
// read as its field's fill, absent fields zero), or base64 of the bytes.
func structFill(d DType, v any) ([]byte, error) {
	out := make([]byte, 0, d.Size)
	switch x := v.(type) {
	case nil:
		return make([]byte, d.Size), nil
	case string:
		b, ok := Base64(x)
		if !ok || len(b) != d.Size {
			return nil, fmt.Errorf("fill_value %q is not base64 of %d bytes", x, d.Size)
		}
		return b, nil
	case map[string]any:
		for _, f := range d.Fields {
			fv, present := x[f.Name]
			if !present {
				out = append(out, make([]byte, f.DType.Size)...)
				continue
			}
			b, err := FillV3(f.DType, fv)
			if err != nil {
				return nil, fmt.Errorf("field %q: %w", f.Name, err)
			}
			out = append(out, b...)
		}
		return out, nil
	}
	return nil, fmt.Errorf("fill_value %v is neither an object of fields nor base64", v)
}

// ParseV3 reads a v3 data_type (a name, or a name and configuration) as a DType (byte order is set later,
// from the bytes codec).
func ParseV3(v any) (DType, error) {
	if d, ok, err := v3ExtDType(v); ok {
		return d, err
	}
	name, ok := v.(string)
	if !ok {
		return DType{}, fmt.Errorf("data_type %v is not supported", v)
	}
	d := DType{Str: name}
	switch {
	case name == "bool":
		d.Kind, d.Size = 'b', 1
	case strings.HasPrefix(name, "int") || strings.HasPrefix(name, "uint") ||
		strings.HasPrefix(name, "float") || strings.HasPrefix(name, "complex"):
		kinds := map[string]byte{"int": 'i', "uint": 'u', "float": 'f', "complex": 'c'}
		i := strings.IndexAny(name, "0123456789")
		bits, err := strconv.Atoi(name[max(i, 0):])
		if i <= 0 || err != nil {
			return DType{}, fmt.Errorf("data_type %q is not supported", name)
		}
		d.Kind, d.Size = kinds[name[:i]], bits/8
		valid := map[byte][]int{'i': {8, 16, 32, 64}, 'u': {8, 16, 32, 64}, 'f': {16, 32, 64}, 'c': {64, 128}}[d.Kind]
		ok := false
		for _, b := range valid {
			ok = ok || b == bits
		}
		if !ok {
			return DType{}, fmt.Errorf("data_type %q is not supported", name)
		}
	case strings.HasPrefix(name, "r"):
		bits, err := strconv.Atoi(name[1:])
		if err != nil || bits <= 0 || bits%8 != 0 || bits > 8<<20 {
			return DType{}, fmt.Errorf("data_type %q: raw types take a positive multiple of 8 bits", name)
		}
		d.Kind, d.Size = 'V', bits/8
	default:
		return DType{}, fmt.Errorf("data_type %q is not supported", name)
	}
	return d, nil
}

// FillV3 returns one element of a v3 fill_value in the output form of
// data. Beyond what v2 allows, v3 writes floats (and the parts of complex
// numbers) as hex strings of their bits, "0x7fc00000", and raw types as a
// list of byte values.
func FillV3(d DType, v any) ([]byte, error) {
	bad := func() ([]byte, error) {
		return nil, fmt.Errorf("fill_value %v does not fit data_type %s", v, d.Str)
	}
	if v == nil {
		return make([]byte, d.Size), nil // not the spec's, but zeros as v2 reads null
	}
	if len(d.Fields) > 0 {
		return structFill(d, v)
	}
	switch d.Kind {
	case 'S':
		return base64Fill(d, v)
	case 'U':
		if _, ok := v.(string); !ok {
			return bad()
		}
	case 'f':
		if s, ok := v.(string); ok && strings.HasPrefix(s, "0x") {
			return hexFloat(s, d.Size)
		}
	case 'c':
		parts, ok := v.([]any)
		if !ok || len(parts) != 2 {
			return bad()
		}
		half := DType{Str: d.Str, Kind: 'f', Size: d.Size / 2}
		out := make([]byte, 0, d.Size)
		for _, p := range parts {
			b, err := FillV3(half, p)
			if err != nil {
				return bad()
			}
			out = append(out, b...)
		}
		return out, nil
	case 'V':
		if _, ok := v.(string); ok {
			return base64Fill(d, v) // raw_bytes
		}
		list, ok := v.([]any)
		if !ok {
			if v == nil {
				return make([]byte, d.Size), nil
			}
			return bad()
		}
		if len(list) != d.Size {
			return bad()
		}
		out := make([]byte, d.Size)
		for i, e := range list {
			n, ok := e.(json.Number)
			x, err := strconv.ParseUint(string(n), 10, 8)
			if !ok || err != nil {
				return bad()
			}
			out[i] = byte(x)
		}
		return out, nil
	case 'i', 'u':
		// Integral and in range: unlike zarr-python 2, v3 does not wrap.
		n, ok := v.(json.Number)
		if !ok {
			return bad()
		}
		s := string(n)
		if strings.ContainsAny(s, ".eE") {
			// An integer written as a float, 2.0.
			f, err := strconv.ParseFloat(s, 64)
			if err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
				return bad()
			}
			s = strconv.FormatFloat(f, 'f', -1, 64)
			v = json.Number(s)
		}
		var err error
		if d.Kind == 'i' {
			_, err = strconv.ParseInt(s, 10, 8*d.Size)
		} else {
			_, err = strconv.ParseUint(s, 10, 8*d.Size)
		}
		if err != nil {
			return bad()
		}
	}
	return d.EncodeFill(v, d.Size)
}

// hexFloat reads "0x..." as the bits of an IEEE float of size bytes and
// returns them little-endian.
func hexFloat(s string, size int) ([]byte, error) {
	u, err := strconv.ParseUint(s[2:], 16, 64)
	if err != nil || len(s) != 2+2*size {
		return nil, fmt.Errorf("fill_value %q is not %d hex digits", s, 2*size)
	}
	out := make([]byte, 8)
	binary.LittleEndian.PutUint64(out, u)
	return out[:size], nil
}

// base64Fill reads the fill of null_terminated_bytes and raw_bytes: base64
// of at most the element's bytes, zero-padded.
func base64Fill(d DType, v any) ([]byte, error) {
	s, ok := v.(string)
	b, ok2 := Base64(s)
	if !ok || !ok2 || len(b) > d.Size {
		return nil, fmt.Errorf("fill_value %v is not base64 of at most %d bytes", v, d.Size)
	}
	out := make([]byte, d.Size)
	copy(out, b)
	return out, nil
}

// Numpy spells a data type the way numpy (and .zarray) does, in
// its stored byte order: "<i4", ">f8", "|b1", "|V3". The describe package
// and info.json's stored_dtype take that form.
func (d DType) Numpy() string {
	if len(d.Fields) > 0 {
		return structDescr(d.Fields)
	}
	order := byte('<')
	switch {
	case d.Size == 1 || d.Kind == 'V' || d.Kind == 'b' || d.Kind == 'S':
		order = '|'
	case d.BigEndian:
		order = '>'
	}
	switch d.Kind {
	case 'U':
		return fmt.Sprintf("%cU%d", order, d.Size/4)
	case 'M', 'm':
		if d.Unit == "" {
			return fmt.Sprintf("%c%c8", order, d.Kind)
		}
		return fmt.Sprintf("%c%c8[%s]", order, d.Kind, d.Unit)
	}
	return fmt.Sprintf("%c%c%d", order, d.Kind, d.Size)
}
