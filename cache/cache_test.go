package cache

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func value(n int, b byte) []byte {
	v := make([]byte, n)
	for i := range v {
		v[i] = b
	}
	return v
}

// loader counts how often each key is loaded.
type loader struct {
	mu    sync.Mutex
	calls map[string]int
}

func (l *loader) fn(key string, size int) func(context.Context) ([]byte, error) {
	return func(context.Context) ([]byte, error) {
		l.mu.Lock()
		if l.calls == nil {
			l.calls = map[string]int{}
		}
		l.calls[key]++
		l.mu.Unlock()
		return value(size, key[0]), nil
	}
}

func (l *loader) count(key string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.calls[key]
}

func TestLRUEvictionUnderBudget(t *testing.T) {
	const size = 1000
	c := New(3 * (size + entryOverhead))
	var l loader
	ctx := context.Background()
	get := func(key string) {
		t.Helper()
		v, err := c.Get(ctx, key, l.fn(key, size))
		if err != nil || len(v) != size || v[0] != key[0] {
			t.Fatalf("Get(%s) = %d bytes, %v", key, len(v), err)
		}
	}
	for _, k := range []string{"a", "b", "c", "a", "d"} { // d evicts b, the least recent
		get(k)
	}
	get("a")
	get("c")
	get("b")
	want := map[string]int{"a": 1, "b": 2, "c": 1, "d": 1}
	for k, n := range want {
		if got := l.count(k); got != n {
			t.Errorf("key %s loaded %d times, want %d", k, got, n)
		}
	}
	if s := c.Stats(); s.Bytes > s.Budget || s.Entries != 3 {
		t.Errorf("stats %+v: over budget or wrong entry count", s)
	}
}

func TestValueLargerThanBudgetIsNotKept(t *testing.T) {
	c := New(100)
	var l loader
	for i := 0; i < 2; i++ {
		if _, err := c.Get(context.Background(), "big", l.fn("big", 1000)); err != nil {
			t.Fatal(err)
		}
	}
	if n := l.count("big"); n != 2 {
		t.Errorf("loaded %d times, want 2 (never cached)", n)
	}
	if s := c.Stats(); s.Entries != 0 || s.Bytes != 0 {
		t.Errorf("stats %+v, want empty", s)
	}
}

func TestConcurrentCallersShareOneLoad(t *testing.T) {
	c := New(1 << 20)
	release := make(chan struct{})
	var calls atomic.Int32
	fn := func(context.Context) ([]byte, error) {
		calls.Add(1)
		<-release
		return []byte("chunk"), nil
	}
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, err := c.Get(context.Background(), "k", fn)
			if err == nil && string(v) != "chunk" {
				err = fmt.Errorf("got %q", v)
			}
			errs <- err
		}()
	}
	// Let every goroutine reach the cache before the load finishes.
	for c.Stats().Misses+c.Stats().Hits < 16 {
		waitABit()
	}
	close(release)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("load ran %d times, want 1", n)
	}
}

func TestCancelledCallerDoesNotFailOthers(t *testing.T) {
	c := New(1 << 20)
	started := make(chan struct{})
	release := make(chan struct{})
	fn := func(ctx context.Context) ([]byte, error) {
		close(started)
		<-release
		if err := ctx.Err(); err != nil {
			return nil, err // would fail everyone if the load saw the cancellation
		}
		return []byte("ok"), nil
	}
	ctxA, cancelA := context.WithCancel(context.Background())
	errA := make(chan error, 1)
	go func() {
		_, err := c.Get(ctxA, "k", fn)
		errA <- err
	}()
	<-started
	resB := make(chan error, 1)
	go func() {
		v, err := c.Get(context.Background(), "k", fn)
		if err == nil && string(v) != "ok" {
			err = fmt.Errorf("got %q", v)
		}
		resB <- err
	}()
	for c.Stats().Misses < 2 {
		waitABit()
	}
	cancelA()
	if err := <-errA; !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled caller got %v, want context.Canceled", err)
	}
	close(release)
	if err := <-resB; err != nil {
		t.Errorf("other caller failed: %v", err)
	}
	// And the result was cached for later callers.
	v, err := c.Get(context.Background(), "k", func(context.Context) ([]byte, error) {
		return nil, errors.New("should not load again")
	})
	if err != nil || string(v) != "ok" {
		t.Errorf("after: %q, %v", v, err)
	}
}

func TestFailedLoadIsRetried(t *testing.T) {
	c := New(1 << 20)
	boom := errors.New("boom")
	if _, err := c.Get(context.Background(), "k", func(context.Context) ([]byte, error) { return nil, boom }); !errors.Is(err, boom) {
		t.Fatalf("got %v, want boom", err)
	}
	v, err := c.Get(context.Background(), "k", func(context.Context) ([]byte, error) { return []byte("x"), nil })
	if err != nil || string(v) != "x" {
		t.Fatalf("retry got %q, %v", v, err)
	}
}

func TestNilValueIsCached(t *testing.T) {
	c := New(1 << 20)
	var calls int
	for i := 0; i < 3; i++ {
		v, err := c.Get(context.Background(), "missing", func(context.Context) ([]byte, error) { calls++; return nil, nil })
		if err != nil || v != nil {
			t.Fatalf("got %v, %v", v, err)
		}
	}
	if calls != 1 {
		t.Errorf("loaded %d times, want 1", calls)
	}
}

func BenchmarkGetHitParallel(b *testing.B) {
	c := New(64 << 20)
	keys := make([]string, 256)
	for i := range keys {
		keys[i] = fmt.Sprintf("array/%d.%d", i/16, i%16)
		c.Get(context.Background(), keys[i], func(context.Context) ([]byte, error) { return value(4096, 1), nil })
	}
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			c.Get(context.Background(), keys[i%len(keys)], nil)
			i++
		}
	})
}

// fill returns a load that fills a buffer from alloc with b.
func fill(n int, b byte) func(context.Context, Alloc) ([]byte, error) {
	return func(_ context.Context, alloc Alloc) ([]byte, error) {
		v := alloc(n)
		for i := range v {
			v[i] = b
		}
		return v, nil
	}
}

func TestHeldValueIsNotRecycled(t *testing.T) {
	const size = 1000
	c := New(size + entryOverhead) // room for one value
	ctx := context.Background()
	a, err := c.Acquire(ctx, "a", fill(size, 'a'))
	if err != nil {
		t.Fatal(err)
	}
	av := a.Value()
	// b evicts a while we still hold it; its buffer must be a new one.
	b, err := c.Acquire(ctx, "b", fill(size, 'b'))
	if err != nil {
		t.Fatal(err)
	}
	for i, x := range av {
		if x != 'a' {
			t.Fatalf("held value of a overwritten at %d with %q", i, x)
		}
	}
	a.Release()
	b.Release()
	// Now a's buffer is free: c evicts b and takes one of the two.
	cRef, err := c.Acquire(ctx, "c", fill(size, 'c'))
	if err != nil {
		t.Fatal(err)
	}
	cRef.Release()
	if s := c.Stats(); s.Recycled != 1 {
		t.Errorf("stats %+v, want 1 buffer recycled", s)
	}
}

func TestGetValueIsNeverRecycled(t *testing.T) {
	const size = 1000
	c := New(size + entryOverhead)
	ctx := context.Background()
	ref, err := c.Acquire(ctx, "a", fill(size, 'a'))
	if err != nil {
		t.Fatal(err)
	}
	ref.Release()
	v, err := c.Get(ctx, "a", nil) // a hit: the value escapes uncounted
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"b", "c", "d"} {
		r, err := c.Acquire(ctx, k, fill(size, k[0]))
		if err != nil {
			t.Fatal(err)
		}
		r.Release()
	}
	if !bytes.Equal(v, value(size, 'a')) {
		t.Errorf("value from Get was recycled")
	}
}

func TestDemotedBufferIsReusedFirst(t *testing.T) {
	const size = 1000
	c := New(100 * (size + entryOverhead)) // plenty of room
	ctx := context.Background()
	for _, k := range []string{"a", "b"} {
		r, err := c.Acquire(ctx, k, fill(size, k[0]))
		if err != nil {
			t.Fatal(err)
		}
		r.Release()
	}
	c.Demote("a")
	c.Demote("b")
	// A hit on b undoes its demotion.
	r, err := c.Acquire(ctx, "b", nil)
	if err != nil {
		t.Fatal(err)
	}
	r.Release()
	for _, k := range []string{"c", "d"} {
		r, err := c.Acquire(ctx, k, fill(size, k[0]))
		if err != nil {
			t.Fatal(err)
		}
		r.Release()
	}
	s := c.Stats()
	if s.Recycled != 1 || s.Entries != 3 {
		t.Errorf("stats %+v, want a's buffer recycled once and b, c, d cached", s)
	}
	if r, err := c.Acquire(ctx, "b", nil); err != nil || !bytes.Equal(r.Value(), value(size, 'b')) {
		t.Errorf("b after demotion and reuse: %v", err)
	} else {
		r.Release()
	}
}

func TestPrefetchLoadsOnce(t *testing.T) {
	c := New(1 << 20)
	var calls atomic.Int32
	fn := func(ctx context.Context, alloc Alloc) ([]byte, error) {
		calls.Add(1)
		return fill(10, 'p')(ctx, alloc)
	}
	ctx := context.Background()
	run, ok := c.Prefetch(ctx, "k", fn)
	if !ok {
		t.Fatal("first Prefetch registered no load")
	}
	if _, again := c.Prefetch(ctx, "k", fn); again {
		t.Error("second Prefetch of a loading key registered another load")
	}
	got := make(chan error, 1)
	go func() {
		// Needs the registered load, which has not run yet: starts it.
		r, err := c.Acquire(ctx, "k", fn)
		if err == nil {
			if !bytes.Equal(r.Value(), value(10, 'p')) {
				err = errors.New("wrong value")
			}
			r.Release()
		}
		got <- err
	}()
	run()
	if err := <-got; err != nil {
		t.Fatalf("Acquire after Prefetch: %v", err)
	}
	if _, ok := c.Prefetch(ctx, "k", fn); ok {
		t.Error("Prefetch of a cached key registered a load")
	}
	r, err := c.Acquire(ctx, "k", fn)
	if err != nil || !r.Hit() {
		t.Errorf("Acquire of a cached key: hit %v, %v", err == nil && r.Hit(), err)
	}
	if err == nil {
		r.Release()
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("loaded %d times, want 1", n)
	}
	if r, err := c.Acquire(ctx, "m", fn); err != nil || r.Hit() {
		t.Errorf("Acquire of a key not cached: hit %v, %v", err == nil && r.Hit(), err)
	} else {
		r.Release()
	}
	if s := c.Stats(); s.Prefetched != 1 {
		t.Errorf("Stats.Prefetched = %d, want 1", s.Prefetched)
	}
}

// TestRecyclingUnderConcurrency has many readers hold values of a cache
// too small for them while loads recycle buffers; a reader that sees a
// byte of another key caught a buffer recycled under it (and -race sees
// the write).
func TestRecyclingUnderConcurrency(t *testing.T) {
	const size = 4096
	c := New(3 * (size + entryOverhead))
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 300; i++ {
				key := string(rune('a' + (i*7+g)%10))
				if i%5 == 0 {
					c.Demote(key)
				}
				r, err := c.Acquire(context.Background(), key, fill(size, key[0]))
				if err != nil {
					errs <- err
					return
				}
				for j, x := range r.Value() {
					if x != key[0] {
						errs <- fmt.Errorf("key %s: byte %d is %q", key, j, x)
						r.Release()
						return
					}
				}
				r.Release()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if s := c.Stats(); s.Recycled == 0 || s.Bytes > s.Budget {
		t.Errorf("stats %+v: want buffers recycled, within budget", s)
	}
}

func TestPeekLoadsNothing(t *testing.T) {
	c := New(1 << 20)
	if ref := c.Peek("k"); ref != nil {
		t.Fatal("Peek of an empty cache returned a value")
	}
	if s := c.Stats(); s.Misses != 0 || s.Hits != 0 || s.Entries != 0 {
		t.Errorf("Peek of a missing key changed the stats: %+v", s)
	}
	ref, err := c.Acquire(context.Background(), "k", func(ctx context.Context, alloc Alloc) ([]byte, error) {
		b := alloc(3)
		copy(b, "abc")
		return b, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	ref.Release()
	peek := c.Peek("k")
	if peek == nil || string(peek.Value()) != "abc" || !peek.Hit() {
		t.Fatalf("Peek after a load = %v, want a hit on abc", peek)
	}
	peek.Release()
	if s := c.Stats(); s.Hits != 1 || s.Misses != 1 {
		t.Errorf("stats %+v, want one miss (the load) and one hit (the Peek)", s)
	}
}

// TestJoinedLoadFailureRetries starts a load that fails (a read-ahead
// load, say, while the store was failing) and has a reader join it: the
// reader then tries once with its own load, which succeeds.
func TestJoinedLoadFailureRetries(t *testing.T) {
	c := New(1 << 20)
	release := make(chan struct{})
	var calls atomic.Int32
	fn := func(ctx context.Context, alloc Alloc) ([]byte, error) {
		if calls.Add(1) == 1 {
			<-release
			return nil, errors.New("store failing")
		}
		return []byte("ok"), nil
	}
	run, ok := c.Prefetch(context.Background(), "k", fn)
	if !ok {
		t.Fatal("Prefetch started nothing")
	}
	go run()
	for calls.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	done := make(chan error, 1)
	go func() {
		ref, err := c.Acquire(context.Background(), "k", fn)
		if err == nil {
			if string(ref.Value()) != "ok" {
				err = fmt.Errorf("value %q", ref.Value())
			}
			ref.Release()
		}
		done <- err
	}()
	// The reader joins the failing load (a miss), then it fails.
	for c.Stats().Misses == 0 {
		time.Sleep(time.Millisecond)
	}
	close(release)
	if err := <-done; err != nil {
		t.Errorf("the reader that joined a failed load: %v, want the value of its own load", err)
	}
	if n := calls.Load(); n != 2 {
		t.Errorf("%d loads, want 2", n)
	}
}

// TestAcquireStartsQueuedLoad registers a load with Prefetch and never
// runs it: a caller that needs the key starts it rather than wait for the
// queue, and a later run does not load again.
func TestAcquireStartsQueuedLoad(t *testing.T) {
	c := New(1 << 20)
	var calls atomic.Int32
	fn := func(ctx context.Context, alloc Alloc) ([]byte, error) {
		calls.Add(1)
		return []byte("ok"), nil
	}
	run, ok := c.Prefetch(context.Background(), "k", fn)
	if !ok {
		t.Fatal("Prefetch registered nothing")
	}
	ref, err := c.Acquire(context.Background(), "k", fn)
	if err != nil || string(ref.Value()) != "ok" {
		t.Fatalf("Acquire of a queued key: %v", err)
	}
	ref.Release()
	run()
	if n := calls.Load(); n != 1 {
		t.Errorf("%d loads, want 1", n)
	}
}

// TestDeadlineBoundsStoreNotDecode gives callers a deadline shorter than
// their loads: a caller whose load still waits on the store returns
// context.DeadlineExceeded at its deadline; one whose load said Fetched
// (only computing is left) waits for its value.
func TestDeadlineBoundsStoreNotDecode(t *testing.T) {
	for _, fetched := range []bool{false, true} {
		t.Run(fmt.Sprintf("fetched=%v", fetched), func(t *testing.T) {
			c := New(1 << 20)
			release := make(chan struct{})
			inLoad := make(chan struct{})
			fn := func(ctx context.Context, alloc Alloc) ([]byte, error) {
				if fetched {
					Fetched(ctx)
				}
				close(inLoad)
				<-release
				return []byte("ok"), nil
			}
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			defer cancel()
			got := make(chan error, 1)
			go func() {
				ref, err := c.Acquire(ctx, "k", fn)
				if err == nil {
					if string(ref.Value()) != "ok" {
						err = fmt.Errorf("value %q", ref.Value())
					}
					ref.Release()
				}
				got <- err
			}()
			<-inLoad
			<-ctx.Done()
			if !fetched {
				if err := <-got; !errors.Is(err, context.DeadlineExceeded) {
					t.Errorf("a caller of a load waiting on the store, past its deadline: %v; want DeadlineExceeded", err)
				}
				close(release)
				return
			}
			select {
			case err := <-got:
				t.Fatalf("a caller of a fetched load returned at its deadline: %v; want it to wait for the value", err)
			case <-time.After(20 * time.Millisecond):
			}
			close(release)
			if err := <-got; err != nil {
				t.Errorf("a caller of a fetched load: %v; want the value", err)
			}
		})
	}
}

// TestMaxAge: an entry older than the cache's max age is loaded again at
// its next use (Acquire, Peek and Prefetch alike), so that a value changed
// in the store shows; a younger one is served from the cache.
func TestMaxAge(t *testing.T) {
	c := New(1 << 20)
	c.SetMaxAge(50 * time.Millisecond)
	ctx := context.Background()
	version := byte(1)
	loads := 0
	load := func(context.Context) ([]byte, error) {
		loads++
		return []byte{version}, nil
	}
	get := func() byte {
		t.Helper()
		v, err := c.Get(ctx, "k", load)
		if err != nil {
			t.Fatal(err)
		}
		return v[0]
	}
	if v := get(); v != 1 || loads != 1 {
		t.Fatalf("first Get: value %d after %d loads, want 1 after 1", v, loads)
	}
	version = 2
	if v := get(); v != 1 || loads != 1 {
		t.Fatalf("Get within the max age: value %d after %d loads, want the cached 1 after 1", v, loads)
	}
	time.Sleep(60 * time.Millisecond)
	if ref := c.Peek("k"); ref != nil {
		ref.Release()
		t.Fatal("Peek found an entry past its max age")
	}
	if _, ok := c.Prefetch(ctx, "k", func(context.Context, Alloc) ([]byte, error) { return nil, nil }); !ok {
		t.Fatal("Prefetch found nothing to load for an entry past its max age")
	}
	c2 := New(1 << 20)
	c2.SetMaxAge(50 * time.Millisecond)
	if _, err := c2.Get(ctx, "k", load); err != nil {
		t.Fatal(err)
	}
	time.Sleep(60 * time.Millisecond)
	if v, err := c2.Get(ctx, "k", load); err != nil || v[0] != 2 {
		t.Fatalf("Get past the max age = %v, %v; want the store's new value 2", v, err)
	}
	if st := c2.Stats(); st.Entries != 1 {
		t.Fatalf("%d entries after a reload, want 1", st.Entries)
	}
}
