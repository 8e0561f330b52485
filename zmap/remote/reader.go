package remote

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync/atomic"
	"time"

	"github.com/nczarrfs/nczarrfs/zmap"
)

// Options configure NewReader.
type Options struct {
	// Timeout bounds every operation: Get and ReadAt with their retries
	// and resumed bodies, one Do with its retries. Required (> 0).
	Timeout time.Duration
	// Pacer paces the Reader's operations; when nil, a new Pacer of
	// MaxInFlight (DefaultMaxInFlight when zero). A backend whose client
	// tells the Pacer of every answer (Watch) makes the Pacer first.
	Pacer       *Pacer
	MaxInFlight int
	// Name starts the Reader's log lines ("s3", "http").
	Name string
	// Logger receives debug lines about retries and resumed bodies; nil
	// discards them.
	Logger *slog.Logger
}

// DefaultMaxInFlight is where a Pacer starts when Options say nothing:
// above what readers keep in flight (32), plus lookups and listings, so
// that it binds only when the server throttles.
const DefaultMaxInFlight = 64

// Reader reads the objects of one store through its Backend: paced by
// one Pacer, each operation within the timeout, throttled and transient
// requests tried again, bodies that break off resumed. Its methods are
// safe for concurrent use.
type Reader struct {
	b       Backend
	pace    *Pacer
	timeout time.Duration
	name    string
	log     *slog.Logger
	resumed atomic.Int64 // bodies resumed after they broke off
	changed atomic.Int64 // reads failed because the object changed
}

// NewReader returns a Reader over b.
func NewReader(b Backend, opts Options) *Reader {
	if opts.Timeout <= 0 {
		panic("remote: NewReader without a timeout")
	}
	if opts.MaxInFlight <= 0 {
		opts.MaxInFlight = DefaultMaxInFlight
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Name == "" {
		opts.Name = "remote"
	}
	if opts.Pacer == nil {
		opts.Pacer = NewPacer(opts.MaxInFlight)
	}
	return &Reader{b: b, pace: opts.Pacer, timeout: opts.Timeout, name: opts.Name, log: opts.Logger}
}

// Pacer returns the Reader's Pacer, for the backend's client (Watch) and
// for requests the backend sends itself.
func (r *Reader) Pacer() *Pacer { return r.pace }

// Timeout returns the bound on each operation.
func (r *Reader) Timeout() time.Duration { return r.timeout }

// Throttled returns how many answers asked the store to slow down (503,
// 429), retried ones included.
func (r *Reader) Throttled() int64 { return r.pace.Throttled() }

// RequestLimit returns the bound on operations in flight now, and the
// lowest it has been.
func (r *Reader) RequestLimit() (now, lowest int) { return r.pace.State() }

// Resumed returns how many bodies were resumed after they broke off, and
// how many reads failed because the object changed meanwhile.
func (r *Reader) Resumed() (resumed, changed int64) { return r.resumed.Load(), r.changed.Load() }

// Do runs call, one operation of the backend's own (a HEAD, a page of a
// listing), within the timeout and with a slot of the Pacer, and again
// after Backoff while it fails with an error the backend classifies as
// Throttled or Transient and the timeout has room for another try. It
// blocks until call succeeds or gives up, and returns call's last error
// unmapped (wrapped with context.DeadlineExceeded when the timeout ended
// the tries, context.Canceled when ctx did).
func (r *Reader) Do(ctx context.Context, call func(rctx context.Context) error) error {
	rctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	release, err := r.pace.Acquire(rctx)
	if err != nil {
		return err
	}
	defer release()
	return r.retry(rctx, func() error { return call(rctx) })
}

// retry runs call, and again after a wait while it fails with a
// throttling or transient error and rctx has time for another try.
func (r *Reader) retry(rctx context.Context, call func() error) error {
	for attempt := 1; ; attempt++ {
		err := call()
		if err == nil || rctx.Err() != nil {
			if err != nil && rctx.Err() != nil && !errors.Is(err, rctx.Err()) {
				err = fmt.Errorf("%w: %w", rctx.Err(), err)
			}
			return err
		}
		c := r.b.Classify(err)
		if c != Throttled && c != Transient {
			return err
		}
		if !Sleep(rctx, Backoff(attempt)) {
			if cerr := rctx.Err(); errors.Is(cerr, context.Canceled) {
				return fmt.Errorf("%w: %w", cerr, err) // the caller gave up
			}
			// Out of time: the timeout, not the attempts, ended it.
			return fmt.Errorf("%w: %w", context.DeadlineExceeded, err)
		}
		r.log.Debug(r.name+": trying again", "attempt", attempt+1, "why", c.String(), "err", err)
	}
}

// open sends one Open within rctx, tried again while throttled.
func (r *Reader) open(rctx context.Context, key string, rng *Range, etag string) (*Answer, error) {
	var a *Answer
	err := r.retry(rctx, func() (err error) {
		a, err = r.b.Open(rctx, key, rng, etag)
		return err
	})
	return a, err
}

// Get returns the whole object stored under key, in a new slice. A body
// that breaks off is resumed where it broke (see ReadAt). The object may
// hold at most zmap.MaxSize(ctx) bytes: a larger one fails with a
// *zmap.TooLargeError as soon as an answer says its size (Content-Length,
// or a resumed answer's Content-Range total), or, for a body with no
// length, once one byte more than the bound has arrived; no more of it is
// read. Other errors come from the Backend's Err, op "GET".
func (r *Reader) Get(ctx context.Context, key string) ([]byte, error) {
	bound := zmap.MaxSize(ctx)
	rctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	release, err := r.pace.Acquire(rctx)
	if err != nil {
		return nil, r.b.Err(ctx, "GET", key, err)
	}
	defer release()
	a, err := r.open(rctx, key, nil, "")
	if err != nil {
		return nil, r.b.Err(ctx, "GET", key, err)
	}
	if a.Length > bound {
		a.Body.Close()
		return nil, r.tooLarge(&zmap.TooLargeError{Key: key, Size: a.Length, Bound: bound})
	}
	if a.Length >= 0 {
		data := make([]byte, a.Length)
		if err := r.readResumed(rctx, ctx, key, a, a.ETag, data, 0); err != nil {
			return nil, err
		}
		return data, nil
	}
	// No length to check the body against: read it as it comes, up to
	// one byte past the bound, and if it breaks off, the answer to the
	// request for the rest says how long the object is.
	head, err := readBounded(a, key, bound)
	if err == nil {
		return head, nil
	}
	if zmap.IsTooLarge(err) {
		return nil, r.tooLarge(err)
	}
	etag := a.ETag
	if ok, why := r.resume(rctx, etag, 1, fmt.Errorf("body broke off after %d bytes: %w", len(head), err)); !ok {
		return nil, r.b.Err(ctx, "GET", key, why)
	}
	r.resumed.Add(1)
	rng := &Range{Off: int64(len(head)), Len: -1}
	b, err := r.open(rctx, key, rng, etag)
	if err != nil {
		return nil, r.resumeErr(ctx, key, err, etag, len(head), -1)
	}
	start, end, size, rerr := ParseContentRange(b.ContentRange)
	if rerr != nil || start != int64(len(head)) || end != size-1 {
		b.Body.Close()
		return nil, r.b.Err(ctx, "GET", key, fmt.Errorf("asked for %s of the object, server sent Content-Range %q", rng.Header(), b.ContentRange))
	}
	if size > bound {
		b.Body.Close()
		return nil, r.tooLarge(&zmap.TooLargeError{Key: key, Size: size, Bound: bound})
	}
	data := make([]byte, size)
	copy(data, head)
	if err := r.readResumed(rctx, ctx, key, b, etag, data[len(head):], start); err != nil {
		return nil, err
	}
	return data, nil
}

// tooLarge names the store in the error of an object over its bound.
func (r *Reader) tooLarge(err error) error { return fmt.Errorf("%s: %w", r.name, err) }

// resume reports whether the rest of a body that broke off may be asked
// for, after the wait before the attempt-th try: when etag can hold it to
// the same version and rctx has time for the wait. When not, it returns
// why, with err, the error that broke the body, kept in the chain: the
// timeout (context.DeadlineExceeded, also when the wait would outlast it)
// or the caller's cancellation says why no more was tried, err what went
// wrong (a reset, a stall).
func (r *Reader) resume(rctx context.Context, etag string, attempt int, err error) (bool, error) {
	if !strongETag(etag) {
		// No ETag to hold the rest to the same version.
		return false, r.cause(rctx, err)
	}
	if rctx.Err() == nil && Sleep(rctx, Backoff(attempt)) {
		return true, nil
	}
	if cerr := rctx.Err(); errors.Is(cerr, context.Canceled) {
		return false, r.cause(rctx, err)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return false, err
	}
	return false, fmt.Errorf("%w: %w", context.DeadlineExceeded, err)
}

// cause returns err with rctx's error before it when rctx has ended.
func (r *Reader) cause(rctx context.Context, err error) error {
	if cerr := rctx.Err(); cerr != nil && !errors.Is(err, cerr) {
		return fmt.Errorf("%w: %w", cerr, err)
	}
	return err
}

// ReadAt reads len(p) bytes (len(p) > 0) of the object under key at offset
// off (off >= 0) with a ranged request. It returns io.EOF when the object
// ends before p is full, including when off is at or past its end, and
// never returns fewer bytes than the object holds there: a body that
// breaks off (reset, cut short, or stalled) is resumed from the byte where
// it broke with a ranged request conditional on the first answer's ETag,
// after a short random wait, for as long as the timeout allows. An object
// replaced in the meantime fails the read (ErrChanged). A server that
// ignores Range and sends the whole object is read from off (such an
// answer is not resumed).
func (r *Reader) ReadAt(ctx context.Context, key string, p []byte, off int64) (int, error) {
	rctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	release, err := r.pace.Acquire(rctx)
	if err != nil {
		return 0, r.b.Err(ctx, "GET", key, err)
	}
	defer release()
	rng := Range{Off: off, Len: int64(len(p))}
	a, err := r.open(rctx, key, &rng, "")
	if err != nil {
		if r.b.Classify(err) == RangeNotSatisfiable {
			// The range starts at or past the end (or the object is
			// empty). A missing object is a 404, not a 416.
			return 0, io.EOF
		}
		return 0, r.b.Err(ctx, "GET", key, err)
	}
	if a.ContentRange == "" {
		// A server that ignores Range sends the whole object: skip to
		// off.
		defer a.Body.Close()
		if _, err := io.CopyN(io.Discard, a.Body, off); err != nil {
			if errors.Is(err, io.EOF) {
				return 0, io.EOF
			}
			return 0, r.b.Err(ctx, "GET", key, err)
		}
		avail := int64(-1)
		if a.Length >= 0 {
			avail = a.Length - off
		}
		n, err := io.ReadFull(a.Body, p)
		switch {
		case err == nil:
			return n, nil
		case (errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)) && (avail < 0 || int64(n) >= avail):
			return n, io.EOF
		}
		return n, r.b.Err(ctx, "GET", key, err)
	}
	start, end, size, err := ParseContentRange(a.ContentRange)
	// The bytes that must arrive: those asked for, or to the object's
	// end when its total says it ends first. A range shorter than that
	// is a body cut short (resumed), never the object's end; a server
	// that sends no total is taken at its range.
	n := int(end - start + 1)
	if size >= 0 {
		n = int(min(int64(len(p)), size-off))
	}
	if err != nil || start != off || end-start+1 > int64(n) {
		a.Body.Close()
		return 0, r.b.Err(ctx, "GET", key, fmt.Errorf("asked for %s, server sent Content-Range %q", rng.Header(), a.ContentRange))
	}
	if err := r.readResumed(rctx, ctx, key, a, a.ETag, p[:n], off); err != nil {
		return 0, err
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// readResumed fills p with the body of a, whose first byte is byte off of
// the object, closing a. When the body breaks off it asks for the rest
// (a ranged request from the byte where it broke, If-Match etag, the
// first answer's) after a short random wait, for as long as rctx allows.
// Errors are mapped (ctx is the caller's).
func (r *Reader) readResumed(rctx, ctx context.Context, key string, a *Answer, etag string, p []byte, off int64) error {
	got, err := readBody(a, p)
	for attempt := 1; got < len(p); attempt++ {
		if ok, why := r.resume(rctx, etag, attempt, fmt.Errorf("body broke off after %d bytes of %d: %w", got, len(p), err)); !ok {
			return r.b.Err(ctx, "GET", key, why)
		}
		r.resumed.Add(1)
		at := off + int64(got)
		r.log.Debug(r.name+": resuming a body that broke off", "key", key, "at", at, "err", err)
		rng := &Range{Off: at, Len: int64(len(p) - got)}
		a, err = r.open(rctx, key, rng, etag)
		if err != nil {
			return r.resumeErr(ctx, key, err, etag, got, len(p))
		}
		if e := a.ETag; e != "" && e != etag {
			a.Body.Close()
			r.changed.Add(1)
			return r.b.Err(ctx, "GET", key, fmt.Errorf("%w (ETag %s, now %s)", ErrChanged, etag, e))
		}
		if a.ContentRange == "" && a.ETag == etag {
			// The server ignored the range but not the version: skip
			// to the byte where the body broke.
			if _, serr := io.CopyN(io.Discard, a.Body, at); serr != nil {
				a.Body.Close()
				err = serr
				continue
			}
		} else if start, end, _, rerr := ParseContentRange(a.ContentRange); rerr != nil || start != at || end != off+int64(len(p))-1 {
			a.Body.Close()
			return r.b.Err(ctx, "GET", key, fmt.Errorf("asked for %s, server sent Content-Range %q", rng.Header(), a.ContentRange))
		}
		var n int
		n, err = readBody(a, p[got:])
		got += n
	}
	return nil
}

// resumeErr maps the error of a request for the rest of a body: class
// Changed means the object no longer has etag.
func (r *Reader) resumeErr(ctx context.Context, key string, err error, etag string, got, want int) error {
	if r.b.Classify(err) == Changed {
		r.changed.Add(1)
		return r.b.Err(ctx, "GET", key, fmt.Errorf("%w (ETag %s no longer matches, after %d bytes of %d)", ErrChanged, etag, got, want))
	}
	return r.b.Err(ctx, "GET", key, err)
}

// readBody reads a's body into p until p is full or the body ends or
// breaks, then closes it. (A body that stalls fails: Watch.)
func readBody(a *Answer, p []byte) (int, error) {
	defer a.Body.Close()
	got, err := io.ReadFull(a.Body, p)
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return got, err
}

// readBounded reads a's whole body, at most bound+1 bytes of it
// (zmap.ReadBounded), then closes it.
func readBounded(a *Answer, key string, bound int64) ([]byte, error) {
	defer a.Body.Close()
	return zmap.ReadBounded(a.Body, key, bound)
}

// DefaultTimeout bounds one operation of a remote store, retries
// included, when neither a flag nor the environment says otherwise.
const DefaultTimeout = 30 * time.Second

// TimeoutEnv names the environment variables that set the timeout of
// remote stores when no option does, in order: NCZARRFS_TIMEOUT, and
// NCZARRFS_S3_TIMEOUT, its older name. Each holds a Go duration ("10s").
var TimeoutEnv = []string{"NCZARRFS_TIMEOUT", "NCZARRFS_S3_TIMEOUT"}

// EnvTimeout returns the timeout the environment sets (TimeoutEnv), or
// DefaultTimeout when it sets none; a value that is not a positive
// duration is an error.
func EnvTimeout() (time.Duration, error) {
	for _, name := range TimeoutEnv {
		if v := os.Getenv(name); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 {
				return 0, fmt.Errorf("%s=%q is not a positive duration such as 10s", name, v)
			}
			return d, nil
		}
	}
	return DefaultTimeout, nil
}
