package ncmap

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"

	"github.com/nczarrfs/nczarrfs/describe/netcdf3"
	"github.com/nczarrfs/nczarrfs/nczarr"
)

func TestAttrType(t *testing.T) {
	for _, tc := range []struct {
		value, nczarrType, declared string
		five                        bool
		want                        string // "" when left out
	}{
		{value: `[0, 300]`, want: "short"},
		{value: `[-1, 3000000000]`, want: "double"},
		{value: `[-1, 3000000000]`, five: true, want: "int64"},
		{value: `[1, 2.5]`, want: "double"},
		{value: `255`, want: "short"},
		{value: `65535`, want: "int"},
		{value: `-128`, want: "byte"},
		{value: `-129`, want: "short"},
		{value: `true`, want: "byte"},
		{value: `[true, false]`, want: "byte"},
		{value: `[true, 1.5]`, want: "double"},
		{value: `1700000000000`, want: "double"},                    // a millisecond timestamp
		{value: `9007199254740993`, want: ""},                       // 2^53+1: no double holds it
		{value: `9007199254740993`, five: true, want: "int64"},      // but int64 does
		{value: `18446744073709551615`, five: true, want: "uint64"}, // uint64 does
		{value: `[-1, 18446744073709551615]`, five: true, want: ""},
		{value: `"NaN"`, nczarrType: "double", want: "double"},
		{value: `"NaN"`, nczarrType: "char", want: "char"},
		{value: `[1.0, "NaN"]`, nczarrType: "json", want: "double"},
		{value: `["a", "b"]`, want: "string"},
		{value: `["a", 1]`, want: "json"},
		{value: `[]`, want: "json"},
		{value: `{"a": 1}`, want: "json"},
		{value: `null`, want: "json"},
		{value: `[[1]]`, want: "json"},
		{value: `"text"`, want: "char"},
		{value: `255`, declared: "ubyte", want: "short"},
		{value: `255`, declared: "ubyte", five: true, want: "ubyte"},
		{value: `65535`, declared: "ushort", want: "int"},
		{value: `4294967295`, declared: "uint", want: "double"},
		{value: `[1, 2]`, declared: "int64", want: "double"},
		{value: `9007199254740993`, declared: "int64", want: ""},
		{value: `9007199254740993`, declared: "int64", five: true, want: "int64"},
		{value: `1`, declared: "byte", want: "byte"},
		{value: `1`, declared: "float", want: "float"},
	} {
		typ := tc.nczarrType
		if tc.declared != "" {
			typ = tc.declared
		}
		a := nczarr.Attr{Name: "a", Type: typ, Value: json.RawMessage(tc.value)}
		if tc.declared != "" {
			a.DType = "declared"
		}
		got, why := AttrType(a, tc.five)
		if got != tc.want || (got == "") != (why != "") {
			t.Errorf("AttrType(%s, declared %q, five %v) = %q (%s), want %q", tc.value, tc.declared, tc.five, got, why, tc.want)
		}
	}
}

// TestAttrValues: every value an attribute holds is the JSON value
// exactly, whatever the type the rule picks.
func TestAttrValues(t *testing.T) {
	for _, tc := range []struct {
		value string
		want  []float64
	}{
		{`[0, 300]`, []float64{0, 300}},
		{`[-1, 3000000000]`, []float64{-1, 3000000000}},
		{`[1, 2.5]`, []float64{1, 2.5}},
		{`[true, false]`, []float64{1, 0}},
		{`-32768`, []float64{-32768}},
		{`["NaN", 1.5]`, []float64{math.NaN(), 1.5}},
		{`["-Infinity", "Infinity"]`, []float64{math.Inf(-1), math.Inf(1)}},
	} {
		// nczarr infers double for a list that begins with a bare NaN.
		na, why := Attr(nczarr.Attr{Name: "a", Type: "double", Value: json.RawMessage(tc.value)}, false)
		if why != "" {
			t.Fatalf("%s: left out: %s", tc.value, why)
		}
		if na.Type.CDF5Only() {
			t.Errorf("%s: type %s needs CDF-5", tc.value, na.Type)
		}
		got := values(t, na)
		if len(got) != len(tc.want) {
			t.Fatalf("%s: %v, want %v", tc.value, got, tc.want)
		}
		for i := range got {
			if got[i] != tc.want[i] && !(math.IsNaN(got[i]) && math.IsNaN(tc.want[i])) {
				t.Errorf("%s: %s %v, want %v", tc.value, na.Type, got, tc.want)
			}
		}
	}
}

// values decodes a numeric attribute's big-endian values.
func values(t *testing.T, a netcdf3.Attr) []float64 {
	t.Helper()
	var out []float64
	for b := a.Values; len(b) > 0; b = b[a.Type.Size():] {
		switch a.Type {
		case netcdf3.Byte:
			out = append(out, float64(int8(b[0])))
		case netcdf3.Short:
			out = append(out, float64(int16(binary.BigEndian.Uint16(b))))
		case netcdf3.Int:
			out = append(out, float64(int32(binary.BigEndian.Uint32(b))))
		case netcdf3.Float:
			out = append(out, float64(math.Float32frombits(binary.BigEndian.Uint32(b))))
		case netcdf3.Double:
			out = append(out, math.Float64frombits(binary.BigEndian.Uint64(b)))
		default:
			t.Fatalf("type %s", a.Type)
		}
	}
	return out
}

func TestCheckName(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"temp", true}, {"_x", true}, {"1abc", true}, {"é", true}, {"a b", true}, {"a-b", true},
		{"", false}, {"-lead", false}, {"tab\tname", false}, {"units ", false}, {"a/b", false},
		{"del\x7f", false}, {"x%y", false}, {"a?b", false}, {"\xff", false}, {"e\u0301", false}, // not NFC
		{"int", false}, {"NaN", false}, {"netcdf", false}, {strings.Repeat("a", 257), false},
		{strings.Repeat("a", 256), true}, {" lead", false},
	} {
		if err := CheckName(tc.name); (err == nil) != tc.ok {
			t.Errorf("CheckName(%q) = %v, want ok %v", tc.name, err, tc.ok)
		}
	}
}

func TestEscape(t *testing.T) {
	for _, tc := range []struct{ name, want string }{
		{"temp", "temp"},
		{"-lead", "_2Dlead"},
		{"tab\tname", "tab_09name"},
		{"units ", "units_20"},
		{"a/b_c", "a_2Fb_5Fc"},
		{"int", "_69nt"},
		{"\xffx", "_FFx"},
		{"e\u0301", "\u00e9"}, // NFC alone makes it legal
	} {
		got, changed := Escape(tc.name)
		if got != tc.want || changed != (tc.name != tc.want) {
			t.Errorf("Escape(%q) = %q, %v; want %q", tc.name, got, changed, tc.want)
		}
		if err := CheckName(got); err != nil {
			t.Errorf("Escape(%q) = %q: %v", tc.name, got, err)
		}
		if changed && utf8.ValidString(tc.name) && tc.want != "\u00e9" {
			if back, err := Unescape(got); err != nil || back != tc.name {
				t.Errorf("Unescape(%q) = %q, %v; want %q", got, back, err, tc.name)
			}
		}
	}
}

func TestOmittedName(t *testing.T) {
	for _, tc := range []struct {
		names []string
		want  string
	}{
		{nil, OmittedAttr},
		{[]string{"title"}, OmittedAttr},
		{[]string{OmittedAttr}, OmittedAttr2},
		{[]string{OmittedAttr2, OmittedAttr}, "nczarrfs_omitted3"},
	} {
		if got := OmittedName(tc.names); got != tc.want {
			t.Errorf("OmittedName(%q) = %q, want %q", tc.names, got, tc.want)
		}
	}
}

// FuzzEscape: an escaped name is legal (but for one that is empty or
// too long), and one that needed no NFC normalization unescapes to the
// name.
func FuzzEscape(f *testing.F) {
	for _, s := range []string{"-lead", "tab\tname", "units ", "", "int", "a_b/c", "\xff\xfe", "e\u0301_"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		esc, changed := Escape(name)
		if !changed {
			if esc != name || CheckName(name) != nil {
				t.Fatalf("Escape(%q) kept an illegal name", name)
			}
			return
		}
		if err := CheckName(esc); err != nil && esc != "" && len(esc) <= MaxName {
			t.Fatalf("Escape(%q) = %q: %v", name, esc, err)
		}
		if utf8.ValidString(name) && norm.NFC.IsNormalString(name) && CheckName(esc) == nil {
			if back, err := Unescape(esc); err != nil || back != name {
				t.Fatalf("Unescape(%q) = %q, %v; want %q", esc, back, err, name)
			}
		}
	})
}

// FuzzAttr: any JSON attribute value maps without panicking, and a
// numeric one of no declared type needs no CDF-5 type and holds as many
// values as the JSON has elements.
func FuzzAttr(f *testing.F) {
	for _, s := range []string{`[0, 300]`, `[-1, 3000000000]`, `[1, 2.5]`, `true`, `["NaN", 1]`, `{"a": [1]}`, `"x"`, `[]`, `1e400`, `-0`, `[18446744073709551616]`} {
		f.Add(s, false)
	}
	f.Fuzz(func(t *testing.T, value string, five bool) {
		if !json.Valid([]byte(value)) {
			return
		}
		a := nczarr.Attr{Name: "a", Type: "json", Value: json.RawMessage(value)}
		na, why := Attr(a, five)
		if why != "" {
			return
		}
		if !five && na.Type.CDF5Only() {
			t.Fatalf("%s: type %s in CDF-2", value, na.Type)
		}
		if na.Type != netcdf3.Char {
			v, _ := Decode(a.Value)
			if n := len(asList(v)); len(na.Values) != n*na.Type.Size() {
				t.Fatalf("%s: %d bytes of %s for %d values", value, len(na.Values), na.Type, n)
			}
		}
	})
}
