package zmap_test

import (
	"path"
	"strings"
	"testing"

	"github.com/nczarrfs/nczarrfs/zmap"
)

func TestValidKey(t *testing.T) {
	for key, want := range map[string]bool{
		".zgroup":    true,
		"g/v/0.0.1":  true,
		"a/...":      true,
		"a..b":       true,
		"":           false,
		"/a":         false,
		"a/":         false,
		"a//b":       false,
		"a/./b":      false,
		"a/../b":     false,
		"..":         false,
		".":          false,
		"/":          false,
		"a\x00b":     false,
		"ünïcødé/数据": true,
	} {
		if got := zmap.ValidKey(key); got != want {
			t.Errorf("ValidKey(%q) = %v, want %v", key, got, want)
		}
	}
}

// FuzzValidKey checks that a valid key is already in the canonical form
// path.Clean gives, stays below the root, and survives Join of its segments.
func FuzzValidKey(f *testing.F) {
	for _, seed := range []string{".zgroup", "g/v/0.0", "a//b", "../a", "a/./b", "/a/", "a\x00b", ""} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, key string) {
		if !zmap.ValidKey(key) {
			return
		}
		if path.Clean(key) != key || path.IsAbs(key) || key == ".." || strings.HasPrefix(key, "../") {
			t.Errorf("ValidKey(%q) is true for a key that is not canonical or leaves the root", key)
		}
		if got := zmap.Join(strings.Split(key, "/")...); got != key {
			t.Errorf("Join(Split(%q)) = %q", key, got)
		}
	})
}
