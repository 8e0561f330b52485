package fusefs

import (
	"context"
	"errors"
	"syscall"
	"time"

	"github.com/nczarrfs/nczarrfs/internal/stats"
	"github.com/nczarrfs/nczarrfs/nczarr/codec"
	"github.com/nczarrfs/nczarrfs/zmap"
)

// Kinds of failure, as counted in .nczarrfs/stats.
const (
	kindCorrupt     = "corrupt"     // a chunk that does not decode or fails its checksum
	kindUnsupported = "unsupported" // a codec or dtype nczarrfs cannot read
	kindPermission  = "permission"  // the store refused access
	kindTimeout     = "timeout"     // the store did not answer in time
	kindInterrupted = "interrupted" // the reader gave up (signal)
	kindIO          = "io"          // anything else
)

// errorKind classifies a failure returned to a user.
func errorKind(err error) string {
	switch {
	case errors.Is(err, codec.ErrCorrupt):
		return kindCorrupt
	case errors.Is(err, codec.ErrUnknown):
		return kindUnsupported
	case errors.Is(err, zmap.ErrPermission):
		return kindPermission
	case errors.Is(err, context.DeadlineExceeded):
		return kindTimeout
	case errors.Is(err, context.Canceled):
		return kindInterrupted
	}
	return kindIO
}

// record adds a failure returned to a user, with errno e, to the mount's
// error log. Not-found is an answer, not a failure, and is not recorded;
// interruptions are counted but not kept, so that they cannot crowd the
// real failures out of .nczarrfs/errors.
func record(l *stats.ErrorLog, op, key string, err error, e syscall.Errno) {
	if l == nil || e == syscall.ENOENT {
		return
	}
	kind := errorKind(err)
	if e == syscall.EINTR {
		l.Count(kindInterrupted)
		return
	}
	l.Add(stats.Error{Time: time.Now().UTC(), Op: op, Key: key, Kind: kind, Errno: errnoName(e), Err: err.Error()})
}

// errnoName is the C name of the errnos FUSE requests fail with.
func errnoName(e syscall.Errno) string {
	switch e {
	case syscall.EIO:
		return "EIO"
	case syscall.EACCES:
		return "EACCES"
	case syscall.EINTR:
		return "EINTR"
	case syscall.EROFS:
		return "EROFS"
	case syscall.ENOENT:
		return "ENOENT"
	}
	return e.Error()
}

// setStats makes m, or new counters when m is nil, the tree's, before the
// tree is mounted.
func (t *tree) setStats(m *stats.Mount) {
	if m == nil {
		m = &stats.Mount{}
	}
	t.stats = m
	t.rep.errs = m.Errors()
}
