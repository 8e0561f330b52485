package remote

import (
	"context"
	"errors"
)

// Error is a remote store's failure of one operation, as every backend
// reports it. It unwraps to Kind (zmap.ErrNotFound, zmap.ErrPermission),
// to context.Canceled or context.DeadlineExceeded when a context ended the
// operation, and to ErrChanged when the object changed while it was read.
// It does not unwrap to Err: that chain holds transport details such as
// syscall.ECONNREFUSED, which a caller turning errors into errnos would
// hand to read(2) instead of EIO. Err keeps it for inspection, and the
// message includes it.
type Error struct {
	Store  string // the backend, first in the message: "s3", "azure", "http"
	Op     string // the operation: "GetObject", "GetBlob", "HEAD", ...
	URL    string // the object or prefix, as the backend names it
	Status int    // HTTP status of the answer; 0 when there was none
	Code   string // the service's error code ("NoSuchKey", "BlobNotFound"); "" when none
	Msg    string // what went wrong, in words
	Kind   error  // zmap.ErrNotFound, zmap.ErrPermission or nil
	Err    error  // the underlying error (not unwrapped)
}

func (e *Error) Error() string { return e.Store + ": " + e.Op + " " + e.URL + ": " + e.Msg }

// Unwrap returns Kind and the context or change error that ended the
// operation, if any.
func (e *Error) Unwrap() []error {
	var errs []error
	if e.Kind != nil {
		errs = append(errs, e.Kind)
	}
	for _, c := range []error{context.Canceled, context.DeadlineExceeded, ErrChanged} {
		if errors.Is(e.Err, c) {
			errs = append(errs, c)
		}
	}
	return errs
}
