package nczarr

import (
	"context"
	"slices"
	"strings"
	"sync"

	"github.com/nczarrfs/nczarrfs/zmap"
)

// yieldToObjects drops every node that consolidated metadata declares
// under the name of a stored object, with the nodes below it: a stored
// object is always visible byte for byte, and the mount cannot show a
// folder and a file under one name. netcdf-c's ref_oldformat_only_consolidated
// fixture has a .zmetadata that declares an array at ".zmetadata".
//
// A node found by the walk has its metadata object below its path, so
// only declared nodes need the check: one listing of each group that
// declares children.
func (w *walker) yieldToObjects(ctx context.Context) {
	d := w.d
	var parents []string
	for p, g := range d.groups {
		if len(g.Groups)+len(g.Arrays) > 0 {
			parents = append(parents, p)
		}
	}
	var mu sync.Mutex
	var hidden []string
	var wg sync.WaitGroup
	for _, p := range parents {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.sem <- struct{}{}
			entries, err := d.store.Search(ctx, p)
			<-w.sem
			if err != nil {
				d.log.Warn("cannot list group", "key", p, "err", err)
				return
			}
			g := d.groups[p]
			for _, e := range entries {
				if e.Dir {
					continue
				}
				key := zmap.Join(p, e.Name)
				if slices.Contains(g.Groups, key) || slices.Contains(g.Arrays, key) {
					mu.Lock()
					hidden = append(hidden, key)
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	for _, key := range hidden {
		d.log.Warn("the metadata declares a node where a stored object is: the object is shown, the node is not", "key", key)
		parent, _ := splitKey(key)
		if g := d.groups[parent]; g != nil {
			g.Groups = slices.DeleteFunc(g.Groups, func(s string) bool { return s == key })
			g.Arrays = slices.DeleteFunc(g.Arrays, func(s string) bool { return s == key })
		}
		for p := range d.groups {
			if p == key || strings.HasPrefix(p, key+"/") {
				delete(d.groups, p)
			}
		}
		for p := range d.arrays {
			if p == key || strings.HasPrefix(p, key+"/") {
				delete(d.arrays, p)
			}
		}
	}
}
