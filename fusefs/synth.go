package fusefs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/nczarrfs/nczarrfs/describe"
	"github.com/nczarrfs/nczarrfs/describe/preview"
	"github.com/nczarrfs/nczarrfs/nczarr"
	"github.com/nczarrfs/nczarrfs/zmap"
)

// Names of the files and folders the mount synthesizes besides data (see
// docs/tree.md). None of them shadows a stored object of the same name:
// the stored object wins, and the synthesized one is then not shown.
const (
	// NPYName, in an array of fixed-size elements, is data behind a
	// NumPy .npy header.
	NPYName = "data.npy"
	// VRTName, in a numeric array of 2 or more dimensions, is a GDAL raw
	// VRT over data.
	VRTName = "data.vrt"
	// InfoName, in every array, describes it as JSON (describe.Info).
	InfoName = "info.json"
	// HeaderName, in the root of a dataset whose root is a group, is the
	// dataset's header as ncdump -h prints it.
	HeaderName = "header.cdl"
	// ControlDir, in the root, holds the mount's live counters.
	ControlDir = ".nczarrfs"
	// StatsName and ErrorsName are the files in ControlDir.
	StatsName  = "stats"
	ErrorsName = "errors"
)

// liveTimeout is the attribute timeout of files whose content changes:
// as short as the kernel allows (0 would mean "the mount's default").
const liveTimeout = time.Nanosecond

// synthName is a name the mount adds to a directory.
type synthName struct {
	name string
	mode uint32 // fuse.S_IFREG or fuse.S_IFDIR
	ino  uint64
	node func() synthNode
}

// synthNode is a node the mount makes up.
type synthNode interface {
	fs.InodeEmbedder
	// attr fills a; it may have to make the content to know its size.
	attr(ctx context.Context, a *fuse.Attr) error
	// live reports content that changes while mounted.
	live() bool
}

// arrayFiles is what the synthesized files of one array need that takes
// some work to make, made once per array.
type arrayFiles struct {
	npy []byte // the .npy header; nil when the array has no numpy dtype
	// vrt tells whether GDAL can describe the array. The VRT itself is
	// made again when the file is used: with a band per leading index it
	// can run to megabytes, not to be kept for every array listed.
	vrt bool
	// preview tells whether the array has a picture (preview.go), and
	// previewSize is its size once drawn.
	preview     bool
	previewSize atomic.Int64
}

func (t *tree) arrayFiles(a *nczarr.Array) *arrayFiles {
	if f, ok := t.files.Load(a.Path); ok {
		return f.(*arrayFiles)
	}
	f := &arrayFiles{}
	if !a.Objects() {
		f.npy, _ = describe.NPYHeader(a)
		_, f.vrt = describe.VRT(a, DataName)
		f.preview = preview.Supported(a)
	}
	if nczarr.Unreachable(a.Err) {
		return f // not kept: the array is read again
	}
	got, _ := t.files.LoadOrStore(a.Path, f)
	return got.(*arrayFiles)
}

// synthNames lists what the mount adds to d, in listing order.
func (d *dir) synthNames() []synthName {
	t := d.t
	var names []synthName
	if a := d.arrayOf(); a != nil {
		f := t.arrayFiles(a)
		if f.npy != nil {
			names = append(names, synthName{NPYName, fuse.S_IFREG, t.ino('n', a.Path), func() synthNode {
				return &npyFile{attrNode: t.attrNode(a.Path), t: t, array: a, header: f.npy}
			}})
		}
		if f.vrt {
			names = append(names, synthName{VRTName, fuse.S_IFREG, t.ino('v', a.Path), func() synthNode {
				return t.staticFile(t.ino('v', a.Path), a.Path, func(context.Context) ([]byte, error) {
					vrt, _ := describe.VRT(a, DataName)
					return vrt, nil
				})
			}})
		}
		if f.preview {
			names = append(names, synthName{PreviewName, fuse.S_IFREG, t.ino('p', a.Path), func() synthNode { return t.previewFile(a) }})
		}
		names = append(names, synthName{InfoName, fuse.S_IFREG, t.ino('i', a.Path), func() synthNode {
			return t.staticFile(t.ino('i', a.Path), a.Path, func(ctx context.Context) ([]byte, error) {
				// It says where the array is in its group's dataset.nc,
				// when that is made: making it reads the metadata of
				// every array of the group.
				var c *describe.Classic
				if parent := describe.ParentGroup(a.Path); t.classicMade(parent) || !t.ds.Unread() {
					c, _ = t.classic(ctx, parent)
				}
				return describe.InfoIn(ctx, t.ds, a.Path, c)
			})
		}})
	}
	if t.ds.Group(d.key) != nil {
		names = append(names, synthName{IndexName, fuse.S_IFREG, t.ino('x', d.key), func() synthNode { return t.indexFile(d.key) }})
		names = append(names, synthName{ClassicName, fuse.S_IFREG, t.ino('N', d.key), func() synthNode { return &classicFile{t: t, key: d.key} }})
	}
	if d.key == "" {
		if t.ds.Group("") != nil {
			names = append(names, synthName{HeaderName, fuse.S_IFREG, t.ino('h', ""), func() synthNode {
				f := t.staticFile(t.ino('h', ""), "", func(ctx context.Context) ([]byte, error) {
					return describe.CDL(ctx, t.ds, t.name)
				})
				// It needs every array: on a lazily read dataset it is
				// made when opened, not at a stat (ls -l).
				f.deferred = t.ds.Unread
				return f
			}})
		}
		names = append(names, synthName{ControlDir, fuse.S_IFDIR, t.ino('c', ControlDir), func() synthNode {
			return &controlDir{t: t}
		}})
		if v, ok := t.versionsName(); ok {
			names = append(names, v)
		}
	}
	return names
}

// lookupSynth is Lookup for the synthesized names: ok is false when name
// is not one, or when a stored object or prefix of that name hides it.
func (d *dir) lookupSynth(ctx context.Context, name string, out *fuse.EntryOut) (in *fs.Inode, errno syscall.Errno, ok bool) {
	for _, s := range d.synthNames() {
		if s.name != name {
			continue
		}
		stored, err := d.stored(ctx, name)
		if err != nil {
			return nil, d.t.rep.errno("lookup", zmap.Join(d.key, name), err), true
		}
		if stored {
			return nil, 0, false
		}
		node := s.node()
		if err := node.attr(ctx, &out.Attr); err != nil {
			return nil, d.t.rep.errno("lookup", zmap.Join(d.key, name), err), true
		}
		if node.live() {
			out.SetAttrTimeout(liveTimeout)
		}
		return d.NewInode(ctx, node, fs.StableAttr{Mode: s.mode, Ino: s.ino}), 0, true
	}
	return nil, 0, false
}

// stored reports whether the store has an object or a prefix named name
// in d, from the last listing when there is one.
func (d *dir) stored(ctx context.Context, name string) (bool, error) {
	key := zmap.Join(d.key, name)
	if _, ok := d.t.lc.Cached(key); ok {
		return true, nil
	}
	if d.t.lc.Listed(d.key) {
		return false, nil
	}
	// Not listed: two requests (a HEAD and a LIST of the name) rather
	// than a listing of a folder that may hold 100,000 chunks before the
	// first byte of data.
	_, err := d.t.lc.Stat(ctx, key)
	if err == nil {
		return true, nil
	}
	if !errors.Is(err, zmap.ErrNotFound) {
		return false, err
	}
	entries, err := d.t.lc.Search(ctx, key)
	return len(entries) > 0, err
}

// appendSynth adds to a Readdir list the synthesized names that no stored
// name in listing hides.
func (d *dir) appendSynth(list []fuse.DirEntry, listing map[string]zmap.Entry) []fuse.DirEntry {
	for _, s := range d.synthNames() {
		if _, ok := listing[s.name]; !ok {
			list = append(list, fuse.DirEntry{Name: s.name, Mode: s.mode, Ino: s.ino})
		}
	}
	return list
}

// synthFile is a small file whose content the mount makes up. Static
// content is made once, on first use, and may be kept by the kernel; live
// content is made anew at each open (so a reader sees one consistent
// snapshot) and at each stat, and is served with direct_io.
type synthFile struct {
	fs.Inode
	t       *tree
	ino     uint64
	timeKey string // the directory whose time the file has, unless live
	isLive  bool
	content func(ctx context.Context) ([]byte, error)

	// deferred, when it says so, leaves static content that is not
	// made yet to the first open: a stat then shows size 0 for an
	// instant (liveTimeout), and that open reads with direct I/O.
	deferred func() bool
	// opened, when set, is called by each open that succeeds.
	opened func()

	mu     sync.Mutex
	cached []byte // GUARDED_BY(mu): static content once made
	made   bool   // GUARDED_BY(mu)
}

// unsized reports whether the file's size is not known until it is made.
func (f *synthFile) unsized() bool {
	if f.isLive || f.deferred == nil {
		return false
	}
	f.mu.Lock()
	made := f.made
	f.mu.Unlock()
	return !made && f.deferred()
}

var (
	_ fs.NodeOpener    = (*synthFile)(nil)
	_ fs.NodeReader    = (*synthFile)(nil)
	_ fs.NodeGetattrer = (*synthFile)(nil)
)

// staticFile returns a file whose content, made by content, does not
// change while mounted; it has the time of the directory timeKey.
func (t *tree) staticFile(ino uint64, timeKey string, content func(context.Context) ([]byte, error)) *synthFile {
	return &synthFile{t: t, ino: ino, timeKey: timeKey, content: content}
}

// live reports content whose size may change: live content, or content
// not made yet.
func (f *synthFile) live() bool { return f.isLive || f.unsized() }

// bytes returns the file's content now.
func (f *synthFile) bytes(ctx context.Context) ([]byte, error) {
	if f.isLive {
		return f.content(ctx)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.made {
		b, err := f.content(ctx)
		if err != nil {
			return nil, err // not kept: the next call tries again
		}
		f.cached, f.made = b, true
	}
	return f.cached, nil
}

// attr fills a with the file's attributes; the size is the content's.
func (f *synthFile) attr(ctx context.Context, a *fuse.Attr) error {
	if f.unsized() {
		f.t.fill(a, fuse.S_IFREG|0o444, 0, f.ino)
		stamp(a, f.t.dirTime(ctx, f.timeKey))
		return nil
	}
	b, err := f.bytes(ctx)
	f.t.fill(a, fuse.S_IFREG|0o444, uint64(len(b)), f.ino)
	if !f.isLive {
		stamp(a, f.t.dirTime(ctx, f.timeKey))
	} // else the mount's start, when the counters started
	return err
}

func (f *synthFile) Getattr(ctx context.Context, fh fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	ctx, cancel := f.t.bound(ctx)
	defer cancel()
	if err := f.attr(ctx, &out.Attr); err != nil {
		return f.t.rep.errno("stat", f.Path(nil), err)
	}
	if f.live() {
		out.SetTimeout(liveTimeout)
	}
	return 0
}

// sizeKnown tells the kernel that the attributes it keeps of n, a file
// made on demand whose size it was given as 0, are stale: called by the
// open that made the file, before it answers, so that the fstat readers
// make after opening (Chromium's file loader, mmap readers, Python's
// read()) asks again and sees the true size before the first read. Only
// the attributes (offset -1): the file has no pages to drop. A kernel
// that has forgotten the inode (ENOENT) has nothing to forget.
func (t *tree) sizeKnown(n *fs.Inode, path string) {
	if errno := n.NotifyContent(-1, 0); errno != 0 && errno != syscall.ENOENT {
		t.rep.log.Debug("kernel not told of a file's size", "path", path, "errno", errno)
	}
}

// snapshot is the handle of an open live file: its content at open.
type snapshot struct{ b []byte }

func (f *synthFile) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	ctx, cancel := f.t.bound(ctx)
	defer cancel()
	_, keep, errno := openReadOnly(flags)
	if errno != 0 {
		return nil, 0, errno
	}
	unsized := f.unsized()
	if unsized {
		// The kernel was told size 0: read past it, not from its cache.
		keep = fuse.FOPEN_DIRECT_IO
	}
	b, err := f.bytes(ctx)
	if err != nil {
		return nil, 0, f.t.rep.errno("open", f.Path(nil), err)
	}
	if unsized {
		f.t.sizeKnown(&f.Inode, f.Path(nil))
	}
	if f.opened != nil {
		f.opened()
	}
	if f.isLive {
		return &snapshot{b}, fuse.FOPEN_DIRECT_IO, 0
	}
	return nil, keep, 0
}

func (f *synthFile) Read(ctx context.Context, fh fs.FileHandle, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	ctx, cancel := f.t.bound(ctx)
	defer cancel()
	var b []byte
	if s, ok := fh.(*snapshot); ok {
		b = s.b
	} else {
		var err error
		if b, err = f.bytes(ctx); err != nil {
			return nil, f.t.rep.errno("read", f.Path(nil), err)
		}
	}
	dest = clamp(dest, off, int64(len(b)))
	if len(dest) == 0 {
		return fuse.ReadResultData(nil), 0
	}
	return fuse.ReadResultData(b[off : off+int64(len(dest))]), 0
}

// npyFile is NPYName: the .npy header, then the array's decoded bytes,
// read like data (each open file with its own read-ahead).
type npyFile struct {
	fs.Inode
	attrNode
	t      *tree
	array  *nczarr.Array
	header []byte
}

var (
	_ fs.NodeOpener     = (*npyFile)(nil)
	_ fs.NodeReader     = (*npyFile)(nil)
	_ fs.NodeGetattrer  = (*npyFile)(nil)
	_ fs.NodeGetxattrer = (*npyFile)(nil)
)

func (f *npyFile) live() bool { return false }

func (f *npyFile) size() int64 { return int64(len(f.header)) + f.array.Size() }

func (f *npyFile) attr(ctx context.Context, a *fuse.Attr) error {
	f.t.fillData(a, uint64(f.size()), f.t.ino('n', f.array.Path))
	stamp(a, f.t.dirTime(ctx, f.array.Path))
	return nil
}

func (f *npyFile) Getattr(ctx context.Context, fh fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	ctx, cancel := f.t.bound(ctx)
	defer cancel()
	f.attr(ctx, &out.Attr)
	return 0
}

// Open fails at once, as data's does, for an array that cannot be read.
func (f *npyFile) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	if f.array.Err != nil {
		return nil, 0, f.t.rep.errno("open "+NPYName, f.array.Path, f.array.Err)
	}
	fuseFlags, errno := f.t.openData(flags)
	if errno != 0 {
		return nil, 0, errno
	}
	return &dataHandle{r: f.array.NewReader()}, fuseFlags, 0
}

func (f *npyFile) Read(ctx context.Context, fh fs.FileHandle, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	dest = clamp(dest, off, f.size())
	if len(dest) == 0 {
		return fuse.ReadResultData(nil), 0
	}
	n := 0
	if h := int64(len(f.header)); off < h {
		n = copy(dest, f.header[off:])
	}
	if n < len(dest) {
		read := f.array.ReadAt
		if h, ok := fh.(*dataHandle); ok {
			read = h.r.ReadAt
		}
		ctx, cancel := f.t.bound(ctx)
		defer cancel()
		m, err := read(ctx, dest[n:], off+int64(n)-int64(len(f.header)))
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, f.t.rep.errno("read "+NPYName, f.array.Path, err)
		}
		if n += m; n < len(dest) {
			return nil, f.t.rep.errno("read "+NPYName, f.array.Path, fmt.Errorf("%w: %d bytes at %d of %d", errShortRead, n, off, f.size()))
		}
	}
	return fuse.ReadResultData(dest), 0
}

// controlDir is ControlDir: the mount's live counters and last errors.
type controlDir struct {
	fs.Inode
	t *tree
}

var (
	_ fs.NodeLookuper  = (*controlDir)(nil)
	_ fs.NodeReaddirer = (*controlDir)(nil)
	_ fs.NodeGetattrer = (*controlDir)(nil)
)

func (c *controlDir) live() bool { return false }

func (c *controlDir) attr(ctx context.Context, a *fuse.Attr) error {
	c.t.fill(a, fuse.S_IFDIR|0o555, 0, c.t.ino('c', ControlDir))
	stamp(a, c.t.dirTime(ctx, ""))
	a.Nlink = 2
	return nil
}

func (c *controlDir) Getattr(ctx context.Context, fh fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	c.attr(ctx, &out.Attr)
	return 0
}

// file returns the control file name, or nil.
func (c *controlDir) file(name string) *synthFile {
	var content func(context.Context) ([]byte, error)
	switch name {
	case StatsName:
		content = func(context.Context) ([]byte, error) { return c.t.stats.JSON(), nil }
	case ErrorsName:
		content = func(context.Context) ([]byte, error) { return c.t.stats.Errors().JSONLines(), nil }
	default:
		return nil
	}
	return &synthFile{t: c.t, ino: c.t.ino('c', ControlDir+"/"+name), isLive: true, content: content}
}

func (c *controlDir) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	f := c.file(name)
	if f == nil {
		return nil, syscall.ENOENT
	}
	if err := f.attr(ctx, &out.Attr); err != nil {
		return nil, c.t.rep.errno("lookup", ControlDir+"/"+name, err)
	}
	out.SetAttrTimeout(liveTimeout)
	return c.NewInode(ctx, f, fs.StableAttr{Mode: fuse.S_IFREG, Ino: f.ino}), 0
}

func (c *controlDir) Readdir(ctx context.Context) (fs.DirStream, syscall.Errno) {
	var list []fuse.DirEntry
	for _, name := range []string{ErrorsName, StatsName} {
		list = append(list, fuse.DirEntry{Name: name, Mode: fuse.S_IFREG, Ino: c.file(name).ino})
	}
	return fs.NewListDirStream(list), 0
}
