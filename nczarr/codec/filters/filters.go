// Package filters registers numcodecs' filters: shuffle, delta,
// fixedscaleoffset, quantize, bitround, astype, packbits, categorize and
// the crc32, adler32 and fletcher32 checksums.
//
// Each filter's dtypes come from its own configuration, as numcodecs'
// get_config() writes them, and every decoded element is written in the
// byte order its dtype names.
package filters

import (
	"encoding/json"
	"fmt"

	"github.com/nczarrfs/nczarrfs/nczarr/codec"
	"github.com/nczarrfs/nczarrfs/nczarr/codec/internal/shuffle"
	"github.com/nczarrfs/nczarrfs/nczarr/codec/internal/stream"
)

func init() {
	codec.Register("shuffle", newShuffle)
	codec.Register("delta", newDelta)
	codec.Register("fixedscaleoffset", newFixedScaleOffset)
	codec.Register("quantize", newQuantize)
	codec.Register("bitround", func(json.RawMessage) (codec.Codec, error) { return bitRound{}, nil })
	codec.Register("astype", newAsType)
	codec.Register("packbits", func(json.RawMessage) (codec.Codec, error) { return packBits{}, nil })
	codec.Register("categorize", newCategorize)
	codec.Register("crc32", func(json.RawMessage) (codec.Codec, error) { return checksum{kind: crc32Sum}, nil })
	codec.Register("adler32", func(json.RawMessage) (codec.Codec, error) { return checksum{kind: adler32Sum}, nil })
	codec.Register("fletcher32", func(json.RawMessage) (codec.Codec, error) { return checksum{kind: fletcher32Sum}, nil })
}

// parseConfig decodes a configuration, keeping numbers exact.
func parseConfig(config json.RawMessage, v any) error {
	if err := json.Unmarshal(config, v); err != nil {
		return fmt.Errorf("configuration %s: %w", config, err)
	}
	return nil
}

// dtypePair reads the "dtype" and optional "astype" members shared by
// delta, fixedscaleoffset and quantize (astype defaults to dtype).
func dtypePair(config json.RawMessage) (dt, at dtype, err error) {
	var c struct {
		Dtype  string `json:"dtype"`
		Astype string `json:"astype"`
	}
	if err := parseConfig(config, &c); err != nil {
		return dt, at, err
	}
	if c.Dtype == "" {
		return dt, at, fmt.Errorf("configuration %s has no dtype", config)
	}
	if dt, err = parseDtype(c.Dtype); err != nil {
		return dt, at, err
	}
	at = dt
	if c.Astype != "" {
		if at, err = parseDtype(c.Astype); err != nil {
			return dt, at, err
		}
	}
	if !dt.numeric() || !at.numeric() {
		return dt, at, fmt.Errorf("dtypes %s and %s must be numeric", dt.str, at.str)
	}
	return dt, at, nil
}

// elementwise is the shape shared by the filters that map n elements of
// an encoded dtype to n elements of the decoded dtype.
type elementwise struct {
	dec, enc dtype
}

// EncodedSize implements codec.Sizer.
func (e elementwise) EncodedSize(decoded int) (int, bool) {
	if decoded%e.dec.size != 0 {
		return 0, false
	}
	return decoded / e.dec.size * e.enc.size, true
}

// prepare checks src against the encoded dtype and the expected size, and
// returns the element count and an output buffer for it.
func (e elementwise) prepare(dst, src []byte, size, maxSize int) (int, []byte, error) {
	if len(src)%e.enc.size != 0 {
		return 0, nil, fmt.Errorf("%w: %d bytes is not a whole number of %s elements", codec.ErrCorrupt, len(src), e.enc.str)
	}
	n := len(src) / e.enc.size
	if err := stream.CheckSize(n*e.dec.size, size, maxSize); err != nil {
		return 0, nil, err
	}
	return n, stream.Grow(dst, n*e.dec.size)[:n*e.dec.size], nil
}

// shuffleFilter undoes numcodecs' (and HDF5's) byte shuffle.
type shuffleFilter struct{ elementSize int }

func newShuffle(config json.RawMessage) (codec.Codec, error) {
	c := struct {
		ElementSize *int `json:"elementsize"`
	}{}
	if err := parseConfig(config, &c); err != nil {
		return nil, err
	}
	es := 4 // numcodecs' default
	if c.ElementSize != nil {
		es = *c.ElementSize
	}
	if es < 0 {
		return nil, fmt.Errorf("elementsize %d", es)
	}
	return shuffleFilter{es}, nil
}

func (s shuffleFilter) EncodedSize(decoded int) (int, bool) { return decoded, true }

func (s shuffleFilter) Decode(dst, src []byte, size, maxSize int) ([]byte, error) {
	if err := stream.CheckSize(len(src), size, maxSize); err != nil {
		return nil, err
	}
	if s.elementSize > 1 && len(src)%s.elementSize != 0 {
		return nil, fmt.Errorf("%w: %d bytes is not a whole number of %d-byte elements", codec.ErrCorrupt, len(src), s.elementSize)
	}
	out := stream.Grow(dst, len(src))[:len(src)]
	shuffle.Unshuffle(out, src, s.elementSize)
	return out, nil
}

// bitRound is numcodecs' bitround: lossy when encoding, the identity when
// decoding.
type bitRound struct{}

func (bitRound) EncodedSize(decoded int) (int, bool) { return decoded, true }

func (bitRound) Decode(dst, src []byte, size, maxSize int) ([]byte, error) {
	if err := stream.CheckSize(len(src), size, maxSize); err != nil {
		return nil, err
	}
	return append(stream.Grow(dst, len(src)), src...), nil
}

// asType converts encode_dtype elements to decode_dtype (numcodecs astype,
// and the decoding half of quantize).
type asType struct{ elementwise }

func newAsType(config json.RawMessage) (codec.Codec, error) {
	var c struct {
		Encode string `json:"encode_dtype"`
		Decode string `json:"decode_dtype"`
	}
	if err := parseConfig(config, &c); err != nil {
		return nil, err
	}
	enc, err := parseDtype(c.Encode)
	if err != nil {
		return nil, err
	}
	dec, err := parseDtype(c.Decode)
	if err != nil {
		return nil, err
	}
	if !enc.numeric() || !dec.numeric() {
		return nil, fmt.Errorf("dtypes %s and %s must be numeric", enc.str, dec.str)
	}
	return asType{elementwise{dec: dec, enc: enc}}, nil
}

func newQuantize(config json.RawMessage) (codec.Codec, error) {
	dt, at, err := dtypePair(config)
	if err != nil {
		return nil, err
	}
	if dt.kind != 'f' || at.kind != 'f' {
		return nil, fmt.Errorf("quantize needs float dtypes, have %s and %s", dt.str, at.str)
	}
	return asType{elementwise{dec: dt, enc: at}}, nil
}

func (a asType) Decode(dst, src []byte, size, maxSize int) ([]byte, error) {
	_, out, err := a.prepare(dst, src, size, maxSize)
	if err != nil {
		return nil, err
	}
	if a.dec.kind == 'f' && a.dec.size >= 4 && (a.enc.kind != 'f' || a.enc.size >= 4) && !a.dec.big &&
		(a.enc.size <= 4 || a.dec.size == 8) {
		// Exact in float64 (int64 only when the result is float64), then
		// one rounding to the result type, as numpy converts.
		vals := floatScratch(len(src) / a.enc.size)
		defer putFloatScratch(vals)
		if fastFloats(vals, src, len(vals), a.enc) {
			fastStoreFloats(out, vals, a.dec)
			return out, nil
		}
	}
	castAll(out, a.dec, src, a.enc)
	return out, nil
}
