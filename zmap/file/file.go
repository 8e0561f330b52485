// Package file is the zmap backend for a dataset stored as a directory tree
// (NCZarr "mode=file", zarr-python's DirectoryStore): the key "g1/v/0.0" is
// the file g1/v/0.0 under the dataset's root directory.
package file

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/nczarrfs/nczarrfs/zmap"
)

// Store is a zmap.Store over a directory tree. It holds no open files: each
// call opens what it reads, so a Store is safe for concurrent use and sees
// files as they are at the time of the call.
//
// Symbolic links are followed. Objects are regular files; directories are
// prefixes; anything else (devices, FIFOs, sockets, broken links) is not
// part of the store. An empty directory is listed as a Dir entry although
// no object lies under it.
type Store struct {
	root string // absolute path of the dataset's root directory
}

var _ zmap.Store = (*Store)(nil)

// Open returns a Store whose root is the directory dir. It fails with an
// error wrapping fs.ErrNotExist when dir does not exist, and with one
// wrapping syscall.ENOTDIR when dir is not a directory.
func Open(dir string) (*Store, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("file: open %s: %w", dir, err)
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return nil, fmt.Errorf("file: open dataset: %w", err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("file: open dataset %s: %w", dir, syscall.ENOTDIR)
	}
	return &Store{root: abs}, nil
}

// Get returns the content of the file named by key.
func (s *Store) Get(ctx context.Context, key string) ([]byte, error) {
	name, err := s.object(ctx, "get", key)
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(name)
	if err != nil {
		return nil, mapErr("get", key, err)
	}
	return b, nil
}

// ReadAt reads len(p) bytes of the file named by key at offset off.
func (s *Store) ReadAt(ctx context.Context, key string, p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("file: readat %q: negative offset %d", key, off)
	}
	name, err := s.object(ctx, "readat", key)
	if err != nil {
		return 0, err
	}
	f, err := os.Open(name)
	if err != nil {
		return 0, mapErr("readat", key, err)
	}
	defer f.Close()
	n, err := f.ReadAt(p, off)
	if err != nil && err != io.EOF {
		return n, mapErr("readat", key, err)
	}
	return n, err
}

// Size returns the size of the file named by key.
func (s *Store) Size(ctx context.Context, key string) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("file: size %q: %w", key, err)
	}
	name, err := s.path(key)
	if err != nil {
		return 0, fmt.Errorf("file: size: %w", err)
	}
	fi, err := os.Stat(name)
	if err != nil {
		return 0, mapErr("size", key, err)
	}
	if !fi.Mode().IsRegular() {
		return 0, fmt.Errorf("file: size %q: not a regular file: %w", key, zmap.ErrNotFound)
	}
	return fi.Size(), nil
}

// Search lists the directory named by prefix. A prefix that names no
// directory (missing, or a file) lists nothing.
func (s *Store) Search(ctx context.Context, prefix string) ([]zmap.Entry, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("file: search %q: %w", prefix, err)
	}
	dir := s.root
	if prefix != "" {
		var err error
		if dir, err = s.path(prefix); err != nil {
			return nil, nil // no object has an invalid key as prefix
		}
	}
	des, err := os.ReadDir(dir)
	if err != nil {
		err = mapErr("search", prefix, err)
		if errors.Is(err, zmap.ErrNotFound) {
			return nil, nil
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
			// Follow the link; a broken one is skipped.
			fi, err = os.Stat(filepath.Join(dir, de.Name()))
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
			entries = append(entries, zmap.Entry{Name: de.Name(), Size: fi.Size()})
		}
	}
	// os.ReadDir sorts by file name, which is the order zmap wants.
	return entries, nil
}

// Close does nothing: a Store holds no resources.
func (s *Store) Close() error { return nil }

// object checks ctx and key and returns the path of the regular file that
// key names. Checking the type before opening keeps a FIFO from blocking a
// read.
func (s *Store) object(ctx context.Context, op, key string) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", fmt.Errorf("file: %s %q: %w", op, key, err)
	}
	name, err := s.path(key)
	if err != nil {
		return "", fmt.Errorf("file: %s: %w", op, err)
	}
	fi, err := os.Stat(name)
	if err != nil {
		return "", mapErr(op, key, err)
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("file: %s %q: not a regular file: %w", op, key, zmap.ErrNotFound)
	}
	return name, nil
}

// path returns the file path of a well-formed key. Keys that could leave
// the root ("..", absolute) or that are not in canonical form (empty
// segments, ".") name no object.
func (s *Store) path(key string) (string, error) {
	if !zmap.ValidKey(key) {
		return "", fmt.Errorf("invalid key %q: %w", key, zmap.ErrNotFound)
	}
	return filepath.Join(s.root, filepath.FromSlash(key)), nil
}

// mapErr turns an error from the os package into the zmap vocabulary:
// a missing file, or a path through a file, is ErrNotFound (so is reading
// a directory); a refused access is ErrPermission. The original error stays
// in the chain.
func mapErr(op, key string, err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR), errors.Is(err, syscall.EISDIR):
		return fmt.Errorf("file: %s %q: %w: %w", op, key, zmap.ErrNotFound, err)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("file: %s %q: %w: %w", op, key, zmap.ErrPermission, err)
	}
	return fmt.Errorf("file: %s %q: %w", op, key, err)
}
