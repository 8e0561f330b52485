package zarrmeta

import (
	"encoding/json"
	"fmt"

	"github.com/nczarrfs/nczarrfs/nczarr/codec"
	"github.com/nczarrfs/nczarrfs/nczarr/dtype"
)

// Shard is a sharding_indexed codec: a shard holds a grid of inner
// chunks, each encoded with the inner codecs, and an index of (offset,
// length) uint64 pairs, one per inner chunk in C order, at the end or the
// start of the shard, encoded with the index codecs. An inner chunk whose
// pair is all ones is not stored: it reads as the fill value.
type Shard struct {
	Chunks  []int64 // inner chunk shape
	Per     []int64 // inner chunks per shard, per dimension
	N       int64   // inner chunks per shard
	Inner   *Pipeline
	AtStart bool // index_location "start"

	IndexBig   bool         // the index's bytes codec is big-endian
	IndexChain *codec.Chain // the index's bytes-to-bytes codecs (crc32c)
	IndexLen   int64        // stored size of the index
}

// maxInner bounds the inner chunks of one shard, and so its index (16
// bytes each), which is read and kept whole.
const maxInner = 1 << 22

// ParseShard reads a sharding_indexed configuration for shards of the
// given shape.
func ParseShard(cfg json.RawMessage, shape []int64, dt dtype.DType) (*Shard, error) {
	var c struct {
		ChunkShape    []int64         `json:"chunk_shape"`
		Codecs        json.RawMessage `json:"codecs"`
		IndexCodecs   json.RawMessage `json:"index_codecs"`
		IndexLocation string          `json:"index_location"`
	}
	if err := json.Unmarshal(cfg, &c); err != nil {
		return nil, err
	}
	if len(c.ChunkShape) != len(shape) {
		return nil, fmt.Errorf("chunk_shape %v does not match the shard shape %v", c.ChunkShape, shape)
	}
	s := &Shard{Chunks: c.ChunkShape, Per: make([]int64, len(shape)), N: 1}
	for i, x := range c.ChunkShape {
		if x <= 0 || shape[i]%x != 0 {
			return nil, fmt.Errorf("chunk_shape %v does not divide the shard shape %v", c.ChunkShape, shape)
		}
		s.Per[i] = shape[i] / x
		if s.Per[i] > maxInner/s.N {
			return nil, fmt.Errorf("more than %d inner chunks per shard", maxInner)
		}
		s.N *= s.Per[i]
	}
	switch c.IndexLocation {
	case "", "end":
	case "start":
		s.AtStart = true
	default:
		return nil, fmt.Errorf("index_location %q is not start or end", c.IndexLocation)
	}
	var codecs, indexCodecs any
	if err := DecodeJSON(c.Codecs, &codecs); err != nil {
		return nil, fmt.Errorf("codecs: %w", err)
	}
	if err := DecodeJSON(c.IndexCodecs, &indexCodecs); err != nil {
		return nil, fmt.Errorf("index_codecs: %w", err)
	}
	inner, err := ParseCodecs(codecs, "codecs")
	if err != nil {
		return nil, err
	}
	if s.Inner, err = ParsePipeline(inner, c.ChunkShape, dt); err != nil {
		return nil, err
	}
	if s.Inner.Shard != nil && (len(s.Inner.Perms) > 0 || len(s.Inner.Whole) > 0) {
		return nil, fmt.Errorf("codecs: transpose before or bytes-to-bytes codecs after a nested sharding_indexed are not supported")
	}
	index, err := ParseCodecs(indexCodecs, "index_codecs")
	if err != nil {
		return nil, err
	}
	idx, err := ParsePipeline(index, append(append([]int64(nil), s.Per...), 2), dtype.DType{Str: "uint64", Kind: 'u', Size: 8})
	if err != nil {
		return nil, fmt.Errorf("index_codecs: %w", err)
	}
	if len(idx.Perms) > 0 || idx.Shard != nil {
		return nil, fmt.Errorf("index_codecs: only bytes and crc32c are supported")
	}
	s.IndexBig, s.IndexChain = idx.BigEndian, idx.Chain
	s.IndexLen = 16 * s.N
	for _, step := range idx.Chain.Steps() {
		if step.ID != "crc32c" {
			return nil, fmt.Errorf("index_codecs: %s is not a fixed-size codec (only crc32c is)", step.ID)
		}
		s.IndexLen += 4
	}
	return s, nil
}
