package netcdf3

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// This file is an independent reader of classic headers, written from
// the format specification (not from the encoder), that the tests hold
// the encoder to. It also checks netcdf-c's rules on begins
// (NC_check_voffs) and on sizes.

type parsedVar struct {
	name   string
	dims   []int64
	attrs  []Attr
	typ    Type
	vsize  int64
	begin  int64
	record bool
}

type parsed struct {
	version byte
	numRecs int64
	dims    []Dim // the record dimension with Len 0
	attrs   []Attr
	vars    []parsedVar
	size    int // bytes of header read
}

type parser struct {
	b    []byte
	i    int
	five bool
	err  error
}

func (p *parser) take(n int) []byte {
	if p.err != nil {
		return nil
	}
	if n < 0 || p.i+n > len(p.b) {
		p.err = fmt.Errorf("truncated at %d (want %d bytes)", p.i, n)
		return nil
	}
	s := p.b[p.i : p.i+n]
	p.i += n
	return s
}

func (p *parser) u32() uint32 {
	s := p.take(4)
	if s == nil {
		return 0
	}
	return binary.BigEndian.Uint32(s)
}

func (p *parser) nonNeg() int64 {
	if p.five {
		s := p.take(8)
		if s == nil {
			return 0
		}
		v := int64(binary.BigEndian.Uint64(s))
		if v < 0 && p.err == nil {
			p.err = errors.New("negative count")
		}
		return v
	}
	return int64(p.u32())
}

func (p *parser) padded(n int64) []byte {
	s := p.take(int(n))
	if r := n % 4; r != 0 {
		for _, c := range p.take(int(4 - r)) {
			if c != 0 && p.err == nil {
				p.err = errors.New("non-zero padding")
			}
		}
	}
	return s
}

func (p *parser) name() string { return string(p.padded(p.nonNeg())) }

func (p *parser) list(tag uint32) int64 {
	t := p.u32()
	n := p.nonNeg()
	if t == 0 && n == 0 {
		return 0
	}
	if t != tag && p.err == nil {
		p.err = fmt.Errorf("tag %#x, want %#x", t, tag)
	}
	return n
}

func (p *parser) attrs() []Attr {
	n := p.list(tagAttr)
	var out []Attr
	for k := int64(0); k < n && p.err == nil; k++ {
		a := Attr{Name: p.name(), Type: Type(p.u32())}
		sz := int64(a.Type.Size())
		if sz == 0 {
			p.err = fmt.Errorf("attribute type %d", a.Type)
			return nil
		}
		a.Values = p.padded(sz * p.nonNeg())
		if a.Values == nil {
			a.Values = []byte{}
		}
		out = append(out, a)
	}
	return out
}

func parseHeader(b []byte) (*parsed, error) {
	p := &parser{b: b}
	magic := p.take(4)
	if magic == nil || string(magic[:3]) != "CDF" {
		return nil, errors.New("no CDF magic")
	}
	out := &parsed{version: magic[3]}
	switch out.version {
	case 1, 2:
	case 5:
		p.five = true
	default:
		return nil, fmt.Errorf("version %d", magic[3])
	}
	out.numRecs = p.nonNeg()
	nd := p.list(tagDim)
	recDim := -1
	for k := int64(0); k < nd && p.err == nil; k++ {
		d := Dim{Name: p.name(), Len: p.nonNeg()}
		if d.Len == 0 {
			if recDim >= 0 {
				return nil, errors.New("two record dimensions")
			}
			recDim = int(k)
		}
		out.dims = append(out.dims, d)
	}
	out.attrs = p.attrs()
	nv := p.list(tagVar)
	for k := int64(0); k < nv && p.err == nil; k++ {
		v := parsedVar{name: p.name()}
		n := p.nonNeg()
		for j := int64(0); j < n && p.err == nil; j++ {
			id := p.nonNeg()
			if id >= int64(len(out.dims)) {
				return nil, fmt.Errorf("variable %s: dimension id %d", v.name, id)
			}
			if int(id) == recDim {
				if j != 0 {
					return nil, fmt.Errorf("variable %s: record dimension not first", v.name)
				}
				v.record = true
			}
			v.dims = append(v.dims, id)
		}
		v.attrs = p.attrs()
		v.typ = Type(p.u32())
		v.vsize = p.nonNeg()
		if out.version == 1 {
			v.begin = int64(p.u32())
		} else {
			s := p.take(8)
			if s != nil {
				v.begin = int64(binary.BigEndian.Uint64(s))
			}
		}
		if v.typ.Size() == 0 && p.err == nil {
			return nil, fmt.Errorf("variable %s: type %d", v.name, v.typ)
		}
		out.vars = append(out.vars, v)
	}
	if p.err != nil {
		return nil, p.err
	}
	out.size = p.i
	return out, out.check()
}

// lens returns v's netcdf-c len (the vsize, 4-byte rounded) and the
// unpadded bytes of its slab.
func (ps *parsed) lens(v *parsedVar) (vlen, slab int64) {
	n := int64(v.typ.Size())
	for j, d := range v.dims {
		if j == 0 && v.record {
			continue
		}
		n *= max(ps.dims[d].Len, 1)
	}
	return (n + 3) &^ 3, n
}

// recSize is netcdf-c's record size.
func (ps *parsed) recSize() int64 {
	var sum, slab, nrec int64
	for i := range ps.vars {
		if v := &ps.vars[i]; v.record {
			l, s := ps.lens(v)
			sum += l
			slab = s
			nrec++
		}
	}
	if nrec == 1 {
		return slab
	}
	return sum
}

// check applies NC_check_voffs and the vsize rule.
func (ps *parsed) check() error {
	prev := int64(ps.size)
	for i := range ps.vars {
		v := &ps.vars[i]
		l, _ := ps.lens(v)
		if v.vsize != l && !(ps.version != 5 && v.vsize == 1<<32-1 && l > 1<<32-4) {
			return fmt.Errorf("variable %s: vsize %d, want %d", v.name, v.vsize, l)
		}
		if v.record {
			continue
		}
		if v.begin < prev {
			return fmt.Errorf("variable %s begins at %d, before %d", v.name, v.begin, prev)
		}
		prev = v.begin + l
	}
	for i := range ps.vars {
		v := &ps.vars[i]
		if !v.record {
			continue
		}
		if v.begin < prev {
			return fmt.Errorf("record variable %s begins at %d, before %d", v.name, v.begin, prev)
		}
		l, _ := ps.lens(v)
		prev = v.begin + l
	}
	return nil
}
