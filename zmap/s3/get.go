package s3

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// ErrChanged is wrapped by the error of a read whose object was replaced
// while it was read: the rest of its body would have come from another
// version, so the read fails rather than mix the two.
var ErrChanged = errors.New("the object changed while it was read")

// Get returns the whole object stored under key. A body that breaks off
// is resumed where it broke (see ReadAt).
func (s *Store) Get(ctx context.Context, key string) ([]byte, error) {
	ctx = withLastAnswer(ctx)
	if err := checkKey(key); err != nil {
		return nil, err
	}
	rctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	release, err := s.pace.acquire(rctx)
	if err != nil {
		return nil, s.mapErr(ctx, "GetObject", key, err)
	}
	defer release()
	a, err := s.getObject(rctx, key, "", "")
	if err != nil {
		return nil, s.mapErr(ctx, "GetObject", key, err)
	}
	n := a.out.ContentLength
	if n == nil || *n < 0 || *n > maxPrealloc {
		// No length to check the body against: read it as it comes,
		// and if it breaks off, the answer to the request for the rest
		// says how long the object is.
		head, err := s.readAll(a)
		if err == nil {
			return head, nil
		}
		etag := aws.ToString(a.out.ETag)
		if etag == "" || rctx.Err() != nil || !sleep(rctx, backoffDelay(1)) {
			return nil, s.mapErr(ctx, "GetObject", key, err)
		}
		s.resumed.Add(1)
		b, err := s.getObject(rctx, key, fmt.Sprintf("bytes=%d-", len(head)), etag)
		if err != nil {
			return nil, s.resumeErr(ctx, key, err, etag, len(head), -1)
		}
		cr := aws.ToString(b.out.ContentRange)
		start, end, size, rerr := rangeSize(cr)
		if rerr != nil || start != int64(len(head)) || end != size-1 || size > maxPrealloc {
			b.close()
			return nil, s.mapErr(ctx, "GetObject", key, fmt.Errorf("asked for bytes %d- of the object, server sent Content-Range %q", len(head), cr))
		}
		data := make([]byte, size)
		copy(data, head)
		if err := s.readResumed(rctx, ctx, key, b, etag, data[len(head):], start); err != nil {
			return nil, err
		}
		return data, nil
	}
	data := make([]byte, *n)
	if err := s.readResumed(rctx, ctx, key, a, aws.ToString(a.out.ETag), data, 0); err != nil {
		return nil, err
	}
	return data, nil
}

// ReadAt reads len(p) bytes of the object under key at offset off with a
// ranged GetObject. It returns io.EOF when the object ends before p is
// full, including when off is at or past its end, and never returns fewer
// bytes than the object holds there: a body that breaks off (reset, cut
// short, or stalled for a fifth of the timeout) is resumed from the byte
// where it broke with a ranged GetObject conditional on the first answer's
// ETag, after a short random wait, for as long as the timeout allows. An
// object replaced in the meantime fails the read (ErrChanged).
func (s *Store) ReadAt(ctx context.Context, key string, p []byte, off int64) (int, error) {
	if err := checkKey(key); err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, fmt.Errorf("s3: ReadAt %s: negative offset %d", s.url(key), off)
	}
	if len(p) == 0 {
		// Nothing to read, but a missing object is still an error.
		size, err := s.Size(ctx, key)
		if err == nil && off > size {
			err = io.EOF
		}
		return 0, err
	}
	ctx = withLastAnswer(ctx)
	rctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	release, err := s.pace.acquire(rctx)
	if err != nil {
		return 0, s.mapErr(ctx, "GetObject", key, err)
	}
	defer release()
	rng := fmt.Sprintf("bytes=%d-%d", off, off+int64(len(p))-1)
	a, err := s.getObject(rctx, key, rng, "")
	if err != nil {
		if status, _ := statusOf(err); status == http.StatusRequestedRangeNotSatisfiable {
			// The range starts at or past the end (or the object is
			// empty). A missing object is a 404, not a 416.
			return 0, io.EOF
		}
		return 0, s.mapErr(ctx, "GetObject", key, err)
	}
	out := a.out
	if out.ContentRange == nil || *out.ContentRange == "" {
		// A server that ignores Range sends the whole object: skip to
		// off. Such an answer is not resumed.
		defer a.close()
		if _, err := io.CopyN(io.Discard, a.body, off); err != nil {
			if errors.Is(err, io.EOF) {
				return 0, io.EOF
			}
			return 0, s.mapErr(ctx, "GetObject", key, err)
		}
		avail := int64(-1)
		if out.ContentLength != nil {
			avail = *out.ContentLength - off
		}
		n, err := io.ReadFull(a.body, p)
		switch {
		case err == nil:
			return n, nil
		case (errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)) && (avail < 0 || int64(n) >= avail):
			return n, io.EOF
		}
		return n, s.mapErr(ctx, "GetObject", key, err)
	}
	start, end, err := rangeBounds(*out.ContentRange)
	if err != nil || start != off || end < start || end-start+1 > int64(len(p)) {
		a.close()
		return 0, s.mapErr(ctx, "GetObject", key, fmt.Errorf("asked for %s, server sent Content-Range %q", rng, *out.ContentRange))
	}
	// The range says how many bytes must arrive, even when no
	// Content-Length does: a body cut short is resumed, not EOF.
	n := int(end - start + 1)
	if err := s.readResumed(rctx, ctx, key, a, aws.ToString(a.out.ETag), p[:n], off); err != nil {
		return 0, err
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// answer is a GetObject in flight: its output and the cancellation of
// the request, which ends a body read that waits.
type answer struct {
	out    *s3.GetObjectOutput
	body   io.ReadCloser
	cancel context.CancelFunc
}

func (a *answer) close() {
	a.body.Close()
	a.cancel()
}

// getObject sends one GetObject for key within rctx: ranged when rng is
// not "", conditional on etag (If-Match) when it is not "". A throttling
// answer (503, 429) that outlasts the SDK's attempts is tried again after
// a short wait, for as long as rctx allows: the pacer has meanwhile
// lowered the requests in flight.
func (s *Store) getObject(rctx context.Context, key, rng, etag string) (*answer, error) {
	in := &s3.GetObjectInput{Bucket: aws.String(s.loc.Bucket), Key: aws.String(s.loc.key(key))}
	if rng != "" {
		in.Range = aws.String(rng)
	}
	if etag != "" {
		in.IfMatch = aws.String(etag)
	}
	var a *answer
	err := s.untilNotThrottled(rctx, func() error {
		actx, cancel := context.WithCancel(rctx)
		out, err := s.client.GetObject(actx, in)
		if err != nil {
			cancel()
			return err
		}
		a = &answer{out: out, body: out.Body, cancel: cancel}
		return nil
	})
	return a, err
}

// untilNotThrottled runs call, and again after a wait while it fails with
// a throttling answer and rctx has time for another try.
func (s *Store) untilNotThrottled(rctx context.Context, call func() error) error {
	for attempt := 1; ; attempt++ {
		err := call()
		if status, _ := statusOf(err); err == nil || !throttleStatus(status) {
			return err
		}
		if !sleep(rctx, backoffDelay(attempt)) {
			if cerr := rctx.Err(); errors.Is(cerr, context.Canceled) {
				return fmt.Errorf("%w: %w", cerr, err) // the caller gave up
			}
			// Out of time: the timeout, not the attempts, ended it
			// (mapErr then says what the server last answered).
			return fmt.Errorf("%w: %w", context.DeadlineExceeded, err)
		}
		s.log.Debug("s3: throttled; trying again", "attempt", attempt+1)
	}
}

// stallAfter is how long a body may send nothing before it is given up
// and resumed: a fifth of the timeout, so that a stalled connection costs
// a part of it, not all.
func (s *Store) stallAfter() time.Duration { return max(s.timeout/5, 50*time.Millisecond) }

// readResumed fills p with the body of a, whose first byte is byte off of
// the object, closing a. When the body breaks off it asks for the rest
// (a ranged GetObject from the byte where it broke, If-Match etag, the
// first answer's) after a short random wait, for as long as rctx allows.
// Errors are mapped (ctx is the caller's).
func (s *Store) readResumed(rctx, ctx context.Context, key string, a *answer, etag string, p []byte, off int64) error {
	got, err := s.readBody(a, p)
	for attempt := 1; got < len(p); attempt++ {
		if etag == "" || rctx.Err() != nil || !sleep(rctx, backoffDelay(attempt)) {
			// No ETag to hold the rest to the same version, or no time
			// left for it.
			if rctx.Err() != nil {
				err = rctx.Err()
			}
			return s.mapErr(ctx, "GetObject", key, fmt.Errorf("body broke off after %d bytes of %d: %w", got, len(p), err))
		}
		s.resumed.Add(1)
		s.log.Debug("s3: resuming a body that broke off", "key", s.url(key), "at", off+int64(got), "err", err)
		rng := fmt.Sprintf("bytes=%d-%d", off+int64(got), off+int64(len(p))-1)
		a, err = s.getObject(rctx, key, rng, etag)
		if err != nil {
			return s.resumeErr(ctx, key, err, etag, got, len(p))
		}
		if e := aws.ToString(a.out.ETag); e != "" && e != etag {
			a.close()
			s.changed.Add(1)
			return s.mapErr(ctx, "GetObject", key, fmt.Errorf("%w (ETag %s, now %s)", ErrChanged, etag, e))
		}
		cr := aws.ToString(a.out.ContentRange)
		if start, end, rerr := rangeBounds(cr); rerr != nil || start != off+int64(got) || end != off+int64(len(p))-1 {
			a.close()
			return s.mapErr(ctx, "GetObject", key, fmt.Errorf("asked for %s, server sent Content-Range %q", rng, cr))
		}
		var n int
		n, err = s.readBody(a, p[got:])
		got += n
	}
	return nil
}

// resumeErr maps the error of a request for the rest of a body: a 412
// (Precondition Failed) means the object no longer has etag.
func (s *Store) resumeErr(ctx context.Context, key string, err error, etag string, got, want int) error {
	if status, _ := statusOf(err); status == http.StatusPreconditionFailed {
		s.changed.Add(1)
		return s.mapErr(ctx, "GetObject", key, fmt.Errorf("%w (ETag %s no longer matches, after %d bytes of %d)", ErrChanged, etag, got, want))
	}
	return s.mapErr(ctx, "GetObject", key, err)
}

// readBody reads a's body into p until p is full or the body ends or
// breaks, then closes it. (A body that stalls fails: client.)
func (s *Store) readBody(a *answer, p []byte) (int, error) {
	defer a.close()
	got, err := io.ReadFull(a.body, p)
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return got, err
}

// readAll reads a's whole body, then closes it.
func (s *Store) readAll(a *answer) ([]byte, error) {
	defer a.close()
	return io.ReadAll(a.body)
}
