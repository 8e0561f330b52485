package nczarr

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/nczarrfs/nczarrfs/nczarr/codec"
	"github.com/nczarrfs/nczarrfs/zmap"
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
	keys      keyEncoding
	pipe      *v3Pipeline
	gridShape []int64 // the chunk_grid's chunk shape: the shard shape when sharded
	codecs    []v3Codec
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

// keyEncoding is a chunk_key_encoding: "default" (c/0/1 or c.0.1) or
// "v2" (0.1 or 0/1).
type keyEncoding struct {
	v2  bool
	sep string
}

// key is the store key of the chunk (or shard) with grid index idx of the
// array at path.
func (k keyEncoding) key(path string, idx []int64) string {
	var b strings.Builder
	if !k.v2 {
		b.WriteString("c")
	}
	for i, x := range idx {
		if i > 0 || !k.v2 {
			b.WriteString(k.sep)
		}
		b.WriteString(strconv.FormatInt(x, 10))
	}
	if b.Len() == 0 {
		b.WriteString("0") // a 0-d array's one chunk, v2 style
	}
	return zmap.Join(path, b.String())
}

// v3Pipeline is a codec list, split by kind: array-to-array (transposes),
// array-to-bytes (bytes or sharding_indexed), then bytes-to-bytes.
type v3Pipeline struct {
	perms     [][]int // transpose orders, in encoding order
	bigEndian bool    // the bytes codec's endian
	shard     *shardSpec
	chain     *codec.Chain // the bytes-to-bytes codecs
	// whole decodes a shard stored through bytes-to-bytes codecs (chain),
	// one step at a time in decoding order: such a shard is read whole.
	whole []codec.Codec
}

// v3Codec is one entry of a "codecs" list.
type v3Codec struct {
	Name   string
	Config json.RawMessage
}

// parseV3Codecs reads a "codecs" list.
func parseV3Codecs(v any, what string) ([]v3Codec, error) {
	list, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("%s is missing or not a list", what)
	}
	out := make([]v3Codec, 0, len(list))
	for i, e := range list {
		var c v3Codec
		switch x := e.(type) {
		case string: // the short form: a name with no configuration
			c.Name = x
		case map[string]any:
			c.Name, _ = x["name"].(string)
			if cfg, ok := x["configuration"]; ok && cfg != nil {
				raw, err := json.Marshal(cfg)
				if err != nil {
					return nil, err
				}
				c.Config = raw
			}
		}
		if c.Name == "" {
			return nil, fmt.Errorf("%s[%d] has no name", what, i)
		}
		out = append(out, c)
	}
	return out, nil
}

// parseV3Pipeline checks a codec list for chunks of the given shape and
// element type, and builds its decoders.
func parseV3Pipeline(codecs []v3Codec, shape []int64, dt DType) (*v3Pipeline, error) {
	p := &v3Pipeline{}
	var bytesToBytes []json.RawMessage
	phase := 0 // 0: array-to-array, 1: after the array-to-bytes codec
	for _, c := range codecs {
		switch c.Name {
		case "transpose":
			if phase != 0 {
				return nil, fmt.Errorf("codec transpose after the array-to-bytes codec")
			}
			perm, err := parseTranspose(c.Config, len(shape))
			if err != nil {
				return nil, err
			}
			p.perms = append(p.perms, perm)
			shape = permute(shape, perm)
		case "bytes":
			if phase != 0 {
				return nil, fmt.Errorf("two array-to-bytes codecs")
			}
			phase = 1
			var cfg struct {
				Endian string `json:"endian"`
			}
			if len(c.Config) > 0 {
				if err := json.Unmarshal(c.Config, &cfg); err != nil {
					return nil, fmt.Errorf("codec bytes: %w", err)
				}
			}
			switch cfg.Endian {
			case "little", "":
			case "big":
				p.bigEndian = true
			default:
				return nil, fmt.Errorf("codec bytes: endian %q is not little or big", cfg.Endian)
			}
		case "sharding_indexed":
			if phase != 0 {
				return nil, fmt.Errorf("two array-to-bytes codecs")
			}
			phase = 1
			s, err := parseShardSpec(c.Config, shape, dt)
			if err != nil {
				return nil, fmt.Errorf("codec sharding_indexed: %w", err)
			}
			p.shard = s
		default:
			if phase == 0 {
				return nil, fmt.Errorf("codec %q comes before the array-to-bytes codec (bytes or sharding_indexed), where only transpose may", c.Name)
			}
			cfg, err := codec.V3Config(c.Name, c.Config)
			if err != nil {
				return nil, err
			}
			bytesToBytes = append(bytesToBytes, cfg)
		}
	}
	if phase == 0 {
		return nil, fmt.Errorf("codecs %v have no array-to-bytes codec (bytes or sharding_indexed)", names(codecs))
	}
	var err error
	if p.chain, err = codec.NewChain(bytesToBytes, nil, codec.ItemSize(dt.Size)); err != nil {
		return nil, err
	}
	if p.shard != nil {
		for _, cfg := range slices.Backward(bytesToBytes) {
			c, err := codec.Lookup(cfg)
			if err != nil {
				return nil, err
			}
			p.whole = append(p.whole, c)
		}
	}
	return p, nil
}

func names(codecs []v3Codec) []string {
	out := make([]string, len(codecs))
	for i, c := range codecs {
		out[i] = c.Name
	}
	return out
}

// parseTranspose reads a transpose codec's order: a permutation of the
// axes, or "C" / "F" as zarr-python 3's early versions and zarrita accept.
func parseTranspose(cfg json.RawMessage, rank int) ([]int, error) {
	var c struct {
		Order json.RawMessage `json:"order"`
	}
	if err := json.Unmarshal(cfg, &c); err != nil || c.Order == nil {
		return nil, fmt.Errorf("codec transpose: no order in %s", cfg)
	}
	perm := make([]int, rank)
	var s string
	if json.Unmarshal(c.Order, &s) == nil {
		for i := range perm {
			switch s {
			case "C":
				perm[i] = i
			case "F":
				perm[i] = rank - 1 - i
			default:
				return nil, fmt.Errorf("codec transpose: order %q", s)
			}
		}
		return perm, nil
	}
	if err := json.Unmarshal(c.Order, &perm); err != nil || len(perm) != rank {
		return nil, fmt.Errorf("codec transpose: order %s is not a permutation of %d axes", c.Order, rank)
	}
	seen := make([]bool, rank)
	for _, x := range perm {
		if x < 0 || x >= rank || seen[x] {
			return nil, fmt.Errorf("codec transpose: order %s is not a permutation of %d axes", c.Order, rank)
		}
		seen[x] = true
	}
	return perm, nil
}

// permute returns shape in the axis order perm: out[k] = shape[perm[k]].
func permute(shape []int64, perm []int) []int64 {
	out := make([]int64, len(shape))
	for k, p := range perm {
		out[k] = shape[p]
	}
	return out
}
