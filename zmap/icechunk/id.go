package icechunk

import (
	"fmt"
)

// crockford is Crockford's base 32 alphabet, which names Icechunk's
// objects.
const crockford = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

// ID is a 12-byte object id (snapshots, manifests, chunk files).
type ID [12]byte

// String encodes the id as Icechunk names its files: 20 characters of
// Crockford base 32, upper case, no padding.
func (id ID) String() string { return encode32(id[:]) }

func encode32(b []byte) string {
	out := make([]byte, 0, (len(b)*8+4)/5)
	var acc uint32
	bits := 0
	for _, c := range b {
		acc = acc<<8 | uint32(c)
		bits += 8
		for bits >= 5 {
			bits -= 5
			out = append(out, crockford[(acc>>bits)&31])
		}
	}
	if bits > 0 {
		out = append(out, crockford[(acc<<(5-bits))&31])
	}
	return string(out)
}

// ParseID decodes a 20-character snapshot, manifest or chunk id, in the
// canonical form String gives (one name for each id).
func ParseID(s string) (ID, error) {
	var id ID
	if len(s) != 20 {
		return id, fmt.Errorf("id %q: want 20 characters of base 32", s)
	}
	var acc uint64
	bits, n := 0, 0
	for i := 0; i < len(s); i++ {
		v, ok := value32(s[i])
		if !ok {
			return id, fmt.Errorf("id %q: %q is not a base-32 digit", s, s[i])
		}
		acc = acc<<5 | uint64(v)
		bits += 5
		if bits >= 8 {
			bits -= 8
			id[n] = byte(acc >> bits)
			n++
		}
	}
	if id.String() != s {
		return id, fmt.Errorf("id %q is not in canonical form (upper case, trailing bits zero)", s)
	}
	return id, nil
}

func value32(c byte) (byte, bool) {
	if c >= 'a' && c <= 'z' {
		c -= 'a' - 'A'
	}
	switch c {
	case 'O':
		c = '0'
	case 'I', 'L':
		c = '1'
	}
	for i := 0; i < len(crockford); i++ {
		if crockford[i] == c {
			return byte(i), true
		}
	}
	return 0, false
}

func idOf(b []byte) ID {
	var id ID
	copy(id[:], b)
	return id
}
