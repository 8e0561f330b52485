package compressors

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"io"

	"github.com/ulikunitz/xz"
	"github.com/ulikunitz/xz/lzma"

	"github.com/nczarrfs/nczarrfs/nczarr/codec"
	"github.com/nczarrfs/nczarrfs/nczarr/codec/internal/stream"
)

// Python lzma module constants used in numcodecs' LZMA configuration.
const (
	formatAuto  = 0
	formatXZ    = 1
	formatAlone = 2
	formatRaw   = 3

	filterLZMA1 = 0x4000000000000001
	filterLZMA2 = 0x21
)

var xzMagic = []byte{0xFD, '7', 'z', 'X', 'Z', 0}

// lzmaFilter is one entry of a Python lzma filter chain.
type lzmaFilter struct {
	ID uint64 `json:"id"`
	LC *int   `json:"lc"`
	LP *int   `json:"lp"`
	PB *int   `json:"pb"`
}

// lzmaCodec decodes numcodecs' lzma: an xz stream by default, or the
// legacy .lzma ("alone") format, or a raw LZMA1 or LZMA2 stream described
// by a one-filter chain.
type lzmaCodec struct {
	format int
	filter lzmaFilter // for formatRaw
}

func newLZMA(config json.RawMessage) (codec.Codec, error) {
	var c struct {
		Format  *int         `json:"format"`
		Filters []lzmaFilter `json:"filters"`
	}
	if err := json.Unmarshal(config, &c); err != nil {
		return nil, err
	}
	l := &lzmaCodec{format: formatXZ}
	if c.Format != nil {
		l.format = *c.Format
	}
	switch l.format {
	case formatAuto, formatXZ, formatAlone:
	case formatRaw:
		if len(c.Filters) != 1 || (c.Filters[0].ID != filterLZMA1 && c.Filters[0].ID != filterLZMA2) {
			return nil, fmt.Errorf("%w: raw lzma supports one LZMA1 or LZMA2 filter, have %d filters", codec.ErrUnknown, len(c.Filters))
		}
		l.filter = c.Filters[0]
	default:
		return nil, fmt.Errorf("%w: lzma format %d", codec.ErrUnknown, l.format)
	}
	return l, nil
}

// dictCap is the dictionary an LZMA decoder needs to produce at most limit
// bytes: no match can reach further back than the output's start.
func dictCap(limit int) int {
	return min(max(limit, lzma.MinDictCap), int(lzma.MaxDictCap))
}

func (l *lzmaCodec) Decode(dst, src []byte, size, maxSize int) ([]byte, error) {
	limit := stream.Limit(size, maxSize)
	format := l.format
	if format == formatAuto {
		format = formatAlone
		if bytes.HasPrefix(src, xzMagic) {
			format = formatXZ
		}
	}
	var r io.Reader
	var err error
	switch format {
	case formatXZ:
		r, err = xz.ReaderConfig{DictCap: lzma.MinDictCap}.NewReader(shrinkXZ(src, limit))
	case formatAlone:
		if len(src) < lzma.HeaderLen {
			return nil, fmt.Errorf("%w: lzma stream of %d bytes has no header", codec.ErrCorrupt, len(src))
		}
		// Shrink the declared dictionary to what the output can use, so
		// a header cannot make the decoder allocate more.
		var hdr [lzma.HeaderLen]byte
		copy(hdr[:], src)
		if d := binary.LittleEndian.Uint32(hdr[1:]); int64(d) > int64(dictCap(limit)) {
			binary.LittleEndian.PutUint32(hdr[1:], uint32(dictCap(limit)))
		}
		r, err = lzma.ReaderConfig{DictCap: int(lzma.MaxDictCap)}.NewReader(
			io.MultiReader(bytes.NewReader(hdr[:]), bytes.NewReader(src[lzma.HeaderLen:])))
	case formatRaw:
		if l.filter.ID == filterLZMA2 {
			r, err = lzma.Reader2Config{DictCap: dictCap(limit)}.NewReader2(bytes.NewReader(src))
			break
		}
		lc, lp, pb := intOr(l.filter.LC, 3), intOr(l.filter.LP, 0), intOr(l.filter.PB, 2)
		if lc < 0 || lc > 8 || lp < 0 || lp > 4 || pb < 0 || pb > 4 {
			return nil, fmt.Errorf("%w: lzma1 lc=%d lp=%d pb=%d", codec.ErrUnknown, lc, lp, pb)
		}
		// A raw LZMA1 stream is a .lzma stream without its header: give it
		// one with an unknown size, which makes the end marker required.
		var hdr [lzma.HeaderLen]byte
		hdr[0] = byte((pb*5+lp)*9 + lc)
		binary.LittleEndian.PutUint32(hdr[1:], uint32(dictCap(limit)))
		binary.LittleEndian.PutUint64(hdr[5:], ^uint64(0))
		r, err = lzma.ReaderConfig{DictCap: int(lzma.MaxDictCap)}.NewReader(
			io.MultiReader(bytes.NewReader(hdr[:]), bytes.NewReader(src)))
	}
	if err != nil {
		return nil, fmt.Errorf("%w: lzma: %v", codec.ErrCorrupt, err)
	}
	return stream.Read(dst, r, size, maxSize, "lzma")
}

func intOr(p *int, def int) int {
	if p == nil {
		return def
	}
	return *p
}

// shrinkXZ returns a reader of the xz stream in src whose first block
// declares an LZMA2 dictionary no larger than the output can use (limit
// bytes), so that decoding a small chunk compressed with a large preset
// does not allocate the preset's dictionary (64 MiB for preset 9). The
// block header's CRC is recomputed; anything unexpected leaves src as is
// for the decoder to judge.
func shrinkXZ(src []byte, limit int) io.Reader {
	const streamHeader = 12
	if len(src) <= streamHeader || src[streamHeader] == 0 {
		return bytes.NewReader(src)
	}
	size := (int(src[streamHeader]) + 1) * 4
	if streamHeader+size > len(src) {
		return bytes.NewReader(src)
	}
	hdr := append([]byte(nil), src[streamHeader:streamHeader+size]...)
	body := hdr[:size-4]
	if crc32.ChecksumIEEE(body) != binary.LittleEndian.Uint32(hdr[size-4:]) {
		return bytes.NewReader(src)
	}
	flags := body[1]
	i := 2
	varint := func() (uint64, bool) {
		var v uint64
		for k := 0; k < 9 && i < len(body); k++ {
			b := body[i]
			i++
			v |= uint64(b&0x7f) << (7 * k)
			if b&0x80 == 0 {
				return v, true
			}
		}
		return 0, false
	}
	for _, present := range []bool{flags&0x40 != 0, flags&0x80 != 0} {
		if present {
			if _, ok := varint(); !ok {
				return bytes.NewReader(src)
			}
		}
	}
	patched := false
	for f := 0; f < int(flags&3)+1; f++ {
		id, ok1 := varint()
		n, ok2 := varint()
		if !ok1 || !ok2 || uint64(len(body)-i) < n {
			return bytes.NewReader(src)
		}
		if id == filterLZMA2 && n == 1 {
			if code := dictCode(limit); code < body[i] && body[i] <= 40 {
				body[i] = code
				patched = true
			}
		}
		i += int(n)
	}
	if !patched {
		return bytes.NewReader(src)
	}
	binary.LittleEndian.PutUint32(hdr[size-4:], crc32.ChecksumIEEE(body))
	return io.MultiReader(bytes.NewReader(src[:streamHeader]), bytes.NewReader(hdr),
		bytes.NewReader(src[streamHeader+size:]))
}

// dictCode is the smallest LZMA2 dictionary-size code whose size (2 or 3
// times a power of two, from 4 KiB) holds limit bytes.
func dictCode(limit int) byte {
	for code := byte(0); code < 40; code++ {
		if (2|int64(code&1))<<(code/2+11) >= int64(limit) {
			return code
		}
	}
	return 40
}
