package filters

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"

	"github.com/nczarrfs/nczarrfs/nczarr/codec"
	"github.com/nczarrfs/nczarrfs/nczarr/codec/internal/stream"
)

func init() {
	// numcodecs' CRC32C and Zarr v3's core codec "crc32c" share the id.
	codec.Register("crc32c", newCRC32C)
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// crc32c verifies and strips a CRC-32C (Castagnoli) checksum, stored as 4
// little-endian bytes after the data (numcodecs' default location and
// Zarr v3's only one) or before it ("location": "start").
type crc32c struct{ start bool }

func newCRC32C(config json.RawMessage) (codec.Codec, error) {
	var c struct {
		Location *string `json:"location"`
	}
	if err := json.Unmarshal(config, &c); err != nil {
		return nil, err
	}
	if c.Location == nil {
		return crc32c{}, nil
	}
	switch *c.Location {
	case "end":
		return crc32c{}, nil
	case "start":
		return crc32c{start: true}, nil
	}
	return nil, fmt.Errorf("location %q is not start or end", *c.Location)
}

func (crc32c) EncodedSize(decoded int) (int, bool) { return decoded + 4, true }

func (c crc32c) Decode(dst, src []byte, size, maxSize int) ([]byte, error) {
	if len(src) < 4 {
		return nil, fmt.Errorf("%w: %d bytes cannot hold a crc32c checksum", codec.ErrCorrupt, len(src))
	}
	data, sum := src[:len(src)-4], src[len(src)-4:]
	if c.start {
		data, sum = src[4:], src[:4]
	}
	stored, computed := binary.LittleEndian.Uint32(sum), crc32.Checksum(data, castagnoli)
	if stored != computed {
		return nil, fmt.Errorf("%w: crc32c mismatch (stored %#08x, computed %#08x)", codec.ErrCorrupt, stored, computed)
	}
	if err := stream.CheckSize(len(data), size, maxSize); err != nil {
		return nil, err
	}
	return append(stream.Grow(dst, len(data)), data...), nil
}
