package remote

import (
	"container/list"
	"context"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// Pacer bounds a store's operations in flight and moves the bound with
// the server's answers, additive increase and multiplicative decrease as
// TCP does with its window: every throttling answer (503, 429, Azure's
// ServerBusy) halves it, once for the requests that were in flight when
// the first of them came, and every success raises it by 1/limit, about
// one a round trip. One Pacer serves a whole store, so that all its
// readers slow down together when the server says so, and speed up again
// together. Its methods are safe for concurrent use.
type Pacer struct {
	max, min float64

	mu       sync.Mutex
	limit    float64   // GUARDED_BY(mu)
	lowest   float64   // GUARDED_BY(mu): the lowest limit so far
	inFlight int       // GUARDED_BY(mu)
	lastCut  time.Time // GUARDED_BY(mu)
	// waiters are the callers of acquire waiting for a slot, first come
	// first served, so that none waits out its timeout behind later ones.
	waiters list.List // GUARDED_BY(mu): chan struct{}, closed when granted

	throttled atomic.Int64 // throttling answers seen
}

// Throttled returns how many throttling answers Throttle was told of.
func (p *Pacer) Throttled() int64 { return p.throttled.Load() }

// NewPacer returns a Pacer that allows limit operations in flight at
// most, and starts there.
func NewPacer(limit int) *Pacer {
	return &Pacer{max: float64(limit), min: 1, limit: float64(limit), lowest: float64(limit)}
}

// Acquire blocks until a slot is free, first come first served, or until
// ctx ends (then it returns ctx.Err()). The caller calls release once its
// operation is over; calling it again does nothing.
func (p *Pacer) Acquire(ctx context.Context) (release func(), err error) {
	var once sync.Once
	release = func() { once.Do(p.release) }
	p.mu.Lock()
	if p.waiters.Len() == 0 && p.inFlight < int(p.limit) {
		p.inFlight++
		p.mu.Unlock()
		return release, nil
	}
	granted := make(chan struct{})
	el := p.waiters.PushBack(granted)
	p.mu.Unlock()
	select {
	case <-granted:
		return release, nil
	case <-ctx.Done():
		p.mu.Lock()
		select {
		case <-granted:
			// Granted as ctx ended: pass the slot on.
			p.inFlight--
			p.grant()
		default:
			p.waiters.Remove(el)
		}
		p.mu.Unlock()
		return nil, ctx.Err()
	}
}

func (p *Pacer) release() {
	p.mu.Lock()
	p.inFlight--
	p.grant()
	p.mu.Unlock()
}

// grant hands the free slots to the first waiters. p.mu is held.
func (p *Pacer) grant() {
	for p.inFlight < int(p.limit) && p.waiters.Len() > 0 {
		granted := p.waiters.Remove(p.waiters.Front()).(chan struct{})
		p.inFlight++
		close(granted)
	}
}

// Throttle notes a throttling answer to a request sent at sent. Answers
// to requests sent before the last cut were part of the burst that cut
// it, and cut it no further.
func (p *Pacer) Throttle(sent time.Time) {
	p.throttled.Add(1)
	p.mu.Lock()
	defer p.mu.Unlock()
	if sent.Before(p.lastCut) {
		return
	}
	p.limit = max(p.min, p.limit/2)
	p.lowest = min(p.lowest, p.limit)
	p.lastCut = time.Now()
}

// Succeed notes an answer that was not throttled.
func (p *Pacer) Succeed() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.limit >= p.max {
		return
	}
	p.limit = min(p.max, p.limit+1/p.limit)
	p.grant()
}

// State returns the current and the lowest limit.
func (p *Pacer) State() (limit, lowest int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return int(p.limit), int(p.lowest)
}

// ThrottleStatus reports whether an HTTP status asks the client to slow
// down: 503 (S3's SlowDown, Azure's ServerBusy) or 429.
func ThrottleStatus(status int) bool {
	return status == http.StatusServiceUnavailable || status == http.StatusTooManyRequests
}

// Backoff is the wait before retry number attempt (1 for the first):
// random in [d/2, d) with d doubling from 50 ms, up to 1 s. Short, so that
// several retries and resumes fit in one operation's timeout; the Pacer,
// not the wait, is what relieves a throttling server.
func Backoff(attempt int) time.Duration {
	d := time.Second
	if attempt < 6 {
		d = 50 * time.Millisecond << max(attempt-1, 0)
	}
	return d/2 + rand.N(d/2)
}

// Sleep waits d, or until ctx ends; it reports whether d passed. It does
// not start a wait that would outlast ctx's deadline.
func Sleep(ctx context.Context, d time.Duration) bool {
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < d {
		return false
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
