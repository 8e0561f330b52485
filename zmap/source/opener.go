package source

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"path"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/nczarrfs/nczarrfs/zmap"
	"github.com/nczarrfs/nczarrfs/zmap/azure"
	"github.com/nczarrfs/nczarrfs/zmap/file"
	zhttp "github.com/nczarrfs/nczarrfs/zmap/http"
	"github.com/nczarrfs/nczarrfs/zmap/s3"
)

// Endpoint overrides where the URLs that start with Prefix are read: for
// s3://, gs:// and gs3:// URLs the S3 endpoint, for Azure URLs the blob
// service endpoint, and for http(s):// URLs the part of the URL that
// Prefix matched (a mirror). It is the PREFIX=ENDPOINT_URL of
// --references-endpoint and --virtual-chunks.
type Endpoint struct {
	Prefix string
	URL    string
}

// ParseEndpoint reads PREFIX=ENDPOINT_URL.
func ParseEndpoint(s string) (Endpoint, error) {
	p, u, ok := strings.Cut(s, "=")
	if !ok || p == "" || u == "" {
		return Endpoint{}, fmt.Errorf("%q is not PREFIX=ENDPOINT_URL", s)
	}
	pu, err := url.Parse(p)
	if err != nil || pu.Scheme == "" {
		return Endpoint{}, fmt.Errorf("%q: the prefix %q is not a URL (s3://bucket/, https://host/...)", s, p)
	}
	eu, err := url.Parse(u)
	if err != nil || eu.Scheme != "http" && eu.Scheme != "https" || eu.Host == "" {
		return Endpoint{}, fmt.Errorf("%q: the endpoint %q is not an http(s)://host URL", s, Redact(u))
	}
	return Endpoint{Prefix: p, URL: u}, nil
}

// Policy says which URLs an Opener may open, and where.
type Policy struct {
	// AllowLocal allows file:// URLs and absolute paths: for reference
	// sets that are themselves local, or when the user says so
	// (--allow-local-references). Without it they fail with an error
	// wrapping zmap.ErrPermission.
	AllowLocal bool
	// Endpoints override the endpoints of the URLs they match; the
	// longest matching prefix wins.
	Endpoints []Endpoint
}

// Opener implements zmap.Opener over the backends of this package: one
// store per bucket, container, web host or the local file system, shared
// by every URL there and kept until Close, each with the options the mount
// has for its scheme. Its methods are safe for concurrent use.
type Opener struct {
	opts   Options
	policy Policy

	mu     sync.Mutex
	stores map[string]*opened // GUARDED_BY(mu): by identity

	get, ranged, head atomic.Int64
}

var _ zmap.Opener = (*Opener)(nil)

// opened is a store being opened, or opened.
type opened struct {
	done chan struct{}
	st   zmap.Store
	err  error
}

// NewOpener returns an Opener that opens stores with opts (their
// CacheDir is not used) under policy.
func NewOpener(opts Options, policy Policy) *Opener {
	opts.CacheDir = ""
	return &Opener{opts: opts, policy: policy, stores: map[string]*opened{}}
}

// Open returns the store that holds the object of rawURL, and its key
// there. A local URL without the policy's leave fails with an error
// wrapping zmap.ErrPermission.
func (o *Opener) Open(ctx context.Context, rawURL string) (zmap.Store, string, error) {
	raw, override := o.override(rawURL)
	if !strings.Contains(raw, "://") {
		return o.openLocal(raw, rawURL)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, "", fmt.Errorf("%q is not a URL", Redact(rawURL))
	}
	if azure.IsURL(u) {
		loc, err := azure.LocationOf(u)
		if err != nil {
			return nil, "", fmt.Errorf("%s: %w", Redact(rawURL), err)
		}
		key := loc.Prefix
		loc.Prefix = ""
		aopts := o.opts.Azure
		if override != "" {
			aopts.EndpointURL = override
		}
		id := strings.Join([]string{"azure", aopts.EndpointURL, loc.Endpoint, loc.Account, loc.Container, loc.SAS}, "\x00")
		st, err := o.store(ctx, id, func() (zmap.Store, error) {
			if aopts.Logger == nil {
				aopts.Logger = o.opts.S3.Logger
			}
			return azure.Open(ctx, loc, aopts)
		})
		return st, key, checkObjectKey(rawURL, key, err)
	}
	switch strings.ToLower(u.Scheme) {
	case "file":
		if u.Host != "" && u.Host != "localhost" {
			return nil, "", fmt.Errorf("%s: file URLs name no host", Redact(rawURL))
		}
		return o.openLocal(u.Path, rawURL)
	case "s3", "gs", "gs3":
		loc, err := s3.LocationOf(u)
		if err != nil {
			return nil, "", fmt.Errorf("%s: %w", Redact(rawURL), err)
		}
		key := loc.Prefix
		loc.Prefix = ""
		sopts := o.opts.S3
		if override != "" {
			sopts.EndpointURL = override
		}
		id := strings.Join([]string{"s3", sopts.EndpointURL, loc.Endpoint, loc.Bucket}, "\x00")
		st, err := o.store(ctx, id, func() (zmap.Store, error) { return s3.Open(ctx, loc, sopts) })
		return st, key, checkObjectKey(rawURL, key, err)
	case "http", "https":
		if u.User != nil || u.RawQuery != "" || u.Host == "" {
			return nil, "", fmt.Errorf("%s: an http(s) reference needs a host, and no user information or query", Redact(rawURL))
		}
		base := strings.ToLower(u.Scheme) + "://" + u.Host
		key := strings.TrimPrefix(u.Path, "/")
		st, err := o.store(ctx, "http\x00"+base, func() (zmap.Store, error) {
			return zhttp.Open(ctx, base, zhttp.Options{Raw: true, Timeout: o.opts.S3.Timeout, Logger: o.opts.S3.Logger})
		})
		return st, key, checkObjectKey(rawURL, key, err)
	}
	return nil, "", fmt.Errorf("%s: unsupported scheme %q (use file, s3, gs, gs3, az, abfs, http or https)", Redact(rawURL), u.Scheme)
}

// override applies the longest matching Endpoint: it returns the URL to
// open (rewritten for http(s)) and the endpoint of an s3 or Azure URL.
func (o *Opener) override(raw string) (string, string) {
	var best Endpoint
	for _, e := range o.policy.Endpoints {
		if strings.HasPrefix(raw, e.Prefix) && len(e.Prefix) > len(best.Prefix) {
			best = e
		}
	}
	if best.Prefix == "" {
		return raw, ""
	}
	lower := strings.ToLower(raw)
	if strings.HasPrefix(lower, "http://") || strings.HasPrefix(lower, "https://") {
		if u, err := url.Parse(raw); err == nil && !azure.IsURL(u) {
			return strings.TrimSuffix(best.URL, "/") + "/" + strings.TrimPrefix(raw[len(best.Prefix):], "/"), ""
		}
	}
	return raw, best.URL
}

// checkObjectKey fails a URL that names a bucket or host, not an object.
func checkObjectKey(raw, key string, err error) error {
	if err != nil {
		return err
	}
	if !zmap.ValidKey(key) {
		return fmt.Errorf("%s names no object", Redact(raw))
	}
	return nil
}

// openLocal opens the local file system for an absolute path.
func (o *Opener) openLocal(p, raw string) (zmap.Store, string, error) {
	if !o.policy.AllowLocal {
		return nil, "", fmt.Errorf("%s: a reference to a local file from a remote reference set (--allow-local-references allows it): %w", Redact(raw), zmap.ErrPermission)
	}
	if !strings.HasPrefix(p, "/") {
		return nil, "", fmt.Errorf("%s: a local path must be absolute", raw)
	}
	key := strings.TrimPrefix(path.Clean(p), "/")
	st, err := o.store(context.Background(), "file", func() (zmap.Store, error) {
		return file.OpenWith("/", file.Options{FollowLinks: true})
	})
	return st, key, checkObjectKey(raw, key, err)
}

// store returns the store of identity id, opening it with open once.
func (o *Opener) store(ctx context.Context, id string, open func() (zmap.Store, error)) (zmap.Store, error) {
	o.mu.Lock()
	if o.stores == nil {
		o.mu.Unlock()
		return nil, errors.New("source: the Opener is closed")
	}
	op := o.stores[id]
	if op == nil {
		op = &opened{done: make(chan struct{})}
		o.stores[id] = op
		o.mu.Unlock()
		st, err := open()
		if err == nil {
			st = &counted{Store: st, o: o}
		}
		op.st, op.err = st, err
		close(op.done)
		if err != nil {
			o.mu.Lock()
			if o.stores[id] == op {
				delete(o.stores, id) // the next caller tries again
			}
			o.mu.Unlock()
		}
	} else {
		o.mu.Unlock()
	}
	select {
	case <-op.done:
		return op.st, op.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// RequestKinds returns the reads sent through the Opener's stores: a Get
// counts as a GET, a ReadAt as a ranged GET, a Size or Stat as a HEAD.
func (o *Opener) RequestKinds() (get, rangedGET, head, list int64) {
	return o.get.Load(), o.ranged.Load(), o.head.Load(), 0
}

// Close closes every store opened.
func (o *Opener) Close() error {
	o.mu.Lock()
	stores := o.stores
	o.stores = nil
	o.mu.Unlock()
	var errs []error
	for _, op := range stores {
		<-op.done
		if op.st != nil {
			errs = append(errs, op.st.Close())
		}
	}
	return errors.Join(errs...)
}

// counted counts the reads of a store for the Opener.
type counted struct {
	zmap.Store
	o *Opener
}

func (c *counted) Unwrap() zmap.Store { return c.Store }

func (c *counted) Get(ctx context.Context, key string) ([]byte, error) {
	c.o.get.Add(1)
	return c.Store.Get(ctx, key)
}

func (c *counted) ReadAt(ctx context.Context, key string, p []byte, off int64) (int, error) {
	c.o.ranged.Add(1)
	return c.Store.ReadAt(ctx, key, p, off)
}

func (c *counted) Size(ctx context.Context, key string) (int64, error) {
	c.o.head.Add(1)
	return c.Store.Size(ctx, key)
}

func (c *counted) Stat(ctx context.Context, key string) (zmap.Entry, error) {
	c.o.head.Add(1)
	return c.Store.Stat(ctx, key)
}
