// Package fusefs exposes an opened dataset as a read-only go-fuse node
// tree. It is a thin adapter: directories and stored objects come from the
// zmap.Store, each array directory gains a synthesized `data` file served
// by nczarr.Array.ReadAt, the files of package describe are added beside
// them (synth.go), attributes are also extended attributes (xattr.go),
// times come from the store (times.go), and errors become errnos in one
// place (errno.go).
package fusefs

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/nczarrfs/nczarrfs/internal/stats"
	"github.com/nczarrfs/nczarrfs/nczarr"
	"github.com/nczarrfs/nczarrfs/zmap"
	"github.com/nczarrfs/nczarrfs/zmap/listcache"
)

// DataName is the synthesized file in every array directory.
const DataName = "data"

// Options configure Mount.
type Options struct {
	Logger     *slog.Logger
	FsName     string // shown as the mount's source in /proc/mounts
	Debug      bool   // log every FUSE request
	AllowOther bool
	// CacheTimeout is how long the kernel may keep entries, attributes
	// and the answers that a name does not exist: the mount's
	// --metadata-ttl, so that the kernel forgets what the kept listings
	// forget. 0 means 1 hour; a negative one keeps nothing.
	CacheTimeout time.Duration
	// Listings keeps the store's listings (zmap/listcache). Nil means
	// the store given, when it is or wraps one, else one that keeps
	// them for ever (the store is then treated as immutable).
	Listings *listcache.Store
	// Stats holds the counters shown in .nczarrfs; nil counts errors only.
	Stats *stats.Mount
	// Name is the dataset's name on the first line of header.cdl, as
	// ncdump names it (the source's base name without extension). ""
	// means "dataset".
	Name string
	// UID and GID own every file and folder; nil means the user and group
	// running the mount.
	UID, GID *uint32
	// Umask clears permission bits from files (0444) and folders (0555).
	Umask uint32
	// NoPollHack mounts without go-fuse's poll hack, for a process that
	// never opens files in its own mount (the daemon). The hack opens a
	// file in the new mount before Mount returns; a SIGKILL while it is
	// open leaves the process stuck in exit for ever, waiting for its own
	// answer to the close. A process that does open its own files (the
	// tests) needs the hack: its first poll of such a file would
	// otherwise wait for a FUSE answer with no thread left to give it.
	NoPollHack bool
	// PageCache serves data and data.npy through the kernel's page cache.
	// Without it Mount opens them for direct I/O wherever the kernel can
	// still map such files into memory (FUSE_DIRECT_IO_ALLOW_MMAP, Linux
	// 6.6): a large read then costs one copy out of the daemon instead of
	// two and the page cache's bookkeeping, but every read, however
	// small, is a request to the daemon (docs/architecture.md).
	PageCache bool
	// RequestTimeout bounds the time the mount takes to answer each
	// request that may ask the store (LOOKUP, GETATTR, READDIR, OPEN,
	// READ): past it, the request fails with EIO whatever the store is
	// doing. For a remote store it is --timeout plus a margin, so that
	// one store operation fits in it; 0 means no bound.
	RequestTimeout time.Duration
	// Versions shows other versions of the dataset in a folder at the
	// root (versions.go); nil for none.
	Versions *Versions
	// DirectMount mounts with mount(2) instead of through fusermount3,
	// falling back to fusermount3 if that fails: for root where
	// fusermount3 is not installed (a container image).
	DirectMount bool
}

// readSize is the largest READ the kernel sends (MaxWrite) and the I/O
// size data files advertise for direct I/O (st_blksize), which cat, cp,
// stdio and Python's buffered files take for their buffer size.
const readSize = 1 << 20

// tree is what every node shares.
type tree struct {
	ds *nczarr.Dataset
	lc *listcache.Store // the store, keeping its listings
	// remote: a request costs a round trip (S3); times not known from
	// a listing are then not asked for (times.go).
	remote bool
	rep    *reporter
	uid    uint32
	gid    uint32
	umask  uint32
	name   string // of the dataset, in header.cdl
	stats  *stats.Mount
	times  modTimes   // of directories (times.go)
	xattr  xattrCache // of groups and arrays (xattr.go)
	files  sync.Map   // array path -> *arrayFiles (synth.go)
	pages  sync.Map   // group key -> struct{}: its index.html was opened (index.go)
	// classics are the groups' classic files (classic.go).
	classics sync.Map // group path -> *classicEntry
	// direct opens data files with FOPEN_DIRECT_IO; Mount sets it once
	// the kernel has said it maps such files (Options.PageCache).
	direct atomic.Bool
	// timeout is Options.RequestTimeout.
	timeout time.Duration
	// salt sets the inode numbers of a version's tree apart (versions.go);
	// "" for the mount's own.
	salt string
	// versions is Options.Versions and what the mount keeps of them;
	// nil in a version's own tree (versions.go).
	versions *versionState
}

// bound gives a request that may ask the store its deadline
// (Options.RequestTimeout). A chunk load that the request joined goes on
// for the callers still waiting and for the cache; the request itself
// answers EIO at the deadline.
func (t *tree) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	if t.timeout <= 0 {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, t.timeout)
}

// NewRoot returns the root node of the tree for ds, whose objects are in
// store. Of opts, all but the mount options are used.
func NewRoot(ds *nczarr.Dataset, store zmap.Store, opts Options) fs.InodeEmbedder {
	return newTree(ds, store, opts).newDirNode("")
}

func newTree(ds *nczarr.Dataset, store zmap.Store, opts Options) *tree {
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	lc := opts.Listings
	if lc == nil {
		var ok bool
		if lc, ok = zmap.As[*listcache.Store](store); !ok {
			lc = listcache.New(store, listcache.Options{TTL: listcache.Forever, Logger: log})
		}
	}
	remote, _ := zmap.As[interface{ Remote() bool }](store)
	t := &tree{
		ds:      ds,
		lc:      lc,
		remote:  remote != nil && remote.Remote(),
		rep:     &reporter{log: log, seen: map[string]bool{}},
		uid:     uint32(os.Getuid()),
		gid:     uint32(os.Getgid()),
		umask:   opts.Umask & 0o777,
		name:    opts.Name,
		timeout: opts.RequestTimeout,
		times:   modTimes{started: time.Now(), dirs: map[string]time.Time{}},
		xattr:   xattrCache{byPath: map[string][]xattr{}},
	}
	if opts.UID != nil {
		t.uid = *opts.UID
	}
	if opts.GID != nil {
		t.gid = *opts.GID
	}
	if t.name == "" {
		t.name = "dataset"
	}
	t.setStats(opts.Stats)
	if opts.Versions != nil {
		t.versions = &versionState{cfg: *opts.Versions, opts: opts, open: map[string]*versionOnce{}}
	}
	return t
}

// Mount mounts the tree at mountpoint, read-only, and returns the running
// server; the caller waits on it and unmounts it.
func Mount(mountpoint string, ds *nczarr.Dataset, store zmap.Store, opts Options) (*fuse.Server, error) {
	timeout := opts.CacheTimeout
	switch {
	case timeout == 0:
		timeout = time.Hour
	case timeout < 0:
		timeout = 0
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
			MaxReadAhead: readSize,
			// Large requests: one READ may then cover a whole row of chunks.
			MaxWrite: readSize,
			// Granted only by kernels that have it (Linux 6.6).
			ExtraCapabilities: fuse.CAP_DIRECT_IO_ALLOW_MMAP,
			// Every reply is bytes in memory, written with one writev.
			// With splice on, go-fuse first tries to pass each READ's
			// reply through a pipe, which only file-backed results
			// use: for ours it took a pipe, wrote the header into it
			// and drained it again, and for a 1 MiB reply, larger than
			// the largest pipe (fs.pipe-max-size), logged a warning
			// for every READ.
			DisableSplice: true,
			DirectMount:   opts.DirectMount,
			// The kernel keeps each file's POSIX ACLs (none: the
			// getxattr of system.posix_acl_* says so once per inode)
			// instead of asking for them at every ls -l, two
			// requests a name. It also checks the modes itself
			// (default_permissions): the umask then binds other users
			// of an --allow-other mount too.
			EnableAcl: true,
		},
	}
	t := newTree(ds, store, opts)
	root := t.newDirNode("")
	var srv *fuse.Server
	var err error
	if !opts.NoPollHack {
		srv, err = fs.Mount(mountpoint, root, fsOpts)
	} else {
		// fs.Mount without WaitMount, which only runs the poll hack:
		// the mount exists once NewServer returns.
		srv, err = fuse.NewServer(fs.NewNodeFS(root, fsOpts), mountpoint, &fsOpts.MountOptions)
		if err == nil {
			go srv.Serve()
		}
	}
	if err != nil {
		return nil, err
	}
	// NewServer has answered INIT: the kernel's flags are known. A data
	// file opened for direct I/O could not be mapped without this one.
	switch {
	case opts.PageCache:
		t.rep.log.Debug("data files are read through the page cache", "reason", "--page-cache")
	case srv.KernelSettings().Flags64()&fuse.CAP_DIRECT_IO_ALLOW_MMAP == 0:
		t.rep.log.Debug("data files are read through the page cache", "reason", "the kernel cannot map files opened for direct I/O (Linux 6.6 can)")
	default:
		t.direct.Store(true)
		t.rep.log.Debug("data files are read with direct I/O")
	}
	return srv, nil
}

// ino gives every key of t a stable inode number, so tools that compare
// inode numbers (find, du, tar) see a consistent tree across lookups. A
// tree of another version of the dataset (versions.go) numbers its keys
// apart from the mount's, for go-fuse takes nodes of one number for one
// node.
func (t *tree) ino(kind byte, key string) uint64 { return inoIn(t.salt, kind, key) }

func inoIn(salt string, kind byte, key string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(salt))
	h.Write([]byte{kind})
	h.Write([]byte(key))
	n := h.Sum64() &^ (1 << 63) // below go-fuse's automatic numbers
	if n < 2 {
		n += 2 // 1 is the root
	}
	return n
}

// fill fills a with the given mode (less the umask), size and inode
// number, the mount's owner, and the mount's start as the times, which the
// nodes replace with their own (stamp, times.go).
func (t *tree) fill(a *fuse.Attr, mode uint32, size uint64, inode uint64) {
	a.Mode = mode &^ t.umask
	a.Size = size
	a.Ino = inode
	a.Nlink = 1
	a.Uid, a.Gid = t.uid, t.gid
	stamp(a, t.times.started)
	a.Blksize = 1 << 16
	a.Blocks = (size + 511) / 512
}

// dir is a group, an array or any other key prefix (such as the nested
// chunk folders of dimension_separator "/").
type dir struct {
	fs.Inode
	attrNode // the group's or array's attributes
	t        *tree
	key      string

	mu sync.Mutex
	// array is the array at key, nil if none; read when first needed
	// (arrayOf), so that a stat of the folder reads no metadata.
	array     *nczarr.Array // GUARDED_BY(mu)
	arrayRead bool          // GUARDED_BY(mu): array is known
	// cachedAt is the time of the kept listing the kernel may hold in
	// its cache of this folder's entries (OpendirHandle); zero when it
	// holds none.
	cachedAt time.Time // GUARDED_BY(mu)
}

var (
	_ fs.NodeLookuper       = (*dir)(nil)
	_ fs.NodeReaddirer      = (*dir)(nil)
	_ fs.NodeOpendirHandler = (*dir)(nil)
	_ fs.NodeGetattrer      = (*dir)(nil)
	_ fs.NodeGetxattrer     = (*dir)(nil)
)

// newDirNode returns the node of the directory key.
func (t *tree) newDirNode(key string) *dir {
	return &dir{t: t, key: key, attrNode: t.attrNode(key)}
}

// arrayOf returns the array at d's key, or nil. An array whose metadata
// could not be read for want of the store (nczarr.Unreachable) is asked
// for again at the next call.
func (d *dir) arrayOf() *nczarr.Array {
	d.mu.Lock()
	a, known := d.array, d.arrayRead
	d.mu.Unlock()
	if known && (a == nil || !nczarr.Unreachable(a.Err)) {
		return a
	}
	a = d.t.ds.Array(d.key)
	d.mu.Lock()
	d.array, d.arrayRead = a, true
	d.mu.Unlock()
	return a
}

// named reports whether key is a group or array of the dataset, reading
// none of its metadata.
func (t *tree) named(key string) bool {
	a, g := t.ds.Has(key)
	return a || g
}

// attrNode returns the extended attributes of the directory key: those
// of its group or array, none for other prefixes.
func (t *tree) attrNode(key string) attrNode {
	return attrNode{xt: t, xpath: key, has: t.named(key)}
}

func (d *dir) Getattr(ctx context.Context, fh fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	ctx, cancel := d.t.bound(ctx)
	defer cancel()
	d.t.fill(&out.Attr, fuse.S_IFDIR|0o555, 0, d.StableAttr().Ino)
	stamp(&out.Attr, d.t.dirTime(ctx, d.key))
	out.Nlink = 2
	return 0
}

func (d *dir) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	d.t.stats.Kernel.Lookups.Add(1)
	ctx, cancel := d.t.bound(ctx)
	defer cancel()
	if errno := d.ready(ctx); errno != 0 {
		return nil, errno
	}
	if in, errno, ok := d.lookupSynth(ctx, name, out); ok {
		return in, errno
	}
	if a := d.arrayOf(); a != nil && a.Objects() {
		if name == DataJSONName {
			return d.lookupDataJSON(ctx, out)
		}
	} else if a != nil && name == DataName {
		if nczarr.Unreachable(a.Err) {
			// No node: the kernel would keep it, and its size, for
			// the TTL; the next lookup asks the store again.
			return nil, d.t.rep.errno("lookup", zmap.Join(d.key, name), a.Err)
		}
		n := &data{t: d.t, array: a, attrNode: d.attrNode}
		n.attr(ctx, &out.Attr)
		return d.NewInode(ctx, n, fs.StableAttr{Mode: fuse.S_IFREG, Ino: out.Ino}), 0
	}
	key := zmap.Join(d.key, name)
	if d.t.named(key) {
		return d.newDir(ctx, key, out), 0
	}
	if d.t.lc.TTL() > 0 {
		// On S3 the folder is listed once (and again after the TTL),
		// and every name in it answered from that listing: a lookup
		// costs no request, one that fails neither. A local folder is
		// not listed for a lookup, but a kept listing answers.
		e, known, err := d.t.listed(ctx, d.key, name, d.t.remote)
		if err != nil {
			return nil, d.t.rep.errno("lookup", key, err)
		}
		switch {
		case !known:
		case e == nil:
			return nil, syscall.ENOENT
		case !e.Dir:
			return d.newObject(ctx, key, *e, out), 0
		case d.t.remote:
			return d.newDir(ctx, key, out), 0
		}
		// A local folder entry may be a link out of the dataset
		// (zmap/file lists it as a folder): Stat refuses it.
	}
	e, err := d.t.lc.Stat(ctx, key)
	if err == nil {
		return d.newObject(ctx, key, e, out), 0
	}
	if !errors.Is(err, zmap.ErrNotFound) {
		return nil, d.t.rep.errno("lookup", key, err)
	}
	// Not an object: a prefix of deeper keys is a directory.
	entries, err := d.t.lc.Search(ctx, key)
	if err != nil {
		return nil, d.t.rep.errno("lookup", key, err)
	}
	if len(entries) == 0 {
		return nil, syscall.ENOENT
	}
	return d.newDir(ctx, key, out), 0
}

// listed looks name up in the kept listing of the folder dir, listing it
// first (with list) when it is not kept: e is nil when the listing does
// not hold name; known is false when no listing is kept.
func (t *tree) listed(ctx context.Context, dir, name string, list bool) (e *zmap.Entry, known bool, err error) {
	key := zmap.Join(dir, name)
	for range 2 {
		if entry, ok := t.lc.Cached(key); ok {
			return &entry, true, nil
		}
		if t.lc.Listed(dir) {
			return nil, true, nil
		}
		if !list {
			break
		}
		if _, err := t.lc.Search(ctx, dir); err != nil {
			return nil, false, err
		}
	}
	return nil, false, nil
}

func (d *dir) newDir(ctx context.Context, key string, out *fuse.EntryOut) *fs.Inode {
	n := d.t.newDirNode(key)
	d.t.fill(&out.Attr, fuse.S_IFDIR|0o555, 0, d.t.ino('d', key))
	stamp(&out.Attr, d.t.dirTime(ctx, key))
	out.Nlink = 2
	return d.NewInode(ctx, n, fs.StableAttr{Mode: fuse.S_IFDIR, Ino: out.Ino})
}

func (d *dir) newObject(ctx context.Context, key string, e zmap.Entry, out *fuse.EntryOut) *fs.Inode {
	n := &object{t: d.t, key: key, size: e.Size, mtime: e.ModTime}
	n.attr(&out.Attr)
	return d.NewInode(ctx, n, fs.StableAttr{Mode: fuse.S_IFREG, Ino: out.Ino})
}

// ready waits, within ctx, for what the dataset must read before it can
// say what is in d (a lazily read group's arrays, nczarr.Dataset.Ready).
func (d *dir) ready(ctx context.Context) syscall.Errno {
	if err := d.t.ds.Ready(ctx, d.key); err != nil {
		return d.t.rep.errno("lookup", d.key, err)
	}
	return 0
}

func (d *dir) Readdir(ctx context.Context) (fs.DirStream, syscall.Errno) {
	ctx, cancel := d.t.bound(ctx)
	defer cancel()
	if errno := d.ready(ctx); errno != 0 {
		return nil, errno
	}
	entries, err := d.t.lc.Search(ctx, d.key)
	if err != nil {
		return nil, d.t.rep.errno("readdir", d.key, err)
	}
	listing := make(map[string]zmap.Entry, len(entries))
	for _, e := range entries {
		listing[e.Name] = e
	}
	list := make([]fuse.DirEntry, 0, len(entries)+1)
	if a := d.arrayOf(); a != nil {
		list = append(list, arrayEntry(d.t, a))
	}
	for _, e := range entries {
		key := zmap.Join(d.key, e.Name)
		if e.Dir {
			list = append(list, fuse.DirEntry{Name: e.Name, Mode: fuse.S_IFDIR, Ino: d.t.ino('d', key)})
		} else {
			list = append(list, fuse.DirEntry{Name: e.Name, Mode: fuse.S_IFREG, Ino: d.t.ino('o', key)})
		}
	}
	return fs.NewListDirStream(d.appendSynth(list, listing)), 0
}

// OpendirHandle lets the kernel keep the folder's entries in its cache
// (FOPEN_CACHE_DIR) for as long as the kept listing they came from: a
// second ls of 100,000 chunks is then answered by the kernel. When the
// listing has been made again since (after --metadata-ttl), the kernel's
// copy is dropped and this open reads the new one.
func (d *dir) OpendirHandle(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	d.t.stats.Kernel.Opendirs.Add(1)
	h := &dirHandle{d: d}
	if d.t.lc.TTL() <= 0 {
		return h, 0, 0
	}
	ctx, cancel := d.t.bound(ctx)
	defer cancel()
	// Listed again if stale: the time says which listing the entries
	// come from.
	if _, err := d.t.lc.Search(ctx, d.key); err != nil {
		return nil, 0, d.t.rep.errno("readdir", d.key, err)
	}
	at, ok := d.t.lc.ListedAt(d.key)
	if !ok {
		return h, 0, 0
	}
	d.mu.Lock()
	old := d.cachedAt
	d.cachedAt = at
	d.mu.Unlock()
	if old.IsZero() || old.Equal(at) {
		return h, fuse.FOPEN_CACHE_DIR | fuse.FOPEN_KEEP_CACHE, 0
	}
	// Not from within the request: the kernel may hold the folder's
	// lock while it waits for this answer.
	go d.NotifyContent(0, 0)
	return h, 0, 0
}

// dirHandle is an open folder: its entries, listed at the first read
// (not at all when the kernel answers from its cache).
type dirHandle struct {
	d  *dir
	ds fs.DirStream
}

var (
	_ fs.FileReaddirenter = (*dirHandle)(nil)
	_ fs.FileSeekdirer    = (*dirHandle)(nil)
	_ fs.FileReleasedirer = (*dirHandle)(nil)
)

func (h *dirHandle) stream(ctx context.Context) syscall.Errno {
	if h.ds != nil {
		return 0
	}
	h.d.t.stats.Kernel.Readdirs.Add(1)
	ds, errno := h.d.Readdir(ctx)
	if errno == 0 {
		h.ds = ds
	}
	return errno
}

func (h *dirHandle) Readdirent(ctx context.Context) (*fuse.DirEntry, syscall.Errno) {
	if errno := h.stream(ctx); errno != 0 {
		return nil, errno
	}
	if !h.ds.HasNext() {
		return nil, 0
	}
	e, errno := h.ds.Next()
	return &e, errno
}

func (h *dirHandle) Seekdir(ctx context.Context, off uint64) syscall.Errno {
	if errno := h.stream(ctx); errno != 0 {
		return errno
	}
	if sd, ok := h.ds.(fs.FileSeekdirer); ok {
		return sd.Seekdir(ctx, off)
	}
	return syscall.ENOTSUP
}

func (h *dirHandle) Releasedir(ctx context.Context, flags uint32) {
	if h.ds != nil {
		h.ds.Close()
	}
}

// object is a stored object, served byte for byte.
type object struct {
	fs.Inode
	t     *tree
	key   string
	size  int64
	mtime time.Time // zero when the store records none
}

var (
	_ fs.NodeOpener    = (*object)(nil)
	_ fs.NodeReader    = (*object)(nil)
	_ fs.NodeGetattrer = (*object)(nil)
)

func (o *object) attr(a *fuse.Attr) {
	o.t.fill(a, fuse.S_IFREG|0o444, uint64(o.size), o.t.ino('o', o.key))
	if !o.mtime.IsZero() {
		stamp(a, o.mtime)
	}
}

func (o *object) Getattr(ctx context.Context, fh fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	o.attr(&out.Attr)
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
	ctx, cancel := o.t.bound(ctx)
	defer cancel()
	n, err := o.t.lc.ReadAt(ctx, o.key, dest, off)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, o.t.rep.errno("read", o.key, err)
	}
	if n < len(dest) {
		// The object ended before the size it was listed with: it
		// changed, or the store lost bytes. A short answer would read
		// as the end of the file to cat and cp.
		return nil, o.t.rep.errno("read", o.key, fmt.Errorf("%w: %d bytes at %d of an object of %d bytes", errShortRead, n, off, o.size))
	}
	return fuse.ReadResultData(dest), 0
}

// errShortRead is the error of a read that got fewer bytes than the file
// holds there.
var errShortRead = errors.New("short read before the end of the file")

// data is an array's decoded bytes.
type data struct {
	fs.Inode
	attrNode // the array's attributes
	t        *tree
	array    *nczarr.Array
}

var (
	_ fs.NodeOpener     = (*data)(nil)
	_ fs.NodeReader     = (*data)(nil)
	_ fs.NodeGetattrer  = (*data)(nil)
	_ fs.NodeGetxattrer = (*data)(nil)
)

func (n *data) attr(ctx context.Context, a *fuse.Attr) {
	n.t.fillData(a, uint64(n.array.Size()), n.t.ino('a', n.array.Path))
	stamp(a, n.t.dirTime(ctx, n.array.Path))
}

func (n *data) Getattr(ctx context.Context, fh fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	ctx, cancel := n.t.bound(ctx)
	defer cancel()
	n.attr(ctx, &out.Attr)
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
	fuseFlags, errno := n.t.openData(flags)
	if errno != 0 {
		return nil, 0, errno
	}
	return &dataHandle{r: n.array.NewReader()}, fuseFlags, 0
}

// openData is openReadOnly for the files that hold decoded data, which
// are opened for direct I/O unless the mount serves them through the
// page cache (Options.PageCache). FOPEN_KEEP_CACHE still keeps the pages
// of a memory map across opens.
func (t *tree) openData(flags uint32) (uint32, syscall.Errno) {
	_, fuseFlags, errno := openReadOnly(flags)
	if t.direct.Load() {
		fuseFlags |= fuse.FOPEN_DIRECT_IO
	}
	return fuseFlags, errno
}

// fillData is fill for the files that hold decoded data: with direct I/O
// each read is a request, so they ask for reads of readSize.
func (t *tree) fillData(a *fuse.Attr, size uint64, inode uint64) {
	t.fill(a, fuse.S_IFREG|0o444, size, inode)
	if t.direct.Load() {
		a.Blksize = readSize
	}
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
	ctx, cancel := n.t.bound(ctx)
	defer cancel()
	m, err := read(ctx, dest, off)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, n.t.rep.errno("read data", n.array.Path, err)
	}
	if m < len(dest) {
		return nil, n.t.rep.errno("read data", n.array.Path, fmt.Errorf("%w: %d bytes at %d of %d", errShortRead, m, off, n.array.Size()))
	}
	return fuse.ReadResultData(dest), 0
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
