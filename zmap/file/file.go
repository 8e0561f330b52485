// Package file is the zmap backend for a dataset stored as a directory tree
// (NCZarr "mode=file", zarr-python's DirectoryStore): the key "g1/v/0.0" is
// the file g1/v/0.0 under the dataset's root directory.
//
// Every access is confined to the root with os.Root: a symbolic link is
// followed only while it stays inside the root. A link with an absolute
// target that lies inside the root reads like a relative one. One that
// leaves it (an absolute target elsewhere, or enough ".." to climb out)
// names an object the store refuses with zmap.ErrPermission, so a mount
// shared with other users (--allow-other) never exposes files outside the
// dataset, unless the store is opened with FollowLinks (datasets kept in
// git-annex, DataLad or DVC are trees of links into an object store
// outside the dataset folder).
package file

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/nczarrfs/nczarrfs/internal/fadvise"
	"github.com/nczarrfs/nczarrfs/internal/vecio"
	"github.com/nczarrfs/nczarrfs/zmap"
)

// Store is a zmap.Store over a directory tree. It holds the root directory
// open and nothing else: each call opens what it reads, so a Store is safe
// for concurrent use and sees files as they are at the time of the call.
//
// Objects are regular files; directories are prefixes; anything else
// (devices, FIFOs, sockets, broken links) is not part of the store. A
// symbolic link is followed when its target lies inside the root. A link
// that leaves the root is listed as a Dir entry (its target is never
// looked at), and every key through it fails with zmap.ErrPermission. An
// empty directory is listed as a Dir entry although no object lies under
// it.
type Store struct {
	root *os.Root
	// escape is the error os.Root reports for a path that leaves the
	// root. The os package does not export it, so Open obtains it from
	// the Root itself, with a path that escapes by its very form.
	escape error
	real   string // the root directory, absolute, symbolic links resolved
	follow bool   // Options.FollowLinks
}

// Options configure OpenWith.
type Options struct {
	// FollowLinks follows symbolic links out of the root too: whoever
	// reads the store (the mount) reads what they point at.
	FollowLinks bool
}

var _ zmap.Store = (*Store)(nil)

// Open returns a Store whose root is the directory dir. It fails with an
// error wrapping fs.ErrNotExist when dir does not exist, and with one
// wrapping syscall.ENOTDIR when dir is not a directory.
func Open(dir string) (*Store, error) { return OpenWith(dir, Options{}) }

// OpenWith is Open with options.
func OpenWith(dir string, opts Options) (*Store, error) {
	fi, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("file: open dataset: %w", err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("file: open dataset %s: %w", dir, syscall.ENOTDIR)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("file: open dataset: %w", err)
	}
	// An absolute name escapes any root, and is refused before any
	// file system access.
	_, err = root.Lstat("/")
	var pe *fs.PathError
	if !errors.As(err, &pe) {
		root.Close()
		return nil, fmt.Errorf("file: open dataset %s: os.Root accepted an absolute path (%v)", dir, err)
	}
	real, err := filepath.EvalSymlinks(dir)
	if err == nil {
		real, err = filepath.Abs(real)
	}
	if err != nil {
		root.Close()
		return nil, fmt.Errorf("file: open dataset: %w", err)
	}
	return &Store{root: root, escape: pe.Err, real: real, follow: opts.FollowLinks}, nil
}

// resolve is called when the path of key leaves the root through a
// symbolic link (err is os.Root's escape error). It resolves every link
// on the path: a target inside the root gives the path relative to the
// root (in, to open through the Root, which checks it again); one outside
// gives its absolute path (out) when the store follows links, else the
// refusal.
func (s *Store) resolve(op, key string, err error) (in, out string, rerr error) {
	target, rerr := filepath.EvalSymlinks(filepath.Join(s.real, filepath.FromSlash(key)))
	if rerr != nil {
		if s.follow {
			return "", "", s.mapErr(op, key, rerr)
		}
		return "", "", s.mapErr(op, key, err) // refused, whether or not the target exists
	}
	rel, rerr := filepath.Rel(s.real, target)
	if rerr == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return rel, "", nil
	}
	if s.follow {
		return "", target, nil
	}
	return "", "", s.mapErr(op, key, err)
}

// openPath opens the file or directory at name (relative to the root),
// following links that resolve inside it, and out of it with FollowLinks.
func (s *Store) openPath(op, key, name string, flag int) (*os.File, error) {
	f, err := s.root.OpenFile(name, flag, 0)
	if err == nil || !errors.Is(err, s.escape) {
		return f, err
	}
	in, out, err := s.resolve(op, key, err)
	switch {
	case err != nil:
		return nil, err
	case out != "":
		return os.OpenFile(out, flag, 0)
	}
	return s.root.OpenFile(in, flag, 0)
}

// statPath is Stat of name (relative to the root), following links as
// openPath does.
func (s *Store) statPath(op, key, name string) (fs.FileInfo, error) {
	fi, err := s.root.Stat(name)
	if err == nil || !errors.Is(err, s.escape) {
		return fi, err
	}
	in, out, err := s.resolve(op, key, err)
	switch {
	case err != nil:
		return nil, err
	case out != "":
		return os.Stat(out)
	}
	return s.root.Stat(in)
}

// Get returns the content of the file named by key.
func (s *Store) Get(ctx context.Context, key string) ([]byte, error) {
	f, size, err := s.open(ctx, "get", key)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// The stat says the size before a byte is read: an object over the
	// request's bound is refused whole.
	if err := zmap.CheckSize(ctx, key, size); err != nil {
		return nil, err
	}
	b := make([]byte, size)
	n, err := io.ReadFull(f, b)
	switch {
	case err == io.ErrUnexpectedEOF || err == io.EOF:
		// Shrunk since the stat: what is there is the object.
		return b[:n], nil
	case err != nil:
		return nil, s.mapErr("get", key, err)
	}
	// Grown since the stat: read the rest too, within the bound.
	bound := zmap.MaxSize(ctx)
	rest, err := zmap.ReadBounded(f, key, bound-size)
	if zmap.IsTooLarge(err) {
		return nil, &zmap.TooLargeError{Key: key, Size: bound + 1, Bound: bound, AtLeast: true}
	}
	if err != nil {
		return nil, s.mapErr("get", key, err)
	}
	return append(b, rest...), nil
}

// ReadAt reads len(p) bytes of the file named by key at offset off.
func (s *Store) ReadAt(ctx context.Context, key string, p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("file: readat %q: negative offset %d", key, off)
	}
	f, _, err := s.open(ctx, "readat", key)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	n, err := f.ReadAt(p, off)
	if err != nil && err != io.EOF {
		return n, s.mapErr("readat", key, err)
	}
	return n, err
}

// ReadVec fills bufs with the bytes of the file named by key from offset
// off on, with one preadv (zmap.VecReader).
func (s *Store) ReadVec(ctx context.Context, key string, bufs [][]byte, off int64) (int64, error) {
	if off < 0 {
		return 0, fmt.Errorf("file: readvec %q: negative offset %d", key, off)
	}
	f, size, err := s.open(ctx, "readvec", key)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	if err := vecio.ReadAt(f, bufs, off); err != nil {
		return size, s.mapErr("readvec", key, err)
	}
	return size, nil
}

// WillNeed asks the kernel to start reading the file named by key into
// its page cache, for a read that will follow soon; see package fadvise.
// It is a hint: a key that names no file is ignored.
func (s *Store) WillNeed(ctx context.Context, key string) {
	f, _, err := s.open(ctx, "willneed", key)
	if err != nil {
		return
	}
	fadvise.WillNeed(f, 0, 0)
	f.Close()
}

// Size returns the size of the file named by key.
func (s *Store) Size(ctx context.Context, key string) (int64, error) {
	e, err := s.stat(ctx, "size", key)
	return e.Size, err
}

// Stat returns the size and modification time of the file named by key.
func (s *Store) Stat(ctx context.Context, key string) (zmap.Entry, error) {
	return s.stat(ctx, "stat", key)
}

func (s *Store) stat(ctx context.Context, op, key string) (zmap.Entry, error) {
	if err := ctx.Err(); err != nil {
		return zmap.Entry{}, fmt.Errorf("file: %s %q: %w", op, key, err)
	}
	if !zmap.ValidKey(key) {
		return zmap.Entry{}, invalidKey(op, key)
	}
	fi, err := s.statPath(op, key, filepath.FromSlash(key))
	if err != nil {
		return zmap.Entry{}, s.mapErr(op, key, err)
	}
	if !fi.Mode().IsRegular() {
		return zmap.Entry{}, fmt.Errorf("file: %s %q: not a regular file: %w", op, key, zmap.ErrNotFound)
	}
	return zmap.Entry{Name: path.Base(key), Size: fi.Size(), ModTime: fi.ModTime()}, nil
}

// Search lists the directory named by prefix. A prefix that names no
// directory (missing, or a file) lists nothing; one through a link that
// leaves the root fails with zmap.ErrPermission.
func (s *Store) Search(ctx context.Context, prefix string) ([]zmap.Entry, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("file: search %q: %w", prefix, err)
	}
	dir := "."
	if prefix != "" {
		if !zmap.ValidKey(prefix) {
			return nil, nil // no object has an invalid key as prefix
		}
		dir = filepath.FromSlash(prefix)
	}
	f, err := s.openPath("search", prefix, dir, os.O_RDONLY)
	if err != nil {
		err = s.mapErr("search", prefix, err)
		if errors.Is(err, zmap.ErrNotFound) {
			return nil, nil
		}
		return nil, err
	}
	des, err := f.ReadDir(-1)
	f.Close()
	if err != nil {
		err = s.mapErr("search", prefix, err)
		if errors.Is(err, zmap.ErrNotFound) {
			return nil, nil // a file, not a directory
		}
		return nil, err
	}
	entries := make([]zmap.Entry, 0, len(des))
	for _, de := range des {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("file: search %q: %w", prefix, err)
		}
		typ := de.Type()
		var fi fs.FileInfo
		switch {
		case typ&fs.ModeSymlink != 0:
			// Follow the link inside the root. One that leaves it is
			// listed, unexamined, as a prefix whose every key is
			// refused; a broken one is skipped.
			key := path.Join(prefix, de.Name())
			fi, err = s.statPath("search", key, filepath.FromSlash(key))
			if errors.Is(err, zmap.ErrPermission) {
				entries = append(entries, zmap.Entry{Name: de.Name(), Dir: true})
				continue
			}
		case typ.IsDir():
			entries = append(entries, zmap.Entry{Name: de.Name(), Dir: true})
			continue
		case typ.IsRegular():
			fi, err = de.Info()
		default:
			continue
		}
		if err != nil {
			continue // vanished since ReadDir, or a broken link
		}
		switch {
		case fi.IsDir():
			entries = append(entries, zmap.Entry{Name: de.Name(), Dir: true})
		case fi.Mode().IsRegular():
			entries = append(entries, zmap.Entry{Name: de.Name(), Size: fi.Size(), ModTime: fi.ModTime()})
		}
	}
	// File.ReadDir returns directory order; zmap wants names sorted.
	slices.SortFunc(entries, func(a, b zmap.Entry) int { return strings.Compare(a.Name, b.Name) })
	return entries, nil
}

// Close closes the root directory. The Store must not be used after Close.
func (s *Store) Close() error { return s.root.Close() }

// open checks ctx and key and opens the regular file that key names,
// returning it with its size. It opens with O_NONBLOCK and checks the type
// of what it opened, so that a FIFO never blocks a read and nothing can be
// swapped in between a check and the open.
func (s *Store) open(ctx context.Context, op, key string) (*os.File, int64, error) {
	if err := ctx.Err(); err != nil {
		return nil, 0, fmt.Errorf("file: %s %q: %w", op, key, err)
	}
	if !zmap.ValidKey(key) {
		return nil, 0, invalidKey(op, key)
	}
	f, err := s.openPath(op, key, filepath.FromSlash(key), os.O_RDONLY|syscall.O_NONBLOCK)
	if err != nil {
		return nil, 0, s.mapErr(op, key, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, s.mapErr(op, key, err)
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, 0, fmt.Errorf("file: %s %q: not a regular file: %w", op, key, zmap.ErrNotFound)
	}
	return f, fi.Size(), nil
}

// invalidKey is the error for a key that is not in canonical form (empty
// segments, ".", "..", absolute): it names no object.
func invalidKey(op, key string) error {
	return fmt.Errorf("file: %s: invalid key %q: %w", op, key, zmap.ErrNotFound)
}

// mapErr turns an error from the os package into the zmap vocabulary:
// a missing file, or a path through a file, is ErrNotFound (so is reading
// a directory); a refused access, and a path through a link that leaves
// the root, is ErrPermission. The original error stays in the chain.
func (s *Store) mapErr(op, key string, err error) error {
	if errors.Is(err, zmap.ErrPermission) || errors.Is(err, zmap.ErrNotFound) {
		return err // mapped already
	}
	if s.escape != nil && errors.Is(err, s.escape) {
		return fmt.Errorf("file: %s %q: a symbolic link leads out of the dataset root: %w: %w", op, key, zmap.ErrPermission, err)
	}
	return mapErr(op, key, err)
}

// mapErr is Store.mapErr for errors that are not escapes.
func mapErr(op, key string, err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR), errors.Is(err, syscall.EISDIR):
		return fmt.Errorf("file: %s %q: %w: %w", op, key, zmap.ErrNotFound, err)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("file: %s %q: %w: %w", op, key, zmap.ErrPermission, err)
	}
	return fmt.Errorf("file: %s %q: %w", op, key, err)
}
