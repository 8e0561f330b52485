package consolidated

import (
	"testing"

	"github.com/nczarrfs/nczarrfs/zmap"
)

// FuzzParseConsolidated checks that the readers of consolidated metadata
// never panic, and that what they accept names only valid keys and arrays
// whose grids fit their shapes.
func FuzzParseConsolidated(f *testing.F) {
	for _, s := range []string{
		`{"metadata": {".zgroup": {"zarr_format": 2}, "a/.zarray": {"shape": [4, 3], "chunks": [2, 2], "dimension_separator": "/"}}, "zarr_consolidated_format": 1}`,
		`{"metadata": {}}`,
		`{"zarr_format": 3, "node_type": "group", "consolidated_metadata": {"kind": "inline", "metadata": {"a": {"node_type": "array", "shape": [5], "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2]}}}}}}`,
		`{"zarr_format": 3, "node_type": "array", "shape": [], "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": []}}, "chunk_key_encoding": {"name": "v2"}}`,
		`<html></html>`,
		`{"metadata": {"a/.zarray": {"shape": [9223372036854775807, 0], "chunks": [2, 1]}, "b/.zarray": {"shape": [9223372036854775807], "chunks": [2]}, "c/.zarray": {"shape": [9223372036854775807], "chunks": [6000000000000000000]}}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, name := range []string{".zmetadata", "zarr.json"} {
			h, err := Parse(name, data)
			if err != nil {
				continue
			}
			for _, k := range h.Meta {
				if !zmap.ValidKey(k) {
					t.Errorf("metadata key %q is not a key", k)
				}
			}
			for p, a := range h.Arrays {
				if a.Path != p || len(a.Grid) != len(a.Shape) {
					t.Errorf("array %q: shape %v, grid %v", p, a.Shape, a.Grid)
				}
				for d := range a.Grid {
					if a.Grid[d] <= 0 || a.Shape[d] < 0 {
						t.Errorf("array %q: shape %v, grid %v", p, a.Shape, a.Grid)
					}
				}
				if k := a.Key(make([]int64, len(a.Grid))); !zmap.ValidKey(k) {
					t.Errorf("chunk key %q of array %q is not a key", k, p)
				}
			}
		}
	})
}
