// Package s3 is the zmap backend for datasets stored in Amazon S3 or an
// S3-compatible server (MinIO, Ceph, ...), built on aws-sdk-go-v2. What
// remote stores share (pacing, resumed bodies, timeouts) is zmap/remote's.
//
// A Store is rooted at a key prefix inside one bucket: store key "g/v/0.0"
// is object "<prefix>/g/v/0.0". Search is ListObjectsV2 with delimiter "/",
// paged; Get and ReadAt are GetObject (ReadAt with a Range header); Size is
// HeadObject.
//
// Configuration follows the SDK's default chain (environment variables,
// ~/.aws/config and ~/.aws/credentials, AWS_CA_BUNDLE, ...), overridden by
// the URL and by Options. Every operation is bounded by Options.Timeout;
// throttling, 5xx answers and broken connections are retried with
// exponential backoff inside that bound. A Store keeps no failure state:
// once the server answers again, so do its methods.
package s3

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path"
	"strings"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go/logging"

	"github.com/nczarrfs/nczarrfs/zmap"
	"github.com/nczarrfs/nczarrfs/zmap/remote"
)

// Defaults for Options.
const (
	// DefaultTimeout bounds one store operation, retries included.
	DefaultTimeout = 30 * time.Second
	// DefaultMaxAttempts is how many times one request is tried.
	DefaultMaxAttempts = 5
	// DefaultRegion is used when neither the URL, Options nor the AWS
	// configuration name a region. Custom endpoints such as MinIO accept it.
	DefaultRegion = "us-east-1"
	// TimeoutEnv names the environment variable that sets the timeout
	// when Options.Timeout is zero.
	TimeoutEnv = "NCZARRFS_S3_TIMEOUT"
)

// Options configure Open. Zero values mean "from the URL, else from the
// AWS configuration, else the default".
type Options struct {
	// EndpointURL is the base URL of an S3-compatible server
	// (http://127.0.0.1:9000). It overrides the URL's endpoint; requests
	// to it use path-style addressing.
	EndpointURL string
	// Region overrides the URL's and the AWS configuration's region.
	Region string
	// Profile overrides the URL's awsprofile= and AWS_PROFILE.
	Profile string
	// NoSignRequest sends anonymous requests, for public buckets.
	NoSignRequest bool
	// Timeout bounds every store operation (one page for Search),
	// retries included. When zero, the environment variable
	// NCZARRFS_S3_TIMEOUT (a Go duration such as "10s") sets it, else
	// DefaultTimeout.
	Timeout time.Duration
	// MaxAttempts is how many times a request is tried before its error is
	// returned; DefaultMaxAttempts when zero.
	MaxAttempts int
	// Logger receives access-denied warnings and retry debug lines; nil
	// discards them. Nothing logged contains a secret.
	Logger *slog.Logger
}

// Store is a zmap.Store over the objects under one key prefix of a bucket.
// Its methods are safe for concurrent use.
type Store struct {
	client   *s3.Client
	http     aws.HTTPClient
	loc      Location // Bucket and Prefix are used; the rest is informative
	endpoint string   // where requests go, for messages
	creds    string   // where the credentials come from, for messages
	timeout  time.Duration
	log      *slog.Logger
	denials  atomic.Int64 // access-denied log lines written
	// r paces, bounds, retries and resumes the Store's requests.
	r *remote.Reader
}

var _ zmap.Store = (*Store)(nil)

// maxDenialLogs bounds the access-denied warnings one Store writes: a
// mount with bad credentials would otherwise log one per chunk read.
const maxDenialLogs = 10

// Open returns a Store for the dataset at loc.
//
// Open loads the AWS configuration, resolves credentials (so that missing
// ones are reported now, not at the first read), and lists at most one key
// under the prefix to check that the bucket exists, the endpoint answers
// and the credentials are accepted. A bucket that refuses listing but may
// still allow reads (AccessDenied on ListObjectsV2) is not an error here,
// and neither is an empty prefix (an empty store is a valid store).
func Open(ctx context.Context, loc Location, opts Options) (*Store, error) {
	if loc.Bucket == "" {
		return nil, errors.New("s3: no bucket")
	}
	s := &Store{loc: loc, timeout: opts.Timeout, log: opts.Logger}
	if s.timeout <= 0 {
		s.timeout = DefaultTimeout
		if v := os.Getenv(TimeoutEnv); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 {
				return nil, fmt.Errorf("s3: %s=%q is not a positive duration such as 10s", TimeoutEnv, v)
			}
			s.timeout = d
		}
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.r = remote.NewReader(backend{s}, remote.Options{Timeout: s.timeout, MaxInFlight: maxInFlight, Name: "s3", Logger: s.log})
	attempts := opts.MaxAttempts
	if attempts <= 0 {
		attempts = DefaultMaxAttempts
	}

	endpoint := loc.Endpoint
	if opts.EndpointURL != "" {
		ep, err := checkEndpoint(opts.EndpointURL)
		if err != nil {
			return nil, err
		}
		endpoint = ep
	}
	profile := loc.Profile
	if opts.Profile != "" {
		profile = opts.Profile
	}
	region := loc.Region
	if opts.Region != "" {
		region = opts.Region
	}
	anonymous := opts.NoSignRequest

	// The SDK's own buildable client keeps AWS_CA_BUNDLE working: the
	// config loader can only add a CA bundle to this type.
	httpClient := awshttp.NewBuildableClient().
		WithDialerOptions(func(d *net.Dialer) { d.Timeout = s.timeout }).
		WithTransportOptions(func(t *http.Transport) {
			t.ResponseHeaderTimeout = s.timeout
			// Keep a connection for every request in flight.
			t.MaxIdleConnsPerHost = 2 * Parallelism
		}).
		WithReadTimeout(s.timeout)
	loadOpts := []func(*config.LoadOptions) error{
		config.WithHTTPClient(httpClient),
		config.WithRetryer(func() aws.Retryer {
			return &loggingRetryer{
				Standard: retry.NewStandard(func(o *retry.StandardOptions) {
					// An untrusted certificate stays untrusted: say so
					// at once instead of retrying until the timeout.
					o.Retryables = append([]retry.IsErrorRetryable{retry.IsErrorRetryableFunc(certificateError)}, o.Retryables...)
					// S3 throttles with 503 SlowDown, some compatible
					// servers with a bare 429.
					o.Retryables = append(o.Retryables, retry.RetryableHTTPStatusCode{
						Codes: map[int]struct{}{http.StatusTooManyRequests: {}},
					})
					o.MaxAttempts = attempts
					o.MaxBackoff = time.Second
					o.Backoff = backoff{}
					// No client-side retry quota: after a long outage it
					// would keep failing requests without retrying
					// them. The per-operation timeout bounds retries.
					o.RateLimiter = ratelimit.None
				}),
				log: s.log,
			}
		}),
	}
	if profile != "" {
		loadOpts = append(loadOpts, config.WithSharedConfigProfile(profile))
	}
	if region != "" {
		loadOpts = append(loadOpts, config.WithRegion(region))
	}
	if anonymous {
		loadOpts = append(loadOpts, config.WithCredentialsProvider(aws.AnonymousCredentials{}))
	}
	// The SDK's own log lines (checksum notes, deprecation warnings) go
	// to our logger, never straight to stderr.
	loadOpts = append(loadOpts, config.WithLogger(logging.LoggerFunc(func(c logging.Classification, format string, v ...any) {
		level := slog.LevelDebug
		if c == logging.Warn {
			level = slog.LevelWarn
		}
		s.log.Log(context.Background(), level, "s3: sdk: "+fmt.Sprintf(format, v...))
	})))
	cfg, err := config.LoadDefaultConfig(ctx, loadOpts...)
	if err != nil {
		return nil, fmt.Errorf("s3: loading AWS configuration: %w", err)
	}
	if cfg.Region == "" {
		cfg.Region = DefaultRegion
	}
	if bc, ok := cfg.HTTPClient.(*awshttp.BuildableClient); ok {
		// Freeze so Close can drop idle connections of exactly the
		// client requests use.
		cfg.HTTPClient = bc.Freeze()
	}
	s.http = cfg.HTTPClient
	// Every answer tells the pacer, and a body that sends nothing for a
	// fifth of the timeout is given up (and resumed, or retried).
	cfg.HTTPClient = remote.Watch(cfg.HTTPClient, s.r.Pacer(), remote.StallAfter(s.timeout))

	s.client = s3.NewFromConfig(cfg, func(o *s3.Options) {
		if endpoint != "" {
			o.BaseEndpoint = aws.String(endpoint)
		}
		if o.BaseEndpoint != nil {
			// Set here or by AWS_ENDPOINT_URL(_S3): a custom server,
			// which seldom has per-bucket DNS names.
			o.UsePathStyle = true
			endpoint = *o.BaseEndpoint
		} else if loc.Insecure {
			o.EndpointOptions.DisableHTTPS = true
		}
	})
	if endpoint != "" {
		s.endpoint = endpoint
	} else {
		s.endpoint = "Amazon S3 in " + cfg.Region
	}

	if anonymous {
		s.creds = "none (anonymous requests, --no-sign-request)"
	} else if cfg.Credentials == nil {
		return nil, errors.New("s3: no AWS credentials provider configured")
	} else {
		cctx, cancel := context.WithTimeout(ctx, s.timeout)
		c, err := cfg.Credentials.Retrieve(cctx)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("s3: no usable AWS credentials (set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, use --profile, or --no-sign-request for a public bucket): %w", err)
		}
		s.creds = describeCredentials(c.Source, sharedProfile(cfg))
	}

	if err := s.check(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// check lists at most one key under the prefix.
func (s *Store) check(ctx context.Context) error {
	ctx = withLastAnswer(ctx)
	rctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	out, err := s.client.ListObjectsV2(rctx, &s3.ListObjectsV2Input{
		Bucket:  aws.String(s.loc.Bucket),
		Prefix:  aws.String(s.listPrefix("")),
		MaxKeys: aws.Int32(1),
	})
	if err != nil {
		e := s.mapErr(ctx, "ListObjectsV2", "", err)
		var se *Error
		if errors.As(e, &se) && se.Code == "AccessDenied" {
			s.log.Info("s3: listing not permitted; continuing, reads may still be allowed",
				"bucket", s.loc.Bucket, "credentials", s.creds)
			return nil
		}
		return e
	}
	if len(out.Contents) == 0 {
		// Not an error: an empty store is a valid store. Whoever opens
		// a dataset finds out when its root metadata is missing.
		s.log.Debug("s3: no objects under the dataset prefix", "location", s.loc.String(), "endpoint", s.endpoint)
	}
	return nil
}

// Credentials says where the Store's credentials come from, such as
// "environment variables" or `shared config profile "x"`. It never
// contains a secret.
func (s *Store) Credentials() string { return s.creds }

// Endpoint says where requests go: the custom endpoint URL, or
// "Amazon S3 in <region>".
func (s *Store) Endpoint() string { return s.endpoint }

// Timeout returns the bound on each operation (Options.Timeout).
func (s *Store) Timeout() time.Duration { return s.timeout }

// Location returns the location the Store was opened with.
func (s *Store) Location() Location { return s.loc }

// Parallelism is how many requests a reader of a Store should keep in
// flight: S3 answers each after tens of milliseconds, so only many at
// once fill the bandwidth.
const Parallelism = 32

// maxInFlight bounds the operations a Store has in flight, and is where
// its pacer starts: above what readers keep in flight (Parallelism, plus
// lookups and listings), so that it only binds when the server throttles.
const maxInFlight = 2 * Parallelism

// Throttled returns how many answers asked the Store to slow down (503,
// 429), retried ones included.
func (s *Store) Throttled() int64 { return s.r.Throttled() }

// RequestLimit returns the bound on operations in flight now, and the
// lowest it has been.
func (s *Store) RequestLimit() (now, lowest int) { return s.r.RequestLimit() }

// Resumed returns how many bodies were resumed after they broke off, and
// how many reads failed because the object changed meanwhile.
func (s *Store) Resumed() (resumed, changed int64) { return s.r.Resumed() }

// Parallelism returns the package's Parallelism (nczarr.Open asks).
func (s *Store) Parallelism() int { return Parallelism }

// Remote reports that every read is a transfer, so that readers fetch
// only the bytes they need where they can (nczarr asks).
func (s *Store) Remote() bool { return true }

// Size returns the size of the object stored under key (HeadObject).
func (s *Store) Size(ctx context.Context, key string) (int64, error) {
	e, err := s.Stat(ctx, key)
	return e.Size, err
}

// Stat returns the size and LastModified of the object stored under key
// (HeadObject).
func (s *Store) Stat(ctx context.Context, key string) (zmap.Entry, error) {
	ctx = withLastAnswer(ctx)
	if err := checkKey(key); err != nil {
		return zmap.Entry{}, err
	}
	var out *s3.HeadObjectOutput
	err := s.r.Do(ctx, func(rctx context.Context) (err error) {
		out, err = s.client.HeadObject(rctx, &s3.HeadObjectInput{
			Bucket: aws.String(s.loc.Bucket),
			Key:    aws.String(s.loc.key(key)),
		})
		return err
	})
	if err != nil {
		return zmap.Entry{}, s.mapErr(ctx, "HeadObject", key, err)
	}
	if out.ContentLength == nil {
		return zmap.Entry{}, s.mapErr(ctx, "HeadObject", key, errors.New("no Content-Length in the answer"))
	}
	return zmap.Entry{Name: path.Base(key), Size: *out.ContentLength, ModTime: modTime(out.LastModified)}, nil
}

// modTime is an object's LastModified in whole seconds, as HeadObject
// reports it (ListObjectsV2 has milliseconds), so that both agree.
func modTime(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.UTC().Truncate(time.Second)
}

// nextPage fetches one listing page within the request timeout, decoded
// by decodeListsFast.
func (s *Store) nextPage(ctx context.Context, pager *s3.ListObjectsV2Paginator) (*s3.ListObjectsV2Output, error) {
	// The paginator moves on only after a success: a throttled page
	// is asked again.
	var page *s3.ListObjectsV2Output
	err := s.r.Do(ctx, func(rctx context.Context) (err error) {
		page, err = pager.NextPage(rctx, s3.WithAPIOptions(decodeListsFast))
		return err
	})
	return page, err
}

// Close drops the Store's idle connections. The Store must not be used
// after Close.
func (s *Store) Close() error {
	if c, ok := s.http.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
	return nil
}

// listPrefix is the ListObjectsV2 prefix for the children of store key k.
func (s *Store) listPrefix(k string) string {
	full := s.loc.key(k)
	if full == "" {
		return ""
	}
	return full + "/"
}

// url names store key k as s3://bucket/full/key, for messages.
func (s *Store) url(k string) string {
	full := s.loc.key(k)
	if full == "" {
		return "s3://" + s.loc.Bucket
	}
	return "s3://" + s.loc.Bucket + "/" + full
}

// checkKey rejects keys that cannot name an object in a zmap: empty, or
// with an empty, "." or ".." segment (which covers leading and trailing
// slashes). S3 would take such keys literally; the zmap contract says they
// name nothing, so the error wraps zmap.ErrNotFound.
func checkKey(key string) error {
	if !zmap.ValidKey(key) {
		return fmt.Errorf("s3: invalid key %q: %w", key, zmap.ErrNotFound)
	}
	return nil
}

// checkEndpoint validates an --endpoint-url value and returns it without a
// trailing slash.
func checkEndpoint(ep string) (string, error) {
	u, err := url.Parse(ep)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("s3: endpoint URL %q must look like http(s)://host[:port]", ep)
	}
	if u.User != nil {
		return "", errors.New("s3: endpoint URL must not contain user information")
	}
	return strings.TrimSuffix(ep, "/"), nil
}

// sharedProfile returns the shared-config profile the configuration was
// loaded with.
func sharedProfile(cfg aws.Config) string {
	for _, src := range cfg.ConfigSources {
		if sc, ok := src.(config.SharedConfig); ok && sc.Profile != "" {
			return sc.Profile
		}
	}
	return "default"
}

// describeCredentials turns the SDK's credentials source name into words
// for messages.
func describeCredentials(source, profile string) string {
	switch {
	case source == config.CredentialsSourceName:
		return "environment variables (AWS_ACCESS_KEY_ID)"
	case strings.HasPrefix(source, "SharedConfigCredentials"):
		file := strings.TrimSpace(strings.TrimPrefix(source, "SharedConfigCredentials:"))
		if file == "" {
			return fmt.Sprintf("shared config profile %q", profile)
		}
		return fmt.Sprintf("shared config profile %q in %s", profile, file)
	case source == "AssumeRoleProvider":
		return fmt.Sprintf("assumed role of shared config profile %q", profile)
	case source == "SSOProvider":
		return fmt.Sprintf("SSO login of shared config profile %q", profile)
	case source == "ProcessProvider":
		return fmt.Sprintf("credential_process of shared config profile %q", profile)
	case source == "WebIdentityCredentials":
		return "web identity token (AWS_WEB_IDENTITY_TOKEN_FILE)"
	case source == "EC2RoleProvider":
		return "EC2 instance role"
	case source == "CredentialsEndpointProvider":
		return "container credentials endpoint"
	case source == "":
		return "unknown source"
	}
	return source
}

// backoff is the SDK retryer's wait between attempts: remote.Backoff.
type backoff struct{}

func (backoff) BackoffDelay(attempt int, _ error) (time.Duration, error) {
	return remote.Backoff(attempt), nil
}

// loggingRetryer is the standard retryer, logging each retry at debug level.
type loggingRetryer struct {
	*retry.Standard
	log *slog.Logger
}

// GetRetryToken notes err, the answer about to be retried, in the
// operation's lastAnswer, so that if the timeout ends the retries the error
// can say what the server last answered.
func (r *loggingRetryer) GetRetryToken(ctx context.Context, err error) (func(error) error, error) {
	if a, ok := ctx.Value(lastAnswerKey{}).(*lastAnswer); ok {
		a.set(err)
	}
	return r.Standard.GetRetryToken(ctx, err)
}

func (r *loggingRetryer) RetryDelay(attempt int, err error) (time.Duration, error) {
	d, derr := r.Standard.RetryDelay(attempt, err)
	if derr == nil {
		r.log.Debug("s3: retrying request", "attempt", attempt+1, "delay", d, "err", err)
	}
	return d, derr
}
