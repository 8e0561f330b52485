package chunked

import (
	"errors"
	"fmt"
	"math"
)

// errMsgpack is wrapped by every MessagePack decoding error.
var errMsgpack = errors.New("msgpack")

// maxMsgpackDepth bounds the nesting of MessagePack arrays, so that a
// hostile chunk cannot exhaust the stack.
const maxMsgpackDepth = 64

// decodeMsgpack decodes one MessagePack value, the subset numcodecs'
// MsgPack codec writes for object arrays: nil, booleans, integers, floats,
// str (as string), bin (as []byte), arrays (as []any) and maps with string
// keys (as map[string]any). Extension types are refused. Integers become int64, or uint64 above
// MaxInt64; floats become float64.
func decodeMsgpack(b []byte) (any, error) {
	d := msgpackDecoder{b: b}
	v, err := d.value(0)
	if err != nil {
		return nil, err
	}
	if d.off != len(b) {
		return nil, fmt.Errorf("%w: %d bytes after the value", errMsgpack, len(b)-d.off)
	}
	return v, nil
}

type msgpackDecoder struct {
	b   []byte
	off int
}

func (d *msgpackDecoder) take(n int) ([]byte, error) {
	if n < 0 || n > len(d.b)-d.off {
		return nil, fmt.Errorf("%w: truncated at byte %d", errMsgpack, d.off)
	}
	p := d.b[d.off : d.off+n]
	d.off += n
	return p, nil
}

// uint reads a big-endian unsigned integer of n bytes.
func (d *msgpackDecoder) uint(n int) (uint64, error) {
	p, err := d.take(n)
	if err != nil {
		return 0, err
	}
	var u uint64
	for _, c := range p {
		u = u<<8 | uint64(c)
	}
	return u, nil
}

func (d *msgpackDecoder) value(depth int) (any, error) {
	if depth > maxMsgpackDepth {
		return nil, fmt.Errorf("%w: nested more than %d deep", errMsgpack, maxMsgpackDepth)
	}
	p, err := d.take(1)
	if err != nil {
		return nil, err
	}
	c := p[0]
	switch {
	case c <= 0x7f:
		return int64(c), nil
	case c >= 0xe0:
		return int64(int8(c)), nil
	case c >= 0xa0 && c <= 0xbf:
		return d.str(int(c & 0x1f))
	case c >= 0x90 && c <= 0x9f:
		return d.array(int(c&0x0f), depth)
	case c >= 0x80 && c <= 0x8f:
		return d.dict(int(c&0x0f), depth)
	}
	switch c {
	case 0xc0:
		return nil, nil
	case 0xc2:
		return false, nil
	case 0xc3:
		return true, nil
	case 0xc4, 0xc5, 0xc6: // bin 8, 16, 32
		n, err := d.uint(1 << (c - 0xc4))
		if err != nil {
			return nil, err
		}
		p, err := d.take(int(min(n, math.MaxInt32)))
		if err != nil {
			return nil, err
		}
		return append([]byte(nil), p...), nil
	case 0xca:
		u, err := d.uint(4)
		return float64(math.Float32frombits(uint32(u))), err
	case 0xcb:
		u, err := d.uint(8)
		return math.Float64frombits(u), err
	case 0xcc, 0xcd, 0xce, 0xcf: // uint 8, 16, 32, 64
		u, err := d.uint(1 << (c - 0xcc))
		if err != nil {
			return nil, err
		}
		if u > math.MaxInt64 {
			return u, nil
		}
		return int64(u), nil
	case 0xd0, 0xd1, 0xd2, 0xd3: // int 8, 16, 32, 64
		n := 1 << (c - 0xd0)
		u, err := d.uint(n)
		if err != nil {
			return nil, err
		}
		shift := 64 - 8*uint(n)
		return int64(u<<shift) >> shift, nil
	case 0xd9, 0xda, 0xdb: // str 8, 16, 32
		n, err := d.uint(1 << (c - 0xd9))
		if err != nil {
			return nil, err
		}
		return d.str(int(min(n, math.MaxInt32)))
	case 0xdc, 0xdd: // array 16, 32
		n, err := d.uint(2 << (c - 0xdc))
		if err != nil {
			return nil, err
		}
		return d.array(int(min(n, math.MaxInt32)), depth)
	case 0xde, 0xdf: // map 16, 32
		n, err := d.uint(2 << (c - 0xde))
		if err != nil {
			return nil, err
		}
		return d.dict(int(min(n, math.MaxInt32)), depth)
	}
	return nil, fmt.Errorf("%w: type byte %#02x at byte %d is not supported", errMsgpack, c, d.off-1)
}

func (d *msgpackDecoder) str(n int) (any, error) {
	p, err := d.take(n)
	if err != nil {
		return nil, err
	}
	return string(p), nil
}

func (d *msgpackDecoder) array(n, depth int) (any, error) {
	if n > len(d.b)-d.off { // every element takes at least one byte
		return nil, fmt.Errorf("%w: array of %d elements in %d bytes", errMsgpack, n, len(d.b)-d.off)
	}
	out := make([]any, n)
	for i := range out {
		v, err := d.value(depth + 1)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

func (d *msgpackDecoder) dict(n, depth int) (any, error) {
	if n > (len(d.b)-d.off)/2 { // every key and value takes at least one byte
		return nil, fmt.Errorf("%w: map of %d entries in %d bytes", errMsgpack, n, len(d.b)-d.off)
	}
	out := make(map[string]any, n)
	for range n {
		at := d.off
		k, err := d.value(depth + 1)
		if err != nil {
			return nil, err
		}
		key, ok := k.(string)
		if !ok {
			return nil, fmt.Errorf("%w: map key at byte %d is not a string", errMsgpack, at)
		}
		if out[key], err = d.value(depth + 1); err != nil {
			return nil, err
		}
	}
	return out, nil
}
