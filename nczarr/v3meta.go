package nczarr

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
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

// v3DType maps a v3 data_type name onto a DType (byte order is set later,
// from the bytes codec).
func v3DType(v any) (DType, error) {
	if d, ok, err := v3ExtDType(v); ok {
		return d, err
	}
	name, ok := v.(string)
	if !ok {
		return DType{}, fmt.Errorf("data_type %v is not supported", v)
	}
	d := DType{Str: name}
	switch {
	case name == "bool":
		d.Kind, d.Size = 'b', 1
	case strings.HasPrefix(name, "int") || strings.HasPrefix(name, "uint") ||
		strings.HasPrefix(name, "float") || strings.HasPrefix(name, "complex"):
		kinds := map[string]byte{"int": 'i', "uint": 'u', "float": 'f', "complex": 'c'}
		i := strings.IndexAny(name, "0123456789")
		bits, err := strconv.Atoi(name[max(i, 0):])
		if i <= 0 || err != nil {
			return DType{}, fmt.Errorf("data_type %q is not supported", name)
		}
		d.Kind, d.Size = kinds[name[:i]], bits/8
		valid := map[byte][]int{'i': {8, 16, 32, 64}, 'u': {8, 16, 32, 64}, 'f': {16, 32, 64}, 'c': {64, 128}}[d.Kind]
		ok := false
		for _, b := range valid {
			ok = ok || b == bits
		}
		if !ok {
			return DType{}, fmt.Errorf("data_type %q is not supported", name)
		}
	case strings.HasPrefix(name, "r"):
		bits, err := strconv.Atoi(name[1:])
		if err != nil || bits <= 0 || bits%8 != 0 || bits > 8<<20 {
			return DType{}, fmt.Errorf("data_type %q: raw types take a positive multiple of 8 bits", name)
		}
		d.Kind, d.Size = 'V', bits/8
	default:
		return DType{}, fmt.Errorf("data_type %q is not supported", name)
	}
	return d, nil
}

// v3Fill returns one element of a v3 fill_value in the output form of
// data. Beyond what v2 allows, v3 writes floats (and the parts of complex
// numbers) as hex strings of their bits, "0x7fc00000", and raw types as a
// list of byte values.
func v3Fill(d DType, v any) ([]byte, error) {
	bad := func() ([]byte, error) {
		return nil, fmt.Errorf("fill_value %v does not fit data_type %s", v, d.Str)
	}
	if v == nil {
		return make([]byte, d.Size), nil // not the spec's, but zeros as v2 reads null
	}
	if len(d.Fields) > 0 {
		return structFill(d, v)
	}
	switch d.Kind {
	case 'S':
		return base64Fill(d, v)
	case 'U':
		if _, ok := v.(string); !ok {
			return bad()
		}
	case 'f':
		if s, ok := v.(string); ok && strings.HasPrefix(s, "0x") {
			return hexFloat(s, d.Size)
		}
	case 'c':
		parts, ok := v.([]any)
		if !ok || len(parts) != 2 {
			return bad()
		}
		half := DType{Str: d.Str, Kind: 'f', Size: d.Size / 2}
		out := make([]byte, 0, d.Size)
		for _, p := range parts {
			b, err := v3Fill(half, p)
			if err != nil {
				return bad()
			}
			out = append(out, b...)
		}
		return out, nil
	case 'V':
		if _, ok := v.(string); ok {
			return base64Fill(d, v) // raw_bytes
		}
		list, ok := v.([]any)
		if !ok {
			if v == nil {
				return make([]byte, d.Size), nil
			}
			return bad()
		}
		if len(list) != d.Size {
			return bad()
		}
		out := make([]byte, d.Size)
		for i, e := range list {
			n, ok := e.(json.Number)
			x, err := strconv.ParseUint(string(n), 10, 8)
			if !ok || err != nil {
				return bad()
			}
			out[i] = byte(x)
		}
		return out, nil
	case 'i', 'u':
		// Integral and in range: unlike zarr-python 2, v3 does not wrap.
		n, ok := v.(json.Number)
		if !ok {
			return bad()
		}
		s := string(n)
		if strings.ContainsAny(s, ".eE") {
			// An integer written as a float, 2.0.
			f, err := strconv.ParseFloat(s, 64)
			if err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
				return bad()
			}
			s = strconv.FormatFloat(f, 'f', -1, 64)
			v = json.Number(s)
		}
		var err error
		if d.Kind == 'i' {
			_, err = strconv.ParseInt(s, 10, 8*d.Size)
		} else {
			_, err = strconv.ParseUint(s, 10, 8*d.Size)
		}
		if err != nil {
			return bad()
		}
	}
	return d.encodeFill(v, d.Size)
}

// hexFloat reads "0x..." as the bits of an IEEE float of size bytes and
// returns them little-endian.
func hexFloat(s string, size int) ([]byte, error) {
	u, err := strconv.ParseUint(s[2:], 16, 64)
	if err != nil || len(s) != 2+2*size {
		return nil, fmt.Errorf("fill_value %q is not %d hex digits", s, 2*size)
	}
	out := make([]byte, 8)
	binary.LittleEndian.PutUint64(out, u)
	return out[:size], nil
}

// base64Fill reads the fill of null_terminated_bytes and raw_bytes: base64
// of at most the element's bytes, zero-padded.
func base64Fill(d DType, v any) ([]byte, error) {
	s, ok := v.(string)
	b, ok2 := pyBase64(s)
	if !ok || !ok2 || len(b) > d.Size {
		return nil, fmt.Errorf("fill_value %v is not base64 of at most %d bytes", v, d.Size)
	}
	out := make([]byte, d.Size)
	copy(out, b)
	return out, nil
}
