package filters

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"sync"

	"github.com/nczarrfs/nczarrfs/nczarr/codec"
)

// delta undoes numcodecs' delta: decoded element i is the sum of encoded
// elements 0..i. Like numpy's cumsum, integers accumulate in 64 bits (then
// wrap to the decoded type) and floats in their own precision.
type delta struct{ elementwise }

func newDelta(config json.RawMessage) (codec.Codec, error) {
	dt, at, err := dtypePair(config)
	if err != nil {
		return nil, err
	}
	return delta{elementwise{dec: dt, enc: at}}, nil
}

func (d delta) Decode(dst, src []byte, size, maxSize int) ([]byte, error) {
	n, out, err := d.prepare(dst, src, size, maxSize)
	if err != nil {
		return nil, err
	}
	enc, dec := d.enc, d.dec
	if fastDelta(out, src, n, dec, enc) {
		return out, nil
	}
	switch {
	case enc.kind != 'f' && (dec.kind == 'i' || dec.kind == 'u'):
		// Integer sums wrap identically in any width: accumulate the
		// sign- or zero-extended values and keep the low bytes.
		var acc uint64
		for i := 0; i < n; i++ {
			acc += uint64(enc.load(src[i*enc.size:]).i)
			dec.putBits(out[i*dec.size:], acc)
		}
	case enc.kind != 'f':
		var acc int64
		uns := enc.kind != 'i'
		for i := 0; i < n; i++ {
			acc += enc.load(src[i*enc.size:]).i
			dec.store(out[i*dec.size:], num{i: acc, uns: uns})
		}
	default:
		var acc float64
		for i := 0; i < n; i++ {
			v := enc.load(src[i*enc.size:]).f
			switch enc.size {
			case 2:
				acc = roundHalf(float64(float32(acc) + float32(v)))
			case 4:
				acc = float64(float32(acc) + float32(v))
			default:
				acc += v
			}
			dec.store(out[i*dec.size:], num{f: acc, float: true})
		}
	}
	return out, nil
}

// fixedScaleOffset undoes numcodecs' fixedscaleoffset: decoded = encoded /
// scale + offset, computed in the type numpy picks (float64 for integer
// encodings, the encoded float type otherwise), then cast to dtype.
type fixedScaleOffset struct {
	elementwise
	scale, offset float64
	calc          int // bytes of the float type the arithmetic runs in
}

func newFixedScaleOffset(config json.RawMessage) (codec.Codec, error) {
	dt, at, err := dtypePair(config)
	if err != nil {
		return nil, err
	}
	var c struct {
		Scale  json.Number `json:"scale"`
		Offset json.Number `json:"offset"`
	}
	if err := parseConfig(config, &c); err != nil {
		return nil, err
	}
	f := fixedScaleOffset{elementwise: elementwise{dec: dt, enc: at}, calc: 8}
	if f.scale, err = c.Scale.Float64(); err != nil {
		return nil, fmt.Errorf("scale %q: %w", c.Scale, err)
	}
	if f.offset, err = c.Offset.Float64(); err != nil {
		return nil, fmt.Errorf("offset %q: %w", c.Offset, err)
	}
	if at.kind == 'f' {
		// numpy's value-based casting: a Python scalar keeps a float array's
		// type unless it is a float too large for that type.
		f.calc = at.size
		for _, s := range []json.Number{c.Scale, c.Offset} {
			if !strings.ContainsAny(string(s), ".eE") {
				continue // a Python int never widens a float array
			}
			v, _ := s.Float64()
			v = math.Abs(v)
			if f.calc == 2 && v > 65504 {
				f.calc = 4
			}
			if f.calc == 4 && v > math.MaxFloat32 {
				f.calc = 8
			}
		}
	}
	return f, nil
}

func (f fixedScaleOffset) Decode(dst, src []byte, size, maxSize int) ([]byte, error) {
	n, out, err := f.prepare(dst, src, size, maxSize)
	if err != nil {
		return nil, err
	}
	enc, dec := f.enc, f.dec
	if f.calc == 8 && dec.kind == 'f' && !dec.big && (enc.kind != 'f' || enc.size == 8) {
		// Arithmetic in float64 on a little-endian float result: convert,
		// scale and store in tight loops.
		vals := floatScratch(n)
		defer putFloatScratch(vals)
		if fastFloats(vals, src, n, enc) {
			for i, v := range vals {
				vals[i] = v/f.scale + f.offset
			}
			fastStoreFloats(out, vals, dec)
			return out, nil
		}
	}
	for i := 0; i < n; i++ {
		x := enc.load(src[i*enc.size:])
		var v float64
		if !x.float {
			if x.uns {
				v = float64(uint64(x.i))
			} else {
				v = float64(x.i)
			}
		} else {
			v = x.f
		}
		switch f.calc {
		case 2:
			s, o := roundHalf(f.scale), roundHalf(f.offset)
			v = roundHalf(float64(float32(roundHalf(float64(float32(v)/float32(s)))) + float32(o)))
		case 4:
			v = float64(float32(v)/float32(f.scale) + float32(f.offset))
		default:
			v = v/f.scale + f.offset
		}
		dec.store(out[i*dec.size:], num{f: v, float: true})
	}
	return out, nil
}

// floats pools the float64 scratch of the fast paths.
var floats sync.Pool // of *[]float64

func floatScratch(n int) []float64 {
	if p, ok := floats.Get().(*[]float64); ok && cap(*p) >= n {
		return (*p)[:n]
	}
	return make([]float64, n)
}

func putFloatScratch(f []float64) {
	if cap(f) <= 1<<22 {
		floats.Put(&f)
	}
}
