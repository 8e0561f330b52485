package diskcache

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	"golang.org/x/sys/unix"
)

// The cache owns only what it writes, in a layout of its own under the
// folder it is given (--cache-dir), which may hold anything else:
//
//	DIR/nczarrfs-cache/CACHEDIR.TAG         the Cache Directory Tagging spec's tag
//	DIR/nczarrfs-cache/v1/DATASET/AB/REST   a cached object
//	DIR/nczarrfs-cache/v1/DATASET/AB/.tmp-R an object being written
//
// DATASET is 24 lowercase hex digits, AB 2 and REST 30 (a SHA-256 of the
// key and the object's identity); R is 16. Eviction, size accounting and
// cleanup see only regular files with one link and those names, in
// folders with those names: a file of another name, or anywhere else, is
// never read, counted, touched or removed. Nothing in the layout follows
// a symbolic link: its folders are opened from the folder above with
// O_NOFOLLOW (a link planted in their place is refused, or skipped), and
// so are its files.
const (
	topName   = "nczarrfs-cache"
	tagName   = "CACHEDIR.TAG"
	layoutVer = "v1"
	tmpPrefix = ".tmp-"

	datasetLen = 24
	shardLen   = 2
	restLen    = 30
	tmpLen     = len(tmpPrefix) + 16
)

// tagText is CACHEDIR.TAG's content: the spec's signature line first.
const tagText = "Signature: 8a477f597d28d172789f06886806bc55\n" +
	"# This file is a cache directory tag created by nczarrfs (--cache-dir).\n" +
	"# For information about cache directory tags see https://bford.info/cachedir/\n"

// isHex reports whether s is n lowercase hex digits.
func isHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for i := range len(s) {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// ownFile reports whether name is that of a cached object or of one being
// written, the only file names the cache reads, counts or removes.
func ownFile(name string) (isTemp, ok bool) {
	if isHex(name, restLen) {
		return false, true
	}
	if len(name) == tmpLen && name[:len(tmpPrefix)] == tmpPrefix && isHex(name[len(tmpPrefix):], tmpLen-len(tmpPrefix)) {
		return true, true
	}
	return false, false
}

// dirFlags open a folder of the layout, never through a link.
const dirFlags = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC

// openDir opens the folder name in the folder dir (a descriptor), never
// through a link: a link there fails (ELOOP or ENOTDIR).
func openDir(dir int, name string) (*os.File, error) {
	for {
		fd, err := unix.Openat(dir, name, dirFlags, 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, err
		}
		return os.NewFile(uintptr(fd), name), nil
	}
}

// makeDir opens the folder name in dir, making it first when missing.
func makeDir(dir int, name string) (*os.File, error) {
	if err := unix.Mkdirat(dir, name, 0o700); err != nil && err != unix.EEXIST {
		return nil, err
	}
	return openDir(dir, name)
}

// fd returns f's descriptor; f must stay reachable while it is used
// (runtime.KeepAlive), which holding it in the Store does.
func fd(f *os.File) int { return int(f.Fd()) }

// openLayout opens (and makes) the layout under dir and the folder of the
// dataset named ds in it. A link where a folder of the layout belongs is
// an error: the cache writes nowhere else.
func openLayout(dir, ds string) (v1, dsDir *os.File, err error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, nil, err
	}
	root, err := os.Open(dir)
	if err != nil {
		return nil, nil, err
	}
	defer root.Close()
	top, err := makeDir(fd(root), topName)
	if err != nil {
		return nil, nil, layoutErr(filepath.Join(dir, topName), err)
	}
	defer top.Close()
	if err := writeTag(fd(top)); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", filepath.Join(dir, topName, tagName), err)
	}
	v1, err = makeDir(fd(top), layoutVer)
	if err != nil {
		return nil, nil, layoutErr(filepath.Join(dir, topName, layoutVer), err)
	}
	dsDir, err = makeDir(fd(v1), ds)
	if err != nil {
		v1.Close()
		return nil, nil, layoutErr(filepath.Join(dir, topName, layoutVer, ds), err)
	}
	return v1, dsDir, nil
}

// layoutErr says that the folder name of the layout cannot be used.
func layoutErr(name string, err error) error {
	if err == unix.ELOOP || err == unix.ENOTDIR {
		return fmt.Errorf("%s: not a folder (a link or a file is in the place of the cache's folder; remove it): %w", name, err)
	}
	return fmt.Errorf("%s: %w", name, err)
}

// writeTag writes CACHEDIR.TAG in top unless something is there.
func writeTag(top int) error {
	tfd, err := unix.Openat(top, tagName, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err == unix.EEXIST {
		return nil
	}
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(tfd), tagName)
	_, err = io.WriteString(f, tagText)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// cacheFD is an open cache file, read with pread(2): an os.File would
// cost system calls a read of 4 KiB notices.
type cacheFD int

// ReadAt reads len(p) bytes at off, or fails (io.EOF when the file ends
// first).
func (f cacheFD) ReadAt(p []byte, off int64) (int, error) {
	n := 0
	for n < len(p) {
		m, err := unix.Pread(int(f), p[n:], off+int64(n))
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return n, err
		}
		if m == 0 {
			return n, io.EOF
		}
		n += m
	}
	return n, nil
}

// Close closes f.
func (f cacheFD) Close() error { return unix.Close(int(f)) }

// openFile opens the cache file shard/name in the folder dir for reading:
// a regular file with one link, reached through no link. The error is
// unix.ENOENT when there is none, errNotOurs when something the cache did
// not write is in its place (not read, then).
func openFile(dir int, shard, name string) (f cacheFD, size int64, err error) {
	ffd, err := openBeneath(dir, shard, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK)
	if err != nil {
		return -1, 0, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(ffd, &st); err != nil {
		unix.Close(ffd)
		return -1, 0, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG || st.Nlink != 1 {
		unix.Close(ffd)
		return -1, 0, errNotOurs
	}
	return cacheFD(ffd), st.Size, nil
}

// openChain opens shard/name in dir, following no link: the folder shard
// with O_NOFOLLOW first, then name in it with flags (which hold
// O_NOFOLLOW).
func openChain(dir int, shard, name string, flags int) (int, error) {
	d, err := openDir(dir, shard)
	if err != nil {
		return -1, err
	}
	defer d.Close()
	for {
		ffd, err := unix.Openat(fd(d), name, flags, 0)
		if err != unix.EINTR {
			return ffd, err
		}
	}
}

// errNotOurs is the error of a name of the layout that holds something the
// cache did not write there (a link, a folder, a file with other links).
var errNotOurs = errors.New("not a file of the cache's")

// createTemp makes a new temporary file in dir, with a name of the
// cache's own.
func createTemp(dir int) (f *os.File, name string, err error) {
	for range 10 {
		var r [8]byte
		rand.Read(r[:])
		name = tmpPrefix + hex.EncodeToString(r[:])
		tfd, err := unix.Openat(dir, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
		if err == unix.EEXIST || err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, "", err
		}
		return os.NewFile(uintptr(tfd), name), name, nil
	}
	return nil, "", unix.EEXIST
}

// cacheFile is a file of the layout, as a scan found it.
type cacheFile struct {
	ds, shard, name string
	size            int64
	mtime           time.Time
	temp            bool
	ino             uint64
}

// scan lists the cache's own files under v1: regular, one link, with the
// cache's names, in folders with the cache's names reached through no
// link. A folder that cannot be read is skipped (another process may be
// removing it).
func scan(v1 int) ([]cacheFile, error) {
	top, err := openDir(v1, ".")
	if err != nil {
		return nil, err
	}
	dss, err := top.Readdirnames(-1)
	top.Close()
	if err != nil {
		return nil, err
	}
	var files []cacheFile
	for _, ds := range dss {
		if !isHex(ds, datasetLen) {
			continue
		}
		d, err := openDir(v1, ds)
		if err != nil {
			continue // a link, a file, or gone
		}
		shards, _ := d.Readdirnames(-1)
		for _, sh := range shards {
			if !isHex(sh, shardLen) {
				continue
			}
			s, err := openDir(fd(d), sh)
			if err != nil {
				continue
			}
			names, _ := s.Readdirnames(-1)
			for _, n := range names {
				temp, ok := ownFile(n)
				if !ok {
					continue
				}
				var st unix.Stat_t
				if err := unix.Fstatat(fd(s), n, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
					continue
				}
				if st.Mode&unix.S_IFMT != unix.S_IFREG || st.Nlink != 1 {
					continue
				}
				files = append(files, cacheFile{ds: ds, shard: sh, name: n, size: st.Size,
					mtime: time.Unix(st.Mtim.Unix()), temp: temp, ino: st.Ino})
			}
			s.Close()
		}
		d.Close()
	}
	return files, nil
}

// remove removes the cache file f found by scan under v1, if it is still
// that file.
func remove(v1 int, f cacheFile) error {
	d, err := openDir(v1, f.ds)
	if err != nil {
		return nil // gone, or no longer the cache's folder
	}
	defer d.Close()
	s, err := openDir(fd(d), f.shard)
	if err != nil {
		return nil
	}
	defer s.Close()
	var st unix.Stat_t
	if err := unix.Fstatat(fd(s), f.name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil ||
		st.Ino != f.ino || st.Mode&unix.S_IFMT != unix.S_IFREG || st.Nlink != 1 {
		return nil
	}
	if err := unix.Unlinkat(fd(s), f.name, 0); err != nil && err != unix.ENOENT {
		return fmt.Errorf("%s/%s/%s: %w", f.ds, f.shard, f.name, err)
	}
	return nil
}

// oldest sorts files least recently used first.
func oldest(files []cacheFile) {
	slices.SortFunc(files, func(a, b cacheFile) int { return a.mtime.Compare(b.mtime) })
}
