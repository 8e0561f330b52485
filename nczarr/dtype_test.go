package nczarr

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// TestFloat16MatchesNumpy checks float16Bits against numpy's conversion.
func TestFloat16MatchesNumpy(t *testing.T) {
	values := []float64{0, -0.0, 1, -2.5, 65504, 65520, 1e6, 6.1e-5, 5.96e-8, 2.98e-8, 1e-9, 0.1, 1.0009765625, 1.00048828125, 1.00146484375, 3.14159, math.Inf(1), math.Inf(-1)}
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

func TestEncodeFill(t *testing.T) {
	dt := func(s string) DType {
		d, err := ParseDType(json.RawMessage(strconv.Quote(s)))
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	le64 := func(u uint64) []byte { b := make([]byte, 8); binary.LittleEndian.PutUint64(b, u); return b }
	tests := []struct {
		dtype string
		fill  any
		size  int
		want  []byte
	}{
		{"<i4", nil, 4, []byte{0, 0, 0, 0}},
		{">i2", json.Number("-2"), 2, []byte{0xfe, 0xff}},
		{"<u8", json.Number("18446744073709551614"), 8, le64(math.MaxUint64 - 1)},
		{"<i8", json.Number("9007199254740993"), 8, le64(9007199254740993)},
		{">f8", "NaN", 8, le64(0x7ff8000000000000)},
		{"<f4", "NaN", 4, []byte{0, 0, 0xc0, 0x7f}},
		{"<f2", "NaN", 2, []byte{0, 0x7e}},
		{"<f8", "-Infinity", 8, le64(math.Float64bits(math.Inf(-1)))},
		{"|b1", true, 1, []byte{1}},
		{"|S3", "YWI=", 3, []byte("ab\x00")},
		{"<U2", "hé", 8, []byte{'h', 0, 0, 0, 0xe9, 0, 0, 0}},
		{"<U1", "x", 1, []byte{'x'}}, // NCZarr char
		{"<M8[ns]", "NaT", 8, le64(1 << 63)},
	}
	for _, tt := range tests {
		got, err := dt(tt.dtype).encodeFill(tt.fill, tt.size)
		if err != nil || string(got) != string(tt.want) {
			t.Errorf("encodeFill(%s, %v) = %x, %v; want %x", tt.dtype, tt.fill, got, err, tt.want)
		}
	}
	if _, err := dt("<i4").encodeFill("zz", 4); err == nil {
		t.Error("string fill for int accepted")
	}
}
