package icechunk

import (
	"bytes"
	"fmt"
	"strings"
	"sync"

	"github.com/klauspost/compress/zstd"
)

// File types of the header's sixth field.
const (
	typeSnapshot = 1
	typeManifest = 2
	typeTxLog    = 4
	typeRepoInfo = 6
)

// headerLen is the length of the header of every metadata file: 12 bytes
// of magic, 24 of implementation name, and one byte each of spec version,
// file type and compression.
const headerLen = 39

var magic = []byte("ICE🧊CHUNK")

// MaxDecoded bounds the decompressed size of one metadata file, so that
// a hostile file cannot take all memory.
const MaxDecoded = 512 << 20

var (
	decOnce sync.Once
	dec     *zstd.Decoder
	decErr  error
)

func decoder() (*zstd.Decoder, error) {
	decOnce.Do(func() {
		dec, decErr = zstd.NewReader(nil, zstd.WithDecoderConcurrency(2),
			zstd.WithDecoderMaxMemory(MaxDecoded), zstd.WithDecoderMaxWindow(64<<20))
	})
	return dec, decErr
}

// header is a metadata file's decoded header.
type header struct {
	Impl string // the writing implementation, as recorded
	Spec int    // spec version: 1 or 2
	Type int    // file type
}

// unwrap checks a metadata file's header and returns its FlatBuffers
// payload, decompressed.
func unwrap(data []byte, want int) (header, []byte, error) {
	var h header
	if len(data) < headerLen {
		return h, nil, fmt.Errorf("%w: %d bytes, shorter than the %d-byte header", errCorrupt, len(data), headerLen)
	}
	if !bytes.Equal(data[:12], magic) {
		return h, nil, fmt.Errorf("%w: not an Icechunk file (bad magic)", errCorrupt)
	}
	h.Impl = strings.TrimRight(string(data[12:36]), " ")
	h.Spec, h.Type = int(data[36]), int(data[37])
	if h.Spec != 1 && h.Spec != 2 {
		return h, nil, fmt.Errorf("%w: unknown spec version %d", errCorrupt, h.Spec)
	}
	if h.Type != want {
		return h, nil, fmt.Errorf("%w: file type %d, want %d", errCorrupt, h.Type, want)
	}
	body := data[headerLen:]
	switch data[38] {
	case 0:
		return h, body, nil
	case 1:
		d, err := decoder()
		if err != nil {
			return h, nil, err
		}
		out, err := d.DecodeAll(body, nil)
		if err != nil {
			return h, nil, fmt.Errorf("%w: zstd: %w", errCorrupt, err)
		}
		if len(out) > MaxDecoded {
			return h, nil, fmt.Errorf("%w: decompresses to more than %d bytes", errCorrupt, MaxDecoded)
		}
		return h, out, nil
	}
	return h, nil, fmt.Errorf("%w: unknown compression %d", errCorrupt, data[38])
}
