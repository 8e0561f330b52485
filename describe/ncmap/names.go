package ncmap

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// MaxName is netcdf-c's NC_MAX_NAME: the most bytes a name has.
const MaxName = 256

// CheckName reports why netcdf-c's NC_check_name rejects name, or why
// ncgen cannot read it back from CDL (a CDL keyword); nil when it is a
// legal name to write as is. A legal name is non-empty UTF-8 in NFC of
// at most MaxName bytes whose first character is an ASCII letter, digit
// or '_' or a multi-byte character, with no '/', no control character
// or DEL, and no trailing ASCII space; nor '%' or '?' (badByte).
func CheckName(name string) error {
	switch {
	case name == "":
		return errors.New("the name is empty")
	case len(name) > MaxName:
		return fmt.Errorf("the name has %d bytes, over netCDF's %d", len(name), MaxName)
	case !utf8.ValidString(name):
		return errors.New("the name is not UTF-8")
	case !norm.NFC.IsNormalString(name):
		return errors.New("the name is not in Unicode NFC")
	case !firstOK(name[0]):
		return fmt.Errorf("the name begins with %q", name[0])
	case keywords[name]:
		return fmt.Errorf("the name %q is a CDL keyword", name)
	}
	for i := 0; i < len(name); i++ {
		if badByte(name[i]) {
			return fmt.Errorf("the name holds %q", name[i])
		}
	}
	if last := name[len(name)-1]; isSpace(last) {
		return errors.New("the name ends in a space")
	}
	return nil
}

// firstOK reports whether c may begin a name: an ASCII letter, digit or
// '_', or the first byte of a multi-byte character.
func firstOK(c byte) bool {
	return c >= 0x80 || c == '_' || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || ('0' <= c && c <= '9')
}

// badByte reports the ASCII bytes no name holds: '/', control
// characters and DEL, which netCDF forbids, and '%' and '?', which
// ncdump writes into CDL as they are and ncgen 4.9 cannot read back.
func badByte(c byte) bool { return c == '/' || c == '%' || c == '?' || c < 0x20 || c == 0x7f }

func isSpace(c byte) bool { return c == ' ' || ('\t' <= c && c <= '\r') }

// keywords are the names ncgen's lexer reads as something else than a
// name, so that `ncdump | ncgen` of a file with a variable, dimension or
// attribute so named fails.
var keywords = map[string]bool{}

func init() {
	for _, k := range strings.Fields(`char byte short int long integer float real double
		ubyte ushort uint int64 uint64 string
		netcdf NETCDF netCDF dimensions DIMENSIONS variables VARIABLES data DATA
		group GROUP types TYPES compound COMPOUND enum ENUM opaque OPAQUE
		unlimited UNLIMITED NaN nan NaNf nanf Infinity Infinityf inf inff infinity infinityf
		FillValue NIL nil`) {
		keywords[k] = true
	}
}

// Escape returns a legal netCDF name for name, and whether it differs
// from name. A legal name (CheckName) stays as it is; any other is first
// put in NFC (invalid UTF-8 bytes kept), then every byte that makes it
// illegal, and every '_', becomes '_' and two upper-case hex digits: a
// forbidden first character, '/', control characters and DEL, a trailing
// space, bytes that are not UTF-8, and the first letter of a keyword.
// "-lead" is "_2Dlead", "tab\tname" "tab_09name", "units " "units_20".
// Unescape reverses it. The result may still be illegal (empty, or
// longer than MaxName): callers check it with CheckName.
func Escape(name string) (string, bool) {
	if CheckName(name) == nil {
		return name, false
	}
	s := name
	if utf8.ValidString(s) {
		s = norm.NFC.String(s)
	}
	if s != name && CheckName(s) == nil && !strings.Contains(s, "_") {
		return s, true
	}
	out := escape(s, false)
	if !norm.NFC.IsNormalString(out) {
		// A combining mark after an escape's hex digits: escape every
		// non-ASCII byte too.
		out = escape(s, true)
	}
	return out, true
}

// escape escapes the bytes of s that make it illegal, and every '_';
// every non-ASCII byte too when all.
func escape(s string, all bool) string {
	var b strings.Builder
	esc := func(c byte) { fmt.Fprintf(&b, "_%02X", c) }
	for i := 0; i < len(s); {
		c := s[i]
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case c == '_',
			i == 0 && (!firstOK(c) || keywords[s]),
			c < 0x80 && badByte(c),
			i == len(s)-1 && isSpace(c),
			r == utf8.RuneError && size <= 1,
			all && c >= 0x80:
			esc(c)
			i++
		default:
			b.WriteString(s[i : i+size])
			i += size
		}
	}
	return b.String()
}

// Unescape reverses Escape on a name it changed: every "_XX" becomes the
// byte of hex XX.
func Unescape(s string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '_' {
			b.WriteByte(s[i])
			continue
		}
		if i+3 > len(s) {
			return "", fmt.Errorf("%q: '_' at %d is no escape", s, i)
		}
		v, err := strconv.ParseUint(s[i+1:i+3], 16, 8)
		if err != nil {
			return "", fmt.Errorf("%q: '_' at %d is no escape", s, i)
		}
		b.WriteByte(byte(v))
		i += 2
	}
	return b.String(), nil
}
