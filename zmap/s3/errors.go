package s3

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"os"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/nczarrfs/nczarrfs/zmap"
	"github.com/nczarrfs/nczarrfs/zmap/remote"
)

// Error is a failed S3 operation: remote.Error, its Store "s3".
type Error = remote.Error

// deniedCodes are S3 error codes meaning "these credentials may not do
// this", whatever the HTTP status.
var deniedCodes = map[string]bool{
	"AccessDenied":          true,
	"InvalidAccessKeyId":    true,
	"SignatureDoesNotMatch": true,
	"InvalidToken":          true,
	"ExpiredToken":          true,
	"TokenRefreshRequired":  true,
	"AllAccessDisabled":     true,
	"AccountProblem":        true,
}

// statusOf returns the HTTP status and S3 error code of an SDK error: the
// status through smithy's ResponseError, the code through smithy.APIError.
// Either is zero when the error carries none (no answer at all).
func statusOf(err error) (status int, code string) {
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) && re.Response != nil {
		status = re.HTTPStatusCode()
	}
	var ae smithy.APIError
	if errors.As(err, &ae) {
		code = ae.ErrorCode()
	}
	return status, code
}

// mapErr turns an error from operation op on store key key, called with
// the caller's context ctx, into an *Error with a message that says what
// happened and what to do about it. It never includes a secret:
// credentials are described by their source only.
func (s *Store) mapErr(ctx context.Context, op, key string, err error) error {
	e := &Error{Store: "s3", Op: op, URL: s.url(key), Err: err}
	e.Status, e.Code = statusOf(err)
	var ae smithy.APIError
	detail := ""
	if errors.As(err, &ae) && ae.ErrorMessage() != "" {
		detail = ae.ErrorMessage()
	}

	switch {
	case e.Code == "NoSuchBucket":
		// Not ErrNotFound: a missing bucket must not read as fill values.
		e.Msg = fmt.Sprintf("bucket %q does not exist at %s", s.loc.Bucket, s.endpoint)
	case e.Status == http.StatusNotFound || e.Code == "NoSuchKey" || e.Code == "NotFound":
		e.Kind = zmap.ErrNotFound
		e.Msg = zmap.ErrNotFound.Error()
	case e.Status == http.StatusForbidden || deniedCodes[e.Code]:
		e.Kind = zmap.ErrPermission
		what := e.Code
		if what == "" {
			what = http.StatusText(e.Status)
		}
		if detail != "" {
			what += ": " + detail
		}
		e.Msg = fmt.Sprintf("access denied (%s) with credentials from %s", what, s.creds)
		if n := s.denials.Add(1); n <= maxDenialLogs {
			s.log.Warn("s3: access denied", "op", op, "key", e.URL, "code", e.Code,
				"credentials", s.creds, "endpoint", s.endpoint)
			if n == maxDenialLogs {
				s.log.Warn("s3: further access-denied warnings suppressed")
			}
		}
	case e.Status == http.StatusMovedPermanently || e.Code == "PermanentRedirect" || e.Code == "AuthorizationHeaderMalformed":
		e.Msg = "the bucket is in another region than " + s.endpoint
		if re := (*smithyhttp.ResponseError)(nil); errors.As(err, &re) && re.Response != nil {
			if r := re.Response.Header.Get("X-Amz-Bucket-Region"); r != "" {
				e.Msg = fmt.Sprintf("the bucket is in region %s; pass --region %s", r, r)
			}
		}
		if detail != "" {
			e.Msg += " (" + detail + ")"
		}
	case ctx.Err() != nil:
		// The caller gave up (a FUSE interrupt, an unmount); err wraps
		// ctx.Err().
		e.Msg = fmt.Sprintf("%v", ctx.Err())
	case errors.Is(err, context.DeadlineExceeded):
		e.Msg = fmt.Sprintf("cannot reach %s: no complete answer within %v (%v)", s.endpoint, s.timeout, err)
		if last := lastAnswerOf(ctx); last != nil {
			if status, code := statusOf(last); status != 0 {
				// The server did answer, with errors worth retrying
				// (throttling, 5xx), until the timeout ended the retries.
				e.Status, e.Code = status, code
				e.Msg = fmt.Sprintf("no success within %v; %s last answered %d %s (%v)",
					s.timeout, s.endpoint, status, code, last)
			}
		}
	case certificateError(err) == aws.FalseTernary:
		e.Msg = fmt.Sprintf("cannot reach %s: the server's certificate is not trusted (AWS_CA_BUNDLE=%q): %v",
			s.endpoint, os.Getenv("AWS_CA_BUNDLE"), err)
	case e.Status == 0:
		e.Msg = fmt.Sprintf("cannot reach %s: %v", s.endpoint, err)
	default:
		e.Msg = err.Error()
	}
	return e
}

// certificateError is a retry rule: a TLS certificate that failed
// verification is not retryable (FalseTernary); for any other error it has
// no opinion (UnknownTernary).
func certificateError(err error) aws.Ternary {
	var unknownCA x509.UnknownAuthorityError
	var hostname x509.HostnameError
	var invalid x509.CertificateInvalidError
	var verify *tls.CertificateVerificationError
	if errors.As(err, &unknownCA) || errors.As(err, &hostname) || errors.As(err, &invalid) || errors.As(err, &verify) {
		return aws.FalseTernary
	}
	return aws.UnknownTernary
}

// lastAnswerKey keys the *lastAnswer that each operation's context
// carries.
type lastAnswerKey struct{}

// lastAnswer holds the last retryable error of an operation: when the
// timeout ends its retries, the SDK reports only the cancellation.
type lastAnswer struct {
	mu  sync.Mutex
	err error
}

func (a *lastAnswer) set(err error) {
	a.mu.Lock()
	a.err = err
	a.mu.Unlock()
}

// withLastAnswer returns ctx carrying a fresh lastAnswer for one operation.
func withLastAnswer(ctx context.Context) context.Context {
	return context.WithValue(ctx, lastAnswerKey{}, &lastAnswer{})
}

// lastAnswerOf returns the last retryable error noted in ctx, or nil.
func lastAnswerOf(ctx context.Context) error {
	a, ok := ctx.Value(lastAnswerKey{}).(*lastAnswer)
	if !ok {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.err
}
