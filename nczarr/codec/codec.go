// Package codec is the codec engine: a registry of Zarr v2 codecs keyed by
// their numcodecs id, and the Chain that undoes a variable's filters and
// compressor in reverse order.
//
// Every decoder is told the size its output must have and refuses to produce
// more, so a small corrupt chunk can never become a huge allocation.
//
// The decoders themselves live in sub-packages that register from init;
// import nczarr/codec/all for every one of them.
package codec

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
)

// ErrUnknown is wrapped by Lookup and NewChain for a codec id with no decoder.
var ErrUnknown = errors.New("unsupported codec")

// ErrCorrupt is wrapped by decoders for input they cannot decode, a
// checksum mismatch, or output that would exceed the expected size.
var ErrCorrupt = errors.New("corrupt chunk")

// Codec decodes one step of a chain. Implementations are safe for
// concurrent use.
type Codec interface {
	// Decode decodes src. size is the exact number of bytes the step must
	// produce, or -1 when only max (the largest acceptable output) is known.
	// dst is a buffer the codec may reuse (len 0, any capacity); the result
	// may alias dst but never src.
	Decode(dst, src []byte, size, max int) ([]byte, error)
}

// A Sizer is a Codec (typically a filter) whose encoded size follows from
// its decoded size. A Chain uses it to tell the steps before it the exact
// size they must produce.
type Sizer interface {
	// EncodedSize returns the size of the encoding of decoded bytes, and
	// false when decoded is not a size the codec can have produced.
	EncodedSize(decoded int) (int, bool)
}

// Factory builds a Codec from its JSON configuration (the object that
// appears in .zarray's "compressor" or "filters", "id" included).
type Factory func(config json.RawMessage) (Codec, error)

var (
	mu       sync.RWMutex
	registry = map[string]Factory{}
)

// Register makes a codec available under id. It panics on a duplicate id.
func Register(id string, f Factory) {
	mu.Lock()
	defer mu.Unlock()
	if _, dup := registry[id]; dup {
		panic("codec: Register called twice for " + id)
	}
	registry[id] = f
}

// IDs lists the registered codec ids, sorted.
func IDs() []string {
	mu.RLock()
	defer mu.RUnlock()
	ids := make([]string, 0, len(registry))
	for id := range registry {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// ID returns the "id" member of a codec configuration.
func ID(config json.RawMessage) (string, error) {
	var c struct {
		ID json.RawMessage `json:"id"`
	}
	if err := json.Unmarshal(config, &c); err != nil {
		return "", fmt.Errorf("codec configuration %s: %w", config, err)
	}
	var s string
	if err := json.Unmarshal(c.ID, &s); err == nil && s != "" {
		return s, nil
	}
	// NCZarr may name a filter by its HDF5 number.
	var n json.Number
	if err := json.Unmarshal(c.ID, &n); err == nil && n != "" {
		return n.String(), nil
	}
	return "", fmt.Errorf("codec configuration %s has no id", config)
}

// unsupported explains the numcodecs codecs that no decoder here
// supports. The object codecs nczarr decodes (vlen-utf8, vlen-bytes, json2,
// msgpack2) are decoded only as the first filter of an array of dtype "|O";
// anywhere else they are refused with the reason given here.
var unsupported = map[string]string{
	"vlen-utf8":       "an object codec, decoded only as the first filter of dtype \"|O\"",
	"vlen-bytes":      "an object codec, decoded only as the first filter of dtype \"|O\"",
	"json2":           "an object codec, decoded only as the first filter of dtype \"|O\"",
	"msgpack2":        "an object codec, decoded only as the first filter of dtype \"|O\"",
	"vlen-array":      "variable-length arrays (object dtype) are not implemented",
	"pickle":          "pickled Python objects cannot be read without Python",
	"json":            "the JSON object codec of numcodecs before 0.6 is not implemented",
	"msgpack":         "the MessagePack object codec of numcodecs before 0.6 is not implemented",
	"zfpy":            "ZFP is not implemented",
	"jenkins_lookup3": "the Jenkins lookup3 checksum is not implemented",
	"szip":            "SZIP (CCSDS AEC) is not implemented",
}

// Lookup builds the codec a configuration names. A numeric id is taken as
// an HDF5 filter id and mapped to the numcodecs codec (see HDF5Filters).
func Lookup(config json.RawMessage) (Codec, error) {
	return lookup(config, options{})
}

func lookup(config json.RawMessage, o options) (Codec, error) {
	id, err := ID(config)
	if err != nil {
		return nil, err
	}
	if isNumber(id) {
		cfg, err := fromHDF5(id, config, o)
		if err != nil {
			return nil, err
		}
		return lookup(cfg, o)
	}
	mu.RLock()
	f := registry[id]
	mu.RUnlock()
	if f == nil {
		if why, ok := unsupported[id]; ok {
			return nil, fmt.Errorf("%w %q: %s", ErrUnknown, id, why)
		}
		return nil, fmt.Errorf("%w %q", ErrUnknown, id)
	}
	c, err := f(config)
	if err != nil {
		return nil, fmt.Errorf("codec %q: %w", id, err)
	}
	return c, nil
}

// An Option adjusts NewChain.
type Option func(*options)

type options struct {
	itemSize int // bytes per array element, 0 when unknown
}

// ItemSize tells NewChain the array's element size. It is needed only for
// an HDF5 shuffle filter (id 2) whose configuration omits the element size,
// which HDF5 itself takes from the dataset's type.
func ItemSize(n int) Option { return func(o *options) { o.itemSize = n } }

// Step describes one codec of a Chain.
type Step struct {
	ID     string          // numcodecs id, e.g. "zlib" (also for an HDF5-numbered filter)
	HDF5   int             // the HDF5 filter id, 0 when there is none
	Config json.RawMessage // the configuration as given
}

// String names the step with both ids, e.g. "zlib (HDF5 1)".
func (s Step) String() string {
	if s.HDF5 == 0 {
		return s.ID
	}
	return fmt.Sprintf("%s (HDF5 %d)", s.ID, s.HDF5)
}

// Chain is a variable's whole pipeline: filters applied first when
// encoding, then the compressor. Decoding runs it in reverse. A Chain is
// safe for concurrent use.
type Chain struct {
	codecs []Codec // in encoding order
	steps  []Step
}

// NewChain builds the chain for a .zarray's "filters" (nil or empty for
// none) and "compressor" (nil or JSON null for none). An unsupported codec
// is an error wrapping ErrUnknown that names its id.
func NewChain(filters []json.RawMessage, compressor json.RawMessage, opts ...Option) (*Chain, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	var configs []json.RawMessage
	for _, f := range filters {
		if len(f) > 0 && string(f) != "null" {
			configs = append(configs, f)
		}
	}
	if len(compressor) > 0 && string(compressor) != "null" {
		configs = append(configs, compressor)
	}
	c := &Chain{}
	for _, cfg := range configs {
		id, err := ID(cfg)
		if err != nil {
			return nil, err
		}
		step, err := lookup(cfg, o)
		if err != nil {
			return nil, err
		}
		name, hdf5 := Describe(id)
		c.codecs = append(c.codecs, step)
		c.steps = append(c.steps, Step{ID: name, HDF5: hdf5, Config: cfg})
	}
	return c, nil
}

// String names the codecs in encoding order, e.g. "delta,shuffle,zstd".
// HDF5-numbered filters appear under their numcodecs name.
func (c *Chain) String() string {
	names := make([]string, len(c.steps))
	for i, s := range c.steps {
		names[i] = s.ID
	}
	return strings.Join(names, ",")
}

// Describe names the codecs in encoding order with their HDF5 ids where
// they have one, e.g. "shuffle (HDF5 2),zlib (HDF5 1)".
func (c *Chain) Describe() string {
	names := make([]string, len(c.steps))
	for i, s := range c.steps {
		names[i] = s.String()
	}
	return strings.Join(names, ",")
}

// Steps describes the codecs in encoding order.
func (c *Chain) Steps() []Step { return append([]Step(nil), c.steps...) }

// Len is the number of steps.
func (c *Chain) Len() int { return len(c.codecs) }

// buffers pools the intermediate buffers of multi-step chains.
var buffers sync.Pool // of *[]byte

func getBuffer() []byte {
	if p, ok := buffers.Get().(*[]byte); ok {
		return (*p)[:0]
	}
	return nil
}

func putBuffer(b []byte) {
	if cap(b) == 0 || cap(b) > 64<<20 {
		return
	}
	b = b[:0]
	buffers.Put(&b)
}

// Decode turns a stored chunk into exactly size bytes of raw array data.
// The result is newly allocated: it never aliases src.
func (c *Chain) Decode(src []byte, size int) ([]byte, error) {
	return c.DecodeInto(nil, src, size)
}

// DecodeInto is Decode with the result written into dst's storage when
// cap(dst) >= size (dst's contents are ignored), so that callers can
// recycle output buffers instead of touching fresh memory for every chunk.
// A codec may still return a buffer of its own; the result never aliases
// src, and dst must not overlap src.
func (c *Chain) DecodeInto(dst, src []byte, size int) ([]byte, error) {
	if cap(dst) < size {
		dst = make([]byte, 0, size)
	}
	dst = dst[:0]
	if len(c.codecs) == 0 {
		if len(src) != size {
			return nil, fmt.Errorf("%w: stored %d bytes, want %d", ErrCorrupt, len(src), size)
		}
		return append(dst, src...), nil
	}
	// want[i] is the size step i must produce: known for the first step,
	// and for later ones as long as every step before them is a Sizer.
	want := make([]int, len(c.codecs))
	want[0] = size
	for i := 1; i < len(c.codecs); i++ {
		want[i] = -1
		if want[i-1] < 0 {
			continue
		}
		if s, ok := c.codecs[i-1].(Sizer); ok {
			if n, ok := s.EncodedSize(want[i-1]); ok {
				want[i] = n
			} else {
				return nil, fmt.Errorf("%s: %w: %d bytes is not a size it can decode to", c.steps[i-1].ID, ErrCorrupt, want[i-1])
			}
		}
	}
	buf := src
	pooled := false
	for i := len(c.codecs) - 1; i >= 0; i-- {
		step := dst
		if i != 0 {
			step = getBuffer()
		}
		out, err := c.codecs[i].Decode(step, buf, want[i], maxIntermediate(size))
		if pooled {
			putBuffer(buf)
		}
		if err != nil {
			if i != 0 {
				putBuffer(step)
			}
			return nil, fmt.Errorf("%s: %w", c.steps[i].ID, err)
		}
		buf, pooled = out, i != 0
	}
	if len(buf) != size {
		return nil, fmt.Errorf("%w: decoded %d bytes, want %d", ErrCorrupt, len(buf), size)
	}
	return buf, nil
}

// maxIntermediate bounds what an inner step may produce: filters such as
// astype may widen elements (at most 8x, int8 to float64 or packbits).
func maxIntermediate(size int) int { return 8*size + 1024 }

func isNumber(id string) bool {
	if id == "" {
		return false
	}
	for _, r := range id {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}
