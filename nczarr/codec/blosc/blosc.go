// Package blosc decodes c-blosc 1 frames, numcodecs' default compressor,
// and registers the "blosc" codec.
//
// A frame starts with a 16-byte header:
//
//	0     format version (2 for c-blosc 1.x)
//	1     inner codec format version
//	2     flags: 0x01 byte shuffle, 0x02 memcpyed, 0x04 bit shuffle,
//	      0x10 blocks not split, bits 5-7 the inner codec
//	      (0 blosclz, 1 lz4 and lz4hc, 2 snappy, 3 zlib, 4 zstd)
//	3     type size
//	4-7   uncompressed size (little-endian, as are all integers)
//	8-11  block size
//	12-15 frame size, header included
//
// A memcpyed frame holds the data right after the header. Otherwise a
// table of 32-bit block offsets (from the start of the frame) follows, and
// each block is one stream, or one stream per byte of the type when it is
// split, each stream being a 32-bit compressed size and its bytes (stored
// raw when that size equals the stream's raw size). The unshuffle applies
// to the block as a whole, after its streams are decoded.
package blosc

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/nczarrfs/nczarrfs/nczarr/codec"
	"github.com/nczarrfs/nczarrfs/nczarr/codec/blosc/blosclz"
	"github.com/nczarrfs/nczarrfs/nczarr/codec/internal/shuffle"
	"github.com/nczarrfs/nczarrfs/nczarr/codec/internal/stream"
)

func init() {
	codec.Register("blosc", func(json.RawMessage) (codec.Codec, error) {
		// cname, clevel, shuffle and blocksize only steer the encoder: the
		// frame header says all the decoder needs.
		return Codec{}, nil
	})
}

// HeaderSize is the size of a c-blosc 1 frame header.
const HeaderSize = 16

// Header flags.
const (
	FlagShuffle    = 0x01
	FlagMemcpyed   = 0x02
	FlagBitShuffle = 0x04
	FlagDontSplit  = 0x10
)

// Inner codec formats (flags bits 5-7).
const (
	FormatBloscLZ = 0
	FormatLZ4     = 1
	FormatSnappy  = 2
	FormatZlib    = 3
	FormatZstd    = 4
)

const (
	maxSplits     = 16  // c-blosc's MAX_SPLITS
	minBufferSize = 128 // c-blosc's MIN_BUFFERSIZE
)

// Header is a parsed frame header.
type Header struct {
	Version   uint8 // frame format version
	VersionLZ uint8 // inner codec format version
	Flags     uint8
	TypeSize  int
	NBytes    int // uncompressed size
	BlockSize int
	CBytes    int // frame size, header included
}

// Format is the inner codec format of the frame.
func (h Header) Format() int { return int(h.Flags >> 5) }

// FormatName names the inner codec format.
func (h Header) FormatName() string {
	switch h.Format() {
	case FormatBloscLZ:
		return "blosclz"
	case FormatLZ4:
		return "lz4"
	case FormatSnappy:
		return "snappy"
	case FormatZlib:
		return "zlib"
	case FormatZstd:
		return "zstd"
	}
	return fmt.Sprintf("unknown format %d", h.Format())
}

// ParseHeader reads and checks the header of the frame in src.
func ParseHeader(src []byte) (Header, error) {
	if len(src) < HeaderSize {
		return Header{}, fmt.Errorf("%w: blosc frame of %d bytes is shorter than its header", codec.ErrCorrupt, len(src))
	}
	h := Header{
		Version:   src[0],
		VersionLZ: src[1],
		Flags:     src[2],
		TypeSize:  int(src[3]),
		NBytes:    int(int32(binary.LittleEndian.Uint32(src[4:]))),
		BlockSize: int(int32(binary.LittleEndian.Uint32(src[8:]))),
		CBytes:    int(int32(binary.LittleEndian.Uint32(src[12:]))),
	}
	switch {
	case h.Version == 0 || h.Version > 2:
		return h, fmt.Errorf("%w: blosc format version %d is not c-blosc 1", codec.ErrCorrupt, h.Version)
	case h.CBytes < HeaderSize || h.CBytes > len(src):
		return h, fmt.Errorf("%w: blosc frame size %d, have %d bytes", codec.ErrCorrupt, h.CBytes, len(src))
	case h.NBytes < 0:
		return h, fmt.Errorf("%w: blosc uncompressed size %d", codec.ErrCorrupt, h.NBytes)
	case h.TypeSize == 0:
		return h, fmt.Errorf("%w: blosc type size 0", codec.ErrCorrupt)
	case h.BlockSize <= 0 && h.NBytes > 0 && h.Flags&FlagMemcpyed == 0:
		return h, fmt.Errorf("%w: blosc block size %d", codec.ErrCorrupt, h.BlockSize)
	}
	return h, nil
}

// Codec is the blosc codec. Its zero value is ready to use and safe for
// concurrent use.
type Codec struct{}

// Decode implements codec.Codec.
func (Codec) Decode(dst, src []byte, size, max int) ([]byte, error) {
	return Decode(dst, src, size, max)
}

// MaxEncodedSize implements codec.Bounder: c-blosc stores a buffer that
// does not compress as it is (memcpyed) after its 16-byte header, so no
// frame is larger than its input plus 16 bytes; 32 allows for c-blosc2's
// longer header.
func (Codec) MaxEncodedSize(decoded int64) int64 { return codec.AddBound(decoded, 32) }

// scratch holds the per-call temporary block buffers.
type scratch struct{ tmp, tmp2 []byte }

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

// Decode decodes the frame in src into dst (reused when large enough). The
// frame must decode to exactly size bytes, or at most maxSize when size is
// -1.
func Decode(dst, src []byte, size, maxSize int) ([]byte, error) {
	h, err := ParseHeader(src)
	if err != nil {
		return nil, err
	}
	if err := stream.CheckSize(h.NBytes, size, maxSize); err != nil {
		return nil, fmt.Errorf("blosc header: %w", err)
	}
	src = src[:h.CBytes]
	dst = stream.Grow(dst, h.NBytes)[:h.NBytes]
	if h.NBytes == 0 {
		return dst, nil
	}
	if h.Flags&FlagMemcpyed != 0 {
		if h.CBytes-HeaderSize < h.NBytes {
			return nil, fmt.Errorf("%w: memcpyed blosc frame holds %d of %d bytes", codec.ErrCorrupt, h.CBytes-HeaderSize, h.NBytes)
		}
		copy(dst, src[HeaderSize:])
		return dst, nil
	}
	nblocks := (h.NBytes + h.BlockSize - 1) / h.BlockSize
	tableEnd := HeaderSize + 4*nblocks
	if nblocks > len(src)/4 || tableEnd > len(src) {
		return nil, fmt.Errorf("%w: blosc block table of %d blocks exceeds the frame", codec.ErrCorrupt, nblocks)
	}
	sc := scratchPool.Get().(*scratch)
	defer scratchPool.Put(sc)
	// No block is longer than the output: a header's block size (up to
	// 2 GiB) never sizes the scratch beyond what the frame decodes to.
	block := min(h.BlockSize, h.NBytes)
	if cap(sc.tmp) < block {
		sc.tmp = make([]byte, block)
	}
	if h.Flags&FlagBitShuffle != 0 && cap(sc.tmp2) < block {
		sc.tmp2 = make([]byte, block)
	}
	for j := 0; j < nblocks; j++ {
		start := int(int32(binary.LittleEndian.Uint32(src[HeaderSize+4*j:])))
		if start < tableEnd || start >= len(src) {
			return nil, fmt.Errorf("%w: blosc block %d starts at %d, outside the frame", codec.ErrCorrupt, j, start)
		}
		out := dst[j*h.BlockSize : min((j+1)*h.BlockSize, h.NBytes)]
		if err := decodeBlock(h, out, src[start:], j == nblocks-1 && len(out) < h.BlockSize, sc); err != nil {
			return nil, fmt.Errorf("blosc block %d: %w", j, err)
		}
	}
	return dst, nil
}

// decodeBlock decodes the block whose streams start at src into out,
// using the scratch buffers for the shuffled form.
func decodeBlock(h Header, out, src []byte, leftover bool, sc *scratch) error {
	tmp := sc.tmp[:len(out)]
	typesize := h.TypeSize
	doShuffle := h.Flags&FlagShuffle != 0 && typesize > 1
	doBitShuffle := !doShuffle && h.Flags&FlagBitShuffle != 0 && len(out) >= typesize
	streams := out
	if doShuffle || doBitShuffle {
		streams = tmp
	}
	nsplits := 1
	if h.Flags&FlagDontSplit == 0 && typesize <= maxSplits && len(out)/typesize >= minBufferSize && !leftover {
		nsplits = typesize
	}
	neblock := len(out) / nsplits
	for k := 0; k < nsplits; k++ {
		if len(src) < 4 {
			return fmt.Errorf("%w: stream %d size is past the frame end", codec.ErrCorrupt, k)
		}
		cbytes := int(int32(binary.LittleEndian.Uint32(src)))
		src = src[4:]
		if cbytes < 0 || cbytes > len(src) {
			return fmt.Errorf("%w: stream %d of %d bytes exceeds the frame", codec.ErrCorrupt, k, cbytes)
		}
		part := streams[k*neblock : (k+1)*neblock]
		if err := decodeStream(h, part, src[:cbytes]); err != nil {
			return fmt.Errorf("stream %d: %w", k, err)
		}
		src = src[cbytes:]
	}
	switch {
	case doShuffle:
		shuffle.Unshuffle(out, tmp, typesize)
	case doBitShuffle:
		bitUnshuffle(h.Version, out, tmp, sc.tmp2[:len(out)], typesize)
	}
	return nil
}

// decodeStream decodes one stream into out, which it must fill exactly.
func decodeStream(h Header, out, src []byte) error {
	if len(src) == len(out) {
		copy(out, src)
		return nil
	}
	var got []byte
	var err error
	switch h.Format() {
	case FormatBloscLZ:
		var n int
		n, err = blosclz.Decode(out, src)
		if err == nil && n != len(out) {
			err = fmt.Errorf("%w: blosclz decoded %d bytes, want %d", codec.ErrCorrupt, n, len(out))
		} else if err != nil {
			err = fmt.Errorf("%w: %v", codec.ErrCorrupt, err)
		}
		return err
	case FormatLZ4:
		got, err = stream.LZ4Block(out[:0], src, len(out))
	case FormatSnappy:
		got, err = stream.Snappy(out[:0], src, len(out), len(out))
	case FormatZlib:
		got, err = stream.Zlib(out[:0], src, len(out), len(out))
	case FormatZstd:
		got, err = stream.Zstd(out[:0], src, len(out), len(out))
	default:
		return fmt.Errorf("%w: blosc inner codec format %d", codec.ErrCorrupt, h.Format())
	}
	if err != nil {
		return err
	}
	if len(got) != len(out) || &got[0] != &out[0] {
		// The decoders reuse dst when it is large enough; anything else
		// is a bug, but copying keeps the output right.
		copy(out, got)
	}
	return nil
}

// bitUnshuffle undoes c-blosc's bit shuffle of one block. Format version 2
// frames (every c-blosc 1.x) bit-shuffle a block only when its element
// count is a multiple of 8 and store it as is otherwise; later versions
// bit-shuffle the largest multiple of 8 elements and store the rest as is.
func bitUnshuffle(version uint8, out, tmp, tmp2 []byte, typesize int) {
	count := len(out) / typesize
	if version == 2 && count%8 != 0 {
		copy(out, tmp)
		return
	}
	count -= count % 8
	done := count * typesize
	shuffle.BitUnshuffle(out[:done], tmp[:done], tmp2, count, typesize)
	copy(out[done:], tmp[done:])
}
