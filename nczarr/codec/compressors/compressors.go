// Package compressors registers numcodecs' general-purpose compressors:
// zlib, gzip, bz2, lzma, zstd, lz4 and base64, and the HDF5 LZ4 plugin's
// chunk format (hdf5-lz4).
package compressors

import (
	"encoding/binary"
	"encoding/json"
	"fmt"

	"github.com/nczarrfs/nczarrfs/nczarr/codec"
	"github.com/nczarrfs/nczarrfs/nczarr/codec/internal/stream"
)

func init() {
	simple := func(id string, f func(dst, src []byte, size, max int) ([]byte, error)) {
		codec.Register(id, func(json.RawMessage) (codec.Codec, error) { return decodeFunc(f), nil })
	}
	// zlib (a zlib stream), gzip (gzip members) and bz2 (a bzip2 stream):
	// the level only steers the encoder.
	simple("zlib", stream.Zlib)
	simple("gzip", stream.Gzip)
	simple("bz2", stream.Bzip2)
	simple("zstd", stream.Zstd)
	simple("lz4", decodeLZ4)
	simple("base64", decodeBase64)
	codec.Register("lzma", newLZMA)
}

// decodeFunc adapts a function to codec.Codec.
type decodeFunc func(dst, src []byte, size, max int) ([]byte, error)

func (f decodeFunc) Decode(dst, src []byte, size, max int) ([]byte, error) {
	return f(dst, src, size, max)
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
