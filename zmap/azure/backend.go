package azure

import (
	"context"
	"errors"
	"math"
	"strconv"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"

	"github.com/nczarrfs/nczarrfs/zmap/remote"
)

// backend is the Store's requests as remote.Reader sends them.
type backend struct{ s *Store }

var _ remote.Backend = backend{}

// Open sends one Get Blob of the blob under key: the whole blob when rng
// is nil, else that range (x-ms-range); If-Match ifMatch when it is not "".
//
// The whole blob is asked for as the range from byte 0 to beyond any end,
// so that the answer's Content-Range gives the blob's size even when no
// Content-Length does (a proxy that ends the body with the connection):
// a body cut short is then resumed, never taken for the whole. An empty
// blob has no such range (416), and is asked for again without one.
func (b backend) Open(ctx context.Context, key string, rng *remote.Range, ifMatch string) (*remote.Answer, error) {
	whole := rng == nil
	if whole {
		rng = &remote.Range{Off: 0, Len: math.MaxInt64}
	}
	a, err := b.open(ctx, key, rng, ifMatch)
	if whole && b.Classify(err) == remote.RangeNotSatisfiable {
		a, err = b.open(ctx, key, nil, ifMatch)
	}
	return a, err
}

func (b backend) open(ctx context.Context, key string, rng *remote.Range, ifMatch string) (*remote.Answer, error) {
	opts := &blob.DownloadStreamOptions{}
	if rng != nil {
		opts.Range = blob.HTTPRange{Offset: rng.Off}
		if rng.Len >= 0 {
			opts.Range.Count = rng.Len
		}
	}
	if ifMatch != "" {
		etag := azcore.ETag(ifMatch)
		opts.AccessConditions = &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfMatch: &etag}}
	}
	// The request lives as long as its body: closing the body ends it.
	ctx, cancel := context.WithCancel(ctx)
	resp, err := b.s.client.NewBlobClient(b.s.loc.blob(key)).DownloadStream(ctx, opts)
	if err != nil {
		cancel()
		return nil, err
	}
	a := &remote.Answer{Body: cancelOnClose{resp.Body, cancel}, Length: -1}
	if resp.ContentLength != nil {
		a.Length = *resp.ContentLength
	}
	if resp.ContentRange != nil {
		a.ContentRange = *resp.ContentRange
		start, end, _, err := remote.ParseContentRange(a.ContentRange)
		switch {
		case rng != nil && emptyRange(a.ContentRange):
			// Azurite answers a range that starts at the end with 206
			// and "bytes N-(N-1)/N"; Azure with 416, which this is.
			a.Body.Close()
			return nil, errRangeNotSatisfiable
		case err == nil && a.Length < 0:
			// No Content-Length: the range says how many bytes come.
			a.Length = end - start + 1
		}
	}
	if resp.ETag != nil {
		a.ETag = string(*resp.ETag)
	}
	if resp.LastModified != nil {
		a.ModTime = *resp.LastModified
	}
	return a, nil
}

// Classify says what an error of the SDK means (classify).
func (b backend) Classify(err error) remote.Class {
	return classify(err, b.s.creds.kind == anonymous)
}

// Err maps an error of a read (mapErr).
func (b backend) Err(ctx context.Context, op, key string, err error) error {
	if op == "GET" {
		op = "GetBlob"
	}
	return b.s.mapErr(ctx, op, key, err)
}

// cancelOnClose is a body whose Close also cancels its request's context.
type cancelOnClose struct {
	body interface {
		Read([]byte) (int, error)
		Close() error
	}
	cancel context.CancelFunc
}

func (c cancelOnClose) Read(p []byte) (int, error) { return c.body.Read(p) }

func (c cancelOnClose) Close() error {
	err := c.body.Close()
	c.cancel()
	return err
}

// errRangeNotSatisfiable is the error of a range that starts at or past
// the blob's end.
var errRangeNotSatisfiable = errors.New("the range starts at or past the end of the blob")

// emptyRange reports whether a Content-Range value "bytes START-END/SIZE"
// holds no byte: END before START, or START at or past SIZE.
func emptyRange(cr string) bool {
	v, ok := strings.CutPrefix(cr, "bytes ")
	if !ok {
		return false
	}
	v, total, _ := strings.Cut(v, "/")
	first, last, _ := strings.Cut(v, "-")
	start, err1 := strconv.ParseInt(first, 10, 64)
	end, err2 := strconv.ParseInt(last, 10, 64)
	size, err3 := strconv.ParseInt(total, 10, 64)
	return err1 == nil && err2 == nil && (end < start || err3 == nil && start >= size)
}
