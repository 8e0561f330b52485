package zmap

import (
	"context"
	"errors"
	"fmt"
	"io"
)

// DefaultMaxSize is the bound on an object that Get reads when the
// request's context sets none (WithMaxSize): metadata documents (.zarray,
// zarr.json, .zmetadata) are far smaller. Readers of chunks and shards set
// the bound their metadata implies.
const DefaultMaxSize = 64 << 20

// maxSizeKey is the context key of the bound WithMaxSize sets.
type maxSizeKey struct{}

// WithMaxSize returns a context whose Get requests read objects of at most
// n bytes (n > 0): a store that learns of a larger object (from a stat, a
// zip directory, a Content-Length, or the bytes as they arrive) stops and
// fails with a *TooLargeError before it holds more than n+1 bytes of it.
// The bound is known before the object is read, so that no stored object,
// however large or endless, is read whole into memory.
func WithMaxSize(ctx context.Context, n int64) context.Context {
	if n <= 0 {
		n = 1
	}
	return context.WithValue(ctx, maxSizeKey{}, n)
}

// MaxSize returns the bound WithMaxSize set on ctx, or DefaultMaxSize.
func MaxSize(ctx context.Context) int64 {
	if n, ok := ctx.Value(maxSizeKey{}).(int64); ok {
		return n
	}
	return DefaultMaxSize
}

// TooLargeError is the error of a Get whose object is larger than the
// request's bound: a stored object over its bound is corrupt, and none of
// it is returned. Size is what the store says the object holds, or, for a
// body with no stated length, at least how much arrived (Bound+1).
type TooLargeError struct {
	Key   string
	Size  int64 // the object's size, or a lower bound of it (AtLeast)
	Bound int64 // the request's bound
	// AtLeast is true when Size is only what arrived before the read
	// stopped (a body with no length).
	AtLeast bool
}

func (e *TooLargeError) Error() string {
	more := ""
	if e.AtLeast {
		more = "at least "
	}
	return fmt.Sprintf("object %s is %s%d bytes, over its bound of %d bytes", e.Key, more, e.Size, e.Bound)
}

// CheckSize returns a *TooLargeError when size, an object's size as a
// store knows it before reading it, is over ctx's bound (MaxSize).
func CheckSize(ctx context.Context, key string, size int64) error {
	if bound := MaxSize(ctx); size > bound {
		return &TooLargeError{Key: key, Size: size, Bound: bound}
	}
	return nil
}

// IsTooLarge reports whether err is, or wraps, a *TooLargeError.
func IsTooLarge(err error) bool {
	var e *TooLargeError
	return errors.As(err, &e)
}

// ReadBounded reads r to its end for the object key, whose size is not
// known beforehand, keeping at most bound+1 bytes: a body longer than
// bound fails with a *TooLargeError (AtLeast) as soon as its byte bound+1
// arrives, however much more would follow. The buffer grows with what
// arrives, never to the bound ahead of it. It returns what it read
// before an error of r's, with that error.
func ReadBounded(r io.Reader, key string, bound int64) ([]byte, error) {
	var b []byte
	for {
		if int64(len(b)) > bound {
			return nil, &TooLargeError{Key: key, Size: int64(len(b)), Bound: bound, AtLeast: true}
		}
		if len(b) == cap(b) {
			// Grow by doubling, never past bound+1.
			n := min(max(2*int64(cap(b)), 512), bound+1)
			if n <= int64(len(b)) {
				n = int64(len(b)) + 1
			}
			nb := make([]byte, len(b), n)
			copy(nb, b)
			b = nb
		}
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			if int64(len(b)) > bound {
				return nil, &TooLargeError{Key: key, Size: int64(len(b)), Bound: bound, AtLeast: true}
			}
			return b, nil
		}
		if err != nil {
			return b, err
		}
	}
}
