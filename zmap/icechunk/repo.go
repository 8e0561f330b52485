package icechunk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nczarrfs/nczarrfs/zmap"
)

// Options configure Open.
type Options struct {
	// Opener opens the stores of virtual chunks; nil reads none (every
	// virtual chunk fails).
	Opener zmap.Opener
	// Virtual lists the URL prefixes from which virtual chunks may be
	// read (--virtual-chunks): a virtual chunk whose location starts with
	// none of them fails, with one log line naming the prefix to allow.
	Virtual []string
	// Logger receives the log lines; nil is slog.Default().
	Logger *slog.Logger
	// CacheBytes bounds the decoded manifests kept in memory (0: 256 MiB).
	CacheBytes int64
}

// Repository is an Icechunk repository, read through the store of its
// folder. Its methods are safe for concurrent use. It reads the
// repository as it was when opened: refs and the repo file are read once.
type Repository struct {
	st   zmap.Store
	opts Options
	log  *slog.Logger
	info *RepoInfo // spec 2 (and migrated) repositories; nil for spec 1

	mu       sync.Mutex
	snaps    map[ID]*once[*Snapshot]
	mans     map[ID]*once[*Manifest]
	manOrder []ID // decoded manifests, oldest first, for eviction
	manBytes int64
	v1refs   map[string]*once[ID] // spec 1: "branch.NAME" / "tag.NAME"
	checks   map[string]*once[struct{}]
	warned   map[string]bool
}

// once is a value computed once, shared by its concurrent askers.
type once[T any] struct {
	done chan struct{}
	v    T
	err  error
	size int64
}

// retry calls fn again (twice at most) when it failed for the
// cancellation of another caller's context, with which it shared the
// work, and not of ctx. A store's own timeouts look the same, hence the
// bound.
func retry[T any](ctx context.Context, fn func() (T, error)) (T, error) {
	for i := 0; ; i++ {
		v, err := fn()
		if err == nil || i == 2 || ctx.Err() != nil || !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
			return v, err
		}
	}
}

// get returns the value of key in m, computing it with fn once.
func get[T any](ctx context.Context, mu *sync.Mutex, m map[string]*once[T], key string, fn func() (T, error)) (T, error) {
	return retry(ctx, func() (T, error) { return getOnce(ctx, mu, m, key, fn) })
}

func getOnce[T any](ctx context.Context, mu *sync.Mutex, m map[string]*once[T], key string, fn func() (T, error)) (T, error) {
	mu.Lock()
	o, ok := m[key]
	if !ok {
		o = &once[T]{done: make(chan struct{})}
		m[key] = o
		mu.Unlock()
		o.v, o.err = fn()
		if o.err != nil && ctx.Err() != nil {
			// A cancelled read is not remembered.
			mu.Lock()
			delete(m, key)
			mu.Unlock()
		}
		close(o.done)
	} else {
		mu.Unlock()
	}
	select {
	case <-o.done:
		return o.v, o.err
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
}

// Open opens the repository whose objects st holds. A spec 2 repository
// is read from its `repo` file (one request); a spec 1 repository (no
// `repo` file) costs nothing more until a ref is resolved.
func Open(ctx context.Context, st zmap.Store, opts Options) (*Repository, error) {
	r := &Repository{
		st: &counted{Store: st}, opts: opts, log: opts.Logger,
		snaps:  map[ID]*once[*Snapshot]{},
		mans:   map[ID]*once[*Manifest]{},
		v1refs: map[string]*once[ID]{},
		checks: map[string]*once[struct{}]{},
		warned: map[string]bool{},
	}
	if r.log == nil {
		r.log = slog.Default()
	}
	if r.opts.CacheBytes <= 0 {
		r.opts.CacheBytes = 256 << 20
	}
	data, err := r.getFile(ctx, "repo")
	switch {
	case err == nil:
		if r.info, err = DecodeRepoInfo(data); err != nil {
			return nil, fmt.Errorf("icechunk: repo: %w", err)
		}
	case errors.Is(err, zmap.ErrNotFound):
	default:
		return nil, fmt.Errorf("icechunk: repo: %w", err)
	}
	return r, nil
}

// Spec returns the repository's spec version: 1, or 2 for spec 2 and 2.1.
func (r *Repository) Spec() int {
	if r.info == nil {
		return 1
	}
	return 2
}

// ErrNoRef is wrapped by the error for a branch or tag that does not
// exist (or a deleted tag).
var ErrNoRef = errors.New("ref not found")

// Branch returns the snapshot a branch points at.
func (r *Repository) Branch(ctx context.Context, name string) (ID, error) {
	return r.ref(ctx, "branch", name)
}

// Tag returns the snapshot a tag points at; a deleted tag is not found.
func (r *Repository) Tag(ctx context.Context, name string) (ID, error) {
	return r.ref(ctx, "tag", name)
}

func (r *Repository) ref(ctx context.Context, kind, name string) (ID, error) {
	if !validRefName(name) {
		return ID{}, fmt.Errorf("icechunk: %s %q: %w", kind, name, ErrNoRef)
	}
	if r.info != nil {
		refs := r.info.Branches
		if kind == "tag" {
			refs = r.info.Tags
			if slices.Contains(r.info.DeletedTags, name) {
				return ID{}, fmt.Errorf("icechunk: tag %q: deleted: %w", name, ErrNoRef)
			}
		}
		for _, ref := range refs {
			if ref.Name == name {
				return ref.Snapshot, nil
			}
		}
		return ID{}, fmt.Errorf("icechunk: %s %q: %w", kind, name, ErrNoRef)
	}
	key := "refs/" + kind + "." + name + "/ref.json"
	return get(ctx, &r.mu, r.v1refs, kind+"."+name, func() (ID, error) {
		if kind == "tag" {
			if _, err := r.st.Stat(ctx, key+".deleted"); err == nil {
				return ID{}, fmt.Errorf("icechunk: tag %q: deleted: %w", name, ErrNoRef)
			} else if !errors.Is(err, zmap.ErrNotFound) {
				return ID{}, fmt.Errorf("icechunk: %s: %w", key+".deleted", err)
			}
		}
		data, err := r.getFile(ctx, key)
		if errors.Is(err, zmap.ErrNotFound) {
			return ID{}, fmt.Errorf("icechunk: %s %q: %w", kind, name, ErrNoRef)
		}
		if err != nil {
			return ID{}, fmt.Errorf("icechunk: %s: %w", key, err)
		}
		id, err := decodeRefJSON(data)
		if err != nil {
			return ID{}, fmt.Errorf("icechunk: %s: %w", key, err)
		}
		return id, nil
	})
}

// decodeRefJSON decodes a spec 1 ref file, {"snapshot": ID}.
func decodeRefJSON(data []byte) (ID, error) {
	var v struct {
		Snapshot string `json:"snapshot"`
	}
	if len(data) > 1<<16 {
		return ID{}, fmt.Errorf("%w: ref file of %d bytes", errCorrupt, len(data))
	}
	if err := json.Unmarshal(data, &v); err != nil {
		return ID{}, fmt.Errorf("%w: %w", errCorrupt, err)
	}
	id, err := ParseID(v.Snapshot)
	if err != nil {
		return ID{}, fmt.Errorf("%w: %w", errCorrupt, err)
	}
	return id, nil
}

// Branches lists the branches' names, sorted.
func (r *Repository) Branches(ctx context.Context) ([]string, error) {
	return r.refNames(ctx, "branch")
}

// Tags lists the tags' names, sorted, deleted tags left out.
func (r *Repository) Tags(ctx context.Context) ([]string, error) {
	return r.refNames(ctx, "tag")
}

func (r *Repository) refNames(ctx context.Context, kind string) ([]string, error) {
	var names []string
	if r.info != nil {
		refs := r.info.Branches
		if kind == "tag" {
			refs = r.info.Tags
		}
		for _, ref := range refs {
			if kind == "tag" && slices.Contains(r.info.DeletedTags, ref.Name) {
				continue
			}
			names = append(names, ref.Name)
		}
		slices.Sort(names)
		return names, nil
	}
	ents, err := r.st.Search(ctx, "refs")
	if err != nil {
		return nil, fmt.Errorf("icechunk: refs: %w", err)
	}
	for _, e := range ents {
		name, ok := strings.CutPrefix(e.Name, kind+".")
		if !ok || !e.Dir || !validRefName(name) {
			continue
		}
		if kind == "tag" {
			if _, err := r.Tag(ctx, name); errors.Is(err, ErrNoRef) {
				continue
			}
		}
		names = append(names, name)
	}
	if kind == "branch" && len(names) == 0 {
		// A store that cannot be listed (a web server) still has main.
		if _, err := r.Branch(ctx, "main"); err == nil {
			names = append(names, "main")
		}
	}
	return names, nil
}

// Snapshot reads (once) the snapshot with the given id.
func (r *Repository) Snapshot(ctx context.Context, id ID) (*Snapshot, error) {
	return retry(ctx, func() (*Snapshot, error) { return r.snapshotOnce(ctx, id) })
}

func (r *Repository) snapshotOnce(ctx context.Context, id ID) (*Snapshot, error) {
	r.mu.Lock()
	o, ok := r.snaps[id]
	if !ok {
		o = &once[*Snapshot]{done: make(chan struct{})}
		r.snaps[id] = o
	}
	r.mu.Unlock()
	if !ok {
		key := "snapshots/" + id.String()
		data, err := r.getFile(ctx, key)
		if err == nil {
			o.v, err = DecodeSnapshot(data)
			if err == nil && o.v.ID != id {
				err = fmt.Errorf("%w: holds snapshot %s", errCorrupt, o.v.ID)
			}
		}
		if err != nil {
			o.err = objectErr(key, err)
			if ctx.Err() != nil || !errors.Is(err, errCorrupt) {
				r.mu.Lock()
				delete(r.snaps, id)
				r.mu.Unlock()
			}
		}
		close(o.done)
	}
	select {
	case <-o.done:
		return o.v, o.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// manifest reads (once, while it stays in the cache) the manifest with
// the given id.
func (r *Repository) manifest(ctx context.Context, id ID) (*Manifest, error) {
	return retry(ctx, func() (*Manifest, error) { return r.manifestOnce(ctx, id) })
}

func (r *Repository) manifestOnce(ctx context.Context, id ID) (*Manifest, error) {
	r.mu.Lock()
	o, ok := r.mans[id]
	if !ok {
		o = &once[*Manifest]{done: make(chan struct{})}
		r.mans[id] = o
	}
	r.mu.Unlock()
	if !ok {
		key := "manifests/" + id.String()
		data, err := r.getFile(ctx, key)
		if err == nil {
			o.v, err = DecodeManifest(data)
			if err == nil && o.v.ID != id {
				err = fmt.Errorf("%w: holds manifest %s", errCorrupt, o.v.ID)
			}
		}
		r.mu.Lock()
		if err != nil {
			o.err = objectErr(key, err)
			delete(r.mans, id) // read again by the next asker
		} else {
			o.size = int64(len(o.v.body))
			r.manBytes += o.size
			r.manOrder = append(r.manOrder, id)
			for r.manBytes > r.opts.CacheBytes && len(r.manOrder) > 1 {
				old := r.manOrder[0]
				r.manOrder = r.manOrder[1:]
				if oo, ok := r.mans[old]; ok {
					r.manBytes -= oo.size
					delete(r.mans, old)
				}
			}
		}
		r.mu.Unlock()
		close(o.done)
	}
	select {
	case <-o.done:
		return o.v, o.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Info returns what the repository says of snapshot id: from the repo
// file (spec 2), or from the snapshot file itself (spec 1).
func (r *Repository) Info(ctx context.Context, id ID) (SnapshotInfo, error) {
	if r.info != nil {
		i, ok := slices.BinarySearchFunc(r.info.Snapshots, id, func(s SnapshotInfo, id ID) int {
			return strings.Compare(string(s.ID[:]), string(id[:]))
		})
		if ok {
			return r.info.Snapshots[i], nil
		}
		for _, s := range r.info.Snapshots { // not sorted as the spec says
			if s.ID == id {
				return s, nil
			}
		}
		return SnapshotInfo{}, fmt.Errorf("icechunk: snapshot %s: not in the repository: %w", id, zmap.ErrNotFound)
	}
	s, err := r.Snapshot(ctx, id)
	if err != nil {
		return SnapshotInfo{}, err
	}
	return SnapshotInfo{ID: s.ID, Parent: s.Parent, HasParent: s.HasParent, WrittenAt: s.WrittenAt, Message: s.Message}, nil
}

// Ancestry returns snapshot id and its ancestors, newest first.
func (r *Repository) Ancestry(ctx context.Context, id ID) ([]SnapshotInfo, error) {
	var out []SnapshotInfo
	seen := map[ID]bool{}
	for {
		if seen[id] {
			return out, fmt.Errorf("icechunk: snapshot %s: %w: its ancestry is a loop", id, errCorrupt)
		}
		seen[id] = true
		s, err := r.Info(ctx, id)
		if err != nil {
			return out, err
		}
		out = append(out, s)
		if !s.HasParent {
			return out, nil
		}
		id = s.Parent
	}
}

// Snapshots lists every snapshot of the repository, newest first: those
// the repo file lists (spec 2), or those reachable from the branches and
// tags (spec 1).
func (r *Repository) Snapshots(ctx context.Context) ([]SnapshotInfo, error) {
	var all []SnapshotInfo
	if r.info != nil {
		all = slices.Clone(r.info.Snapshots)
	} else {
		seen := map[ID]bool{}
		for _, kind := range []string{"branch", "tag"} {
			names, err := r.refNames(ctx, kind)
			if err != nil {
				return nil, err
			}
			for _, n := range names {
				id, err := r.ref(ctx, kind, n)
				if err != nil {
					return nil, err
				}
				anc, err := r.Ancestry(ctx, id)
				if err != nil {
					return nil, err
				}
				for _, s := range anc {
					if !seen[s.ID] {
						seen[s.ID] = true
						all = append(all, s)
					}
				}
			}
		}
	}
	slices.SortStableFunc(all, func(a, b SnapshotInfo) int {
		if c := b.WrittenAt.Compare(a.WrittenAt); c != 0 {
			return c
		}
		return strings.Compare(b.ID.String(), a.ID.String())
	})
	return all, nil
}

// SnapshotsJSON is the JSON array of Snapshots: {"id", "parent" (an id
// or null), "written_at" (RFC 3339), "message"} each, newest first.
func (r *Repository) SnapshotsJSON(ctx context.Context) ([]byte, error) {
	all, err := r.Snapshots(ctx)
	if err != nil {
		return nil, err
	}
	type entry struct {
		ID        string  `json:"id"`
		Parent    *string `json:"parent"`
		WrittenAt string  `json:"written_at"`
		Message   string  `json:"message"`
	}
	list := make([]entry, len(all))
	for i, s := range all {
		list[i] = entry{ID: s.ID.String(), WrittenAt: s.WrittenAt.Format(time.RFC3339Nano), Message: s.Message}
		if s.HasParent {
			p := s.Parent.String()
			list[i].Parent = &p
		}
	}
	out, err := json.MarshalIndent(list, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(out, '\n'), nil
}

// Close closes nothing: the store is the caller's.
func (r *Repository) Close() error { return nil }

// objectErr is the error of a repository object that cannot be read. A
// missing object is damage, not absence: it does not wrap ErrNotFound, so
// that no reader takes a chunk behind it for a missing one.
func objectErr(key string, err error) error {
	if errors.Is(err, zmap.ErrNotFound) {
		return fmt.Errorf("icechunk: %s is missing (%v)", key, err)
	}
	return fmt.Errorf("icechunk: %s: %w", key, err)
}

// getFile reads one of the repository's own files (repo, refs, snapshots,
// manifests) under a bound of its own, MaxDecoded: the request that needs
// it may be a chunk's, whose context carries the chunk's far smaller
// bound (zmap.WithMaxSize), which a manifest must not inherit.
func (r *Repository) getFile(ctx context.Context, key string) ([]byte, error) {
	return r.st.Get(zmap.WithMaxSize(ctx, MaxDecoded), key)
}
