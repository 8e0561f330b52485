package http

import (
	"context"
	"net/http"

	"github.com/nczarrfs/nczarrfs/zmap/remote"
)

// backend is the Store's remote.Backend: plain GETs.
type backend struct{ s *Store }

// Open sends one GET of key: ranged when rng is not nil, conditional on
// etag (If-Match) when it is not "". Anything but 200 and 206 is an error
// (a statusError), its body discarded.
func (b backend) Open(ctx context.Context, key string, rng *remote.Range, etag string) (*remote.Answer, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.s.url(key), nil)
	if err != nil {
		return nil, err
	}
	// The stored bytes, not a compressed form of them.
	req.Header.Set("Accept-Encoding", "identity")
	if rng != nil {
		req.Header.Set("Range", rng.Header())
		b.s.reqs.RangedGET()
	} else {
		b.s.reqs.GET()
	}
	if etag != "" {
		req.Header.Set("If-Match", etag)
	}
	resp, err := b.s.client.Do(req)
	if err != nil {
		return nil, err
	}
	switch resp.StatusCode {
	case http.StatusOK, http.StatusPartialContent:
	default:
		resp.Body.Close()
		return nil, answerError(resp)
	}
	a := &remote.Answer{Body: resp.Body, Length: resp.ContentLength, ETag: resp.Header.Get("ETag")}
	if resp.StatusCode == http.StatusPartialContent {
		a.ContentRange = resp.Header.Get("Content-Range")
	}
	if t, err := http.ParseTime(resp.Header.Get("Last-Modified")); err == nil {
		a.ModTime = t
	}
	return a, nil
}

// Classify says what an error of a request means.
func (b backend) Classify(err error) remote.Class { return classify(err) }

// Err maps an error with mapErr.
func (b backend) Err(ctx context.Context, op, key string, err error) error {
	return b.s.mapErr(ctx, op, key, err)
}
