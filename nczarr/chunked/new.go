package chunked

import (
	"encoding/json"
	"fmt"
	"math"

	"github.com/nczarrfs/nczarrfs/nczarr/dtype"
	"github.com/nczarrfs/nczarrfs/nczarr/zarrmeta"
)

// Annotations is what the hierarchy (NCZarr's annotations, netCDF's
// conventions) says of an array beyond its Zarr model.
type Annotations struct {
	Scalar   bool     // shape [1] that netCDF shows as a scalar
	DimRefs  []string // NCZarr dimension references, as written
	DimNames []string // the dimensions' names; nil for a scalar
	// ItemSize is the element size when it is not the dtype's: 4.8-4.9.0
	// store netCDF's char as "<U1" with one byte a char. 0 otherwise.
	ItemSize int
	Fill     any    // the fill value to use (the model's, or netCDF's)
	Alias    string // NCZarr v3 type_alias: "char", "string", "json" or ""
}

// New builds the Array of the model m, read from src, with the
// hierarchy's annotations nc; codecErr is why m has no pipeline, if it has
// none. key names the metadata in errors. Problems are kept in Array.Err,
// so the array is still listed and only reads of its data fail.
func New(src *Source, path, key string, m *zarrmeta.Array, nc Annotations, codecErr error) *Array {
	a := &Array{Path: path, src: src, Meta: *m, Scalar: nc.Scalar, DimRefs: nc.DimRefs, DimNames: nc.DimNames}
	fail := func(err error) *Array {
		a.Err = fmt.Errorf("%s: %w", key, err)
		return a
	}
	if m.DType.Kind == 'O' {
		if codecErr != nil {
			return fail(codecErr)
		}
		return a.initObjects(key)
	}
	a.ItemSize = m.DType.Size
	if nc.ItemSize != 0 {
		a.ItemSize = nc.ItemSize
	}
	if leaf := m.Leaf(); leaf != nil {
		a.Chain = leaf.Chain
		if leaf.BigEndian {
			a.swap = m.DType.SwapUnit()
		}
	}
	var err error
	if a.fill, err = m.EncodeFill(nc.Fill, a.ItemSize); err != nil {
		return fail(err)
	}
	if err := typeAlias(&a.Meta.DType, nc.Alias); err != nil {
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
	// Of a sharded array, the element codec is the innermost shards'.
	e := m.Leaf().Elems
	o := &objects{codec: e.Codec, steps: e.Steps}
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
func typeAlias(dt *dtype.DType, alias string) error {
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
