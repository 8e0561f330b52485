package icechunk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nczarrfs/nczarrfs/zmap"
)

// Store is the Zarr v3 store of one snapshot, a zmap.Store: the
// zarr.json of each node (its stored bytes), and a chunk object under its
// key (group/array/c/0/1) where a manifest references one. Manifests are
// read when a chunk of theirs is first needed.
type Store struct {
	r     *Repository
	snap  *Snapshot
	nodes map[string]*node           // by zmap key ("" for the root)
	dirs  map[string]map[string]bool // folder key -> child name -> is a folder

	mu     sync.Mutex
	chunks map[string]*once[[]string] // array key -> its chunk keys, relative, sorted
}

// node is a snapshot node with what its zarr.json says of chunk keys.
type node struct {
	*Node
	key   string
	ndim  int
	sep   string // chunk key separator
	v2enc bool   // the "v2" chunk key encoding (no "c" prefix)
}

// Version opens the store of snapshot id, reading the snapshot file.
func (r *Repository) Version(ctx context.Context, id ID) (*Store, error) {
	snap, err := r.Snapshot(ctx, id)
	if err != nil {
		return nil, err
	}
	s := &Store{r: r, snap: snap, nodes: map[string]*node{}, dirs: map[string]map[string]bool{"": {}}, chunks: map[string]*once[[]string]{}}
	for i := range snap.Nodes {
		n := &node{Node: &snap.Nodes[i], key: strings.TrimPrefix(snap.Nodes[i].Path, "/")}
		if n.Array {
			if err := n.parseMeta(); err != nil {
				r.log.Warn("icechunk: array metadata", "snapshot", id.String(), "array", n.Path, "err", err)
			}
		}
		s.nodes[n.key] = n
		s.addObject(zmap.Join(n.key, "zarr.json"))
		if n.Array && len(n.Manifests) > 0 {
			if n.v2enc || n.sep == "." {
				s.dir(n.key)
			} else {
				s.addDir(zmap.Join(n.key, "c"))
			}
		}
	}
	return s, nil
}

// Snapshot returns the snapshot the store shows.
func (s *Store) Snapshot() *Snapshot { return s.snap }

func (s *Store) dir(key string) map[string]bool {
	d, ok := s.dirs[key]
	if !ok {
		d = map[string]bool{}
		s.dirs[key] = d
		if key != "" {
			parent, name := split(key)
			s.dir(parent)[name] = true
		}
	}
	return d
}

func (s *Store) addObject(key string) {
	parent, name := split(key)
	s.dir(parent)[name] = false
}

func (s *Store) addDir(key string) { s.dir(key) }

func split(key string) (dir, name string) {
	if i := strings.LastIndexByte(key, '/'); i >= 0 {
		return key[:i], key[i+1:]
	}
	return "", key
}

// parseMeta reads the number of dimensions and the chunk key encoding
// from an array's zarr.json.
func (n *node) parseMeta() error {
	n.sep, n.ndim = "/", -1
	var m struct {
		Shape            []uint64 `json:"shape"`
		ChunkKeyEncoding *struct {
			Name          string `json:"name"`
			Configuration struct {
				Separator string `json:"separator"`
			} `json:"configuration"`
		} `json:"chunk_key_encoding"`
	}
	if err := json.Unmarshal(n.UserData, &m); err != nil {
		return err
	}
	n.ndim = len(m.Shape)
	if e := m.ChunkKeyEncoding; e != nil {
		switch e.Name {
		case "default":
		case "v2":
			n.v2enc, n.sep = true, "."
		default:
			return fmt.Errorf("unknown chunk key encoding %q", e.Name)
		}
		if sep := e.Configuration.Separator; sep == "." || sep == "/" {
			n.sep = sep
		}
	}
	return nil
}

// chunkKey is the key of chunk idx relative to its array.
func (n *node) chunkKey(idx []uint32) string {
	parts := make([]string, 0, len(idx)+1)
	if !n.v2enc {
		parts = append(parts, "c")
	}
	for _, i := range idx {
		parts = append(parts, strconv.FormatUint(uint64(i), 10))
	}
	if n.v2enc && len(idx) == 0 {
		return "0"
	}
	return strings.Join(parts, n.sep)
}

// parseChunk parses rel, a key relative to the array, as a chunk index.
func (n *node) parseChunk(rel string) ([]uint32, bool) {
	if n.ndim < 0 {
		return nil, false
	}
	if !n.v2enc {
		var ok bool
		if rel == "c" && n.ndim == 0 {
			return []uint32{}, true
		}
		if rel, ok = strings.CutPrefix(rel, "c"+n.sep); !ok {
			return nil, false
		}
	} else if n.ndim == 0 {
		return []uint32{}, rel == "0"
	}
	parts := strings.Split(rel, n.sep)
	if len(parts) != n.ndim {
		return nil, false
	}
	idx := make([]uint32, len(parts))
	for d, p := range parts {
		v, err := strconv.ParseUint(p, 10, 32)
		if err != nil || strconv.FormatUint(v, 10) != p {
			return nil, false
		}
		idx[d] = uint32(v)
	}
	return idx, true
}

// errNotChunk is the lookup of a key that names nothing.
func notFound(key string) error {
	return fmt.Errorf("icechunk: %q: %w", key, zmap.ErrNotFound)
}

// object is what a key names: a node's zarr.json, or a chunk.
type object struct {
	meta []byte // zarr.json
	ref  ChunkRef
	arr  *node
}

// resolve finds the object of key.
func (s *Store) resolve(ctx context.Context, key string) (object, error) {
	if !zmap.ValidKey(key) {
		return object{}, notFound(key)
	}
	parent, name := split(key)
	if name == "zarr.json" {
		if n, ok := s.nodes[parent]; ok {
			return object{meta: n.UserData}, nil
		}
	}
	// The array whose chunk key this is: the nearest array above it.
	for p := parent; ; {
		if n, ok := s.nodes[p]; ok {
			if !n.Array {
				return object{}, notFound(key)
			}
			rel := strings.TrimPrefix(key, p)
			rel = strings.TrimPrefix(rel, "/")
			idx, ok := n.parseChunk(rel)
			if !ok {
				return object{}, notFound(key)
			}
			ref, ok, err := s.lookup(ctx, n, idx)
			if err != nil {
				return object{}, err
			}
			if !ok {
				return object{}, notFound(key)
			}
			return object{ref: ref, arr: n}, nil
		}
		if p == "" {
			return object{}, notFound(key)
		}
		p, _ = split(p)
	}
}

// lookup finds the reference of chunk idx of array n in the manifest
// that covers it, reading that manifest if need be.
func (s *Store) lookup(ctx context.Context, n *node, idx []uint32) (ChunkRef, bool, error) {
	for _, mr := range n.Manifests {
		if !mr.covers(idx) {
			continue
		}
		m, err := s.r.manifest(ctx, mr.ID)
		if err != nil {
			return ChunkRef{}, false, err
		}
		ref, ok, err := m.Lookup(n.ID, idx)
		if err != nil {
			return ref, false, fmt.Errorf("icechunk: manifests/%s: %w", mr.ID, err)
		}
		if ok {
			return ref, true, nil
		}
	}
	return ChunkRef{}, false, nil
}

func (o object) size() int64 {
	switch {
	case o.meta != nil:
		return int64(len(o.meta))
	case o.ref.Kind == refInline:
		return int64(len(o.ref.Inline))
	}
	return int64(o.ref.Length)
}

// Get returns the whole object under key.
func (s *Store) Get(ctx context.Context, key string) ([]byte, error) {
	o, err := s.resolve(ctx, key)
	if err != nil {
		return nil, err
	}
	switch {
	case o.meta != nil:
		return slices.Clone(o.meta), nil
	case o.ref.Kind == refInline:
		return slices.Clone(o.ref.Inline), nil
	}
	size := o.size()
	if size > 1<<31 {
		return nil, fmt.Errorf("icechunk: chunk %q of %d bytes is too large", key, size)
	}
	p := make([]byte, size)
	n, err := s.readRef(ctx, key, o.ref, p, 0)
	if err != nil && !(err == io.EOF && n == len(p)) {
		return nil, err
	}
	return p, nil
}

// ReadAt reads len(p) bytes of the object under key from off.
func (s *Store) ReadAt(ctx context.Context, key string, p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("icechunk: readat %q: negative offset %d", key, off)
	}
	o, err := s.resolve(ctx, key)
	if err != nil {
		return 0, err
	}
	size := o.size()
	if off >= size {
		return 0, io.EOF
	}
	want := p
	if int64(len(want)) > size-off {
		want = p[:size-off]
	}
	var n int
	switch {
	case o.meta != nil:
		n = copy(want, o.meta[off:])
	case o.ref.Kind == refInline:
		n = copy(want, o.ref.Inline[off:])
	default:
		n, err = s.readRef(ctx, key, o.ref, want, off)
		if err != nil && err != io.EOF {
			return n, err
		}
		if n < len(want) {
			return n, fmt.Errorf("icechunk: chunk %q: short read", key)
		}
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// readRef fills p with the bytes of a native or virtual chunk from off
// (within the chunk, which p does not pass the end of).
func (s *Store) readRef(ctx context.Context, key string, ref ChunkRef, p []byte, off int64) (int, error) {
	if ref.Kind == refNative {
		ck := "chunks/" + ref.ChunkID.String()
		n, err := s.r.st.ReadAt(ctx, ck, p, int64(ref.Offset)+off)
		if err == io.EOF && n == len(p) {
			err = nil
		}
		if err != nil {
			// A missing chunk file is an error, never the fill value.
			if errors.Is(err, zmap.ErrNotFound) || err == io.EOF {
				return n, fmt.Errorf("icechunk: chunk %q: %s is missing or short (%v)", key, ck, err)
			}
			return n, fmt.Errorf("icechunk: chunk %q: %s: %w", key, ck, err)
		}
		return n, nil
	}
	st, vkey, err := s.r.virtual(ctx, ref)
	if err != nil {
		return 0, fmt.Errorf("icechunk: chunk %q: %w", key, err)
	}
	n, err := st.ReadAt(ctx, vkey, p, int64(ref.Offset)+off)
	if err == io.EOF && n == len(p) {
		err = nil
	}
	if err != nil {
		if errors.Is(err, zmap.ErrNotFound) || err == io.EOF {
			return n, fmt.Errorf("icechunk: virtual chunk %q: %s is missing or short (%v)", key, ref.Location, err)
		}
		return n, fmt.Errorf("icechunk: virtual chunk %q: %s: %w", key, ref.Location, err)
	}
	return n, nil
}

// Size returns the size of the object under key.
func (s *Store) Size(ctx context.Context, key string) (int64, error) {
	o, err := s.resolve(ctx, key)
	if err != nil {
		return 0, err
	}
	return o.size(), nil
}

// Stat returns the Entry of the object under key; its time is the
// snapshot's.
func (s *Store) Stat(ctx context.Context, key string) (zmap.Entry, error) {
	o, err := s.resolve(ctx, key)
	if err != nil {
		return zmap.Entry{}, err
	}
	_, name := split(key)
	return zmap.Entry{Name: name, Size: o.size(), ModTime: s.snap.WrittenAt}, nil
}

// Search lists the children of prefix: nodes and their zarr.json from
// the snapshot, chunk keys from the manifests (all of an array's are read
// to list its chunks).
func (s *Store) Search(ctx context.Context, prefix string) ([]zmap.Entry, error) {
	if prefix != "" && !zmap.ValidKey(prefix) {
		return []zmap.Entry{}, nil
	}
	var out []zmap.Entry
	if d, ok := s.dirs[prefix]; ok {
		for name, isDir := range d {
			e := zmap.Entry{Name: name, Dir: isDir}
			if !isDir {
				if n, ok := s.nodes[strings.TrimSuffix(strings.TrimSuffix(prefix+"/"+name, "zarr.json"), "/")]; ok && name == "zarr.json" {
					e.Size = int64(len(n.UserData))
					e.ModTime = s.snap.WrittenAt
				}
			}
			out = append(out, e)
		}
	}
	// Chunk keys under an array.
	for p := prefix; ; {
		if n, ok := s.nodes[p]; ok && n.Array {
			if len(n.Manifests) > 0 {
				got, err := s.chunkEntries(ctx, n, prefix)
				if err != nil {
					return nil, err
				}
				out = append(out, got...)
			}
			break
		} else if ok {
			break
		}
		if p == "" {
			break
		}
		p, _ = split(p)
	}
	slices.SortFunc(out, func(a, b zmap.Entry) int { return strings.Compare(a.Name, b.Name) })
	out = slices.CompactFunc(out, func(a, b zmap.Entry) bool { return a.Name == b.Name })
	if out == nil {
		out = []zmap.Entry{}
	}
	return out, nil
}

// chunkEntries lists the chunk keys of array n that are children of
// prefix.
func (s *Store) chunkEntries(ctx context.Context, n *node, prefix string) ([]zmap.Entry, error) {
	keys, err := get(ctx, &s.mu, s.chunks, n.key, func() ([]string, error) {
		var keys []string
		for _, mr := range n.Manifests {
			man, err := s.r.manifest(ctx, mr.ID)
			if err != nil {
				return nil, err
			}
			if err := man.Each(n.ID, func(idx []uint32) {
				if mr.covers(idx) {
					keys = append(keys, n.chunkKey(idx))
				}
			}); err != nil {
				return nil, fmt.Errorf("icechunk: manifests/%s: %w", mr.ID, err)
			}
		}
		slices.Sort(keys)
		return slices.Compact(keys), nil
	})
	if err != nil {
		return nil, err
	}
	rel := strings.TrimPrefix(strings.TrimPrefix(prefix, n.key), "/")
	var out []zmap.Entry
	for _, k := range keys {
		rest := k
		if rel != "" {
			var ok bool
			if rest, ok = strings.CutPrefix(k, rel+"/"); !ok {
				continue
			}
		}
		name, deeper, isDir := strings.Cut(rest, "/")
		_ = deeper
		e := zmap.Entry{Name: name, Dir: isDir}
		if !isDir {
			if sz, err := s.Size(ctx, zmap.Join(prefix, name)); err == nil {
				e.Size, e.ModTime = sz, s.snap.WrittenAt
			} else {
				return nil, err
			}
		}
		if len(out) > 0 && out[len(out)-1].Name == name {
			continue
		}
		out = append(out, e)
	}
	return out, nil
}

// Close releases nothing: the repository and its store are the caller's.
func (s *Store) Close() error { return nil }

// Remote says whether the repository's storage is remote (for readers
// that size their read-ahead by it).
func (s *Store) Remote() bool {
	r, ok := zmap.As[interface{ Remote() bool }](s.r.st)
	return ok && r.Remote()
}

// Parallelism is the repository storage's.
func (s *Store) Parallelism() int {
	if p, ok := zmap.As[interface{ Parallelism() int }](s.r.st); ok {
		return p.Parallelism()
	}
	return 0
}

// Timeout is the repository storage's.
func (s *Store) Timeout() time.Duration {
	if t, ok := zmap.As[interface{ Timeout() time.Duration }](s.r.st); ok {
		return t.Timeout()
	}
	return 0
}

// RequestKinds counts the requests made of the repository's storage
// (virtual chunks' are their own stores').
func (s *Store) RequestKinds() (get, rangedGET, head, list int64) { return s.r.RequestKinds() }
