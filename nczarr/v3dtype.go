package nczarr

import (
	"encoding/json"
	"fmt"
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
	name, cfg := "", object(nil)
	switch x := v.(type) {
	case string:
		name = x
	case map[string]any:
		name, _ = x["name"].(string)
		cfg = object(asMap(x["configuration"]))
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
			ft, err := v3DType(fdt)
			if err == nil && ft.Kind == 'O' {
				err = fmt.Errorf("a variable-length type has no fixed size")
			}
			if err != nil {
				return DType{}, true, fmt.Errorf("data_type %s: field %q: %w", name, fname, err)
			}
			if d.Size > 1<<30-ft.Size {
				return DType{}, true, fmt.Errorf("data_type %s: too large", name)
			}
			ft.Str = numpyDType(ft)
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
			fmt.Fprintf(&b, "'%s'", numpyDType(le))
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
		b, ok := pyBase64(x)
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
			b, err := v3Fill(f.DType, fv)
			if err != nil {
				return nil, fmt.Errorf("field %q: %w", f.Name, err)
			}
			out = append(out, b...)
		}
		return out, nil
	}
	return nil, fmt.Errorf("fill_value %v is neither an object of fields nor base64", v)
}
