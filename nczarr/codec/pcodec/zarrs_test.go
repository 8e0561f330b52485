package pcodec_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/nczarrfs/nczarrfs/nczarr"
	"github.com/nczarrfs/nczarrfs/zmap/file"
)

// TestZarrsArrays reads zarrs' pcodec arrays (tests/data/*/array_pcodec*.zarr
// in the zarrs repository: Zarr v2 with compressor pcodec, v3 with the
// array-to-bytes codec numcodecs.pcodec) through the whole read path.
// zarrs' own tests (zarrs/src/array.rs, array_v3_numcodecs) assert that
// they hold the float32 values 0, 1, ..., n-1 in C order.
func TestZarrsArrays(t *testing.T) {
	var roots []string
	if d := os.Getenv("NCZARRFS_PCODEC_FIXTURES"); d != "" {
		roots = append(roots, d)
	}
	_, self, _, _ := runtime.Caller(0)
	shared := filepath.Join(filepath.Dir(self), "..", "..", "..", "..", "shared", "fixtures", "pcodec")
	if st, err := os.Stat(shared); err == nil && st.IsDir() {
		roots = append(roots, shared)
	}
	if len(roots) == 0 {
		t.Skip("no reference fixtures: set NCZARRFS_PCODEC_FIXTURES or add ../shared/fixtures/pcodec")
	}
	for _, root := range roots {
		ran, passed := 0, 0
		filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
			if err != nil || !d.IsDir() || !strings.HasPrefix(d.Name(), "array_pcodec") || !strings.HasSuffix(d.Name(), ".zarr") {
				return nil
			}
			ran++
			name, _ := filepath.Rel(root, path)
			if checkArange(t, name, path) {
				passed++
			}
			return filepath.SkipDir
		})
		t.Logf("%s: %d of %d zarrs arrays read as zarrs asserts", root, passed, ran)
	}
}

func checkArange(t *testing.T, name, dir string) bool {
	store, err := file.Open(dir)
	if err != nil {
		t.Errorf("%s: %v", name, err)
		return false
	}
	defer store.Close()
	ctx := context.Background()
	ds, err := nczarr.Open(ctx, store, nczarr.Options{})
	if err != nil {
		t.Errorf("%s: %v", name, err)
		return false
	}
	paths := ds.Arrays()
	if len(paths) != 1 {
		t.Errorf("%s: arrays %v, want one", name, paths)
		return false
	}
	a := ds.Array(paths[0])
	got := make([]byte, a.Size())
	if _, err := a.NewReader().ReadAt(ctx, got, 0); err != nil {
		t.Errorf("%s: %v", name, err)
		return false
	}
	want := make([]byte, len(got))
	for i := 0; i+4 <= len(want); i += 4 {
		binary.LittleEndian.PutUint32(want[i:], math.Float32bits(float32(i/4)))
	}
	if len(got) == 0 || !bytes.Equal(got, want) {
		t.Errorf("%s: %d bytes differ from zarrs' values", name, len(got))
		return false
	}
	return true
}
