// Package codec is the codec engine: a registry of Zarr v2 codecs keyed by
// their numcodecs id, and the Chain that undoes a variable's filters and
// compressor in reverse order.
//
// Every decoder is told the size its output must have and refuses to produce
// more, so a small corrupt chunk can never become a huge allocation.
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

// Codec decodes one step of a chain.
type Codec interface {
	// Decode decodes src. size is the exact number of bytes the step must
	// produce, or -1 when only max (the largest acceptable output) is known.
	// dst is a buffer the codec may reuse (len 0, any capacity); the result
	// may alias dst but never src.
	Decode(dst, src []byte, size, max int) ([]byte, error)
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
	if err := json.Unmarshal(c.ID, &n); err == nil {
		return n.String(), nil
	}
	return "", fmt.Errorf("codec configuration %s has no id", config)
}

// Lookup builds the codec a configuration names.
func Lookup(config json.RawMessage) (Codec, error) {
	id, err := ID(config)
	if err != nil {
		return nil, err
	}
	mu.RLock()
	f := registry[id]
	mu.RUnlock()
	if f == nil {
		return nil, fmt.Errorf("%w %q", ErrUnknown, id)
	}
	c, err := f(config)
	if err != nil {
		return nil, fmt.Errorf("codec %q: %w", id, err)
	}
	return c, nil
}

// Chain is a variable's whole pipeline: filters applied first when
// encoding, then the compressor. Decoding runs it in reverse.
type Chain struct {
	steps []Codec // in encoding order
	names []string
}

// NewChain builds the chain for a .zarray's "filters" (nil or empty for
// none) and "compressor" (nil or JSON null for none).
func NewChain(filters []json.RawMessage, compressor json.RawMessage) (*Chain, error) {
	var configs []json.RawMessage
	configs = append(configs, filters...)
	if len(compressor) > 0 && string(compressor) != "null" {
		configs = append(configs, compressor)
	}
	c := &Chain{}
	for _, cfg := range configs {
		id, err := ID(cfg)
		if err != nil {
			return nil, err
		}
		step, err := Lookup(cfg)
		if err != nil {
			return nil, err
		}
		c.steps = append(c.steps, step)
		c.names = append(c.names, id)
	}
	return c, nil
}

// String names the codecs in encoding order, e.g. "delta,shuffle,zstd".
func (c *Chain) String() string { return strings.Join(c.names, ",") }

// Len is the number of steps.
func (c *Chain) Len() int { return len(c.steps) }

// Decode turns a stored chunk into exactly size bytes of raw array data.
func (c *Chain) Decode(src []byte, size int) ([]byte, error) {
	buf := src
	for i := len(c.steps) - 1; i >= 0; i-- {
		want := -1
		if i == 0 {
			want = size
		}
		out, err := c.steps[i].Decode(nil, buf, want, maxIntermediate(size))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", c.names[i], err)
		}
		buf = out
	}
	if len(buf) != size {
		return nil, fmt.Errorf("%w: decoded %d bytes, want %d", ErrCorrupt, len(buf), size)
	}
	if len(c.steps) == 0 {
		// Never hand out the caller's source buffer as decoded data.
		buf = append([]byte(nil), buf...)
	}
	return buf, nil
}

// maxIntermediate bounds what an inner step may produce: filters such as
// astype may widen elements (at most 8x, int8 to float64 or packbits).
func maxIntermediate(size int) int { return 8*size + 1024 }
