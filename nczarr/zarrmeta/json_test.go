package zarrmeta

import (
	"encoding/json"
	"testing"
)

func TestQuoteNonFinite(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{"a": 1}`, `{"a": 1}`},
		{`{"a": NaN}`, `{"a": "NaN"}`},
		{`[NaN, Infinity, -Infinity, 1]`, `["NaN", "Infinity", "-Infinity", 1]`},
		{`{"NaN": "NaN Infinity", "b": -Infinity}`, `{"NaN": "NaN Infinity", "b": "-Infinity"}`},
		{`{"s": "quote \" NaN", "v": NaN}`, `{"s": "quote \" NaN", "v": "NaN"}`},
		{`{"s": "back\\", "v": Infinity}`, `{"s": "back\\", "v": "Infinity"}`},
	}
	for _, tt := range tests {
		if got := string(QuoteNonFinite([]byte(tt.in))); got != tt.want {
			t.Errorf("QuoteNonFinite(%s) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

func TestDecodeJSONKeepsLargeIntegers(t *testing.T) {
	var v map[string]any
	if err := DecodeJSON([]byte(`{"big": 9007199254740993, "neg": -9223372036854775808}`), &v); err != nil {
		t.Fatal(err)
	}
	if got := v["big"].(json.Number).String(); got != "9007199254740993" {
		t.Errorf("big = %s", got)
	}
	if got := v["neg"].(json.Number).String(); got != "-9223372036854775808" {
		t.Errorf("neg = %s", got)
	}
	if err := DecodeJSON([]byte(`{"a":1} {"b":2}`), &v); err == nil {
		t.Error("trailing document accepted")
	}
}

func FuzzQuoteNonFinite(f *testing.F) {
	for _, s := range []string{`{"a": NaN}`, `[Infinity, "x\"NaN", -Infinity]`, `"unterminated`, `NaNaN`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		out := QuoteNonFinite(data)
		// Valid JSON stays valid and means the same.
		if json.Valid(data) {
			if !json.Valid(out) {
				t.Fatalf("valid %q became invalid %q", data, out)
			}
		}
		// Quoting is idempotent.
		if again := QuoteNonFinite(out); string(again) != string(out) {
			t.Fatalf("not idempotent: %q -> %q", out, again)
		}
	})
}
