package fusefs

import (
	"context"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/nczarrfs/nczarrfs/nczarr"
)

// DataJSONName is the synthesized file of an array of variable-length
// objects (dtype "|O", such as strings), in place of DataName: its elements
// have no fixed size, so they are served as one JSON document
// (nczarr.Array.JSON) instead of bytes.
const DataJSONName = "data.json"

// arrayEntry is the listing entry of the file the mount adds to the
// directory of array a: DataName, or DataJSONName for an object array.
func arrayEntry(t *tree, a *nczarr.Array) fuse.DirEntry {
	if a.Objects() {
		return fuse.DirEntry{Name: DataJSONName, Mode: fuse.S_IFREG, Ino: t.ino('j', a.Path)}
	}
	return fuse.DirEntry{Name: DataName, Mode: fuse.S_IFREG, Ino: t.ino('a', a.Path)}
}

// lookupDataJSON is Lookup of DataJSONName in the directory of an object
// array. The file's size is the document's, so the lookup decodes every
// chunk (once: the array keeps the document); a chunk that cannot be read
// fails the lookup with its errno.
func (d *dir) lookupDataJSON(ctx context.Context, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	n := &dataJSON{t: d.t, array: d.arrayOf()}
	if errno := n.attr(ctx, &out.Attr); errno != 0 {
		return nil, errno
	}
	return d.NewInode(ctx, n, fs.StableAttr{Mode: fuse.S_IFREG, Ino: out.Ino}), 0
}

// dataJSON is DataJSONName.
type dataJSON struct {
	fs.Inode
	t     *tree
	array *nczarr.Array
}

var (
	_ fs.NodeOpener    = (*dataJSON)(nil)
	_ fs.NodeReader    = (*dataJSON)(nil)
	_ fs.NodeGetattrer = (*dataJSON)(nil)
)

// doc returns the document, or the errno of the failure (logged once).
func (n *dataJSON) doc(ctx context.Context) ([]byte, syscall.Errno) {
	doc, err := n.array.JSON(ctx)
	if err != nil {
		return nil, n.t.rep.errno("read "+DataJSONName, n.array.Path, err)
	}
	return doc, 0
}

func (n *dataJSON) attr(ctx context.Context, a *fuse.Attr) syscall.Errno {
	doc, errno := n.doc(ctx)
	if errno != 0 {
		return errno
	}
	n.t.fill(a, fuse.S_IFREG|0o444, uint64(len(doc)), n.t.ino('j', n.array.Path))
	return 0
}

func (n *dataJSON) Getattr(ctx context.Context, fh fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	ctx, cancel := n.t.bound(ctx)
	defer cancel()
	return n.attr(ctx, &out.Attr)
}

func (n *dataJSON) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	ctx, cancel := n.t.bound(ctx)
	defer cancel()
	if _, errno := n.doc(ctx); errno != 0 {
		return nil, 0, errno
	}
	return openReadOnly(flags)
}

func (n *dataJSON) Read(ctx context.Context, fh fs.FileHandle, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	ctx, cancel := n.t.bound(ctx)
	defer cancel()
	doc, errno := n.doc(ctx)
	if errno != 0 {
		return nil, errno
	}
	dest = clamp(dest, off, int64(len(doc)))
	if len(dest) == 0 {
		return fuse.ReadResultData(nil), 0
	}
	return fuse.ReadResultData(doc[off : off+int64(len(dest))]), 0
}
