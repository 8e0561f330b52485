package npdtype

import "testing"

func TestParse(t *testing.T) {
	tests := []struct {
		in   string
		want DType // Str is filled in from in
		err  bool
	}{
		{in: "<i4", want: DType{Kind: 'i', Size: 4}},
		{in: ">f8", want: DType{Kind: 'f', Size: 8, BigEndian: true}},
		{in: "|b1", want: DType{Kind: 'b', Size: 1}},
		{in: "=u2", want: DType{Kind: 'u', Size: 2}},
		{in: "i8", want: DType{Kind: 'i', Size: 8}},
		{in: "<f2", want: DType{Kind: 'f', Size: 2}},
		{in: ">c16", want: DType{Kind: 'c', Size: 16, BigEndian: true}},
		{in: "|S5", want: DType{Kind: 'S', Size: 5}},
		{in: "<U3", want: DType{Kind: 'U', Size: 12}},
		{in: ">U1", want: DType{Kind: 'U', Size: 4, BigEndian: true}},
		{in: "|V16", want: DType{Kind: 'V', Size: 16}},
		{in: "<M8[ns]", want: DType{Kind: 'M', Size: 8, Unit: "ns"}},
		{in: ">m8[s]", want: DType{Kind: 'm', Size: 8, BigEndian: true, Unit: "s"}},
		{in: "<M8", want: DType{Kind: 'M', Size: 8}},
		{in: "|O", want: DType{Kind: 'O'}},
		{in: "O", want: DType{Kind: 'O'}},
		{in: "", err: true},
		{in: "<", err: true},
		{in: "<i", err: true},
		{in: "<i3", err: true},
		{in: "<f16", err: true},
		{in: "|b2", err: true},
		{in: "<c4", err: true},
		{in: "<M4[ns]", err: true},
		{in: "<M8[ns", err: true},
		{in: "<M8[]", err: true},
		{in: "|S0", err: true},
		{in: "|S-1", err: true},
		{in: "|S+1", err: true},
		{in: "|S99999999", err: true},
		{in: "<x4", err: true},
		{in: "|O4", err: true},
		{in: "!i4", err: true},
	}
	for _, tt := range tests {
		got, err := Parse(tt.in)
		if tt.err {
			if err == nil {
				t.Errorf("Parse(%q) = %+v, want an error", tt.in, got)
			}
			continue
		}
		tt.want.Str = tt.in
		if err != nil || got != tt.want {
			t.Errorf("Parse(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"<i4", ">U3", "<M8[ns]", "|O", "|S10"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := Parse(s)
		if err != nil {
			return
		}
		if d.Kind != 'O' && (d.Size <= 0 || d.Size > 4*maxSize) {
			t.Fatalf("Parse(%q) size %d", s, d.Size)
		}
	})
}
