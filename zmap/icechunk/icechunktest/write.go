// Package icechunktest writes Icechunk repositories (spec 2) for tests:
// many snapshots, packed chunk files, split manifests, inline and virtual
// chunks, and the means to damage them. It writes what the tests need, not
// all of the format (no transaction logs, no ops log beyond one entry).
package icechunktest

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/nczarrfs/nczarrfs/zmap/icechunk"
)

// Chunk is one chunk reference of an array: Data (stored in a chunk file
// shared by the commit's native chunks, or inline), or a virtual
// reference (Location, Offset, Length, ETag, LastModified).
type Chunk struct {
	Index        []uint32
	Data         []byte
	Inline       bool
	Location     string
	Offset       uint64
	Length       uint64
	ETag         string
	LastModified uint32
}

// Node is a group or an array of a snapshot.
type Node struct {
	Path     string // "/", "/a/b"
	ZarrJSON []byte
	Array    bool
	Chunks   []Chunk
	// Split, when more than 0, puts each run of Split chunks (in index
	// order) in a manifest of its own, extents set to cover them.
	Split int
}

// Commit is one snapshot: its nodes, message and parent (an index into
// the commits, -1 for none).
type Commit struct {
	Message string
	Parent  int
	Nodes   []Node
	Time    time.Time
}

// Repo is what Write writes.
type Repo struct {
	Commits  []Commit
	Branches map[string]int // name -> commit
	Tags     map[string]int
	Deleted  []string // deleted tags
}

// Written says where Write put things.
type Written struct {
	Snapshots []icechunk.ID // by commit
	Manifests [][]icechunk.ID
	Chunks    []icechunk.ID // the packed chunk file of each commit (zero when none)
}

// ID returns the n-th id of a test repository.
func ID(n int) icechunk.ID {
	var id icechunk.ID
	binary.BigEndian.PutUint64(id[4:], uint64(n)+1)
	id[0] = 0x42
	return id
}

// Wrap adds the 39-byte header to a FlatBuffers payload and compresses it
// with zstd.
func Wrap(typ byte, payload []byte) []byte {
	h := make([]byte, 0, 39+len(payload))
	h = append(h, "ICE🧊CHUNK"...)
	h = append(h, fmt.Sprintf("%-24s", "icechunktest")...)
	h = append(h, 2, typ, 1)
	enc, _ := zstd.NewWriter(nil)
	defer enc.Close()
	return enc.EncodeAll(payload, h)
}

// Write writes r as a spec 2 repository in dir.
func Write(dir string, r Repo) (Written, error) {
	var w Written
	for _, sub := range []string{"snapshots", "manifests", "chunks"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			return w, err
		}
	}
	next := 0
	newID := func() icechunk.ID { next++; return ID(next) }
	for ci, c := range r.Commits {
		snapID := newID()
		w.Snapshots = append(w.Snapshots, snapID)
		var packed bytes.Buffer
		chunkFile := newID()
		var mans []icechunk.ID
		var nodes Vec
		nodeID := 0
		for _, n := range c.Nodes {
			nodeID++
			nid := make([]byte, 8)
			binary.BigEndian.PutUint64(nid, uint64(nodeID))
			var data Value = Tab{}
			typ := U8(2)
			if n.Array {
				typ = 1
				refs := slices.Clone(n.Chunks)
				sort.Slice(refs, func(i, j int) bool { return slices.Compare(refs[i].Index, refs[j].Index) < 0 })
				split := n.Split
				if split <= 0 {
					split = max(len(refs), 1)
				}
				var mrefs Vec
				for lo := 0; lo < len(refs); lo += split {
					part := refs[lo:min(lo+split, len(refs))]
					mid := newID()
					mans = append(mans, mid)
					var crefs Vec
					ext := make([][2]uint32, len(part[0].Index))
					for d := range ext {
						ext[d] = [2]uint32{^uint32(0), 0}
					}
					for _, ch := range part {
						for d, i := range ch.Index {
							ext[d][0], ext[d][1] = min(ext[d][0], i), max(ext[d][1], i+1)
						}
						idx := Vec{}
						for _, i := range ch.Index {
							idx = append(idx, U32(i))
						}
						ref := make(Tab, 8)
						ref[0] = idx
						switch {
						case ch.Location != "":
							ref[2], ref[3], ref[5] = U64(ch.Offset), U64(ch.Length), Str(ch.Location)
							if ch.ETag != "" {
								ref[6] = Str(ch.ETag)
							}
							if ch.LastModified != 0 {
								ref[7] = U32(ch.LastModified)
							}
						case ch.Inline:
							ref[1] = Bytes(ch.Data)
						default:
							ref[2], ref[3], ref[4] = U64(packed.Len()), U64(len(ch.Data)), Struct(chunkFile[:])
							packed.Write(ch.Data)
						}
						crefs = append(crefs, ref)
					}
					man := Finish(Tab{Struct(mid[:]), Vec{Tab{Struct(nid), crefs}}})
					if err := os.WriteFile(filepath.Join(dir, "manifests", mid.String()), Wrap(2, man), 0o644); err != nil {
						return w, err
					}
					extents := make([]byte, 0, 8*len(ext))
					for _, e := range ext {
						extents = binary.LittleEndian.AppendUint32(extents, e[0])
						extents = binary.LittleEndian.AppendUint32(extents, e[1])
					}
					var ev Vec
					for d := range ext {
						ev = append(ev, Struct(extents[8*d:8*d+8]))
					}
					mrefs = append(mrefs, Tab{Struct(mid[:]), ev})
				}
				data = Tab{Vec{}, nil, mrefs}
			}
			nodes = append(nodes, Tab{Struct(nid), Str(n.Path), Bytes(n.ZarrJSON), typ, data})
		}
		w.Manifests = append(w.Manifests, mans)
		if packed.Len() > 0 {
			w.Chunks = append(w.Chunks, chunkFile)
			if err := os.WriteFile(filepath.Join(dir, "chunks", chunkFile.String()), packed.Bytes(), 0o644); err != nil {
				return w, err
			}
		} else {
			w.Chunks = append(w.Chunks, icechunk.ID{})
		}
		snap := Finish(Tab{Struct(snapID[:]), nil, nodes, U64(c.Time.UnixMicro()), Str(c.Message), Vec{}, Vec{}, Vec{}})
		if err := os.WriteFile(filepath.Join(dir, "snapshots", snapID.String()), Wrap(1, snap), 0o644); err != nil {
			return w, err
		}
		_ = ci
	}
	// The repo file: snapshots sorted by id, parents as indexes there.
	order := make([]int, len(r.Commits))
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(a, b int) bool {
		return bytes.Compare(w.Snapshots[order[a]][:], w.Snapshots[order[b]][:]) < 0
	})
	pos := make([]int, len(order))
	for p, ci := range order {
		pos[ci] = p
	}
	var infos Vec
	for _, ci := range order {
		c := r.Commits[ci]
		parent := I32(-1)
		if c.Parent >= 0 {
			parent = I32(pos[c.Parent])
		}
		id := w.Snapshots[ci]
		infos = append(infos, Tab{Struct(id[:]), parent, U64(c.Time.UnixMicro()), Str(c.Message), Vec{}})
	}
	refs := func(m map[string]int) Vec {
		names := make([]string, 0, len(m))
		for n := range m {
			names = append(names, n)
		}
		slices.Sort(names)
		var v Vec
		for _, n := range names {
			v = append(v, Tab{Str(n), U32(pos[m[n]])})
		}
		return v
	}
	var deleted Vec
	for _, d := range slices.Sorted(slices.Values(r.Deleted)) {
		deleted = append(deleted, Str(d))
	}
	repo := Finish(Tab{U8(2), refs(r.Tags), refs(r.Branches), deleted, infos, Tab{U8(0), U64(0)}, nil, Vec{}})
	return w, os.WriteFile(filepath.Join(dir, "repo"), Wrap(6, repo), 0o644)
}

// ChunkKey is the key of a chunk of an array with the default chunk key
// encoding: c/0/1.
func ChunkKey(idx []uint32) string {
	parts := []string{"c"}
	for _, i := range idx {
		parts = append(parts, strconv.FormatUint(uint64(i), 10))
	}
	return strings.Join(parts, "/")
}
