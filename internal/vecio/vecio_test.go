package vecio

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestReadAt(t *testing.T) {
	content := make([]byte, 10000)
	for i := range content {
		content[i] = byte(i * 7)
	}
	name := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(name, content, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, tt := range []struct {
		name  string
		sizes []int
		off   int64
		err   error
	}{
		{"one buffer", []int{100}, 5, nil},
		{"several", []int{1, 0, 30, 7}, 0, nil},
		{"to the end", []int{5000, 4990}, 10, nil},
		{"more than one call takes", slices.Repeat([]int{3}, 2000), 1, nil},
		{"past the end", []int{9000, 2000}, 0, io.ErrUnexpectedEOF},
		{"at the end", []int{1}, 10000, io.ErrUnexpectedEOF},
		{"none", nil, 0, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			bufs := make([][]byte, len(tt.sizes))
			var want []byte
			off := tt.off
			for i, n := range tt.sizes {
				bufs[i] = make([]byte, n)
				want = append(want, content[min(off, int64(len(content))):min(off+int64(n), int64(len(content)))]...)
				off += int64(n)
			}
			lens := make([]int, len(bufs))
			for i, b := range bufs {
				lens[i] = len(b)
			}
			err := ReadAt(f, bufs, tt.off)
			if !errors.Is(err, tt.err) || (err != nil) != (tt.err != nil) {
				t.Fatalf("ReadAt: %v, want %v", err, tt.err)
			}
			for i, b := range bufs {
				if len(b) != lens[i] {
					t.Fatalf("buffer %d has length %d after ReadAt, want %d: the caller's slice changed", i, len(b), lens[i])
				}
			}
			if err == nil {
				if got := bytes.Join(bufs, nil); !bytes.Equal(got, want) {
					t.Errorf("ReadAt read %d bytes that differ from the file's", len(got))
				}
			}
		})
	}
}
