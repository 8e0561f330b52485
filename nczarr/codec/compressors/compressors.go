// Package compressors registers numcodecs' general-purpose compressors:
// zlib, gzip, bz2, lzma, zstd, lz4 and base64, and the HDF5 LZ4 plugin's
// chunk format (hdf5-lz4).
package compressors

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"

	"github.com/nczarrfs/nczarrfs/nczarr/codec"
	"github.com/nczarrfs/nczarrfs/nczarr/codec/internal/stream"
)

func init() {
	simple := func(id string, f func(dst, src []byte, size, max int) ([]byte, error), bound func(int64) int64) {
		codec.Register(id, func(json.RawMessage) (codec.Codec, error) { return bounded{f, bound}, nil })
	}
	// zlib (a zlib stream), gzip (gzip members) and bz2 (a bzip2 stream):
	// the level only steers the encoder.
	simple("zlib", stream.Zlib, zlibBound)
	simple("gzip", stream.Gzip, gzipBound)
	simple("bz2", stream.Bzip2, bzip2Bound)
	simple("zstd", stream.Zstd, ZstdBound)
	simple("lz4", decodeLZ4, lz4Bound)
	simple("base64", decodeBase64, base64Bound)
	codec.Register("lzma", newLZMA)
}

// decodeFunc adapts a function to codec.Codec.
type decodeFunc func(dst, src []byte, size, max int) ([]byte, error)

func (f decodeFunc) Decode(dst, src []byte, size, max int) ([]byte, error) {
	return f(dst, src, size, max)
}

// bounded is a decodeFunc whose encoders' worst case is known.
type bounded struct {
	decode decodeFunc
	bound  func(int64) int64
}

func (b bounded) Decode(dst, src []byte, size, max int) ([]byte, error) {
	return b.decode(dst, src, size, max)
}

// MaxEncodedSize implements codec.Bounder.
func (b bounded) MaxEncodedSize(decoded int64) int64 { return b.bound(decoded) }

// deflateBound is zlib's conservative deflateBound for raw deflate,
// which holds for every level, window and memory setting (stored blocks
// included): n + n/8 + n/64 + 5, rounded up.
func deflateBound(n int64) int64 {
	return codec.AddBound(n, (n+7)/8+(n+63)/64+5)
}

// zlibBound adds the zlib wrapper: a 2-byte header, a 4-byte
// dictionary id, and the 4-byte Adler-32.
func zlibBound(n int64) int64 { return codec.AddBound(deflateBound(n), 10) }

// gzipBound adds a gzip member's 10-byte header and 8-byte trailer (a
// file name or comment in the header is the slack's).
func gzipBound(n int64) int64 { return codec.AddBound(deflateBound(n), 18) }

// bzip2Bound is bzip2's documented worst case: 1% more than the input,
// plus 600 bytes.
func bzip2Bound(n int64) int64 { return codec.AddBound(n, n/100+600) }

// ZstdBound is zstd's ZSTD_COMPRESSBOUND: n + n/256, plus up to 64
// bytes more for inputs under 128 KiB.
func ZstdBound(n int64) int64 {
	more := n / 256
	if n < 128<<10 {
		more += (128<<10 - n) >> 11
	}
	return codec.AddBound(n, more)
}

// LZ4BlockBound is LZ4's LZ4_COMPRESSBOUND for one block: n + n/255 + 16.
func LZ4BlockBound(n int64) int64 { return codec.AddBound(n, n/255+16) }

// lz4Bound adds numcodecs' 4-byte size prefix to one LZ4 block.
func lz4Bound(n int64) int64 { return codec.AddBound(LZ4BlockBound(n), 4) }

// base64Bound is the padded encoding, 4 bytes for every 3 begun, with
// room for a line break of two bytes every 76 characters (MIME's lines,
// which the decoder skips).
func base64Bound(n int64) int64 {
	if n > math.MaxInt64/2 {
		return math.MaxInt64
	}
	enc := (n + 2) / 3 * 4
	return codec.AddBound(enc, 2*(enc/76+1))
}

// decodeLZ4 decodes numcodecs' lz4: the uncompressed size as a 4-byte
// little-endian integer, then one LZ4 block.
func decodeLZ4(dst, src []byte, size, maxSize int) ([]byte, error) {
	if len(src) < 4 {
		return nil, fmt.Errorf("%w: lz4 chunk of %d bytes has no size prefix", codec.ErrCorrupt, len(src))
	}
	n := int(int32(binary.LittleEndian.Uint32(src)))
	if n < 0 {
		return nil, fmt.Errorf("%w: lz4 size prefix %d", codec.ErrCorrupt, n)
	}
	if err := stream.CheckSize(n, size, maxSize); err != nil {
		return nil, fmt.Errorf("lz4 size prefix: %w", err)
	}
	return stream.LZ4Block(dst, src[4:], n)
}
