package remote

import (
	"context"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// Doer sends one HTTP request: *http.Client, aws-sdk-go-v2's
// aws.HTTPClient and Azure's policy.Transporter all are.
type Doer interface {
	Do(*http.Request) (*http.Response, error)
}

// Watch returns d wrapped so that the Pacer p hears of every answer
// (Throttle for a throttling status, Succeed for any other below 500),
// and so that a body that sends nothing for stall is given up: its
// request is cancelled and its reads fail with an error that is a
// connection error to an SDK's retryer (ConnectionError() true), error
// documents' bodies included. A stalled connection then costs a part of
// the timeout, not all of it. The returned Doer is safe for concurrent use
// when d is.
func Watch(d Doer, p *Pacer, stall time.Duration) Doer {
	return watchingDoer{d: d, p: p, stall: stall}
}

type watchingDoer struct {
	d     Doer
	p     *Pacer
	stall time.Duration
}

func (c watchingDoer) Do(r *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithCancel(r.Context())
	sent := time.Now()
	resp, err := c.d.Do(r.WithContext(ctx))
	if err != nil {
		cancel()
		return resp, err
	}
	switch {
	case ThrottleStatus(resp.StatusCode):
		c.p.Throttle(sent)
	case resp.StatusCode < 500:
		c.p.Succeed()
	}
	resp.Body = watch(resp.Body, c.stall, cancel)
	return resp, nil
}

// watchedBody is a response body that gives up (its request is
// cancelled, its reads fail with StallError) when nothing arrives for a
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
		err = StallError{b.after}
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

// StallError is the error of a body read given up after nothing arrived
// for After. It is a connection error to an SDK's retryer, which then
// retries the request.
type StallError struct{ After time.Duration }

func (e StallError) Error() string         { return "the body stalled: nothing for " + e.After.String() }
func (e StallError) ConnectionError() bool { return true }

// StallAfter is how long a body may send nothing before it is given up
// and resumed, for an operation timeout: a fifth of it, so that a stalled
// connection costs a part of the timeout, not all.
func StallAfter(timeout time.Duration) time.Duration { return max(timeout/5, 50*time.Millisecond) }
