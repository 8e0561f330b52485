// Package azure is the zmap backend for datasets stored in Azure Blob
// Storage (or Azurite, its emulator), built on Microsoft's SDK,
// github.com/Azure/azure-sdk-for-go/sdk/storage/azblob, which signs the
// requests (Shared Key or SAS) and parses the service's answers.
//
// A Store is rooted at a blob name prefix inside one container: store key
// "g/v/0.0" is blob "<prefix>/g/v/0.0". Search is List Blobs with
// delimiter "/", paged; ListFlat is List Blobs without one; Get and ReadAt
// are Get Blob (ReadAt with a range); Stat is Get Blob Properties.
//
// What every remote store guarantees comes from zmap/remote, not from
// here: one Pacer slows all requests down when the service answers 429,
// 503 or ServerBusy, every operation ends within the timeout, throttled
// and failed connections are tried again, and a body that breaks off is
// resumed with If-Match. The SDK's own retries are off, so that nothing
// retries twice.
package azure

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path"
	"strings"
	"sync/atomic"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/nczarrfs/nczarrfs/zmap"
	"github.com/nczarrfs/nczarrfs/zmap/remote"
)

// Defaults for Options.
const (
	// DefaultTimeout bounds one store operation, retries included.
	DefaultTimeout = remote.DefaultTimeout
)

// TimeoutEnv names the environment variables that set the timeout when
// Options.Timeout is zero, in order: those of every remote store.
var TimeoutEnv = remote.TimeoutEnv

// Options configure Open. Zero values mean "from the URL and the
// environment, else the default".
type Options struct {
	// EndpointURL is the blob service endpoint, such as Azurite's
	// http://127.0.0.1:10000/devstoreaccount1. It overrides the URL's and
	// the connection string's.
	EndpointURL string
	// Anonymous sends unsigned requests, for public containers, whatever
	// credentials the environment holds (--no-sign-request).
	Anonymous bool
	// Timeout bounds every store operation (one page for Search), retries
	// included. When zero, NCZARRFS_TIMEOUT or NCZARRFS_S3_TIMEOUT (a Go
	// duration such as "10s") sets it, else DefaultTimeout.
	Timeout time.Duration
	// Logger receives access-denied warnings and retry debug lines; nil
	// discards them. Nothing logged contains a secret.
	Logger *slog.Logger
	// Getenv reads the environment; nil means os.Getenv.
	Getenv func(string) string
}

// Parallelism is how many requests a reader of a Store should keep in
// flight: the service answers each after tens of milliseconds, so only
// many at once fill the bandwidth.
const Parallelism = 32

// maxDenialLogs bounds the access-denied warnings one Store writes: a
// mount with bad credentials would otherwise log one per chunk read.
const maxDenialLogs = 10

// Store is a zmap.Store over the blobs under one name prefix of a
// container. Its methods are safe for concurrent use.
type Store struct {
	*remote.Reader // Get, ReadAt, Timeout and the pacing counters

	client   *container.Client
	tr       *http.Transport
	loc      Location
	creds    creds
	endpoint string // the blob service endpoint, for messages
	timeout  time.Duration
	log      *slog.Logger
	denials  atomic.Int64 // access-denied log lines written
}

var (
	_ zmap.Store      = (*Store)(nil)
	_ zmap.FlatLister = (*Store)(nil)
)

// Open returns a Store for the dataset at loc.
//
// Open resolves the credentials (see the package's docs/azure.md) and
// lists at most one blob under the prefix, so that a missing container, an
// endpoint that does not answer and a key that is not accepted are
// reported now, in one line, not at the first read. A 403 is not tried
// again. An empty prefix is not an error: an empty store is a valid store.
func Open(ctx context.Context, loc Location, opts Options) (*Store, error) {
	getenv := opts.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	c, err := resolve(loc, opts.EndpointURL, opts.Anonymous, getenv)
	if err != nil {
		return nil, err
	}
	s := &Store{loc: loc, creds: c, endpoint: c.endpoint, timeout: opts.Timeout, log: opts.Logger}
	if s.timeout <= 0 {
		s.timeout = DefaultTimeout
		for _, name := range TimeoutEnv {
			if v := getenv(name); v != "" {
				d, err := time.ParseDuration(v)
				if err != nil || d <= 0 {
					return nil, fmt.Errorf("azure: %s=%q is not a positive duration such as 10s", name, v)
				}
				s.timeout = d
				break
			}
		}
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.Reader = remote.NewReader(backend{s}, remote.Options{Timeout: s.timeout, Name: "azure", Logger: s.log})

	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DialContext = (&net.Dialer{Timeout: s.timeout, KeepAlive: 30 * time.Second}).DialContext
	tr.ResponseHeaderTimeout = s.timeout
	// Keep a connection for every request in flight.
	tr.MaxIdleConnsPerHost = 2 * Parallelism
	s.tr = tr
	copts := &container.ClientOptions{ClientOptions: policy.ClientOptions{
		Transport: remote.Watch(roundTripper{tr}, s.Pacer(), remote.StallAfter(s.timeout)),
		// remote.Reader retries, within the timeout.
		Retry:     policy.RetryOptions{MaxRetries: -1},
		Telemetry: policy.TelemetryOptions{ApplicationID: "nczarrfs"},
	}}
	containerURL := c.endpoint + "/" + loc.Container
	switch c.kind {
	case sharedKey:
		cred, err := container.NewSharedKeyCredential(c.account, c.key)
		if err != nil {
			return nil, fmt.Errorf("azure: the account key from %s: %w", c.source, err)
		}
		s.client, err = container.NewClientWithSharedKeyCredential(containerURL, cred, copts)
		if err != nil {
			return nil, fmt.Errorf("azure: %w", err)
		}
	case sasToken:
		s.client, err = container.NewClientWithNoCredential(containerURL+"?"+c.sas, copts)
	default:
		s.client, err = container.NewClientWithNoCredential(containerURL, copts)
	}
	if err != nil {
		return nil, fmt.Errorf("azure: %w", err)
	}
	if err := s.check(ctx); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// check lists at most one blob under the prefix. An anonymous listing
// that is refused may still leave reads allowed (a container whose blobs
// only are public): that is logged, not an error.
func (s *Store) check(ctx context.Context) error {
	pager := s.client.NewListBlobsFlatPager(&container.ListBlobsFlatOptions{
		Prefix:     s.listPrefix(""),
		MaxResults: ptr(int32(1)),
	})
	var page container.ListBlobsFlatResponse
	err := s.Do(ctx, func(rctx context.Context) (err error) {
		page, err = pager.NextPage(rctx)
		return err
	})
	notService := func(what string) error {
		return &Error{Store: "azure", Op: "ListBlobs", URL: s.url(""), Err: err,
			Msg: fmt.Sprintf("%s is not a blob service: it answered List Blobs with %s (is --endpoint-url the blob service endpoint?)", s.endpoint, what)}
	}
	if err != nil {
		e := s.mapErr(ctx, "ListBlobs", "", err)
		status, code := statusOf(err)
		if status == http.StatusNotFound && code == "" {
			// Azure says which resource is missing; a web server
			// does not.
			return notService("404 without an error code")
		}
		if s.creds.kind == anonymous && (status == http.StatusForbidden || status == http.StatusNotFound && code == "ResourceNotFound") {
			s.log.Info("azure: listing not permitted without credentials; continuing, reads may still be allowed",
				"container", s.loc.Container, "err", e)
			return nil
		}
		return e
	}
	if page.ContainerName == nil && page.ServiceEndpoint == nil {
		return notService("no EnumerationResults")
	}
	if page.Segment == nil || len(page.Segment.BlobItems) == 0 {
		s.log.Debug("azure: no blobs under the dataset prefix", "location", s.loc.String(), "endpoint", s.endpoint)
	}
	return nil
}

// Credentials says where the Store's credentials come from, such as
// "AZURE_STORAGE_ACCOUNT and AZURE_STORAGE_KEY (account x)". It never
// contains a secret.
func (s *Store) Credentials() string { return s.creds.describe() }

// Endpoint returns the blob service endpoint requests go to.
func (s *Store) Endpoint() string { return s.endpoint }

// Location returns the location the Store was opened with.
func (s *Store) Location() Location { return s.loc }

// Parallelism returns the package's Parallelism (nczarr.Open asks).
func (s *Store) Parallelism() int { return Parallelism }

// Remote reports that every read is a transfer, so that readers fetch only
// the bytes they need where they can, and the listing layer lists flat.
func (s *Store) Remote() bool { return true }

// Get returns the whole blob stored under key. A body that breaks off is
// resumed where it broke.
func (s *Store) Get(ctx context.Context, key string) ([]byte, error) {
	if err := checkKey(key); err != nil {
		return nil, err
	}
	return s.Reader.Get(ctx, key)
}

// ReadAt reads len(p) bytes of the blob under key at offset off with a
// ranged Get Blob, with io.ReaderAt's semantics: all of them, or io.EOF
// where the blob ends, or an error.
func (s *Store) ReadAt(ctx context.Context, key string, p []byte, off int64) (int, error) {
	if err := checkKey(key); err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, fmt.Errorf("azure: ReadAt %s: negative offset %d", s.url(key), off)
	}
	if len(p) == 0 {
		// Nothing to read, but a missing blob is still an error.
		size, err := s.Size(ctx, key)
		if err == nil && off > size {
			err = io.EOF
		}
		return 0, err
	}
	return s.Reader.ReadAt(ctx, key, p, off)
}

// Size returns the size of the blob stored under key.
func (s *Store) Size(ctx context.Context, key string) (int64, error) {
	e, err := s.Stat(ctx, key)
	return e.Size, err
}

// Stat returns the size, Last-Modified time and ETag of the blob stored
// under key (Get Blob Properties).
func (s *Store) Stat(ctx context.Context, key string) (zmap.Entry, error) {
	if err := checkKey(key); err != nil {
		return zmap.Entry{}, err
	}
	bc := s.client.NewBlobClient(s.loc.blob(key))
	var props blob.GetPropertiesResponse
	err := s.Do(ctx, func(rctx context.Context) (err error) {
		props, err = bc.GetProperties(rctx, nil)
		return err
	})
	if err != nil {
		return zmap.Entry{}, s.mapErr(ctx, "GetBlobProperties", key, err)
	}
	if props.ContentLength == nil {
		return zmap.Entry{}, s.mapErr(ctx, "GetBlobProperties", key, errors.New("no Content-Length in the answer"))
	}
	return zmap.Entry{Name: path.Base(key), Size: *props.ContentLength, ModTime: modTime(props.LastModified), ETag: etagOf(props.ETag)}, nil
}

// Close drops the Store's idle connections. The Store must not be used
// after Close.
func (s *Store) Close() error {
	s.tr.CloseIdleConnections()
	return nil
}

// roundTripper sends requests with the transport itself, not through an
// http.Client, whose errors (*url.Error) quote the request's URL: with a
// SAS token, its query is a secret. The service never redirects.
type roundTripper struct{ rt http.RoundTripper }

func (r roundTripper) Do(req *http.Request) (*http.Response, error) { return r.rt.RoundTrip(req) }

// listPrefix is the List Blobs prefix for the children of store key k.
func (s *Store) listPrefix(k string) *string {
	full := s.loc.blob(k)
	if full == "" {
		return nil
	}
	return ptr(full + "/")
}

// url names store key k as az://container@account/blob, for messages.
func (s *Store) url(k string) string {
	l := s.loc
	if l.Account == "" {
		l.Account = s.creds.account
	}
	l.Prefix = l.blob(k)
	return l.String()
}

// checkKey rejects keys that cannot name a blob in a zmap (zmap.ValidKey):
// the zmap contract says they name nothing, so the error wraps
// zmap.ErrNotFound.
func checkKey(key string) error {
	if !zmap.ValidKey(key) {
		return fmt.Errorf("azure: invalid key %q: %w", key, zmap.ErrNotFound)
	}
	return nil
}

// modTime is a blob's Last-Modified time in UTC, in whole seconds as both
// the properties and the listing give it.
func modTime(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.UTC().Truncate(time.Second)
}

// etagOf is an ETag without its quotes, as zmap.Entry.ETag holds it.
func etagOf(e *azcore.ETag) string {
	if e == nil {
		return ""
	}
	return remote.TrimETag(string(*e))
}

func ptr[T any](v T) *T { return &v }

// trimName turns a listed blob name into the name relative to prefix;
// "" when it is not under it.
func trimName(name string, prefix *string) string {
	if prefix == nil {
		return name
	}
	rest, ok := strings.CutPrefix(name, *prefix)
	if !ok {
		return ""
	}
	return rest
}
