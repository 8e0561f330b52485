// Package kerchunk is the zmap backend for kerchunk reference sets
// (fsspec's ReferenceFileSystem; kerchunk's docs/source/spec.rst): a JSON
// reference file (version 0 or 1, gzip or zstd compressed or not) or a
// Parquet reference folder maps each Zarr key to inline bytes or to a
// range of another object, usually of a netCDF-4/HDF5 file in a bucket.
// The Store serves those keys, so a reference set mounts like any Zarr
// store.
//
// The referenced objects are read through a zmap.Opener the Store is
// handed (zmap/source implements it), never through backends it chooses:
// each URL's store comes with its backend's pacing, timeouts, retries and
// request accounting, and the Opener's policy says which URLs a reference
// set may reach. Ranges of one object that callers ask for within
// MergeWindow of each other, with gaps of at most MaxGap, are read with one
// request, as fsspec's cat_ranges merges them.
//
// A reference that cannot be read (its object is missing, shorter than the
// range, refused by the policy, or the request fails) is an I/O error that
// names the key and the URL, and is logged: never zmap.ErrNotFound, which
// readers would take for a missing chunk and turn into fill values.
package kerchunk

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/nczarrfs/nczarrfs/zmap"
)

// Merging of neighbouring reads, as fsspec's ReferenceFileSystem defaults
// (max_gap 64 kB) with a smaller block: one request of at most MaxBlock
// bytes.
const (
	MergeWindow = 2 * time.Millisecond
	MaxGap      = 64 << 10
	MaxBlock    = 8 << 20
)

// Options configure Open and OpenParquet.
type Options struct {
	// Opener opens the referenced URLs. Required.
	Opener zmap.Opener
	// Dir, when set, is the local folder bare relative paths in the
	// references are relative to (the folder of a local reference file).
	Dir string
	// Remote says the reference set itself is remote: reads are merged
	// and readers fetch only the bytes they need. A set whose URLs are
	// remote is remote anyway.
	Remote bool
	// Logger receives a line for every reference that could not be read;
	// nil discards them.
	Logger *slog.Logger
	// Closer, when set, is closed by Store.Close (the Opener's stores).
	Closer io.Closer
	// Name names the reference set in messages.
	Name string
}

// lookuper finds the reference of a key, and the children of a folder.
type lookuper interface {
	lookup(ctx context.Context, key string) (Ref, error)
	children(ctx context.Context, prefix string) (map[string]Ref, map[string]bool, error)
}

// Store is a zmap.Store over a reference set. Its methods are safe for
// concurrent use.
type Store struct {
	idx    lookuper
	opts   Options
	log    *slog.Logger
	remote bool
	merge  *merger // merges the reads of remote objects (and of all, for a remote set)
	probe  bool    // listing an array's folder reads its record files
}

var _ zmap.Store = (*Store)(nil)

// New returns a Store serving set.
func New(set Set, opts Options) (*Store, error) {
	if opts.Opener == nil {
		return nil, errors.New("kerchunk: no Opener")
	}
	if len(set) == 0 {
		return nil, fmt.Errorf("kerchunk: %w", ErrNoRefs)
	}
	remote := opts.Remote
	for k, r := range set {
		if r.URL == "" {
			continue
		}
		if opts.Dir != "" && isRelativePath(r.URL) {
			r.URL = filepath.Join(opts.Dir, r.URL)
			set[k] = r
		}
		if !isLocal(r.URL) {
			remote = true
		}
	}
	return newStore(newJSONIndex(set), opts, remote), nil
}

func newStore(idx lookuper, opts Options, remote bool) *Store {
	s := &Store{idx: idx, opts: opts, log: opts.Logger, remote: remote}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.merge = newMerger(MergeWindow, MaxGap, MaxBlock)
	return s
}

// isLocal reports whether u names a local file: file:// or a bare path.
func isLocal(u string) bool {
	return !strings.Contains(u, "://") || strings.HasPrefix(strings.ToLower(u), "file://")
}

func isRelativePath(u string) bool {
	return !strings.Contains(u, "://") && !strings.HasPrefix(u, "/")
}

// Remote reports whether reads are transfers, so that readers fetch only
// ReferenceSet says the store serves a reference set: its .zmetadata may
// be a Parquet folder's, which holds record_size, and is still the
// dataset's consolidated metadata (nczarr refuses such a .zmetadata from
// any other store).
func (s *Store) ReferenceSet() bool { return true }

// the bytes they need (nczarr asks).
func (s *Store) Remote() bool { return s.remote }

// Parallelism is how many reads to keep in flight.
func (s *Store) Parallelism() int {
	if s.remote {
		return 32
	}
	return 8
}

// ListsByProbing reports that listing an array's folder of a Parquet
// reference set reads its record files, so that no one lists folders ahead
// of need.
func (s *Store) ListsByProbing() bool { return s.probe }

// RequestKinds returns the requests sent to the referenced objects' stores,
// by kind, when the Opener counts them.
func (s *Store) RequestKinds() (get, rangedGET, head, list int64) {
	if rc, ok := s.opts.Opener.(interface {
		RequestKinds() (get, rangedGET, head, list int64)
	}); ok {
		return rc.RequestKinds()
	}
	return 0, 0, 0, 0
}

// Close closes opts.Closer, and the folder of a Parquet reference set.
func (s *Store) Close() error {
	var errs []error
	if c, ok := s.idx.(io.Closer); ok {
		errs = append(errs, c.Close())
	}
	if s.opts.Closer != nil {
		errs = append(errs, s.opts.Closer.Close())
	}
	return errors.Join(errs...)
}

func (s *Store) ref(ctx context.Context, key string) (Ref, error) {
	if !zmap.ValidKey(key) {
		return Ref{}, fmt.Errorf("kerchunk: invalid key %q: %w", key, zmap.ErrNotFound)
	}
	return s.idx.lookup(ctx, key)
}

// Get returns the bytes of key's reference.
func (s *Store) Get(ctx context.Context, key string) ([]byte, error) {
	r, err := s.ref(ctx, key)
	if err != nil {
		return nil, err
	}
	if r.URL == "" {
		return slices.Clone(r.Data), nil
	}
	st, k, err := s.opts.Opener.Open(ctx, r.URL)
	if err != nil {
		return nil, s.refErr(ctx, key, r, err)
	}
	var data []byte
	switch {
	case r.Len < 0:
		data, err = st.Get(ctx, k)
	case s.remote || !isLocal(r.URL):
		data, err = s.merge.read(ctx, st, k, r.URL, r.Off, r.Len)
	default:
		data = make([]byte, r.Len)
		_, err = st.ReadAt(ctx, k, data, r.Off)
	}
	if err != nil {
		return nil, s.refErr(ctx, key, r, err)
	}
	return data, nil
}

// refErr is the error of a reference that could not be read: it names the
// key and the URL, is logged, and wraps nothing but ctx's error, so that
// it never reads as a missing object.
func (s *Store) refErr(ctx context.Context, key string, r Ref, err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		err = fmt.Errorf("the object ends before the range %d+%d: %v", r.Off, r.Len, err)
	}
	if ctx.Err() != nil {
		return fmt.Errorf("kerchunk: reference %s (%s): %w", key, redact(r.URL), ctx.Err())
	}
	s.log.Warn("kerchunk: a reference could not be read", "references", s.opts.Name, "key", key, "url", redact(r.URL), "err", err)
	return fmt.Errorf("kerchunk: reference %s (%s): %v", key, redact(r.URL), err)
}

// redact drops user information and queries from a URL for messages.
func redact(u string) string {
	if i := strings.IndexByte(u, '?'); i >= 0 {
		u = u[:i] + "?REDACTED"
	}
	if i := strings.Index(u, "://"); i >= 0 {
		rest := u[i+3:]
		host, _, _ := strings.Cut(rest, "/")
		if j := strings.LastIndexByte(host, '@'); j >= 0 {
			u = u[:i+3] + rest[j+1:]
		}
	}
	return u
}

// ReadAt reads len(p) bytes of key's reference at off.
func (s *Store) ReadAt(ctx context.Context, key string, p []byte, off int64) (int, error) {
	r, err := s.ref(ctx, key)
	if err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, fmt.Errorf("kerchunk: ReadAt %s: negative offset %d", key, off)
	}
	if r.URL == "" {
		if off >= int64(len(r.Data)) {
			return 0, io.EOF
		}
		n := copy(p, r.Data[off:])
		if n < len(p) {
			return n, io.EOF
		}
		return n, nil
	}
	st, k, err := s.opts.Opener.Open(ctx, r.URL)
	if err != nil {
		return 0, s.refErr(ctx, key, r, err)
	}
	if r.Len < 0 {
		n, err := st.ReadAt(ctx, k, p, off)
		if err != nil && err != io.EOF {
			return n, s.refErr(ctx, key, r, err)
		}
		return n, err
	}
	if off >= r.Len {
		return 0, io.EOF
	}
	want := min(int64(len(p)), r.Len-off)
	var n int
	if s.remote || !isLocal(r.URL) {
		// Merged with the neighbours asked for at once.
		var data []byte
		if data, err = s.merge.read(ctx, st, k, r.URL, r.Off+off, want); err == nil {
			n = copy(p, data)
		}
	} else {
		n, err = st.ReadAt(ctx, k, p[:want], r.Off+off)
	}
	if err != nil {
		return n, s.refErr(ctx, key, r, err)
	}
	if want < int64(len(p)) {
		return n, io.EOF
	}
	return n, nil
}

// Size returns the size of key's reference.
func (s *Store) Size(ctx context.Context, key string) (int64, error) {
	e, err := s.Stat(ctx, key)
	return e.Size, err
}

// Stat returns the Entry of key's reference; a whole-object reference
// asks its store.
func (s *Store) Stat(ctx context.Context, key string) (zmap.Entry, error) {
	r, err := s.ref(ctx, key)
	if err != nil {
		return zmap.Entry{}, err
	}
	return s.entry(ctx, key, r)
}

func (s *Store) entry(ctx context.Context, key string, r Ref) (zmap.Entry, error) {
	e := zmap.Entry{Name: key[strings.LastIndexByte(key, '/')+1:], Size: r.Len}
	if r.URL == "" {
		e.Size = int64(len(r.Data))
	}
	if r.Len >= 0 {
		return e, nil
	}
	st, k, err := s.opts.Opener.Open(ctx, r.URL)
	if err != nil {
		return zmap.Entry{}, s.refErr(ctx, key, r, err)
	}
	size, err := st.Size(ctx, k)
	if err != nil {
		return zmap.Entry{}, s.refErr(ctx, key, r, err)
	}
	e.Size = size
	return e, nil
}

// Search returns the immediate children of prefix.
func (s *Store) Search(ctx context.Context, prefix string) ([]zmap.Entry, error) {
	if prefix != "" && !zmap.ValidKey(prefix) {
		return nil, fmt.Errorf("kerchunk: invalid prefix %q: %w", prefix, zmap.ErrNotFound)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	objs, dirs, err := s.idx.children(ctx, prefix)
	if err != nil {
		return nil, err
	}
	out := make([]zmap.Entry, 0, len(objs)+len(dirs))
	for name := range dirs {
		out = append(out, zmap.Entry{Name: name, Dir: true})
	}
	for name, r := range objs {
		if dirs[name] {
			continue // a key that is also a folder lists as the folder
		}
		e, err := s.entry(ctx, zmap.Join(prefix, name), r)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b zmap.Entry) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// jsonIndex is the index of a reference set held whole.
type jsonIndex struct {
	set  Set
	keys []string // sorted
}

func newJSONIndex(set Set) *jsonIndex {
	keys := make([]string, 0, len(set))
	for k := range set {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return &jsonIndex{set: set, keys: keys}
}

func (x *jsonIndex) lookup(_ context.Context, key string) (Ref, error) {
	r, ok := x.set[key]
	if !ok {
		return Ref{}, fmt.Errorf("kerchunk: %s: %w", key, zmap.ErrNotFound)
	}
	return r, nil
}

func (x *jsonIndex) children(_ context.Context, prefix string) (map[string]Ref, map[string]bool, error) {
	return childrenOf(x.keys, prefix, func(k string) Ref { return x.set[k] })
}

// childrenOf lists the children of prefix among sorted keys.
func childrenOf(keys []string, prefix string, ref func(string) Ref) (map[string]Ref, map[string]bool, error) {
	objs, dirs := map[string]Ref{}, map[string]bool{}
	start := ""
	if prefix != "" {
		start = prefix + "/"
	}
	i, _ := slices.BinarySearch(keys, start)
	for ; i < len(keys) && strings.HasPrefix(keys[i], start); i++ {
		rest := keys[i][len(start):]
		if name, _, deeper := strings.Cut(rest, "/"); deeper {
			dirs[name] = true
		} else {
			objs[name] = ref(keys[i])
		}
	}
	return objs, dirs, nil
}
