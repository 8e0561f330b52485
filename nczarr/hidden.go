package nczarr

import (
	"context"
	"slices"
	"strings"
	"sync"

	"github.com/nczarrfs/nczarrfs/zmap"
)

// metadataNames are the names of the metadata objects of every Zarr and
// NCZarr version. No node of a well-formed dataset has one of them.
var metadataNames = map[string]bool{
	".zgroup": true, ".zarray": true, ".zattrs": true, ".zmetadata": true, "zarr.json": true,
	".nczarr": true, ".nczgroup": true, ".nczarray": true, ".nczvar": true, ".nczattr": true,
}

// yieldToObjects drops every node that consolidated metadata declares
// under the name of a metadata object that is stored there, with the
// nodes below it: a stored object is always visible byte for byte, and
// the mount cannot show a folder and a file under one name. netcdf-c's
// ref_oldformat_only_consolidated fixture has a .zmetadata that declares
// an array at ".zmetadata".
//
// A node found by the walk has its metadata object below its path, so
// only declared nodes need the check. Where a kept listing of its folder
// holds the node's name (zmap/listcache: on S3 the dataset's one flat
// listing), it answers with no request; a local store is asked about
// every declared node (a stat each); a distant store with no listing only
// about those named like a metadata object, one request each: asking
// about every declared node would cost consolidated metadata the
// requests it exists to save.
func (w *walker) yieldToObjects(ctx context.Context) {
	d := w.d
	kept, _ := zmap.As[lister](d.store)
	remote, _ := zmap.As[interface{ Remote() bool }](d.store)
	var suspects, hidden []string
	for _, p := range append(sortedKeys(d.groups), sortedKeys(d.arrays)...) {
		if p == "" {
			continue
		}
		parent, name := splitKey(p)
		switch {
		case kept != nil && kept.Listed(parent):
			if e, ok := kept.Cached(p); ok && !e.Dir {
				hidden = append(hidden, p)
			}
		case metadataNames[name] || remote == nil || !remote.Remote():
			suspects = append(suspects, p)
		}
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, key := range suspects {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.sem <- struct{}{}
			_, err := d.store.Stat(ctx, key)
			<-w.sem
			if err == nil {
				mu.Lock()
				hidden = append(hidden, key)
				mu.Unlock()
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
