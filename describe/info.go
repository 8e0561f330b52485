package describe

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/nczarrfs/nczarrfs/describe/ncmap"
	"github.com/nczarrfs/nczarrfs/nczarr"
	"github.com/nczarrfs/nczarrfs/nczarr/codec"
)

// ArrayInfo is the content of an array's info.json.
type ArrayInfo struct {
	Name        string      `json:"name"`
	Path        string      `json:"path"` // "/" + key prefix
	Dimensions  []Dimension `json:"dimensions"`
	Shape       []int64     `json:"shape"`
	Chunks      []int64     `json:"chunks"`
	DType       string      `json:"dtype"`        // of `data`: little-endian
	StoredDType string      `json:"stored_dtype"` // as in .zarray
	NCType      string      `json:"nctype,omitempty"`
	ItemSize    int         `json:"itemsize"`  // bytes per element of `data`
	DataSize    int64       `json:"data_size"` // bytes of `data`
	Order       string      `json:"order,omitempty"`
	Separator   string      `json:"dimension_separator,omitempty"`
	Scalar      bool        `json:"scalar"`
	FillValue   any         `json:"fill_value"`
	Attributes  Attributes  `json:"attributes"`
	Codecs      []Codec     `json:"codecs"`
	Metadata    string      `json:"metadata"` // the metadata representation
	Error       string      `json:"error,omitempty"`
	// NetCDF is the array's place in its group's dataset.nc, when the
	// caller made that file (InfoIn).
	NetCDF *ClassicVar `json:"netcdf_classic,omitempty"`
}

// Dimension is a named dimension of an array.
type Dimension struct {
	Name string `json:"name"`
	Size int64  `json:"size"`
}

// Codec is one step of an array's codec chain, in encoding order.
type Codec struct {
	ID            string          `json:"id"`                // numcodecs id; for Zarr v3, the codec's name
	HDF5ID        int             `json:"hdf5_id,omitempty"` // HDF5 filter id
	Configuration json.RawMessage `json:"configuration"`
}

// Attributes are typed attributes in stored order; they marshal as one
// JSON object {"name": {"type": "short", "value": ...}, ...}, each type
// as header.cdl shows it (ncmap.AttrType: "" for an attribute netCDF
// cannot hold).
type Attributes []nczarr.Attr

// MarshalJSON writes the attributes in order.
func (as Attributes) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, a := range as {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(jsonString(a.Name))
		b.WriteString(`:{"type":`)
		typ, _ := ncmap.AttrType(a, true)
		b.Write(jsonString(typ))
		if a.DType != "" {
			b.WriteString(`,"dtype":`)
			b.Write(jsonString(a.DType))
		}
		b.WriteString(`,"value":`)
		b.Write(a.Value)
		b.WriteByte('}')
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// ReadArrayInfo gathers what info.json says about the array at path.
// Problems with the array itself go into Error; only a failure to read
// its attributes is returned as an error.
func ReadArrayInfo(ctx context.Context, ds *nczarr.Dataset, path string) (*ArrayInfo, error) {
	a := ds.Array(path)
	if a == nil {
		return nil, fmt.Errorf("%q: no such array", path)
	}
	m := a.Meta
	info := &ArrayInfo{
		Name:        baseName(path),
		Path:        "/" + path,
		Shape:       m.Shape,
		Chunks:      m.Chunks,
		DType:       DataDType(a),
		StoredDType: m.DType.Str,
		NCType:      NCType(a),
		ItemSize:    a.ItemSize,
		DataSize:    a.Size(),
		Separator:   m.Keys.Sep,
		Scalar:      a.Scalar,
		FillValue:   m.Fill,
		Metadata:    string(ds.Generation),
		Codecs:      []Codec{},
		Dimensions:  []Dimension{},
	}
	if m.Order != 0 {
		info.Order = string(m.Order)
	}
	if info.Shape == nil {
		info.Shape = []int64{}
	}
	if info.Chunks == nil {
		info.Chunks = []int64{}
	}
	if !a.Scalar {
		for i, n := range a.DimNames {
			if i < len(m.Shape) {
				info.Dimensions = append(info.Dimensions, Dimension{Name: n, Size: m.Shape[i]})
			}
		}
	}
	for _, c := range a.CodecsV3() {
		// Zarr v3 names its codecs itself (the sharding_indexed entry
		// holds the inner chain).
		cfg := c.Configuration
		if cfg == nil {
			cfg = json.RawMessage("{}")
		}
		info.Codecs = append(info.Codecs, Codec{ID: c.Name, HDF5ID: codec.HDF5ID(strings.TrimPrefix(c.Name, "numcodecs.")), Configuration: cfg})
	}
	for _, cfg := range append(append([]json.RawMessage(nil), m.Filters...), m.Compressor) {
		if a.CodecsV3() != nil {
			break // already listed, as stored
		}
		if len(cfg) == 0 || string(cfg) == "null" {
			continue
		}
		c := Codec{Configuration: cfg}
		if id, err := codec.ID(cfg); err == nil {
			c.ID, c.HDF5ID = codec.Describe(id)
		}
		info.Codecs = append(info.Codecs, c)
	}
	if a.Err != nil {
		info.Error = a.Err.Error()
	}
	attrs, err := ds.Attrs(ctx, path)
	if err != nil {
		return nil, err
	}
	info.Attributes = attrs
	return info, nil
}

// Info returns an array's info.json: ArrayInfo, indented, ending in a
// newline.
func Info(ctx context.Context, ds *nczarr.Dataset, path string) ([]byte, error) {
	return InfoIn(ctx, ds, path, nil)
}

// InfoIn is Info saying where the array is in c, its group's classic
// file (nil for none).
func InfoIn(ctx context.Context, ds *nczarr.Dataset, path string, c *Classic) ([]byte, error) {
	info, err := ReadArrayInfo(ctx, ds, path)
	if err != nil {
		return nil, err
	}
	if c != nil {
		info.NetCDF = c.Var(baseName(path))
	}
	return marshal(info)
}

// ParentGroup is the key of the group that holds the node at path.
func ParentGroup(path string) string {
	if i := strings.LastIndexByte(path, '/'); i >= 0 {
		return path[:i]
	}
	return ""
}

// DatasetInfo is what `nczarrfs info SOURCE` prints for a whole dataset.
type DatasetInfo struct {
	Metadata     string       `json:"metadata"`
	Consolidated bool         `json:"consolidated"`
	Groups       []GroupInfo  `json:"groups"`
	Arrays       []*ArrayInfo `json:"arrays"`
}

// GroupInfo describes one group: its path, shared dimensions and
// attributes.
type GroupInfo struct {
	Path       string      `json:"path"`
	Dimensions []Dimension `json:"dimensions"`
	Attributes Attributes  `json:"attributes"`
	// NetCDF names the group's dataset.nc and its format.
	NetCDF *ClassicVar `json:"netcdf_classic,omitempty"`
}

// Dataset returns the info of every group and array of the dataset as
// JSON, in the order of ds.Groups and ds.Arrays.
func Dataset(ctx context.Context, ds *nczarr.Dataset) ([]byte, error) {
	out := DatasetInfo{Metadata: string(ds.Generation), Consolidated: ds.Consolidated,
		Groups: []GroupInfo{}, Arrays: []*ArrayInfo{}}
	classics := map[string]*Classic{}
	for _, p := range ds.Groups() {
		g := GroupInfo{Path: "/" + p, Dimensions: []Dimension{}}
		if c, err := NewClassic(ctx, ds, p); err == nil {
			classics[p] = c
			g.NetCDF = &ClassicVar{File: "/" + ClassicPath(p), Format: c.Format().String()}
		}
		l, err := ds.Layout(ctx, p)
		if err != nil {
			return nil, err
		}
		for _, d := range l.Dims {
			g.Dimensions = append(g.Dimensions, Dimension{Name: d.Name, Size: d.Size})
		}
		if g.Attributes, err = ds.Attrs(ctx, p); err != nil {
			return nil, err
		}
		out.Groups = append(out.Groups, g)
	}
	for _, p := range ds.Arrays() {
		info, err := ReadArrayInfo(ctx, ds, p)
		if err != nil {
			return nil, err
		}
		if c := classics[ParentGroup(p)]; c != nil {
			info.NetCDF = c.Var(baseName(p))
		}
		out.Arrays = append(out.Arrays, info)
	}
	return marshal(out)
}

// jsonString is s as a JSON string, without HTML escaping.
func jsonString(s string) []byte {
	b, _ := marshalCompact(s)
	return b
}

func marshalCompact(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// marshal writes v as indented JSON without HTML escaping (a dtype is
// "<f4", not "\u003cf4"), ending in a newline.
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
