package http

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/nczarrfs/nczarrfs/nczarr/zarrmeta"
	"github.com/nczarrfs/nczarrfs/zmap"
)

// ErrNotConsolidated is wrapped by Open's error for a dataset without
// consolidated metadata: a server that cannot be listed has nothing else
// that says which objects exist.
var ErrNotConsolidated = errors.New("no consolidated metadata")

// hierarchy is what consolidated metadata says of a dataset: its metadata
// objects and its arrays' chunk grids.
type hierarchy struct {
	meta   []string          // keys of the metadata objects, sorted
	arrays map[string]*array // by path ("" for a root array)
	// nczarr1 is set for a dataset that netcdf-c 4.8 wrote (NCZarr's
	// first formats, with a .nczarr object at its root): its own objects
	// (.nczgroup, .nczarray or .nczvar, .nczattr or .nczattrs), which
	// consolidated metadata does not declare, are looked for in each
	// folder listed.
	nczarr1 bool
}

// nczarrObjects are the objects of NCZarr's first format in a group's
// folder and in an array's.
var nczarrObjects = map[bool][]string{false: {".nczattr", ".nczattrs", ".nczgroup"}, true: {".nczarray", ".nczattr", ".nczattrs", ".nczvar"}}

// array is an array's chunk grid: where its chunk objects may be.
type array struct {
	path  string
	shape []int64
	grid  []int64 // the chunk (or shard) shape
	keys  zarrmeta.KeyEncoding
}

// declares reports whether key is a metadata object of the hierarchy.
func (h *hierarchy) declares(key string) bool {
	_, ok := slices.BinarySearch(h.meta, key)
	return ok
}

// arrayAt returns the array whose folder holds prefix, or nil.
func (h *hierarchy) arrayAt(prefix string) *array {
	for p := prefix; ; {
		if a := h.arrays[p]; a != nil {
			return a
		}
		if p == "" {
			return nil
		}
		i := strings.LastIndexByte(p, '/')
		if i < 0 {
			p = ""
		} else {
			p = p[:i]
		}
	}
}

// chunkCount is the number of chunk keys in a's grid, or MaxProbe+1 when
// there are more.
func (a *array) chunkCount() int64 {
	n := int64(1)
	for d, size := range a.shape {
		if size == 0 {
			return 0
		}
		// Rounded up without overflow, and at most MaxProbe+1.
		n *= min((size-1)/a.grid[d]+1, MaxProbe+1)
		if n > MaxProbe {
			return MaxProbe + 1
		}
	}
	return n
}

// eachChunk calls fn with the key of every chunk of a's grid.
func (a *array) eachChunk(fn func(key string)) {
	if a.chunkCount() == 0 {
		return
	}
	idx := make([]int64, len(a.shape))
	for {
		fn(a.keys.Key(a.path, idx))
		d := len(idx) - 1
		for ; d >= 0; d-- {
			idx[d]++
			if idx[d] <= (a.shape[d]-1)/a.grid[d] {
				break
			}
			idx[d] = 0
		}
		if d < 0 {
			return
		}
	}
}

// readHierarchy reads the consolidated metadata: .zmetadata (v2), else
// the root zarr.json (v3).
func (s *Store) readHierarchy(ctx context.Context) (*hierarchy, error) {
	zmeta, err := s.Get(ctx, ".zmetadata")
	switch {
	case err == nil:
		h, err := parseZmetadata(zmeta)
		if err != nil {
			return nil, fmt.Errorf("http: %s is not consolidated Zarr metadata: %w", s.url(".zmetadata"), err)
		}
		switch _, err := s.Stat(ctx, ".nczarr"); {
		case err == nil:
			h.nczarr1 = true
			h.meta = append(h.meta, ".nczarr")
			slices.Sort(h.meta)
		case !errors.Is(err, zmap.ErrNotFound):
			return nil, err
		}
		return h, nil
	case !errors.Is(err, zmap.ErrNotFound):
		return nil, err
	}
	root, err := s.Get(ctx, "zarr.json")
	switch {
	case errors.Is(err, zmap.ErrNotFound):
		return nil, fmt.Errorf("http: %s has neither .zmetadata nor zarr.json: %w (a server that cannot be listed needs Zarr's consolidated metadata; zarr.consolidate_metadata writes it)", s.base, ErrNotConsolidated)
	case err != nil:
		return nil, err
	}
	h, err := parseRootV3(root)
	if err != nil {
		if errors.Is(err, ErrNotConsolidated) {
			return nil, fmt.Errorf("http: %s: %w in zarr.json (a server that cannot be listed needs it; zarr.consolidate_metadata writes it)", s.base, err)
		}
		return nil, fmt.Errorf("http: %s is not Zarr metadata: %w", s.url("zarr.json"), err)
	}
	return h, nil
}

// parseZmetadata reads a v2 .zmetadata document.
func parseZmetadata(data []byte) (*hierarchy, error) {
	var doc struct {
		Metadata map[string]json.RawMessage `json:"metadata"`
	}
	if err := zarrmeta.DecodeJSON(data, &doc); err != nil {
		return nil, err
	}
	if doc.Metadata == nil {
		return nil, errors.New(`no "metadata" object`)
	}
	h := &hierarchy{meta: []string{".zmetadata"}, arrays: map[string]*array{}}
	for key, raw := range doc.Metadata {
		if !zmap.ValidKey(key) {
			return nil, fmt.Errorf("metadata key %q is not a key", key)
		}
		h.meta = append(h.meta, key)
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
		h.arrays[dir] = a
	}
	slices.Sort(h.meta)
	return h, nil
}

// parseRootV3 reads a v3 root zarr.json: a group with
// consolidated_metadata, or an array (a hierarchy of one node).
func parseRootV3(data []byte) (*hierarchy, error) {
	var root map[string]any
	if err := zarrmeta.DecodeJSON(data, &root); err != nil {
		return nil, err
	}
	if root == nil {
		return nil, errors.New("not a JSON object")
	}
	h := &hierarchy{meta: []string{"zarr.json"}, arrays: map[string]*array{}}
	if root["node_type"] == "array" {
		a, err := parseArrayV3("", root)
		if err != nil {
			return nil, err
		}
		h.arrays[""] = a
		return h, nil
	}
	cm, _ := root["consolidated_metadata"].(map[string]any)
	nodes, ok := cm["metadata"].(map[string]any)
	if !ok {
		return nil, ErrNotConsolidated
	}
	for _, p := range slices.Sorted(maps.Keys(nodes)) {
		if !zmap.ValidKey(p) {
			return nil, fmt.Errorf("consolidated node %q is not a key", p)
		}
		node, ok := nodes[p].(map[string]any)
		if !ok {
			return nil, fmt.Errorf("consolidated node %q is not an object", p)
		}
		h.meta = append(h.meta, p+"/zarr.json")
		if node["node_type"] == "array" {
			a, err := parseArrayV3(p, node)
			if err != nil {
				return nil, err
			}
			h.arrays[p] = a
		}
	}
	slices.Sort(h.meta)
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
	if i := strings.LastIndexByte(key, '/'); i >= 0 {
		return key[:i], key[i+1:]
	}
	return "", key
}
