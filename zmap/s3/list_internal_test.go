package s3

import (
	"fmt"
	"testing"
)

func TestRestOfListing(t *testing.T) {
	for _, tt := range []struct {
		last string
		want string
	}{
		// The first page ended before the digits: the names up to them,
		// every digit, the names after them.
		{".zattrs", `[{ .zattrs 0} {0  } {1  } {2  } {3  } {4  } {5  } {6  } {7  } {8  } {9  } { ` + afterDigits + ` }]`},
		// Within the digits: the rest of its digit, the digits after it.
		{"3.141", `[{3 3.141 } {4  } {5  } {6  } {7  } {8  } {9  } { ` + afterDigits + ` }]`},
		{"9", `[{9 9 } { ` + afterDigits + ` }]`},
		// After the digits: the names after last only.
		{"b", `[{ b }]`},
	} {
		if got := fmt.Sprint(restOfListing(tt.last)); got != tt.want {
			t.Errorf("restOfListing(%q) = %s, want %s", tt.last, got, tt.want)
		}
	}
}

func TestFlatSplit(t *testing.T) {
	for last, want := range map[string]string{
		"v0499/.zarray": "v",
		"a/1.7":         "a/",
		"g/sub/v12/0":   "g/sub/v",
		"0/0/1":         "",
		".zgroup":       "",
	} {
		if got := flatSplit(last); got != want {
			t.Errorf("flatSplit(%q) = %q, want %q", last, got, want)
		}
	}
}
