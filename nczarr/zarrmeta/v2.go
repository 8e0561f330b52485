package zarrmeta

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/nczarrfs/nczarrfs/nczarr/dtype"
)

// Meta is an array's .zarray, checked.
type Meta struct {
	Shape      []int64
	Chunks     []int64
	DType      dtype.DType
	Order      byte // 'C' or 'F'
	Separator  string
	Compressor json.RawMessage // nil for none
	Filters    []json.RawMessage
	Fill       any // decoded JSON fill_value (nil for null)
}

// ParseZarray checks a .zarray document.
func ParseZarray(data []byte) (Meta, map[string]any, error) {
	var o map[string]any
	if err := DecodeJSON(data, &o); err != nil {
		return Meta{}, nil, err
	}
	if o == nil {
		return Meta{}, nil, fmt.Errorf("not a JSON object")
	}
	var err error
	var m Meta
	if v, ok := o["zarr_format"].(json.Number); ok && v.String() != "2" {
		return m, o, fmt.Errorf("zarr_format %s is not supported (only 2)", v)
	}
	if m.Shape, err = IntList(o["shape"], "shape"); err != nil {
		return m, o, err
	}
	if m.Chunks, err = IntList(o["chunks"], "chunks"); err != nil {
		return m, o, err
	}
	if len(m.Chunks) != len(m.Shape) {
		return m, o, fmt.Errorf("chunks %v and shape %v differ in rank", m.Chunks, m.Shape)
	}
	for i, c := range m.Chunks {
		if c <= 0 || m.Shape[i] < 0 {
			return m, o, fmt.Errorf("bad shape %v or chunks %v", m.Shape, m.Chunks)
		}
	}
	raw, err := json.Marshal(o["dtype"])
	if err != nil {
		return m, o, err
	}
	if m.DType, err = dtype.Parse(raw); err != nil {
		return m, o, err
	}
	switch ord, _ := o["order"].(string); ord {
	case "C", "":
		m.Order = 'C'
	case "F":
		m.Order = 'F'
	default:
		return m, o, fmt.Errorf("order %q is not C or F", ord)
	}
	m.Separator = "."
	if s, ok := o["dimension_separator"].(string); ok && s != "" {
		if s != "." && s != "/" {
			return m, o, fmt.Errorf("dimension_separator %q is not . or /", s)
		}
		m.Separator = s
	}
	if c := o["compressor"]; c != nil {
		if m.Compressor, err = json.Marshal(c); err != nil {
			return m, o, err
		}
	}
	if f, ok := o["filters"].([]any); ok {
		for _, e := range f {
			b, err := json.Marshal(e)
			if err != nil {
				return m, o, err
			}
			m.Filters = append(m.Filters, b)
		}
	}
	m.Fill = o["fill_value"]
	return m, o, nil
}

// IntList reads a JSON list of sizes (shape, chunks): non-negative
// integers that fit int64; what names it in errors.
func IntList(v any, what string) ([]int64, error) {
	list, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("%s is missing or not a list", what)
	}
	out := make([]int64, len(list))
	for i, e := range list {
		n, ok := e.(json.Number)
		if !ok {
			return nil, fmt.Errorf("%s[%d] is not a number", what, i)
		}
		x, err := strconv.ParseInt(n.String(), 10, 64)
		if err != nil || x < 0 {
			return nil, fmt.Errorf("%s[%d] = %s is not a size", what, i, n)
		}
		out[i] = x
	}
	return out, nil
}
