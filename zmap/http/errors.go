package http

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"

	"github.com/nczarrfs/nczarrfs/zmap"
	"github.com/nczarrfs/nczarrfs/zmap/remote"
)

// Error is a failed request to a web server: remote.Error, its Store "http".
type Error = remote.Error

// statusError is an answer whose status is not a success.
type statusError struct {
	status int
	// folder: the answer redirects to the key with a slash after it, as
	// a file server does for a folder: the key names no object.
	folder bool
}

func (e *statusError) Error() string {
	if e.folder {
		return fmt.Sprintf("%d %s to a folder", e.status, http.StatusText(e.status))
	}
	return fmt.Sprintf("%d %s", e.status, http.StatusText(e.status))
}

// answerError returns the error of an answer that is not a success.
func answerError(resp *http.Response) error {
	e := &statusError{status: resp.StatusCode}
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		loc, err := resp.Location()
		e.folder = err == nil && loc.Path == resp.Request.URL.Path+"/"
	}
	return e
}

// folderRedirect is the http.Client's CheckRedirect: it follows
// redirects, except one to the same path with a slash after it (a folder
// of a file server, which would answer with a page listing it).
func folderRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= 10 {
		return errors.New("stopped after 10 redirects")
	}
	if prev := via[len(via)-1]; req.URL.Path == prev.URL.Path+"/" {
		return http.ErrUseLastResponse
	}
	return nil
}

// statusOf returns the status of a failed answer, 0 when there was none;
// 404 for a redirect to a folder.
func statusOf(err error) int {
	var se *statusError
	if errors.As(err, &se) {
		if se.folder {
			return http.StatusNotFound
		}
		return se.status
	}
	return 0
}

// classify says what an error of a request means (remote.Backend).
func classify(err error) remote.Class {
	switch status := statusOf(err); {
	case status == http.StatusNotFound || status == http.StatusGone:
		return remote.NotFound
	case status == http.StatusForbidden || status == http.StatusUnauthorized:
		return remote.Permission
	case remote.ThrottleStatus(status):
		return remote.Throttled
	case status == http.StatusRequestedRangeNotSatisfiable:
		return remote.RangeNotSatisfiable
	case status == http.StatusPreconditionFailed:
		return remote.Changed
	case status == http.StatusInternalServerError || status == http.StatusBadGateway || status == http.StatusGatewayTimeout:
		return remote.Transient
	case status != 0:
		return remote.Failed
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || untrusted(err):
		return remote.Failed
	}
	// No answer: a refused, reset or stalled connection.
	return remote.Transient
}

// untrusted reports whether err is a TLS certificate that failed
// verification: it stays untrusted however often it is tried.
func untrusted(err error) bool {
	var unknownCA x509.UnknownAuthorityError
	var hostname x509.HostnameError
	var invalid x509.CertificateInvalidError
	var verify *tls.CertificateVerificationError
	return errors.As(err, &unknownCA) || errors.As(err, &hostname) || errors.As(err, &invalid) || errors.As(err, &verify)
}

// mapErr turns the error of op on key, called with the caller's ctx, into
// an *Error.
func (s *Store) mapErr(ctx context.Context, op, key string, err error) error {
	e := &Error{Store: "http", Op: op, URL: s.url(key), Status: statusOf(err), Err: err}
	switch classify(err) {
	case remote.NotFound:
		e.Kind = zmap.ErrNotFound
		e.Msg = zmap.ErrNotFound.Error()
		return e
	case remote.Permission:
		e.Kind = zmap.ErrPermission
		e.Msg = fmt.Sprintf("access denied (%v)", err)
		return e
	}
	switch {
	case ctx.Err() != nil:
		e.Msg = ctx.Err().Error()
	case errors.Is(err, context.DeadlineExceeded):
		e.Msg = fmt.Sprintf("no complete answer from %s within %v (%v)", s.host, s.r.Timeout(), err)
	case untrusted(err):
		e.Msg = fmt.Sprintf("the server's certificate is not trusted: %v", err)
	case e.Status == 0:
		e.Msg = fmt.Sprintf("cannot reach %s: %v", s.host, err)
	default:
		e.Msg = err.Error()
	}
	return e
}
