package fadvise

import (
	"os"

	"golang.org/x/sys/unix"
)

func willNeed(f *os.File, off, n int64) {
	sc, err := f.SyscallConn()
	if err != nil {
		return
	}
	sc.Control(func(fd uintptr) {
		unix.Fadvise(int(fd), off, n, unix.FADV_WILLNEED)
	})
}
