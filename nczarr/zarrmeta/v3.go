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
	// Elems is set when the array-to-bytes codec is an element codec
	// (then there are no transposes, bytes codec or shard).
	Elems *Elems
	// Whole decodes a shard stored through bytes-to-bytes codecs (chain),
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
		case "numcodecs.pcodec":
			// An array-to-bytes codec: pco turns the numbers into bytes
			// itself, so it is the chain's innermost step and its output
			// is the chunk in little-endian order.
			if phase != 0 {
				return nil, fmt.Errorf("two array-to-bytes codecs")
			}
			phase = 1
			cfg, err := codec.V3Config(c.Name, c.Config)
			if err != nil {
				return nil, err
			}
			bytesToBytes = append(bytesToBytes, cfg)
		case "vlen-utf8", "vlen-bytes", "numcodecs.vlen-utf8", "numcodecs.vlen-bytes":
			// The inner codec of a shard of a variable-length type (a
			// shard's own: an unsharded array's is read by v3Elems).
			if phase != 0 {
				return nil, fmt.Errorf("two array-to-bytes codecs")
			}
			phase = 1
			want := vlenCodec(dt)
			if name := strings.TrimPrefix(c.Name, "numcodecs."); dt.Kind != 'O' || name != want {
				return nil, fmt.Errorf("codec %s does not fit data_type %s", c.Name, dt.Str)
			}
			p.Elems = &Elems{Codec: want}
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
				return nil, fmt.Errorf("codec %q comes before the array-to-bytes codec (bytes, sharding_indexed or numcodecs.pcodec), where only transpose may", c.Name)
			}
			cfg, err := codec.V3Config(c.Name, c.Config)
			if err != nil {
				return nil, err
			}
			bytesToBytes = append(bytesToBytes, cfg)
		}
	}
	if phase == 0 {
		return nil, fmt.Errorf("codecs %v have no array-to-bytes codec (bytes, sharding_indexed or numcodecs.pcodec)", Names(codecs))
	}
	if dt.Kind == 'O' && p.Elems == nil && p.Shard == nil {
		return nil, fmt.Errorf("data_type %s needs %s as its array-to-bytes codec; codecs are %v", dt.Str, vlenCodec(dt), Names(codecs))
	}
	var err error
	if p.Elems != nil {
		// Element codecs decode whole chunks into elements; the
		// bytes-to-bytes codecs run before them, one by one.
		for _, cfg := range bytesToBytes {
			step, err := codec.Lookup(cfg)
			if err != nil {
				return nil, err
			}
			p.Elems.Steps = append(p.Elems.Steps, step)
		}
		bytesToBytes = nil
	}
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

// v3Members are the members a v3 array's zarr.json may have. Any other
// member must be an object saying "must_understand": false.
var v3Members = map[string]bool{
	"zarr_format": true, "node_type": true, "shape": true, "data_type": true,
	"chunk_grid": true, "chunk_key_encoding": true, "fill_value": true,
	"codecs": true, "attributes": true, "dimension_names": true,
	"storage_transformers": true,
}

// ParseV3 reads a v3 array's zarr.json, decoded (DecodeJSON); the caller
// has checked its zarr_format and node_type. Any problem is an error and
// no model: the codecs decide the shape of the chunks it reports.
func ParseV3(doc map[string]any) (*Array, error) {
	for name, v := range doc {
		if v3Members[name] {
			continue
		}
		if m, ok := v.(map[string]any); !ok || m["must_understand"] != false {
			return nil, fmt.Errorf("member %q is not understood", name)
		}
	}
	if list, _ := doc["storage_transformers"].([]any); len(list) > 0 {
		var names []string
		for _, e := range list {
			m, _ := e.(map[string]any)
			name, _ := m["name"].(string)
			names = append(names, fmt.Sprintf("%q", name))
		}
		return nil, fmt.Errorf("storage_transformers %s are not supported: chunks are read only as the codecs store them", strings.Join(names, ", "))
	}
	shape, err := IntList(doc["shape"], "shape")
	if err != nil {
		return nil, err
	}
	dt, err := dtype.ParseV3(doc["data_type"])
	if err != nil {
		return nil, err
	}
	grid := objMember(doc, "chunk_grid")
	if name, _ := grid["name"].(string); name != "regular" {
		return nil, fmt.Errorf("chunk_grid %v is not supported (only regular)", doc["chunk_grid"])
	}
	gridShape, err := IntList(objMember(grid, "configuration")["chunk_shape"], "chunk_grid chunk_shape")
	if err != nil {
		return nil, err
	}
	if len(gridShape) != len(shape) {
		return nil, fmt.Errorf("chunk_shape %v and shape %v differ in rank", gridShape, shape)
	}
	for _, c := range gridShape {
		if c <= 0 {
			return nil, fmt.Errorf("bad chunk_shape %v", gridShape)
		}
	}
	keys, err := ParseKeyEncoding(doc["chunk_key_encoding"])
	if err != nil {
		return nil, err
	}
	codecs, err := ParseCodecs(doc["codecs"], "codecs")
	if err != nil {
		return nil, err
	}
	attrs := objMember(doc, "attributes")
	m := &Array{
		Format: 3, Shape: shape, Grid: gridShape, Order: 'C', Keys: keys,
		Codecs: codecs, Attrs: attrs, Doc: doc,
	}
	m.Fill, m.HasFill = doc["fill_value"]
	if list, ok := doc["dimension_names"].([]any); ok && len(list) == len(shape) {
		m.DimNames = make([]string, len(list))
		for i, n := range list {
			m.DimNames[i], _ = n.(string)
		}
	}
	if dt.Kind == 'O' {
		if err := m.v3Elems(dt); err != nil {
			return nil, err
		}
		return m, nil
	}
	pipe, err := ParsePipeline(codecs, gridShape, dt)
	if err != nil {
		return nil, err
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
	var outer []int
	if pipe.Shard != nil && len(pipe.Perms) > 0 {
		outer = ComposePerms(pipe.Perms, len(shape))
		chunks = make([]int64, len(inner))
		for k, ax := range outer {
			chunks[ax] = inner[k]
		}
	}
	dt.BigEndian = leaf.BigEndian && dt.Size > 1 && dt.Kind != 'V' && dt.Kind != 'b' && dt.Kind != 'S'
	if leaf.BigEndian && len(dt.Fields) > 0 {
		for _, f := range dt.Fields {
			if f.DType.SwapUnit() > 0 || f.DType.Size > 1 && f.DType.Kind != 'S' && f.DType.Kind != 'V' && f.DType.Kind != 'b' {
				return nil, fmt.Errorf("data_type struct with multi-byte fields stored big-endian is not supported")
			}
		}
	}
	dt.Str = dt.Numpy()
	m.DType, m.Chunks, m.Inner, m.Outer, m.Pipeline = dt, chunks, inner, outer, pipe
	return m, nil
}

// v3Elems sets up an array of a variable-length type (string,
// variable_length_bytes, bytes): its array-to-bytes codec is vlen-utf8 or
// vlen-bytes, the rest bytes-to-bytes codecs.
func (m *Array) v3Elems(dt dtype.DType) error {
	want := vlenCodec(dt)
	if len(m.Codecs) > 0 && m.Codecs[0].Name == "sharding_indexed" {
		return m.v3ShardedElems(dt)
	}
	if len(m.Codecs) == 0 || strings.TrimPrefix(m.Codecs[0].Name, "numcodecs.") != want {
		return fmt.Errorf("data_type %s needs %s as its first codec; codecs are %v", dt.Str, want, Names(m.Codecs))
	}
	e := &Elems{Codec: want}
	for _, c := range m.Codecs[1:] {
		cfg, err := codec.V3Config(c.Name, c.Config)
		if err != nil {
			return err
		}
		step, err := codec.Lookup(cfg)
		if err != nil {
			return err
		}
		e.Steps = append(e.Steps, step)
	}
	if s, ok := m.Fill.(string); ok && want == "vlen-bytes" {
		// A bytes fill is base64 of the bytes, as data.json spells bytes.
		if _, ok := dtype.Base64(s); !ok {
			return fmt.Errorf("fill_value %q is not base64", s)
		}
	}
	m.DType, m.Chunks, m.Inner = dt, m.Grid, m.Grid
	m.Pipeline = &Pipeline{Elems: e}
	return nil
}

// vlenCodec is the element codec of a variable-length data type:
// vlen-utf8 for string, vlen-bytes for the bytes types.
func vlenCodec(dt dtype.DType) string {
	if dt.Str == "string" {
		return "vlen-utf8"
	}
	return "vlen-bytes"
}

// v3ShardedElems sets up a variable-length array stored in shards: the
// element codec is the shards' inner array-to-bytes codec (through
// nested shards too), and the read path decodes each inner chunk into
// elements as it does an unsharded chunk. Transposes and bytes-to-bytes
// codecs around the shards are not supported.
func (m *Array) v3ShardedElems(dt dtype.DType) error {
	pipe, err := ParsePipeline(m.Codecs, m.Grid, dt)
	if err != nil {
		return err
	}
	if len(pipe.Perms) > 0 || len(pipe.Whole) > 0 {
		return fmt.Errorf("codecs %v: transpose before or bytes-to-bytes codecs after sharding_indexed are not supported for data_type %s", Names(m.Codecs), dt.Str)
	}
	chunks, leaf := m.Grid, pipe
	for leaf.Shard != nil {
		chunks, leaf = leaf.Shard.Chunks, leaf.Shard.Inner
		if len(leaf.Perms) > 0 {
			return fmt.Errorf("codecs %v: transpose inside sharding_indexed is not supported for data_type %s", Names(m.Codecs), dt.Str)
		}
	}
	if leaf.Elems == nil {
		return fmt.Errorf("data_type %s needs %s as the shards' array-to-bytes codec; codecs are %v", dt.Str, vlenCodec(dt), Names(m.Codecs))
	}
	if s, ok := m.Fill.(string); ok && leaf.Elems.Codec == "vlen-bytes" {
		if _, ok := dtype.Base64(s); !ok {
			return fmt.Errorf("fill_value %q is not base64", s)
		}
	}
	m.DType, m.Chunks, m.Inner, m.Pipeline = dt, chunks, chunks, pipe
	return nil
}

// ComposePerms is the one permutation the transposes perms (in encoding
// order) make together: axis k of the result is axis out[k] of the input.
func ComposePerms(perms [][]int, rank int) []int {
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
