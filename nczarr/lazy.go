package nczarr

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/nczarrfs/nczarrfs/zmap"
)

// A distant store's dataset is read lazily: Open reads the root group and
// names its children, and a group's children are read the first time one
// of them (or a list of every array) is asked for, all at once, with as
// many requests in flight as the walk allows. A group of 10,000 arrays
// then mounts as fast as one of 10, and the first ls of it reads the
// 10,000 .zarray objects 128 at a time.

// lazyWalk holds the groups whose children are named but not read.
type lazyWalk struct {
	w       *walker
	mu      sync.Mutex
	pending map[string]*pendingGroup // GUARDED_BY(mu): by group path
}

// pendingGroup is a group whose children are still to be read.
type pendingGroup struct {
	once sync.Once
	done chan struct{} // closed once the children are read
	g    *Group
	// only, when not nil, holds the children to read: those an earlier
	// read of the group failed to read.
	only map[string]bool
	// failed holds the children this read failed to read (a failure to
	// reach the store), and err the first such failure; set before done
	// is closed.
	failed map[string]bool
	err    error
}

// lister is a store that says, with no request, what a kept listing holds
// (zmap/listcache): the walk then tells arrays from groups without
// fetching their metadata.
type lister interface {
	Cached(key string) (zmap.Entry, bool)
	Listed(prefix string) bool
}

// defer_ records g's children to be read when first asked for.
func (l *lazyWalk) defer_(g *Group) {
	if len(g.Arrays)+len(g.Groups) == 0 {
		return
	}
	l.mu.Lock()
	l.pending[g.Path] = &pendingGroup{g: g, done: make(chan struct{})}
	l.mu.Unlock()
}

// readFor reads what is needed to answer for path: the children of every
// group above it.
func (l *lazyWalk) readFor(path string) {
	l.readForCtx(context.Background(), path)
}

// readForCtx is readFor that stops waiting when ctx is done; the reads go
// on, for the next caller. It fails when the read of a group above path
// could not reach the store for the child on the way to path: that child
// is then read again at the next call.
func (l *lazyWalk) readForCtx(ctx context.Context, path string) error {
	if path == "" {
		return nil
	}
	parent, _ := splitKey(path)
	if err := l.readForCtx(ctx, parent); err != nil {
		return err
	}
	return l.readCtx(ctx, parent, path)
}

// read reads the children of the group at path if they are pending.
func (l *lazyWalk) read(path string) { l.readCtx(context.Background(), path, "") }

// readCtx starts reading the children of the group at path if they are
// pending, and waits for them or for ctx. It fails when that read could
// not reach the store for the child at child ("" for none in
// particular). Children whose read failed so are left pending, to be
// read again by the next call: a failure to reach the store is not kept.
func (l *lazyWalk) readCtx(ctx context.Context, path, child string) error {
	l.mu.Lock()
	pg := l.pending[path]
	l.mu.Unlock()
	if pg == nil {
		return nil
	}
	pg.once.Do(func() {
		go func() {
			// The reads belong to no one caller: one that gives up
			// must not leave the group half read for the others.
			var wg sync.WaitGroup
			ctx, failures := withFailures(context.Background())
			failed := l.w.children(ctx, pg.g, pg.only, &wg)
			wg.Wait()
			pg.failed, pg.err = failed.set(), failures.err()
			l.mu.Lock()
			if l.pending[path] == pg {
				if pg.failed != nil {
					l.pending[path] = &pendingGroup{g: pg.g, done: make(chan struct{}), only: pg.failed}
				} else {
					delete(l.pending, path)
				}
			}
			l.mu.Unlock()
			close(pg.done)
		}()
	})
	select {
	case <-pg.done:
		if pg.failed[child] {
			return fmt.Errorf("reading the metadata of %q: %w", child, pg.err)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("reading the metadata of the arrays in %q: %w", path, ctx.Err())
	}
}

// Ready reads, or waits for, what an answer for path needs on a dataset
// read lazily (the children of the groups above it), until ctx is done:
// a caller bound in time calls it before Group, Array or Has, which wait
// without bound.
func (d *Dataset) Ready(ctx context.Context, path string) error {
	if d.lazy == nil {
		return nil
	}
	return d.lazy.readForCtx(ctx, path)
}

// readAll reads every pending group, for a list of every array or group.
// A group whose read failed to reach the store is tried once per call.
func (l *lazyWalk) readAll() {
	tried := map[string]bool{}
	for {
		l.mu.Lock()
		var paths []string
		for p := range l.pending {
			if !tried[p] {
				paths = append(paths, p)
				tried[p] = true
			}
		}
		l.mu.Unlock()
		if len(paths) == 0 {
			return
		}
		var wg sync.WaitGroup
		for _, p := range paths {
			wg.Add(1)
			go func() {
				defer wg.Done()
				l.readFor(p)
				l.read(p)
			}()
		}
		wg.Wait()
	}
}

// Has reports whether path is an array or a group of the dataset. On a
// dataset read lazily it reads no more than the groups above path's
// parent: the parent names its children without their metadata being
// read, so that a stat of each child of a large group (ls -l) reads none
// of them.
//
// On a lazy dataset every look holds the walk's lock, the root's too: a
// group's read (or its read again after a failure) writes the dataset's
// maps while others look, and an unguarded look is a fatal concurrent map
// read and write.
func (d *Dataset) Has(path string) (array, group bool) {
	if d.lazy == nil {
		return d.arrays[path] != nil, d.groups[path] != nil
	}
	if path == "" {
		d.lazy.w.mu.Lock()
		defer d.lazy.w.mu.Unlock()
		return d.arrays[""] != nil, d.groups[""] != nil
	}
	parent, _ := splitKey(path)
	d.lazy.readFor(parent)
	d.lazy.w.mu.Lock()
	defer d.lazy.w.mu.Unlock()
	if d.arrays[path] != nil || d.groups[path] != nil {
		return d.arrays[path] != nil, d.groups[path] != nil
	}
	g := d.groups[parent]
	if g == nil {
		return false, false
	}
	_, array = slices.BinarySearch(g.Arrays, path)
	_, group = slices.BinarySearch(g.Groups, path)
	return array, group
}

// Unread reports whether some group's children are still to be read: what
// needs every array (a header of the whole dataset) then costs requests.
func (d *Dataset) Unread() bool {
	if d.lazy == nil {
		return false
	}
	d.lazy.mu.Lock()
	defer d.lazy.mu.Unlock()
	return len(d.lazy.pending) > 0
}
