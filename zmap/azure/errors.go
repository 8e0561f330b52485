package azure

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"

	"github.com/nczarrfs/nczarrfs/zmap"
	"github.com/nczarrfs/nczarrfs/zmap/remote"
)

// Error is a failed Azure Blob Storage operation: remote.Error, its Store "azure".
type Error = remote.Error

// statusOf returns the HTTP status and the service's error code of an SDK
// error; zero when it carries none (no answer at all).
func statusOf(err error) (status int, code string) {
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		status, code = re.StatusCode, re.ErrorCode
		if code == "" && re.RawResponse != nil {
			code = re.RawResponse.Header.Get("x-ms-error-code")
		}
	}
	return status, code
}

// deniedCodes are error codes meaning "these credentials may not do this".
var deniedCodes = map[string]bool{
	"AuthenticationFailed":               true,
	"AuthorizationFailure":               true,
	"AuthorizationPermissionMismatch":    true,
	"AuthorizationResourceTypeMismatch":  true,
	"AuthorizationServiceMismatch":       true,
	"AuthorizationProtocolMismatch":      true,
	"AuthorizationSourceIPMismatch":      true,
	"InsufficientAccountPermissions":     true,
	"NoAuthenticationInformation":        true,
	"PublicAccessNotPermitted":           true,
	"KeyBasedAuthenticationNotPermitted": true,
	"AccountIsDisabled":                  true,
}

// classify says what an SDK error means to remote.Reader, for a store
// whose requests are anonymous when anon is set. The SDK's own retries are
// off (Open): every retry is remote's, within the timeout. It agrees with
// mapErr: a class NotFound is an error wrapping zmap.ErrNotFound there,
// Permission one wrapping zmap.ErrPermission, and nothing else is either.
func classify(err error, anon bool) remote.Class {
	status, code := statusOf(err)
	switch {
	case err == nil:
		return remote.Failed
	case errors.Is(err, errRangeNotSatisfiable):
		return remote.RangeNotSatisfiable
	case code == "ContainerNotFound":
		// Not NotFound: a missing container must not read as fill
		// values.
		return remote.Failed
	case code == "ResourceNotFound" && anon:
		// What the service answers an anonymous request to a private
		// container: not a missing blob (BlobNotFound).
		return remote.Permission
	case code == "ResourceNotFound":
		// Never a missing blob (that is BlobNotFound), so never fill
		// values: a signed request that gets it fails.
		return remote.Failed
	case status == http.StatusNotFound:
		return remote.NotFound
	case status == http.StatusForbidden || status == http.StatusUnauthorized || deniedCodes[code]:
		return remote.Permission
	case status == http.StatusRequestedRangeNotSatisfiable:
		return remote.RangeNotSatisfiable
	case status == http.StatusPreconditionFailed || code == "ConditionNotMet":
		return remote.Changed
	case remote.ThrottleStatus(status) || code == "ServerBusy":
		return remote.Throttled
	case status == http.StatusRequestTimeout || status == http.StatusInternalServerError ||
		status == http.StatusBadGateway || status == http.StatusGatewayTimeout:
		return remote.Transient
	case status == 0 && netError(err) && !certificateError(err):
		// No answer: a refused, reset or stalled connection.
		return remote.Transient
	}
	return remote.Failed
}

// mapErr turns an error of operation op on store key key, called with the
// caller's context ctx, into an *Error with a one-line message that says
// what happened and what to do about it. It never includes a secret: the
// credentials are named by where they come from.
func (s *Store) mapErr(ctx context.Context, op, key string, err error) error {
	var already *Error
	if errors.As(err, &already) {
		return err
	}
	e := &Error{Store: "azure", Op: op, URL: s.url(key), Err: err}
	e.Status, e.Code = statusOf(err)
	switch {
	case e.Code == "ContainerNotFound":
		e.Msg = fmt.Sprintf("container %q does not exist at %s", s.loc.Container, s.endpoint)
	case e.Code == "ResourceNotFound" && s.creds.kind == anonymous:
		// What the service answers an anonymous request to a private
		// container, so as not to tell that it exists.
		e.Kind = zmap.ErrPermission
		e.Msg = fmt.Sprintf("access denied (ResourceNotFound: the container is private, or there is none) with credentials from %s", s.creds.describe())
	case e.Code == "ResourceNotFound":
		// Not BlobNotFound: not a missing blob, which a chunk would
		// read as fill values, but a resource of the request's (the
		// container, an account) that the service does not find.
		e.Msg = fmt.Sprintf("%d ResourceNotFound (not a missing blob) with credentials from %s", e.Status, s.creds.describe())
	case e.Status == http.StatusNotFound:
		e.Kind = zmap.ErrNotFound
		e.Msg = zmap.ErrNotFound.Error()
	case e.Status == http.StatusForbidden || e.Status == http.StatusUnauthorized || deniedCodes[e.Code]:
		e.Kind = zmap.ErrPermission
		what := e.Code
		if what == "" {
			what = http.StatusText(e.Status)
		}
		hint := ""
		switch {
		case s.creds.kind != anonymous && (e.Code == "AuthenticationFailed" || e.Code == "AuthorizationFailure"):
			// Azure says AuthenticationFailed to a wrong key or SAS,
			// Azurite AuthorizationFailure.
			hint = ": the key or SAS token was not accepted, or may not do this"
		case s.creds.kind == anonymous:
			hint = ": the container is not public"
		}
		e.Msg = fmt.Sprintf("access denied (%s%s) with credentials from %s", what, hint, s.creds.describe())
		if n := s.denials.Add(1); n <= maxDenialLogs {
			s.log.Warn("azure: access denied", "op", op, "blob", e.URL, "code", e.Code,
				"credentials", s.creds.describe(), "endpoint", s.endpoint)
			if n == maxDenialLogs {
				s.log.Warn("azure: further access-denied warnings suppressed")
			}
		}
	case errors.Is(err, remote.ErrChanged):
		e.Msg = err.Error()
	case ctx.Err() != nil:
		// The caller gave up (a FUSE interrupt, an unmount).
		e.Msg = ctx.Err().Error()
	case errors.Is(err, context.DeadlineExceeded):
		e.Msg = fmt.Sprintf("cannot reach %s: no complete answer within %v (%s)", s.endpoint, s.timeout, firstLine(err))
		if e.Status != 0 {
			e.Msg = fmt.Sprintf("no success within %v; %s last answered %d %s", s.timeout, s.endpoint, e.Status, e.Code)
		}
	case certificateError(err):
		e.Msg = fmt.Sprintf("cannot reach %s: the server's certificate is not trusted: %s", s.endpoint, firstLine(err))
	case e.Status == 0 && netError(err):
		e.Msg = fmt.Sprintf("cannot reach %s: %s", s.endpoint, firstLine(err))
	case e.Status == 0:
		e.Msg = firstLine(err)
	default:
		e.Msg = fmt.Sprintf("%d %s", e.Status, e.Code)
		if m := serviceMessage(err); m != "" {
			e.Msg += ": " + m
		}
	}
	return e
}

// firstLine is the first line of err's message: the SDK's messages go on
// for lines (the request, the response, the error document).
func firstLine(err error) string {
	msg, _, _ := strings.Cut(err.Error(), "\n")
	return strings.TrimSpace(msg)
}

// serviceMessage is the first line of the <Message> of the service's error
// document, "" when there is none.
func serviceMessage(err error) string {
	msg := err.Error()
	_, m, ok := strings.Cut(msg, "<Message>")
	if !ok {
		return ""
	}
	m, _, _ = strings.Cut(m, "</Message>")
	m, _, _ = strings.Cut(m, "\n")
	return strings.TrimSpace(m)
}

// certificateError reports whether err is a TLS certificate that failed
// verification: not worth another try.
func certificateError(err error) bool {
	var unknownCA x509.UnknownAuthorityError
	var hostname x509.HostnameError
	var invalid x509.CertificateInvalidError
	var verify *tls.CertificateVerificationError
	return errors.As(err, &unknownCA) || errors.As(err, &hostname) || errors.As(err, &invalid) || errors.As(err, &verify)
}

// netError reports whether err is a failed connection or body: refused,
// reset, cut short or stalled, with no answer to read a status from.
func netError(err error) bool {
	var ne net.Error
	var ue *url.Error
	var stall remote.StallError
	return errors.As(err, &ne) || errors.As(err, &ue) || errors.As(err, &stall) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED)
}
