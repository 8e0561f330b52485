// Package npdtype parses numpy dtype strings, the "simple" type strings
// Zarr v2 writes into .zarray's "dtype" and numcodecs into the "dtype" and
// "astype" of a filter's configuration: "<i4", ">f8", "|b1", "|S5", "<U3",
// "<M8[ns]", "|V16", "|O". nczarr and the numcodecs filters share it, so both
// accept exactly the same spellings.
package npdtype

import (
	"fmt"
	"strconv"
	"strings"
)

// DType is a parsed dtype string.
type DType struct {
	Str       string // as written
	Kind      byte   // numpy kind: b i u f c M m S U V O
	BigEndian bool   // byte order '>'
	Size      int    // bytes per element as stored: 4n for "<Un", 0 for "|O"
	Unit      string // datetime64/timedelta64 unit without brackets ("ns"), or ""
}

// maxSize bounds the size of one element of a fixed-size string or void
// type, so that a hostile dtype cannot ask for a huge allocation.
const maxSize = 1 << 20

// Parse reads a dtype string: an optional byte order ('<', '>', '|' or '=';
// none means the native order, little-endian on every platform Zarr data
// comes from), a kind letter and the item size in bytes (characters for
// 'U'), then a unit in brackets for 'M' and 'm'. The object dtype "|O" (or
// "O") has no size.
func Parse(s string) (DType, error) {
	d := DType{Str: s}
	rest := s
	if rest != "" {
		switch rest[0] {
		case '<', '|', '=':
			rest = rest[1:]
		case '>':
			d.BigEndian = true
			rest = rest[1:]
		}
	}
	if rest == "" {
		return d, fmt.Errorf("dtype %q: too short", s)
	}
	d.Kind, rest = rest[0], rest[1:]
	if d.Kind == 'O' {
		if rest != "" && rest != "8" {
			return d, fmt.Errorf("dtype %q: bad object type", s)
		}
		return d, nil
	}
	if d.Kind == 'M' || d.Kind == 'm' {
		if i := strings.IndexByte(rest, '['); i >= 0 {
			if !strings.HasSuffix(rest, "]") || i+2 > len(rest)-1 {
				return d, fmt.Errorf("dtype %q: bad unit", s)
			}
			d.Unit = rest[i+1 : len(rest)-1]
			rest = rest[:i]
		}
	}
	n, err := strconv.Atoi(rest)
	if err != nil || n <= 0 || n > maxSize || rest[0] == '+' {
		return d, fmt.Errorf("dtype %q: bad size", s)
	}
	d.Size = n
	ok := false
	switch d.Kind {
	case 'b':
		ok = n == 1
	case 'i', 'u':
		ok = n == 1 || n == 2 || n == 4 || n == 8
	case 'f':
		ok = n == 2 || n == 4 || n == 8
	case 'c':
		ok = n == 8 || n == 16
	case 'M', 'm':
		ok = n == 8
	case 'S', 'V':
		ok = true
	case 'U':
		d.Size = 4 * n
		ok = true
	}
	if !ok {
		return d, fmt.Errorf("dtype %q is not supported", s)
	}
	return d, nil
}
