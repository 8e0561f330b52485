package fadvise

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// TestWillNeedLeavesContent checks that advice on a file, on ranges inside
// and past its end, and on a closed file changes nothing a reader sees.
func TestWillNeedLeavesContent(t *testing.T) {
	want := bytes.Repeat([]byte("nczarrfs"), 1<<15)
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, want, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []struct{ off, n int64 }{{0, 0}, {100, 4096}, {int64(len(want)), 10}, {1 << 40, 1}} {
		WillNeed(f, r.off, r.n)
	}
	got, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("read %d bytes after advice, want the %d written", len(got), len(want))
	}
	f.Close()
	WillNeed(f, 0, 0) // a closed file: no panic, no effect
}
