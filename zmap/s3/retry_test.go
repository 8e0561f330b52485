package s3_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nczarrfs/nczarrfs/internal/faultproxy"
	"github.com/nczarrfs/nczarrfs/internal/miniotest"
	"github.com/nczarrfs/nczarrfs/zmap"
	"github.com/nczarrfs/nczarrfs/zmap/s3"
	"github.com/nczarrfs/nczarrfs/zmap/zmaptest"
)

// The tests in this file put a fault-injecting proxy (internal/faultproxy)
// between a Store and a real MinIO server, which cannot be made to answer
// 503 or 429 on demand. They prove that throttling and server errors are retried with
// the SDK's backoff, that retries stop (after Options.MaxAttempts, or at
// Options.Timeout), that client errors are not retried, and that a Store
// keeps no failure state.
//
// The SDK's backoff cannot be shortened through Options: the delay before
// retry i is uniform in [0, 2^i s), capped at 5 s. Cases therefore inject
// at most two failures and run concurrently (see runAll).

// objectKey and listKey name the proxy keys of requests for the object
// ds/dir/obj and for listing the children of ds/dir.
func objectKey(dir string) string { return "ds/" + dir + "/obj" }
func listKey(dir string) string   { return "list:ds/" + dir + "/" }

// fault is a fault the proxy injects.
type fault = faultproxy.Fault

// Faults S3 and the proxies in front of it send.
var (
	slowDown      = faultproxy.SlowDown
	internalError = faultproxy.InternalError
	tooMany       = faultproxy.TooMany
	bare429       = faultproxy.Bare429
	badGateway    = faultproxy.BadGateway
	gwTimeout     = faultproxy.GatewayTimeout
	accessDenied  = faultproxy.AccessDenied
	noSuchKey     = faultproxy.NoSuchKey
)

// retryData is the content of every ds/dir/obj.
var retryData = func() []byte {
	b := make([]byte, 10000)
	for i := range b {
		b[i] = byte(i*7 + i/256)
	}
	return b
}()

// retryOp is one Store operation on the object ds/dir/obj (or, for
// Search, on its directory).
type retryOp struct {
	name string
	// head is true when the operation is a HEAD request, whose error
	// answers carry no body and so no S3 error code.
	head bool
	key  func(dir string) string // the proxy key of its requests
	// run performs the operation and checks its result.
	run func(ctx context.Context, st *s3.Store, dir string) error
}

var retryOps = []retryOp{
	{name: "Get", key: objectKey, run: func(ctx context.Context, st *s3.Store, dir string) error {
		b, err := st.Get(ctx, dir+"/obj")
		if err == nil && !bytes.Equal(b, retryData) {
			err = fmt.Errorf("Get returned %d wrong bytes", len(b))
		}
		return err
	}},
	{name: "ReadAt", key: objectKey, run: func(ctx context.Context, st *s3.Store, dir string) error {
		p := make([]byte, 100)
		n, err := st.ReadAt(ctx, dir+"/obj", p, 1234)
		if err == nil && (n != len(p) || !bytes.Equal(p, retryData[1234:1334])) {
			err = fmt.Errorf("ReadAt returned %d wrong bytes", n)
		}
		return err
	}},
	{name: "Size", head: true, key: objectKey, run: func(ctx context.Context, st *s3.Store, dir string) error {
		n, err := st.Size(ctx, dir+"/obj")
		if err == nil && n != int64(len(retryData)) {
			err = fmt.Errorf("Size = %d, want %d", n, len(retryData))
		}
		return err
	}},
	{name: "Search", key: listKey, run: func(ctx context.Context, st *s3.Store, dir string) error {
		got, err := st.Search(ctx, dir)
		want := []zmap.Entry{{Name: "obj", Size: int64(len(retryData))}}
		if err == nil && !slices.Equal(zmaptest.WithoutTimes(got), want) {
			err = fmt.Errorf("Search = %+v, want %+v", got, want)
		}
		return err
	}},
}

// retryEnv is a MinIO server holding bucket "retry", with ds/dir/obj for
// every dir the test asked for, behind a faultProxy.
type retryEnv struct {
	srv   *miniotest.Server
	proxy *faultproxy.Proxy
}

func newRetryEnv(t *testing.T, dirs []string) *retryEnv {
	t.Helper()
	srv := miniotest.Start(t)
	useServerEnv(t, srv)
	srv.CreateBucket(t, "retry")
	objects := map[string][]byte{"ds/.zgroup": []byte(`{"zarr_format": 2}`)}
	for _, d := range dirs {
		objects[objectKey(d)] = retryData
	}
	srv.Put(t, "retry", objects)
	return &retryEnv{srv: srv, proxy: faultproxy.Start(t, srv.Endpoint)}
}

// open opens a Store on s3://retry/ds with the proxy as its endpoint.
func (e *retryEnv) open(t *testing.T, opts s3.Options) *s3.Store {
	t.Helper()
	loc, err := s3.ParseURL("s3://retry/ds")
	if err != nil {
		t.Fatal(err)
	}
	opts.EndpointURL = e.proxy.URL
	st, err := s3.Open(context.Background(), loc, opts)
	if err != nil {
		t.Fatalf("Open through the proxy: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// retryCase is one operation under one fault, on its own directory.
type retryCase struct {
	name  string
	dir   string
	op    retryOp
	fault fault
}

// cases returns a case for every fault and operation, each with its own
// directory (and so its own proxy key), prefixed by test.
func cases(test string, faults map[string]fault) []retryCase {
	var cs []retryCase
	for fname, f := range faults {
		for _, op := range retryOps {
			cs = append(cs, retryCase{
				name:  fname + "/" + op.name,
				dir:   strings.ToLower(test + "-" + strings.ReplaceAll(fname, " ", "-") + "-" + op.name),
				op:    op,
				fault: f,
			})
		}
	}
	slices.SortFunc(cs, func(a, b retryCase) int { return strings.Compare(a.name, b.name) })
	return cs
}

func dirsOf(cs ...[]retryCase) []string {
	var dirs []string
	for _, c := range slices.Concat(cs...) {
		dirs = append(dirs, c.dir)
	}
	return dirs
}

// runAll runs f for every case as a subtest, all at the same time. The
// cases mostly sleep in the SDK's backoff, so they are started with t.Run
// from goroutines rather than t.Parallel, whose concurrency -parallel
// limits to GOMAXPROCS (2 here).
func runAll(t *testing.T, cs []retryCase, f func(t *testing.T, c retryCase)) {
	var wg sync.WaitGroup
	for _, c := range cs {
		wg.Go(func() { t.Run(c.name, func(t *testing.T) { f(t, c) }) })
	}
	wg.Wait()
}

// checkIOError fails t unless err is a plain I/O error: one that the FUSE
// layer turns into EIO (not ENOENT, EACCES, EINTR or a transport errno).
func checkIOError(t *testing.T, err error) {
	t.Helper()
	var errno syscall.Errno
	switch {
	case err == nil:
		t.Error("succeeded, want an I/O error")
	case errors.Is(err, zmap.ErrNotFound):
		t.Errorf("%v wraps zmap.ErrNotFound; a server error must not read as a missing object", err)
	case errors.Is(err, zmap.ErrPermission):
		t.Errorf("%v wraps zmap.ErrPermission", err)
	case errors.Is(err, context.Canceled):
		t.Errorf("%v wraps context.Canceled", err)
	case errors.As(err, &errno):
		t.Errorf("%v unwraps to errno %v", err, errno)
	}
}

// TestRetryTransient injects two throttling or server-error answers before
// every operation's request: the operation succeeds with the third.
func TestRetryTransient(t *testing.T) {
	const injected = 2
	cs := cases("transient", map[string]fault{
		"503 SlowDown":        slowDown,
		"500 InternalError":   internalError,
		"429 TooManyRequests": tooMany,
		"429 no body":         bare429,
		"502 no body":         badGateway,
		"504 no body":         gwTimeout,
	})
	env := newRetryEnv(t, dirsOf(cs))
	st := env.open(t, s3.Options{Timeout: 30 * time.Second}) // MaxAttempts: the default, 5

	runAll(t, cs, func(t *testing.T, c retryCase) {
		key := c.op.key(c.dir)
		env.proxy.Inject(key, c.fault, injected)
		start := time.Now()
		err := c.op.run(context.Background(), st, c.dir)
		elapsed := time.Since(start)
		if err != nil {
			t.Errorf("after %d injected %d answers: %v", injected, c.fault.Status, err)
		}
		// Fewer: the fault was not retried. More: a success was.
		if n := env.proxy.Count(key); n != injected+1 {
			t.Errorf("the proxy saw %d requests for %s, want %d", n, key, injected+1)
		}
		t.Logf("%d requests, done after %v", env.proxy.Count(key), elapsed.Round(time.Millisecond))
	})
}

// TestRetryPersistent answers every request of an operation with an
// error: the operation fails with an I/O error once its attempts run out
// (500 InternalError), or at its timeout (503 SlowDown, which is waited
// out for as long as the timeout allows).
func TestRetryPersistent(t *testing.T) {
	attempts := cases("attempts", map[string]fault{"500 InternalError": internalError})
	timeout := cases("timeout", map[string]fault{"503 SlowDown": slowDown})
	env := newRetryEnv(t, dirsOf(attempts, timeout))

	t.Run("max attempts", func(t *testing.T) {
		const maxAttempts = 3
		st := env.open(t, s3.Options{Timeout: 30 * time.Second, MaxAttempts: maxAttempts})
		runAll(t, attempts, func(t *testing.T, c retryCase) {
			n, err := env.failPersistently(t, st, c)
			if n != maxAttempts {
				t.Errorf("the proxy saw %d requests for %s, want MaxAttempts = %d", n, c.op.key(c.dir), maxAttempts)
			}
			if errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("%v: ended by the timeout, want by MaxAttempts", err)
			}
			checkLastAnswer(t, err, c)
		})
	})

	t.Run("timeout", func(t *testing.T) {
		// The first retry waits less than 2 s, so a 3 s timeout always
		// lets at least two attempts through, and ends the operation
		// long before 50 attempts.
		const maxAttempts = 50
		st := env.open(t, s3.Options{Timeout: 3 * time.Second, MaxAttempts: maxAttempts})
		runAll(t, timeout, func(t *testing.T, c retryCase) {
			n, err := env.failPersistently(t, st, c)
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("%v does not wrap context.DeadlineExceeded: it was not the timeout that ended it", err)
			}
			// The error still reports what the server last answered,
			// not just the timeout.
			checkLastAnswer(t, err, c)
			if want := fmt.Sprintf("last answered %d", c.fault.Status); !strings.Contains(err.Error(), want) {
				t.Errorf("%v: the message does not say %q", err, want)
			}
			if n < 2 || n >= maxAttempts {
				t.Errorf("the proxy saw %d requests for %s, want at least 2 and fewer than %d", n, c.op.key(c.dir), maxAttempts)
			}
		})
	})
}

// failPersistently answers every request for c's key with c's fault, runs
// c's operation on st and checks that it fails with an I/O error. It
// returns how many requests the proxy saw, and the error.
func (e *retryEnv) failPersistently(t *testing.T, st *s3.Store, c retryCase) (int, error) {
	t.Helper()
	key := c.op.key(c.dir)
	e.proxy.Inject(key, c.fault, -1)
	start := time.Now()
	err := c.op.run(context.Background(), st, c.dir)
	elapsed := time.Since(start)
	checkIOError(t, err)
	n := e.proxy.Count(key)
	t.Logf("%d requests, failed after %v: %v", n, elapsed.Round(time.Millisecond), err)
	return n, err
}

// checkLastAnswer checks that err is an *s3.Error carrying the status and
// S3 code of c's fault (a HEAD answer has no body, so no code).
func checkLastAnswer(t *testing.T, err error, c retryCase) {
	t.Helper()
	var se *s3.Error
	if !errors.As(err, &se) {
		t.Fatalf("%v (%T) is not an *s3.Error", err, err)
	}
	if se.Status != c.fault.Status || (!c.op.head && se.Code != c.fault.Code) {
		t.Errorf("error status %d code %q, want the last answer %d %q: %v", se.Status, se.Code, c.fault.Status, c.fault.Code, err)
	}
}

// TestRetryNotRetried checks that answers no retry can change are not
// retried: injected 404 and 403 answers (a retry would succeed, so a
// success means one happened), MinIO's own 404 for a missing object and
// 403 for anonymous requests, and 416 for a range past the end.
func TestRetryNotRetried(t *testing.T) {
	injected := cases("injected", map[string]fault{"404 NoSuchKey": noSuchKey, "403 AccessDenied": accessDenied})
	real := cases("real", map[string]fault{"403 anonymous": {}})
	env := newRetryEnv(t, dirsOf(injected, real))
	st := env.open(t, s3.Options{Timeout: 30 * time.Second})
	anon := env.open(t, s3.Options{Timeout: 30 * time.Second, NoSignRequest: true})
	ctx := context.Background()

	wantKind := func(t *testing.T, err error, kind error) {
		t.Helper()
		if !errors.Is(err, kind) {
			t.Errorf("got %v, want an error wrapping %v", err, kind)
		}
	}
	wantOne := func(t *testing.T, key string) {
		t.Helper()
		if n := env.proxy.Count(key); n != 1 {
			t.Errorf("the proxy saw %d requests for %s, want 1", n, key)
		}
	}

	runAll(t, injected, func(t *testing.T, c retryCase) {
		key := c.op.key(c.dir)
		env.proxy.Inject(key, c.fault, 1)
		err := c.op.run(ctx, st, c.dir)
		switch {
		case c.fault.Status == http.StatusForbidden:
			wantKind(t, err, zmap.ErrPermission)
		case c.op.name == "Search":
			// A listing answered 404 NoSuchKey is odd but not
			// "no children": it must fail, not list nothing.
			if err == nil {
				t.Errorf("Search answered 404 succeeded")
			}
		default:
			wantKind(t, err, zmap.ErrNotFound)
		}
		wantOne(t, key)
	})
	runAll(t, real, func(t *testing.T, c retryCase) {
		key := c.op.key(c.dir)
		wantKind(t, c.op.run(ctx, anon, c.dir), zmap.ErrPermission)
		wantOne(t, key)
	})
	t.Run("404 missing object", func(t *testing.T) {
		for _, op := range retryOps {
			if op.name == "Search" {
				continue // a missing prefix lists as empty
			}
			err := op.run(ctx, st, "missing-"+strings.ToLower(op.name))
			wantKind(t, err, zmap.ErrNotFound)
			wantOne(t, op.key("missing-"+strings.ToLower(op.name)))
		}
	})
	t.Run("416 range past the end", func(t *testing.T) {
		dir := real[0].dir
		before := env.proxy.Count(objectKey(dir))
		n, err := st.ReadAt(ctx, dir+"/obj", make([]byte, 10), int64(len(retryData))+5)
		if n != 0 || err != io.EOF {
			t.Errorf("ReadAt past the end = %d, %v; want 0, io.EOF", n, err)
		}
		if n := env.proxy.Count(objectKey(dir)) - before; n != 1 {
			t.Errorf("the proxy saw %d requests for the ranged read, want 1", n)
		}
	})
}

// TestRetryRecovery fails every operation with a persistent 500, lifts
// the fault, and reads again through the same Store. (A persistent 503 is
// waited out until the timeout: TestRetryPersistent.)
func TestRetryRecovery(t *testing.T) {
	const maxAttempts = 2
	cs := cases("recovery", map[string]fault{"500 InternalError": internalError})
	env := newRetryEnv(t, dirsOf(cs))
	st := env.open(t, s3.Options{Timeout: 30 * time.Second, MaxAttempts: maxAttempts})

	runAll(t, cs, func(t *testing.T, c retryCase) {
		key := c.op.key(c.dir)
		env.proxy.Inject(key, c.fault, -1)
		checkIOError(t, c.op.run(context.Background(), st, c.dir))
		if n := env.proxy.Count(key); n != maxAttempts {
			t.Errorf("during the fault the proxy saw %d requests for %s, want %d", n, key, maxAttempts)
		}
		env.proxy.Lift(key)
		if err := c.op.run(context.Background(), st, c.dir); err != nil {
			t.Errorf("after the fault was lifted: %v", err)
		}
		if n := env.proxy.Count(key); n != maxAttempts+1 {
			t.Errorf("after the fault the proxy saw %d requests for %s in all, want %d", n, key, maxAttempts+1)
		}
	})
}
