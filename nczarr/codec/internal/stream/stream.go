// Package stream wraps the general-purpose decompressors shared by the
// standalone codecs and blosc's inner codecs so that every call is bounded
// by the size its caller expects and reuses pooled decoder state.
//
// Every function takes dst (len 0, any capacity, reused when large enough),
// the compressed src, the exact output size (or -1) and the largest output
// acceptable when the size is unknown. Corrupt input and output of the
// wrong size return errors wrapping codec.ErrCorrupt.
package stream

import (
	"bytes"
	"compress/bzip2"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zlib"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"

	"github.com/nczarrfs/nczarrfs/nczarr/codec"
)

// Grow returns dst[:0] with room for n bytes, reusing dst when it has it.
func Grow(dst []byte, n int) []byte {
	if cap(dst) >= n {
		return dst[:0]
	}
	return make([]byte, 0, n)
}

// Limit is the most bytes a call may produce: size when known, else maxSize.
func Limit(size, maxSize int) int {
	if size >= 0 {
		return size
	}
	return maxSize
}

// CheckSize reports whether n decoded bytes satisfy size and maxSize.
func CheckSize(n, size, maxSize int) error {
	if size >= 0 && n != size {
		return fmt.Errorf("%w: decoded %d bytes, want %d", codec.ErrCorrupt, n, size)
	}
	if size < 0 && n > maxSize {
		return fmt.Errorf("%w: decoded more than %d bytes", codec.ErrCorrupt, maxSize)
	}
	return nil
}

// ReadAll reads r to its end into dst, failing once it has produced more
// than Limit(size, maxSize) bytes or, when size is known, fewer than size.
// Reading to io.EOF is what makes zlib and gzip readers verify their
// checksums, so ReadAll always asks for one byte more than it accepts.
func ReadAll(dst []byte, r io.Reader, size, maxSize int) ([]byte, error) {
	limit := Limit(size, maxSize)
	if size >= 0 {
		dst = Grow(dst, size)
	} else {
		dst = dst[:0]
	}
	for {
		if len(dst) == cap(dst) {
			if len(dst) > limit {
				break
			}
			// Grow geometrically, but never allocate far beyond the limit.
			want := min(max(2*cap(dst), 4096), limit+1)
			if want <= cap(dst) {
				want = cap(dst) + 1
			}
			grown := make([]byte, len(dst), want)
			copy(grown, dst)
			dst = grown
		}
		n, err := r.Read(dst[len(dst):cap(dst)])
		dst = dst[:len(dst)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %v", codec.ErrCorrupt, err)
		}
		if len(dst) > limit {
			break
		}
	}
	if len(dst) > limit {
		if size >= 0 {
			return nil, fmt.Errorf("%w: decodes to more than %d bytes", codec.ErrCorrupt, size)
		}
		return nil, fmt.Errorf("%w: decodes to more than %d bytes", codec.ErrCorrupt, maxSize)
	}
	if err := CheckSize(len(dst), size, maxSize); err != nil {
		return nil, err
	}
	return dst, nil
}

// ReadExact reads exactly size bytes from r into dst[:size] (with cap(dst)
// >= size + 1 not required) and then requires r to be at its end.
func ReadExact(dst []byte, r io.Reader, size int) error {
	if _, err := io.ReadFull(r, dst[:size]); err != nil {
		if err == io.ErrUnexpectedEOF || err == io.EOF {
			return fmt.Errorf("%w: decodes to fewer than %d bytes", codec.ErrCorrupt, size)
		}
		return fmt.Errorf("%w: %v", codec.ErrCorrupt, err)
	}
	var one [1]byte
	for {
		n, err := r.Read(one[:])
		if n > 0 {
			return fmt.Errorf("%w: decodes to more than %d bytes", codec.ErrCorrupt, size)
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%w: %v", codec.ErrCorrupt, err)
		}
	}
}

// byteReaders pools the bytes.Reader every streaming decoder reads from.
var byteReaders = sync.Pool{New: func() any { return new(bytes.Reader) }}

var zlibReaders sync.Pool // of io.ReadCloser implementing zlib.Resetter

// Zlib decodes a zlib stream (RFC 1950), verifying its Adler-32.
func Zlib(dst, src []byte, size, maxSize int) ([]byte, error) {
	br := byteReaders.Get().(*bytes.Reader)
	defer byteReaders.Put(br)
	br.Reset(src)
	var zr io.ReadCloser
	if v := zlibReaders.Get(); v != nil {
		zr = v.(io.ReadCloser)
		if err := zr.(zlib.Resetter).Reset(br, nil); err != nil {
			zlibReaders.Put(zr)
			return nil, fmt.Errorf("%w: zlib: %v", codec.ErrCorrupt, err)
		}
	} else {
		var err error
		if zr, err = zlib.NewReader(br); err != nil {
			return nil, fmt.Errorf("%w: zlib: %v", codec.ErrCorrupt, err)
		}
	}
	defer zlibReaders.Put(zr)
	return Read(dst, zr, size, maxSize, "zlib")
}

var gzipReaders = sync.Pool{New: func() any { return new(gzip.Reader) }}

// Gzip decodes one or more gzip members (RFC 1952), verifying their CRC-32.
func Gzip(dst, src []byte, size, maxSize int) ([]byte, error) {
	br := byteReaders.Get().(*bytes.Reader)
	defer byteReaders.Put(br)
	br.Reset(src)
	zr := gzipReaders.Get().(*gzip.Reader)
	defer gzipReaders.Put(zr)
	if err := zr.Reset(br); err != nil {
		return nil, fmt.Errorf("%w: gzip: %v", codec.ErrCorrupt, err)
	}
	return Read(dst, zr, size, maxSize, "gzip")
}

// Bzip2 decodes a bzip2 stream. The standard library's decoder cannot be
// reset, so its state is allocated per call.
func Bzip2(dst, src []byte, size, maxSize int) ([]byte, error) {
	br := byteReaders.Get().(*bytes.Reader)
	defer byteReaders.Put(br)
	br.Reset(src)
	return Read(dst, bzip2.NewReader(br), size, maxSize, "bz2")
}

// Read is ReadExact when size is known and ReadAll otherwise, with
// errors naming the format.
func Read(dst []byte, r io.Reader, size, maxSize int, format string) ([]byte, error) {
	if size >= 0 {
		dst = Grow(dst, size)[:size]
		if err := ReadExact(dst, r, size); err != nil {
			return nil, fmt.Errorf("%s: %w", format, err)
		}
		return dst, nil
	}
	out, err := ReadAll(dst, r, size, maxSize)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", format, err)
	}
	return out, nil
}

// zstdDecoder decodes whole buffers; DecodeAll is safe for concurrent use
// and keeps a pool of per-goroutine block decoders. With the cap limit on,
// it never writes past cap(dst).
var zstdDecoder = sync.OnceValue(func() *zstd.Decoder {
	d, err := zstd.NewReader(nil,
		zstd.WithDecoderConcurrency(runtime.GOMAXPROCS(0)),
		zstd.WithDecodeAllCapLimit(true),
		zstd.WithDecoderMaxMemory(1<<31),
	)
	if err != nil {
		panic("stream: zstd decoder: " + err.Error())
	}
	return d
})

// Zstd decodes one or more zstd frames.
func Zstd(dst, src []byte, size, maxSize int) ([]byte, error) {
	if size < 0 {
		return zstdUnknown(dst, src, maxSize)
	}
	limit := size
	out, err := zstdDecoder().DecodeAll(src, Grow(dst, limit))
	if err != nil {
		if errors.Is(err, zstd.ErrDecoderSizeExceeded) {
			return nil, fmt.Errorf("zstd: %w: decodes to more than %d bytes", codec.ErrCorrupt, limit)
		}
		return nil, fmt.Errorf("zstd: %w: %v", codec.ErrCorrupt, err)
	}
	if err := CheckSize(len(out), size, maxSize); err != nil {
		return nil, fmt.Errorf("zstd: %w", err)
	}
	return out, nil
}

// zstdUnknown decodes zstd frames to at most maxSize bytes of unknown
// size. DecodeAll writes only into the room it is given, so it would need
// all of maxSize reserved ahead (8 times a chunk, for an inner step); a
// streaming decoder's output grows with what the frames produce instead
// (ReadAll), and its window is bounded by the output's bound too.
func zstdUnknown(dst, src []byte, maxSize int) ([]byte, error) {
	br := byteReaders.Get().(*bytes.Reader)
	defer byteReaders.Put(br)
	br.Reset(src)
	window := uint64(max(maxSize, 8<<20))
	d, err := zstd.NewReader(br, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true),
		zstd.WithDecoderMaxWindow(min(window, zstd.MaxWindowSize)), zstd.WithDecoderMaxMemory(window))
	if err != nil {
		return nil, fmt.Errorf("zstd: %w: %v", codec.ErrCorrupt, err)
	}
	defer d.Close()
	return Read(dst, d, -1, maxSize, "zstd")
}

// LZ4Block decodes a raw LZ4 block (no frame, no size prefix) that must
// produce exactly size bytes.
func LZ4Block(dst, src []byte, size int) ([]byte, error) {
	dst = Grow(dst, size)[:size]
	if size == 0 {
		// LZ4 encodes an empty block as a single zero token.
		if len(src) == 1 && src[0] == 0 {
			return dst, nil
		}
		return nil, fmt.Errorf("lz4: %w: non-empty block for empty output", codec.ErrCorrupt)
	}
	n, err := lz4.UncompressBlock(src, dst)
	if err != nil {
		return nil, fmt.Errorf("lz4: %w: %v", codec.ErrCorrupt, err)
	}
	if n != size {
		return nil, fmt.Errorf("lz4: %w: decoded %d bytes, want %d", codec.ErrCorrupt, n, size)
	}
	return dst, nil
}

// Snappy decodes a raw Snappy block (varint length, then elements). The
// decoder also accepts the S2 extensions of the block format.
func Snappy(dst, src []byte, size, maxSize int) ([]byte, error) {
	n, err := s2.DecodedLen(src)
	if err != nil {
		return nil, fmt.Errorf("snappy: %w: %v", codec.ErrCorrupt, err)
	}
	if err := CheckSize(n, size, maxSize); err != nil {
		return nil, fmt.Errorf("snappy: %w", err)
	}
	out, err := s2.Decode(Grow(dst, n), src)
	if err != nil {
		return nil, fmt.Errorf("snappy: %w: %v", codec.ErrCorrupt, err)
	}
	return out, nil
}
