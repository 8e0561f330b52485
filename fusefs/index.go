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
	return t.staticFile(ino('x', key), key, func(ctx context.Context) ([]byte, error) {
		return describe.IndexHTML(ctx, t.ds, key, t.name)
	})
}
