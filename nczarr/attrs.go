package nczarr

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"sort"
	"strings"

	"github.com/nczarrfs/nczarrfs/nczarr/zarrmeta"
	"github.com/nczarrfs/nczarrfs/zmap"
)

// Attr is one attribute of a group or array, typed the way netcdf-c types
// it: from NCZarr's _nczarr_attr annotation when the dataset has one,
// else inferred from the JSON value (NCZarr spec, appendix C).
type Attr struct {
	Name string
	// Type is the netCDF type: byte, ubyte, short, ushort, int, uint,
	// int64, uint64, float, double, char or string, or "json" for a value
	// that is no atomic value or list of them (netCDF shows it as char).
	Type string
	// DType is the type as annotated (a numpy dtype such as "<i2" or
	// "|J0", or a netCDF type number in 4.8.0 metadata); "" when the
	// type was inferred.
	DType string
	// Value is the JSON value as stored, with bare NaN and Infinity
	// quoted, so it is valid JSON.
	Value json.RawMessage
}

// member is one name/value pair of a JSON object, in stored order.
type member = zarrmeta.Member

// members parses a JSON object keeping its members' order.
func members(data []byte) ([]member, error) { return zarrmeta.Members(data) }

// lookup returns the value of the member named name, any case.
func lookup(ms []member, name string) (json.RawMessage, bool) { return zarrmeta.Lookup(ms, name) }

// internalAttr reports the attributes that carry NCZarr's or xarray's
// metadata rather than the user's.
func internalAttr(name string) bool {
	l := strings.ToLower(name)
	return strings.HasPrefix(l, "_nczarr_") || name == "_ARRAY_DIMENSIONS"
}

// Attrs returns the attributes of the group or array at path, in stored
// order, from the metadata the walk read (an array's model, Meta.AttrList;
// a group's attributes): no request. NCZarr's own (_nczarr_*) and
// xarray's _ARRAY_DIMENSIONS are left out; _NCProperties and _FillValue,
// which netCDF shows, are kept. A group or array without attributes, or
// a path that is neither, has none (nil, nil). On a dataset read lazily
// the group holding path is read first, as Array and Group do.
func (d *Dataset) Attrs(ctx context.Context, path string) ([]Attr, error) {
	var na nodeAttrs
	if a := d.Array(path); a != nil {
		na = nodeAttrs{list: a.Meta.AttrList, err: a.Meta.AttrErr, v1Types: d.v1AttrTypes(path)}
	} else if g := d.Group(path); g != nil {
		na = g.attrs
	} else {
		return nil, nil
	}
	if na.err != nil {
		return nil, fmt.Errorf("%q attributes: %w", path, na.err)
	}
	if d.isV3() {
		return typedAttrs(na.list, v3AttrTypes(na.list), v3NCType), nil
	}
	raw, ok := lookup(na.list, "_nczarr_attr")
	if !ok {
		raw = na.v1Types
	}
	types, err := parseAttrTypes(raw)
	if err != nil {
		return nil, fmt.Errorf("%s attribute types: %w", zmap.Join(path, ".zattrs"), err)
	}
	return typedAttrs(na.list, types, typeOfDType), nil
}

// v1AttrTypes returns the 4.8.0 attribute types of the array at path,
// which a lazy walk may be writing for other arrays.
func (d *Dataset) v1AttrTypes(path string) json.RawMessage {
	if d.lazy != nil {
		d.lazy.w.mu.Lock()
		defer d.lazy.w.mu.Unlock()
	}
	return d.v1Attrs[path]
}

// nodeAttrs are the attributes of a group or an array as the walk read
// them: in stored order, or why they could not be read; and for 4.8.0
// metadata the attribute types its .nczattr object gives.
type nodeAttrs struct {
	list    []member
	err     error
	v1Types json.RawMessage
}

// v2Attrs reads the attributes of the node at path from its .zattrs bytes
// (nil when it has none), and for 4.8.0 metadata without an _nczarr_attr
// member its .nczattr or .nczattrs object.
func (w *walker) v2Attrs(ctx context.Context, path string, zattrs []byte) nodeAttrs {
	var na nodeAttrs
	if na.list, na.err = zarrmeta.ParseAttrs(zattrs); na.err != nil {
		return na
	}
	if _, ok := lookup(na.list, "_nczarr_attr"); ok || w.d.Generation != NCZarrV1 {
		return na
	}
	for _, name := range []string{".nczattr", ".nczattrs"} {
		data, err := w.get(ctx, zmap.Join(path, name))
		if errors.Is(err, zmap.ErrNotFound) {
			continue
		}
		na.v1Types, na.err = data, err
		break
	}
	return na
}

// typedAttrs turns stored attributes into Attrs, in stored order, leaving
// out NCZarr's own: typed by types (attribute name -> stored dtype, mapped
// to a netCDF type by typeOf) where it names them, else inferred.
func typedAttrs(ms []member, types map[string]string, typeOf func(string) string) []Attr {
	var out []Attr
	for _, m := range ms {
		if internalAttr(m.Name) {
			continue
		}
		a := Attr{Name: m.Name, Value: json.RawMessage(zarrmeta.QuoteNonFinite(m.Value))}
		if dt, ok := types[m.Name]; ok {
			a.DType = dt
			a.Type = typeOf(dt)
		}
		if a.Type == "" {
			a.Type = inferAttrType(m.Value)
		}
		out = append(out, a)
	}
	return out
}

// parseAttrTypes reads NCZarr's attribute types: {"types": {name:
// dtype}}, the _nczarr_attr member of a .zattrs or 4.8.0's .nczattr
// object. None when raw is nil.
func parseAttrTypes(raw json.RawMessage) (map[string]string, error) {
	if raw == nil {
		return nil, nil
	}
	ms, err := members(raw)
	if err != nil {
		return nil, err
	}
	typesRaw, _ := lookup(ms, "types")
	var types map[string]string
	if len(typesRaw) > 0 {
		if err := json.Unmarshal(typesRaw, &types); err != nil {
			return nil, err
		}
	}
	return types, nil
}

// netCDF type names by netCDF type number (netcdf.h), as 4.8.0 metadata
// annotates attributes.
var ncTypeNumbers = map[string]string{
	"1": "byte", "2": "char", "3": "short", "4": "int", "5": "float",
	"6": "double", "7": "ubyte", "8": "ushort", "9": "uint", "10": "int64",
	"11": "uint64", "12": "string",
}

// typeOfDType is the netCDF type of an NCZarr attribute dtype, "" when it
// names none.
func typeOfDType(dt string) string {
	if t, ok := ncTypeNumbers[dt]; ok {
		return t
	}
	if len(dt) < 3 {
		return ""
	}
	switch dt[1:] {
	case "i1":
		return "byte"
	case "u1", "b1":
		return "ubyte"
	case "i2":
		return "short"
	case "u2":
		return "ushort"
	case "i4":
		return "int"
	case "u4":
		return "uint"
	case "i8":
		return "int64"
	case "u8":
		return "uint64"
	case "f4":
		return "float"
	case "f8":
		return "double"
	case "S1", "U1":
		return "char"
	case "J0":
		return "json"
	}
	if dt[1] == 'S' || dt[1] == 'U' {
		return "string"
	}
	return ""
}

// inferAttrType types an unannotated attribute as netcdf-c does: a string
// is char, a boolean ubyte, a float double, an integer the smallest of
// byte, ubyte, short, ushort, int, uint, int64, uint64 that holds it; a
// list takes the type of its first element. A list of strings is string.
// Anything else (objects, nested or empty lists, null) is json.
func inferAttrType(raw json.RawMessage) string {
	first := bytes.TrimLeft(raw, "[ \t\r\n")
	for _, w := range []string{"NaN", "Infinity", "-Infinity"} {
		if bytes.HasPrefix(first, []byte(w)) {
			return "double" // bare, as zarr-python writes non-finite floats
		}
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(zarrmeta.QuoteNonFinite(raw)))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return "json"
	}
	if list, ok := v.([]any); ok {
		if len(list) == 0 {
			return "json"
		}
		first := atomicType(list[0])
		for _, e := range list[1:] {
			if atomicType(e) == "json" || (first == "char") != (atomicType(e) == "char") {
				return "json"
			}
		}
		if first == "char" {
			return "string"
		}
		return first
	}
	return atomicType(v)
}

func atomicType(v any) string {
	switch x := v.(type) {
	case string:
		return "char"
	case bool:
		return "ubyte"
	case json.Number:
		i, ok := new(big.Int).SetString(x.String(), 10)
		if !ok {
			return "double"
		}
		for _, r := range intRanges {
			if i.Cmp(r.min) >= 0 && i.Cmp(r.max) <= 0 {
				return r.name
			}
		}
		return "double"
	}
	return "json"
}

// intRange is the range of a netCDF integer type.
type intRange struct {
	name     string
	min, max *big.Int
}

func newRange(name string, min int64, max uint64) intRange {
	return intRange{name, big.NewInt(min), new(big.Int).SetUint64(max)}
}

// intRanges are netcdf-c's candidate types for an integer, in the order
// it tries them.
var intRanges = []intRange{
	newRange("byte", math.MinInt8, math.MaxInt8),
	newRange("ubyte", 0, math.MaxUint8),
	newRange("short", math.MinInt16, math.MaxInt16),
	newRange("ushort", 0, math.MaxUint16),
	newRange("int", math.MinInt32, math.MaxInt32),
	newRange("uint", 0, math.MaxUint32),
	newRange("int64", math.MinInt64, math.MaxInt64),
	newRange("uint64", 0, math.MaxUint64),
}

// NamedDim is a shared dimension with its name.
type NamedDim struct {
	Name string
	Dim
}

// Layout is a group's dimensions and children in the order its NCZarr
// metadata lists them, which is the order netCDF defined them in (Group's
// lists are sorted). For pure Zarr, which records no order, the order is
// Group's: arrays and groups sorted, no dimensions.
type Layout struct {
	Dims   []NamedDim
	Arrays []string // full paths
	Groups []string // full paths
}

// Layout reads the order of the group at path's children.
func (d *Dataset) Layout(ctx context.Context, path string) (Layout, error) {
	g := d.Group(path)
	if g == nil {
		return Layout{}, fmt.Errorf("%q: no such group", path)
	}
	def := Layout{Arrays: g.Arrays, Groups: g.Groups}
	if d.isV3() {
		return d.layoutV3(ctx, path, def)
	}
	if d.Generation == PureZarr {
		return def, nil
	}
	var info json.RawMessage
	for _, src := range []struct{ key, member string }{
		{".zattrs", "_nczarr_group"}, {".zgroup", "_nczarr_group"}, {".nczgroup", ""},
	} {
		data, err := d.store.Get(d.metaCtx(ctx), zmap.Join(path, src.key))
		if errors.Is(err, zmap.ErrNotFound) {
			continue
		}
		if err != nil {
			return Layout{}, err
		}
		if src.member == "" {
			info = data
			break
		}
		ms, err := members(data)
		if err != nil {
			return Layout{}, fmt.Errorf("%s: %w", zmap.Join(path, src.key), err)
		}
		if raw, ok := lookup(ms, src.member); ok {
			info = raw
			break
		}
	}
	if info == nil {
		return def, nil
	}
	ms, err := members(info)
	if err != nil {
		return Layout{}, fmt.Errorf("group %q metadata: %w", path, err)
	}
	var l Layout
	for _, name := range []string{"dimensions", "dims"} {
		raw, ok := lookup(ms, name)
		if !ok {
			continue
		}
		dims, err := members(raw)
		if err != nil {
			break
		}
		for _, m := range dims {
			l.Dims = append(l.Dims, NamedDim{Name: m.Name, Dim: g.Dims[m.Name]})
		}
		break
	}
	// The children keep the listed order, limited to those Open found.
	l.Arrays = ordered(ms, []string{"arrays", "vars"}, path, g.Arrays)
	l.Groups = ordered(ms, []string{"groups", "subgroups"}, path, g.Groups)
	return l, nil
}

// ordered returns found in the order of the name list stored under the
// first of keys, then any of found that the list does not name.
func ordered(ms []member, keys []string, prefix string, found []string) []string {
	var names []string
	for _, k := range keys {
		if raw, ok := lookup(ms, k); ok {
			_ = json.Unmarshal(raw, &names)
			break
		}
	}
	seen := map[string]bool{}
	var out []string
	in := map[string]bool{}
	for _, p := range found {
		in[p] = true
	}
	for _, n := range names {
		p := zmap.Join(prefix, n)
		if in[p] && !seen[p] {
			out = append(out, p)
			seen[p] = true
		}
	}
	var rest []string
	for _, p := range found {
		if !seen[p] {
			rest = append(rest, p)
		}
	}
	sort.Strings(rest)
	return append(out, rest...)
}
