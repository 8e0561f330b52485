package nczarr

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/nczarrfs/nczarrfs/nczarr/dtype"
	"github.com/nczarrfs/nczarrfs/zmap"
)

// isV3 reports whether the dataset is Zarr v3 (NCZarr's v3 form included).
func (d *Dataset) isV3() bool { return d.Generation == ZarrV3 || d.Generation == NCZarrV3 }

// v3Members returns the members of the zarr.json of the node at path, in
// stored order: the stored object, else its copy in the root's
// consolidated metadata.
func (d *Dataset) v3Members(ctx context.Context, path string) ([]member, error) {
	key := zmap.Join(path, "zarr.json")
	data, err := d.store.Get(d.metaCtx(ctx), key)
	if errors.Is(err, zmap.ErrNotFound) && d.Consolidated && path != "" {
		data, err = d.v3Consolidated(ctx, path)
	}
	if err != nil {
		return nil, err
	}
	ms, err := members(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", key, err)
	}
	return ms, nil
}

// v3Consolidated returns the zarr.json document of path kept in the root
// zarr.json's consolidated_metadata.
func (d *Dataset) v3Consolidated(ctx context.Context, path string) ([]byte, error) {
	root, err := d.v3Members(ctx, "")
	if err != nil {
		return nil, err
	}
	for _, name := range []string{"consolidated_metadata", "metadata"} {
		raw, ok := lookup(root, name)
		if !ok {
			return nil, fmt.Errorf("%s: %w", zmap.Join(path, "zarr.json"), zmap.ErrNotFound)
		}
		if root, err = members(raw); err != nil {
			return nil, fmt.Errorf("zarr.json consolidated_metadata: %w", err)
		}
	}
	for _, m := range root {
		if m.Name == path {
			return m.Value, nil
		}
	}
	return nil, fmt.Errorf("%s: %w", zmap.Join(path, "zarr.json"), zmap.ErrNotFound)
}

// v3AttrTypes reads _nczarr_attrs: {"attribute_types": [{"name": n,
// "configuration": {"type": t}}, ...]}.
func v3AttrTypes(attrs []member) map[string]string {
	raw, ok := lookup(attrs, "_nczarr_attrs")
	if !ok {
		return nil
	}
	var doc struct {
		Types []struct {
			Name   string `json:"name"`
			Config struct {
				Type string `json:"type"`
			} `json:"configuration"`
		} `json:"attribute_types"`
	}
	if json.Unmarshal(raw, &doc) != nil {
		return nil
	}
	types := map[string]string{}
	for _, t := range doc.Types {
		if t.Name != "" && t.Config.Type != "" {
			types[t.Name] = t.Config.Type
		}
	}
	return types
}

// v3NCType is the netCDF type of an _nczarr_attrs type: a v3 data type
// name, a netCDF type name (char, string, json) or a numpy dtype; "" for
// none of them.
func v3NCType(t string) string {
	switch t {
	case "char", "string", "json", "byte", "ubyte", "short", "ushort", "int", "uint", "int64", "uint64", "float", "double":
		return t
	case "bool":
		return "ubyte"
	}
	if dt, err := dtype.ParseV3(t); err == nil && dt.Kind != 'V' {
		if nt := typeOfDType(dt.Numpy()); nt != "" {
			return nt
		}
	}
	return typeOfDType(t)
}

// layoutV3 is Layout for a v3 group. NCZarr's _nczarr_group gives the
// dimensions and the children in definition order. Pure Zarr v3 has no
// shared dimensions: as netcdf-c does for pure Zarr v2, the root declares
// every dimension the arrays name (dimension_names, or "_zdim_<size>"),
// in the order the arrays, then the groups, depth first, first use them.
func (d *Dataset) layoutV3(ctx context.Context, path string, def Layout) (Layout, error) {
	if d.Generation == ZarrV3 {
		if path == "" {
			def.Dims = d.v3RootDims("", nil, map[string]bool{})
		}
		return def, nil
	}
	doc, err := d.v3Members(ctx, path)
	if errors.Is(err, zmap.ErrNotFound) {
		return def, nil
	}
	if err != nil {
		return Layout{}, err
	}
	var info json.RawMessage
	if attrs, ok := lookup(doc, "attributes"); ok {
		if ms, err := members(attrs); err == nil {
			info, _ = lookup(ms, "_nczarr_group")
		}
	}
	if info == nil {
		return def, nil
	}
	ms, err := members(info)
	if err != nil {
		return Layout{}, fmt.Errorf("group %q _nczarr_group: %w", path, err)
	}
	g := d.groups[path]
	var l Layout
	if raw, ok := lookup(ms, "dimensions"); ok {
		var dims []struct {
			Name string `json:"name"`
		}
		if json.Unmarshal(raw, &dims) == nil {
			for _, x := range dims {
				if dim, ok := g.Dims[x.Name]; ok {
					l.Dims = append(l.Dims, NamedDim{Name: x.Name, Dim: dim})
				}
			}
		} else if dm, err := members(raw); err == nil {
			for _, m := range dm {
				l.Dims = append(l.Dims, NamedDim{Name: m.Name, Dim: g.Dims[m.Name]})
			}
		}
	}
	l.Arrays = ordered(ms, []string{"arrays", "vars"}, path, g.Arrays)
	l.Groups = ordered(ms, []string{"subgroups", "groups"}, path, g.Groups)
	l.Dims = d.undeclaredDims(path, l.Dims)
	return l, nil
}

// undeclaredDims adds to dims, the dimensions declared in the NCZarr v3
// group at path, those that arrays of the dataset reference in that group
// (dimension_references "/path/name") without any declaration, with the
// size of the array's axis: netcdf-c writes such references for anonymous
// dimensions, and header.cdl must declare every dimension it uses.
func (d *Dataset) undeclaredDims(path string, dims []NamedDim) []NamedDim {
	seen := map[string]bool{}
	for _, x := range dims {
		seen[x.Name] = true
	}
	for _, p := range sortedKeys(d.arrays) {
		a := d.arrays[p]
		if a.Err != nil || len(a.DimRefs) != len(a.Meta.Shape) {
			continue
		}
		for i, ref := range a.DimRefs {
			dir, name := splitKey(strings.TrimPrefix(ref, "/"))
			if dir != path || seen[name] {
				continue
			}
			if g := d.groups[dir]; g != nil {
				if _, declared := g.Dims[name]; declared {
					continue
				}
			}
			seen[name] = true
			dims = append(dims, NamedDim{Name: name, Dim: Dim{Size: a.Meta.Shape[i]}})
		}
	}
	return dims
}

// v3RootDims collects the dimensions of the arrays under path, depth
// first, arrays before groups.
func (d *Dataset) v3RootDims(path string, dims []NamedDim, seen map[string]bool) []NamedDim {
	g := d.groups[path]
	if g == nil {
		return dims
	}
	for _, p := range g.Arrays {
		a := d.arrays[p]
		if a == nil || len(a.DimNames) != len(a.Meta.Shape) {
			continue
		}
		for i, n := range a.DimNames {
			if !seen[n] {
				seen[n] = true
				dims = append(dims, NamedDim{Name: n, Dim: Dim{Size: a.Meta.Shape[i]}})
			}
		}
	}
	for _, c := range g.Groups {
		dims = d.v3RootDims(c, dims, seen)
	}
	return dims
}
