// Package consolidated reads Zarr's consolidated metadata (a v2
// .zmetadata, a v3 root zarr.json's consolidated_metadata) into the
// hierarchy zmap/http serves a web server that cannot be listed from: it is
// handed to zmap/http (Options.Consolidated), so that no store imports a
// reader of Zarr metadata.
package consolidated

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/nczarrfs/nczarrfs/nczarr/zarrmeta"
	"github.com/nczarrfs/nczarrfs/zmap"
	zhttp "github.com/nczarrfs/nczarrfs/zmap/http"
)

// Parse reads the consolidated metadata of the object name: ".zmetadata"
// (v2) or "zarr.json" (a v3 root). A zarr.json without consolidated
// metadata fails with an error wrapping zhttp.ErrNotConsolidated.
func Parse(name string, data []byte) (*zhttp.Hierarchy, error) {
	switch name {
	case ".zmetadata":
		return parseZmetadata(data)
	case "zarr.json":
		return parseRootV3(data)
	}
	return nil, fmt.Errorf("%q is not consolidated metadata", name)
}

// array is a chunk grid being read.
type array struct {
	path  string
	shape []int64
	grid  []int64
	keys  zarrmeta.KeyEncoding
}

func (a *array) export() *zhttp.Array {
	keys, path := a.keys, a.path
	return &zhttp.Array{Path: a.path, Shape: a.shape, Grid: a.grid, Key: func(idx []int64) string { return keys.Key(path, idx) }}
}

// check checks that the grid fits the shape.
func (a *array) check() error {
	if len(a.grid) != len(a.shape) {
		return fmt.Errorf("chunks %v and shape %v differ in rank", a.grid, a.shape)
	}
	for d := range a.shape {
		if a.grid[d] <= 0 || a.shape[d] < 0 {
			return fmt.Errorf("bad shape %v or chunks %v", a.shape, a.grid)
		}
	}
	return nil
}

// splitKey splits "a/b/c" into "a/b" and "c".
func splitKey(key string) (dir, name string) {
	for i := len(key) - 1; i >= 0; i-- {
		if key[i] == '/' {
			return key[:i], key[i+1:]
		}
	}
	return "", key
}

// parseZmetadata reads a v2 .zmetadata document.
func parseZmetadata(data []byte) (*zhttp.Hierarchy, error) {
	var doc struct {
		Metadata map[string]json.RawMessage `json:"metadata"`
	}
	if err := zarrmeta.DecodeJSON(data, &doc); err != nil {
		return nil, err
	}
	if doc.Metadata == nil {
		return nil, errors.New(`no "metadata" object`)
	}
	h := &zhttp.Hierarchy{Meta: []string{".zmetadata"}, Arrays: map[string]*zhttp.Array{}}
	for key, raw := range doc.Metadata {
		if !zmap.ValidKey(key) {
			return nil, fmt.Errorf("metadata key %q is not a key", key)
		}
		h.Meta = append(h.Meta, key)
		dir, name := splitKey(key)
		if name != ".zarray" {
			continue
		}
		var o map[string]any
		if err := zarrmeta.DecodeJSON(raw, &o); err != nil {
			return nil, fmt.Errorf("%s: %w", key, err)
		}
		a := &array{path: dir, keys: zarrmeta.KeyEncoding{V2: true, Sep: "."}}
		var err error
		if a.shape, err = zarrmeta.IntList(o["shape"], "shape"); err != nil {
			return nil, fmt.Errorf("%s: %w", key, err)
		}
		if a.grid, err = zarrmeta.IntList(o["chunks"], "chunks"); err != nil {
			return nil, fmt.Errorf("%s: %w", key, err)
		}
		if sep, ok := o["dimension_separator"].(string); ok && sep != "" {
			if sep != "." && sep != "/" {
				return nil, fmt.Errorf("%s: dimension_separator %q is not . or /", key, sep)
			}
			a.keys.Sep = sep
		}
		if err := a.check(); err != nil {
			return nil, fmt.Errorf("%s: %w", key, err)
		}
		h.Arrays[dir] = a.export()
	}
	slices.Sort(h.Meta)
	return h, nil
}

// parseRootV3 reads a v3 root zarr.json: a group with
// consolidated_metadata, or an array (a hierarchy of one node).
func parseRootV3(data []byte) (*zhttp.Hierarchy, error) {
	var root map[string]any
	if err := zarrmeta.DecodeJSON(data, &root); err != nil {
		return nil, err
	}
	if root == nil {
		return nil, errors.New("not a JSON object")
	}
	h := &zhttp.Hierarchy{Meta: []string{"zarr.json"}, Arrays: map[string]*zhttp.Array{}}
	if root["node_type"] == "array" {
		a, err := parseArrayV3("", root)
		if err != nil {
			return nil, err
		}
		h.Arrays[""] = a.export()
		return h, nil
	}
	cm, _ := root["consolidated_metadata"].(map[string]any)
	nodes, ok := cm["metadata"].(map[string]any)
	if !ok {
		return nil, zhttp.ErrNotConsolidated
	}
	for _, p := range slices.Sorted(maps.Keys(nodes)) {
		if !zmap.ValidKey(p) {
			return nil, fmt.Errorf("consolidated node %q is not a key", p)
		}
		node, ok := nodes[p].(map[string]any)
		if !ok {
			return nil, fmt.Errorf("consolidated node %q is not an object", p)
		}
		h.Meta = append(h.Meta, p+"/zarr.json")
		if node["node_type"] == "array" {
			a, err := parseArrayV3(p, node)
			if err != nil {
				return nil, err
			}
			h.Arrays[p] = a.export()
		}
	}
	slices.Sort(h.Meta)
	return h, nil
}

// parseArrayV3 reads the chunk grid of the v3 array at path p.
func parseArrayV3(p string, node map[string]any) (*array, error) {
	a := &array{path: p}
	var err error
	if a.shape, err = zarrmeta.IntList(node["shape"], "shape"); err != nil {
		return nil, fmt.Errorf("array %q: %w", p, err)
	}
	grid, _ := node["chunk_grid"].(map[string]any)
	if name, _ := grid["name"].(string); name != "regular" {
		return nil, fmt.Errorf("array %q: chunk_grid %v is not a regular grid", p, node["chunk_grid"])
	}
	cfg, _ := grid["configuration"].(map[string]any)
	if a.grid, err = zarrmeta.IntList(cfg["chunk_shape"], "chunk_shape"); err != nil {
		return nil, fmt.Errorf("array %q: %w", p, err)
	}
	if a.keys, err = zarrmeta.ParseKeyEncoding(node["chunk_key_encoding"]); err != nil {
		return nil, fmt.Errorf("array %q: %w", p, err)
	}
	if err := a.check(); err != nil {
		return nil, fmt.Errorf("array %q: %w", p, err)
	}
	return a, nil
}
