package zarrmeta

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/nczarrfs/nczarrfs/nczarr/codec"
	"github.com/nczarrfs/nczarrfs/nczarr/dtype"
)

// KeyEncoding is a chunk_key_encoding: "default" (c/0/1 or c.0.1) or
// "v2" (0.1 or 0/1).
type KeyEncoding struct {
	V2  bool
	Sep string
}

// Key is the store key of the chunk (or shard) with grid index idx of the
// array at path.
func (k KeyEncoding) Key(path string, idx []int64) string {
	var b strings.Builder
	if !k.V2 {
		b.WriteString("c")
	}
	for i, x := range idx {
		if i > 0 || !k.V2 {
			b.WriteString(k.Sep)
		}
		b.WriteString(strconv.FormatInt(x, 10))
	}
	if b.Len() == 0 {
		b.WriteString("0") // a 0-d array's one chunk, v2 style
	}
	if path == "" {
		return b.String()
	}
	return path + "/" + b.String()
}

// Pipeline is a codec list, split by kind: array-to-array (transposes),
// array-to-bytes (bytes or sharding_indexed), then bytes-to-bytes.
type Pipeline struct {
	Perms     [][]int // transpose orders, in encoding order
	BigEndian bool    // the bytes codec's endian
	Shard     *Shard
	Chain     *codec.Chain // the bytes-to-bytes codecs
	// whole decodes a shard stored through bytes-to-bytes codecs (chain),
	// one step at a time in decoding order: such a shard is read whole.
	Whole []codec.Codec
}

// Codec is one entry of a "codecs" list.
type Codec struct {
	Name   string
	Config json.RawMessage
}

// ParseCodecs reads a "codecs" list.
func ParseCodecs(v any, what string) ([]Codec, error) {
	list, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("%s is missing or not a list", what)
	}
	out := make([]Codec, 0, len(list))
	for i, e := range list {
		var c Codec
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

// ParsePipeline checks a codec list for chunks of the given shape and
// element type, and builds its decoders.
func ParsePipeline(codecs []Codec, shape []int64, dt dtype.DType) (*Pipeline, error) {
	p := &Pipeline{}
	var bytesToBytes []json.RawMessage
	phase := 0 // 0: array-to-array, 1: after the array-to-bytes codec
	for _, c := range codecs {
		switch c.Name {
		case "transpose":
			if phase != 0 {
				return nil, fmt.Errorf("codec transpose after the array-to-bytes codec")
			}
			perm, err := ParseTranspose(c.Config, len(shape))
			if err != nil {
				return nil, err
			}
			p.Perms = append(p.Perms, perm)
			shape = Permute(shape, perm)
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
				p.BigEndian = true
			default:
				return nil, fmt.Errorf("codec bytes: endian %q is not little or big", cfg.Endian)
			}
		case "sharding_indexed":
			if phase != 0 {
				return nil, fmt.Errorf("two array-to-bytes codecs")
			}
			phase = 1
			s, err := ParseShard(c.Config, shape, dt)
			if err != nil {
				return nil, fmt.Errorf("codec sharding_indexed: %w", err)
			}
			p.Shard = s
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
		return nil, fmt.Errorf("codecs %v have no array-to-bytes codec (bytes or sharding_indexed)", Names(codecs))
	}
	var err error
	if p.Chain, err = codec.NewChain(bytesToBytes, nil, codec.ItemSize(dt.Size)); err != nil {
		return nil, err
	}
	if p.Shard != nil {
		for _, cfg := range slices.Backward(bytesToBytes) {
			c, err := codec.Lookup(cfg)
			if err != nil {
				return nil, err
			}
			p.Whole = append(p.Whole, c)
		}
	}
	return p, nil
}

// Names lists the codecs' names, for messages.
func Names(codecs []Codec) []string {
	out := make([]string, len(codecs))
	for i, c := range codecs {
		out[i] = c.Name
	}
	return out
}

// ParseTranspose reads a transpose codec's order: a permutation of the
// axes, or "C" / "F" as zarr-python 3's early versions and zarrita accept.
func ParseTranspose(cfg json.RawMessage, rank int) ([]int, error) {
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

// Permute returns shape in the axis order perm: out[k] = shape[perm[k]].
func Permute(shape []int64, perm []int) []int64 {
	out := make([]int64, len(shape))
	for k, p := range perm {
		out[k] = shape[p]
	}
	return out
}

// ParseKeyEncoding reads a chunk_key_encoding; absent means "default".
func ParseKeyEncoding(v any) (KeyEncoding, error) {
	k := KeyEncoding{Sep: "/"}
	m, _ := v.(map[string]any)
	name, _ := m["name"].(string)
	switch name {
	case "default", "":
	case "v2":
		k.V2, k.Sep = true, "."
	default:
		return k, fmt.Errorf("chunk_key_encoding %v is not supported", v)
	}
	if cfg, ok := m["configuration"].(map[string]any); ok {
		if s, ok := cfg["separator"].(string); ok {
			if s != "/" && s != "." {
				return k, fmt.Errorf("chunk_key_encoding separator %q is neither \"/\" nor \".\"", s)
			}
			k.Sep = s
		}
	}
	return k, nil
}
