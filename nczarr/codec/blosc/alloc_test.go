package blosc_test

import (
	"encoding/binary"
	"errors"
	"runtime"
	"testing"

	"github.com/nczarrfs/nczarrfs/nczarr/codec"
	"github.com/nczarrfs/nczarrfs/nczarr/codec/blosc"
)

// allocated returns the bytes f allocates.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestHugeBlockSize decodes frames of 100 bytes whose headers claim a
// block of 2 GiB: the decoder sizes its scratch from the output, never
// from the header's block size, and the frame is corrupt.
func TestHugeBlockSize(t *testing.T) {
	for _, flags := range []byte{blosc.FlagShuffle, blosc.FlagBitShuffle} {
		frame := make([]byte, 16+4+4+40)
		frame[0], frame[1], frame[2], frame[3] = 2, 1, flags, 4
		binary.LittleEndian.PutUint32(frame[4:], 100)        // nbytes
		binary.LittleEndian.PutUint32(frame[8:], 0x7fffffff) // blocksize
		binary.LittleEndian.PutUint32(frame[12:], uint32(len(frame)))
		binary.LittleEndian.PutUint32(frame[16:], 20) // the block's start
		binary.LittleEndian.PutUint32(frame[20:], 40) // its stream's length
		var err error
		n := allocated(func() { _, err = blosc.Decode(nil, frame, 100, -1) })
		if !errors.Is(err, codec.ErrCorrupt) {
			t.Errorf("flags %#x: err = %v, want ErrCorrupt", flags, err)
		}
		if n > 1<<20 {
			t.Errorf("flags %#x: decoding a 100-byte frame allocated %d bytes", flags, n)
		}
	}
}
