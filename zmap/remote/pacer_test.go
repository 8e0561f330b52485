package remote

import (
	"context"
	"testing"
	"time"
)

// TestPacer checks the in-flight limit: a throttling answer halves it
// once for the requests in flight at the time, successes raise it by
// about one per limit of them, and acquire waits for a slot.
func TestPacer(t *testing.T) {
	p := NewPacer(32)
	sent := time.Now()
	p.Throttle(sent)
	if now, lowest := p.State(); now != 16 || lowest != 16 {
		t.Fatalf("after one throttle: limit %d, lowest %d; want 16, 16", now, lowest)
	}
	// The rest of the burst, sent before the cut: no further cut.
	for range 10 {
		p.Throttle(sent)
	}
	if now, _ := p.State(); now != 16 {
		t.Fatalf("after the rest of the burst: limit %d; want 16", now)
	}
	// Requests sent after the cut cut again, down to 1 and no further.
	for range 10 {
		p.Throttle(time.Now().Add(time.Millisecond))
	}
	if now, lowest := p.State(); now != 1 || lowest != 1 {
		t.Fatalf("after throttles past the cut: limit %d, lowest %d; want 1, 1", now, lowest)
	}
	if got := p.throttled.Load(); got != 21 {
		t.Errorf("throttled = %d, want 21", got)
	}
	// Additive increase: 1 success at 1, 2 at 2, 3 at 3 (and one for
	// the rounding of thirds) to reach 4.
	for range 7 {
		p.Succeed()
	}
	if now, lowest := p.State(); now != 4 || lowest != 1 {
		t.Errorf("after 7 successes: limit %d, lowest %d; want 4, 1", now, lowest)
	}
	for range 10000 {
		p.Succeed()
	}
	if now, _ := p.State(); now != 32 {
		t.Errorf("after many successes: limit %d; want the maximum, 32", now)
	}

	// acquire: at limit 1, a second caller waits for the first's release.
	p = NewPacer(32)
	for range 5 {
		p.Throttle(time.Now().Add(time.Millisecond))
	}
	release, err := p.Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := p.Acquire(ctx); err != context.DeadlineExceeded {
		t.Fatalf("second acquire at limit 1 = %v; want it to wait until its context ends", err)
	}
	got := make(chan error, 1)
	go func() {
		r, err := p.Acquire(context.Background())
		if err == nil {
			r()
		}
		got <- err
	}()
	release()
	release() // a second call is harmless
	if err := <-got; err != nil {
		t.Fatalf("acquire after the release: %v", err)
	}

	// Waiters are served first come, first served.
	release, err = p.Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	order := make(chan int, 3)
	for i := range 3 {
		go func() {
			r, err := p.Acquire(context.Background())
			if err != nil {
				t.Error(err)
				return
			}
			order <- i
			r()
		}()
		for waiting := 0; waiting <= i; {
			p.mu.Lock()
			waiting = p.waiters.Len()
			p.mu.Unlock()
		}
	}
	release()
	for want := range 3 {
		if got := <-order; got != want {
			t.Fatalf("waiter %d got the slot in turn %d", got, want)
		}
	}
}

// TestBackoffDelay checks the waits between retries: random in [d/2, d)
// with d doubling from 50 ms up to 1 s.
func TestBackoffDelay(t *testing.T) {
	for attempt, d := range map[int]time.Duration{1: 50 * time.Millisecond, 2: 100 * time.Millisecond, 5: 800 * time.Millisecond, 6: time.Second, 40: time.Second} {
		for range 100 {
			if got := Backoff(attempt); got < d/2 || got >= d {
				t.Fatalf("Backoff(%d) = %v, want in [%v, %v)", attempt, got, d/2, d)
			}
		}
	}
}
