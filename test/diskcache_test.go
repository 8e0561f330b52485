package test

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"testing"

	"github.com/nczarrfs/nczarrfs/internal/miniotest"
)

// TestS3DiskCacheShared mounts one dataset from MinIO twice at once with
// one --cache-dir, then a third time after both are gone: every mount
// reads the reference tools' values, and the folder fills with objects
// within its budget.
func TestS3DiskCacheShared(t *testing.T) {
	srv := miniotest.Start(t)
	s3Env(t, srv)
	srv.CreateBucket(t, "cached")
	set, ds := basicDataset(t)
	srv.PutTree(t, "cached", ds.Name, ds.TreePath(set))
	source := srv.Endpoint + "/cached/" + ds.Name + "#mode=" + s3Mode(set)
	dir := t.TempDir()
	args := []string{"--cache-dir", dir, "--cache-dir-size", "64MiB"}

	// The group returns once both parallel mounts are checked.
	t.Run("two at once", func(t *testing.T) {
		for i := range 2 {
			t.Run(fmt.Sprint(i), func(t *testing.T) {
				t.Parallel()
				checkDataset(t, mount(t, source, args...), set, ds)
			})
		}
	})
	files, bytes := 0, int64(0)
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files++
			if info, err := d.Info(); err == nil {
				bytes += info.Size()
			}
		}
		return nil
	})
	if files == 0 || bytes > 64<<20 {
		t.Errorf("cache folder holds %d files, %d bytes; want some, within 64 MiB", files, bytes)
	}
	checkDataset(t, mount(t, source, args...), set, ds)
}
