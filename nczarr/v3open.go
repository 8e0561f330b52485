package nczarr

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/nczarrfs/nczarrfs/nczarr/zarrmeta"
	"github.com/nczarrfs/nczarrfs/zmap"
)

// openV3 reads a Zarr v3 dataset when the store has a root zarr.json, the
// way zarr-python 3 does: a zarr.json wins over v2 metadata, and every
// node below a v3 group is a v3 node. ok is false when there is no root
// zarr.json.
func (w *walker) openV3(ctx context.Context) (ok bool, err error) {
	raw, err := w.get(ctx, "zarr.json")
	if errors.Is(err, zmap.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return true, err
	}
	doc, err := v3Doc(raw)
	if err != nil {
		return true, fmt.Errorf("%w: zarr.json: %v", ErrNoDataset, err)
	}
	d := w.d
	d.Generation = ZarrV3
	if doc.nodeType() == "array" {
		d.arrays[""] = newArrayV3(d, "", doc, raw)
		return true, nil
	}
	attrs := doc.obj("attributes")
	if sb := attrs.obj("_nczarr_superblock"); sb != nil {
		d.Generation = NCZarrV3
	}
	if w.consolidatedV3(doc, raw) {
		d.Consolidated = true
		w.yieldToObjects(ctx)
		return true, nil
	}
	w.groupV3(ctx, "", doc, raw)
	w.wg.Wait()
	return true, nil
}

// groupV3 records the v3 group at prefix, whose zarr.json is doc, and
// walks its children: those _nczarr_group lists, else every sub-prefix
// holding a zarr.json, or holding v3 nodes further down without one of its
// own (an implicit group, as zarr-java and zarrs write them: an OME-Zarr
// plate's row folder, a store whose top has no zarr.json). doc is nil for
// an implicit group, which is recorded only when it has a node below it;
// raw is doc as stored. It reports whether the group was recorded.
func (w *walker) groupV3(ctx context.Context, prefix string, doc object, raw []byte) bool {
	g := &Group{Path: prefix}
	if doc != nil {
		g.attrs.list, g.attrs.err = zarrmeta.ParseAttrsV3(raw)
	}
	info, listed := parseGroupInfoV3(doc.obj("attributes").obj("_nczarr_group"))
	g.Dims = info.Dims
	var children []string
	if listed {
		children = append(append(children, info.Arrays...), info.Groups...)
	} else {
		w.sem <- struct{}{}
		entries, err := w.d.store.Search(ctx, prefix)
		<-w.sem
		if err != nil {
			w.d.log.Warn("cannot list group", "key", prefix, "err", err)
		}
		for _, e := range entries {
			if e.Dir {
				children = append(children, e.Name)
			}
		}
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, name := range children {
		if !childName(name) {
			w.d.log.Warn("skipping a child with a bad name", "key", prefix, "name", name)
			continue
		}
		p := zmap.Join(prefix, name)
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := zmap.Join(p, "zarr.json")
			raw, err := w.get(ctx, key)
			if errors.Is(err, zmap.ErrNotFound) && !listed {
				// Nodes further down make this folder an implicit
				// group; the walk of it ends before this one's.
				if w.groupV3(ctx, p, nil, nil) {
					mu.Lock()
					g.Groups = append(g.Groups, p)
					mu.Unlock()
				}
				return
			}
			if err != nil {
				w.d.log.Warn("skipping unreadable metadata", "key", key, "err", err)
				return
			}
			child, err := v3Doc(raw)
			if err != nil {
				w.d.log.Warn("skipping unreadable metadata", "key", key, "err", err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if child.nodeType() == "array" {
				g.Arrays = append(g.Arrays, p)
				a := newArrayV3(w.d, p, child, raw)
				w.mu.Lock()
				w.d.arrays[p] = a
				w.mu.Unlock()
				return
			}
			g.Groups = append(g.Groups, p)
			w.wg.Add(1)
			go func() {
				defer w.wg.Done()
				w.groupV3(ctx, p, child, raw)
			}()
		}()
	}
	wg.Wait()
	if doc == nil && len(g.Arrays)+len(g.Groups) == 0 {
		return false
	}
	sort.Strings(g.Arrays)
	sort.Strings(g.Groups)
	w.mu.Lock()
	w.d.groups[prefix] = g
	w.mu.Unlock()
	return true
}

// parseGroupInfoV3 reads NCZarr's v3 _nczarr_group: {"dimensions": [{name,
// size, unlimited}], "arrays": [...], "subgroups": [...]}. The v2 spellings
// (dimensions as an object, "groups") are accepted too.
func parseGroupInfoV3(o object) (groupInfo, bool) {
	if o == nil {
		return groupInfo{}, false
	}
	var g groupInfo
	arrays, ok1 := o.strings("arrays", "vars")
	groups, ok2 := o.strings("subgroups", "groups")
	if !ok1 && !ok2 {
		return g, false
	}
	g.Arrays, g.Groups = arrays, groups
	switch dims := o["dimensions"].(type) {
	case []any:
		g.Dims = map[string]Dim{}
		for _, e := range dims {
			m, _ := e.(map[string]any)
			name, _ := m["name"].(string)
			if name == "" {
				continue
			}
			var d Dim
			if n, ok := m["size"].(json.Number); ok {
				d.Size, _ = n.Int64()
			}
			switch u := m["unlimited"].(type) {
			case json.Number:
				d.Unlimited = u.String() != "0"
			case bool:
				d.Unlimited = u
			}
			g.Dims[name] = d
		}
	case map[string]any:
		v2, _ := parseGroupInfo(object{"dimensions": dims, "arrays": []any{}})
		g.Dims = v2.Dims
	}
	return g, true
}

// consolidatedV3 builds the tree from the consolidated metadata that
// zarr-python 3 keeps in the root zarr.json: "consolidated_metadata":
// {"kind": "inline", "metadata": {path: zarr.json document, ...}}; rootRaw
// is the root zarr.json as stored, whose documents' attributes keep their
// order.
func (w *walker) consolidatedV3(root object, rootRaw []byte) bool {
	cm := root.obj("consolidated_metadata")
	if cm == nil {
		return false
	}
	meta := cm.obj("metadata")
	if kind, _ := cm["kind"].(string); kind != "inline" || meta == nil {
		w.d.log.Warn("ignoring consolidated_metadata", "kind", cm["kind"])
		return false
	}
	groups := map[string]*Group{"": {Path: ""}}
	groups[""].attrs.list, groups[""].attrs.err = zarrmeta.ParseAttrsV3(rootRaw)
	raws := consolidatedDocs(rootRaw)
	docs := map[string]object{}
	for p, v := range meta {
		if !zmap.ValidKey(p) {
			// "" would be the root again, and "a/../b" no node:
			// either would make the tree loop or lie.
			w.d.log.Warn("ignoring a consolidated_metadata entry with a bad path", "key", p)
			continue
		}
		m, ok := v.(map[string]any)
		if !ok {
			w.d.log.Warn("ignoring unreadable consolidated_metadata", "key", p)
			return false
		}
		docs[p] = object(m)
		if object(m).nodeType() == "group" {
			groups[p] = &Group{Path: p}
			groups[p].attrs.list, groups[p].attrs.err = zarrmeta.ParseAttrsV3(raws[p])
		}
	}
	for p, doc := range docs {
		if doc.nodeType() == "group" {
			info, _ := parseGroupInfoV3(doc.obj("attributes").obj("_nczarr_group"))
			groups[p].Dims = info.Dims
			continue
		}
		w.d.arrays[p] = newArrayV3(w.d, p, doc, raws[p])
	}
	if info, ok := parseGroupInfoV3(root.obj("attributes").obj("_nczarr_group")); ok {
		groups[""].Dims = info.Dims
	}
	for p := range docs {
		parent, _ := splitKey(p)
		pg := groups[parent]
		if pg == nil {
			continue
		}
		if groups[p] != nil {
			pg.Groups = append(pg.Groups, p)
		} else {
			pg.Arrays = append(pg.Arrays, p)
		}
	}
	for _, g := range groups {
		sort.Strings(g.Arrays)
		sort.Strings(g.Groups)
	}
	w.d.groups = groups
	return true
}

// consolidatedDocs returns the documents of the root zarr.json's
// consolidated_metadata as stored, by path: none when it is unreadable
// (consolidatedV3 has then refused it).
func consolidatedDocs(rootRaw []byte) map[string][]byte {
	ms, err := members(rootRaw)
	for _, name := range []string{"consolidated_metadata", "metadata"} {
		if err != nil {
			return nil
		}
		raw, _ := lookup(ms, name)
		ms, err = members(raw)
	}
	if err != nil {
		return nil
	}
	docs := make(map[string][]byte, len(ms))
	for _, m := range ms {
		docs[m.Name] = m.Value
	}
	return docs
}

// childName reports whether a group's metadata names a child by one key
// segment. An empty name, ".", ".." or a path would name the group itself
// or another node, and walking it could loop forever.
func childName(name string) bool {
	return name != "" && name != "." && name != ".." && !strings.Contains(name, "/")
}
