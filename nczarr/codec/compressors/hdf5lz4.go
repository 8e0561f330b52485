package compressors

import (
	"encoding/binary"
	"encoding/json"
	"fmt"

	"github.com/nczarrfs/nczarrfs/nczarr/codec"
	"github.com/nczarrfs/nczarrfs/nczarr/codec/internal/stream"
)

func init() {
	codec.Register("hdf5-lz4", func(json.RawMessage) (codec.Codec, error) { return decodeFunc(decodeHDF5LZ4), nil })
}

// decodeHDF5LZ4 decodes the chunk format of the HDF5 LZ4 plugin (filter
// 32004), which is what NCZarr data naming that filter holds: the total
// size as a big-endian uint64, the block size as a big-endian uint32, then
// for every block its compressed size (big-endian uint32) and its bytes,
// stored raw when that size equals the block's.
func decodeHDF5LZ4(dst, src []byte, size, maxSize int) ([]byte, error) {
	if len(src) < 12 {
		return nil, fmt.Errorf("%w: HDF5 lz4 chunk of %d bytes has no header", codec.ErrCorrupt, len(src))
	}
	total := binary.BigEndian.Uint64(src)
	if total > uint64(stream.Limit(size, maxSize)) {
		return nil, fmt.Errorf("%w: HDF5 lz4 header says %d bytes, want at most %d", codec.ErrCorrupt, total, stream.Limit(size, maxSize))
	}
	n := int(total)
	if err := stream.CheckSize(n, size, maxSize); err != nil {
		return nil, fmt.Errorf("HDF5 lz4 header: %w", err)
	}
	block := int(binary.BigEndian.Uint32(src[8:]))
	if block > n {
		block = n
	}
	if block <= 0 && n > 0 {
		return nil, fmt.Errorf("%w: HDF5 lz4 block size 0", codec.ErrCorrupt)
	}
	out := stream.Grow(dst, n)[:n]
	p := 12
	for done := 0; done < n; {
		bs := min(block, n-done)
		if len(src)-p < 4 {
			return nil, fmt.Errorf("%w: HDF5 lz4 chunk truncated at block %d", codec.ErrCorrupt, done/block)
		}
		cs := int(binary.BigEndian.Uint32(src[p:]))
		p += 4
		if cs > len(src)-p {
			return nil, fmt.Errorf("%w: HDF5 lz4 block of %d bytes exceeds the chunk", codec.ErrCorrupt, cs)
		}
		if cs == bs {
			copy(out[done:done+bs], src[p:p+cs])
		} else if _, err := stream.LZ4Block(out[done:done], src[p:p+cs], bs); err != nil {
			return nil, err
		}
		p += cs
		done += bs
	}
	return out, nil
}
