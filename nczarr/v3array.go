package nczarr

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"github.com/nczarrfs/nczarrfs/cache"
	"github.com/nczarrfs/nczarrfs/nczarr/codec"
	"github.com/nczarrfs/nczarrfs/nczarr/dtype"
	"github.com/nczarrfs/nczarrfs/nczarr/zarrmeta"
	"github.com/nczarrfs/nczarrfs/zmap"
)

// v3Members are the members a v3 array's zarr.json may have. Any other
// member must be an object saying "must_understand": false.
var v3Members = map[string]bool{
	"zarr_format": true, "node_type": true, "shape": true, "data_type": true,
	"chunk_grid": true, "chunk_key_encoding": true, "fill_value": true,
	"codecs": true, "attributes": true, "dimension_names": true,
	"storage_transformers": true,
}

// newArrayV3 builds the array described by the zarr.json document doc.
// Problems are kept in Array.Err, as for v2 arrays.
func newArrayV3(d *Dataset, path string, doc object) *Array {
	a := &Array{Path: path, d: d}
	if err := a.initV3(doc); err != nil {
		a.Err = fmt.Errorf("%s: %w", zmap.Join(path, "zarr.json"), err)
	}
	return a
}

func (a *Array) initV3(doc object) error {
	for name, v := range doc {
		if v3Members[name] {
			continue
		}
		if m, ok := v.(map[string]any); !ok || m["must_understand"] != false {
			return fmt.Errorf("member %q is not understood", name)
		}
	}
	if list, _ := doc["storage_transformers"].([]any); len(list) > 0 {
		var names []string
		for _, e := range list {
			name, _ := object(asMap(e))["name"].(string)
			names = append(names, fmt.Sprintf("%q", name))
		}
		return fmt.Errorf("storage_transformers %s are not supported: chunks are read only as the codecs store them", strings.Join(names, ", "))
	}
	shape, err := zarrmeta.IntList(doc["shape"], "shape")
	if err != nil {
		return err
	}
	dt, err := dtype.ParseV3(doc["data_type"])
	if err != nil {
		return err
	}
	grid := doc.obj("chunk_grid")
	if name, _ := grid["name"].(string); name != "regular" {
		return fmt.Errorf("chunk_grid %v is not supported (only regular)", doc["chunk_grid"])
	}
	gridShape, err := zarrmeta.IntList(grid.obj("configuration")["chunk_shape"], "chunk_grid chunk_shape")
	if err != nil {
		return err
	}
	if len(gridShape) != len(shape) {
		return fmt.Errorf("chunk_shape %v and shape %v differ in rank", gridShape, shape)
	}
	for _, c := range gridShape {
		if c <= 0 {
			return fmt.Errorf("bad chunk_shape %v", gridShape)
		}
	}
	keys, err := zarrmeta.ParseKeyEncoding(doc["chunk_key_encoding"])
	if err != nil {
		return err
	}
	codecs, err := zarrmeta.ParseCodecs(doc["codecs"], "codecs")
	if err != nil {
		return err
	}
	if dt.Kind == 'O' {
		return a.initObjectsV3(doc, shape, gridShape, keys, codecs, dt)
	}
	pipe, err := zarrmeta.ParsePipeline(codecs, gridShape, dt)
	if err != nil {
		return err
	}
	// The read path's grid is that of the innermost chunks. Transposes
	// before sharding_indexed make the shard's grid of inner chunks one of
	// the transposed shard: in the array's axes an inner chunk is a block
	// of the inverse-permuted shape.
	chunks, leaf := gridShape, pipe
	for leaf.Shard != nil {
		chunks, leaf = leaf.Shard.Chunks, leaf.Shard.Inner
	}
	inner := chunks
	var outer []int // axis k of the transposed shard is axis outer[k] of the array's
	if pipe.Shard != nil && len(pipe.Perms) > 0 {
		outer = composePerms(pipe.Perms, len(shape))
		chunks = make([]int64, len(inner))
		for k, ax := range outer {
			chunks[ax] = inner[k]
		}
	}
	dt.BigEndian = leaf.BigEndian && dt.Size > 1 && dt.Kind != 'V' && dt.Kind != 'b' && dt.Kind != 'S'
	if leaf.BigEndian && len(dt.Fields) > 0 {
		for _, f := range dt.Fields {
			if f.DType.SwapUnit() > 0 || f.DType.Size > 1 && f.DType.Kind != 'S' && f.DType.Kind != 'V' && f.DType.Kind != 'b' {
				return fmt.Errorf("data_type struct with multi-byte fields stored big-endian is not supported")
			}
		}
	}
	dt.Str = dt.Numpy()
	a.Meta = Meta{Shape: shape, Chunks: chunks, DType: dt, Order: 'C', Separator: keys.Sep, Fill: doc["fill_value"]}
	a.v3 = &v3Array{keys: keys, pipe: pipe, gridShape: gridShape, codecs: codecs, inner: inner, outer: outer}
	a.ItemSize = dt.Size
	a.swap = dt.SwapUnit()
	a.Chain = leaf.Chain
	attrs := doc.obj("attributes")
	a.DimNames = v3DimNames(attrs, doc["dimension_names"], shape)
	if info, ok := parseArrayInfo(attrs.obj("_nczarr_array")); ok {
		a.dimRefs = info.DimRefs
	}

	if a.fill, err = dtype.FillV3(dt, doc["fill_value"]); err != nil {
		return err
	}
	if err := a.typeAlias(attrs); err != nil {
		return err
	}
	n, ok := product(shape)
	a.chunkElems, _ = product(chunks)
	if !ok || n > math.MaxInt64/int64(a.ItemSize) {
		return fmt.Errorf("shape %v is too large", shape)
	}
	a.size = n * int64(a.ItemSize)
	if a.chunkElems <= 0 || a.chunkElems > maxChunkBytes/int64(a.ItemSize) {
		return fmt.Errorf("chunks %v hold more than %d bytes", chunks, maxChunkBytes)
	}
	return nil
}

// initObjectsV3 sets up an array of a variable-length type (string,
// variable_length_bytes, bytes): its array-to-bytes codec is vlen-utf8 or
// vlen-bytes, the rest bytes-to-bytes codecs; like a v2 object array it
// has no data, only JSON.
func (a *Array) initObjectsV3(doc object, shape, chunks []int64, keys zarrmeta.KeyEncoding, codecs []zarrmeta.Codec, dt DType) error {
	want := "vlen-bytes"
	if dt.Str == "string" {
		want = "vlen-utf8"
	}
	if len(codecs) == 0 || strings.TrimPrefix(codecs[0].Name, "numcodecs.") != want {
		return fmt.Errorf("data_type %s needs %s as its first codec; codecs are %v", dt.Str, want, zarrmeta.Names(codecs))
	}
	o := &objects{codec: want}
	for _, c := range codecs[1:] {
		cfg, err := codec.V3Config(c.Name, c.Config)
		if err != nil {
			return err
		}
		step, err := codec.Lookup(cfg)
		if err != nil {
			return err
		}
		o.steps = append(o.steps, step)
	}
	fill := doc["fill_value"]
	if s, ok := fill.(string); ok && want == "vlen-bytes" {
		// A bytes fill is base64 of the bytes, as data.json spells bytes.
		if _, ok := dtype.Base64(s); !ok {
			return fmt.Errorf("fill_value %q is not base64", s)
		}
	}
	var err error
	if o.fill, err = json.Marshal(fill); err != nil {
		return err
	}
	a.Meta = Meta{Shape: shape, Chunks: chunks, DType: dt, Order: 'C', Separator: keys.Sep, Fill: fill}
	a.v3 = &v3Array{keys: keys, pipe: &zarrmeta.Pipeline{}, gridShape: chunks, codecs: codecs, inner: chunks}
	a.DimNames = v3DimNames(doc.obj("attributes"), doc["dimension_names"], shape)
	n, ok := product(shape)
	a.chunkElems, _ = product(chunks)
	if !ok || n > maxObjectsJSON/4 || a.chunkElems <= 0 || a.chunkElems > maxChunkBytes/4 {
		return fmt.Errorf("shape %v or chunks %v are too large for a variable-length array", shape, chunks)
	}
	a.objects = o
	return nil
}

// v3DimNames names the dimensions: NCZarr's dimension references, else
// dimension_names, else anonymous names as netcdf-c makes them.
func v3DimNames(attrs object, names any, shape []int64) []string {
	var refs []string
	if info, ok := parseArrayInfo(attrs.obj("_nczarr_array")); ok {
		refs = info.DimRefs
	}
	out := dimNames(refs, nil, shape)
	if len(refs) == len(shape) && len(refs) > 0 {
		return out
	}
	if list, ok := names.([]any); ok && len(list) == len(shape) {
		for i, n := range list {
			if s, ok := n.(string); ok && s != "" {
				out[i] = s
			}
		}
	}
	return out
}

// v3ChunkKey is the read path's key of the chunk with grid index idx: the
// stored chunk, or for a sharded array an inner chunk of a shard.
func (a *Array) v3ChunkKey(idx []int64) string {
	v := a.v3
	if v.pipe.Shard == nil {
		return v.keys.Key(a.Path, idx)
	}
	shard := make([]int64, len(idx))
	for d, x := range idx {
		shard[d] = x * a.Meta.Chunks[d] / v.gridShape[d]
	}
	return innerKey(v.keys.Key(a.Path, shard), idx)
}

// loadV3 reads and decodes one chunk of a v3 array; (nil, nil) when it is
// not stored. The decoded bytes go into a buffer from alloc. When cpu is
// not nil, the decoding waits for a slot in it, as in load.
func (a *Array) loadV3(ctx context.Context, key string, alloc cache.Alloc, cpu chan struct{}) ([]byte, error) {
	size := int(a.chunkElems) * a.ItemSize
	alloc = allocOrMake(alloc)
	leaf := a.v3.pipe
	var data []byte
	if leaf.Shard == nil {
		var err error
		if data, err = a.loadStored(ctx, key, leaf.Chain, alloc, size, cpu); data == nil || err != nil {
			return nil, err
		}
	} else {
		shard, idx, err := parseInnerKey(key, len(a.Meta.Shape))
		if err != nil {
			return nil, err
		}
		r, l, ok, err := a.locateInner(ctx, shard, idx)
		if err != nil {
			return nil, fmt.Errorf("chunk %s: %w", key, err)
		}
		if !ok {
			return nil, nil
		}
		leaf = l
		if leaf.Chain.Len() == 0 {
			if r.n != int64(size) {
				return nil, fmt.Errorf("chunk %s: %w: stored %d bytes, want %d", key, codec.ErrCorrupt, r.n, size)
			}
			data = alloc(size)[:size]
			if err := a.readRegion(ctx, r.key, data, r.off); err != nil {
				return nil, fmt.Errorf("chunk %s: %d bytes at %d: %w", key, r.n, r.off, err)
			}
		} else {
			raw, put := pooledBuffer(int(r.n))
			if err := a.readRegion(ctx, r.key, raw, r.off); err != nil {
				put()
				return nil, fmt.Errorf("chunk %s: %d bytes at %d: %w", key, r.n, r.off, err)
			}
			if data, err = decodeRaw(ctx, leaf.Chain, raw, put, alloc, size, cpu); err != nil {
				return nil, fmt.Errorf("chunk %s: %w", key, err)
			}
		}
	}
	if leaf.BigEndian && a.swap > 1 {
		swapBytes(data, a.swap)
	}
	if len(leaf.Perms) > 0 {
		data = untranspose(data, a.v3.inner, leaf.Perms, a.ItemSize)
	}
	if a.v3.outer != nil {
		data = untranspose(data, a.Meta.Chunks, a.v3.pipe.Perms, a.ItemSize)
	}
	return data, nil
}

// composePerms is the one permutation the transposes perms (in encoding
// order) make together: axis k of the result is axis out[k] of the input.
func composePerms(perms [][]int, rank int) []int {
	out := make([]int, rank)
	for k := range out {
		out[k] = k
	}
	for _, p := range perms {
		next := make([]int, rank)
		for k, x := range p {
			next[k] = out[x]
		}
		out = next
	}
	return out
}

// untranspose undoes a chunk's transpose codecs (perms in encoding order)
// and returns the chunk, of shape shape, in C order.
func untranspose(src []byte, shape []int64, perms [][]int, is int) []byte {
	shapes := [][]int64{shape}
	for _, p := range perms {
		shapes = append(shapes, zarrmeta.Permute(shapes[len(shapes)-1], p))
	}
	for k := len(perms) - 1; k >= 0; k-- {
		src = transposeBack(src, shapes[k], perms[k], is)
	}
	return src
}

// transposeBack turns src, the C-order bytes of the array of shape
// zarrmeta.Permute(shape, perm), into the C-order bytes of the array of shape
// shape whose element i is src's element j with j[k] = i[perm[k]].
func transposeBack(src []byte, shape []int64, perm []int, is int) []byte {
	rank := len(shape)
	enc := zarrmeta.Permute(shape, perm)
	// C strides of the encoded array, in elements, by decoded axis.
	stride := make([]int64, rank)
	s := int64(1)
	for k := rank - 1; k >= 0; k-- {
		stride[perm[k]] = s
		s *= enc[k]
	}
	dst := make([]byte, len(src))
	idx := make([]int64, rank)
	for c := int64(0); c < s; c++ {
		f := int64(0)
		for d := range rank {
			f += idx[d] * stride[d]
		}
		copy(dst[c*int64(is):(c+1)*int64(is)], src[f*int64(is):(f+1)*int64(is)])
		for d := rank - 1; d >= 0; d-- {
			idx[d]++
			if idx[d] < shape[d] {
				break
			}
			idx[d] = 0
		}
	}
	return dst
}

// v3Doc parses a zarr.json and checks its zarr_format.
func v3Doc(data []byte) (object, error) {
	doc, err := parseObject(data)
	if err != nil {
		return nil, err
	}
	if f, _ := doc["zarr_format"].(json.Number); f != "3" {
		return nil, fmt.Errorf("zarr_format %v is not 3", doc["zarr_format"])
	}
	switch t, _ := doc["node_type"].(string); t {
	case "array", "group":
	default:
		return nil, fmt.Errorf("node_type %q is not array or group", t)
	}
	return doc, nil
}

// nodeType is a zarr.json's node_type, checked by v3Doc.
func (o object) nodeType() string {
	t, _ := o["node_type"].(string)
	return t
}

// typeAlias applies NCZarr's _nczarr_array type_alias (spec appendix E):
// "char" on uint8 and "string" on r<8n> make the array netCDF's char and
// fixed-size string, |S1 and |Sn; the bytes stay as stored. "json" (on
// uint8) changes nothing.
func (a *Array) typeAlias(attrs object) error {
	alias, _ := attrs.obj("_nczarr_array")["type_alias"].(string)
	dt := &a.Meta.DType
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

// asMap is v as a JSON object, or nil.
func asMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}
