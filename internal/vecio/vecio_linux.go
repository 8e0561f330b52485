package vecio

import (
	"os"

	"golang.org/x/sys/unix"
)

// readv reads into bufs at off with one preadv; n is the bytes read.
func readv(f *os.File, bufs [][]byte, off int64) (n int, err error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return 0, err
	}
	cerr := rc.Control(func(fd uintptr) {
		for {
			n, err = unix.Preadv(int(fd), bufs, off)
			if err != unix.EINTR {
				return
			}
		}
	})
	if cerr != nil {
		return 0, cerr
	}
	if err != nil {
		return n, &os.PathError{Op: "preadv", Path: f.Name(), Err: err}
	}
	return n, nil
}
