package zarrmeta

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestMembersKeepOrder checks that attributes keep their stored order and
// their values' bytes: a bare NaN is not the string "NaN", 1.0 is not 1.
func TestMembersKeepOrder(t *testing.T) {
	for _, tc := range []struct {
		doc   string
		names []string
		vals  []string
		err   string
	}{
		{`{"z": 1, "a": NaN, "m": "NaN", "f": 1.0, "o": {"k": [1, -Infinity]}}`, []string{"z", "a", "m", "f", "o"}, []string{`1`, `NaN`, `"NaN"`, `1.0`, `{"k": [1, -Infinity]}`}, ""},
		{` { } `, nil, nil, ""},
		{`{"a\"b": "c,}d"}`, []string{`a"b`}, []string{`"c,}d"`}, ""},
		{`[1]`, nil, nil, "not a JSON object"},
		{`{"a": }`, nil, nil, "invalid JSON"},
	} {
		ms, err := Members([]byte(tc.doc))
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: error %v, want %q", tc.doc, err, tc.err)
			}
			continue
		}
		if err != nil || len(ms) != len(tc.names) {
			t.Fatalf("%s: %v, %v", tc.doc, ms, err)
		}
		for i, m := range ms {
			if m.Name != tc.names[i] || string(m.Value) != tc.vals[i] {
				t.Errorf("%s: member %d is %s=%s, want %s=%s", tc.doc, i, m.Name, m.Value, tc.names[i], tc.vals[i])
			}
		}
	}
	if ms, err := ParseAttrsV3([]byte(`{"zarr_format": 3, "attributes": {"b": 2, "a": 1}}`)); err != nil || len(ms) != 2 || ms[0].Name != "b" {
		t.Errorf("ParseAttrsV3: %v, %v", ms, err)
	}
	if ms, err := ParseAttrsV3([]byte(`{"zarr_format": 3, "attributes": null}`)); err != nil || ms != nil {
		t.Errorf("ParseAttrsV3 of null attributes: %v, %v", ms, err)
	}
}

// FuzzMembers checks that Members never panics, and that what it accepts
// is what encoding/json reads: every value valid JSON (non-finite numbers
// quoted), and as many distinct names as the decoded object has.
func FuzzMembers(f *testing.F) {
	for k, v := range seeds(f) {
		if strings.HasSuffix(k, ".zattrs") || strings.HasSuffix(k, "zarr.json") {
			f.Add(v)
		}
	}
	f.Add([]byte(`{"a": NaN, "b": [Infinity, -Infinity], "c": {"d": "e"}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		ms, err := Members(data)
		if err != nil {
			return
		}
		var o map[string]any
		if err := DecodeJSON(data, &o); err != nil {
			t.Fatalf("Members accepted what encoding/json refuses: %v", err)
		}
		names := map[string]bool{}
		for _, m := range ms {
			names[m.Name] = true
			if !json.Valid(QuoteNonFinite(m.Value)) {
				t.Fatalf("member %q has invalid value %q", m.Name, m.Value)
			}
		}
		if len(names) != len(o) {
			t.Fatalf("%d names, encoding/json reads %d", len(names), len(o))
		}
	})
}
