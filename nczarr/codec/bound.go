package codec

import "math"

// A Bounder is a Codec (a compressor) whose largest possible encoding
// follows from its decoded size: the worst case of the encoders that
// write it, such as zlib's deflateBound or zstd's ZSTD_COMPRESSBOUND. A
// Chain uses it to bound a stored chunk before reading it.
type Bounder interface {
	// MaxEncodedSize returns the most bytes the codec's encoders write
	// for decoded bytes of input (decoded >= 0).
	MaxEncodedSize(decoded int64) int64
}

// BoundSlack is added to every chunk's bound (MaxEncodedSize): room for
// headers an encoder may add beyond the worst case of its format (a gzip
// member's file name, a frame's optional fields).
const BoundSlack = 4 << 10

// UnknownBound is the bound of one step whose worst case nothing here
// knows (lzma, pcodec, the HDF5 LZ4 plugin's frames, a codec registered
// without a Bounder): an eighth more than its input, plus 64 KiB. No
// general-purpose encoder makes a chunk that much larger: each stores
// incompressible input nearly as it is.
func UnknownBound(decoded int64) int64 {
	return AddBound(decoded, decoded/8+64<<10)
}

// AddBound is a + b for sizes (a, b >= 0), saturating at math.MaxInt64
// instead of overflowing.
func AddBound(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// StepBound returns the most bytes codec c writes for decoded bytes: its
// Bounder's bound, the exact size of a Sizer (a filter), or UnknownBound.
func StepBound(c Codec, decoded int64) int64 {
	if b, ok := c.(Bounder); ok {
		return b.MaxEncodedSize(decoded)
	}
	if s, ok := c.(Sizer); ok && decoded <= math.MaxInt32 {
		if n, ok := s.EncodedSize(int(decoded)); ok {
			return int64(n)
		}
	}
	return UnknownBound(decoded)
}

// MaxEncodedSize returns the most bytes a chunk of decoded bytes can be
// stored as through the chain: each step's worst case applied to the one
// before it, in encoding order, plus BoundSlack. A stored object larger
// than that was not written by these codecs from a chunk of that size: it
// is corrupt, and no reader need read it to find out.
func (c *Chain) MaxEncodedSize(decoded int64) int64 {
	return AddBound(c.EncodedBound(decoded), BoundSlack)
}

// EncodedBound is MaxEncodedSize without the slack: for a part of a
// stored object (an inner chunk of a shard), whose object has the slack
// once.
func (c *Chain) EncodedBound(decoded int64) int64 {
	n := decoded
	for _, step := range c.codecs {
		n = StepBound(step, n)
	}
	return n
}
