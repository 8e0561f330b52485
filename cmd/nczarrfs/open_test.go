package main

import "testing"

func TestArrayPath(t *testing.T) {
	for arg, want := range map[string]string{
		"":         "",
		"/":        "",
		"v":        "v",
		"/g1/v":    "g1/v",
		"g1/v/":    "g1/v",
		"//g1/v//": "g1/v",
	} {
		if got := arrayPath(arg); got != want {
			t.Errorf("arrayPath(%q) = %q, want %q", arg, got, want)
		}
	}
}
