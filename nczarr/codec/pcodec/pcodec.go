// Package pcodec decodes pcodec (pco), numcodecs' "pcodec" codec and Zarr
// v3's "numcodecs.pcodec": numeric columns compressed with pco's
// standalone format, as written by pcodec 0.x and 1.x.
//
// A standalone stream is a header ("pco!", the standalone version, the
// number type when uniform, a hint of the count) and the wrapped format's
// version, then chunks of up to 2^24 numbers, each one page here: chunk
// metadata (mode, delta encoding, and per latent variable the bins of its
// tANS code) and the page (delta state, tANS states, then batches of 256
// numbers). docs/codecs.md lists what is supported.
//
// Every count in the stream is bounded by the output size the caller
// declares before anything is allocated for it, so corrupt input fails
// with codec.ErrCorrupt and never allocates more than the declared size
// allows (a small constant factor for the latents).
package pcodec

import (
	"encoding/json"
	"fmt"
	"sync"

	"github.com/nczarrfs/nczarrfs/nczarr/codec"
)

func init() {
	codec.Register("pcodec", func(json.RawMessage) (codec.Codec, error) { return decoder{}, nil })
}

// decoder decodes pco standalone streams; the configuration only steers
// the encoder.
type decoder struct{}

func corrupt(format string, args ...any) error {
	return fmt.Errorf("%w: %s", codec.ErrCorrupt, fmt.Sprintf(format, args...))
}

// maxFormat is the newest wrapped format version (major) understood.
const maxFormat = 4

func (decoder) Decode(dst, src []byte, size, maxSize int) ([]byte, error) {
	limit := maxSize
	if size >= 0 {
		limit = size
	}
	return decode(dst[:0], src, limit, size >= 0)
}

// decode appends to dst the numbers of the pco standalone stream src as
// little-endian bytes. It fails when they would take more than limit
// bytes, or, when exact, other than limit bytes.
func decode(dst, src []byte, limit int, exact bool) ([]byte, error) {
	r := &bitReader{src: src}
	if len(src) < 5 || string(src[:4]) != "pco!" {
		return nil, corrupt("no pco! magic header")
	}
	r.pos = 32
	version := src[4]
	var uniform byte
	if version >= 2 {
		// Standalone version 2 and later: its own version byte, the
		// uniform number type (3 and later), and the count hint.
		if version > 3 {
			return nil, corrupt("standalone version %d is newer than 3", version)
		}
		r.pos += 8
		if version >= 3 {
			var err error
			if uniform, err = r.byte("uniform type"); err != nil {
				return nil, err
			}
			if _, ok := numTypes[uniform]; uniform != 0 && !ok {
				return nil, corrupt("unknown number type %d", uniform)
			}
		}
		r.readWide(1 + uint(r.read(6))) // count hint, not trusted
		if err := r.align("count hint"); err != nil {
			return nil, err
		}
	} // else the byte is already the wrapped format's version
	major, err := r.byte("format version")
	if err != nil {
		return nil, err
	}
	if major > maxFormat {
		return nil, corrupt("format version %d is newer than %d", major, maxFormat)
	}
	if major == 4 {
		if _, err := r.byte("format minor version"); err != nil {
			return nil, err
		}
	}

	start := len(dst)
	s := scratchPool.Get().(*scratch)
	defer s.release()
	var typ byte
	for {
		code, err := r.byte("number type")
		if err != nil {
			return nil, err
		}
		if code == 0 {
			break // termination byte
		}
		t, ok := numTypes[code]
		if !ok || uniform != 0 && code != uniform || typ != 0 && code != typ {
			return nil, corrupt("chunk of number type %d", code)
		}
		typ = code
		n := int(r.read(24)) + 1
		out := len(dst) - start
		if n > (limit-out)/t.size() {
			return nil, corrupt("chunk of %d numbers exceeds the %d bytes expected", n, limit)
		}
		m, err := readChunkMeta(r, t, major)
		if err != nil {
			return nil, err
		}
		dst = grow(dst, n*t.size())
		if err := s.decodePage(r, m, t, n, dst[len(dst)-n*t.size():]); err != nil {
			return nil, err
		}
	}
	if exact && len(dst)-start != limit {
		return nil, corrupt("decoded %d bytes, want %d", len(dst)-start, limit)
	}
	return dst, nil
}

// scratchPool keeps latent buffers between decodes.
var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

// maxPooled is the most latents a pooled buffer keeps (8 MiB): the buffers
// of a larger chunk are left to the garbage collector.
const maxPooled = 1 << 20

// release returns s to the pool, without buffers past maxPooled.
func (s *scratch) release() {
	for i, b := range s.bufs {
		if cap(b) > maxPooled {
			s.bufs[i] = nil
		}
	}
	s.vars = [3]pageState{}
	scratchPool.Put(s)
}

// grow extends dst by n bytes.
func grow(dst []byte, n int) []byte {
	if cap(dst)-len(dst) < n {
		d := make([]byte, len(dst), len(dst)+n)
		copy(d, dst)
		dst = d
	}
	return dst[:len(dst)+n]
}
