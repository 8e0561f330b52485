package stream

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"testing/iotest"

	"github.com/nczarrfs/nczarrfs/nczarr/codec"
)

func TestReadAll(t *testing.T) {
	data := bytes.Repeat([]byte("0123456789"), 1000)
	tests := []struct {
		name      string
		size, max int
		ok        bool
	}{
		{"exact size", len(data), -1, true},
		{"size too small", len(data) - 1, -1, false},
		{"size too large", len(data) + 1, -1, false},
		{"max equal", -1, len(data), true},
		{"max above", -1, 1 << 20, true},
		{"max below", -1, len(data) - 1, false},
		{"max zero", -1, 0, false},
	}
	for _, tt := range tests {
		for _, dst := range [][]byte{nil, make([]byte, 0, 3), make([]byte, 0, 1<<16)} {
			r := iotest.OneByteReader(bytes.NewReader(data))
			got, err := ReadAll(dst, r, tt.size, tt.max)
			if tt.ok != (err == nil) {
				t.Fatalf("%s (cap %d): err = %v", tt.name, cap(dst), err)
			}
			if err != nil && !errors.Is(err, codec.ErrCorrupt) {
				t.Fatalf("%s: %v does not wrap ErrCorrupt", tt.name, err)
			}
			if err == nil && !bytes.Equal(got, data) {
				t.Fatalf("%s: wrong bytes", tt.name)
			}
			if !tt.ok && tt.max >= 0 && cap(got) > 0 {
				t.Fatalf("%s: returned a buffer with the error", tt.name)
			}
		}
	}
}

func TestReadAllBoundsAllocation(t *testing.T) {
	// An endless stream must stop at max+1 bytes, not grow without limit.
	_, err := ReadAll(nil, endless{}, -1, 1000)
	if !errors.Is(err, codec.ErrCorrupt) {
		t.Fatalf("err = %v", err)
	}
	if err := ReadExact(make([]byte, 10), endless{}, 10); !errors.Is(err, codec.ErrCorrupt) {
		t.Fatalf("ReadExact: err = %v", err)
	}
}

type endless struct{}

func (endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'x'
	}
	return len(p), nil
}

func TestReadExact(t *testing.T) {
	data := []byte("hello, world")
	if err := ReadExact(make([]byte, len(data)), bytes.NewReader(data), len(data)); err != nil {
		t.Fatal(err)
	}
	if err := ReadExact(make([]byte, 20), bytes.NewReader(data), 20); !errors.Is(err, codec.ErrCorrupt) {
		t.Fatalf("short: err = %v", err)
	}
	if err := ReadExact(make([]byte, 5), bytes.NewReader(data), 5); !errors.Is(err, codec.ErrCorrupt) {
		t.Fatalf("long: err = %v", err)
	}
	if err := ReadExact(make([]byte, 5), iotest.ErrReader(io.ErrClosedPipe), 5); !errors.Is(err, codec.ErrCorrupt) {
		t.Fatalf("error: err = %v", err)
	}
}

func TestLZ4BlockEmpty(t *testing.T) {
	if out, err := LZ4Block(nil, []byte{0}, 0); err != nil || len(out) != 0 {
		t.Fatalf("empty block: %v", err)
	}
	if _, err := LZ4Block(nil, []byte{0x10, 'a'}, 0); err == nil {
		t.Fatal("non-empty block for empty output: no error")
	}
}
