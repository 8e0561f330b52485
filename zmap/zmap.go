// Package zmap is the key-value view of a stored dataset, after NCZarr's
// "zmap" abstraction: a tree of content-bearing objects named by
// slash-separated keys, with a search for the immediate children of a prefix.
//
// Keys are relative to the dataset root and never start or end with a slash:
// ".zgroup", "g1/v1/.zarray", "g1/v1/0.0". The root prefix is "".
//
// Backends live in sub-packages (file, zip, s3); every one of them passes the
// conformance suite in zmap/zmaptest. Nothing here imports FUSE.
package zmap

import (
	"context"
	"errors"
	"strings"
	"time"
)

// Distinguished errors. Backends wrap them (with %w) so that callers test
// them with errors.Is.
var (
	// ErrNotFound: no object has that key. For a chunk this means
	// "not stored", which readers turn into the fill value.
	ErrNotFound = errors.New("object not found")
	// ErrPermission: the store refused access (S3 403, EACCES).
	ErrPermission = errors.New("permission denied")
)

// Entry is one immediate child of a searched prefix.
type Entry struct {
	// Name is the child's last key segment, without slashes.
	Name string
	// Dir is true when Name is a prefix of deeper keys (a "directory");
	// false when prefix/Name is itself an object.
	Dir bool
	// Size is the object's size in bytes; 0 for a Dir entry.
	Size int64
	// ModTime is when the object was last written, as the store records
	// it (a file's mtime, a zip entry's time, S3's LastModified in whole
	// seconds); zero for a Dir entry, or when the store records none.
	ModTime time.Time
	// ETag is the store's identity of the object's content (S3's,
	// GCS's or Azure's ETag, without quotes): a rewritten object has
	// another. Empty for a Dir entry, or when the store gives none;
	// the size and ModTime then stand for it (zmap/diskcache).
	ETag string
}

// Store is a read-only dataset store.
//
// All methods are safe for concurrent use. Every method that does I/O takes
// a context and returns promptly with an error wrapping ctx.Err() once it is
// cancelled. Errors wrap ErrNotFound or ErrPermission where those apply;
// anything else is an I/O failure.
type Store interface {
	// Get returns the whole object stored under key, in a new slice that
	// belongs to the caller (it may keep or modify it). An object of more
	// than MaxSize(ctx) bytes fails with a *TooLargeError, found from the
	// first thing that tells its size (limit.go), before more than
	// MaxSize(ctx)+1 bytes of it are read.
	Get(ctx context.Context, key string) ([]byte, error)

	// ReadAt reads len(p) bytes of the object at offset off, with the
	// semantics of io.ReaderAt: n < len(p) only with a non-nil error, and
	// io.EOF when the object ends first.
	ReadAt(ctx context.Context, key string, p []byte, off int64) (n int, err error)

	// Size returns the size of the object stored under key.
	Size(ctx context.Context, key string) (int64, error)

	// Stat returns the Entry of the object stored under key: its last
	// key segment, size and modification time, the same as Search lists.
	Stat(ctx context.Context, key string) (Entry, error)

	// Search returns the immediate children of prefix ("" is the root),
	// sorted by name: every name such that prefix/name is an object or a
	// prefix of one. A prefix with no object under it gives an empty
	// slice and a nil error.
	Search(ctx context.Context, prefix string) ([]Entry, error)

	// Close releases the store's resources.
	Close() error
}

// VecReader is a store that reads an object's bytes straight into several
// buffers with one request (a local file's preadv): a reader that
// scatters an uncompressed chunk's rows into an array's then needs no
// buffer of its own. Found with As; a store that wraps another offers it
// when the wrapped one does, and otherwise fails every call with an error
// wrapping errors.ErrUnsupported.
type VecReader interface {
	// ReadVec fills bufs, one after the other, with the bytes of the
	// object key from offset off on, and returns the object's size. An
	// object that ends before the buffers are full gives an error
	// wrapping io.ErrUnexpectedEOF, with the size; one that cannot be
	// read this way (a compressed zip entry) gives errors.ErrUnsupported.
	ReadVec(ctx context.Context, key string, bufs [][]byte, off int64) (size int64, err error)
}

// Join joins key segments with "/", skipping empty ones.
func Join(parts ...string) string {
	var b strings.Builder
	for _, p := range parts {
		if p == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('/')
		}
		b.WriteString(p)
	}
	return b.String()
}

// ValidKey reports whether key is a canonical zmap key, one that can name
// an object: it is non-empty, has no leading or trailing slash, no empty,
// "." or ".." segment, and no NUL byte. Backends treat any other key as
// naming nothing (ErrNotFound), so that no key climbs out of the dataset
// root or reaches one object under two names.
func ValidKey(key string) bool {
	if key == "" || strings.IndexByte(key, 0) >= 0 {
		return false
	}
	for seg := range strings.SplitSeq(key, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return false
		}
	}
	return true
}

// As finds, in s or in the stores it wraps (through their Unwrap
// methods), the first that implements T, as errors.As does for errors:
// how a reader asks a store for what it offers beyond Store.
func As[T any](s Store) (T, bool) {
	for s != nil {
		if t, ok := s.(T); ok {
			return t, true
		}
		u, ok := s.(interface{ Unwrap() Store })
		if !ok {
			break
		}
		s = u.Unwrap()
	}
	var zero T
	return zero, false
}

// FlatLister is a store that lists every key under a prefix at once,
// without a delimiter (S3's ListObjectsV2 without "/"): a few requests in
// the place of one per folder, for a dataset of many small folders. Found
// with As; a store that wraps another offers it when the wrapped one does.
type FlatLister interface {
	// ListFlat lists the objects under prefix ("" for the whole
	// dataset), at most limit of them. Each Entry's Name is the key
	// relative to prefix, slashes included; entries are sorted by name.
	// A listing that stopped at limit says Complete false.
	ListFlat(ctx context.Context, prefix string, limit int) (FlatListing, error)
}

// FlatListing is the answer of FlatLister.ListFlat.
type FlatListing struct {
	Entries  []Entry
	Complete bool
	// Requests is how many requests the listing took (pages).
	Requests int
}

// Opener opens the store that holds the objects of an absolute URL, for
// stores that read other stores: Icechunk's virtual chunks and kerchunk's
// references. Such a store is handed an Opener and never chooses backends
// itself; zmap/source implements it, so nothing here imports a backend.
//
// Open returns the store rooted where the URL's objects are named by keys, and
// the key of the URL's object within it: for "s3://bucket/dir/file.nc" a store
// of the bucket (shared by every URL of that bucket) and "dir/file.nc". A URL
// the caller's policy does not allow fails with an error wrapping
// ErrPermission; the store stays owned by the Opener (callers never Close it).
type Opener interface {
	Open(ctx context.Context, url string) (store Store, key string, err error)
}
