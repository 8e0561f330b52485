package nczarr

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/nczarrfs/nczarrfs/cache"
	"github.com/nczarrfs/nczarrfs/nczarr/codec"
	"github.com/nczarrfs/nczarrfs/nczarr/zarrmeta"
)

// loadInner reads and decodes the inner chunk of a sharded array that
// key names (innerKey) into a buffer from alloc; (nil, nil) when it is not
// stored. leaf is the pipeline that encoded it.
func (a *Array) loadInner(ctx context.Context, key string, alloc cache.Alloc, size int, cpu chan struct{}) (data []byte, leaf *zarrmeta.Pipeline, err error) {
	shard, idx, err := parseInnerKey(key, len(a.Meta.Shape))
	if err != nil {
		return nil, nil, err
	}
	r, leaf, ok, err := a.locateInner(ctx, shard, idx)
	if err != nil {
		return nil, nil, fmt.Errorf("chunk %s: %w", key, err)
	}
	if !ok {
		return nil, nil, nil
	}
	if leaf.Chain.Len() == 0 {
		if r.n != int64(size) {
			return nil, nil, fmt.Errorf("chunk %s: %w: stored %d bytes, want %d", key, codec.ErrCorrupt, r.n, size)
		}
		data = alloc(size)[:size]
		if err := a.readRegion(ctx, r.key, data, r.off); err != nil {
			return nil, nil, fmt.Errorf("chunk %s: %d bytes at %d: %w", key, r.n, r.off, err)
		}
		return data, leaf, nil
	}
	raw, put := pooledBuffer(int(r.n))
	if err := a.readRegion(ctx, r.key, raw, r.off); err != nil {
		put()
		return nil, nil, fmt.Errorf("chunk %s: %d bytes at %d: %w", key, r.n, r.off, err)
	}
	if data, err = decodeRaw(leaf.Chain, raw, put, alloc, size, cpu); err != nil {
		return nil, nil, fmt.Errorf("chunk %s: %w", key, err)
	}
	return data, leaf, nil
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
