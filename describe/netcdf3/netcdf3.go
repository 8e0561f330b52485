// Package netcdf3 lays out a netCDF classic file (CDF-2, 64-bit offset,
// or CDF-5, 64-bit data) over arrays that are read elsewhere: the header
// is computed from a model of dimensions, attributes and variables alone,
// and ReadAt fills any byte range of the file from each variable's
// decoded bytes (C order, little-endian), swapped to the big-endian order
// the format stores.
//
// The format is netcdf-c's (docs/file_format_specifications.md, and
// libsrc/v1hpg.c and nc3internal.c for the sizes and the rules on begins):
// fixed-size variables one after the other in definition order, then the
// records, each record holding one slab of every record variable.
package netcdf3

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// Format is a netCDF classic format version.
type Format int

// The classic formats this package writes.
const (
	CDF2 Format = 2 // 64-bit offset: 32-bit sizes, 64-bit begins
	CDF5 Format = 5 // 64-bit data: 64-bit sizes, and the unsigned and 64-bit types
)

// String names the format as ncdump -k does.
func (f Format) String() string {
	switch f {
	case CDF2:
		return "64-bit offset"
	case CDF5:
		return "cdf5"
	}
	return fmt.Sprintf("format %d", int(f))
}

// Type is a netCDF external type (nc_type).
type Type int32

// The netCDF classic types; Ubyte and the ones after it need CDF-5.
const (
	Byte   Type = 1
	Char   Type = 2
	Short  Type = 3
	Int    Type = 4
	Float  Type = 5
	Double Type = 6
	Ubyte  Type = 7
	Ushort Type = 8
	Uint   Type = 9
	Int64  Type = 10
	Uint64 Type = 11
)

var typeNames = map[Type]string{
	Byte: "byte", Char: "char", Short: "short", Int: "int", Float: "float", Double: "double",
	Ubyte: "ubyte", Ushort: "ushort", Uint: "uint", Int64: "int64", Uint64: "uint64",
}

// String is the type's CDL name.
func (t Type) String() string {
	if n, ok := typeNames[t]; ok {
		return n
	}
	return fmt.Sprintf("type %d", int32(t))
}

// TypeOf returns the type of a CDL type name; ok is false for names that
// have none in the classic formats (string, json, ...).
func TypeOf(name string) (t Type, ok bool) {
	for t, n := range typeNames {
		if n == name {
			return t, true
		}
	}
	return 0, false
}

// Size is the bytes of one value of t; 0 for an unknown type.
func (t Type) Size() int {
	switch t {
	case Byte, Char, Ubyte:
		return 1
	case Short, Ushort:
		return 2
	case Int, Float, Uint:
		return 4
	case Double, Int64, Uint64:
		return 8
	}
	return 0
}

// CDF5Only reports whether t exists only in CDF-5.
func (t Type) CDF5Only() bool { return t >= Ubyte && t <= Uint64 }

// Dim is a dimension. The record dimension's Len is the number of
// records; any other's must be positive (length 0 marks the record
// dimension in the format).
type Dim struct {
	Name string
	Len  int64
}

// Attr is an attribute: Values are its values in the big-endian external
// form (for Char, the characters), len(Values)/Type.Size() of them.
type Attr struct {
	Name   string
	Type   Type
	Values []byte
}

// ReaderAt reads a variable's decoded bytes: every value in C order,
// little-endian, Type.Size() bytes each, with io.ReaderAt semantics.
type ReaderAt interface {
	ReadAt(ctx context.Context, p []byte, off int64) (int, error)
}

// Var is a variable. Its decoded bytes (Open) hold every element of its
// shape, the record dimension's included.
type Var struct {
	Name  string
	Type  Type
	Dims  []int // indexes into Header.Dims, outermost first
	Attrs []Attr
	// Open returns a reader of the variable's decoded bytes. Each
	// Reader of a File opens each variable it reads once, so a reader
	// with read-ahead follows that file's walk.
	Open func() ReaderAt
}

// Header is what a classic file holds besides its data.
type Header struct {
	Format Format
	Dims   []Dim
	// RecDim is the index in Dims of the record dimension, -1 for none.
	RecDim int
	Attrs  []Attr
	Vars   []Var
	// DataGap is the least gap between the header's end and the first
	// variable's begin (which is on the block, BlockSize): a reader's block and
	// read-ahead around the header then read no variable.
	DataGap int64
}

// Limits of CDF-2: a variable (one record of a record variable) of at
// most 2^32-4 bytes, dimensions and counts in a signed 32-bit int.
const (
	maxVsize2 = math.MaxUint32 - 3
	maxInt2   = math.MaxInt32
)

// Needs5 reports why h cannot be written as CDF-2: a type that only
// CDF-5 has, or a size too large for CDF-2's 32-bit fields. It is "" when
// CDF-2 holds h.
func (h *Header) Needs5() string {
	typed := func(what, name string, t Type) string {
		return fmt.Sprintf("%s %s has type %s", what, name, t)
	}
	for _, a := range h.Attrs {
		if a.Type.CDF5Only() {
			return typed("attribute", a.Name, a.Type)
		}
	}
	for _, d := range h.Dims {
		if d.Len > maxInt2 {
			return fmt.Sprintf("dimension %s has length %d", d.Name, d.Len)
		}
	}
	for _, v := range h.Vars {
		if v.Type.CDF5Only() {
			return typed("variable", v.Name, v.Type)
		}
		for _, a := range v.Attrs {
			if a.Type.CDF5Only() {
				return typed("attribute", v.Name+":"+a.Name, a.Type)
			}
		}
		if n := vsize(h, &v); n > maxVsize2 {
			return fmt.Sprintf("variable %s holds %d bytes", v.Name, n)
		}
	}
	return ""
}

// isRec reports whether v is a record variable of h.
func isRec(h *Header, v *Var) bool {
	return h.RecDim >= 0 && len(v.Dims) > 0 && v.Dims[0] == h.RecDim
}

// slab is the bytes of v's values in one record (record variables) or
// in all (others): netcdf-c's product of the dimension lengths, a
// record dimension left out, times the type's size.
func slab(h *Header, v *Var) int64 {
	n := int64(v.Type.Size())
	for i, d := range v.Dims {
		if i == 0 && isRec(h, v) {
			continue
		}
		n *= h.Dims[d].Len
	}
	return n
}

// vsize is slab rounded up to 4 bytes, the vsize of the header.
func vsize(h *Header, v *Var) int64 { return (slab(h, v) + 3) &^ 3 }

// errHeader is wrapped by New for a model that no classic file can hold.
var errHeader = errors.New("not a valid netCDF classic model")

// validate checks what New relies on, in the rules of the format.
func (h *Header) validate() error {
	if h.Format != CDF2 && h.Format != CDF5 {
		return fmt.Errorf("%w: format %d", errHeader, h.Format)
	}
	if h.RecDim < -1 || h.RecDim >= len(h.Dims) {
		return fmt.Errorf("%w: record dimension %d of %d", errHeader, h.RecDim, len(h.Dims))
	}
	for i, d := range h.Dims {
		if d.Len < 0 || (d.Len == 0 && i != h.RecDim) {
			return fmt.Errorf("%w: dimension %s has length %d", errHeader, d.Name, d.Len)
		}
	}
	for _, v := range h.Vars {
		if v.Type.Size() == 0 {
			return fmt.Errorf("%w: variable %s has type %d", errHeader, v.Name, v.Type)
		}
		n := int64(v.Type.Size())
		for i, d := range v.Dims {
			if d < 0 || d >= len(h.Dims) {
				return fmt.Errorf("%w: variable %s has dimension %d of %d", errHeader, v.Name, d, len(h.Dims))
			}
			if d == h.RecDim && i != 0 {
				return fmt.Errorf("%w: variable %s has the record dimension at position %d", errHeader, v.Name, i)
			}
			if l := h.Dims[d].Len; l > 0 {
				if n > math.MaxInt64/4/l {
					return fmt.Errorf("%w: variable %s is too large", errHeader, v.Name)
				}
				n *= l
			}
		}
		for _, a := range v.Attrs {
			if err := a.validate(); err != nil {
				return fmt.Errorf("variable %s: %w", v.Name, err)
			}
		}
	}
	for _, a := range h.Attrs {
		if err := a.validate(); err != nil {
			return err
		}
	}
	if h.Format == CDF2 {
		if why := h.Needs5(); why != "" {
			return fmt.Errorf("%w: CDF-2 cannot hold it: %s", errHeader, why)
		}
	}
	return nil
}

func (a *Attr) validate() error {
	if s := a.Type.Size(); s == 0 || len(a.Values)%s != 0 {
		return fmt.Errorf("%w: attribute %s of type %d has %d bytes", errHeader, a.Name, a.Type, len(a.Values))
	}
	return nil
}

// Header tags (NC_DIMENSION, NC_VARIABLE, NC_ATTRIBUTE).
const (
	tagDim  = 0x0A
	tagVar  = 0x0B
	tagAttr = 0x0C
)

// encoder writes a header in one format's integer sizes.
type encoder struct {
	b    []byte
	five bool
}

func (e *encoder) u32(v uint32) { e.b = binary.BigEndian.AppendUint32(e.b, v) }
func (e *encoder) u64(v uint64) { e.b = binary.BigEndian.AppendUint64(e.b, v) }

// nonNeg writes a NON_NEG: 32 bits in CDF-2, 64 in CDF-5.
func (e *encoder) nonNeg(v int64) {
	if e.five {
		e.u64(uint64(v))
	} else {
		e.u32(uint32(v))
	}
}

// pad writes zeros to a multiple of 4 bytes after n bytes.
func (e *encoder) pad(n int) {
	for ; n%4 != 0; n++ {
		e.b = append(e.b, 0)
	}
}

func (e *encoder) name(s string) {
	e.nonNeg(int64(len(s)))
	e.b = append(e.b, s...)
	e.pad(len(s))
}

func (e *encoder) attrs(as []Attr) {
	if len(as) == 0 {
		e.u32(0) // ABSENT: ZERO ZERO
		e.nonNeg(0)
		return
	}
	e.u32(tagAttr)
	e.nonNeg(int64(len(as)))
	for _, a := range as {
		e.name(a.Name)
		e.u32(uint32(a.Type))
		e.nonNeg(int64(len(a.Values) / a.Type.Size()))
		e.b = append(e.b, a.Values...)
		e.pad(len(a.Values))
	}
}

// encode writes h's header with the variables' begins.
func encode(h *Header, numRecs int64, begins []int64) []byte {
	e := &encoder{five: h.Format == CDF5}
	e.b = append(e.b, 'C', 'D', 'F', byte(h.Format))
	e.nonNeg(numRecs)
	if len(h.Dims) == 0 {
		e.u32(0)
		e.nonNeg(0)
	} else {
		e.u32(tagDim)
		e.nonNeg(int64(len(h.Dims)))
		for i, d := range h.Dims {
			e.name(d.Name)
			if i == h.RecDim {
				e.nonNeg(0)
			} else {
				e.nonNeg(d.Len)
			}
		}
	}
	e.attrs(h.Attrs)
	if len(h.Vars) == 0 {
		e.u32(0)
		e.nonNeg(0)
	}
	if len(h.Vars) > 0 {
		e.u32(tagVar)
		e.nonNeg(int64(len(h.Vars)))
	}
	for i := range h.Vars {
		v := &h.Vars[i]
		e.name(v.Name)
		e.nonNeg(int64(len(v.Dims)))
		for _, d := range v.Dims {
			e.nonNeg(int64(d))
		}
		e.attrs(v.Attrs)
		e.u32(uint32(v.Type))
		vs := vsize(h, v)
		if !e.five && vs > maxVsize2 {
			vs = math.MaxUint32 // as the format says for larger ones
		}
		e.nonNeg(vs)
		e.u64(uint64(begins[i]))
	}
	return e.b
}
