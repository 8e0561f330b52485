package nczarr_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nczarrfs/nczarrfs/nczarr"
	"github.com/nczarrfs/nczarrfs/zmap"
	"github.com/nczarrfs/nczarrfs/zmap/file"
)

// TestMetadataBound reads a group whose .zattrs is 100 KiB under bounds
// below and above that: below, the attributes fail with a
// *zmap.TooLargeError naming the document and both sizes; above (and
// under the default of 64 MiB) they read.
func TestMetadataBound(t *testing.T) {
	dir := t.TempDir()
	big := `{"note": "` + strings.Repeat("x", 100<<10) + `"}`
	for name, doc := range map[string]string{".zgroup": `{"zarr_format": 2}`, ".zattrs": big} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	store, err := file.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		bound int64
		ok    bool
	}{{0, true}, {200 << 10, true}, {int64(len(big)), true}, {int64(len(big)) - 1, false}, {1 << 10, false}} {
		ds, err := nczarr.Open(context.Background(), store, nczarr.Options{MaxMetadataSize: tt.bound})
		if err == nil {
			_, err = ds.Attrs(context.Background(), "")
		}
		var tl *zmap.TooLargeError
		switch {
		case tt.ok && err != nil:
			t.Errorf("bound %d: %v", tt.bound, err)
		case !tt.ok && !errors.As(err, &tl):
			t.Errorf("bound %d: %v; want a TooLargeError", tt.bound, err)
		case !tt.ok && (tl.Key != ".zattrs" || tl.Size != int64(len(big)) || tl.Bound != tt.bound):
			t.Errorf("bound %d: %+v", tt.bound, *tl)
		}
	}
}
