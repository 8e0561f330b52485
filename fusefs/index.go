package fusefs

import (
	"context"

	"github.com/nczarrfs/nczarrfs/describe"
)

// IndexName, in every group, is a static web page of the group
// (describe.IndexHTML).
const IndexName = "index.html"

// indexFile returns IndexName of the group key: made from metadata only,
// at the first stat, with the group's time.
func (t *tree) indexFile(key string) synthNode {
	f := t.staticFile(ino('x', key), key, func(ctx context.Context) ([]byte, error) {
		return describe.IndexHTML(ctx, t.ds, key, t.name)
	})
	// It reads the group's arrays: on a lazily read dataset it is made
	// when opened, not at a stat (ls -l), as header.cdl.
	f.deferred = t.ds.Unread
	return f
}
