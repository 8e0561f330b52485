package nczarr

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/nczarrfs/nczarrfs/nczarr/chunked"
	"github.com/nczarrfs/nczarrfs/nczarr/zarrmeta"
	"github.com/nczarrfs/nczarrfs/zmap"
)

// An array's documents become an Array in three steps: the format's
// parser (zarrmeta.ParseV2, zarrmeta.ParseV3) reads them into one model,
// zarrmeta.Array; NCZarr's annotations are read on top of it
// (chunked.Annotations); and newArrayFrom builds the Array (chunked.New),
// whose read path sees only the model.

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
		return &Array{Path: path, Err: fmt.Errorf("%s: %w", key, err), Meta: Meta{AttrList: list, AttrErr: attrErr}}
	}
	m.AttrList, m.AttrErr = list, attrErr
	nc := annotationsV2(d.Generation, m, zattrs, v1)
	if nc.ItemSize != 0 {
		err = m.SetItemSize(nc.ItemSize)
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
		return &Array{Path: path, Err: fmt.Errorf("%s: %w", key, err), Meta: Meta{AttrList: list, AttrErr: attrErr}}
	}
	m.AttrList, m.AttrErr = list, attrErr
	return newArrayFrom(d, path, key, m, annotationsV3(m), nil)
}

// annotationsV2 reads NCZarr's v2 annotation of an array, which lives in
// its .zattrs, its .zarray or a 4.8.0 object v1, and netCDF's fill value
// for an array that states none.
func annotationsV2(gen Generation, m *zarrmeta.Array, zattrs, v1 object) chunked.Annotations {
	var info arrayInfo
	for _, o := range []object{zattrs.obj("_nczarr_array"), object(m.Doc).obj("_nczarr_array"), v1} {
		var ok bool
		if info, ok = parseArrayInfo(o); ok {
			break
		}
	}
	nc := chunked.Annotations{Scalar: info.Scalar, DimRefs: info.DimRefs, Fill: m.Fill}
	if gen == PureZarr {
		return nc
	}
	if m.DType.Kind == 'U' && m.DType.Size == 4 {
		nc.ItemSize = 1
	}
	if !m.HasFill {
		var ok bool
		if nc.Fill, ok = zattrs.get("_FillValue"); !ok {
			nc.Fill = netcdfDefaultFill(m.DType)
		}
	}
	return nc
}

// annotationsV3 reads NCZarr's v3 annotation of an array, _nczarr_array
// in its attributes.
func annotationsV3(m *zarrmeta.Array) chunked.Annotations {
	ann := object(m.Attrs).obj("_nczarr_array")
	nc := chunked.Annotations{Fill: m.Fill}
	if info, ok := parseArrayInfo(ann); ok {
		nc.DimRefs = info.DimRefs
	}
	nc.Alias, _ = ann["type_alias"].(string)
	return nc
}

// newArrayFrom builds the Array of the model m with NCZarr's annotations
// nc (chunked.New); codecErr is why m has no pipeline, if it has none. key
// names the metadata in errors.
func newArrayFrom(d *Dataset, path, key string, m *zarrmeta.Array, nc chunked.Annotations, codecErr error) *Array {
	if !nc.Scalar {
		nc.DimNames = dimNames(nc.DimRefs, m.DimNames, m.Shape)
	}
	return chunked.New(d.src, path, key, m, nc, codecErr)
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

// AnonymousDim is the name of an unnamed dimension of size n, as ncdump
// (netcdf-c 4.9.0) prints it for a pure Zarr array without
// _ARRAY_DIMENSIONS: "_zdim_16". header.cdl, info.json and ls all use it.
func AnonymousDim(n int64) string { return "_zdim_" + strconv.FormatInt(n, 10) }

// netcdfDefaultFill is netCDF's default fill for the type, used by NCZarr
// when an array states no fill value.
func netcdfDefaultFill(d DType) any {
	switch d.Kind {
	case 'i':
		return json.Number(map[int]string{1: "-127", 2: "-32767", 4: "-2147483647", 8: "-9223372036854775806"}[d.Size])
	case 'u':
		return json.Number(map[int]string{1: "255", 2: "65535", 4: "4294967295", 8: "18446744073709551614"}[d.Size])
	case 'f':
		return json.Number("9.9692099683868690e+36")
	}
	return nil
}
