// Package remote is what the zmap backends of remote object stores share
// (S3 and Google Cloud Storage in zmap/s3, Azure Blob Storage, plain HTTP
// servers in zmap/http): written once here, not copied into each.
//
//   - Pacer bounds the operations in flight and halves the bound when the
//     server throttles (AIMD); Backoff and Sleep are the short, jittered
//     waits between tries.
//   - Watch wraps a backend's HTTP client: it tells the Pacer what every
//     answer said, and gives up a body that sends nothing for a while.
//   - Reader reads objects over a backend's Backend, one request at a
//     time: every operation ends within the timeout, throttled requests
//     are tried again, a body that breaks off is resumed from the byte
//     where it broke with a ranged request conditional (If-Match) on the
//     first answer's ETag, and a read is all the bytes asked for or an
//     error, never fewer ("no short reads").
//   - Reader counts what the store's stats report beyond the request kinds
//     (internal/stats counts GET, ranged GET, HEAD and LIST from the
//     zmap.Store methods themselves): throttled answers, the request limit,
//     resumed bodies and reads of changed objects.
//
// A backend implements Backend, one request per call, and classifies its
// own errors (Class). Nothing here imports FUSE or a cloud SDK.
package remote

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// ErrChanged is wrapped by the error of a read whose object was replaced
// while it was read: the rest of its body would have come from another
// version, so the read fails rather than mix the two.
var ErrChanged = errors.New("the object changed while it was read")

// Class is what a failed request means, as its backend reads its status
// and error code.
type Class int

const (
	// Failed: an error not worth another try here (a bad request, or
	// one the backend's own client already retried as often as it
	// would). It is returned.
	Failed Class = iota
	// NotFound: no object has that key (404). Readers turn it into
	// zmap.ErrNotFound.
	NotFound
	// Permission: the credentials may not do this (403). Not retried.
	Permission
	// Throttled: the server asks the client to slow down (429, 503,
	// SlowDown, ServerBusy). Tried again after Backoff for as long as
	// the timeout allows; the Pacer meanwhile lowers the requests in
	// flight.
	Throttled
	// Transient: worth another try (a reset connection, a 500, 502 or
	// 504) and not retried by the backend's own client. Tried again as
	// Throttled is.
	Transient
	// RangeNotSatisfiable: the range starts at or past the object's end
	// (416). ReadAt reads it as io.EOF.
	RangeNotSatisfiable
	// Changed: a conditional request's ETag no longer matches (412).
	Changed
)

var classNames = [...]string{"failed", "not found", "permission denied", "throttled", "transient", "range not satisfiable", "changed"}

func (c Class) String() string {
	if c < 0 || int(c) >= len(classNames) {
		return "Class(" + strconv.Itoa(int(c)) + ")"
	}
	return classNames[c]
}

// Range is a byte range of an object: Len bytes from Off, or every byte
// from Off on when Len is negative.
type Range struct {
	Off, Len int64
}

// Header is the range as an HTTP Range header value: "bytes=Off-End", or
// "bytes=Off-" to the end.
func (r Range) Header() string {
	if r.Len < 0 {
		return fmt.Sprintf("bytes=%d-", r.Off)
	}
	return fmt.Sprintf("bytes=%d-%d", r.Off, r.Off+r.Len-1)
}

// Answer is a successful answer to Backend.Open: its headers, and its body
// to read and close.
type Answer struct {
	// Body is the answer's body. Closing it ends the request (and
	// cancels what the backend started for it).
	Body io.ReadCloser
	// ContentRange is the Content-Range header ("bytes 0-99/1000"), ""
	// when the server sent the whole object (no range asked for, or one
	// it ignored).
	ContentRange string
	// Length is the Content-Length, -1 when the answer has none.
	Length int64
	// ETag is the ETag header as the server sent it, quotes included:
	// Reader passes it back unchanged as Open's ifMatch. "" when the
	// server sends none, and a weak one (W/"..."), cannot hold a resumed
	// body to the same version: such a body is not resumed.
	ETag string
	// ModTime is the Last-Modified time, zero when not sent.
	ModTime time.Time
}

// Backend is one remote store's requests, as Reader sends them. Its
// methods are safe for concurrent use; each makes one request (the
// backend's own client may retry it) and blocks until its answer's
// headers arrive or ctx ends.
type Backend interface {
	// Open sends one GET of the object under key (a zmap key; the
	// backend turns it into its own name): the whole object when rng is
	// nil, else that range of it; conditional on the ETag ifMatch (the
	// request fails with class Changed when it no longer matches) when
	// ifMatch is not "". A server may ignore the range and send the whole
	// object (ContentRange "") or ignore If-Match; Reader copes with both.
	Open(ctx context.Context, key string, rng *Range, ifMatch string) (*Answer, error)
	// Classify says what an error of Open (or of any other request of
	// the backend's, when it uses Reader.Do) means.
	Classify(err error) Class
	// Err turns the error of operation op ("GetObject", "GET") on key,
	// called with the caller's ctx, into the error the store returns: it
	// wraps zmap.ErrNotFound and zmap.ErrPermission where they apply,
	// ErrChanged, and context errors, and says what went wrong in words.
	Err(ctx context.Context, op, key string, err error) error
}

// ParseContentRange returns START, END and SIZE of a Content-Range value
// "bytes START-END/SIZE"; SIZE is -1 when it is "*".
func ParseContentRange(cr string) (start, end, size int64, err error) {
	v, ok := strings.CutPrefix(cr, "bytes ")
	if !ok {
		return 0, 0, 0, fmt.Errorf("not a byte range: %q", cr)
	}
	v, total, ok := strings.Cut(v, "/")
	if !ok {
		return 0, 0, 0, fmt.Errorf("not a byte range: %q", cr)
	}
	first, last, ok := strings.Cut(v, "-")
	if !ok {
		return 0, 0, 0, fmt.Errorf("not a byte range: %q", cr)
	}
	if start, err = strconv.ParseInt(first, 10, 64); err != nil || start < 0 {
		return 0, 0, 0, fmt.Errorf("not a byte range: %q", cr)
	}
	if end, err = strconv.ParseInt(last, 10, 64); err != nil || end < start {
		return 0, 0, 0, fmt.Errorf("not a byte range: %q", cr)
	}
	if total == "*" {
		return start, end, -1, nil
	}
	if size, err = strconv.ParseInt(total, 10, 64); err != nil || size <= end {
		return 0, 0, 0, fmt.Errorf("not a byte range: %q", cr)
	}
	return start, end, size, nil
}

// TrimETag returns an ETag header's value without its quotes, as
// zmap.Entry.ETag holds it; a weak one keeps its "W/".
func TrimETag(v string) string {
	v, w := strings.CutPrefix(v, "W/")
	v = strings.Trim(v, `"`)
	if w && v != "" {
		return "W/" + v
	}
	return v
}

// strongETag reports whether an ETag header value can hold a resumed body
// to one version: present and not weak.
func strongETag(v string) bool { return v != "" && !strings.HasPrefix(v, "W/") }
