package stream

import (
	"bytes"
	"runtime"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// TestZstdUnknownSizeAllocs decodes a small zstd frame whose decoded
// size the caller does not know, under a large bound: the output grows
// with the frame's content, never to the bound ahead of it.
func TestZstdUnknownSizeAllocs(t *testing.T) {
	data := bytes.Repeat([]byte("nczarrfs "), 10_000) // 90 kB
	enc, err := zstd.NewWriter(nil)
	if err != nil {
		t.Fatal(err)
	}
	frame := enc.EncodeAll(data, nil)
	enc.Close()
	Zstd(nil, frame, -1, 1<<30) // warm the pools
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	out, err := Zstd(nil, frame, -1, 1<<30)
	runtime.ReadMemStats(&after)
	if err != nil || !bytes.Equal(out, data) {
		t.Fatalf("Zstd = %d bytes, %v", len(out), err)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 64<<20 {
		t.Errorf("decoding %d bytes under a bound of 1 GiB allocated %d bytes", len(data), n)
	}
	if _, err := Zstd(nil, frame, -1, len(data)-1); err == nil {
		t.Errorf("Zstd under a bound one byte short: no error")
	}
}
