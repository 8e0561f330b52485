package nczarr

import (
	"encoding/json"

	"github.com/nczarrfs/nczarrfs/nczarr/zarrmeta"
)

// The generations of Zarr v3 metadata: plain Zarr v3, and NCZarr's v3
// representation (attributes _nczarr_superblock with format 3,
// _nczarr_group and _nczarr_array inside each zarr.json).
const (
	ZarrV3   Generation = "zarr v3"
	NCZarrV3 Generation = "nczarr v3 (zarr.json attributes)"
)

// v3Array is what a Zarr v3 array adds to an Array: how chunk keys are
// spelled and the codec pipeline its chunks (or shards) went through.
type v3Array struct {
	keys      zarrmeta.KeyEncoding
	pipe      *zarrmeta.Pipeline
	gridShape []int64 // the chunk_grid's chunk shape: the shard shape when sharded
	codecs    []zarrmeta.Codec
	inner     []int64 // the innermost chunks' shape, in the axes of the (transposed) shard
	outer     []int   // nil, or the transposes before sharding_indexed as one permutation
}

// CodecV3 is one entry of a Zarr v3 array's "codecs" list.
type CodecV3 struct {
	Name          string
	Configuration json.RawMessage // nil when the entry has none
}

// CodecsV3 returns a Zarr v3 array's "codecs" list as stored, in encoding
// order (a sharded array's inner codecs are in the sharding_indexed
// entry's configuration); nil for a Zarr v2 array.
func (a *Array) CodecsV3() []CodecV3 {
	if a.v3 == nil {
		return nil
	}
	out := make([]CodecV3, len(a.v3.codecs))
	for i, c := range a.v3.codecs {
		out[i] = CodecV3{Name: c.Name, Configuration: c.Config}
	}
	return out
}
