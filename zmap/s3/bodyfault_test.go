package s3_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nczarrfs/nczarrfs/internal/faultproxy"
	"github.com/nczarrfs/nczarrfs/zmap"
	"github.com/nczarrfs/nczarrfs/zmap/s3"
)

// bodyFaults are the ways a connection breaks that an error status does
// not describe.
var bodyFaults = []faultproxy.Fault{
	{Kind: faultproxy.ResetBeforeReply},
	{Kind: faultproxy.ResetMidBody},
	{Kind: faultproxy.CutBody},
	{Kind: faultproxy.CutBodyNoLength},
	{Kind: faultproxy.StallMidBody},
}

// bodyOps are the operations that read a body: Get, and ReadAt both of a
// range inside the object and of one that runs past its end (a short
// answer that is legitimately short).
var bodyOps = []struct {
	name string
	run  func(ctx context.Context, st *s3.Store, key string) error
}{
	{"Get", func(ctx context.Context, st *s3.Store, key string) error {
		b, err := st.Get(ctx, key)
		if err == nil && !bytes.Equal(b, retryData) {
			return fmt.Errorf("%w: Get returned %d bytes, not the object's %d", errWrongData, len(b), len(retryData))
		}
		return err
	}},
	{"ReadAt", func(ctx context.Context, st *s3.Store, key string) error {
		p := make([]byte, 3000)
		n, err := st.ReadAt(ctx, key, p, 1234)
		switch {
		case err == io.EOF:
			return fmt.Errorf("%w: ReadAt inside the object returned %d bytes and io.EOF", errWrongData, n)
		case err == nil && (n != len(p) || !bytes.Equal(p, retryData[1234:1234+len(p)])):
			return fmt.Errorf("%w: ReadAt returned %d wrong bytes", errWrongData, n)
		}
		return err
	}},
	{"ReadAt past the end", func(ctx context.Context, st *s3.Store, key string) error {
		p := make([]byte, 3000)
		off := int64(len(retryData) - 1000)
		n, err := st.ReadAt(ctx, key, p, off)
		if err == io.EOF {
			if n != 1000 || !bytes.Equal(p[:n], retryData[off:]) {
				return fmt.Errorf("%w: ReadAt at the end returned %d bytes with io.EOF, want the object's last 1000", errWrongData, n)
			}
			return nil
		}
		if err == nil {
			return fmt.Errorf("%w: ReadAt past the end returned %d bytes and no io.EOF", errWrongData, n)
		}
		return err
	}},
}

// errWrongData marks an operation that succeeded with the wrong bytes.
var errWrongData = errors.New("wrong data")

// TestBodyFaults breaks every request of Get and ReadAt in each way a
// connection can break. A fault that happens once is resumed or retried
// into the right bytes. A fault on every request ends in the right bytes
// (a body cut in half each time still arrives, resumed piece by piece) or
// an I/O error (after the SDK's retries, or at the timeout), never short
// or wrong bytes, and the Store works again once the fault is lifted.
func TestBodyFaults(t *testing.T) {
	const timeout = 3 * time.Second
	type bodyCase struct {
		name, dir string
		fault     faultproxy.Fault
		op        int
	}
	var cs []bodyCase
	for _, f := range bodyFaults {
		for i, op := range bodyOps {
			name := f.String() + "/" + op.name
			cs = append(cs, bodyCase{name, "body-" + strings.NewReplacer(" ", "-", ",", "").Replace(name), f, i})
		}
	}
	var dirs []string
	for _, c := range cs {
		dirs = append(dirs, c.dir+"-persistent", c.dir+"-once")
	}
	env := newRetryEnv(t, dirs)
	st := env.open(t, s3.Options{Timeout: timeout, MaxAttempts: 3})

	var wg sync.WaitGroup
	for _, c := range cs {
		wg.Go(func() {
			t.Run(c.name, func(t *testing.T) {
				op := bodyOps[c.op]
				ctx := context.Background()

				dir := c.dir + "-persistent"
				env.proxy.Inject(objectKey(dir), c.fault, -1)
				start := time.Now()
				err := op.run(ctx, st, dir+"/obj")
				elapsed := time.Since(start)
				if errors.Is(err, errWrongData) {
					t.Errorf("%v", err)
				} else if err != nil {
					checkIOError(t, err)
				}
				// A hang catcher, far above the timeout: not a speed test.
				if elapsed > 10*timeout {
					t.Errorf("failed after %v; the timeout is %v", elapsed, timeout)
				}
				env.proxy.Lift(objectKey(dir))
				if err := op.run(ctx, st, dir+"/obj"); err != nil {
					t.Errorf("after the fault was lifted: %v", err)
				}
				t.Logf("persistent: %d requests, failed after %v: %v", env.proxy.Count(objectKey(dir)), elapsed.Round(time.Millisecond), err)

				dir = c.dir + "-once"
				env.proxy.Inject(objectKey(dir), c.fault, 1)
				err = op.run(ctx, st, dir+"/obj")
				if err != nil {
					t.Errorf("one fault: %v; want it resumed or retried into the right bytes", err)
				}
				t.Logf("once: %d requests: %v", env.proxy.Count(objectKey(dir)), err)
			})
		})
	}
	wg.Wait()
}

// TestReadChangedObject replaces an object while a read of it waits on a
// stalled body: the resumed request, conditional on the first answer's
// ETag, is refused (412), and the read fails with ErrChanged instead of
// joining the halves of two versions. The next read gets the new bytes.
func TestReadChangedObject(t *testing.T) {
	for _, op := range []string{"Get", "ReadAt"} {
		t.Run(op, func(t *testing.T) {
			dir := "changed-" + op
			env := newRetryEnv(t, []string{dir})
			// The stall is given up after a fifth of the timeout: 2 s,
			// time enough to replace the object first.
			st := env.open(t, s3.Options{Timeout: 10 * time.Second})
			key := objectKey(dir)
			env.proxy.Inject(key, faultproxy.Fault{Kind: faultproxy.StallMidBody}, 1)
			newData := bytes.Repeat([]byte("new version "), len(retryData)/12+1)[:len(retryData)]
			done := make(chan error, 1)
			go func() {
				var err error
				if op == "Get" {
					var b []byte
					if b, err = st.Get(context.Background(), dir+"/obj"); err == nil {
						err = fmt.Errorf("%w: Get succeeded with %d bytes (old: %v, new: %v)", errWrongData, len(b), bytes.Equal(b, retryData), bytes.Equal(b, newData))
					}
				} else {
					p := make([]byte, 8000)
					var n int
					if n, err = st.ReadAt(context.Background(), dir+"/obj", p, 1000); err == nil {
						err = fmt.Errorf("%w: ReadAt succeeded with %d bytes", errWrongData, n)
					}
				}
				done <- err
			}()
			for env.proxy.Count(key) == 0 {
				time.Sleep(5 * time.Millisecond)
			}
			env.srv.Put(t, "retry", map[string][]byte{key: newData})
			err := <-done
			if !errors.Is(err, s3.ErrChanged) {
				t.Fatalf("read across the replacement: %v; want an error wrapping ErrChanged", err)
			}
			checkIOError(t, err)
			if n := env.proxy.Count(key); n != 2 {
				t.Errorf("the proxy saw %d requests, want 2 (the stalled one and the resumption)", n)
			}
			if _, changed := st.Resumed(); changed != 1 {
				t.Errorf("Resumed reports %d changed objects, want 1", changed)
			}
			b, err := st.Get(context.Background(), dir+"/obj")
			if err != nil || !bytes.Equal(b, newData) {
				t.Errorf("the next Get: %d bytes, %v; want the new version", len(b), err)
			}
		})
	}
}

// TestErrorBodyFaults breaks the error answer (404 NoSuchKey) to a read
// of a missing object once, in each way a body breaks: the SDK asks
// again (or the 404 status alone says it, when the document is cut
// short), and the read says the object is not there. A stalled error
// document is given up after a fifth of the timeout, as a stalled object
// body is, instead of using up the timeout.
func TestErrorBodyFaults(t *testing.T) {
	env := newRetryEnv(t, nil)
	st := env.open(t, s3.Options{Timeout: 3 * time.Second})
	for _, f := range bodyFaults {
		t.Run(f.String(), func(t *testing.T) {
			dir := "missing-" + strings.NewReplacer(" ", "-", ",", "").Replace(f.String())
			env.proxy.Inject(objectKey(dir), f, 1)
			_, err := st.Get(context.Background(), dir+"/obj")
			if !errors.Is(err, zmap.ErrNotFound) {
				t.Errorf("Get of a missing object whose 404 answer broke once: %v; want ErrNotFound", err)
			}
			if n := env.proxy.Count(objectKey(dir)); n < 1 || n > 2 {
				t.Errorf("the proxy saw %d requests, want 1 or 2", n)
			}
		})
	}
}
