// Package vecio reads a file's bytes straight into several buffers with
// one system call (preadv), so that a reader that scatters a file's bytes
// into many places (a chunk's rows into an array's rows) needs no buffer of
// its own and no copy out of it.
package vecio

import (
	"io"
	"os"
	"slices"
)

// maxBufs is the most buffers one call passes to the kernel (IOV_MAX).
const maxBufs = 1024

// ReadAt fills bufs, one after the other, with the bytes of f from offset
// off on. It fails with io.ErrUnexpectedEOF when the file ends before the
// buffers are full.
func ReadAt(f *os.File, bufs [][]byte, off int64) error {
	cloned := false
	for len(bufs) > 0 {
		if len(bufs[0]) == 0 {
			bufs = bufs[1:]
			continue
		}
		n, err := readv(f, bufs[:min(len(bufs), maxBufs)], off)
		if n == 0 && (err == nil || err == io.EOF) {
			return io.ErrUnexpectedEOF
		}
		if err != nil && err != io.EOF {
			return err
		}
		off += int64(n)
		// A short read: go on after the bytes it read, without changing
		// the caller's slice.
		for n > 0 {
			if n < len(bufs[0]) {
				if !cloned {
					bufs, cloned = slices.Clone(bufs), true
				}
				bufs[0] = bufs[0][n:]
				break
			}
			n -= len(bufs[0])
			bufs = bufs[1:]
		}
	}
	return nil
}
