package fusefs

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/nczarrfs/nczarrfs/nczarr"
	"github.com/nczarrfs/nczarrfs/zmap"
)

// Modification times come from the store, so that they stay the same
// across remounts (rsync and make compare them):
//   - a stored object has its own time;
//   - a group or array directory, and every file the mount makes for an
//     array (data, data.npy, info.json, ...), has the time of the
//     group's or array's metadata object (.zgroup, .zarray or zarr.json);
//   - other directories (nested chunk folders) have the time of the
//     nearest group or array above them;
//   - the root, and header.cdl, have the time of the root's metadata
//     object, else of .zmetadata, else of the newest object at the top;
//     a group or array without a metadata object of its own gets it too;
//   - the live files in .nczarrfs have the time the mount started, when
//     their counters started.
//
// A time is read from a kept listing (zmap/listcache) where one holds the
// metadata object, with no request. On a distant store (S3) a group or
// array whose folder is not listed has the root's time instead, until its
// folder is listed: a stat costs no round trip. On a local store the
// object is stat'ed. The root's time is found once, with at most one
// request or listing of the root.
//
// Only when the store cannot say (an error, or a store that records no
// times) is the mount's start used; such a time is not remembered.

// modTimes remembers the times of directories, found with one Stat each.
type modTimes struct {
	started time.Time
	mu      sync.Mutex
	dirs    map[string]time.Time // GUARDED_BY(mu)
}

// stamp sets a's times to tm.
func stamp(a *fuse.Attr, tm time.Time) {
	sec, nsec := uint64(tm.Unix()), uint32(tm.Nanosecond())
	a.Mtime, a.Ctime, a.Atime = sec, sec, sec
	a.Mtimensec, a.Ctimensec, a.Atimensec = nsec, nsec, nsec
}

// metaNode returns the nearest group or array at or above key.
func (t *tree) metaNode(key string) string {
	for key != "" && !t.named(key) {
		key, _ = splitLast(key)
	}
	return key
}

// splitLast splits a key at its last '/'.
func splitLast(key string) (dir, name string) {
	for i := len(key) - 1; i >= 0; i-- {
		if key[i] == '/' {
			return key[:i], key[i+1:]
		}
	}
	return "", key
}

// metaObject names the metadata object of the group or array at key.
func (t *tree) metaObject(key string) string {
	switch {
	case t.ds.Generation == nczarr.ZarrV3 || t.ds.Generation == nczarr.NCZarrV3:
		return zmap.Join(key, "zarr.json")
	case isArray(t.ds, key):
		return zmap.Join(key, ".zarray")
	}
	return zmap.Join(key, ".zgroup")
}

// dirTime returns the modification time of the directory key (see above).
func (t *tree) dirTime(ctx context.Context, key string) time.Time {
	key = t.metaNode(key)
	if e, ok := t.lc.Cached(t.metaObject(key)); ok && !e.ModTime.IsZero() {
		return e.ModTime
	}
	t.times.mu.Lock()
	tm, ok := t.times.dirs[key]
	t.times.mu.Unlock()
	if ok {
		return tm
	}
	var err error
	switch {
	case key != "" && t.remote:
		return t.dirTime(ctx, "")
	case key == "":
		tm, err = t.rootTime(ctx)
	default:
		var e zmap.Entry
		e, err = t.lc.Stat(ctx, t.metaObject(key))
		tm = e.ModTime
		if errors.Is(err, zmap.ErrNotFound) {
			tm, err = t.dirTime(ctx, ""), nil
		}
	}
	if err != nil || tm.IsZero() {
		return t.times.started
	}
	t.times.mu.Lock()
	t.times.dirs[key] = tm
	t.times.mu.Unlock()
	return tm
}

// rootTime finds the time of the root (see above).
func (t *tree) rootTime(ctx context.Context) (time.Time, error) {
	for _, key := range []string{t.metaObject(""), ".zmetadata"} {
		e, err := t.lc.Stat(ctx, key)
		if err == nil {
			return e.ModTime, nil
		}
		if !errors.Is(err, zmap.ErrNotFound) {
			return time.Time{}, err
		}
	}
	entries, err := t.lc.Search(ctx, "")
	var newest time.Time
	for _, e := range entries {
		if e.ModTime.After(newest) {
			newest = e.ModTime
		}
	}
	return newest, err
}

// isArray reports whether key is an array, reading none of its metadata.
func isArray(ds *nczarr.Dataset, key string) bool {
	a, _ := ds.Has(key)
	return a
}
