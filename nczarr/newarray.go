package nczarr

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"github.com/nczarrfs/nczarrfs/nczarr/zarrmeta"
	"github.com/nczarrfs/nczarrfs/zmap"
)

// An array's documents become an Array in three steps: the format's
// parser (zarrmeta.ParseV2, zarrmeta.ParseV3) reads them into one model,
// zarrmeta.Array; NCZarr's annotations are read on top of it (ncArray);
// and newArrayFrom builds the Array, whose read path sees only the model.

// ncArray is what NCZarr's annotations (and netCDF's conventions) say of
// an array beyond its Zarr metadata.
type ncArray struct {
	scalar  bool     // shape [1] that netCDF shows as a scalar
	dimRefs []string // dimension references, as written
	// itemSize is the element size when it is not the dtype's: 4.8-4.9.0
	// store netCDF's char as "<U1" with one byte a char. 0 otherwise.
	itemSize int
	fill     any    // the fill value to use (the model's, or netCDF's)
	alias    string // v3 type_alias: "char", "string", "json" or ""
}

// newArray builds the array at path from its v2 documents: .zarray,
// .zattrs as stored (nil when it has none) and for 4.8.0 metadata its .nczarray or
// .nczvar (nil otherwise). Problems are kept in Array.Err, so the array is
// still listed and only reads of its data fail.
func newArray(d *Dataset, path string, zarray, zattrsRaw []byte, v1 object) *Array {
	key := zmap.Join(path, ".zarray")
	zattrs, _ := parseObject(zattrsRaw) // nil when absent or unreadable
	list, attrErr := zarrmeta.ParseAttrs(zattrsRaw)
	m, err := zarrmeta.ParseV2(zarray, zattrs)
	if m == nil {
		// No model but its attributes: the array is still described.
		return &Array{Path: path, d: d, Err: fmt.Errorf("%s: %w", key, err), Meta: Meta{AttrList: list, AttrErr: attrErr}}
	}
	m.AttrList, m.AttrErr = list, attrErr
	nc := annotationsV2(d.Generation, m, zattrs, v1)
	if nc.itemSize != 0 {
		err = m.SetItemSize(nc.itemSize)
	}
	return newArrayFrom(d, path, key, m, nc, err)
}

// newArrayV3 builds the array at path from its zarr.json document doc,
// raw as stored.
// Problems are kept in Array.Err, as for v2 arrays.
func newArrayV3(d *Dataset, path string, doc object, raw []byte) *Array {
	key := zmap.Join(path, "zarr.json")
	list, attrErr := zarrmeta.ParseAttrsV3(raw)
	m, err := zarrmeta.ParseV3(doc)
	if err != nil {
		return &Array{Path: path, d: d, Err: fmt.Errorf("%s: %w", key, err), Meta: Meta{AttrList: list, AttrErr: attrErr}}
	}
	m.AttrList, m.AttrErr = list, attrErr
	return newArrayFrom(d, path, key, m, annotationsV3(m), nil)
}

// annotationsV2 reads NCZarr's v2 annotation of an array, which lives in
// its .zattrs, its .zarray or a 4.8.0 object v1, and netCDF's fill value
// for an array that states none.
func annotationsV2(gen Generation, m *zarrmeta.Array, zattrs, v1 object) ncArray {
	var info arrayInfo
	for _, o := range []object{zattrs.obj("_nczarr_array"), object(m.Doc).obj("_nczarr_array"), v1} {
		var ok bool
		if info, ok = parseArrayInfo(o); ok {
			break
		}
	}
	nc := ncArray{scalar: info.Scalar, dimRefs: info.DimRefs, fill: m.Fill}
	if gen == PureZarr {
		return nc
	}
	if m.DType.Kind == 'U' && m.DType.Size == 4 {
		nc.itemSize = 1
	}
	if !m.HasFill {
		var ok bool
		if nc.fill, ok = zattrs.get("_FillValue"); !ok {
			nc.fill = netcdfDefaultFill(m.DType)
		}
	}
	return nc
}

// annotationsV3 reads NCZarr's v3 annotation of an array, _nczarr_array
// in its attributes.
func annotationsV3(m *zarrmeta.Array) ncArray {
	ann := object(m.Attrs).obj("_nczarr_array")
	nc := ncArray{fill: m.Fill}
	if info, ok := parseArrayInfo(ann); ok {
		nc.dimRefs = info.DimRefs
	}
	nc.alias, _ = ann["type_alias"].(string)
	return nc
}

// newArrayFrom builds the Array of the model m with NCZarr's annotations
// nc; codecErr is why m has no pipeline, if it has none. key names the
// metadata in errors.
func newArrayFrom(d *Dataset, path, key string, m *zarrmeta.Array, nc ncArray, codecErr error) *Array {
	a := &Array{Path: path, d: d, Meta: *m, Scalar: nc.scalar, dimRefs: nc.dimRefs}
	fail := func(err error) *Array {
		a.Err = fmt.Errorf("%s: %w", key, err)
		return a
	}
	if !a.Scalar {
		a.DimNames = dimNames(nc.dimRefs, m.DimNames, m.Shape)
	}
	if m.DType.Kind == 'O' {
		if codecErr != nil {
			return fail(codecErr)
		}
		return a.initObjects(key)
	}
	a.ItemSize = m.DType.Size
	if nc.itemSize != 0 {
		a.ItemSize = nc.itemSize
	}
	if leaf := m.Leaf(); leaf != nil {
		a.Chain = leaf.Chain
		if leaf.BigEndian {
			a.swap = m.DType.SwapUnit()
		}
	}
	var err error
	if a.fill, err = m.EncodeFill(nc.fill, a.ItemSize); err != nil {
		return fail(err)
	}
	if err := typeAlias(&a.Meta.DType, nc.alias); err != nil {
		return fail(err)
	}
	n, ok := product(m.Shape)
	a.chunkElems, _ = product(m.Chunks)
	if !ok || n > math.MaxInt64/int64(a.ItemSize) {
		return fail(fmt.Errorf("shape %v is too large", m.Shape))
	}
	a.size = n * int64(a.ItemSize)
	if a.chunkElems <= 0 || a.chunkElems > maxChunkBytes/int64(a.ItemSize) {
		return fail(fmt.Errorf("chunks %v hold more than %d bytes", m.Chunks, maxChunkBytes))
	}
	if codecErr != nil {
		return fail(codecErr)
	}
	return a
}

// initObjects sets up an array of variable-length elements (v2 dtype
// "|O", v3 string and bytes types), as zarr-python reads it: it has no
// data, only JSON, whose fill value is the fill_value as written.
func (a *Array) initObjects(key string) *Array {
	m := &a.Meta
	o := &objects{codec: m.Pipeline.Elems.Codec, steps: m.Pipeline.Elems.Steps}
	var err error
	if o.fill, err = json.Marshal(m.Fill); err != nil {
		a.Err = fmt.Errorf("%s: fill_value: %w", key, err)
		return a
	}
	what := "an object array"
	if m.Format == 3 {
		what = "a variable-length array"
	}
	n, ok := product(m.Shape)
	a.chunkElems, _ = product(m.Chunks)
	if !ok || n > maxObjectsJSON/4 || a.chunkElems <= 0 || a.chunkElems > maxChunkBytes/4 {
		a.Err = fmt.Errorf("%s: shape %v or chunks %v are too large for %s", key, m.Shape, m.Chunks, what)
		return a
	}
	a.objects = o
	return a
}

// typeAlias applies NCZarr's _nczarr_array type_alias (spec appendix E)
// to dt: "char" on uint8 and "string" on r<8n> make the array netCDF's
// char and fixed-size string, |S1 and |Sn; the bytes stay as stored.
// "json" (on uint8) changes nothing.
func typeAlias(dt *DType, alias string) error {
	switch {
	case alias == "" || alias == "json":
	case alias == "char" && dt.Kind == 'u' && dt.Size == 1,
		alias == "string" && dt.Kind == 'V':
		dt.Kind = 'S'
		dt.Str = fmt.Sprintf("|S%d", dt.Size)
	default:
		return fmt.Errorf("_nczarr_array type_alias %q does not fit data_type %s", alias, dt.Str)
	}
	return nil
}

// dimNames names an array's dimensions the way netcdf-c would: NCZarr's
// dimension references, else the names the Zarr metadata gives (an
// unnamed one, "", gets the anonymous name), else anonymous names.
func dimNames(refs, names []string, shape []int64) []string {
	out := make([]string, len(shape))
	if len(refs) == len(shape) && len(refs) > 0 {
		for i, r := range refs {
			out[i] = r[strings.LastIndexByte(r, '/')+1:]
		}
		return out
	}
	for i, n := range shape {
		out[i] = AnonymousDim(n)
		if len(names) == len(shape) && names[i] != "" {
			out[i] = names[i]
		}
	}
	return out
}
