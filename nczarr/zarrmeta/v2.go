package zarrmeta

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"

	"github.com/nczarrfs/nczarrfs/nczarr/codec"
	"github.com/nczarrfs/nczarrfs/nczarr/dtype"
)

// ParseV2 reads a v2 array's .zarray, and its .zattrs (nil when it has
// none) for the attributes and _ARRAY_DIMENSIONS. A .zarray that cannot
// be read is an error and no model. When only its codecs cannot be used,
// the model is returned without a Pipeline, with the error: the array can
// still be described.
func ParseV2(zarray []byte, zattrs map[string]any) (*Array, error) {
	var o map[string]any
	if err := DecodeJSON(zarray, &o); err != nil {
		return nil, err
	}
	if o == nil {
		return nil, fmt.Errorf("not a JSON object")
	}
	m := &Array{Format: 2, Doc: o, Attrs: zattrs}
	if v, ok := o["zarr_format"].(json.Number); ok && v.String() != "2" {
		return nil, fmt.Errorf("zarr_format %s is not supported (only 2)", v)
	}
	var err error
	if m.Shape, err = IntList(o["shape"], "shape"); err != nil {
		return nil, err
	}
	if m.Chunks, err = IntList(o["chunks"], "chunks"); err != nil {
		return nil, err
	}
	if len(m.Chunks) != len(m.Shape) {
		return nil, fmt.Errorf("chunks %v and shape %v differ in rank", m.Chunks, m.Shape)
	}
	for i, c := range m.Chunks {
		if c <= 0 || m.Shape[i] < 0 {
			return nil, fmt.Errorf("bad shape %v or chunks %v", m.Shape, m.Chunks)
		}
	}
	m.Grid, m.Inner = m.Chunks, m.Chunks
	raw, err := json.Marshal(o["dtype"])
	if err != nil {
		return nil, err
	}
	if m.DType, err = dtype.Parse(raw); err != nil {
		return nil, err
	}
	switch ord, _ := o["order"].(string); ord {
	case "C", "":
		m.Order = 'C'
	case "F":
		m.Order = 'F'
	default:
		return nil, fmt.Errorf("order %q is not C or F", ord)
	}
	m.Keys = KeyEncoding{V2: true, Sep: "."}
	if s, ok := o["dimension_separator"].(string); ok && s != "" {
		if s != "." && s != "/" {
			return nil, fmt.Errorf("dimension_separator %q is not . or /", s)
		}
		m.Keys.Sep = s
	}
	if c := o["compressor"]; c != nil {
		if m.Compressor, err = json.Marshal(c); err != nil {
			return nil, err
		}
	}
	if f, ok := o["filters"].([]any); ok {
		for _, e := range f {
			b, err := json.Marshal(e)
			if err != nil {
				return nil, err
			}
			m.Filters = append(m.Filters, b)
		}
	}
	m.Fill, m.HasFill = o["fill_value"]
	if v, ok := member(zattrs, "_ARRAY_DIMENSIONS"); ok {
		list, _ := v.([]any)
		var names []string
		for _, e := range list {
			if s, ok := e.(string); ok {
				names = append(names, s)
			}
		}
		if len(names) == len(m.Shape) {
			m.DimNames = names
		}
	}
	m.Pipeline, err = m.v2Pipeline(m.DType.Size)
	return m, err
}

// SetItemSize makes a v2 array's elements n bytes each rather than
// DType.Size, unswapped, and builds its codecs for elements of that size:
// NCZarr 4.8-4.9.0 stores netCDF's char as "<U1" with one byte a char.
func (m *Array) SetItemSize(n int) error {
	if m.Format != 2 {
		return fmt.Errorf("only a v2 array's item size can be set")
	}
	var err error
	m.Pipeline, err = m.v2Pipeline(n)
	if m.Pipeline != nil {
		m.Pipeline.BigEndian = false
	}
	return err
}

// v2Pipeline builds a v2 array's pipeline for elements of itemSize
// bytes: Fortran order as a transpose, the dtype's byte order, and the
// filters and compressor; an object codec as the first filter is an
// element codec (always for dtype "|O").
func (m *Array) v2Pipeline(itemSize int) (*Pipeline, error) {
	p := &Pipeline{BigEndian: m.DType.BigEndian}
	if rank := len(m.Chunks); m.Order == 'F' && rank > 1 {
		perm := make([]int, rank)
		for k := range perm {
			perm[k] = rank - 1 - k
		}
		p.Perms = [][]int{perm}
	}
	var first string
	if len(m.Filters) > 0 {
		first, _ = codec.ID(m.Filters[0])
	}
	if m.DType.Kind == 'O' {
		if len(m.Filters) == 0 {
			return nil, fmt.Errorf("dtype %q needs an object codec as its first filter", m.DType.Str)
		}
		id, err := codec.ID(m.Filters[0])
		if err != nil {
			return nil, err
		}
		if !isElemCodec(id) {
			return nil, fmt.Errorf("%w %q as the object codec of dtype %q", codec.ErrUnknown, id, m.DType.Str)
		}
		first = id
	} else if !isElemCodec(first) || first == "vlen-utf8" || first == "vlen-bytes" {
		var err error
		if p.Chain, err = codec.NewChain(m.Filters, m.Compressor, codec.ItemSize(itemSize)); err != nil {
			return nil, err
		}
		return p, nil
	}
	// numcodecs' JSON and MsgPack codecs also store arrays of numbers and
	// strings, as lists of their elements.
	steps, err := byteSteps(m.Filters[1:], m.Compressor)
	if err != nil {
		return nil, err
	}
	p.BigEndian = false // elements are decoded to output form
	p.Elems = &Elems{Codec: first, Steps: steps}
	p.Chain, _ = codec.NewChain(nil, nil)
	if m.DType.Kind == 'O' {
		p.Chain = nil
	}
	return p, nil
}

// byteSteps looks up the byte codecs after an element codec (the other
// filters, then the compressor), in encoding order.
func byteSteps(filters []json.RawMessage, compressor json.RawMessage) ([]codec.Codec, error) {
	var steps []codec.Codec
	for _, c := range slices.Concat(filters, []json.RawMessage{compressor}) {
		if len(c) == 0 || string(c) == "null" {
			continue
		}
		step, err := codec.Lookup(c)
		if err != nil {
			return nil, err
		}
		steps = append(steps, step)
	}
	return steps, nil
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
