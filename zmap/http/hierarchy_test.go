package http

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
		for _, parse := range []func([]byte) (*hierarchy, error){parseZmetadata, parseRootV3} {
			h, err := parse(data)
			if err != nil {
				continue
			}
			for _, k := range h.meta {
				if !zmap.ValidKey(k) {
					t.Errorf("metadata key %q is not a key", k)
				}
			}
			for p, a := range h.arrays {
				if a.check() != nil || a.path != p {
					t.Errorf("array %q: shape %v, grid %v", p, a.shape, a.grid)
				}
				n := 0
				if a.chunkCount() <= 1000 {
					a.eachChunk(func(k string) {
						n++
						if !zmap.ValidKey(k) {
							t.Errorf("chunk key %q of array %q is not a key", k, p)
						}
					})
					if int64(n) != a.chunkCount() {
						t.Errorf("array %q: %d chunk keys, want %d", p, n, a.chunkCount())
					}
				}
			}
		}
	})
}
