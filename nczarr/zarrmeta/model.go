package zarrmeta

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/nczarrfs/nczarrfs/nczarr/codec"
	"github.com/nczarrfs/nczarrfs/nczarr/dtype"
)

// Array is the metadata of one Zarr array, whatever version of the format
// wrote it: ParseV2 reads it from a .zarray (and .zattrs), ParseV3 from a
// zarr.json. Package nczarr reads NCZarr's annotations on top of it and
// builds the read path from it alone.
type Array struct {
	Format int // 2 or 3
	Shape  []int64
	// Chunks is the shape of the chunks the read path decodes, in the
	// array's axes: the chunk grid's, or for a sharded array the
	// innermost chunks'.
	Chunks []int64
	// Grid is the chunk grid's chunk shape: that of the stored objects,
	// the shards of a sharded array.
	Grid []int64
	// Inner is the innermost chunks' shape in the axes of the shard as
	// its codecs see it (transposed when transposes come before
	// sharding_indexed); Chunks otherwise.
	Inner []int64
	// Outer is nil, or the transposes before sharding_indexed as one
	// permutation: axis k of the transposed shard is axis Outer[k] of the
	// array.
	Outer []int
	// DType is the data type; a v3 one carries the byte order of its
	// bytes codec and numpy's spelling in Str.
	DType dtype.DType
	Order byte // 'C' or 'F': a v2 array's order; v3 spells transposes as codecs
	Keys  KeyEncoding
	// Fill is fill_value as decoded JSON (nil for null); HasFill says
	// whether the document has one (a v2 document may leave it out).
	Fill    any
	HasFill bool
	// Pipeline is how a stored chunk (or shard) becomes a decoded one:
	// transposes (a v2 array's Fortran order is one), the array-to-bytes
	// codec (bytes, sharding_indexed, or an element codec) and the
	// bytes-to-bytes codecs. Nil when the codecs cannot be read: the
	// parser returns the model with the reason.
	Pipeline *Pipeline
	// The codecs as stored: a v2 array's filters and compressor (nil for
	// none), a v3 array's codecs list.
	Filters    []json.RawMessage
	Compressor json.RawMessage
	Codecs     []Codec
	// DimNames are the dimension names the document gives, one per axis
	// ("" for an unnamed one): v2 .zattrs' _ARRAY_DIMENSIONS, v3
	// dimension_names. Nil when there are none.
	DimNames []string
	// Attrs are the user's attributes (.zattrs, or zarr.json's
	// "attributes"), as decoded JSON; nil when there are none.
	Attrs map[string]any
	// AttrList is Attrs in stored order, each value's bytes as written
	// (ParseAttrs, ParseAttrsV3), which netCDF's typed attributes need;
	// AttrErr says why the attributes could not be read (the array is
	// still read).
	AttrList []Member
	AttrErr  error
	// Doc is the document (.zarray or zarr.json) as decoded JSON: NCZarr
	// keeps annotations there too.
	Doc map[string]any
}

// Leaf is the pipeline that decodes the innermost chunks: Pipeline, or
// for a sharded array the innermost shard's inner pipeline.
func (m *Array) Leaf() *Pipeline {
	p := m.Pipeline
	for p != nil && p.Shard != nil {
		p = p.Shard.Inner
	}
	return p
}

// EncodeFill returns the fill value v (the model's Fill, or one NCZarr
// supplies) as one element of size bytes in the output form of data,
// spelled as the array's format spells fill values.
func (m *Array) EncodeFill(v any, size int) ([]byte, error) {
	if m.Format == 3 {
		return dtype.FillV3(m.DType, v)
	}
	if list, ok := v.([]any); ok && len(list) == 1 && m.DType.Kind != 'c' {
		v = list[0] // NCZarr V1 writes a one-element list
	}
	return m.DType.EncodeFill(v, size)
}

// Elems is an array-to-bytes codec that stores a chunk as a list of its
// elements: numcodecs' vlen-utf8, vlen-bytes, json2 and msgpack2.
type Elems struct {
	Codec string        // its id
	Steps []codec.Codec // the bytes-to-bytes codecs after it, in encoding order
}

// ElemCodecs are the ids of the element codecs.
var ElemCodecs = []string{"vlen-utf8", "vlen-bytes", "json2", "msgpack2"}

// isElemCodec reports whether id is an element codec.
func isElemCodec(id string) bool { return slices.Contains(ElemCodecs, id) }

// member returns the member of m named name, matched in any case when no
// member has exactly that name.
func member(m map[string]any, name string) (any, bool) {
	if v, ok := m[name]; ok {
		return v, true
	}
	for k, v := range m {
		if strings.EqualFold(k, name) {
			return v, true
		}
	}
	return nil, false
}

// objMember is the member of m named name (any case) as a JSON object, or
// nil.
func objMember(m map[string]any, name string) map[string]any {
	v, _ := member(m, name)
	o, _ := v.(map[string]any)
	return o
}
