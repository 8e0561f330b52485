package fusefs

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"syscall"

	"github.com/nczarrfs/nczarrfs/internal/stats"
	"github.com/nczarrfs/nczarrfs/zmap"
)

// errnoOf maps an error from the core to the errno FUSE returns. It is the
// only place errors become errnos (go-fuse's own ToErrno compares with ==
// and would turn a wrapped not-found into ENOSYS).
func errnoOf(err error) syscall.Errno {
	var errno syscall.Errno
	switch {
	case err == nil:
		return 0
	case errors.Is(err, zmap.ErrNotFound):
		return syscall.ENOENT
	case errors.Is(err, zmap.ErrPermission):
		return syscall.EACCES
	case errors.Is(err, context.Canceled):
		return syscall.EINTR
	case errors.As(err, &errno):
		return errno
	}
	return syscall.EIO
}

// reporter logs each distinct failure once, so a corrupt chunk that is
// read a thousand times makes one log line naming its key.
type reporter struct {
	log  *slog.Logger
	mu   sync.Mutex
	seen map[string]bool // GUARDED_BY(mu)
	errs *stats.ErrorLog // what .nczarrfs/errors shows; nil for none
}

// maxReported bounds the memory of reporter; past it, lines repeat.
const maxReported = 10000

// errno logs err (once per message) unless it is an expected outcome,
// and returns its errno.
func (r *reporter) errno(op, key string, err error) syscall.Errno {
	e := errnoOf(err)
	record(r.errs, op, key, err, e)
	if e == syscall.ENOENT || e == syscall.EINTR {
		return e
	}
	msg := err.Error()
	r.mu.Lock()
	if len(r.seen) >= maxReported {
		r.seen = map[string]bool{}
	}
	first := !r.seen[op+key+msg]
	r.seen[op+key+msg] = true
	r.mu.Unlock()
	if first {
		r.log.Error(op+" failed", "key", key, "errno", e.Error(), "err", msg)
	}
	return e
}
