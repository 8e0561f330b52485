// Package nczarr opens NCZarr and Zarr (v2, v3) datasets: their groups,
// arrays, dimensions and attributes.
//
// Open reads a dataset's metadata from a zmap.Store once (the store is
// treated as immutable), whatever generation of NCZarr metadata netcdf-c
// wrote, or pure Zarr. Each array is a chunked.Array (package chunked, the
// read path), whose ReadAt serves any byte range of the array in C order,
// little-endian, decoding only the chunks it touches.
package nczarr

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/nczarrfs/nczarrfs/cache"
	"github.com/nczarrfs/nczarrfs/nczarr/chunked"
	"github.com/nczarrfs/nczarrfs/zmap"
)

// ErrNoDataset is wrapped by Open when the store holds no Zarr dataset.
var ErrNoDataset = errors.New("no Zarr or NCZarr dataset found")

// ErrReferenceSet: the store is a kerchunk Parquet reference folder, whose
// .zmetadata (holding record_size) looks like consolidated metadata. Read
// as Zarr, every array would be all fill values; zmap/kerchunk reads it.
var ErrReferenceSet = errors.New("a kerchunk Parquet reference folder (its .zmetadata holds record_size), not a Zarr store")

// Options configure Open.
type Options struct {
	// Cache holds decoded chunks, and read-ahead loads into it. Nil means
	// a cache of budget 0: concurrent loads of a chunk are shared, nothing
	// is kept and readers do no read-ahead.
	Cache *cache.Cache
	// Logger receives warnings about metadata that could not be read.
	// Nil means slog.Default().
	Logger *slog.Logger
	// Parallel bounds the concurrent store requests of one read and of
	// the metadata walk. 0 means what the store asks for (a Parallelism
	// method, on it or on a store it wraps), else 8.
	Parallel int
	// Decoders bounds the read-ahead loads that decode at once. 0 means
	// GOMAXPROCS. A server that must answer requests while read-ahead
	// decodes (the FUSE daemon) runs with more processors than decoders,
	// so that a request never waits for a decode to end.
	Decoders int
	// MaxObjectSize raises the bound of every stored chunk and shard
	// (docs/codecs.md, "Bounds on stored objects") to at least this many
	// bytes; it never lowers one. 0 keeps the codecs' bounds.
	MaxObjectSize int64
	// MaxMetadataSize bounds a metadata document (.zarray, zarr.json,
	// .zmetadata...): a larger one fails to read. 0 means
	// zmap.DefaultMaxSize (64 MiB).
	MaxMetadataSize int64
}

// Dataset is an opened dataset.
type Dataset struct {
	Generation Generation
	// Consolidated is true when the tree was found through .zmetadata.
	Consolidated bool

	store  zmap.Store
	src    *chunked.Source // what the arrays read their chunks through
	log    *slog.Logger
	par    int
	meta   int64 // the bound of a metadata document
	groups map[string]*Group
	arrays map[string]*Array
	// v1Attrs are the attribute types of 4.8.0 arrays (.nczattr), by
	// path; written by the walk under its mu.
	v1Attrs map[string]json.RawMessage
	// lazy reads groups' children when first asked for (lazy.go); nil
	// when Open read them all.
	lazy *lazyWalk
}

// Group is a group of the dataset.
type Group struct {
	Path   string // key prefix; "" for the root
	Dims   map[string]Dim
	Groups []string // child group paths, sorted
	Arrays []string // child array paths, sorted

	attrs nodeAttrs // read by the walk (Dataset.Attrs)
}

// Group returns the group at path, or nil. On a dataset read lazily it
// first reads the groups above path that are not read yet.
func (d *Dataset) Group(path string) *Group {
	if d.lazy == nil {
		return d.groups[path]
	}
	d.lazy.readFor(path)
	d.lazy.w.mu.Lock()
	defer d.lazy.w.mu.Unlock()
	return d.groups[path]
}

// Array returns the array at path, or nil. On a dataset read lazily it
// first reads the groups above path that are not read yet.
func (d *Dataset) Array(path string) *Array {
	if d.lazy == nil {
		return d.arrays[path]
	}
	d.lazy.readFor(path)
	d.lazy.w.mu.Lock()
	defer d.lazy.w.mu.Unlock()
	return d.arrays[path]
}

// Arrays lists every array path, sorted (reading every group first).
func (d *Dataset) Arrays() []string {
	if d.lazy == nil {
		return sortedKeys(d.arrays)
	}
	d.lazy.readAll()
	d.lazy.w.mu.Lock()
	defer d.lazy.w.mu.Unlock()
	return sortedKeys(d.arrays)
}

// Groups lists every group path, sorted (reading every group first).
func (d *Dataset) Groups() []string {
	if d.lazy == nil {
		return sortedKeys(d.groups)
	}
	d.lazy.readAll()
	d.lazy.w.mu.Lock()
	defer d.lazy.w.mu.Unlock()
	return sortedKeys(d.groups)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Open reads the metadata of the dataset at the root of store.
func Open(ctx context.Context, store zmap.Store, opts Options) (*Dataset, error) {
	d := &Dataset{
		store:  store,
		log:    opts.Logger,
		par:    opts.Parallel,
		meta:   opts.MaxMetadataSize,
		groups: map[string]*Group{},
		arrays: map[string]*Array{},
	}
	if d.log == nil {
		d.log = slog.Default()
	}
	if d.par <= 0 {
		d.par = parallelism(store)
	}
	d.src = chunked.NewSource(store, opts.Cache, d.par, opts.Decoders)
	d.src.SetMaxObjectSize(opts.MaxObjectSize)
	w := &walker{d: d, sem: make(chan struct{}, walkParallelism(store, d.par))}

	if ok, err := w.openV3(ctx); ok || err != nil {
		if err != nil {
			return nil, err
		}
		return d, nil
	}
	zgroup, err := w.getObject(ctx, ".zgroup")
	if err != nil && !errors.Is(err, zmap.ErrNotFound) {
		return nil, err
	}
	zattrs, zattrsRaw, err := w.getDoc(ctx, ".zattrs")
	if err != nil && !errors.Is(err, zmap.ErrNotFound) {
		return nil, err
	}
	v1, err := w.getObject(ctx, ".nczarr")
	if err != nil && !errors.Is(err, zmap.ErrNotFound) {
		return nil, err
	}
	switch {
	case zattrs.obj("_nczarr_superblock") != nil:
		d.Generation = NCZarr2
	case zgroup.obj("_nczarr_superblock") != nil:
		if _, upper := zgroup["_NCZARR_SUPERBLOCK"]; upper {
			d.Generation = NCZarr48
		} else {
			d.Generation = NCZarr49
		}
	case v1 != nil:
		d.Generation = NCZarrV1
	default:
		d.Generation = PureZarr
	}

	if zgroup == nil && d.Generation == PureZarr {
		// A dataset may also be a single array at the root.
		if _, err := store.Size(ctx, ".zarray"); err == nil {
			d.arrays[""] = w.array(ctx, "")
			return d, nil
		} else if !errors.Is(err, zmap.ErrNotFound) {
			return nil, err
		}
		done, err := w.implicitRoot(ctx)
		if err != nil {
			return nil, err
		}
		if done {
			if d.Consolidated {
				w.yieldToObjects(ctx)
			}
			return d, nil
		}
	}

	if d.Generation == PureZarr {
		ok, err := w.consolidated(ctx)
		if err != nil {
			return nil, err
		}
		if ok {
			d.Consolidated = true
			w.yieldToObjects(ctx)
			return d, nil
		}
	}
	if walkParallelism(store, d.par) > d.par {
		// A distant store: the children are read when first asked for.
		w.lazy = &lazyWalk{w: w, pending: map[string]*pendingGroup{}}
	}
	w.lister, _ = zmap.As[lister](store)
	rctx, failed := withFailures(ctx)
	w.group(rctx, "", zgroup, zattrs, zattrsRaw)
	w.wg.Wait()
	if err := failed.err(); err != nil && w.lazy != nil {
		// The root's children could not be named: a mount would show
		// none of them until it ends.
		return nil, fmt.Errorf("listing the root group: %w", err)
	}
	d.lazy = w.lazy
	return d, nil
}

// parallelism is the concurrency a store asks for, through any wrappers,
// or 8.
func parallelism(s zmap.Store) int {
	if p, ok := zmap.As[interface{ Parallelism() int }](s); ok && p.Parallelism() > 0 {
		return p.Parallelism()
	}
	return 8
}

// remoteWalk is how many metadata objects the walk fetches at once from a
// distant store: at a 20 ms round trip, 10,000 .zarray objects take 1.6 s
// at 128 in flight, 6 s at 32.
const remoteWalk = 128

// walkParallelism bounds the walk's requests: par, or remoteWalk for a
// store whose requests cost a round trip (a Remote method says so).
func walkParallelism(s zmap.Store, par int) int {
	if r, ok := zmap.As[interface{ Remote() bool }](s); ok && r.Remote() {
		return max(par, remoteWalk)
	}
	return par
}

// walker loads the tree of groups and arrays with bounded concurrency.
type walker struct {
	d   *Dataset
	sem chan struct{} // bounds store requests in flight
	wg  sync.WaitGroup
	mu  sync.Mutex // guards d.groups and d.arrays while walking, and kept
	// kept holds the metadata objects classify fetched to tell arrays
	// from groups, by key, until the step that reads them takes them: one
	// request per child instead of a probe and then a fetch.
	kept map[string][]byte // GUARDED_BY(mu)
	// lazy, when set, leaves a group's children to be read when first
	// asked for (lazy.go).
	lazy *lazyWalk
	// lister, when set, tells arrays from groups from kept listings.
	lister lister
}

// get fetches key, or takes it from what classify kept.
func (w *walker) get(ctx context.Context, key string) ([]byte, error) {
	w.mu.Lock()
	data, ok := w.kept[key]
	delete(w.kept, key)
	w.mu.Unlock()
	if ok {
		return data, nil
	}
	w.sem <- struct{}{}
	defer func() { <-w.sem }()
	data, err := w.d.store.Get(w.d.metaCtx(ctx), key)
	return data, noteFailure(ctx, err)
}

// metaCtx is ctx with the bound of a metadata document.
func (d *Dataset) metaCtx(ctx context.Context) context.Context {
	if d.meta <= 0 {
		return zmap.WithMaxSize(ctx, zmap.DefaultMaxSize)
	}
	return zmap.WithMaxSize(ctx, d.meta)
}

// getObject fetches and parses a JSON object; (nil, ErrNotFound) when the
// key is not stored.
func (w *walker) getObject(ctx context.Context, key string) (object, error) {
	o, _, err := w.getDoc(ctx, key)
	return o, err
}

// getDoc is getObject that also returns the object's bytes as stored,
// even when they do not parse.
func (w *walker) getDoc(ctx context.Context, key string) (object, []byte, error) {
	data, err := w.get(ctx, key)
	if err != nil {
		return nil, nil, err
	}
	o, err := parseObject(data)
	if err != nil {
		return nil, data, fmt.Errorf("%s: %w", key, err)
	}
	return o, data, nil
}

// optional fetches a JSON object that may be absent, logging unreadable ones.
func (w *walker) optional(ctx context.Context, key string) object {
	o, _ := w.optionalDoc(ctx, key)
	return o
}

// optionalDoc is optional that also returns the object's bytes as stored:
// a .zattrs that does not parse is kept, for its attributes to say why.
func (w *walker) optionalDoc(ctx context.Context, key string) (object, []byte) {
	o, data, err := w.getDoc(ctx, key)
	if err != nil && !errors.Is(err, zmap.ErrNotFound) {
		w.d.log.Warn("skipping unreadable metadata", "key", key, "err", err)
	}
	return o, data
}

// group records the group at prefix, whose .zgroup and .zattrs are
// zgroup and zattrs (zattrsRaw as stored), and walks its children.
func (w *walker) group(ctx context.Context, prefix string, zgroup, zattrs object, zattrsRaw []byte) {
	g := &Group{Path: prefix, attrs: w.v2Attrs(ctx, prefix, zattrsRaw)}
	var info groupInfo
	found := false
	for _, o := range []object{zattrs.obj("_nczarr_group"), zgroup.obj("_nczarr_group")} {
		if info, found = parseGroupInfo(o); found {
			break
		}
	}
	if !found && w.d.Generation == NCZarrV1 {
		info, found = parseGroupInfo(w.optional(ctx, zmap.Join(prefix, ".nczgroup")))
	}
	g.Dims = info.Dims

	arrays, groups := info.Arrays, info.Groups
	if !found {
		var err error
		arrays, groups, err = w.search(ctx, prefix)
		if err != nil {
			w.d.log.Warn("cannot list group", "key", prefix, "err", err)
		}
	}
	for _, name := range arrays {
		if childName(name) {
			g.Arrays = append(g.Arrays, zmap.Join(prefix, name))
		}
	}
	for _, name := range groups {
		if childName(name) {
			g.Groups = append(g.Groups, zmap.Join(prefix, name))
		}
	}
	sort.Strings(g.Arrays)
	sort.Strings(g.Groups)
	w.mu.Lock()
	w.d.groups[prefix] = g
	w.mu.Unlock()
	if w.lazy != nil {
		w.lazy.defer_(g)
		return
	}
	w.children(ctx, g, nil, &w.wg)
}

// children reads the arrays and groups in g, in the background (wg): all
// of them, or, when only is not nil, those it holds. Each child whose read
// met a failure to reach the store is in the failed set it returns, to be
// read after wg is done; such an array is kept meanwhile with the failure
// as its Err (Unreachable), and is read again with the group
// (lazyWalk.readCtx).
func (w *walker) children(ctx context.Context, g *Group, only map[string]bool, wg *sync.WaitGroup) *failedSet {
	failed := &failedSet{}
	for _, p := range g.Arrays {
		if only != nil && !only[p] {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			cctx, f := withFailures(ctx)
			a := w.array(cctx, p)
			if err := f.err(); err != nil {
				a = &Array{Path: p, Err: fmt.Errorf("reading the metadata of %s: %w", p, err)}
				failed.add(p)
			}
			w.mu.Lock()
			w.d.arrays[p] = a
			w.mu.Unlock()
		}()
	}
	for _, p := range g.Groups {
		if only != nil && !only[p] {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			cctx, f := withFailures(ctx)
			zg := w.optional(cctx, zmap.Join(p, ".zgroup"))
			za, zaRaw := w.optionalDoc(cctx, zmap.Join(p, ".zattrs"))
			w.group(cctx, p, zg, za, zaRaw)
			if f.err() != nil {
				failed.add(p)
			}
		}()
	}
	return failed
}

// failedSet is the set of children of a group whose read failed to reach
// the store.
type failedSet struct {
	mu    sync.Mutex
	paths map[string]bool // GUARDED_BY(mu)
}

func (s *failedSet) add(path string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.paths == nil {
		s.paths = map[string]bool{}
	}
	s.paths[path] = true
}

// set returns the paths in s, nil when there are none.
func (s *failedSet) set() map[string]bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.paths
}

// search finds a pure Zarr group's children: every sub-prefix holding a
// .zarray is an array, one holding a .zgroup a group.
func (w *walker) search(ctx context.Context, prefix string) (arrays, groups []string, err error) {
	w.sem <- struct{}{}
	entries, err := w.d.store.Search(ctx, prefix)
	<-w.sem
	if err != nil {
		return nil, nil, noteFailure(ctx, err)
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, e := range entries {
		if !e.Dir {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			kind := w.classify(ctx, zmap.Join(prefix, e.Name))
			mu.Lock()
			defer mu.Unlock()
			switch kind {
			case ".zarray":
				arrays = append(arrays, e.Name)
			case ".zgroup":
				groups = append(groups, e.Name)
			}
		}()
	}
	wg.Wait()
	return arrays, groups, nil
}

// classify says whether prefix is an array (".zarray"), a group
// (".zgroup") or neither (""). It asks a kept listing of prefix when there
// is one; otherwise it fetches the object that tells, and keeps it for the
// walk's next step.
func (w *walker) classify(ctx context.Context, prefix string) string {
	if w.lister != nil && w.lister.Listed(prefix) {
		for _, name := range []string{".zarray", ".zgroup"} {
			if _, ok := w.lister.Cached(zmap.Join(prefix, name)); ok {
				return name
			}
		}
		return ""
	}
	for _, name := range []string{".zarray", ".zgroup"} {
		key := zmap.Join(prefix, name)
		data, err := w.get(ctx, key)
		if err == nil {
			w.mu.Lock()
			if w.kept == nil {
				w.kept = map[string][]byte{}
			}
			w.kept[key] = data
			w.mu.Unlock()
			return name
		}
		if !errors.Is(err, zmap.ErrNotFound) {
			w.d.log.Warn("cannot probe", "key", key, "err", err)
		}
	}
	return ""
}

// array loads an array's metadata. Problems are kept in the Array, so the
// array is still listed and only reads of its data fail.
func (w *walker) array(ctx context.Context, path string) *Array {
	zarray, err := w.get(ctx, zmap.Join(path, ".zarray"))
	if err != nil {
		return &Array{Path: path, Err: fmt.Errorf("%s: %v", zmap.Join(path, ".zarray"), err)}
	}
	_, zattrs := w.optionalDoc(ctx, zmap.Join(path, ".zattrs"))
	var v1 object
	if w.d.Generation == NCZarrV1 {
		for _, name := range []string{".nczarray", ".nczvar"} {
			if v1 = w.optional(ctx, zmap.Join(path, name)); v1 != nil {
				break
			}
		}
	}
	if w.d.Generation == NCZarrV1 {
		if types := w.v2Attrs(ctx, path, zattrs).v1Types; types != nil {
			w.mu.Lock()
			if w.d.v1Attrs == nil {
				w.d.v1Attrs = map[string]json.RawMessage{}
			}
			w.d.v1Attrs[path] = types
			w.mu.Unlock()
		}
	}
	return newArray(w.d, path, zarray, zattrs, v1)
}

// consolidated builds the tree from a root .zmetadata, if there is one.
func (w *walker) consolidated(ctx context.Context) (bool, error) {
	data, err := w.get(ctx, ".zmetadata")
	if errors.Is(err, zmap.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	var doc struct {
		Metadata   map[string]json.RawMessage `json:"metadata"`
		RecordSize json.RawMessage            `json:"record_size"`
	}
	if err := decodeJSON(data, &doc); err != nil || doc.Metadata == nil {
		w.d.log.Warn("ignoring unreadable .zmetadata", "err", err)
		return false, nil
	}
	if _, refs := zmap.As[interface{ ReferenceSet() bool }](w.d.store); doc.RecordSize != nil && !refs {
		return false, fmt.Errorf(".zmetadata: %w", ErrReferenceSet)
	}
	groups := map[string]*Group{"": {Path: ""}}
	var arrays []string
	for key := range doc.Metadata {
		dir, name := splitKey(key)
		if dir != "" && !zmap.ValidKey(dir) {
			// "/x", "a//b", "a/../b": no node has that path.
			w.d.log.Warn("ignoring a .zmetadata entry with a bad path", "key", key)
			continue
		}
		switch name {
		case ".zgroup":
			if groups[dir] == nil {
				groups[dir] = &Group{Path: dir}
			}
		case ".zarray":
			arrays = append(arrays, dir)
		}
	}
	sort.Strings(arrays)
	if len(arrays) > 0 && arrays[0] == "" {
		// The dataset is one array at the root.
		w.d.arrays[""] = newArray(w.d, "", doc.Metadata[".zarray"], doc.Metadata[".zattrs"], nil)
		return true, nil
	}
	// A folder above a listed array or group is a group even where the
	// metadata leaves out its .zgroup, as zarr-python reads it.
	for _, p := range append(slices.Clone(arrays), sortedKeys(groups)...) {
		for p != "" {
			p, _ = splitKey(p)
			if groups[p] == nil {
				groups[p] = &Group{Path: p}
			}
		}
	}
	for _, p := range arrays {
		a := newArray(w.d, p, doc.Metadata[zmap.Join(p, ".zarray")], doc.Metadata[zmap.Join(p, ".zattrs")], nil)
		w.d.arrays[p] = a
		parent, _ := splitKey(p)
		if g := groups[parent]; g != nil {
			g.Arrays = append(g.Arrays, p)
		}
	}
	for p, g := range groups {
		if p == "" {
			continue
		}
		parent, _ := splitKey(p)
		if pg := groups[parent]; pg != nil {
			pg.Groups = append(pg.Groups, p)
		}
		sort.Strings(g.Arrays)
	}
	for p, g := range groups {
		sort.Strings(g.Groups)
		// Pure Zarr: no 4.8.0 types to fetch, no request.
		g.attrs = w.v2Attrs(ctx, p, doc.Metadata[zmap.Join(p, ".zattrs")])
	}
	w.d.groups = groups
	return true, nil
}

// splitKey splits "a/b/c" into "a/b" and "c".
func splitKey(key string) (dir, name string) {
	if i := strings.LastIndexByte(key, '/'); i >= 0 {
		return key[:i], key[i+1:]
	}
	return "", key
}
