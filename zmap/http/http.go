// Package http is the zmap backend for Zarr datasets served by a plain
// HTTP(S) server (a static file server, a CDN, a bucket's public web
// endpoint), which cannot be listed.
//
// The hierarchy comes from consolidated metadata: .zmetadata for Zarr v2,
// or consolidated_metadata in the root zarr.json for v3 (a root array's
// zarr.json alone is a whole hierarchy too). Without either, Open fails:
// nothing else says which objects exist. Search answers from it: every
// group and array, the metadata objects the server has (found with HEAD),
// and, in an array's folders, the chunk objects the server has, found by
// probing every chunk key of the array's grid with HEAD (once per probe
// window, ProbeWindow). A listed name therefore always opens, and a chunk
// the server does not have (404) is not listed and reads as the fill value.
// Stat, Get and ReadAt ask the server for any key, listed or not, but for
// a Zarr metadata object (.zarray, .zgroup, .zattrs, zarr.json) that the
// consolidated metadata does not declare, which names nothing.
//
// Get and ReadAt go through zmap/remote: paced, bounded by the timeout,
// retried on 429, 503 and broken connections, and resumed with a ranged
// If-Match request when a body breaks off and the server sent an ETag.
// Servers that ignore Range (they answer 200 with the whole object) or send
// no ETag still read correctly; a body that breaks off on such a server
// fails the read instead of being resumed.
package http

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nczarrfs/nczarrfs/zmap"
	"github.com/nczarrfs/nczarrfs/zmap/remote"
)

// Options configure Open.
type Options struct {
	// Timeout bounds every operation, retries and resumed bodies
	// included; when zero, the environment's or the default
	// (remote.EnvTimeout).
	Timeout time.Duration
	// Logger receives debug lines; nil discards them.
	Logger *slog.Logger
	// Transport sends the requests; a new http.Transport when nil (tests
	// give one that trusts their server's certificate).
	Transport http.RoundTripper
	// Consolidated reads the consolidated metadata (required unless
	// Raw): nczarr/consolidated.Parse.
	Consolidated Consolidated
	// Raw opens the server as a place of plain objects (the files a
	// kerchunk reference set points into), with no hierarchy: no
	// consolidated metadata is read, Search fails, and every key is
	// asked of the server.
	Raw bool
}

// Parallelism is how many requests a reader of a Store should keep in
// flight, as for S3.
const Parallelism = 32

// ProbeWindow is how long the chunk objects probed for one array answer
// the listings of its folders: a walk of an array's folders (ls -R) probes
// it once. Longer keeping is the listing cache's (--metadata-ttl).
const ProbeWindow = 10 * time.Second

// MaxProbe is the most chunk keys an array may have for its folders to be
// listed: each is a HEAD request.
const MaxProbe = 100_000

// Store is a zmap.Store over a dataset served at one base URL. Its
// methods are safe for concurrent use.
type Store struct {
	base   *url.URL // the dataset root, path without a trailing slash
	host   string   // scheme://host, for messages
	client remote.Doer
	tr     http.RoundTripper
	r      *remote.Reader
	log    *slog.Logger
	h      *hierarchy
	reqs   remote.Requests
	// consolidated reads the consolidated metadata (Options).
	consolidated Consolidated

	mu     sync.Mutex
	probes map[string]*probe // GUARDED_BY(mu): by array path
	now    func() time.Time  // the clock probes expire by (tests set it)
	window time.Duration     // ProbeWindow (tests set it)
}

var _ zmap.Store = (*Store)(nil)

// Open returns a Store for the dataset at base, an http or https URL (its
// fragment is ignored), after reading its consolidated metadata: a dataset
// without any is refused, with an error saying so.
func Open(ctx context.Context, base string, opts Options) (*Store, error) {
	u, err := url.Parse(base)
	if err != nil {
		return nil, fmt.Errorf("http: invalid URL: %w", errors.Unwrap(err))
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("http: %s is not an http(s)://host/path URL", base)
	}
	if u.User != nil {
		return nil, errors.New("http: URL must not contain user information")
	}
	if u.RawQuery != "" || u.ForceQuery {
		return nil, errors.New("http: URL must not have a query string")
	}
	u.Fragment, u.RawFragment = "", ""
	u.Path = strings.TrimSuffix(u.Path, "/")
	u.RawPath = ""
	if opts.Timeout <= 0 {
		if opts.Timeout, err = remote.EnvTimeout(); err != nil {
			return nil, fmt.Errorf("http: %w", err)
		}
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	tr := opts.Transport
	if tr == nil {
		tr = &http.Transport{
			Proxy:                 http.ProxyFromEnvironment,
			DialContext:           (&net.Dialer{Timeout: opts.Timeout}).DialContext,
			TLSHandshakeTimeout:   opts.Timeout,
			ResponseHeaderTimeout: opts.Timeout,
			MaxIdleConnsPerHost:   2 * Parallelism,
			// Bytes as stored: ranges count them, not those of a
			// transparently decompressed body.
			DisableCompression: true,
		}
	}
	pacer := remote.NewPacer(remote.DefaultMaxInFlight)
	s := &Store{
		base:   u,
		host:   u.Scheme + "://" + u.Host,
		tr:     tr,
		log:    opts.Logger,
		probes: map[string]*probe{},
		now:    time.Now,
		window: ProbeWindow,

		consolidated: opts.Consolidated,
	}
	s.client = remote.Watch(&http.Client{Transport: tr, CheckRedirect: folderRedirect}, pacer, remote.StallAfter(opts.Timeout))
	s.r = remote.NewReader(backend{s}, remote.Options{Timeout: opts.Timeout, Pacer: pacer, Name: "http", Logger: opts.Logger})
	if opts.Raw {
		return s, nil
	}
	if s.h, err = s.readHierarchy(ctx); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// URL returns the dataset's base URL.
func (s *Store) URL() string { return s.base.String() }

// Timeout returns the bound on each operation.
func (s *Store) Timeout() time.Duration { return s.r.Timeout() }

// Parallelism returns the package's Parallelism (nczarr.Open asks).
func (s *Store) Parallelism() int { return Parallelism }

// Remote reports that every read is a transfer, so that readers fetch
// only the bytes they need where they can (nczarr asks).
func (s *Store) Remote() bool { return true }

// ListsByProbing reports that listing an array's folder costs a request
// per chunk key, so that no one lists folders ahead of need.
func (s *Store) ListsByProbing() bool { return true }

// RequestKinds returns the requests the Store sent, by kind, retries
// included (remote.Requests): a Search is a HEAD per object it asks for,
// and no LIST.
func (s *Store) RequestKinds() (get, rangedGET, head, list int64) { return s.reqs.RequestKinds() }

// Throttled returns how many answers asked the Store to slow down.
func (s *Store) Throttled() int64 { return s.r.Throttled() }

// RequestLimit returns the bound on requests in flight now, and the
// lowest it has been.
func (s *Store) RequestLimit() (now, lowest int) { return s.r.RequestLimit() }

// Resumed returns how many bodies were resumed after they broke off, and
// how many reads failed because the object changed meanwhile.
func (s *Store) Resumed() (resumed, changed int64) { return s.r.Resumed() }

// Close drops the Store's idle connections.
func (s *Store) Close() error {
	if c, ok := s.tr.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
	return nil
}

// url is the URL of store key k.
func (s *Store) url(k string) string {
	u := *s.base
	if k != "" {
		u.Path += "/" + k
	}
	return u.String()
}

// checkKey rejects keys that name nothing (zmap.ValidKey).
func checkKey(key string) error {
	if !zmap.ValidKey(key) {
		return fmt.Errorf("http: invalid key %q: %w", key, zmap.ErrNotFound)
	}
	return nil
}

// zarrMeta are the names of the metadata objects consolidated metadata
// declares.
var zarrMeta = map[string]bool{".zarray": true, ".zgroup": true, ".zattrs": true, "zarr.json": true}

// undeclared reports whether key is a Zarr metadata object that the
// consolidated metadata does not declare: the hierarchy comes from it
// alone, so such a key names nothing, and asking the server would only
// cost a request (readers ask for every array's optional .zattrs).
func (s *Store) undeclared(key string) error {
	_, name := splitKey(key)
	if zarrMeta[name] && s.h != nil && !s.h.declares(key) {
		return fmt.Errorf("http: %s: %w (not in the consolidated metadata)", s.url(key), zmap.ErrNotFound)
	}
	return nil
}

// Get returns the whole object stored under key.
func (s *Store) Get(ctx context.Context, key string) ([]byte, error) {
	if err := checkKey(key); err != nil {
		return nil, err
	}
	if err := s.undeclared(key); err != nil {
		return nil, err
	}
	return s.r.Get(ctx, key)
}

// ReadAt reads len(p) bytes of the object under key at off, with a Range
// request (remote.Reader.ReadAt: never a short read).
func (s *Store) ReadAt(ctx context.Context, key string, p []byte, off int64) (int, error) {
	if err := checkKey(key); err != nil {
		return 0, err
	}
	if err := s.undeclared(key); err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, fmt.Errorf("http: ReadAt %s: negative offset %d", s.url(key), off)
	}
	if len(p) == 0 {
		size, err := s.Size(ctx, key)
		if err == nil && off > size {
			err = io.EOF
		}
		return 0, err
	}
	return s.r.ReadAt(ctx, key, p, off)
}

// Size returns the size of the object stored under key (HEAD).
func (s *Store) Size(ctx context.Context, key string) (int64, error) {
	e, err := s.Stat(ctx, key)
	return e.Size, err
}

// Stat returns the object's size, Last-Modified time and ETag with a
// HEAD request (a ranged GET of its first byte when the server answers
// HEAD with no length).
func (s *Store) Stat(ctx context.Context, key string) (zmap.Entry, error) {
	if err := checkKey(key); err != nil {
		return zmap.Entry{}, err
	}
	if err := s.undeclared(key); err != nil {
		return zmap.Entry{}, err
	}
	var e zmap.Entry
	err := s.r.Do(ctx, func(rctx context.Context) (err error) {
		e, err = s.head(rctx, key)
		return err
	})
	if err != nil {
		return zmap.Entry{}, s.mapErr(ctx, "HEAD", key, err)
	}
	return e, nil
}

// head sends one HEAD of key.
func (s *Store) head(ctx context.Context, key string) (zmap.Entry, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodHead, s.url(key), nil)
	if err != nil {
		return zmap.Entry{}, err
	}
	s.reqs.HEAD()
	resp, err := s.client.Do(req)
	if err != nil {
		return zmap.Entry{}, err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return zmap.Entry{}, answerError(resp)
	}
	e := zmap.Entry{Name: path.Base(key), Size: resp.ContentLength, ETag: remote.TrimETag(resp.Header.Get("ETag"))}
	if t, err := http.ParseTime(resp.Header.Get("Last-Modified")); err == nil {
		e.ModTime = t.UTC()
	}
	if e.Size < 0 {
		// No length in the answer to HEAD: the range of a GET of the
		// first byte says it.
		a, err := backend{s}.Open(ctx, key, &remote.Range{Off: 0, Len: 1}, "")
		if classify(err) == remote.RangeNotSatisfiable {
			e.Size = 0 // an empty object
			return e, nil
		}
		if err != nil {
			return zmap.Entry{}, err
		}
		a.Body.Close()
		_, _, size, rerr := remote.ParseContentRange(a.ContentRange)
		switch {
		case rerr == nil && size >= 0:
			e.Size = size
		case a.ContentRange == "" && a.Length >= 0:
			e.Size = a.Length
		default:
			return zmap.Entry{}, fmt.Errorf("the server says neither the size of the object nor of a range of it")
		}
	}
	return e, nil
}

// Search returns the immediate children of prefix that the consolidated
// metadata declares and the server has: metadata objects (each asked
// for with HEAD, for its size), groups and arrays, and in an array's
// folders the chunk objects found by probing.
func (s *Store) Search(ctx context.Context, prefix string) ([]zmap.Entry, error) {
	if prefix != "" {
		if err := checkKey(prefix); err != nil {
			return nil, err
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("http: search %s: %w", s.url(prefix), err)
	}
	if s.h == nil {
		return nil, fmt.Errorf("http: %s cannot be listed (a server of plain objects)", s.url(prefix))
	}
	names := map[string]bool{} // name -> is a folder
	var metas []string
	for _, k := range s.h.meta {
		name, dir, ok := child(prefix, k)
		if !ok {
			continue
		}
		if dir {
			names[name] = true
		} else if _, seen := names[name]; !seen {
			names[name] = false
			metas = append(metas, k)
		}
	}
	for _, a := range s.h.arrays {
		if name, dir, ok := child(prefix, a.path); ok && dir {
			names[name] = true
		}
	}
	if s.h.nczarr1 && (prefix == "" || s.h.declares(prefix+"/.zgroup") || s.h.arrays[prefix] != nil) {
		for _, name := range nczarrObjects[s.h.arrays[prefix] != nil] {
			if _, seen := names[name]; !seen {
				names[name] = false
				metas = append(metas, zmap.Join(prefix, name))
			}
		}
	}
	entries := map[string]zmap.Entry{}
	if a := s.h.arrayAt(prefix); a != nil {
		chunks, err := s.probe(ctx, a)
		if err != nil {
			return nil, err
		}
		for k, e := range chunks {
			name, dir, ok := child(prefix, k)
			switch {
			case !ok:
			case dir:
				names[name] = true
			default:
				e.Name = name
				entries[name] = e
				names[name] = false
			}
		}
	}
	// The metadata objects' sizes, at once.
	found, err := s.statAll(ctx, metas)
	if err != nil {
		return nil, err
	}
	for k, e := range found {
		name, _, _ := child(prefix, k)
		e.Name = name
		entries[name] = e
	}
	out := []zmap.Entry{}
	for name, dir := range names {
		if dir {
			out = append(out, zmap.Entry{Name: name, Dir: true})
		} else if e, ok := entries[name]; ok {
			out = append(out, e)
		}
	}
	slices.SortFunc(out, func(a, b zmap.Entry) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// child says what key is in the folder prefix: its name there, and
// whether it is a folder (key is deeper) or the object itself; ok false
// when key is not under prefix.
func child(prefix, key string) (name string, dir, ok bool) {
	rest := key
	if prefix != "" {
		var cut bool
		if rest, cut = strings.CutPrefix(key, prefix+"/"); !cut {
			return "", false, false
		}
	}
	name, _, dir = strings.Cut(rest, "/")
	return name, dir, name != ""
}

// statAll asks for the Entry of each key at once, Parallelism at a time
// (and as many as the pacer lets through); keys the server does not have
// are left out of the map it returns. The first error that is not a
// missing key ends it: no more keys are asked for, those in flight are
// cancelled, and that error is returned.
func (s *Store) statAll(ctx context.Context, keys []string) (map[string]zmap.Entry, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	out := make([]zmap.Entry, len(keys))
	has := make([]bool, len(keys))
	var (
		once  sync.Once
		first error
		wg    sync.WaitGroup
	)
	sem := make(chan struct{}, Parallelism)
	for i, k := range keys {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			e, err := s.Stat(ctx, k)
			switch {
			case err == nil:
				out[i], has[i] = e, true
			case !errors.Is(err, zmap.ErrNotFound):
				once.Do(func() { first = err; cancel() })
			}
		}()
	}
	wg.Wait()
	if first != nil {
		return nil, first
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	found := map[string]zmap.Entry{}
	for i, k := range keys {
		if has[i] {
			found[k] = out[i]
		}
	}
	return found, nil
}

// probe is the chunk objects of one array the server has, by key.
type probe struct {
	done    chan struct{}
	at      time.Time
	entries map[string]zmap.Entry
	err     error
}

// probe returns the chunk objects of array a that the server has, from
// the probe of the last ProbeWindow, or from a new one: a HEAD of every
// chunk key of its grid. Callers at once share one probe.
//
// A probe is kept for ProbeWindow only: any call forgets the probes older
// than that (of every array), so that what a walk learned, up to MaxProbe
// entries an array, is not kept for the life of the mount.
func (s *Store) probe(ctx context.Context, a *array) (map[string]zmap.Entry, error) {
	s.mu.Lock()
	s.forgetProbes()
	p := s.probes[a.path]
	if p != nil {
		select {
		case <-p.done:
			if p.err != nil {
				p = nil
			}
		default:
		}
	}
	if p == nil {
		p = &probe{done: make(chan struct{})}
		s.probes[a.path] = p
		s.mu.Unlock()
		p.entries, p.err = s.probeArray(ctx, a)
		p.at = s.now()
		close(p.done)
	} else {
		s.mu.Unlock()
	}
	select {
	case <-p.done:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return p.entries, p.err
}

// forgetProbes drops the finished probes older than the window.
// s.mu is held.
func (s *Store) forgetProbes() {
	now := s.now()
	for path, p := range s.probes {
		select {
		case <-p.done:
			if now.Sub(p.at) > s.window {
				delete(s.probes, path)
			}
		default:
		}
	}
}

func (s *Store) probeArray(ctx context.Context, a *array) (map[string]zmap.Entry, error) {
	n := a.chunkCount()
	if n > MaxProbe {
		return nil, fmt.Errorf("http: array %s has %d chunk keys; a server that cannot be listed shows the chunk objects of arrays of at most %d (its data reads all the same)", a.path, n, MaxProbe)
	}
	var keys []string
	a.eachChunk(func(k string) { keys = append(keys, k) })
	s.log.Debug("http: probing the chunk objects of an array", "array", a.path, "keys", len(keys))
	return s.statAll(ctx, keys)
}
