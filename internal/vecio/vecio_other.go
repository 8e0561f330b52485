//go:build !linux

package vecio

import "os"

// readv reads into the first buffer at off: systems other than Linux take
// the buffers one call each.
func readv(f *os.File, bufs [][]byte, off int64) (int, error) {
	return f.ReadAt(bufs[0], off)
}
