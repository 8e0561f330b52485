package nczarr

import (
	"context"
	"fmt"
)

// noDatasetWhat is what Open looked for, named in every error that says no
// dataset was found.
const noDatasetWhat = "no zarr.json (Zarr v3), .zgroup, .zarray, .zmetadata (Zarr v2) or .nczarr (NCZarr 4.8.0)"

// implicitRoot opens a pure Zarr store whose root has no .zgroup (nor
// .zarray): one holding only .zmetadata and chunks, read from its
// consolidated metadata as zarr-python's open_consolidated reads it, or one
// whose groups and arrays sit below a root with no metadata object, read
// as an implicit root group as netcdf-c reads it. Zarr v2 nodes below the
// root win; else Zarr v3 nodes below it (zarrs writes group/zarr.json with
// nothing at the top) make the root an implicit v3 group, and done is true:
// the walk is over. A store with none of these is an error wrapping
// ErrNoDataset. On success d.Consolidated tells whether .zmetadata was read.
func (w *walker) implicitRoot(ctx context.Context) (done bool, err error) {
	ok, err := w.consolidated(ctx)
	if err != nil {
		return false, err
	}
	if ok {
		w.d.Consolidated = true
		return true, nil
	}
	arrays, groups, err := w.search(ctx, "")
	if err != nil {
		return false, err
	}
	if len(arrays)+len(groups) > 0 {
		return false, nil
	}
	if w.groupV3(ctx, "", nil, nil) {
		w.wg.Wait()
		w.d.Generation = ZarrV3
		return true, nil
	}
	return false, fmt.Errorf("%w: %s at the root, and no group or array below it", ErrNoDataset, noDatasetWhat)
}
