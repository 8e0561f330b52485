package describe

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"

	"github.com/nczarrfs/nczarrfs/describe/ncmap"
	"github.com/nczarrfs/nczarrfs/nczarr"
)

// CDL returns the dataset's header as `ncdump -h` (netcdf-c 4.9.0)
// prints it, with name on the first line: groups, dimensions, variables
// with their types, and typed attributes, in netCDF's definition order.
// For pure Zarr, whose dimensions are not shared, they are defined in the
// root group: the names in _ARRAY_DIMENSIONS, or "_zdim_<size>" for an
// anonymous one, in the order the arrays first use them, as netcdf-c 4.9.0
// names them. Arrays of Zarr types netCDF lacks (bool, complex, datetime,
// float16) appear as a comment.
func CDL(ctx context.Context, ds *nczarr.Dataset, name string) ([]byte, error) {
	w := &cdlWriter{ds: ds}
	if ds.Group("") == nil {
		// A dataset whose root is an array: one variable, no groups.
		return nil, fmt.Errorf("the dataset's root is an array, which netCDF cannot show")
	}
	if ds.Generation == nczarr.PureZarr {
		if err := w.zarrDims(ctx, ""); err != nil {
			return nil, err
		}
	}
	fmt.Fprintf(&w.b, "netcdf %s {\n", name)
	if err := w.group(ctx, "", 0); err != nil {
		return nil, err
	}
	w.b.WriteString("}\n")
	return w.b.Bytes(), nil
}

type cdlWriter struct {
	ds       *nczarr.Dataset
	b        bytes.Buffer
	rootDims []nczarr.NamedDim // pure Zarr: every dimension, in the root
}

// zarrDims collects pure Zarr's dimensions in netcdf-c's order: each
// group's arrays, then its groups, depth first.
func (w *cdlWriter) zarrDims(ctx context.Context, path string) error {
	l, err := w.ds.Layout(ctx, path)
	if err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, d := range w.rootDims {
		seen[d.Name] = true
	}
	for _, p := range l.Arrays {
		a := w.ds.Array(p)
		if a.Scalar || len(a.Meta.Shape) != len(a.DimNames) {
			continue
		}
		for i, n := range a.DimNames {
			if !seen[n] {
				seen[n] = true
				w.rootDims = append(w.rootDims, nczarr.NamedDim{Name: n, Dim: nczarr.Dim{Size: a.Meta.Shape[i]}})
			}
		}
	}
	for _, g := range l.Groups {
		if err := w.zarrDims(ctx, g); err != nil {
			return err
		}
	}
	return nil
}

// group writes the body of the group at path, nested depth levels deep.
func (w *cdlWriter) group(ctx context.Context, path string, depth int) error {
	ind := strings.Repeat("  ", depth)
	l, err := w.ds.Layout(ctx, path)
	if err != nil {
		return err
	}
	dims := l.Dims
	if w.ds.Generation == nczarr.PureZarr && path == "" {
		dims = w.rootDims
	}
	if len(dims) > 0 {
		fmt.Fprintf(&w.b, "%sdimensions:\n", ind)
		for _, d := range dims {
			if d.Unlimited {
				fmt.Fprintf(&w.b, "%s\t%s = UNLIMITED ; // (%d currently)\n", ind, d.Name, d.Size)
			} else {
				fmt.Fprintf(&w.b, "%s\t%s = %d ;\n", ind, d.Name, d.Size)
			}
		}
	}
	if len(l.Arrays) > 0 {
		fmt.Fprintf(&w.b, "%svariables:\n", ind)
	}
	for _, p := range l.Arrays {
		if err := w.variable(ctx, p, ind); err != nil {
			return err
		}
	}
	attrs, err := w.ds.Attrs(ctx, path)
	if err != nil {
		return err
	}
	attrs = visible(attrs)
	if len(attrs) > 0 {
		what := "group"
		if path == "" {
			what = "global"
		}
		fmt.Fprintf(&w.b, "\n%s// %s attributes:\n", ind, what)
		for _, a := range attrs {
			w.attr(ind, "", a, "")
		}
	}
	for _, g := range l.Groups {
		fmt.Fprintf(&w.b, "\n%sgroup: %s {\n", ind, baseName(g))
		if err := w.group(ctx, g, depth+1); err != nil {
			return err
		}
		fmt.Fprintf(&w.b, "%s  } // group %s\n", ind, baseName(g))
	}
	return nil
}

// visible drops the attributes ncdump -h does not show.
func visible(attrs []nczarr.Attr) []nczarr.Attr {
	var out []nczarr.Attr
	for _, a := range attrs {
		if a.Name != "_NCProperties" {
			out = append(out, a)
		}
	}
	return out
}

func (w *cdlWriter) variable(ctx context.Context, path, ind string) error {
	a := w.ds.Array(path)
	name := baseName(path)
	typ := NCType(a)
	if typ == "" {
		if a.Meta.DType.Str == "" {
			fmt.Fprintf(&w.b, "%s\t// %s: unreadable metadata\n", ind, name)
		} else {
			fmt.Fprintf(&w.b, "%s\t// %s: dtype %q has no netCDF type\n", ind, name, a.Meta.DType.Str)
		}
		return nil
	}
	fmt.Fprintf(&w.b, "%s\t%s %s", ind, typ, name)
	if !a.Scalar && len(a.Meta.Shape) > 0 {
		fmt.Fprintf(&w.b, "(%s)", strings.Join(a.DimNames, ", "))
	}
	w.b.WriteString(" ;\n")
	attrs, err := w.ds.Attrs(ctx, path)
	if err != nil {
		return err
	}
	for _, at := range visible(attrs) {
		w.attr(ind, name, at, typ)
	}
	return nil
}

// attr writes one attribute line; varType is the variable's type, which
// its _FillValue takes. Other attributes are typed by ncmap.AttrType,
// in netCDF-4's types (header.cdl shows the dataset, not dataset.nc).
func (w *cdlWriter) attr(ind, varName string, a nczarr.Attr, varType string) {
	typ := varType
	if a.Name != ncmap.FillAttr || varType == "" {
		var why string
		if typ, why = ncmap.AttrType(a, true); why != "" {
			fmt.Fprintf(&w.b, "%s\t\t// %s:%s: %s\n", ind, varName, a.Name, why)
			return
		}
	}
	prefix := ""
	if typ == "string" {
		prefix = "string "
	}
	fmt.Fprintf(&w.b, "%s\t\t%s%s:%s = %s ;\n", ind, prefix, varName, a.Name, FormatAttr(typ, a.Value))
}

// FormatAttr formats an attribute value of netCDF type typ the way ncdump
// does: numbers with ncdump's type suffixes (-1b, 2s, 3, 4UB, 5US, 6U,
// 7LL, 8ULL, 1.5f, 2.5), floats with 7 and doubles with 15 significant
// digits, trailing zeros trimmed; char values as one quoted string; JSON
// values (type "json", or char holding no string) as netcdf-c writes the
// JSON back.
func FormatAttr(typ string, raw json.RawMessage) string {
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return quoteCDL(string(raw))
	}
	switch typ {
	case "char", "json":
		if s, ok := v.(string); ok && typ == "char" {
			return quoteCDL(s)
		}
		return quoteCDL(ncmap.JSONText(raw))
	case "string":
		list, ok := v.([]any)
		if !ok {
			list = []any{v}
		}
		parts := make([]string, len(list))
		for i, e := range list {
			s, ok := e.(string)
			if !ok {
				s = jsonText(e)
			}
			parts[i] = quoteCDL(s)
		}
		return strings.Join(parts, ", ")
	}
	list, ok := v.([]any)
	if !ok {
		list = []any{v}
	}
	parts := make([]string, len(list))
	for i, e := range list {
		parts[i] = formatNumber(typ, e)
	}
	return strings.Join(parts, ", ")
}

var intSuffix = map[string]string{
	"byte": "b", "short": "s", "int": "", "ubyte": "UB", "ushort": "US",
	"uint": "U", "int64": "LL", "uint64": "ULL",
}

// formatNumber formats one element of a numeric attribute.
func formatNumber(typ string, v any) string {
	var f float64
	var i *big.Int
	switch x := v.(type) {
	case bool:
		f = 0
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
			if f, err = strconv.ParseFloat(x.String(), 64); err != nil {
				return x.String()
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
			return quoteCDL(x)
		}
	default:
		return jsonText(v)
	}
	switch typ {
	case "float":
		return formatFloat(float64(float32(f)), 7, "f")
	case "double":
		return formatFloat(f, 15, "")
	}
	if i == nil {
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return "0" + intSuffix[typ]
		}
		i, _ = big.NewFloat(math.Trunc(f)).Int(nil)
	}
	return i.String() + intSuffix[typ]
}

// formatFloat is C's "%#.<digits>g" with trailing zeros of the mantissa
// trimmed (ncdump's tztrim), then suffix; non-finite values are NaN,
// Infinity and -Infinity with the suffix.
func formatFloat(f float64, digits int, suffix string) string {
	switch {
	case math.IsNaN(f):
		return "NaN" + suffix
	case math.IsInf(f, 1):
		return "Infinity" + suffix
	case math.IsInf(f, -1):
		return "-Infinity" + suffix
	}
	s := strconv.FormatFloat(f, 'g', digits, 64)
	// FormatFloat drops what %#g keeps: restore the point, then trim.
	mant, exp, hasExp := strings.Cut(s, "e")
	if !strings.Contains(mant, ".") {
		mant += "."
	}
	mant = strings.TrimRight(mant, "0")
	if hasExp {
		return mant + "e" + exp + suffix
	}
	return mant + suffix
}

// quoteCDL quotes s as ncdump writes a char attribute.
func quoteCDL(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '\v':
			b.WriteString(`\v`)
		case '\\':
			b.WriteString(`\\`)
		case '\'':
			b.WriteString(`\'`)
		case '"':
			b.WriteString(`\"`)
		default:
			if c < 0x20 || c == 0x7f {
				fmt.Fprintf(&b, "\\%03o", c)
			} else {
				b.WriteByte(c)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}

// jsonText is v as JSON without Go's escaping of <, > and &, as netcdf-c
// writes JSON-valued attributes.
func jsonText(v any) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return ""
	}
	return strings.TrimSuffix(b.String(), "\n")
}
