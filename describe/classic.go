package describe

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/nczarrfs/nczarrfs/describe/ncmap"
	"github.com/nczarrfs/nczarrfs/describe/netcdf3"
	"github.com/nczarrfs/nczarrfs/nczarr"
	"github.com/nczarrfs/nczarrfs/zmap"
)

// OmittedAttr is the global attribute of a classic file that names, one
// per line, what the file leaves out and why (ncmap.OmittedName: another
// name when a user attribute has this one).
const OmittedAttr = ncmap.OmittedAttr

// Classic is a group as a netCDF classic file (dataset.nc).
type Classic struct {
	*netcdf3.File
	// Omitted names each variable or attribute left out, with the
	// reason ("var: reason", "var:attr: reason", ":attr: reason" for a
	// global one), as OmittedAttr does.
	Omitted []string
	// Why5 is why the file is CDF-5, "" when it is CDF-2.
	Why5 string
	// BlockSize is the st_blksize to serve it with: the block every
	// variable begins on (netcdf3.BlockSize).
	BlockSize int64

	group   string
	omitted map[string]string // variable name -> why it is left out
	names   map[string]string // array name -> variable name, when escaped
}

// ClassicVar is what an array's info.json says of its place in its
// group's dataset.nc.
type ClassicVar struct {
	File string `json:"file"` // "/" + the classic file's key
	// Format is "64-bit offset" (CDF-2) or "cdf5" (CDF-5), as ncdump -k
	// names them.
	Format  string `json:"format"`
	Omitted string `json:"omitted,omitempty"` // why the array is not a variable of it
	// Name is the variable's name when netCDF's rules changed the
	// array's (ncmap.Escape).
	Name string `json:"name,omitempty"`
}

// Var says where the array name of the group is in the file.
func (c *Classic) Var(name string) *ClassicVar {
	return &ClassicVar{File: "/" + ClassicPath(c.group), Format: c.Format().String(), Omitted: c.omitted[name], Name: c.names[name]}
}

// readAhead is the most the kernel reads ahead of a read of the mount
// (its max_readahead).
const readAhead = 1 << 20

// NewClassic maps the group at path to a netCDF classic file, from the
// metadata alone, by the rules of package ncmap. The group's dimensions
// (and those of enclosing groups its arrays use), or for pure Zarr the
// arrays' named or anonymous dimensions, become the file's; its
// attributes the global ones; every array a variable, with its
// attributes, unless its type has no classic equivalent (see
// docs/tree.md). The file is CDF-2 unless a variable needs CDF-5.
func NewClassic(ctx context.Context, ds *nczarr.Dataset, path string) (*Classic, error) {
	l, err := ds.Layout(ctx, path)
	if err != nil {
		return nil, err
	}
	m := &classicMapper{ds: ds, path: path, dimIndex: map[string]int{}, varOmitted: map[string]string{},
		names: map[string]string{}, src: map[string]varSource{}, h: &netcdf3.Header{RecDim: -1}}
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
	// The variables alone decide the format: attributes are typed to it.
	why5 := m.h.Needs5()
	five := why5 != ""
	m.legalNames()
	for i := range m.h.Vars {
		m.varAttrs(&m.h.Vars[i], five)
	}
	attrs, err := ds.Attrs(ctx, path)
	if err != nil {
		return nil, err
	}
	m.h.Attrs = m.attrs("", visible(attrs), five)
	if len(m.omitted) > 0 {
		var names []string
		for _, a := range m.h.Attrs {
			names = append(names, a.Name)
		}
		text := strings.Join(m.omitted, "\n")
		m.h.Attrs = append(m.h.Attrs, netcdf3.Attr{Name: ncmap.OmittedName(names), Type: netcdf3.Char, Values: []byte(text)})
	}
	c := &Classic{Omitted: m.omitted, Why5: why5, group: path, omitted: m.varOmitted, names: m.names}
	m.h.Format = netcdf3.CDF2
	// The kernel's read-ahead around the header's reads, and netcdf-c's
	// block holding the header, read no variable: ncdump -h makes no data
	// request, and a variable that fails never hides the header.
	m.h.DataGap = readAhead
	if five {
		m.h.Format = netcdf3.CDF5
	}
	if c.File, err = netcdf3.New(m.h); err != nil {
		return nil, fmt.Errorf("group %q as netCDF classic: %w", "/"+path, err)
	}
	c.BlockSize = c.File.BlockSize()
	return c, nil
}

// varSource is what a variable is made from: its array and attributes,
// and for a byte-string array its string length.
type varSource struct {
	a      *nczarr.Array
	attrs  []nczarr.Attr
	strlen int
	name   string // the array's name
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
	names      map[string]string    // array name -> escaped variable name
	src        map[string]varSource // by variable name, as the array's
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

// variable maps the array at p, but for its attributes (varAttrs), or
// records why it is left out.
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
	m.src[name] = varSource{a: a, attrs: visible(attrs), strlen: strlen, name: name}
	v.Open = func() netcdf3.ReaderAt { return a.NewReader() }
	for _, k := range v.Dims {
		m.used[k] = true
	}
	m.h.Vars = append(m.h.Vars, v)
	return nil
}

// legalNames escapes the names of dimensions and variables that
// netCDF's rules forbid (ncmap.Escape). A variable whose legal name is
// another's is left out.
func (m *classicMapper) legalNames() {
	for i := range m.h.Dims {
		m.h.Dims[i].Name, _ = ncmap.Escape(m.h.Dims[i].Name)
	}
	taken := map[string]bool{}
	for _, v := range m.h.Vars {
		if ncmap.CheckName(v.Name) == nil {
			taken[v.Name] = true
		}
	}
	var vars []netcdf3.Var
	for _, v := range m.h.Vars {
		esc, changed := ncmap.Escape(v.Name)
		if !changed {
			vars = append(vars, v)
			continue
		}
		if err := ncmap.CheckName(esc); err != nil {
			m.omit(v.Name, "its name breaks netCDF's rules (%v) even escaped", err)
			continue
		}
		if taken[esc] {
			m.omit(v.Name, "its name escaped, %s, is another variable's", esc)
			continue
		}
		taken[esc] = true
		m.names[v.Name] = esc
		src := m.src[v.Name]
		v.Name = esc
		m.src[esc] = src
		vars = append(vars, v)
	}
	m.h.Vars = vars
}

// varAttrs sets the attributes of variable v: its array's, typed for the
// format, its _FillValue (ncmap.Fill), and its array's name when the
// variable's is escaped.
func (m *classicMapper) varAttrs(v *netcdf3.Var, five bool) {
	src := m.src[v.Name]
	var user []nczarr.Attr
	var userFill *nczarr.Attr
	fillAt := -1
	for i, at := range src.attrs {
		switch at.Name {
		case ncmap.FillAttr:
			userFill = &src.attrs[i]
			fillAt = len(user)
			continue
		case ncmap.NameAttr:
			if _, escaped := m.names[src.name]; escaped {
				m.omit(src.name+":"+at.Name, "the attribute holds the array's name, its variable's being escaped")
				continue
			}
		}
		user = append(user, at)
	}
	v.Attrs = m.attrs(src.name, user, five)
	var fill []netcdf3.Attr
	if src.strlen > 0 {
		if userFill != nil || (ncmap.Pure(m.ds.Generation) && src.a.Meta.Fill != nil) {
			m.omit(src.name+":_FillValue", "a fill value of a string array has no netCDF classic form")
		}
	} else if f, ok, why := ncmap.Fill(m.ds.Generation, src.a, v.Type, userFill); ok {
		fill = append(fill, f)
	} else if why != "" {
		m.omit(src.name+":_FillValue", "%s", why)
	} else if userFill != nil {
		m.omit(src.name+":_FillValue", "fill_value is null: the reader serves no fill value")
	}
	if len(fill) > 0 {
		if fillAt < 0 || fillAt > len(v.Attrs) {
			fillAt = len(v.Attrs)
		}
		v.Attrs = append(v.Attrs[:fillAt:fillAt], append(fill, v.Attrs[fillAt:]...)...)
	}
	if src.name != v.Name {
		v.Attrs = append(v.Attrs, netcdf3.Attr{Name: ncmap.NameAttr, Type: netcdf3.Char, Values: []byte(src.name)})
	}
}

// attrs maps the attributes of the variable varName ("" for the
// group's) to their classic form: typed by ncmap, names escaped. Those
// with none are recorded as omitted.
func (m *classicMapper) attrs(varName string, as []nczarr.Attr, five bool) []netcdf3.Attr {
	var out []netcdf3.Attr
	taken := map[string]bool{}
	for _, a := range as {
		if ncmap.CheckName(a.Name) == nil {
			taken[a.Name] = true
		}
	}
	for _, a := range as {
		who := varName + ":" + a.Name
		na, why := ncmap.Attr(a, five)
		if why != "" {
			m.omit(who, "%s", why)
			continue
		}
		if esc, changed := ncmap.Escape(a.Name); changed {
			if err := ncmap.CheckName(esc); err != nil {
				m.omit(who, "its name breaks netCDF's rules (%v) even escaped", err)
				continue
			}
			if taken[esc] {
				m.omit(who, "its name escaped, %s, is another attribute's", esc)
				continue
			}
			taken[esc] = true
			na.Name = esc
		}
		out = append(out, na)
	}
	return out
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

// ClassicName is the base name of a group's classic file.
const ClassicName = "dataset.nc"

// ClassicPath is the key of the classic file of the group at path.
func ClassicPath(path string) string { return zmap.Join(path, ClassicName) }
