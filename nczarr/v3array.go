package nczarr

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"github.com/nczarrfs/nczarrfs/cache"
	"github.com/nczarrfs/nczarrfs/nczarr/codec"
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
	shape, err := intList(doc["shape"], "shape")
	if err != nil {
		return err
	}
	dt, err := v3DType(doc["data_type"])
	if err != nil {
		return err
	}
	grid := doc.obj("chunk_grid")
	if name, _ := grid["name"].(string); name != "regular" {
		return fmt.Errorf("chunk_grid %v is not supported (only regular)", doc["chunk_grid"])
	}
	gridShape, err := intList(grid.obj("configuration")["chunk_shape"], "chunk_grid chunk_shape")
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
	keys, err := parseKeyEncoding(doc["chunk_key_encoding"])
	if err != nil {
		return err
	}
	codecs, err := parseV3Codecs(doc["codecs"], "codecs")
	if err != nil {
		return err
	}
	pipe, err := parseV3Pipeline(codecs, gridShape, dt)
	if err != nil {
		return err
	}
	// The read path's grid is that of the innermost chunks.
	chunks, leaf := gridShape, pipe
	for leaf.shard != nil {
		chunks, leaf = leaf.shard.chunks, leaf.shard.inner
	}
	dt.BigEndian = leaf.bigEndian && dt.Size > 1 && dt.Kind != 'V' && dt.Kind != 'b'
	dt.Str = numpyDType(dt)
	a.Meta = Meta{Shape: shape, Chunks: chunks, DType: dt, Order: 'C', Separator: keys.sep, Fill: doc["fill_value"]}
	a.v3 = &v3Array{keys: keys, pipe: pipe, gridShape: gridShape, codecs: codecs}
	a.ItemSize = dt.Size
	a.swap = dt.swapUnit()
	a.Chain = leaf.chain
	attrs := doc.obj("attributes")
	a.DimNames = v3DimNames(attrs, doc["dimension_names"], shape)

	if a.fill, err = v3Fill(dt, doc["fill_value"]); err != nil {
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

// parseKeyEncoding reads a chunk_key_encoding; absent means "default".
func parseKeyEncoding(v any) (keyEncoding, error) {
	k := keyEncoding{sep: "/"}
	m, _ := v.(map[string]any)
	name, _ := m["name"].(string)
	switch name {
	case "default", "":
	case "v2":
		k.v2, k.sep = true, "."
	default:
		return k, fmt.Errorf("chunk_key_encoding %v is not supported", v)
	}
	if cfg, ok := m["configuration"].(map[string]any); ok {
		if s, ok := cfg["separator"].(string); ok {
			if s != "/" && s != "." {
				return k, fmt.Errorf("chunk_key_encoding separator %q is neither \"/\" nor \".\"", s)
			}
			k.sep = s
		}
	}
	return k, nil
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
	if v.pipe.shard == nil {
		return v.keys.key(a.Path, idx)
	}
	shard := make([]int64, len(idx))
	for d, x := range idx {
		shard[d] = x * a.Meta.Chunks[d] / v.gridShape[d]
	}
	return innerKey(v.keys.key(a.Path, shard), idx)
}

// loadV3 reads and decodes one chunk of a v3 array; (nil, nil) when it is
// not stored. The decoded bytes go into a buffer from alloc. When cpu is
// not nil, the decoding waits for a slot in it, as in load.
func (a *Array) loadV3(ctx context.Context, key string, alloc cache.Alloc, cpu chan struct{}) ([]byte, error) {
	size := int(a.chunkElems) * a.ItemSize
	alloc = allocOrMake(alloc)
	leaf := a.v3.pipe
	var data []byte
	if leaf.shard == nil {
		var err error
		if data, err = a.loadStored(ctx, key, leaf.chain, alloc, size, cpu); data == nil || err != nil {
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
		if leaf.chain.Len() == 0 {
			if r.n != int64(size) {
				return nil, fmt.Errorf("chunk %s: %w: stored %d bytes, want %d", key, codec.ErrCorrupt, r.n, size)
			}
			data = alloc(size)[:size]
			if err := a.readFull(ctx, r.key, data, r.off); err != nil {
				return nil, fmt.Errorf("chunk %s: %d bytes at %d: %w", key, r.n, r.off, err)
			}
		} else {
			raw, put := pooledBuffer(int(r.n))
			if err := a.readFull(ctx, r.key, raw, r.off); err != nil {
				put()
				return nil, fmt.Errorf("chunk %s: %d bytes at %d: %w", key, r.n, r.off, err)
			}
			if data, err = decodeRaw(ctx, leaf.chain, raw, put, alloc, size, cpu); err != nil {
				return nil, fmt.Errorf("chunk %s: %w", key, err)
			}
		}
	}
	if leaf.bigEndian && a.swap > 1 {
		swapBytes(data, a.swap)
	}
	if len(leaf.perms) > 0 {
		data = untranspose(data, a.Meta.Chunks, leaf.perms, a.ItemSize)
	}
	return data, nil
}

// untranspose undoes a chunk's transpose codecs (perms in encoding order)
// and returns the chunk, of shape shape, in C order.
func untranspose(src []byte, shape []int64, perms [][]int, is int) []byte {
	shapes := [][]int64{shape}
	for _, p := range perms {
		shapes = append(shapes, permute(shapes[len(shapes)-1], p))
	}
	for k := len(perms) - 1; k >= 0; k-- {
		src = transposeBack(src, shapes[k], perms[k], is)
	}
	return src
}

// transposeBack turns src, the C-order bytes of the array of shape
// permute(shape, perm), into the C-order bytes of the array of shape
// shape whose element i is src's element j with j[k] = i[perm[k]].
func transposeBack(src []byte, shape []int64, perm []int, is int) []byte {
	rank := len(shape)
	enc := permute(shape, perm)
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

// numpyDType spells a v3 data type the way numpy (and .zarray) does, in
// its stored byte order: "<i4", ">f8", "|b1", "|V3". The describe package
// and info.json's stored_dtype take that form.
func numpyDType(d DType) string {
	order := byte('<')
	switch {
	case d.Size == 1 || d.Kind == 'V' || d.Kind == 'b':
		order = '|'
	case d.BigEndian:
		order = '>'
	}
	return fmt.Sprintf("%c%c%d", order, d.Kind, d.Size)
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
