package listcache

import (
	"container/list"
	"encoding/hex"
	"math"
	"sort"
	"time"

	"github.com/nczarrfs/nczarrfs/zmap"
)

// A kept listing is packed: the names of its entries end to end in one
// string, and each entry in 40 bytes (an S3 ETag, 32 hex digits, as its
// 16 bytes), about 50 bytes for a chunk of an array where a []zmap.Entry
// takes 120. A listing of 1,000,000 chunks then takes about 50 MB, and
// the listings kept stay within Options.MaxBytes, the least recently used
// folders forgotten first (Store.keep).

// folder is a kept listing.
type folder struct {
	at    time.Time
	names string   // the entries' names, end to end, in order
	ents  []packed // sorted by name
	// etags holds, by index, the ETags that are not 32 hex digits (an
	// object uploaded in parts: "<hex>-<parts>").
	etags map[int]string

	prefix string        // of the folder, its key in Store.dirs
	el     *list.Element // in Store.lru; nil when not in it
}

// packed is a zmap.Entry without its name.
type packed struct {
	end   uint32 // the end of the name in folder.names; it starts at the previous one's end
	dir   bool
	md5   bool  // etag holds the ETag, 32 hex digits
	size  int64 // bytes
	mtime int64 // Unix nanoseconds; noTime when the store records none
	etag  [16]byte
}

// noTime stands for a zero ModTime.
const noTime = math.MinInt64

// packedSize is the memory an entry takes, its name aside.
const packedSize = 40

// folderOverhead is what a folder takes besides its entries: the struct,
// its entry in Store.dirs and in the LRU list.
const folderOverhead = 256

// pack returns the folder of the listing entries (sorted by name).
func pack(prefix string, at time.Time, entries []zmap.Entry) *folder {
	f := &folder{at: at, prefix: prefix, ents: make([]packed, len(entries))}
	n := 0
	for _, e := range entries {
		n += len(e.Name)
	}
	names := make([]byte, 0, n)
	for i, e := range entries {
		names = append(names, e.Name...)
		p := packed{end: uint32(len(names)), dir: e.Dir, size: e.Size, mtime: noTime}
		if !e.ModTime.IsZero() {
			p.mtime = e.ModTime.UnixNano()
		}
		if len(e.ETag) == 2*len(p.etag) {
			if _, err := hex.Decode(p.etag[:], []byte(e.ETag)); err == nil && hex.EncodeToString(p.etag[:]) == e.ETag {
				p.md5 = true
			}
		}
		if !p.md5 && e.ETag != "" {
			if f.etags == nil {
				f.etags = map[int]string{}
			}
			f.etags[i] = e.ETag
		}
		f.ents[i] = p
	}
	f.names = string(names)
	return f
}

// bytes is the memory f takes, about.
func (f *folder) bytes() int64 {
	n := int64(folderOverhead + len(f.prefix) + len(f.names) + packedSize*len(f.ents))
	for _, e := range f.etags {
		n += int64(len(e)) + 48
	}
	return n
}

// len is the number of entries.
func (f *folder) len() int { return len(f.ents) }

// name returns the name of entry i.
func (f *folder) name(i int) string {
	start := uint32(0)
	if i > 0 {
		start = f.ents[i-1].end
	}
	return f.names[start:f.ents[i].end]
}

// entry returns entry i.
func (f *folder) entry(i int) zmap.Entry {
	p := f.ents[i]
	e := zmap.Entry{Name: f.name(i), Dir: p.dir, Size: p.size}
	if p.mtime != noTime {
		e.ModTime = time.Unix(0, p.mtime).UTC()
	}
	switch {
	case p.md5:
		e.ETag = hex.EncodeToString(p.etag[:])
	case f.etags != nil:
		e.ETag = f.etags[i]
	}
	return e
}

// entries returns every entry, in a new slice.
func (f *folder) entries() []zmap.Entry {
	out := make([]zmap.Entry, f.len())
	for i := range out {
		out[i] = f.entry(i)
	}
	return out
}

// find returns the entry called name.
func (f *folder) find(name string) (zmap.Entry, bool) {
	i := sort.Search(f.len(), func(i int) bool { return f.name(i) >= name })
	if i == f.len() || f.name(i) != name {
		return zmap.Entry{}, false
	}
	return f.entry(i), true
}
