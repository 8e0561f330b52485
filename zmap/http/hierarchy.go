package http

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

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

// Hierarchy is what consolidated metadata says of a dataset, as a
// Consolidated parser reads it.
type Hierarchy struct {
	// Meta holds the keys of the metadata objects it declares, the
	// consolidated metadata's own object included.
	Meta []string
	// Arrays are the arrays' chunk grids, by path ("" for a root array).
	Arrays map[string]*Array
}

// Array is an array's chunk grid: where its chunk objects may be.
type Array struct {
	Path  string
	Shape []int64
	Grid  []int64 // the chunk (or shard) shape
	// Key is the key of the chunk at grid index idx, the path included.
	Key func(idx []int64) string
}

// Consolidated parses consolidated metadata: name is ".zmetadata" (Zarr
// v2) or "zarr.json" (a v3 root), data its content. A zarr.json without
// consolidated metadata fails with an error wrapping ErrNotConsolidated.
// The store is handed it (nczarr/consolidated.Parse) so that it imports
// no reader of Zarr metadata.
type Consolidated func(name string, data []byte) (*Hierarchy, error)

// array is an array's chunk grid, checked.
type array struct {
	path  string
	shape []int64
	grid  []int64
	key   func(idx []int64) string
}

// fromParsed checks what a Consolidated parser said and keeps it.
func fromParsed(p *Hierarchy) (*hierarchy, error) {
	if p == nil {
		return nil, errors.New("no hierarchy")
	}
	h := &hierarchy{arrays: map[string]*array{}}
	for _, k := range p.Meta {
		if !zmap.ValidKey(k) {
			return nil, fmt.Errorf("metadata key %q is not a key", k)
		}
		h.meta = append(h.meta, k)
	}
	for path, a := range p.Arrays {
		if a == nil || a.Path != path || a.Key == nil || path != "" && !zmap.ValidKey(path) {
			return nil, fmt.Errorf("array %q is not an array", path)
		}
		b := &array{path: path, shape: a.Shape, grid: a.Grid, key: a.Key}
		if err := b.check(); err != nil {
			return nil, fmt.Errorf("array %q: %w", path, err)
		}
		h.arrays[path] = b
	}
	slices.Sort(h.meta)
	h.meta = slices.Compact(h.meta)
	return h, nil
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
		fn(a.key(idx))
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
		h, err := s.parse(".zmetadata", zmeta)
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
	h, err := s.parse("zarr.json", root)
	if err != nil {
		if errors.Is(err, ErrNotConsolidated) {
			return nil, fmt.Errorf("http: %s: %w in zarr.json (a server that cannot be listed needs it; zarr.consolidate_metadata writes it)", s.base, err)
		}
		return nil, fmt.Errorf("http: %s is not Zarr metadata: %w", s.url("zarr.json"), err)
	}
	return h, nil
}

// parse reads consolidated metadata with the Consolidated parser the
// Store was handed.
func (s *Store) parse(name string, data []byte) (*hierarchy, error) {
	if s.consolidated == nil {
		return nil, errors.New("no reader of consolidated metadata (Options.Consolidated)")
	}
	p, err := s.consolidated(name, data)
	if err != nil {
		return nil, err
	}
	return fromParsed(p)
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
