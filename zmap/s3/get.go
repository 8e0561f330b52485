package s3

import (
	"context"
	"fmt"
	"io"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/nczarrfs/nczarrfs/zmap/remote"
)

// ErrChanged is wrapped by the error of a read whose object was replaced
// while it was read: the rest of its body would have come from another
// version, so the read fails rather than mix the two. It is
// remote.ErrChanged.
var ErrChanged = remote.ErrChanged

// Get returns the whole object stored under key (GetObject). A body that
// breaks off is resumed where it broke (see ReadAt).
func (s *Store) Get(ctx context.Context, key string) ([]byte, error) {
	if err := checkKey(key); err != nil {
		return nil, err
	}
	return s.r.Get(withLastAnswer(ctx), key)
}

// ReadAt reads len(p) bytes of the object under key at offset off with a
// ranged GetObject. It returns io.EOF when the object ends before p is
// full, including when off is at or past its end, and never returns fewer
// bytes than the object holds there: a body that breaks off (reset, cut
// short, or stalled for a fifth of the timeout) is resumed from the byte
// where it broke with a ranged GetObject conditional on the first answer's
// ETag, after a short random wait, for as long as the timeout allows. An
// object replaced in the meantime fails the read (ErrChanged). The work is
// remote.Reader's.
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
	return s.r.ReadAt(withLastAnswer(ctx), key, p, off)
}

// backend is the Store's remote.Backend: GetObject, and what S3's
// answers mean.
type backend struct{ s *Store }

// Open sends one GetObject for key within ctx: ranged when rng is not
// nil, conditional on etag (If-Match) when it is not "". The SDK's
// retryer has retried it as often as it would.
func (b backend) Open(ctx context.Context, key string, rng *remote.Range, etag string) (*remote.Answer, error) {
	s := b.s
	in := &s3.GetObjectInput{Bucket: aws.String(s.loc.Bucket), Key: aws.String(s.loc.key(key))}
	if rng != nil {
		in.Range = aws.String(rng.Header())
	}
	if etag != "" {
		in.IfMatch = aws.String(etag)
	}
	actx, cancel := context.WithCancel(ctx)
	out, err := s.client.GetObject(actx, in)
	if err != nil {
		cancel()
		return nil, err
	}
	a := &remote.Answer{
		Body:         cancelOnClose{out.Body, cancel},
		ContentRange: aws.ToString(out.ContentRange),
		Length:       -1,
		ETag:         aws.ToString(out.ETag),
	}
	if out.ContentLength != nil {
		a.Length = *out.ContentLength
	}
	if out.LastModified != nil {
		a.ModTime = *out.LastModified
	}
	return a, nil
}

// Classify reads an SDK error's status and code. Errors other than
// throttling have been retried by the SDK already: they are Failed.
func (b backend) Classify(err error) remote.Class {
	status, code := statusOf(err)
	switch {
	case code == "NoSuchBucket":
		return remote.Failed // not a missing object: never a fill value
	case status == http.StatusNotFound || code == "NoSuchKey" || code == "NotFound":
		return remote.NotFound
	case status == http.StatusForbidden || deniedCodes[code]:
		return remote.Permission
	case remote.ThrottleStatus(status):
		return remote.Throttled
	case status == http.StatusRequestedRangeNotSatisfiable:
		return remote.RangeNotSatisfiable
	case status == http.StatusPreconditionFailed:
		return remote.Changed
	}
	return remote.Failed
}

// Err maps an error with mapErr, naming remote's GET GetObject.
func (b backend) Err(ctx context.Context, op, key string, err error) error {
	if op == "GET" {
		op = "GetObject"
	}
	return b.s.mapErr(ctx, op, key, err)
}

// cancelOnClose is a body whose Close also cancels its request's context.
type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (c cancelOnClose) Close() error {
	err := c.ReadCloser.Close()
	c.cancel()
	return err
}
