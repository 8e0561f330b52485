package fusefs

import (
	"context"
	"errors"
	"sync"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/nczarrfs/nczarrfs/zmap"
)

// Names of the files and folders the mount synthesizes besides data (see
// docs/tree.md). None of them shadows a stored object of the same name:
// the stored object wins, and the synthesized one is then not shown.
const (
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
	// node makes the node and fills its attributes.
	node func(d *dir, a *fuse.Attr) fs.InodeEmbedder
}

// synthNames lists what the mount adds to d, in listing order.
func (d *dir) synthNames() []synthName {
	var names []synthName
	if d.key == "" {
		names = append(names, synthName{ControlDir, newControlDir})
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
		node := s.node(d, &out.Attr)
		if isLive(node) {
			out.SetAttrTimeout(liveTimeout)
		}
		return d.NewInode(ctx, node, fs.StableAttr{Mode: out.Attr.Mode & syscall.S_IFMT, Ino: out.Attr.Ino}), 0, true
	}
	return nil, 0, false
}

// stored reports whether the store has an object or a prefix named name
// in d, from the last listing when there is one.
func (d *dir) stored(ctx context.Context, name string) (bool, error) {
	d.mu.Lock()
	listing := d.listing
	d.mu.Unlock()
	if listing != nil {
		_, ok := listing[name]
		return ok, nil
	}
	key := zmap.Join(d.key, name)
	_, err := d.t.store.Size(ctx, key)
	if err == nil {
		return true, nil
	}
	if !errors.Is(err, zmap.ErrNotFound) {
		return false, err
	}
	entries, err := d.t.store.Search(ctx, key)
	return len(entries) > 0, err
}

// appendSynth adds to a Readdir list the synthesized names that no stored
// name in listing hides.
func (d *dir) appendSynth(list []fuse.DirEntry, listing map[string]zmap.Entry) []fuse.DirEntry {
	for _, s := range d.synthNames() {
		if _, ok := listing[s.name]; ok {
			continue
		}
		var a fuse.Attr
		s.node(d, &a)
		list = append(list, fuse.DirEntry{Name: s.name, Mode: a.Mode & syscall.S_IFMT, Ino: a.Ino})
	}
	return list
}

// liveNode is implemented by nodes whose attributes change while mounted.
type liveNode interface{ live() bool }

func isLive(n fs.InodeEmbedder) bool {
	l, ok := n.(liveNode)
	return ok && l.live()
}

// synthFile is a small file whose content the mount makes up. Static
// content is made once, on first use, and may be kept by the kernel; live
// content is made anew at each open (so a reader sees one consistent
// snapshot) and at each stat, and is served with direct_io.
type synthFile struct {
	fs.Inode
	t       *tree
	ino     uint64
	isLive  bool
	content func(ctx context.Context) ([]byte, error)

	mu     sync.Mutex
	cached []byte // GUARDED_BY(mu): static content once made
	made   bool   // GUARDED_BY(mu)
}

var (
	_ fs.NodeOpener    = (*synthFile)(nil)
	_ fs.NodeReader    = (*synthFile)(nil)
	_ fs.NodeGetattrer = (*synthFile)(nil)
)

func (f *synthFile) live() bool { return f.isLive }

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
	b, err := f.bytes(ctx)
	f.t.fill(a, fuse.S_IFREG|0o444, uint64(len(b)), f.ino)
	return err
}

func (f *synthFile) Getattr(ctx context.Context, fh fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	if err := f.attr(ctx, &out.Attr); err != nil {
		return f.t.rep.errno("stat", f.Path(nil), err)
	}
	if f.isLive {
		out.SetTimeout(liveTimeout)
	}
	return 0
}

// snapshot is the handle of an open live file: its content at open.
type snapshot struct{ b []byte }

func (f *synthFile) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	_, keep, errno := openReadOnly(flags)
	if errno != 0 {
		return nil, 0, errno
	}
	b, err := f.bytes(ctx)
	if err != nil {
		return nil, 0, f.t.rep.errno("open", f.Path(nil), err)
	}
	if f.isLive {
		return &snapshot{b}, fuse.FOPEN_DIRECT_IO, 0
	}
	return nil, keep, 0
}

func (f *synthFile) Read(ctx context.Context, fh fs.FileHandle, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
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

func newControlDir(d *dir, a *fuse.Attr) fs.InodeEmbedder {
	c := &controlDir{t: d.t}
	c.attr(a)
	return c
}

func (c *controlDir) attr(a *fuse.Attr) {
	c.t.fill(a, fuse.S_IFDIR|0o555, 0, ino('c', ControlDir))
	a.Nlink = 2
}

func (c *controlDir) Getattr(ctx context.Context, fh fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	c.attr(&out.Attr)
	return 0
}

// files returns the control files by name.
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
	return &synthFile{t: c.t, ino: ino('c', ControlDir+"/"+name), isLive: true, content: content}
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
