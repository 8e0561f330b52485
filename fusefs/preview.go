package fusefs

import (
	"context"
	"sync/atomic"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/nczarrfs/nczarrfs/describe/preview"
	"github.com/nczarrfs/nczarrfs/nczarr"
)

// PreviewName, in a numeric array of 2 or more dimensions, is a PNG of
// the slice of its last two dimensions at index 0 of the others
// (package describe/preview).
const PreviewName = "preview.png"

// previewKey is the chunk cache's key of an array's picture: a key no
// store object has (store keys hold no NUL).
func previewKey(path string) string { return "\x00" + PreviewName + "\x00" + path }

// previewFile is PreviewName. Drawing it decodes chunks, which a stat
// (ls -l) must not do: it is drawn at the first open, and kept in the
// chunk cache under its budget (drawn again if evicted). Until it is
// first drawn its size is 0, with one exception: once the index.html of
// its group has been opened, a stat draws it, since a browser showing
// that page stats each picture by path and reads no more than that size
// (Chromium does). The open that draws it tells the kernel
// that the size it was given is stale (sizeKnown), so the fstat a reader
// makes after opening (Chromium, mmap readers, Python's read) shows the
// picture's size before the first read. It is opened for direct I/O, as
// /proc files are, so a reader that trusts an earlier stat still reads
// to the end, and its attributes are not kept by the kernel.
type previewFile struct {
	fs.Inode
	t     *tree
	array *nczarr.Array
	size  *atomic.Int64 // of the picture once drawn, shared by the nodes of one array
}

var (
	_ fs.NodeOpener    = (*previewFile)(nil)
	_ fs.NodeReader    = (*previewFile)(nil)
	_ fs.NodeGetattrer = (*previewFile)(nil)
)

func (t *tree) previewFile(a *nczarr.Array) *previewFile {
	return &previewFile{t: t, array: a, size: &t.arrayFiles(a).previewSize}
}

func (f *previewFile) live() bool { return true }

func (f *previewFile) attr(ctx context.Context, a *fuse.Attr) error {
	size := f.size.Load()
	if size == 0 && f.t.pageOpened(groupOf(f.array.Path)) {
		// A browser showing the group's page stats the picture by
		// path, then reads that many bytes: draw it now. A failure
		// is the open's to report.
		if b, err := f.draw(ctx); err == nil {
			size = int64(len(b))
			f.size.Store(size)
		}
	}
	f.t.fill(a, fuse.S_IFREG|0o444, uint64(size), f.t.ino('p', f.array.Path))
	stamp(a, f.t.dirTime(ctx, f.array.Path))
	return nil
}

func (f *previewFile) Getattr(ctx context.Context, fh fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	ctx, cancel := f.t.bound(ctx)
	defer cancel()
	f.attr(ctx, &out.Attr)
	out.SetTimeout(liveTimeout)
	return 0
}

// draw returns the picture, from the cache when it is there.
func (f *previewFile) draw(ctx context.Context) ([]byte, error) {
	render := func(ctx context.Context) ([]byte, error) {
		p, err := preview.Render(ctx, f.t.ds, f.array.Path, preview.Options{})
		if err != nil {
			return nil, err
		}
		return p.PNG, nil
	}
	if c := f.t.stats.Cache; c != nil {
		return c.Get(ctx, previewKey(f.array.Path), render)
	}
	return render(ctx)
}

func (f *previewFile) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	if _, _, errno := openReadOnly(flags); errno != 0 {
		return nil, 0, errno
	}
	b, err := f.draw(ctx)
	if err != nil {
		return nil, 0, f.t.rep.errno("open "+PreviewName, f.array.Path, err)
	}
	if f.size.Swap(int64(len(b))) != int64(len(b)) {
		f.t.sizeKnown(&f.Inode, f.array.Path)
	}
	return &snapshot{b}, fuse.FOPEN_DIRECT_IO, 0
}

func (f *previewFile) Read(ctx context.Context, fh fs.FileHandle, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	s, ok := fh.(*snapshot)
	if !ok {
		return nil, syscall.EBADF
	}
	dest = clamp(dest, off, int64(len(s.b)))
	if len(dest) == 0 {
		return fuse.ReadResultData(nil), 0
	}
	return fuse.ReadResultData(s.b[off : off+int64(len(dest))]), 0
}
