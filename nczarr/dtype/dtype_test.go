package dtype

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// TestFloat16MatchesNumpy checks float16Bits against numpy's conversion.
func TestFloat16MatchesNumpy(t *testing.T) {
	values := []float64{0, math.Copysign(0, -1), 1, -2.5, 65504, 65520, 1e6, 6.1e-5, 5.96e-8, 2.98e-8, 1e-9, 0.1, 1.0009765625, 1.00048828125, 1.00146484375, 3.14159, math.Inf(1), math.Inf(-1)}
	var args []string
	for _, v := range values {
		args = append(args, strconv.FormatFloat(v, 'g', -1, 64))
	}
	script := `import sys, numpy as np
for a in sys.argv[1:]: print(int(np.array([float(a)], dtype=np.float16).view(np.uint16)[0]))`
	out, err := exec.Command("/usr/bin/python3", append([]string{"-c", script}, args...)...).Output()
	if err != nil {
		t.Fatalf("numpy (install python3-numpy): %v", err)
	}
	lines := strings.Fields(string(out))
	if len(lines) != len(values) {
		t.Fatalf("numpy printed %d values for %d inputs", len(lines), len(values))
	}
	for i, v := range values {
		want, _ := strconv.ParseUint(lines[i], 10, 16)
		if got := float16Bits(v); uint64(got) != want {
			t.Errorf("float16Bits(%v) = %#04x, numpy %#04x", v, got, want)
		}
	}
	if got := float16Bits(math.NaN()); got&0x7c00 != 0x7c00 || got&0x3ff == 0 {
		t.Errorf("NaN -> %#04x, not a NaN", got)
	}
}

// fillCases are .zarray fill values in every encoding some writer has
// used, dtype by dtype. What each must decode to is what zarr-python reads
// (testdata/gen_fills.py), computed at test time.
var fillCases = [][2]string{
	{"<U4", `0`}, {"<U4", `1.5`}, {"<U4", `true`}, {"<U4", `false`}, {"<U4", `"ab"`},
	{"<U4", `"abcdef"`}, {"<U4", `12345`}, {"<U4", `1e20`}, {"<U4", `-0.0`},
	{"<U8", `1e-05`}, {"<U8", `123456789012345678`}, {"<U8", `1E2`}, {"<U8", `-0`},
	{">U2", `"h\u00e9"`}, {"<U2", `"\ud83d\ude00"`},
	{"|S4", `0`}, {"|S4", `"YWJj"`}, {"|S4", `"hello"`}, {"|S4", `"YW=Jj"`}, {"|S4", `1.5`},
	{"|S4", `true`}, {"|S4", `"a b"`}, {"|S4", `"YQ=="`}, {"|S4", `"YQ"`}, {"|S4", `-0.0`},
	{"|S3", `1e-05`}, {"|S4", `""`}, {"|S4", `"\u00e9"`}, {"|S4", `"YWJjZA=="`},
	{"|S4", `"YWJjZGVm"`}, {"|S1", `"x"`}, {"|S2", `"YQ=?"`},
	{"|V4", `"YWJj"`}, {"|V4", `0`}, {"|V4", `"hello"`}, {"|V2", `"YWJj"`},
	{"|V4", `"YWJjZGVm"`}, {"|V4", `"YQ"`},
	{"<f4", `"NaN"`}, {"<f4", `"Infinity"`}, {">f8", `"-Infinity"`}, {"<f8", `"1.5"`},
	{"<f8", `true`}, {"<f8", `"nan"`}, {"<f8", `"inf"`}, {"<f8", `"abc"`}, {"<f8", `1e400`},
	{"<f2", `70000`}, {"<f8", `-0.0`}, {"<f8", `" 1.5 "`}, {"<f8", `"+inf"`}, {"<f8", `"INF"`},
	{"<f8", `"-nan"`}, {"<f8", `"1_0.5"`}, {"<f8", `"infinity"`}, {"<f8", `"1__0"`},
	{"<f8", `"0x10"`}, {"<f4", `3.4028236e38`}, {">f2", `"NaN"`}, {"<f2", `0.1`},
	{"<f8", `9007199254740993`}, {"<f8", `{}`},
	{"<c8", `[1.5, "NaN"]`}, {"<c16", `["Infinity", -2]`}, {"<c16", `0`}, {"<c16", `1`},
	{"<c16", `[1,2,3]`}, {"<c8", `[true, "1.5"]`}, {"<c8", `["Infinity", 1]`},
	{">c16", `[1, "Infinity"]`}, {"<c16", `[1, -0.0]`}, {"<c16", `[1]`},
	{"|b1", `true`}, {"|b1", `false`}, {"|b1", `0`}, {"|b1", `2`}, {"|b1", `"true"`},
	{"|b1", `""`}, {"|b1", `0.5`}, {"|b1", `"false"`}, {"|b1", `"0"`}, {"|b1", `-0.0`},
	{"<i4", `1.5`}, {"<i4", `"5"`}, {"<i4", `true`}, {"|i1", `300`}, {"|u1", `-1`},
	{"<i8", `9223372036854775807`}, {"<u8", `18446744073709551615`}, {"<i4", `"abc"`},
	{"<i2", `-1.9`}, {"<i4", `" 7"`}, {"<i4", `"+7"`}, {"<i4", `"1_0"`}, {"<i4", `"1.5"`},
	{"<i4", `1e3`}, {"<u4", `4.7`}, {"<i4", `false`}, {"<i4", `""`}, {"<i4", `"NaN"`},
	{"|u1", `256`}, {">u2", `-70000`}, {"<u8", `-1`}, {"<i8", `18446744073709551615`},
	{"<i8", `9007199254740993`}, {">i2", `-2`}, {"<i4", `"_1"`}, {"<i4", `"--1"`},
	{"<M8[ns]", `"NaT"`}, {"<M8[ns]", `5`}, {"<m8[s]", `-3`}, {"<M8[ns]", `1.5`},
	{"<m8[s]", `"NaT"`}, {">M8[s]", `"nat"`}, {"<M8[D]", `-1`},
}

func TestEncodeFillMatchesZarr(t *testing.T) {
	in, err := json.Marshal(fillCases)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("/usr/bin/python3", "testdata/gen_fills.py")
	cmd.Stdin = bytes.NewReader(in)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("gen_fills.py (needs python3-zarr): %v", err)
	}
	var want []struct {
		Hex   *string `json:"hex"`
		Error string  `json:"error"`
	}
	if err := json.Unmarshal(out, &want); err != nil || len(want) != len(fillCases) {
		t.Fatalf("gen_fills.py gave %d results for %d cases: %v", len(want), len(fillCases), err)
	}
	accepted := 0
	for i, c := range fillCases {
		d, err := Parse(json.RawMessage(strconv.Quote(c[0])))
		if err != nil {
			t.Fatal(err)
		}
		var fill any
		dec := json.NewDecoder(strings.NewReader(c[1]))
		dec.UseNumber() // as the metadata is read
		if err := dec.Decode(&fill); err != nil {
			t.Fatal(err)
		}
		got, err := d.EncodeFill(fill, d.Size)
		if want[i].Hex == nil {
			if err == nil {
				t.Errorf("%s fill %s: %x, but zarr-python refuses it (%s)", c[0], c[1], got, want[i].Error)
			}
			continue
		}
		accepted++
		if err != nil {
			t.Errorf("%s fill %s: %v; zarr-python reads %s", c[0], c[1], err, *want[i].Hex)
			continue
		}
		if g := hex.EncodeToString(got); g != *want[i].Hex && !nanEqual(d, got, *want[i].Hex) {
			t.Errorf("%s fill %s: %s, zarr-python %s", c[0], c[1], g, *want[i].Hex)
		}
	}
	if accepted < len(fillCases)*3/4 {
		t.Errorf("zarr-python accepted only %d of %d fills: is the generator broken?", accepted, len(fillCases))
	}
}

// nanEqual reports whether got and the hex want are the same floats, or
// complex numbers, taking every NaN as equal (a JSON "NaN" has no sign or
// payload).
func nanEqual(d DType, got []byte, want string) bool {
	w, err := hex.DecodeString(want)
	if err != nil || len(w) != len(got) || (d.Kind != 'f' && d.Kind != 'c') {
		return false
	}
	unit := d.Size
	if d.Kind == 'c' {
		unit /= 2
	}
	isNaN := func(b []byte) bool {
		switch unit {
		case 2:
			h := binary.LittleEndian.Uint16(b)
			return h&0x7c00 == 0x7c00 && h&0x3ff != 0
		case 4:
			return math.IsNaN(float64(math.Float32frombits(binary.LittleEndian.Uint32(b))))
		}
		return math.IsNaN(math.Float64frombits(binary.LittleEndian.Uint64(b)))
	}
	for o := 0; o < len(w); o += unit {
		g, x := got[o:o+unit], w[o:o+unit]
		if !bytes.Equal(g, x) && !(isNaN(g) && isNaN(x)) {
			return false
		}
	}
	return true
}

// TestEncodeFillNCZarr covers what only netcdf-c writes: char arrays of one
// byte an element, whose fill is a character or its code.
func TestEncodeFillNCZarr(t *testing.T) {
	tests := []struct {
		dtype string
		fill  any
		want  byte
	}{
		{"<U1", "x", 'x'},
		{">U1", "", 0},
		{"<U1", json.Number("65"), 'A'},
		{">S1", "q", 'q'},
	}
	for _, tt := range tests {
		d, err := Parse(json.RawMessage(strconv.Quote(tt.dtype)))
		if err != nil {
			t.Fatal(err)
		}
		got, err := d.EncodeFill(tt.fill, 1)
		if err != nil || len(got) != 1 || got[0] != tt.want {
			t.Errorf("EncodeFill(%s, %v) = %q, %v; want %q", tt.dtype, tt.fill, got, err, tt.want)
		}
	}
}

func TestParse(t *testing.T) {
	tests := []struct {
		in      string
		kind    byte
		size    int
		big     bool
		swap    int
		wantErr bool
	}{
		{`"<i4"`, 'i', 4, false, 0, false},
		{`">i8"`, 'i', 8, true, 8, false},
		{`"|u1"`, 'u', 1, false, 0, false},
		{`">u1"`, 'u', 1, true, 0, false},
		{`"<f2"`, 'f', 2, false, 0, false},
		{`">c16"`, 'c', 16, true, 8, false},
		{`"|b1"`, 'b', 1, false, 0, false},
		{`"<M8[ns]"`, 'M', 8, false, 0, false},
		{`">m8[s]"`, 'm', 8, true, 8, false},
		{`"|S5"`, 'S', 5, false, 0, false},
		{`">S1"`, 'S', 1, true, 0, false},
		{`"<U3"`, 'U', 12, false, 0, false},
		{`">U3"`, 'U', 12, true, 4, false},
		{`"|O"`, 'O', 0, false, 0, false},
		{`"i4"`, 'i', 4, false, 0, false},
		{`"|O4"`, 0, 0, false, 0, true},
		{`"<i3"`, 0, 0, false, 0, true},
		{`"<f16"`, 0, 0, false, 0, true},
		{`[["a","<i4"]]`, 0, 0, false, 0, true},
		{`"!i4"`, 0, 0, false, 0, true},
	}
	for _, tt := range tests {
		d, err := Parse(json.RawMessage(tt.in))
		if tt.wantErr {
			if err == nil {
				t.Errorf("Parse(%s) = %+v, want error", tt.in, d)
			}
			continue
		}
		if err != nil {
			t.Errorf("Parse(%s): %v", tt.in, err)
			continue
		}
		if d.Kind != tt.kind || d.Size != tt.size || d.BigEndian != tt.big || d.SwapUnit() != tt.swap {
			t.Errorf("Parse(%s) = %+v swap %d", tt.in, d, d.SwapUnit())
		}
	}
}
