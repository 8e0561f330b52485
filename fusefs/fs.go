// Package fusefs exposes an opened dataset as a read-only go-fuse node
// tree. It is a thin adapter: directories and stored objects come from the
// zmap.Store, each array directory gains a synthesized `data` file served
// by nczarr.Array.ReadAt, and errors become errnos in one place (errno.go).
package fusefs

import (
	"context"
	"errors"
	"hash/fnv"
	"io"
	"log/slog"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/nczarrfs/nczarrfs/internal/stats"
	"github.com/nczarrfs/nczarrfs/nczarr"
	"github.com/nczarrfs/nczarrfs/zmap"
)

// DataName is the synthesized file in every array directory.
const DataName = "data"

// Options configure Mount.
type Options struct {
	Logger     *slog.Logger
	FsName     string // shown as the mount's source in /proc/mounts
	Debug      bool   // log every FUSE request
	AllowOther bool
	// CacheTimeout is how long the kernel may keep entries and attributes.
	// The store is treated as immutable, so long is right. 0 means 1 hour.
	CacheTimeout time.Duration
	// Stats holds the counters shown in .nczarrfs; nil counts errors only.
	Stats *stats.Mount
}

// tree is what every node shares.
type tree struct {
	ds    *nczarr.Dataset
	store zmap.Store
	rep   *reporter
	uid   uint32
	gid   uint32
	mtime uint64
	stats *stats.Mount
}

// NewRoot returns the root node of the tree for ds, whose objects are in
// store.
func NewRoot(ds *nczarr.Dataset, store zmap.Store, log *slog.Logger) fs.InodeEmbedder {
	if log == nil {
		log = slog.Default()
	}
	t := &tree{
		ds:    ds,
		store: store,
		rep:   &reporter{log: log, seen: map[string]bool{}},
		uid:   uint32(os.Getuid()),
		gid:   uint32(os.Getgid()),
		mtime: uint64(time.Now().Unix()),
	}
	t.setStats(nil)
	return &dir{t: t, key: "", array: ds.Array("")}
}

// Mount mounts the tree at mountpoint, read-only, and returns the running
// server; the caller waits on it and unmounts it.
func Mount(mountpoint string, ds *nczarr.Dataset, store zmap.Store, opts Options) (*fuse.Server, error) {
	timeout := opts.CacheTimeout
	if timeout == 0 {
		timeout = time.Hour
	}
	fsOpts := &fs.Options{
		EntryTimeout:    &timeout,
		AttrTimeout:     &timeout,
		NegativeTimeout: &timeout,
		MountOptions: fuse.MountOptions{
			FsName:       opts.FsName,
			Name:         "nczarrfs",
			Options:      []string{"ro"},
			Debug:        opts.Debug,
			AllowOther:   opts.AllowOther,
			MaxReadAhead: 1 << 20,
			// Large requests: one READ may then cover a whole row of chunks.
			MaxWrite: 1 << 20,
		},
	}
	root := NewRoot(ds, store, opts.Logger)
	root.(*dir).t.setStats(opts.Stats)
	return fs.Mount(mountpoint, root, fsOpts)
}

// ino gives every key a stable inode number, so tools that compare inode
// numbers (find, du, tar) see a consistent tree across lookups.
func ino(kind byte, key string) uint64 {
	h := fnv.New64a()
	h.Write([]byte{kind})
	h.Write([]byte(key))
	n := h.Sum64() &^ (1 << 63) // below go-fuse's automatic numbers
	if n < 2 {
		n += 2 // 1 is the root
	}
	return n
}

func (t *tree) fill(a *fuse.Attr, mode uint32, size uint64, inode uint64) {
	a.Mode = mode
	a.Size = size
	a.Ino = inode
	a.Nlink = 1
	a.Uid, a.Gid = t.uid, t.gid
	a.Mtime, a.Ctime, a.Atime = t.mtime, t.mtime, t.mtime
	a.Blksize = 1 << 16
	a.Blocks = (size + 511) / 512
}

// dir is a group, an array or any other key prefix (such as the nested
// chunk folders of dimension_separator "/").
type dir struct {
	fs.Inode
	t     *tree
	key   string
	array *nczarr.Array // nil unless this is an array

	// listing is the last Search of key, kept so that the lookups that
	// follow a readdir (ls -l) cost no store request: on S3 each would be
	// a HEAD. The store is immutable while mounted.
	mu      sync.Mutex
	listing map[string]zmap.Entry // GUARDED_BY(mu); nil until Readdir
}

var (
	_ fs.NodeLookuper  = (*dir)(nil)
	_ fs.NodeReaddirer = (*dir)(nil)
	_ fs.NodeGetattrer = (*dir)(nil)
)

func (d *dir) Getattr(ctx context.Context, fh fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	d.t.fill(&out.Attr, fuse.S_IFDIR|0o555, 0, d.StableAttr().Ino)
	out.Nlink = 2
	return 0
}

func (d *dir) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if in, errno, ok := d.lookupSynth(ctx, name, out); ok {
		return in, errno
	}
	if d.array != nil && name == DataName {
		n := &data{t: d.t, array: d.array}
		n.attr(&out.Attr)
		return d.NewInode(ctx, n, fs.StableAttr{Mode: fuse.S_IFREG, Ino: out.Ino}), 0
	}
	key := zmap.Join(d.key, name)
	if d.t.ds.Group(key) != nil || d.t.ds.Array(key) != nil {
		return d.newDir(ctx, key, out), 0
	}
	d.mu.Lock()
	listing := d.listing
	d.mu.Unlock()
	if listing != nil {
		e, ok := listing[name]
		switch {
		case !ok:
			return nil, syscall.ENOENT
		case e.Dir:
			return d.newDir(ctx, key, out), 0
		default:
			return d.newObject(ctx, key, e.Size, out), 0
		}
	}
	size, err := d.t.store.Size(ctx, key)
	if err == nil {
		return d.newObject(ctx, key, size, out), 0
	}
	if !errors.Is(err, zmap.ErrNotFound) {
		return nil, d.t.rep.errno("lookup", key, err)
	}
	// Not an object: a prefix of deeper keys is a directory.
	entries, err := d.t.store.Search(ctx, key)
	if err != nil {
		return nil, d.t.rep.errno("lookup", key, err)
	}
	if len(entries) == 0 {
		return nil, syscall.ENOENT
	}
	return d.newDir(ctx, key, out), 0
}

func (d *dir) newDir(ctx context.Context, key string, out *fuse.EntryOut) *fs.Inode {
	n := &dir{t: d.t, key: key, array: d.t.ds.Array(key)}
	d.t.fill(&out.Attr, fuse.S_IFDIR|0o555, 0, ino('d', key))
	out.Nlink = 2
	return d.NewInode(ctx, n, fs.StableAttr{Mode: fuse.S_IFDIR, Ino: out.Ino})
}

func (d *dir) newObject(ctx context.Context, key string, size int64, out *fuse.EntryOut) *fs.Inode {
	n := &object{t: d.t, key: key, size: size}
	d.t.fill(&out.Attr, fuse.S_IFREG|0o444, uint64(size), ino('o', key))
	return d.NewInode(ctx, n, fs.StableAttr{Mode: fuse.S_IFREG, Ino: out.Ino})
}

func (d *dir) Readdir(ctx context.Context) (fs.DirStream, syscall.Errno) {
	entries, err := d.t.store.Search(ctx, d.key)
	if err != nil {
		return nil, d.t.rep.errno("readdir", d.key, err)
	}
	listing := make(map[string]zmap.Entry, len(entries))
	for _, e := range entries {
		listing[e.Name] = e
	}
	d.mu.Lock()
	d.listing = listing
	d.mu.Unlock()
	list := make([]fuse.DirEntry, 0, len(entries)+1)
	if d.array != nil {
		list = append(list, fuse.DirEntry{Name: DataName, Mode: fuse.S_IFREG, Ino: ino('a', d.array.Path)})
	}
	for _, e := range entries {
		key := zmap.Join(d.key, e.Name)
		if e.Dir {
			list = append(list, fuse.DirEntry{Name: e.Name, Mode: fuse.S_IFDIR, Ino: ino('d', key)})
		} else {
			list = append(list, fuse.DirEntry{Name: e.Name, Mode: fuse.S_IFREG, Ino: ino('o', key)})
		}
	}
	return fs.NewListDirStream(d.appendSynth(list, listing)), 0
}

// object is a stored object, served byte for byte.
type object struct {
	fs.Inode
	t    *tree
	key  string
	size int64
}

var (
	_ fs.NodeOpener    = (*object)(nil)
	_ fs.NodeReader    = (*object)(nil)
	_ fs.NodeGetattrer = (*object)(nil)
)

func (o *object) Getattr(ctx context.Context, fh fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	o.t.fill(&out.Attr, fuse.S_IFREG|0o444, uint64(o.size), o.StableAttr().Ino)
	return 0
}

func (o *object) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	return openReadOnly(flags)
}

func (o *object) Read(ctx context.Context, fh fs.FileHandle, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	dest = clamp(dest, off, o.size)
	if len(dest) == 0 {
		return fuse.ReadResultData(nil), 0
	}
	n, err := o.t.store.ReadAt(ctx, o.key, dest, off)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, o.t.rep.errno("read", o.key, err)
	}
	return fuse.ReadResultData(dest[:n]), 0
}

// data is an array's decoded bytes.
type data struct {
	fs.Inode
	t     *tree
	array *nczarr.Array
}

var (
	_ fs.NodeOpener    = (*data)(nil)
	_ fs.NodeReader    = (*data)(nil)
	_ fs.NodeGetattrer = (*data)(nil)
)

func (n *data) attr(a *fuse.Attr) {
	n.t.fill(a, fuse.S_IFREG|0o444, uint64(n.array.Size()), ino('a', n.array.Path))
}

func (n *data) Getattr(ctx context.Context, fh fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	n.attr(&out.Attr)
	return 0
}

// Open fails at once for an array whose metadata or codecs cannot be used:
// its size may be unknown (0), and the kernel would then answer reads with
// an empty file instead of asking us. Each open file gets its own
// nczarr.Reader, so that read-ahead follows each reader separately.
func (n *data) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	if n.array.Err != nil {
		return nil, 0, n.t.rep.errno("open data", n.array.Path, n.array.Err)
	}
	_, fuseFlags, errno := openReadOnly(flags)
	if errno != 0 {
		return nil, 0, errno
	}
	return &dataHandle{r: n.array.NewReader()}, fuseFlags, 0
}

// dataHandle is an open `data` file.
type dataHandle struct{ r *nczarr.Reader }

func (n *data) Read(ctx context.Context, fh fs.FileHandle, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	dest = clamp(dest, off, n.array.Size())
	if len(dest) == 0 {
		return fuse.ReadResultData(nil), 0
	}
	read := n.array.ReadAt
	if h, ok := fh.(*dataHandle); ok {
		read = h.r.ReadAt
	}
	m, err := read(ctx, dest, off)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, n.t.rep.errno("read data", n.array.Path, err)
	}
	return fuse.ReadResultData(dest[:m]), 0
}

// openReadOnly refuses writes and lets the kernel keep the (immutable)
// content in its page cache across opens.
func openReadOnly(flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	if flags&(syscall.O_WRONLY|syscall.O_RDWR|syscall.O_TRUNC|syscall.O_APPEND) != 0 {
		return nil, 0, syscall.EROFS
	}
	return nil, fuse.FOPEN_KEEP_CACHE, 0
}

// clamp trims dest to the part of [off, off+len(dest)) inside a file of
// the given size; it is empty when off is at or past the end.
func clamp(dest []byte, off, size int64) []byte {
	if off < 0 || off >= size {
		return dest[:0]
	}
	if rest := size - off; int64(len(dest)) > rest {
		return dest[:rest]
	}
	return dest
}
