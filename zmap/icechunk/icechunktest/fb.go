package icechunktest

import "encoding/binary"

// A small FlatBuffers writer, enough for Icechunk's files: every object
// is laid out after the one that points at it (uoffsets point forward),
// and every table's vtable just before it.

// Value is a field's value or a vector's element.
type Value interface{ isValue() }

// U8, U32, U64 and I32 are scalars; Struct is a struct's bytes (ids);
// Str a string; Bytes a [ubyte]; Vec a vector; Tab a table.
type (
	U8     uint8
	U32    uint32
	U64    uint64
	I32    int32
	Struct []byte
	Str    string
	Bytes  []byte
	// Vec is a vector of scalars, structs, strings or tables.
	Vec []Value
	// Tab is a table: its fields by slot; nil fields are absent.
	Tab []Value
)

func (U8) isValue()     {}
func (U32) isValue()    {}
func (U64) isValue()    {}
func (I32) isValue()    {}
func (Struct) isValue() {}
func (Str) isValue()    {}
func (Bytes) isValue()  {}
func (Vec) isValue()    {}
func (Tab) isValue()    {}

// Finish lays out root and returns the buffer.
func Finish(root Tab) []byte {
	w := &writer{buf: make([]byte, 4)}
	w.pending(0, root)
	w.drain()
	return w.buf
}

type writer struct {
	buf   []byte
	queue []patch
}

// patch is an uoffset at pos to be pointed at v, once v is laid out.
type patch struct {
	pos int
	v   Value
}

func (w *writer) pending(pos int, v Value) { w.queue = append(w.queue, patch{pos, v}) }

func (w *writer) drain() {
	for len(w.queue) > 0 {
		p := w.queue[0]
		w.queue = w.queue[1:]
		at := w.place(p.v)
		binary.LittleEndian.PutUint32(w.buf[p.pos:], uint32(at-p.pos))
	}
}

func (w *writer) align(n int) {
	for len(w.buf)%n != 0 {
		w.buf = append(w.buf, 0)
	}
}

func (w *writer) u32(v uint32) { w.buf = binary.LittleEndian.AppendUint32(w.buf, v) }

// inline reports a value's inline size (0 for those reached by offset).
func inline(v Value) int {
	switch v := v.(type) {
	case U8:
		return 1
	case U32, I32:
		return 4
	case U64:
		return 8
	case Struct:
		return len(v)
	}
	return 4
}

// put writes v inline at the end of the buffer.
func (w *writer) put(v Value) {
	switch v := v.(type) {
	case U8:
		w.buf = append(w.buf, byte(v))
	case U32:
		w.u32(uint32(v))
	case I32:
		w.u32(uint32(v))
	case U64:
		w.buf = binary.LittleEndian.AppendUint64(w.buf, uint64(v))
	case Struct:
		w.buf = append(w.buf, v...)
	default:
		w.pending(len(w.buf), v)
		w.u32(0)
	}
}

// place lays out an object reached by offset and returns its position.
func (w *writer) place(v Value) int {
	w.align(8)
	switch v := v.(type) {
	case Str:
		at := len(w.buf)
		w.u32(uint32(len(v)))
		w.buf = append(append(w.buf, v...), 0)
		return at
	case Bytes:
		at := len(w.buf)
		w.u32(uint32(len(v)))
		w.buf = append(w.buf, v...)
		return at
	case Vec:
		at := len(w.buf)
		w.u32(uint32(len(v)))
		for _, e := range v {
			w.put(e)
		}
		return at
	case Tab:
		// vtable, then the table: soffset, then the fields in slot order.
		offs := make([]uint16, len(v))
		size := 4
		for i, f := range v {
			if f != nil {
				offs[i] = uint16(size)
				size += inline(f)
			}
		}
		vt := len(w.buf)
		w.buf = binary.LittleEndian.AppendUint16(w.buf, uint16(4+2*len(v)))
		w.buf = binary.LittleEndian.AppendUint16(w.buf, uint16(size))
		for _, o := range offs {
			w.buf = binary.LittleEndian.AppendUint16(w.buf, o)
		}
		at := len(w.buf)
		w.u32(uint32(at - vt))
		for _, f := range v {
			if f != nil {
				w.put(f)
			}
		}
		return at
	}
	panic("icechunktest: a scalar cannot be placed by offset")
}
