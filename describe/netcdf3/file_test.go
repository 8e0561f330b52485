package netcdf3

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"testing"
)

// memVar is a variable's decoded bytes in memory.
type memVar struct {
	data []byte
	fail bool // reads fail
}

func (m *memVar) ReadAt(_ context.Context, p []byte, off int64) (int, error) {
	if m.fail {
		return 0, errors.New("chunk v/0.0 is corrupt")
	}
	if off >= int64(len(m.data)) {
		return 0, io.EOF
	}
	n := copy(p, m.data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// gen builds a model from random bytes: the fuzz target's and the
// tests' source of headers.
type gen struct {
	b     []byte
	i     int
	ascii bool // unique names of ASCII letters, digits and _, starting with a letter
	seq   int
}

func (g *gen) n(k int) int {
	if k <= 0 {
		return 0
	}
	if g.i >= len(g.b) {
		return 0
	}
	v := int(g.b[g.i]) % k
	g.i++
	return v
}

func (g *gen) name() string {
	letters := "abcdefghijklmnopqrstuvwxyz_0123456789ÄÖ"
	if g.ascii {
		letters = "abcdefghijklmnopqrstuvwxyz_0123456789"
	}
	l := 1 + g.n(9)
	var s []byte
	for range l {
		s = append(s, letters[g.n(len(letters))])
	}
	if g.ascii {
		s[0] = 'a' + s[0]%26
		g.seq++ // names unique within a file, as netCDF requires
		s = fmt.Appendf(s, "%d", g.seq)
	}
	return string(s)
}

func (g *gen) attrs(five bool) []Attr {
	var out []Attr
	for range g.n(4) {
		t := Type(1 + g.n(6))
		if five {
			t = Type(1 + g.n(11))
		}
		a := Attr{Name: g.name(), Type: t, Values: []byte{}}
		for range g.n(7) * t.Size() {
			a.Values = append(a.Values, byte(g.n(256)))
		}
		out = append(out, a)
	}
	return out
}

// model returns a valid header from g's bytes, and each variable's
// decoded bytes.
func (g *gen) model() (*Header, [][]byte) {
	h := &Header{Format: CDF2, RecDim: -1}
	five := g.n(2) == 1
	if five {
		h.Format = CDF5
	}
	for range g.n(5) {
		h.Dims = append(h.Dims, Dim{Name: g.name(), Len: int64(1 + g.n(6))})
	}
	if len(h.Dims) > 0 && g.n(2) == 1 {
		h.RecDim = g.n(len(h.Dims))
		h.Dims[h.RecDim].Len = int64(g.n(4))
	}
	h.Attrs = g.attrs(five)
	var data [][]byte
	for range g.n(6) {
		v := Var{Name: g.name(), Type: Type(1 + g.n(6)), Attrs: g.attrs(five)}
		if five {
			v.Type = Type(1 + g.n(11))
		}
		nd := g.n(4)
		if len(h.Dims) == 0 {
			nd = 0
		}
		for k := range nd {
			d := g.n(len(h.Dims))
			if d == h.RecDim && k > 0 {
				continue
			}
			v.Dims = append(v.Dims, d)
		}
		n := int64(v.Type.Size())
		for _, d := range v.Dims {
			n *= h.Dims[d].Len
		}
		b := make([]byte, n)
		for k := range b {
			b[k] = byte(g.n(256) + k)
		}
		h.Vars = append(h.Vars, v)
		data = append(data, b)
	}
	for i := range h.Vars {
		m := &memVar{data: data[i]}
		h.Vars[i].Open = func() ReaderAt { return m }
	}
	return h, data
}

// reference writes the whole file the straightforward way, from the
// begins the independent parser read.
func reference(t testing.TB, h *Header, data [][]byte, header []byte) []byte {
	ps, err := parseHeader(header)
	if err != nil {
		t.Fatalf("independent parser: %v", err)
	}
	out := append([]byte(nil), header...)
	put := func(at int64, b []byte) {
		if need := at + int64(len(b)); need > int64(len(out)) {
			out = append(out, make([]byte, need-int64(len(out)))...)
		}
		copy(out[at:], b)
	}
	recSize := ps.recSize()
	for i, v := range ps.vars {
		be := bigEndian(data[i], v.typ.Size())
		l, s := ps.lens(&v)
		if !v.record {
			put(v.begin, be)
			put(v.begin+int64(len(be)), make([]byte, l-int64(len(be))))
			continue
		}
		for r := int64(0); r < ps.numRecs; r++ {
			put(v.begin+r*recSize, be[r*s:(r+1)*s])
		}
	}
	return out
}

func bigEndian(le []byte, size int) []byte {
	be := bytes.Clone(le)
	swap(be, size)
	return be
}

// checkModel lays h out and compares the header with the model through
// the independent parser, and reads of every kind with the reference.
func checkModel(t testing.TB, h *Header, data [][]byte, rng *rand.Rand) {
	f, err := New(h)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	ps, err := parseHeader(f.Header())
	if err != nil {
		t.Fatalf("independent parser: %v", err)
	}
	if int(ps.version) != int(h.Format) || len(ps.dims) != len(h.Dims) || len(ps.vars) != len(h.Vars) {
		t.Fatalf("parsed %+v from %+v", ps, h)
	}
	for i, d := range h.Dims {
		want := d
		if i == h.RecDim {
			want.Len = 0
			if ps.numRecs != d.Len {
				t.Fatalf("numrecs %d, want %d", ps.numRecs, d.Len)
			}
		}
		if ps.dims[i] != want {
			t.Fatalf("dimension %d: %+v, want %+v", i, ps.dims[i], want)
		}
	}
	sameAttrs(t, "global", ps.attrs, h.Attrs)
	for i, v := range h.Vars {
		p := ps.vars[i]
		if p.name != v.Name || p.typ != v.Type || len(p.dims) != len(v.Dims) {
			t.Fatalf("variable %d: %+v, want %+v", i, p, v)
		}
		for k := range v.Dims {
			if p.dims[k] != int64(v.Dims[k]) {
				t.Fatalf("variable %s dims %v, want %v", v.Name, p.dims, v.Dims)
			}
		}
		sameAttrs(t, v.Name, p.attrs, v.Attrs)
	}
	ref := reference(t, h, data, f.Header())
	if f.Size() < int64(len(ref)) {
		t.Fatalf("size %d, the reference holds %d", f.Size(), len(ref))
	}
	ref = append(ref, make([]byte, f.Size()-int64(len(ref)))...)
	r := f.NewReader()
	ctx := context.Background()
	whole := make([]byte, f.Size()+10)
	n, err := r.ReadAt(ctx, whole, 0)
	if n != int(f.Size()) || err != io.EOF {
		t.Fatalf("whole read: %d, %v; want %d, EOF", n, err, f.Size())
	}
	if !bytes.Equal(whole[:n], ref) {
		t.Fatalf("whole read differs from the reference")
	}
	for range 50 {
		off := rng.Int63n(f.Size() + 1)
		l := rng.Intn(int(f.Size()-off) + 1)
		p := make([]byte, l)
		for k := range p {
			p[k] = 0xEE // reads must overwrite gaps too
		}
		n, err := r.ReadAt(ctx, p, off)
		if n != l || (err != nil && err != io.EOF) {
			t.Fatalf("ReadAt(%d bytes at %d): %d, %v", l, off, n, err)
		}
		if !bytes.Equal(p, ref[off:off+int64(l)]) {
			t.Fatalf("ReadAt(%d bytes at %d) differs from the reference", l, off)
		}
	}
}

func sameAttrs(t testing.TB, what string, got, want []Attr) {
	if len(got) != len(want) {
		t.Fatalf("%s: %d attributes, want %d", what, len(got), len(want))
	}
	for i := range want {
		if got[i].Name != want[i].Name || got[i].Type != want[i].Type || !bytes.Equal(got[i].Values, want[i].Values) {
			t.Fatalf("%s: attribute %+v, want %+v", what, got[i], want[i])
		}
	}
}

func TestLayoutRandom(t *testing.T) {
	seed := rand.Int63()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewSource(seed))
	for range 300 {
		b := make([]byte, 200)
		rng.Read(b)
		h, data := (&gen{b: b}).model()
		checkModel(t, h, data, rng)
	}
}

func FuzzHeader(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{1, 3, 2, 3, 4, 5, 1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4, 5, 5, 5, 6, 6})
	f.Add(bytes.Repeat([]byte{7, 200, 3, 9}, 40))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, data := (&gen{b: b}).model()
		checkModel(t, h, data, rand.New(rand.NewSource(int64(len(b)))))
	})
}

// TestLayout checks the begins of a fixed model: the first variable
// DataGap past the header, every fixed-size variable and the records on the block,
// record variables one after the other in a record, and one record
// variable's records unpadded.
func TestLayout(t *testing.T) {
	h := &Header{
		Format:  CDF2,
		DataGap: MaxBlock,
		Dims:    []Dim{{"time", 3}, {"x", 5}, {"y", 2048}},
		RecDim:  0,
		Vars: []Var{
			{Name: "a", Type: Short, Dims: []int{1}},   // 10 bytes, vsize 12
			{Name: "b", Type: Double, Dims: []int{2}},  // 16 KiB: aligned
			{Name: "t", Type: Byte, Dims: []int{0, 1}}, // 5 bytes a record
			{Name: "c", Type: Char, Dims: []int{1}},    // after b
			{Name: "s", Type: Float, Dims: []int{}},    // scalar
			{Name: "r", Type: Short, Dims: []int{0}},   // 2 bytes a record, vsize 4
		},
	}
	f, err := New(h)
	if err != nil {
		t.Fatal(err)
	}
	const blk = MinBlock
	if f.BlockSize() != blk {
		t.Fatalf("block %d, want %d", f.BlockSize(), blk)
	}
	hb := roundUp(int64(len(f.Header()))+MaxBlock, blk)
	want := []int64{hb, hb + blk, 0, hb + blk + 16384, hb + 2*blk + 16384, 0}
	rec := roundUp(hb+2*blk+16384+4, blk)
	want[2], want[5] = rec, rec+8
	for i, w := range want {
		if got := f.Begin(i); got != w {
			t.Errorf("begin of %s = %d, want %d", h.Vars[i].Name, got, w)
		}
	}
	if got, want := f.Size(), rec+3*12; got != want {
		t.Errorf("size %d, want %d", got, want)
	}
	h.Vars = h.Vars[:3] // one record variable: records of 5 bytes
	if f, err = New(h); err != nil {
		t.Fatal(err)
	}
	if got, want := f.Size(), roundUp(int64(len(f.Header()))+MaxBlock, blk)+blk+16384+3*5; got != want {
		t.Errorf("one record variable: size %d, want %d", got, want)
	}
}

func TestNeeds5(t *testing.T) {
	for _, tc := range []struct {
		h    Header
		want bool
	}{
		{Header{Dims: []Dim{{"x", 4}}, RecDim: -1, Vars: []Var{{Name: "v", Type: Int, Dims: []int{0}}}}, false},
		{Header{Dims: []Dim{{"x", 4}}, RecDim: -1, Vars: []Var{{Name: "v", Type: Int64, Dims: []int{0}}}}, true},
		{Header{RecDim: -1, Attrs: []Attr{{Name: "a", Type: Ushort, Values: []byte{0, 1}}}}, true},
		{Header{Dims: []Dim{{"x", 1 << 30}, {"y", 2}}, RecDim: -1, Vars: []Var{{Name: "v", Type: Int, Dims: []int{0, 1}}}}, true},
		{Header{Dims: []Dim{{"x", 1 << 31}}, RecDim: -1}, true},
	} {
		if got := tc.h.Needs5() != ""; got != tc.want {
			t.Errorf("Needs5(%+v) = %q", tc.h, tc.h.Needs5())
		}
		tc.h.Format = CDF2
		if _, err := New(&tc.h); (err != nil) != tc.want {
			t.Errorf("New as CDF-2: %v", err)
		}
		tc.h.Format = CDF5
		if _, err := New(&tc.h); err != nil {
			t.Errorf("New as CDF-5: %v", err)
		}
	}
}

// TestReadError: a variable whose reads fail fails the reads that touch
// its values, naming it; the header and the other variables still read.
func TestReadError(t *testing.T) {
	good := &memVar{data: []byte{1, 0, 2, 0}}
	bad := &memVar{fail: true}
	h := &Header{
		Format: CDF2, RecDim: -1, Dims: []Dim{{"x", 2}},
		Vars: []Var{
			{Name: "good", Type: Short, Dims: []int{0}, Open: func() ReaderAt { return good }},
			{Name: "bad", Type: Short, Dims: []int{0}, Open: func() ReaderAt { return bad }},
		},
	}
	f, err := New(h)
	if err != nil {
		t.Fatal(err)
	}
	r := f.NewReader()
	ctx := context.Background()
	p := make([]byte, f.Begin(1))
	if _, err := r.ReadAt(ctx, p, 0); err != nil {
		t.Fatalf("header and good: %v", err)
	}
	if got := p[f.Begin(0) : f.Begin(0)+4]; !bytes.Equal(got, []byte{0, 1, 0, 2}) {
		t.Errorf("good reads %v", got)
	}
	_, err = r.ReadAt(ctx, make([]byte, 2), f.Begin(1)+2)
	var ve *VarError
	if !errors.As(err, &ve) || ve.Var != "bad" {
		t.Fatalf("read of bad: %v, want a VarError of bad", err)
	}
	if want := "chunk v/0.0"; !bytes.Contains([]byte(err.Error()), []byte(want)) {
		t.Errorf("error %q does not name %q", err, want)
	}
}

// TestSwap: every value is reversed whole, wherever a read cuts it.
func TestSwap(t *testing.T) {
	le := make([]byte, 64)
	for i := range le {
		le[i] = byte(i)
	}
	m := &memVar{data: le}
	h := &Header{Format: CDF5, RecDim: -1, Dims: []Dim{{"x", 8}},
		Vars: []Var{{Name: "v", Type: Uint64, Dims: []int{0}, Open: func() ReaderAt { return m }}}}
	f, err := New(h)
	if err != nil {
		t.Fatal(err)
	}
	b := f.Begin(0)
	for at := b; at < b+64; at++ {
		for end := at; end <= b+64; end++ {
			p := make([]byte, end-at)
			if _, err := f.NewReader().ReadAt(context.Background(), p, at); err != nil && err != io.EOF {
				t.Fatal(err)
			}
			for k := range p {
				o := at + int64(k) - b
				want := binary.BigEndian.AppendUint64(nil, binary.LittleEndian.Uint64(le[o/8*8:]))[o%8]
				if p[k] != want {
					t.Fatalf("read [%d,%d): byte %d = %d, want %d", at, end, k, p[k], want)
				}
			}
		}
	}
}

func TestBlockSize(t *testing.T) {
	for _, tc := range []struct {
		n    int64 // floats in one variable
		want int64
	}{
		{1, MinBlock}, {MinBlock * 64, MinBlock}, {MinBlock*64 + 1, 2 * MinBlock}, {64 << 20, MaxBlock}, {1 << 40, MaxBlock},
	} {
		h := &Header{RecDim: -1, Dims: []Dim{{"x", tc.n}}, Vars: []Var{{Name: "v", Type: Float, Dims: []int{0}}}}
		if got := BlockSize(h); got != tc.want {
			t.Errorf("BlockSize of %d floats = %d, want %d", tc.n, got, tc.want)
		}
	}
}

// TestLayoutOverflow: a layout past 2^63 bytes is an error, not a
// wrapped size: nine variables of 2^60 bytes each, fixed-size or record.
func TestLayoutOverflow(t *testing.T) {
	for _, tc := range []struct {
		name string
		dims []Dim
		rec  int
		vdim []int
	}{
		{"fixed", []Dim{{"x", 1 << 57}}, -1, []int{0}},
		{"records", []Dim{{"t", 1 << 30}, {"x", 1 << 27}}, 0, []int{0, 1}},
	} {
		h := &Header{Format: CDF5, RecDim: tc.rec, Dims: tc.dims}
		for i := 0; i < 9; i++ {
			h.Vars = append(h.Vars, Var{Name: fmt.Sprint("v", i), Type: Double, Dims: tc.vdim})
		}
		if f, err := New(h); !errors.Is(err, errOverflow) {
			t.Fatalf("%s: New: %v, %v; want an overflow", tc.name, f, err)
		}
		h.Vars = h.Vars[:7]
		if _, err := New(h); err != nil {
			t.Fatalf("%s: seven variables: %v", tc.name, err)
		}
	}
}

// TestExtents: every variable begins on the block, and the extents
// tile the file: the header, each fixed-size variable to the next begin,
// the records.
func TestExtents(t *testing.T) {
	h := &Header{
		Format: CDF2, DataGap: 1 << 20, RecDim: 0,
		Dims: []Dim{{"time", 3}, {"x", 5}, {"y", 300000}},
		Vars: []Var{
			{Name: "a", Type: Short, Dims: []int{1}},
			{Name: "b", Type: Double, Dims: []int{2}},
			{Name: "t", Type: Byte, Dims: []int{0, 1}},
			{Name: "c", Type: Float, Dims: []int{2}},
		},
	}
	f, err := New(h)
	if err != nil {
		t.Fatal(err)
	}
	blk := f.BlockSize()
	if blk != BlockSize(h) || blk < MinBlock {
		t.Fatalf("block %d, BlockSize %d", blk, BlockSize(h))
	}
	var starts []int64
	for off := int64(0); off < f.Size(); {
		s, e := f.Extent(off)
		if s != off || e <= s || e > f.Size() {
			t.Fatalf("Extent(%d) = [%d, %d)", off, s, e)
		}
		if s2, e2 := f.Extent(e - 1); s2 != s || e2 != e {
			t.Fatalf("Extent(%d) = [%d, %d), Extent(%d) = [%d, %d)", off, s, e, e-1, s2, e2)
		}
		starts = append(starts, s)
		off = e
	}
	want := []int64{0, f.Begin(0), f.Begin(1), f.Begin(3), f.Begin(2)}
	if fmt.Sprint(starts) != fmt.Sprint(want) {
		t.Fatalf("extents begin at %v, want %v", starts, want)
	}
	for _, s := range starts[1:] {
		if s%blk != 0 {
			t.Errorf("extent at %d is not on the block %d", s, blk)
		}
	}
}
