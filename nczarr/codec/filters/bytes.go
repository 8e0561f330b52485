package filters

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/adler32"
	"hash/crc32"
	"unicode/utf8"

	"github.com/nczarrfs/nczarrfs/nczarr/codec"
	"github.com/nczarrfs/nczarrfs/nczarr/codec/internal/stream"
)

// packBits undoes numcodecs' packbits: a byte counting the padding bits,
// then the booleans eight to a byte, most significant bit first.
type packBits struct{}

func (packBits) EncodedSize(decoded int) (int, bool) { return 1 + (decoded+7)/8, true }

func (packBits) Decode(dst, src []byte, size, maxSize int) ([]byte, error) {
	if len(src) == 0 {
		return nil, fmt.Errorf("%w: packbits chunk is empty", codec.ErrCorrupt)
	}
	pad := int(src[0])
	bits := 8 * (len(src) - 1)
	if pad > 7 || pad > bits {
		return nil, fmt.Errorf("%w: packbits padding of %d bits", codec.ErrCorrupt, pad)
	}
	n := bits - pad
	if err := stream.CheckSize(n, size, maxSize); err != nil {
		return nil, err
	}
	out := stream.Grow(dst, n)[:n]
	for i := range out {
		out[i] = src[1+i/8] >> (7 - i%8) & 1
	}
	return out, nil
}

// categorize undoes numcodecs' categorize: each encoded integer k > 0
// stands for labels[k-1], anything else for the empty string, in a
// fixed-width unicode dtype.
type categorize struct {
	elementwise
	labels [][]byte // each encoded in dtype, padded to its width
	empty  []byte
}

func newCategorize(config json.RawMessage) (codec.Codec, error) {
	var c struct {
		Labels []string `json:"labels"`
		Dtype  string   `json:"dtype"`
		Astype string   `json:"astype"`
	}
	if err := parseConfig(config, &c); err != nil {
		return nil, err
	}
	if c.Dtype == "|O" || c.Dtype == "O" {
		return nil, fmt.Errorf("%w: categorize to object dtype has no fixed-size layout", codec.ErrUnknown)
	}
	dt, err := parseDtype(c.Dtype)
	if err != nil {
		return nil, err
	}
	if c.Astype == "" {
		c.Astype = "|u1"
	}
	at, err := parseDtype(c.Astype)
	if err != nil {
		return nil, err
	}
	if dt.kind != 'U' || (at.kind != 'i' && at.kind != 'u') {
		return nil, fmt.Errorf("categorize needs a unicode dtype and an integer astype, have %s and %s", dt.str, at.str)
	}
	cat := categorize{elementwise: elementwise{dec: dt, enc: at}, empty: make([]byte, dt.size)}
	for _, l := range c.Labels {
		b := make([]byte, dt.size)
		o := dt.order()
		for i, r := 0, l; i < dt.size/4 && len(r) > 0; i++ {
			c, n := utf8.DecodeRuneInString(r)
			r = r[n:]
			o.PutUint32(b[4*i:], uint32(c))
		}
		cat.labels = append(cat.labels, b)
	}
	return cat, nil
}

func (c categorize) Decode(dst, src []byte, size, maxSize int) ([]byte, error) {
	n, out, err := c.prepare(dst, src, size, maxSize)
	if err != nil {
		return nil, err
	}
	for i := 0; i < n; i++ {
		k := c.enc.load(src[i*c.enc.size:]).i
		label := c.empty
		if k >= 1 && k <= int64(len(c.labels)) {
			label = c.labels[k-1]
		}
		copy(out[i*c.dec.size:], label)
	}
	return out, nil
}

type checksumKind int

const (
	crc32Sum      checksumKind = iota // numcodecs crc32: CRC-32 prefix
	adler32Sum                        // numcodecs adler32: Adler-32 prefix
	fletcher32Sum                     // HDF5 and numcodecs fletcher32: suffix
)

// checksum verifies and strips a 4-byte little-endian checksum.
type checksum struct{ kind checksumKind }

func (checksum) EncodedSize(decoded int) (int, bool) { return decoded + 4, true }

func (c checksum) Decode(dst, src []byte, size, maxSize int) ([]byte, error) {
	if len(src) < 4 {
		return nil, fmt.Errorf("%w: %d bytes cannot hold a checksum", codec.ErrCorrupt, len(src))
	}
	var data []byte
	var stored, sum uint32
	switch c.kind {
	case crc32Sum:
		data, stored = src[4:], binary.LittleEndian.Uint32(src)
		sum = crc32.ChecksumIEEE(data)
	case adler32Sum:
		data, stored = src[4:], binary.LittleEndian.Uint32(src)
		sum = adler32.Checksum(data)
	default:
		data, stored = src[:len(src)-4], binary.LittleEndian.Uint32(src[len(src)-4:])
		sum = Fletcher32(data)
		// HDF5 before 1.6.3 stored the checksum with its 16-bit halves
		// byte-swapped; HDF5 accepts both, and so do we.
		if stored != sum && stored == swap16Halves(sum) {
			sum = stored
		}
	}
	if stored != sum {
		return nil, fmt.Errorf("%w: checksum mismatch (stored %#08x, computed %#08x)", codec.ErrCorrupt, stored, sum)
	}
	if err := stream.CheckSize(len(data), size, maxSize); err != nil {
		return nil, err
	}
	return append(stream.Grow(dst, len(data)), data...), nil
}

func swap16Halves(v uint32) uint32 {
	return (v&0x00ff00ff)<<8 | (v&0xff00ff00)>>8
}

// Fletcher32 is HDF5's Fletcher-32: big-endian 16-bit words (an odd last
// byte padded with zero), sums reduced modulo 65535 lazily.
func Fletcher32(data []byte) uint32 {
	var sum1, sum2 uint32
	words := len(data) / 2
	for words > 0 {
		n := min(words, 360)
		words -= n
		for ; n > 0; n-- {
			sum1 += uint32(data[0])<<8 | uint32(data[1])
			data = data[2:]
			sum2 += sum1
		}
		sum1 = sum1&0xffff + sum1>>16
		sum2 = sum2&0xffff + sum2>>16
	}
	if len(data) == 1 {
		sum1 += uint32(data[0]) << 8
		sum2 += sum1
		sum1 = sum1&0xffff + sum1>>16
		sum2 = sum2&0xffff + sum2>>16
	}
	sum1 = sum1&0xffff + sum1>>16
	sum2 = sum2&0xffff + sum2>>16
	return sum2<<16 | sum1
}
