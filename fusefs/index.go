package fusefs

import (
	"context"
	"path"

	"github.com/nczarrfs/nczarrfs/describe"
)

// IndexName, in every group, is a static web page of the group
// (describe.IndexHTML).
const IndexName = "index.html"

// indexFile returns IndexName of the group key: made from metadata only,
// at the first stat, with the group's time. Opening it makes the stat of
// the group's preview.png files draw them (pageOpened).
func (t *tree) indexFile(key string) synthNode {
	f := t.staticFile(t.ino('x', key), key, func(ctx context.Context) ([]byte, error) {
		return describe.IndexHTML(ctx, t.ds, key, t.name)
	})
	// It reads the group's arrays: on a lazily read dataset it is made
	// when opened, not at a stat (ls -l), as header.cdl.
	f.deferred = t.ds.Unread
	f.opened = func() { t.pages.Store(key, struct{}{}) }
	return f
}

// pageOpened reports whether IndexName of the group key has been opened
// since the mount: a browser showing it is about to stat and read the
// pictures of the group's arrays (previewFile).
func (t *tree) pageOpened(key string) bool {
	_, ok := t.pages.Load(key)
	return ok
}

// groupOf returns the key of the group that holds the node key.
func groupOf(key string) string {
	if dir := path.Dir(key); dir != "." {
		return dir
	}
	return ""
}
