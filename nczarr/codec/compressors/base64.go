package compressors

import (
	"encoding/base64"
	"fmt"

	"github.com/nczarrfs/nczarrfs/nczarr/codec"
	"github.com/nczarrfs/nczarrfs/nczarr/codec/internal/stream"
)

// decodeBase64 decodes numcodecs' base64 (standard alphabet, padded).
// Like Python's base64.standard_b64decode it skips bytes outside the
// alphabet, such as line breaks.
func decodeBase64(dst, src []byte, size, maxSize int) ([]byte, error) {
	clean := src
	for _, c := range src {
		if !isBase64(c) {
			clean = make([]byte, 0, len(src))
			for _, c := range src {
				if isBase64(c) {
					clean = append(clean, c)
				}
			}
			break
		}
	}
	n := base64.StdEncoding.DecodedLen(len(clean))
	if limit := stream.Limit(size, maxSize); n > limit+2 {
		return nil, fmt.Errorf("%w: base64 of %d bytes decodes to more than %d bytes", codec.ErrCorrupt, len(clean), limit)
	}
	out := stream.Grow(dst, n)[:n]
	m, err := base64.StdEncoding.Decode(out, clean)
	if err != nil {
		return nil, fmt.Errorf("%w: base64: %v", codec.ErrCorrupt, err)
	}
	out = out[:m]
	if err := stream.CheckSize(len(out), size, maxSize); err != nil {
		return nil, fmt.Errorf("base64: %w", err)
	}
	return out, nil
}

func isBase64(c byte) bool {
	return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '+' || c == '/' || c == '='
}
