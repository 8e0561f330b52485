package nczarr

import (
	"context"
	"fmt"
)

// implicitRoot opens a pure Zarr store whose root has no .zgroup (nor
// .zarray): one holding only .zmetadata and chunks, read from its
// consolidated metadata as zarr-python's open_consolidated reads it, or one
// whose groups and arrays sit below a root with no metadata object, read
// as an implicit root group as netcdf-c reads it. A store with neither is
// an error wrapping ErrNoDataset. On success d.Consolidated tells which.
func (w *walker) implicitRoot(ctx context.Context) error {
	ok, err := w.consolidated(ctx)
	if err != nil {
		return err
	}
	if ok {
		w.d.Consolidated = true
		return nil
	}
	arrays, groups, err := w.search(ctx, "")
	if err != nil {
		return err
	}
	if len(arrays)+len(groups) == 0 {
		return fmt.Errorf("%w: no .zgroup, .zarray, .zmetadata or .nczarr at the root, and no group or array below it", ErrNoDataset)
	}
	return nil
}
