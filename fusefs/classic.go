package fusefs

import (
	"context"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/nczarrfs/nczarrfs/describe"
)

// ClassicName, in every group, is the group as a netCDF classic file
// (describe.NewClassic): its header made from metadata, its variables'
// values read through the chunk cache as data is.
const ClassicName = describe.ClassicName

// classicEntry is a group's classic file, made once (at its first
// lookup) and logged then.
type classicEntry struct {
	once sync.Once
	done chan struct{} // closed once c or err is set
	c    *describe.Classic
	err  error
	made atomic.Bool // c is made
}

// classicMade reports whether the classic file of the group key is made.
func (t *tree) classicMade(key string) bool {
	v, ok := t.classics.Load(key)
	return ok && v.(*classicEntry).made.Load()
}

// classic returns the classic file of the group key, making it once; a
// failure is not kept, so a later lookup tries again.
//
// The file is made for every caller, not for the first one: it is made in
// the background with the first caller's values but not its cancellation
// (bounded by the mount's request timeout instead), and each caller waits
// for it or for its own context. An interrupted first caller (^C of ls)
// then fails only itself.
func (t *tree) classic(ctx context.Context, key string) (*describe.Classic, error) {
	v, _ := t.classics.LoadOrStore(key, &classicEntry{done: make(chan struct{})})
	e := v.(*classicEntry)
	e.once.Do(func() {
		mctx, cancel := t.bound(context.WithoutCancel(ctx))
		go func() {
			defer close(e.done)
			defer cancel()
			e.c, e.err = t.makeClassic(mctx, key)
			if e.err != nil {
				t.classics.CompareAndDelete(key, e)
				return
			}
			e.made.Store(true)
		}()
	})
	select {
	case <-e.done:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if e.err != nil {
		return nil, e.err
	}
	return e.c, nil
}

// makeClassic makes the classic file of the group key and logs it.
func (t *tree) makeClassic(ctx context.Context, key string) (*describe.Classic, error) {
	// On a dataset read lazily, the group's arrays first.
	if err := t.ds.Ready(ctx, classicPath(key)); err != nil {
		return nil, err
	}
	c, err := describe.NewClassic(ctx, t.ds, key)
	if err != nil {
		return nil, err
	}
	args := []any{"key", classicPath(key), "format", c.Format().String(), "size", c.Size()}
	if c.Why5 != "" {
		args = append(args, "why", c.Why5)
	}
	t.rep.log.Info("netCDF classic file", args...)
	for _, o := range c.Omitted {
		t.rep.log.Warn("left out of "+ClassicName, "key", classicPath(key), "what", o)
	}
	return c, nil
}

// classicPath is the key of the classic file of the group key.
func classicPath(key string) string { return describe.ClassicPath(key) }

// classicFile is ClassicName of a group. Its file is made at the first
// lookup (attr), which fails with the reason when it cannot be made; on a
// dataset read lazily whose arrays are not all read, at the first open
// instead, as header.cdl is, so that ls -l of a large group on S3 reads
// no array's metadata: until then a stat shows size 0 for an instant
// (liveTimeout).
type classicFile struct {
	fs.Inode
	t   *tree
	key string // the group's
}

var (
	_ fs.NodeOpener    = (*classicFile)(nil)
	_ fs.NodeReader    = (*classicFile)(nil)
	_ fs.NodeGetattrer = (*classicFile)(nil)
)

// unsized reports whether the file's size is not known until it is made.
func (f *classicFile) unsized() bool {
	return !f.t.classicMade(f.key) && f.t.ds.Unread()
}

func (f *classicFile) live() bool { return f.unsized() }

func (f *classicFile) attr(ctx context.Context, a *fuse.Attr) error {
	if f.unsized() {
		f.t.fill(a, fuse.S_IFREG|0o444, 0, f.t.ino('N', f.key))
		stamp(a, f.t.dirTime(ctx, f.key))
		return nil
	}
	c, err := f.t.classic(ctx, f.key)
	if err != nil {
		return err
	}
	f.t.fill(a, fuse.S_IFREG|0o444, uint64(c.Size()), f.t.ino('N', f.key))
	// netCDF's I/O layer reads blocks of st_blksize.
	a.Blksize = uint32(c.BlockSize)
	stamp(a, f.t.dirTime(ctx, f.key))
	return nil
}

func (f *classicFile) Getattr(ctx context.Context, fh fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	ctx, cancel := f.t.bound(ctx)
	defer cancel()
	if err := f.attr(ctx, &out.Attr); err != nil {
		return f.t.rep.errno("stat", classicPath(f.key), err)
	}
	if f.live() {
		out.SetTimeout(liveTimeout)
	}
	return 0
}

// classicHandle is an open classic file: its own reader, so each
// variable's read-ahead follows this file's reads, reading whole
// granules (granuleReader).
type classicHandle struct {
	c *describe.Classic
	g *granuleReader
}

func (f *classicFile) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	ctx, cancel := f.t.bound(ctx)
	defer cancel()
	// Through the page cache, always: netCDF programs read in blocks of
	// their buffer size hint, which NCO sets to 8 KiB, and the kernel's
	// read-ahead turns a run of such reads into large requests (ncks -v
	// of a 256 MiB variable: 32,768 requests of 8 KiB with direct I/O).
	_, fuseFlags, errno := openReadOnly(flags)
	if errno != 0 {
		return nil, 0, errno
	}
	unsized := f.unsized()
	if unsized {
		// The kernel was told size 0: read past it, not from its cache.
		fuseFlags |= fuse.FOPEN_DIRECT_IO
		fuseFlags &^= fuse.FOPEN_KEEP_CACHE
	}
	c, err := f.t.classic(ctx, f.key)
	if err != nil {
		return nil, 0, f.t.rep.errno("open "+ClassicName, classicPath(f.key), err)
	}
	if unsized {
		f.t.sizeKnown(&f.Inode, classicPath(f.key))
	}
	return &classicHandle{c: c, g: newGranuleReader(c.File)}, fuseFlags, 0
}

func (f *classicFile) Read(ctx context.Context, fh fs.FileHandle, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	ctx, cancel := f.t.bound(ctx)
	defer cancel()
	h, ok := fh.(*classicHandle)
	if !ok {
		c, err := f.t.classic(ctx, f.key)
		if err != nil {
			return nil, f.t.rep.errno("read "+ClassicName, classicPath(f.key), err)
		}
		h = &classicHandle{c: c, g: newGranuleReader(c.File)}
	}
	size := h.c.Size()
	dest = clamp(dest, off, size)
	if len(dest) == 0 {
		return fuse.ReadResultData(nil), 0
	}
	// All of dest, or EIO: never a short read (see granuleSize).
	if err := h.g.ReadAt(ctx, dest, off); err != nil {
		return nil, f.t.rep.errno("read "+ClassicName, classicPath(f.key), err)
	}
	return fuse.ReadResultData(dest), 0
}
