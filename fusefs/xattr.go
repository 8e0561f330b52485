package fusefs

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"sync"
	"syscall"

	"github.com/nczarrfs/nczarrfs/nczarr"
)

// The attributes of a group or array are also extended attributes, named
// "user." + the attribute's name, of its directory and, for an array, of
// its data and data.npy files: `getfattr -d temperature/data` shows
// user.units="K". A string value (netCDF char, or a string attribute with
// one value) is the string's bytes; any other value is its JSON, compact
// ([0,100], 273.15, ["a","b"]). Values of more than 64 KiB and names of
// more than 255 bytes, which Linux refuses, are left out.

// xattrPrefix is the namespace of the attributes.
const xattrPrefix = "user."

// Linux limits on an extended attribute (XATTR_SIZE_MAX, XATTR_NAME_MAX).
const (
	maxXattrValue = 64 << 10
	maxXattrName  = 255
)

// xattr is one extended attribute.
type xattr struct {
	name  string // with the prefix
	value []byte
}

// xattrCache keeps the extended attributes of each group and array, read
// once: a getfattr asks for the list and then for every value.
type xattrCache struct {
	mu     sync.Mutex
	byPath map[string][]xattr // GUARDED_BY(mu)
}

// xattrs returns the extended attributes of the group or array at path.
func (t *tree) xattrs(ctx context.Context, path string) ([]xattr, error) {
	ctx, cancel := t.bound(ctx)
	defer cancel()
	t.xattr.mu.Lock()
	xs, ok := t.xattr.byPath[path]
	t.xattr.mu.Unlock()
	if ok {
		return xs, nil
	}
	attrs, err := t.ds.Attrs(ctx, path)
	if err != nil {
		return nil, err
	}
	xs = []xattr{}
	for _, a := range attrs {
		x := xattr{name: xattrPrefix + a.Name, value: xattrValue(a)}
		if len(x.name) <= maxXattrName && len(x.value) <= maxXattrValue {
			xs = append(xs, x)
		}
	}
	t.xattr.mu.Lock()
	t.xattr.byPath[path] = xs
	t.xattr.mu.Unlock()
	return xs, nil
}

// xattrValue is an attribute's value as an extended attribute.
func xattrValue(a nczarr.Attr) []byte {
	var s string
	if json.Unmarshal(a.Value, &s) == nil && (a.Type == "char" || a.Type == "string") {
		return []byte(s)
	}
	var list []string
	if a.Type == "string" && json.Unmarshal(a.Value, &list) == nil && len(list) == 1 {
		return []byte(list[0])
	}
	var b bytes.Buffer
	if err := json.Compact(&b, a.Value); err != nil {
		return a.Value
	}
	return b.Bytes()
}

// attrNode serves the extended attributes of the group or array at path.
// Embedded in the nodes that have them.
type attrNode struct {
	xt    *tree
	xpath string
	has   bool // false for directories that are no group or array
}

func (n attrNode) Getxattr(ctx context.Context, name string, dest []byte) (uint32, syscall.Errno) {
	n.xt.stats.Kernel.Xattrs.Add(1)
	if !n.has || !strings.HasPrefix(name, xattrPrefix) {
		return 0, syscall.ENODATA
	}
	xs, err := n.xt.xattrs(ctx, n.xpath)
	if err != nil {
		return 0, n.xt.rep.errno("getxattr", n.xpath, err)
	}
	for _, x := range xs {
		if x.name == name {
			if len(dest) < len(x.value) {
				return uint32(len(x.value)), syscall.ERANGE
			}
			return uint32(copy(dest, x.value)), 0
		}
	}
	return 0, syscall.ENODATA
}

func (n attrNode) Listxattr(ctx context.Context, dest []byte) (uint32, syscall.Errno) {
	n.xt.stats.Kernel.Xattrs.Add(1)
	if !n.has {
		return 0, 0
	}
	xs, err := n.xt.xattrs(ctx, n.xpath)
	if err != nil {
		return 0, n.xt.rep.errno("listxattr", n.xpath, err)
	}
	var list []byte
	for _, x := range xs {
		list = append(append(list, x.name...), 0)
	}
	if len(dest) < len(list) {
		return uint32(len(list)), syscall.ERANGE
	}
	return uint32(copy(dest, list)), 0
}
