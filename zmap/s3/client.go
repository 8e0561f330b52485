package s3

import (
	"context"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// client is the Store's HTTP client around the SDK's: it tells the pacer
// what every answer said, and gives up a body that sends nothing for a
// while (stall), error documents included, so that a stalled connection
// costs a part of the timeout, not all of it: the SDK retries an error
// answer whose body stalled, and the Store resumes an object's body.
type client struct {
	aws.HTTPClient
	p     *pacer
	stall time.Duration
}

func (c client) Do(r *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithCancel(r.Context())
	sent := time.Now()
	resp, err := c.HTTPClient.Do(r.WithContext(ctx))
	if err != nil {
		cancel()
		return resp, err
	}
	switch {
	case throttleStatus(resp.StatusCode):
		c.p.throttle(sent)
	case resp.StatusCode < 500:
		c.p.succeed()
	}
	resp.Body = watch(resp.Body, c.stall, cancel)
	return resp, nil
}

// watchedBody is a response body that gives up (its request is
// cancelled, its reads fail with stallError) when nothing arrives for a
// while.
type watchedBody struct {
	rc     io.ReadCloser
	after  time.Duration
	t      *time.Timer
	fired  atomic.Bool
	cancel context.CancelFunc
	once   sync.Once
}

func watch(rc io.ReadCloser, after time.Duration, cancel context.CancelFunc) *watchedBody {
	b := &watchedBody{rc: rc, after: after, cancel: cancel}
	b.t = time.AfterFunc(after, func() {
		b.fired.Store(true)
		cancel()
	})
	return b
}

func (b *watchedBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if n > 0 {
		b.t.Reset(b.after)
	}
	if err != nil && err != io.EOF && b.fired.Load() {
		err = stallError{b.after}
	}
	return n, err
}

func (b *watchedBody) Close() error {
	b.once.Do(func() {
		b.t.Stop()
		b.cancel()
	})
	return b.rc.Close()
}

// stallError is the error of a body read given up after nothing arrived
// for after. It is a connection error to the SDK's retryer, which then
// retries the request.
type stallError struct{ after time.Duration }

func (e stallError) Error() string         { return "the body stalled: nothing for " + e.after.String() }
func (e stallError) ConnectionError() bool { return true }
