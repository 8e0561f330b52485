package cache

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
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
