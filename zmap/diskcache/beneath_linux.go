package diskcache

import (
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// noOpenat2 is set once openat2(2) is found missing (before Linux 5.6)
// or refused (a seccomp filter).
var noOpenat2 atomic.Bool

// openBeneath opens shard/name in dir following no link, in one system
// call where openat2(2) is there.
func openBeneath(dir int, shard, name string, flags int) (int, error) {
	if !noOpenat2.Load() {
		how := unix.OpenHow{Flags: uint64(flags), Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_BENEATH | unix.RESOLVE_NO_MAGICLINKS}
		// EAGAIN: a rename somewhere raced the lookup; a few tries, then
		// the chain of opens.
		for try := 0; try < 8; try++ {
			ffd, err := unix.Openat2(dir, shard+"/"+name, &how)
			switch err {
			case unix.EINTR, unix.EAGAIN:
				continue
			case unix.ENOSYS, unix.EPERM, unix.E2BIG:
				noOpenat2.Store(true)
			default:
				return ffd, err
			}
			break
		}
	}
	return openChain(dir, shard, name, flags)
}
