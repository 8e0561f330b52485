package nczarr

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Generation names a representation of the NCZarr metadata, detected the
// way netcdf-c does.
type Generation string

// The generations of metadata netcdf-c has written, and pure Zarr.
const (
	PureZarr Generation = "zarr v2"
	NCZarrV1 Generation = "nczarr 4.8.0 (.nczarr objects)"
	NCZarr48 Generation = "nczarr 4.8.1-4.9.0 (_NCZARR_* keys)"
	NCZarr49 Generation = "nczarr 4.9.1-4.9.2 (_nczarr_* keys)"
	NCZarr2  Generation = "nczarr 4.9.3+ (_nczarr_* attributes)"
)

// object is a parsed JSON object whose member names are matched without
// regard to case, so "_NCZARR_GROUP" and "_nczarr_group" are one member.
type object map[string]any

func parseObject(data []byte) (object, error) {
	var o object
	if err := decodeJSON(data, &o); err != nil {
		return nil, err
	}
	if o == nil {
		return nil, fmt.Errorf("not a JSON object")
	}
	return o, nil
}

// get returns the member named name, any case.
func (o object) get(name string) (any, bool) {
	if v, ok := o[name]; ok {
		return v, true
	}
	for k, v := range o {
		if strings.EqualFold(k, name) {
			return v, true
		}
	}
	return nil, false
}

// obj returns the member named name as an object, or nil.
func (o object) obj(name string) object {
	v, _ := o.get(name)
	m, _ := v.(map[string]any)
	return object(m)
}

// strings returns the first of names present as a list of strings.
func (o object) strings(names ...string) ([]string, bool) {
	for _, n := range names {
		v, ok := o.get(n)
		if !ok {
			continue
		}
		list, _ := v.([]any)
		out := make([]string, 0, len(list))
		for _, e := range list {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out, true
	}
	return nil, false
}

// groupInfo is NCZarr's per-group listing, whatever the generation:
// {dims, vars, groups} or {dimensions, arrays, groups}.
type groupInfo struct {
	Arrays []string
	Groups []string
	Dims   map[string]Dim
}

// Dim is a shared (named) dimension.
type Dim struct {
	Size      int64
	Unlimited bool
}

func parseGroupInfo(o object) (groupInfo, bool) {
	if o == nil {
		return groupInfo{}, false
	}
	var g groupInfo
	arrays, ok1 := o.strings("arrays", "vars")
	groups, ok2 := o.strings("groups")
	if !ok1 && !ok2 {
		return g, false
	}
	g.Arrays, g.Groups = arrays, groups
	dims := o.obj("dimensions")
	if dims == nil {
		dims = o.obj("dims")
	}
	if len(dims) > 0 {
		g.Dims = map[string]Dim{}
		for name, v := range dims {
			var d Dim
			switch x := v.(type) {
			case json.Number:
				d.Size, _ = x.Int64()
			case map[string]any:
				if n, ok := x["size"].(json.Number); ok {
					d.Size, _ = n.Int64()
				}
				switch u := x["unlimited"].(type) {
				case json.Number:
					d.Unlimited = u.String() != "0"
				case bool:
					d.Unlimited = u
				}
			}
			g.Dims[name] = d
		}
	}
	return g, true
}

// arrayInfo is NCZarr's per-array annotation.
type arrayInfo struct {
	DimRefs []string
	Storage string
	Scalar  bool
}

func parseArrayInfo(o object) (arrayInfo, bool) {
	if o == nil {
		return arrayInfo{}, false
	}
	var a arrayInfo
	a.DimRefs, _ = o.strings("dimension_references", "dimrefs")
	if s, ok := o["storage"].(string); ok {
		a.Storage = s
	}
	switch x, _ := o.get("scalar"); v := x.(type) {
	case bool:
		a.Scalar = v
	case json.Number:
		a.Scalar = v.String() != "0"
	}
	if a.Storage == "scalar" {
		a.Scalar = true
	}
	return a, true
}
