package icechunk

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// errCorrupt is wrapped by every error a decoder returns for bytes that
// do not hold what their header says.
var errCorrupt = errors.New("corrupt icechunk object")

// badFB is what the FlatBuffers reader panics with on a malformed buffer;
// decode recovers it (and only it) into an error wrapping errCorrupt, so
// that the decoders read as straight-line code yet never panic outwards.
type badFB struct{ msg string }

// decode runs fn, turning a badFB panic into an error.
func decode(fn func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			b, ok := r.(badFB)
			if !ok {
				panic(r)
			}
			err = fmt.Errorf("%w: %s", errCorrupt, b.msg)
		}
	}()
	fn()
	return nil
}

func fail(format string, args ...any) { panic(badFB{fmt.Sprintf(format, args...)}) }

// buf is a FlatBuffers buffer: every read is bounds-checked, and a read
// outside it fails the decode (badFB).
type buf []byte

func (b buf) need(pos, n int) {
	if pos < 0 || n < 0 || pos > len(b) || n > len(b)-pos {
		fail("offset %d+%d outside a %d-byte buffer", pos, n, len(b))
	}
}

func (b buf) u8(pos int) uint8 { b.need(pos, 1); return b[pos] }
func (b buf) u16(pos int) uint16 {
	b.need(pos, 2)
	return binary.LittleEndian.Uint16(b[pos:])
}
func (b buf) u32(pos int) uint32 {
	b.need(pos, 4)
	return binary.LittleEndian.Uint32(b[pos:])
}
func (b buf) u64(pos int) uint64 {
	b.need(pos, 8)
	return binary.LittleEndian.Uint64(b[pos:])
}

// indirect follows the uoffset stored at pos.
func (b buf) indirect(pos int) int {
	off := b.u32(pos)
	if uint64(pos)+uint64(off) > uint64(len(b)) {
		fail("offset at %d points outside the buffer", pos)
	}
	return pos + int(off)
}

// table is a FlatBuffers table at pos in b.
type table struct {
	b   buf
	pos int
	vt  int // vtable position
	vsz int // vtable size in bytes
}

// root returns the buffer's root table.
func root(b buf) table {
	return b.table(b.indirect(0))
}

func (b buf) table(pos int) table {
	so := int64(int32(b.u32(pos)))
	vt := int64(pos) - so
	if vt < 0 || vt > int64(len(b)) {
		fail("table at %d has its vtable outside the buffer", pos)
	}
	vsz := int(b.u16(int(vt)))
	if vsz < 4 || vsz%2 != 0 {
		fail("table at %d has a vtable of %d bytes", pos, vsz)
	}
	b.need(int(vt), vsz)
	tsz := int(b.u16(int(vt) + 2))
	b.need(pos, tsz)
	return table{b: b, pos: pos, vt: int(vt), vsz: vsz}
}

// field returns the position of field slot i, or 0 when it is absent.
func (t table) field(i int) int {
	o := 4 + 2*i
	if o+2 > t.vsz {
		return 0
	}
	off := int(t.b.u16(t.vt + o))
	if off == 0 {
		return 0
	}
	return t.pos + off
}

func (t table) has(i int) bool { return t.field(i) != 0 }

func (t table) u8(i int, def uint8) uint8 {
	if p := t.field(i); p != 0 {
		return t.b.u8(p)
	}
	return def
}

func (t table) u32(i int, def uint32) uint32 {
	if p := t.field(i); p != 0 {
		return t.b.u32(p)
	}
	return def
}

func (t table) u64(i int, def uint64) uint64 {
	if p := t.field(i); p != 0 {
		return t.b.u64(p)
	}
	return def
}

// bytesAt returns the bytes of the inline struct of size n at field i
// (ObjectId12, ObjectId8), or nil when absent.
func (t table) structBytes(i, n int) []byte {
	p := t.field(i)
	if p == 0 {
		return nil
	}
	t.b.need(p, n)
	return t.b[p : p+n : p+n]
}

// vector is a FlatBuffers vector: n elements of size elem from pos.
type vector struct {
	b    buf
	pos  int
	n    int
	elem int
}

// vec returns the vector at field i, whose elements are elem bytes long;
// an absent field is an empty vector.
func (t table) vec(i, elem int) vector {
	p := t.field(i)
	if p == 0 {
		return vector{b: t.b, elem: elem}
	}
	vp := t.b.indirect(p)
	n := int(t.b.u32(vp))
	if n < 0 || uint64(n)*uint64(elem) > uint64(len(t.b)) {
		fail("vector at %d of %d elements overflows the buffer", vp, n)
	}
	t.b.need(vp+4, n*elem)
	return vector{b: t.b, pos: vp + 4, n: n, elem: elem}
}

// bytes returns the byte vector (or string) at field i; nil when absent.
func (t table) bytes(i int) []byte {
	v := t.vec(i, 1)
	if v.n == 0 {
		return nil
	}
	return v.b[v.pos : v.pos+v.n : v.pos+v.n]
}

func (t table) str(i int) string { return string(t.bytes(i)) }

// table returns the table of element k of a vector of tables.
func (v vector) table(k int) table {
	return v.b.table(v.b.indirect(v.pos + 4*k))
}

// at returns the position of element k (structs, scalars).
func (v vector) at(k int) int { return v.pos + v.elem*k }

// sub returns the table at field i (a table-typed field).
func (t table) sub(i int) (table, bool) {
	p := t.field(i)
	if p == 0 {
		return table{}, false
	}
	return t.b.table(t.b.indirect(p)), true
}

// str returns element k of a vector of strings.
func (v vector) str(k int) string {
	p := v.b.indirect(v.pos + 4*k)
	n := int(v.b.u32(p))
	v.b.need(p+4, n)
	return string(v.b[p+4 : p+4+n])
}
