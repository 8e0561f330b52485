package fusefs

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/nczarrfs/nczarrfs/cache"
	"github.com/nczarrfs/nczarrfs/nczarr"
	"github.com/nczarrfs/nczarrfs/zmap"
)

// VersionSource is a dataset that has other versions of itself (the
// branches, tags and snapshots of an Icechunk repository), each a store
// of its own. The mount shows them as whole trees under Versions.Dir,
// knowing nothing of where they come from.
type VersionSource interface {
	// Kinds names the folders of versions, in listing order
	// ("branches", "tags", "snapshots").
	Kinds() []string
	// Names lists the versions of a kind, reading none of them.
	Names(ctx context.Context, kind string) ([]string, error)
	// Has reports whether a version exists, reading none of it.
	Has(ctx context.Context, kind, name string) (bool, error)
	// Open opens the store of one version; an error wrapping
	// zmap.ErrNotFound when there is no such version.
	Open(ctx context.Context, kind, name string) (zmap.Store, error)
	// Files names the files beside the kinds' folders
	// ("snapshots.json"), and File makes one.
	Files() []string
	File(ctx context.Context, name string) ([]byte, error)
}

// Versions puts the versions of a VersionSource in a folder at the
// mount's root.
type Versions struct {
	// Dir is the folder's name (".icechunk").
	Dir    string
	Source VersionSource
	// CacheBytes is the chunk cache of each version opened (0: 32 MiB).
	// A version's chunks are not the mount's under the same keys, so
	// each keeps its own.
	CacheBytes int64
}

// versionState is what a mount keeps of its versions: its options, for
// the trees of the versions, and the versions opened.
type versionState struct {
	cfg  Versions
	opts Options
	mu   sync.Mutex
	open map[string]*versionOnce // "kind/name" -> the version's tree
}

type versionOnce struct {
	done chan struct{}
	t    *tree
	err  error
}

// versionsName is the root's synthesized name for the versions' folder.
func (t *tree) versionsName() (synthName, bool) {
	if t.versions == nil {
		return synthName{}, false
	}
	return synthName{t.versions.cfg.Dir, fuse.S_IFDIR, t.ino('V', ""), func() synthNode {
		return &versionsDir{t: t}
	}}, true
}

// versionsDir is Versions.Dir: a folder per kind and the files.
type versionsDir struct {
	fs.Inode
	t *tree
}

var (
	_ fs.NodeLookuper  = (*versionsDir)(nil)
	_ fs.NodeReaddirer = (*versionsDir)(nil)
	_ fs.NodeGetattrer = (*versionsDir)(nil)
)

func (v *versionsDir) live() bool { return false }

func (v *versionsDir) attr(ctx context.Context, a *fuse.Attr) error {
	v.t.fill(a, fuse.S_IFDIR|0o555, 0, v.t.ino('V', ""))
	a.Nlink = 2
	return nil
}

func (v *versionsDir) Getattr(ctx context.Context, fh fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	v.attr(ctx, &out.Attr)
	return 0
}

func (v *versionsDir) src() VersionSource { return v.t.versions.cfg.Source }

func (v *versionsDir) file(name string) *synthFile {
	return v.t.staticFile(v.t.ino('V', "/"+name), "", func(ctx context.Context) ([]byte, error) {
		return v.src().File(ctx, name)
	})
}

func (v *versionsDir) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	ctx, cancel := v.t.bound(ctx)
	defer cancel()
	if slices.Contains(v.src().Kinds(), name) {
		k := &kindDir{t: v.t, kind: name}
		k.attr(&out.Attr)
		return v.NewInode(ctx, k, fs.StableAttr{Mode: fuse.S_IFDIR, Ino: out.Ino}), 0
	}
	if slices.Contains(v.src().Files(), name) {
		f := v.file(name)
		if err := f.attr(ctx, &out.Attr); err != nil {
			return nil, v.t.rep.errno("lookup", v.t.versions.cfg.Dir+"/"+name, err)
		}
		return v.NewInode(ctx, f, fs.StableAttr{Mode: fuse.S_IFREG, Ino: f.ino}), 0
	}
	return nil, syscall.ENOENT
}

func (v *versionsDir) Readdir(ctx context.Context) (fs.DirStream, syscall.Errno) {
	var list []fuse.DirEntry
	for _, k := range v.src().Kinds() {
		list = append(list, fuse.DirEntry{Name: k, Mode: fuse.S_IFDIR, Ino: v.t.ino('V', k)})
	}
	for _, f := range v.src().Files() {
		list = append(list, fuse.DirEntry{Name: f, Mode: fuse.S_IFREG, Ino: v.t.ino('V', "/"+f)})
	}
	return fs.NewListDirStream(list), 0
}

// kindDir is the folder of one kind of version: a folder per version,
// whose tree is opened when it is first looked up.
type kindDir struct {
	fs.Inode
	t    *tree
	kind string
}

var (
	_ fs.NodeLookuper  = (*kindDir)(nil)
	_ fs.NodeReaddirer = (*kindDir)(nil)
	_ fs.NodeGetattrer = (*kindDir)(nil)
)

func (k *kindDir) attr(a *fuse.Attr) {
	k.t.fill(a, fuse.S_IFDIR|0o555, 0, k.t.ino('V', k.kind))
	a.Nlink = 2
}

func (k *kindDir) Getattr(ctx context.Context, fh fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	k.attr(&out.Attr)
	return 0
}

func (k *kindDir) Readdir(ctx context.Context) (fs.DirStream, syscall.Errno) {
	ctx, cancel := k.t.bound(ctx)
	defer cancel()
	names, err := k.t.versions.cfg.Source.Names(ctx, k.kind)
	if err != nil {
		return nil, k.t.rep.errno("readdir", k.t.versions.cfg.Dir+"/"+k.kind, err)
	}
	list := make([]fuse.DirEntry, 0, len(names))
	for _, n := range names {
		list = append(list, fuse.DirEntry{Name: n, Mode: fuse.S_IFDIR, Ino: inoIn(versionSalt(k.kind, n), 'd', "")})
	}
	return fs.NewListDirStream(list), 0
}

func versionSalt(kind, name string) string { return "\x00version\x00" + kind + "\x00" + name + "\x00" }

func (k *kindDir) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	ctx, cancel := k.t.bound(ctx)
	defer cancel()
	path := k.t.versions.cfg.Dir + "/" + k.kind + "/" + name
	ok, err := k.t.versions.cfg.Source.Has(ctx, k.kind, name)
	if err != nil {
		return nil, k.t.rep.errno("lookup", path, err)
	}
	if !ok {
		return nil, syscall.ENOENT
	}
	v := &versionRoot{dir: &dir{}, parent: k.t, kind: k.kind, name: name}
	v.attr(&out.Attr)
	return k.NewInode(ctx, v, fs.StableAttr{Mode: fuse.S_IFDIR, Ino: out.Ino}), 0
}

// versionRoot is the folder of one version: the root of its tree, which
// is opened (its snapshot read) when first looked into, not when the
// folder is looked up or listed (ls -l of the versions' folder).
type versionRoot struct {
	// *dir is the root of the version's tree once opened; until then
	// only its Inode, which is this node's, is used.
	*dir
	parent     *tree
	kind, name string

	mu     sync.Mutex
	opened bool // GUARDED_BY(mu)
	empty  bool // GUARDED_BY(mu): the version holds no dataset
}

var (
	_ fs.NodeLookuper       = (*versionRoot)(nil)
	_ fs.NodeReaddirer      = (*versionRoot)(nil)
	_ fs.NodeOpendirHandler = (*versionRoot)(nil)
	_ fs.NodeGetattrer      = (*versionRoot)(nil)
	_ fs.NodeGetxattrer     = (*versionRoot)(nil)
	_ fs.NodeListxattrer    = (*versionRoot)(nil)
)

func (v *versionRoot) attr(a *fuse.Attr) {
	v.parent.fill(a, fuse.S_IFDIR|0o555, 0, inoIn(versionSalt(v.kind, v.name), 'd', ""))
	a.Nlink = 2
}

// open opens the version's tree, once; empty reports a version that
// holds no dataset (a repository's first, empty snapshot).
func (v *versionRoot) open(ctx context.Context) (empty bool, errno syscall.Errno) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.opened {
		return v.empty, 0
	}
	vt, err := v.parent.openVersion(ctx, v.kind, v.name)
	if errors.Is(err, nczarr.ErrNoDataset) {
		v.opened, v.empty = true, true
		return true, 0
	}
	if err != nil {
		return false, v.parent.rep.errno("open", v.parent.versions.cfg.Dir+"/"+v.kind+"/"+v.name, err)
	}
	v.dir.t, v.dir.key, v.dir.attrNode = vt, "", vt.attrNode("")
	v.opened = true
	return false, 0
}

func (v *versionRoot) Getattr(ctx context.Context, fh fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	v.attr(&out.Attr)
	return 0
}

func (v *versionRoot) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if empty, errno := v.open(ctx); errno != 0 || empty {
		return nil, errnoOr(errno, syscall.ENOENT)
	}
	return v.dir.Lookup(ctx, name, out)
}

func (v *versionRoot) Readdir(ctx context.Context) (fs.DirStream, syscall.Errno) {
	if empty, errno := v.open(ctx); errno != 0 || empty {
		return fs.NewListDirStream(nil), errno
	}
	return v.dir.Readdir(ctx)
}

func (v *versionRoot) OpendirHandle(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	if empty, errno := v.open(ctx); errno != 0 || empty {
		if errno != 0 {
			return nil, 0, errno
		}
		return &emptyDirHandle{}, 0, 0
	}
	return v.dir.OpendirHandle(ctx, flags)
}

func (v *versionRoot) Getxattr(ctx context.Context, name string, dest []byte) (uint32, syscall.Errno) {
	if !strings.HasPrefix(name, xattrPrefix) {
		// ls -l asks every entry for its ACL: no reason to open it.
		return 0, syscall.ENODATA
	}
	if empty, errno := v.open(ctx); errno != 0 || empty {
		return 0, errnoOr(errno, syscall.ENODATA)
	}
	return v.dir.Getxattr(ctx, name, dest)
}

func (v *versionRoot) Listxattr(ctx context.Context, dest []byte) (uint32, syscall.Errno) {
	if empty, errno := v.open(ctx); errno != 0 || empty {
		return 0, errno
	}
	return v.dir.Listxattr(ctx, dest)
}

// errnoOr is errno, or def when errno is 0.
func errnoOr(errno, def syscall.Errno) syscall.Errno {
	if errno != 0 {
		return errno
	}
	return def
}

// emptyDirHandle lists nothing.
type emptyDirHandle struct{}

func (*emptyDirHandle) Readdirent(ctx context.Context) (*fuse.DirEntry, syscall.Errno) {
	return nil, 0
}

// openVersion opens (once) the tree of a version.
func (t *tree) openVersion(ctx context.Context, kind, name string) (*tree, error) {
	vs := t.versions
	key := kind + "/" + name
	vs.mu.Lock()
	o, ok := vs.open[key]
	if !ok {
		o = &versionOnce{done: make(chan struct{})}
		vs.open[key] = o
	}
	vs.mu.Unlock()
	if !ok {
		o.t, o.err = t.newVersionTree(ctx, kind, name)
		if o.err != nil {
			vs.mu.Lock()
			delete(vs.open, key) // asked again at the next lookup
			vs.mu.Unlock()
		}
		close(o.done)
	}
	select {
	case <-o.done:
		return o.t, o.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (t *tree) newVersionTree(ctx context.Context, kind, name string) (*tree, error) {
	vs := t.versions
	st, err := vs.cfg.Source.Open(ctx, kind, name)
	if err != nil {
		return nil, err
	}
	budget := vs.cfg.CacheBytes
	if budget <= 0 {
		budget = 32 << 20
	}
	ds, err := nczarr.Open(ctx, st, nczarr.Options{Cache: cache.New(budget), Logger: vs.opts.Logger})
	if err != nil {
		st.Close()
		return nil, fmt.Errorf("%s %s: %w", kind, name, err)
	}
	opts := vs.opts
	opts.Listings, opts.Versions = nil, nil
	vt := newTree(ds, st, opts)
	vt.salt = versionSalt(kind, name)
	return vt, nil
}
