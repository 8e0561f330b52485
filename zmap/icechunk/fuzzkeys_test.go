package icechunk_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/nczarrfs/nczarrfs/internal/testenv"
	"github.com/nczarrfs/nczarrfs/zmap/file"
	"github.com/nczarrfs/nczarrfs/zmap/icechunk"
)

// FuzzStoreKeys asks a version's store for any key: it answers or fails,
// never panics, and names only what Search lists or a chunk.
func FuzzStoreKeys(f *testing.F) {
	for _, k := range []string{"zarr.json", "group1/big_chunks/c/0/1", "group1/small_chunks/c/4", "group1/big_chunks/c/0", "group1/big_chunks/c/00/1", "group1/big_chunks/c/4294967296/0", "group1/x/c/0"} {
		f.Add(k)
	}
	ctx := context.Background()
	_, err := os.Stat(filepath.Join(fixtures, "test-repo-v2"))
	testenv.Require(f, "the Icechunk fixtures ../shared/fixtures/icechunk", err)
	st, err := file.Open(filepath.Join(fixtures, "test-repo-v2"))
	if err != nil {
		f.Fatal(err)
	}
	r, err := icechunk.Open(ctx, st, icechunk.Options{})
	if err != nil {
		f.Fatal(err)
	}
	id, _ := r.Branch(ctx, "my-branch")
	v, err := r.Version(ctx, id)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, key string) {
		b, err := v.Get(ctx, key)
		if err == nil {
			size, err := v.Size(ctx, key)
			if err != nil || size != int64(len(b)) {
				t.Fatalf("%q: Get %d bytes, Size %d, %v", key, len(b), size, err)
			}
		}
		_, _ = v.Search(ctx, key)
		p := make([]byte, 3)
		_, _ = v.ReadAt(ctx, key, p, 2)
	})
}
