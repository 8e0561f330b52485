package icechunk

import (
	"bytes"
	"fmt"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/klauspost/compress/zstd"
)

// Ref is a branch or a tag.
type Ref struct {
	Name     string
	Snapshot ID
}

// SnapshotInfo is what a repository says of one snapshot.
type SnapshotInfo struct {
	ID        ID
	Parent    ID   // meaningful only when HasParent
	HasParent bool // false for the first snapshot (and expired parents' children, spec 1)
	WrittenAt time.Time
	Message   string
}

// RepoInfo is the decoded `repo` file of a spec 2 repository.
type RepoInfo struct {
	Spec        int // the repository's spec version (1 or 2), as the file says
	Tags        []Ref
	Branches    []Ref
	DeletedTags []string
	Snapshots   []SnapshotInfo // sorted by id, as stored
}

// micros converts Icechunk's microseconds since the epoch.
func micros(us uint64) time.Time {
	if us > 1<<62 {
		return time.Time{}
	}
	return time.UnixMicro(int64(us)).UTC()
}

// DecodeRepoInfo decodes a `repo` file.
func DecodeRepoInfo(data []byte) (*RepoInfo, error) {
	_, body, err := unwrap(data, typeRepoInfo)
	if err != nil {
		return nil, err
	}
	ri := &RepoInfo{}
	err = decode(func() {
		t := root(buf(body))
		ri.Spec = int(t.u8(0, 0))
		sv := t.vec(4, 4)
		ri.Snapshots = make([]SnapshotInfo, sv.n)
		parents := make([]int, sv.n)
		for k := range sv.n {
			st := sv.table(k)
			id := st.structBytes(0, 12)
			if id == nil {
				fail("snapshot %d has no id", k)
			}
			si := SnapshotInfo{ID: idOf(id), WrittenAt: micros(st.u64(2, 0)), Message: st.str(3)}
			po := int32(st.u32(1, 0))
			if po >= 0 {
				if int(po) >= sv.n {
					fail("snapshot %s has parent index %d of %d", si.ID, po, sv.n)
				}
				si.HasParent = true
				parents[k] = int(po)
			}
			ri.Snapshots[k] = si
		}
		for k := range ri.Snapshots {
			if ri.Snapshots[k].HasParent {
				ri.Snapshots[k].Parent = ri.Snapshots[parents[k]].ID
			}
		}
		refs := func(i int) []Ref {
			v := t.vec(i, 4)
			out := make([]Ref, v.n)
			for k := range v.n {
				rt := v.table(k)
				idx := int(rt.u32(1, 0))
				if idx >= sv.n {
					fail("ref %q points at snapshot %d of %d", rt.str(0), idx, sv.n)
				}
				out[k] = Ref{Name: rt.str(0), Snapshot: ri.Snapshots[idx].ID}
			}
			return out
		}
		ri.Tags, ri.Branches = refs(1), refs(2)
		dv := t.vec(3, 4)
		for k := range dv.n {
			ri.DeletedTags = append(ri.DeletedTags, dv.str(k))
		}
	})
	if err != nil {
		return nil, err
	}
	for _, r := range append(ri.Tags, ri.Branches...) {
		if !validRefName(r.Name) {
			return nil, fmt.Errorf("%w: invalid ref name %q", errCorrupt, r.Name)
		}
	}
	return ri, nil
}

// validRefName reports whether name can be a folder's name.
func validRefName(name string) bool {
	return name != "" && name != "." && name != ".." && utf8.ValidString(name) &&
		!bytes.ContainsAny([]byte(name), "/\x00")
}

// Node kinds.
const (
	kindArray = 1
	kindGroup = 2
)

// Node is one group or array of a snapshot.
type Node struct {
	ID        [8]byte
	Path      string // "/" or "/a/b"
	UserData  []byte // the node's zarr.json
	Array     bool
	Manifests []ManifestRef // an array's manifests
}

// ManifestRef is a manifest and the region of the array's chunk grid
// (one [From, To) range a dimension) it covers.
type ManifestRef struct {
	ID      ID
	Extents [][2]uint32
}

// covers reports whether the manifest covers chunk index idx.
func (m ManifestRef) covers(idx []uint32) bool {
	if len(idx) != len(m.Extents) {
		return false
	}
	for d, e := range m.Extents {
		if idx[d] < e[0] || idx[d] >= e[1] {
			return false
		}
	}
	return true
}

// Snapshot is a decoded snapshot file.
type Snapshot struct {
	Spec      int // the file's spec version
	ID        ID
	Parent    ID // spec 1 files only
	HasParent bool
	WrittenAt time.Time
	Message   string
	Nodes     []Node // sorted by path, as stored
}

// DecodeSnapshot decodes a snapshot file.
func DecodeSnapshot(data []byte) (*Snapshot, error) {
	h, body, err := unwrap(data, typeSnapshot)
	if err != nil {
		return nil, err
	}
	s := &Snapshot{Spec: h.Spec}
	err = decode(func() {
		t := root(buf(body))
		id := t.structBytes(0, 12)
		if id == nil {
			fail("snapshot has no id")
		}
		s.ID = idOf(id)
		if p := t.structBytes(1, 12); p != nil {
			s.Parent, s.HasParent = idOf(p), true
		}
		s.WrittenAt = micros(t.u64(3, 0))
		s.Message = t.str(4)
		nv := t.vec(2, 4)
		s.Nodes = make([]Node, nv.n)
		for k := range nv.n {
			nt := nv.table(k)
			n := &s.Nodes[k]
			nid := nt.structBytes(0, 8)
			if nid == nil {
				fail("node %d has no id", k)
			}
			copy(n.ID[:], nid)
			n.Path = nt.str(1)
			n.UserData = nt.bytes(2)
			switch nt.u8(3, 0) {
			case kindGroup:
			case kindArray:
				n.Array = true
				at, ok := nt.sub(4)
				if !ok {
					fail("array %q has no data", n.Path)
				}
				mv := at.vec(2, 4)
				n.Manifests = make([]ManifestRef, mv.n)
				for j := range mv.n {
					mt := mv.table(j)
					mid := mt.structBytes(0, 12)
					if mid == nil {
						fail("array %q: manifest %d has no id", n.Path, j)
					}
					ev := mt.vec(1, 8)
					ext := make([][2]uint32, ev.n)
					for d := range ev.n {
						ext[d] = [2]uint32{t.b.u32(ev.at(d)), t.b.u32(ev.at(d) + 4)}
					}
					n.Manifests[j] = ManifestRef{ID: idOf(mid), Extents: ext}
				}
			default:
				fail("node %q has an unknown kind %d", n.Path, nt.u8(3, 0))
			}
		}
	})
	if err != nil {
		return nil, err
	}
	for _, n := range s.Nodes {
		if !validPath(n.Path) {
			return nil, fmt.Errorf("%w: invalid node path %q", errCorrupt, n.Path)
		}
	}
	return s, nil
}

// validPath reports whether p is a node path as the spec defines it:
// absolute, canonical, without a trailing slash but for the root.
func validPath(p string) bool {
	if p == "/" {
		return true
	}
	if len(p) < 2 || p[0] != '/' || !utf8.ValidString(p) || bytes.IndexByte([]byte(p), 0) >= 0 {
		return false
	}
	for _, seg := range bytes.Split([]byte(p[1:]), []byte("/")) {
		if len(seg) == 0 || string(seg) == "." || string(seg) == ".." {
			return false
		}
	}
	return true
}

// Chunk reference kinds.
const (
	refInline = iota + 1
	refNative
	refVirtual
)

// ChunkRef is one chunk's reference.
type ChunkRef struct {
	Kind     int
	Inline   []byte // inline
	Offset   uint64 // native and virtual
	Length   uint64
	ChunkID  ID     // native
	Location string // virtual
	ETag     string // virtual: the object must still have this ETag
	// LastModified (virtual): the object must not have changed after it
	// (zero when the reference has no such checksum).
	LastModified time.Time
}

// Manifest is a decoded manifest file; references are decoded when looked
// up.
type Manifest struct {
	ID     ID
	body   buf
	arrays map[[8]byte]vector // each array's vector of ChunkRef tables
	dict   []byte
	comp   uint8

	dictOnce sync.Once
	dictDec  *zstd.Decoder
	dictErr  error
}

// maxLocation bounds a decompressed virtual chunk location.
const maxLocation = 64 << 10

// location decompresses a compressed_location.
func (m *Manifest) location(b []byte) (string, error) {
	if m.comp == 0 {
		return string(b), nil
	}
	if m.comp != 1 {
		return "", fmt.Errorf("unknown location compression %d", m.comp)
	}
	m.dictOnce.Do(func() {
		opts := []zstd.DOption{zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(maxLocation)}
		if len(m.dict) > 0 {
			opts = append(opts, zstd.WithDecoderDicts(m.dict))
		}
		m.dictDec, m.dictErr = zstd.NewReader(nil, opts...)
	})
	if m.dictErr != nil {
		return "", m.dictErr
	}
	out, err := m.dictDec.DecodeAll(b, nil)
	if err != nil {
		return "", err
	}
	return string(out), nil
}

// DecodeManifest decodes a manifest file.
func DecodeManifest(data []byte) (*Manifest, error) {
	_, body, err := unwrap(data, typeManifest)
	if err != nil {
		return nil, err
	}
	m := &Manifest{body: buf(body), arrays: map[[8]byte]vector{}}
	err = decode(func() {
		t := root(m.body)
		id := t.structBytes(0, 12)
		if id == nil {
			fail("manifest has no id")
		}
		m.ID = idOf(id)
		av := t.vec(1, 4)
		for k := range av.n {
			at := av.table(k)
			nid := at.structBytes(0, 8)
			if nid == nil {
				fail("array manifest %d has no node id", k)
			}
			m.arrays[[8]byte(nid)] = at.vec(1, 4)
		}
		m.dict = t.bytes(2)
		m.comp = t.u8(3, 1)
	})
	if err != nil {
		return nil, err
	}
	return m, nil
}

// Lookup finds the reference of chunk idx of the array node; ok is
// false when the manifest has none.
func (m *Manifest) Lookup(node [8]byte, idx []uint32) (ref ChunkRef, ok bool, err error) {
	v, found := m.arrays[node]
	if !found {
		return ref, false, nil
	}
	err = decode(func() {
		lo, hi := 0, v.n
		for lo < hi {
			mid := int(uint(lo+hi) >> 1)
			c := compareIndex(v.table(mid), idx)
			switch {
			case c == 0:
				ref, ok = m.chunkRef(v.table(mid)), true
				return
			case c < 0:
				lo = mid + 1
			default:
				hi = mid
			}
		}
	})
	if err == nil && ok && ref.Kind == refVirtual && ref.Location == "" {
		err = fmt.Errorf("%w: virtual reference without a location", errCorrupt)
	}
	return ref, ok, err
}

// Each calls fn with the index of every chunk of the node that the
// manifest references, in order.
func (m *Manifest) Each(node [8]byte, fn func(idx []uint32)) error {
	v, found := m.arrays[node]
	if !found {
		return nil
	}
	return decode(func() {
		for k := range v.n {
			iv := v.table(k).vec(0, 4)
			idx := make([]uint32, iv.n)
			for d := range iv.n {
				idx[d] = v.b.u32(iv.at(d))
			}
			fn(idx)
		}
	})
}

// compareIndex compares a ChunkRef's index with idx, lexicographically.
func compareIndex(t table, idx []uint32) int {
	iv := t.vec(0, 4)
	for d := 0; d < iv.n && d < len(idx); d++ {
		a := t.b.u32(iv.at(d))
		if a != idx[d] {
			if a < idx[d] {
				return -1
			}
			return 1
		}
	}
	return iv.n - len(idx)
}

func (m *Manifest) chunkRef(t table) ChunkRef {
	var r ChunkRef
	r.Offset, r.Length = t.u64(2, 0), t.u64(3, 0)
	switch {
	case t.has(1):
		r.Kind, r.Inline = refInline, t.bytes(1)
		if r.Inline == nil {
			r.Inline = []byte{}
		}
	case t.has(4):
		r.Kind, r.ChunkID = refNative, idOf(t.structBytes(4, 12))
	case t.has(5):
		r.Kind, r.Location = refVirtual, t.str(5)
	case t.has(8):
		r.Kind = refVirtual
		loc, err := m.location(t.bytes(8))
		if err != nil {
			fail("compressed location: %v", err)
		}
		r.Location = loc
	default:
		fail("chunk reference of no kind")
	}
	if r.Kind == refVirtual {
		r.ETag = t.str(6)
		if s := t.u32(7, 0); s != 0 {
			r.LastModified = time.Unix(int64(s), 0).UTC()
		}
	}
	return r
}
