package describe

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"

	"github.com/nczarrfs/nczarrfs/describe/netcdf3"
	"github.com/nczarrfs/nczarrfs/nczarr"
	"github.com/nczarrfs/nczarrfs/zmap"
)

// OmittedAttr is the global attribute of a classic file that names, one
// per line, what the file leaves out and why.
const OmittedAttr = "nczarrfs_omitted"

// Classic is a group as a netCDF classic file (dataset.nc).
type Classic struct {
	*netcdf3.File
	// Omitted names each variable or attribute left out, with the
	// reason ("var: reason", "var:attr: reason", ":attr: reason" for a
	// global one), as OmittedAttr does.
	Omitted []string
	// Why5 is why the file is CDF-5, "" when it is CDF-2.
	Why5 string
	// BlockSize is the st_blksize to serve it with (netcdf3.BlockSize).
	BlockSize int64

	group   string
	omitted map[string]string // variable name -> why it is left out
}

// ClassicVar is what an array's info.json says of its place in its
// group's dataset.nc.
type ClassicVar struct {
	File string `json:"file"` // "/" + the classic file's key
	// Format is "64-bit offset" (CDF-2) or "cdf5" (CDF-5), as ncdump -k
	// names them.
	Format  string `json:"format"`
	Omitted string `json:"omitted,omitempty"` // why the array is not a variable of it
}

// Var says where the array name of the group is in the file.
func (c *Classic) Var(name string) *ClassicVar {
	return &ClassicVar{File: "/" + ClassicPath(c.group), Format: c.Format().String(), Omitted: c.omitted[name]}
}

// NewClassic maps the group at path to a netCDF classic file, from the
// metadata alone. The group's dimensions (and those of enclosing groups
// its arrays use), or for pure Zarr the arrays' named or anonymous
// dimensions, become the file's; its attributes the global ones; every
// array a variable, with its attributes, unless its type has no classic
// equivalent (see docs/tree.md). The file is CDF-2 unless it needs CDF-5.
func NewClassic(ctx context.Context, ds *nczarr.Dataset, path string) (*Classic, error) {
	l, err := ds.Layout(ctx, path)
	if err != nil {
		return nil, err
	}
	m := &classicMapper{ds: ds, path: path, dimIndex: map[string]int{}, varOmitted: map[string]string{}, h: &netcdf3.Header{RecDim: -1}}
	if ds.Generation != nczarr.PureZarr {
		for _, d := range l.Dims {
			m.addDim(d.Name, d.Dim)
		}
	}
	for _, p := range l.Arrays {
		if err := m.variable(ctx, p); err != nil {
			return nil, err
		}
	}
	m.recordDim()
	attrs, err := ds.Attrs(ctx, path)
	if err != nil {
		return nil, err
	}
	for _, a := range visible(attrs) {
		if na, ok := m.attr("", a, ""); ok {
			m.h.Attrs = append(m.h.Attrs, na)
		}
	}
	if len(m.omitted) > 0 {
		text := strings.Join(m.omitted, "\n")
		m.h.Attrs = append(m.h.Attrs, netcdf3.Attr{Name: OmittedAttr, Type: netcdf3.Char, Values: []byte(text)})
	}
	c := &Classic{Omitted: m.omitted, Why5: m.h.Needs5(), BlockSize: netcdf3.BlockSize(m.h), group: path, omitted: m.varOmitted}
	m.h.Format = netcdf3.CDF2
	// The kernel's read-ahead around the header's reads (at most
	// MaxBlock, the mount's max_readahead), and netcdf-c's block of
	// st_blksize holding the header, read no variable: ncdump -h makes
	// no data request, and a variable that fails never hides the header.
	m.h.DataGap = netcdf3.MaxBlock
	if c.Why5 != "" {
		m.h.Format = netcdf3.CDF5
	}
	if c.File, err = netcdf3.New(m.h); err != nil {
		return nil, fmt.Errorf("group %q as netCDF classic: %w", "/"+path, err)
	}
	return c, nil
}

// classicMapper builds a netcdf3.Header from a group.
type classicMapper struct {
	ds       *nczarr.Dataset
	path     string
	h        *netcdf3.Header
	dims     []nczarr.Dim // by index of h.Dims: unlimited or not
	dimIndex map[string]int
	used     []bool // by index of h.Dims: a variable uses it
	omitted  []string
	// varOmitted holds why each variable left out is.
	varOmitted map[string]string
}

// omit records that name ("var", or "var:attr" and ":attr" for
// attributes, as CDL names them) is left out, and why.
func (m *classicMapper) omit(name, format string, args ...any) {
	why := fmt.Sprintf(format, args...)
	m.omitted = append(m.omitted, name+": "+why)
	if !strings.Contains(name, ":") {
		m.varOmitted[name] = why
	}
}

func (m *classicMapper) addDim(name string, d nczarr.Dim) int {
	m.dimIndex[name] = len(m.h.Dims)
	m.h.Dims = append(m.h.Dims, netcdf3.Dim{Name: name, Len: d.Size})
	m.dims = append(m.dims, d)
	m.used = append(m.used, false)
	return len(m.h.Dims) - 1
}

// scopeDim finds the dimension name an array of the group refers to: in
// the group or the nearest enclosing group that declares it.
func (m *classicMapper) scopeDim(name string) (nczarr.Dim, bool) {
	p := m.path
	for {
		if g := m.ds.Group(p); g != nil {
			if d, ok := g.Dims[name]; ok {
				return d, true
			}
		}
		if p == "" {
			return nczarr.Dim{}, false
		}
		if i := strings.LastIndexByte(p, '/'); i >= 0 {
			p = p[:i]
		} else {
			p = ""
		}
	}
}

// variable maps the array at p, or records why it is left out.
func (m *classicMapper) variable(ctx context.Context, p string) error {
	a := m.ds.Array(p)
	name := baseName(p)
	switch {
	case a == nil:
		m.omit(name, "its metadata cannot be read")
		return nil
	case a.Err != nil:
		m.omit(name, "its metadata cannot be read: %v", a.Err)
		return nil
	case a.Objects():
		m.omit(name, "variable-length elements (dtype %s) have no netCDF classic type", a.Meta.DType.Str)
		return nil
	}
	v := netcdf3.Var{Name: name}
	strlen := 0 // a fixed-length byte string's length: a char dimension
	switch t := NCType(a); t {
	case "string":
		if a.Meta.DType.Kind != 'S' {
			m.omit(name, "fixed-length unicode strings (dtype %s) have no netCDF classic type", a.Meta.DType.Str)
			return nil
		}
		v.Type, strlen = netcdf3.Char, a.ItemSize
	case "":
		m.omit(name, "dtype %s has no netCDF classic type", a.Meta.DType.Str)
		return nil
	default:
		v.Type, _ = netcdf3.TypeOf(t)
	}
	if a.ItemSize != v.Type.Size()*max(strlen, 1) {
		m.omit(name, "elements of %d bytes do not fit type %s", a.ItemSize, v.Type)
		return nil
	}
	var shape []int64
	var names []string
	if !a.Scalar {
		shape, names = a.Meta.Shape, a.DimNames
	}
	if len(names) != len(shape) {
		m.omit(name, "its dimensions cannot be named")
		return nil
	}
	if strlen > 0 {
		shape = append(append([]int64(nil), shape...), int64(strlen))
		names = append(append([]string(nil), names...), "string"+strconv.Itoa(strlen))
	}
	for i, n := range names {
		k, ok := m.dimIndex[n]
		if !ok {
			d := nczarr.Dim{Size: shape[i]}
			if m.ds.Generation != nczarr.PureZarr && i < len(a.DimNames) {
				if sd, ok := m.scopeDim(n); ok {
					d = sd
				}
			}
			if d.Size != shape[i] {
				m.omit(name, "dimension %s has length %d, the array %d", n, d.Size, shape[i])
				return nil
			}
			k = m.addDim(n, d)
		}
		if m.h.Dims[k].Len != shape[i] {
			m.omit(name, "dimension %s has length %d, the array %d", n, m.h.Dims[k].Len, shape[i])
			return nil
		}
		v.Dims = append(v.Dims, k)
	}
	attrs, err := m.ds.Attrs(ctx, p)
	if err != nil {
		return err
	}
	attrs = visible(attrs)
	if m.ds.Generation == nczarr.PureZarr && a.Meta.Fill != nil && !hasAttr(attrs, "_FillValue") {
		// netCDF reads a Zarr fill_value as _FillValue; null means none.
		if raw, err := json.Marshal(a.Meta.Fill); err == nil {
			attrs = append(attrs, nczarr.Attr{Name: "_FillValue", Type: "json", Value: raw})
		}
	}
	for _, at := range attrs {
		if strlen > 0 && at.Name == "_FillValue" {
			m.omit(name+":_FillValue", "a fill value of a string array has no netCDF classic form")
			continue
		}
		if na, ok := m.attr(name, at, v.Type.String()); ok {
			v.Attrs = append(v.Attrs, na)
		}
	}
	v.Open = func() netcdf3.ReaderAt { return a.NewReader() }
	for _, k := range v.Dims {
		m.used[k] = true
	}
	m.h.Vars = append(m.h.Vars, v)
	return nil
}

func hasAttr(attrs []nczarr.Attr, name string) bool {
	for _, a := range attrs {
		if a.Name == name {
			return true
		}
	}
	return false
}

// recordDim makes the first unlimited dimension that is outermost in
// every variable using it the record dimension; the others stay fixed.
// Variables using a dimension of length 0 that is not the record
// dimension are left out, as are such dimensions: length 0 marks the
// record dimension in the format.
func (m *classicMapper) recordDim() {
	h := m.h
	for k, d := range m.dims {
		if !d.Unlimited {
			continue
		}
		ok := true
		for _, v := range h.Vars {
			for i, vd := range v.Dims {
				if vd == k && i != 0 {
					ok = false
				}
			}
		}
		if ok {
			h.RecDim = k
			break
		}
	}
	zero := func(k int) bool { return h.Dims[k].Len == 0 && k != h.RecDim }
	var vars []netcdf3.Var
	for _, v := range h.Vars {
		keep := true
		for _, k := range v.Dims {
			if zero(k) {
				m.omit(v.Name, "dimension %s has length 0 and is not the record dimension", h.Dims[k].Name)
				keep = false
				break
			}
		}
		if keep {
			vars = append(vars, v)
		}
	}
	// Drop the zero-length dimensions, renumbering the others.
	renum := make([]int, len(h.Dims))
	var dims []netcdf3.Dim
	for k, d := range h.Dims {
		renum[k] = len(dims)
		if zero(k) {
			m.omit("dimension "+d.Name+":", "length 0 is the record dimension's in netCDF classic, and it is not that")
			continue
		}
		dims = append(dims, d)
	}
	for i := range vars {
		ds := make([]int, len(vars[i].Dims))
		for j, k := range vars[i].Dims {
			ds[j] = renum[k]
		}
		vars[i].Dims = ds
	}
	if h.RecDim >= 0 {
		h.RecDim = renum[h.RecDim]
	}
	h.Dims, h.Vars = dims, vars
}

// attr maps an attribute of the variable varName ("" for the group's)
// to its classic form; varType is the variable's type, which its
// _FillValue takes. Attributes with no classic form are recorded as
// omitted.
func (m *classicMapper) attr(varName string, a nczarr.Attr, varType string) (netcdf3.Attr, bool) {
	typ := a.Type
	if a.Name == "_FillValue" && varType != "" {
		typ = varType
	}
	who := ":" + a.Name
	if varName != "" {
		who = varName + ":" + a.Name
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(a.Value))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		m.omit(who, "unreadable value")
		return netcdf3.Attr{}, false
	}
	switch typ {
	case "char", "json":
		if s, ok := v.(string); ok && typ == "char" {
			return netcdf3.Attr{Name: a.Name, Type: netcdf3.Char, Values: []byte(s)}, true
		}
		// A JSON value: its text, as netCDF shows it.
		return netcdf3.Attr{Name: a.Name, Type: netcdf3.Char, Values: []byte(unparse(a.Value))}, true
	case "string":
		list, ok := v.([]any)
		if !ok {
			list = []any{v}
		}
		if len(list) != 1 {
			m.omit(who, "a list of %d strings has no netCDF classic form", len(list))
			return netcdf3.Attr{}, false
		}
		s, ok := list[0].(string)
		if !ok {
			s = jsonText(list[0])
		}
		return netcdf3.Attr{Name: a.Name, Type: netcdf3.Char, Values: []byte(s)}, true
	}
	t, ok := netcdf3.TypeOf(typ)
	if !ok || t == netcdf3.Char {
		m.omit(who, "type %s has no netCDF classic form", typ)
		return netcdf3.Attr{}, false
	}
	list, isList := v.([]any)
	if !isList {
		list = []any{v}
	}
	out := netcdf3.Attr{Name: a.Name, Type: t, Values: make([]byte, 0, len(list)*t.Size())}
	for _, e := range list {
		b, ok := encodeValue(t, e)
		if !ok {
			m.omit(who, "value %s is not a number", jsonText(e))
			return netcdf3.Attr{}, false
		}
		out.Values = append(out.Values, b...)
	}
	return out, true
}

// encodeValue is one JSON value as a big-endian value of t: integers
// keep their low bits (netCDF's conversion), non-integers are truncated,
// booleans are 0 and 1, and "NaN", "Infinity" and "-Infinity" are the
// float values (0 for integer types).
func encodeValue(t netcdf3.Type, v any) ([]byte, bool) {
	var f float64
	var i *big.Int
	switch x := v.(type) {
	case bool:
		if x {
			f = 1
		}
		i = big.NewInt(int64(f))
	case json.Number:
		if n, ok := new(big.Int).SetString(x.String(), 10); ok {
			i = n
			f, _ = strconv.ParseFloat(x.String(), 64)
		} else {
			var err error
			if f, err = strconv.ParseFloat(x.String(), 64); err != nil && !math.IsInf(f, 0) {
				return nil, false
			}
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
	if i == nil {
		i = big.NewInt(0)
		if !math.IsNaN(f) && !math.IsInf(f, 0) {
			i, _ = big.NewFloat(math.Trunc(f)).Int(nil)
		}
	}
	low := new(big.Int).And(i, new(big.Int).SetUint64(math.MaxUint64)).Uint64()
	b := binary.BigEndian.AppendUint64(nil, low)
	return b[8-t.Size():], true
}

// ClassicName is the base name of a group's classic file.
const ClassicName = "dataset.nc"

// ClassicPath is the key of the classic file of the group at path.
func ClassicPath(path string) string { return zmap.Join(path, ClassicName) }
