package icechunk

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

const fixtureDir = "../../../shared/fixtures/icechunk"

// seed adds every fixture file under the given folder of each fixture
// repository.
func seed(f *testing.F, pattern string) {
	files, _ := filepath.Glob(filepath.Join(fixtureDir, "*", pattern))
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
}

// raw wraps a FlatBuffers payload in an uncompressed header.
func raw(spec, typ byte, payload []byte) []byte {
	h := make([]byte, 0, headerLen+len(payload))
	h = append(h, magic...)
	h = append(h, bytes.Repeat([]byte(" "), 24)...)
	h = append(h, spec, typ, 0)
	return append(h, payload...)
}

func FuzzRepoInfo(f *testing.F) {
	seed(f, "repo")
	f.Fuzz(func(t *testing.T, b []byte) {
		ri, err := DecodeRepoInfo(b)
		if err == nil && ri == nil {
			t.Fatal("nil repo info without an error")
		}
	})
}

func FuzzSnapshot(f *testing.F) {
	seed(f, "snapshots/*")
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := DecodeSnapshot(b)
		if err == nil {
			for _, n := range s.Nodes {
				if !validPath(n.Path) {
					t.Fatalf("invalid path %q accepted", n.Path)
				}
			}
		}
	})
}

func exercise(m *Manifest) {
	for nid := range m.arrays {
		_ = m.Each(nid, func(idx []uint32) { _, _, _ = m.Lookup(nid, idx) })
		_, _, _ = m.Lookup(nid, []uint32{0, 0})
	}
}

func FuzzManifest(f *testing.F) {
	seed(f, "manifests/*")
	f.Fuzz(func(t *testing.T, b []byte) {
		if m, err := DecodeManifest(b); err == nil {
			exercise(m)
		}
	})
}

// FuzzFlatBuffers feeds raw FlatBuffers payloads (no compression) to
// every decoder.
func FuzzFlatBuffers(f *testing.F) {
	for _, pattern := range []string{"repo", "snapshots/*", "manifests/*"} {
		files, _ := filepath.Glob(filepath.Join(fixtureDir, "test-repo-v2", pattern))
		for _, p := range files {
			b, _ := os.ReadFile(p)
			if _, body, err := unwrap(b, int(b[37])); err == nil {
				f.Add(body)
			}
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = DecodeRepoInfo(raw(2, typeRepoInfo, b))
		_, _ = DecodeSnapshot(raw(1, typeSnapshot, b))
		if m, err := DecodeManifest(raw(2, typeManifest, b)); err == nil {
			exercise(m)
		}
	})
}

func FuzzParseID(f *testing.F) {
	f.Add("1CECHNKREP0F1RSTCMT0")
	f.Add("1cechnkrep0f1rstcmt0")
	f.Fuzz(func(t *testing.T, s string) {
		id, err := ParseID(s)
		if err == nil && id.String() != s {
			t.Fatalf("%q parsed to %s", s, id)
		}
	})
}

func FuzzRefJSON(f *testing.F) {
	f.Add([]byte(`{"snapshot":"NXH3M0HJ7EEJ0699DPP0"}`))
	f.Fuzz(func(t *testing.T, b []byte) { _, _ = decodeRefJSON(b) })
}

func TestParseIDExample(t *testing.T) {
	id := ID{0x0b, 0x1c, 0xc8, 0xd6, 0x78, 0x75, 0x80, 0xf0, 0xe3, 0x3a, 0x65, 0x34}
	if id.String() != "1CECHNKREP0F1RSTCMT0" {
		t.Fatalf("%s", id)
	}
	got, err := ParseID("1CECHNKREP0F1RSTCMT0")
	if err != nil || got != id {
		t.Fatalf("%v %v", got, err)
	}
	for _, bad := range []string{"", "1cechnkrep0f1rstcmt0", "1CECHNKREP0F1RSTCMTU", "1CECHNKREP0F1RSTCMT1"} {
		if _, err := ParseID(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}
