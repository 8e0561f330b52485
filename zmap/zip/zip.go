// Package zip is the zmap backend for a dataset stored in a zip archive
// (NCZarr "mode=zip", zarr-python's ZipStore).
//
// The archive's central directory is read once, with archive/zip, when the
// store is opened; the key tree is built from it in memory. Entry data is
// read from the underlying io.ReaderAt on demand: stored (uncompressed)
// entries by byte range, deflated entries by inflating them.
package zip

import (
	stdzip "archive/zip"
	"bufio"
	"bytes"
	"compress/flate"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"os"
	"path"
	"slices"
	"strings"
	"sync"

	"github.com/nczarrfs/nczarrfs/internal/fadvise"
	"github.com/nczarrfs/nczarrfs/internal/vecio"
	"github.com/nczarrfs/nczarrfs/zmap"
)

// ErrNotZip is wrapped by the error Open and New return when the data is
// not a zip archive (no valid end-of-central-directory record, or a
// truncated or malformed central directory).
var ErrNotZip = errors.New("not a zip file")

// rootMarkers are the objects that mark a folder as the root of a Zarr or
// NCZarr dataset.
var rootMarkers = []string{".zgroup", ".zattrs", ".zarray", ".nczarr", "zarr.json"}

// maxDeflateRatio bounds how much deflate can expand its input (the format
// allows at most about 1032:1). An entry claiming more is corrupt; the
// bound also keeps a forged size from making us allocate memory the data
// cannot fill.
const maxDeflateRatio = 1032

// Store is a zmap.Store over a zip archive. It is safe for concurrent use
// as long as the io.ReaderAt it reads is (an *os.File is).
//
// Directory entries, entries whose names are absolute or hold "", "." or
// ".." segments, and entries outside the dataset root are not part of the
// store. When an archive holds the same name twice, the later entry wins.
// When a name is both an object and a prefix of other objects ("a" and
// "a/b"), Search lists it as a Dir, and Get still reads the object.
//
// Get verifies each entry's CRC-32. ReadAt of a stored entry reads just the
// requested range, so it cannot verify the CRC. ReadAt of a deflated entry
// inflates the entry from its start on every call, verifying its CRC, and
// keeps only the requested bytes: memory stays small, but reading a large
// deflated entry piece by piece costs time quadratic in its size. Nothing
// is cached.
type Store struct {
	r       io.ReaderAt
	size    int64
	closer  io.Closer // the file Open opened; nil after New
	root    string
	objects map[string]*object      // key -> entry
	dirs    map[string][]zmap.Entry // prefix -> children, sorted

	// last is the most recently inflated entry read with ReadAt.
	last struct {
		mu   sync.Mutex
		o    *object // GUARDED_BY(mu)
		data []byte  // GUARDED_BY(mu)
	}
}

// maxKeptInflated bounds the entry ReadAt keeps inflated between calls.
const maxKeptInflated = 64 << 20

var _ zmap.Store = (*Store)(nil)

// object is one entry of the archive.
type object struct {
	f *stdzip.File

	once   sync.Once // guards off and offErr
	off    int64     // absolute offset of the entry's data
	offErr error
}

// Open opens the zip archive at path. The Store closes the file on Close.
func Open(path string) (*Store, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("zip: open dataset: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("zip: open dataset: %w", err)
	}
	if fi.IsDir() {
		f.Close()
		return nil, fmt.Errorf("zip: %s: is a directory: %w", path, ErrNotZip)
	}
	s, err := newStore(f, fi.Size())
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("zip: %s: %w", path, err)
	}
	s.closer = f
	return s, nil
}

// newStore returns a Store over the zip archive of size bytes that r
// reads; Close does not close r. Data that is not a zip archive gives an
// error wrapping ErrNotZip. An archive whose central directory gives an
// entry impossible sizes gives a "corrupt archive" error wrapping
// archive/zip's ErrFormat. Its errors do not name the package.
func newStore(r io.ReaderAt, size int64) (*Store, error) {
	zr, err := stdzip.NewReader(r, size)
	// archive/zip returns a usable reader along with ErrInsecurePath when
	// GODEBUG=zipinsecurepath=0; such names are filtered out below.
	if err != nil && !errors.Is(err, stdzip.ErrInsecurePath) {
		if errors.Is(err, stdzip.ErrFormat) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, fmt.Errorf("%w (%w)", ErrNotZip, err)
		}
		return nil, fmt.Errorf("reading central directory: %w", err)
	}
	s := &Store{r: r, size: size}
	if err := s.build(zr.File); err != nil {
		return nil, err
	}
	return s, nil
}

// Root returns the folder inside the archive that holds the dataset, ""
// when the dataset is at the archive's top level.
//
// zarr-python writes the dataset at the top level; netcdf-c writes
// whatever "zip -r x.zip x.file" produces, with one top folder, and reads
// an archive rooted at the top folder of its first entry. So the root is
// the top folder of the first entry of the central directory, when that
// entry lies in a folder holding a group marker (".zgroup", ".nczarr" or
// ".zmetadata") directly, even if the top level holds a dataset too, as
// netcdf-c reads such archives. Otherwise it is the top level when that
// holds a marker (".zgroup", ".zattrs", ".zarray", ".nczarr" or Zarr v3's
// "zarr.json"); otherwise the only top folder, when every entry lies under
// it and it holds a marker directly; otherwise the top.
func (s *Store) Root() string { return s.root }

// build filters the archive's entries, finds the dataset root and builds
// the key tree.
func (s *Store) build(files []*stdzip.File) error {
	byName := make(map[string]*stdzip.File, len(files))
	for _, f := range files {
		if strings.HasSuffix(f.Name, "/") || f.Mode().IsDir() || !zmap.ValidKey(f.Name) {
			continue
		}
		if err := s.checkSizes(f); err != nil {
			return err
		}
		byName[f.Name] = f // the later entry wins
	}
	first := ""
	if len(files) > 0 {
		first = files[0].Name
	}
	s.root = findRoot(byName, first)
	lead := ""
	if s.root != "" {
		lead = s.root + "/"
	}

	s.objects = make(map[string]*object, len(byName))
	children := map[string]map[string]bool{} // prefix -> child name -> is a dir
	kids := func(prefix string) map[string]bool {
		m := children[prefix]
		if m == nil {
			m = map[string]bool{}
			children[prefix] = m
		}
		return m
	}
	for name, f := range byName {
		key, inside := strings.CutPrefix(name, lead)
		if !inside {
			continue // outside the dataset root
		}
		s.objects[key] = &object{f: f}
		parent, base := splitKey(key)
		m := kids(parent)
		if _, seen := m[base]; !seen {
			m[base] = false // an object; stays a Dir if it already is one
		}
		// Mark each ancestor a Dir in its parent, up to the first one
		// already marked.
		for parent != "" {
			parent, base = splitKey(parent)
			m := kids(parent)
			if m[base] {
				break
			}
			m[base] = true
		}
	}

	s.dirs = make(map[string][]zmap.Entry, len(children))
	for prefix, kids := range children {
		entries := make([]zmap.Entry, 0, len(kids))
		for name, isDir := range kids {
			e := zmap.Entry{Name: name, Dir: isDir}
			if !isDir {
				e = s.objects[zmap.Join(prefix, name)].entry(name)
			}
			entries = append(entries, e)
		}
		slices.SortFunc(entries, func(a, b zmap.Entry) int { return strings.Compare(a.Name, b.Name) })
		s.dirs[prefix] = entries
	}
	return nil
}

// checkSizes rejects an entry whose sizes in the central directory cannot
// be right, so that no size the store reports is absurd and no read
// allocates memory the data cannot fill.
func (s *Store) checkSizes(f *stdzip.File) error {
	c, u := f.CompressedSize64, f.UncompressedSize64
	var problem string
	switch {
	case c > uint64(s.size):
		problem = fmt.Sprintf("compressed size %d exceeds the archive size %d", c, s.size)
	case u > 1<<62:
		problem = fmt.Sprintf("size %d is too large", u)
	case f.Method == stdzip.Store && f.Flags&flagEncrypted == 0 && c != u:
		problem = fmt.Sprintf("stored entry's compressed size %d differs from its size %d", c, u)
	case f.Method == stdzip.Deflate && u > c*maxDeflateRatio+1024:
		problem = fmt.Sprintf("size %d is impossible for %d deflated bytes", u, c)
	default:
		return nil
	}
	return fmt.Errorf("corrupt archive: entry %q: %s: %w", f.Name, problem, stdzip.ErrFormat)
}

// splitKey splits key into its parent prefix and last segment.
func splitKey(key string) (parent, base string) {
	if i := strings.LastIndexByte(key, '/'); i >= 0 {
		return key[:i], key[i+1:]
	}
	return "", key
}

// findRoot applies the rule documented on Root to the valid entry names
// and the name of the archive's first entry.
func findRoot(byName map[string]*stdzip.File, first string) string {
	has := func(folder string, markers ...string) bool {
		for _, m := range markers {
			if _, ok := byName[zmap.Join(folder, m)]; ok {
				return true
			}
		}
		return false
	}
	hasMarker := func(folder string) bool { return has(folder, rootMarkers...) }
	if folder, _, nested := strings.Cut(first, "/"); nested && folder != "" &&
		has(folder, ".zgroup", ".nczarr", ".zmetadata") {
		return folder
	}
	if hasMarker("") {
		return ""
	}
	top := ""
	for name := range byName {
		folder, _, nested := strings.Cut(name, "/")
		if !nested || (top != "" && folder != top) {
			return "" // an object at the top, or a second top folder
		}
		top = folder
	}
	if top != "" && hasMarker(top) {
		return top
	}
	return ""
}

// Get returns the whole content of the entry key, checking its CRC-32.
func (s *Store) Get(ctx context.Context, key string) ([]byte, error) {
	o, err := s.lookup(ctx, "get", key)
	if err != nil {
		return nil, err
	}
	// The central directory says the entry's size before a byte is
	// read (and inflating stops one byte past it).
	if size := o.f.UncompressedSize64; size > math.MaxInt64 {
		return nil, &zmap.TooLargeError{Key: key, Size: math.MaxInt64, Bound: zmap.MaxSize(ctx), AtLeast: true}
	} else if err := zmap.CheckSize(ctx, key, int64(size)); err != nil {
		return nil, err
	}
	b, err := s.read(ctx, o)
	if err != nil {
		return nil, fmt.Errorf("zip: get %q: %w", key, err)
	}
	return b, nil
}

// ReadAt reads len(p) bytes of the entry key at offset off.
func (s *Store) ReadAt(ctx context.Context, key string, p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("zip: readat %q: negative offset %d", key, off)
	}
	o, err := s.lookup(ctx, "readat", key)
	if err != nil {
		return 0, err
	}
	size := int64(o.f.UncompressedSize64)
	if off >= size {
		if len(p) == 0 && off == size {
			return 0, nil
		}
		return 0, io.EOF
	}
	want := int(min(int64(len(p)), size-off))
	var n int
	if o.f.Method == stdzip.Store && o.f.Flags&flagEncrypted == 0 {
		n, err = s.readStored(o, p[:want], off)
	} else {
		n, err = s.readInflated(ctx, o, p[:want], off)
	}
	if err != nil {
		return n, fmt.Errorf("zip: readat %q: %w", key, err)
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// ReadVec fills bufs with the bytes of the entry key from offset off on,
// with one preadv (zmap.VecReader): only for a stored (not compressed,
// not encrypted) entry of an archive that is an open file; others fail
// with errors.ErrUnsupported.
func (s *Store) ReadVec(ctx context.Context, key string, bufs [][]byte, off int64) (int64, error) {
	if off < 0 {
		return 0, fmt.Errorf("zip: readvec %q: negative offset %d", key, off)
	}
	o, err := s.lookup(ctx, "readvec", key)
	if err != nil {
		return 0, err
	}
	size := int64(o.f.UncompressedSize64)
	f, ok := s.r.(*os.File)
	if !ok || o.f.Method != stdzip.Store || o.f.Flags&flagEncrypted != 0 {
		return size, fmt.Errorf("zip: readvec %q: a compressed entry: %w", key, errors.ErrUnsupported)
	}
	var n int64
	for _, b := range bufs {
		n += int64(len(b))
	}
	if n > size-off {
		return size, fmt.Errorf("zip: readvec %q: %d bytes at %d of an entry of %d: %w", key, n, off, size, io.ErrUnexpectedEOF)
	}
	base, err := s.dataOffset(o)
	if err == nil {
		err = vecio.ReadAt(f, bufs, base+off)
	}
	if err != nil {
		return size, fmt.Errorf("zip: readvec %q: %w", key, err)
	}
	return size, nil
}

// WillNeed asks the kernel to start reading the stored bytes of the entry
// key into its page cache, for a read that will follow soon; see package
// fadvise. It is a hint: it does nothing for an archive that is not an
// open file or a key that names no entry.
func (s *Store) WillNeed(ctx context.Context, key string) {
	f, ok := s.r.(*os.File)
	if !ok {
		return
	}
	o, err := s.lookup(ctx, "willneed", key)
	if err != nil {
		return
	}
	base, err := s.dataOffset(o)
	if err != nil {
		return
	}
	fadvise.WillNeed(f, base, int64(o.f.CompressedSize64))
}

// Size returns the uncompressed size of the entry key.
func (s *Store) Size(ctx context.Context, key string) (int64, error) {
	o, err := s.lookup(ctx, "size", key)
	if err != nil {
		return 0, err
	}
	return int64(o.f.UncompressedSize64), nil
}

// Stat returns the uncompressed size and the time of the entry key.
func (s *Store) Stat(ctx context.Context, key string) (zmap.Entry, error) {
	o, err := s.lookup(ctx, "stat", key)
	if err != nil {
		return zmap.Entry{}, err
	}
	return o.entry(path.Base(key)), nil
}

// entry describes o under the name name. An entry's time is its extended
// timestamp when it has one, else its MS-DOS date and time, which have no
// time zone and are taken as UTC.
func (o *object) entry(name string) zmap.Entry {
	return zmap.Entry{Name: name, Size: int64(o.f.UncompressedSize64), ModTime: o.f.Modified}
}

// Search returns the children of prefix from the tree built at open.
func (s *Store) Search(ctx context.Context, prefix string) ([]zmap.Entry, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("zip: search %q: %w", prefix, err)
	}
	return slices.Clone(s.dirs[prefix]), nil
}

// Close closes the file Open opened; it does nothing for a Store from New.
func (s *Store) Close() error {
	if s.closer == nil {
		return nil
	}
	return s.closer.Close()
}

func (s *Store) lookup(ctx context.Context, op, key string) (*object, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("zip: %s %q: %w", op, key, err)
	}
	o, ok := s.objects[key]
	if !ok {
		return nil, fmt.Errorf("zip: %s %q: %w", op, key, zmap.ErrNotFound)
	}
	return o, nil
}

// flagEncrypted is bit 0 of the general purpose flags: the entry is
// encrypted, which archive/zip does not support.
const flagEncrypted = 0x1

// dataOffset returns the absolute offset of o's data, reading its local
// header the first time only.
func (s *Store) dataOffset(o *object) (int64, error) {
	o.once.Do(func() {
		off, err := o.f.DataOffset()
		switch {
		case err != nil:
			o.offErr = fmt.Errorf("reading local header: %w", err)
		case off < 0 || off > s.size || int64(o.f.CompressedSize64) > s.size-off:
			o.offErr = fmt.Errorf("entry data [%d, +%d) lies outside the archive of %d bytes", off, o.f.CompressedSize64, s.size)
		default:
			o.off = off
		}
	})
	return o.off, o.offErr
}

// readStored reads len(p) bytes at off of a stored entry, which the caller
// has checked lie inside the entry.
func (s *Store) readStored(o *object, p []byte, off int64) (int, error) {
	base, err := s.dataOffset(o)
	if err != nil {
		return 0, err
	}
	n, err := s.r.ReadAt(p, base+off)
	if n == len(p) {
		return n, nil // io.ReaderAt may report io.EOF at the archive's end
	}
	if err == nil || err == io.EOF {
		err = io.ErrUnexpectedEOF // the archive is shorter than it claimed
	}
	return n, err
}

// read returns the whole content of o, checking its size and CRC-32.
func (s *Store) read(ctx context.Context, o *object) ([]byte, error) {
	size := int64(o.f.UncompressedSize64)
	if o.f.Method == stdzip.Store && o.f.Flags&flagEncrypted == 0 {
		b := make([]byte, size)
		if _, err := s.readStored(o, b, 0); err != nil {
			return nil, err
		}
		if got := crc32.ChecksumIEEE(b); got != o.f.CRC32 {
			return nil, checksumError(o, got)
		}
		return b, nil
	}
	var buf bytes.Buffer
	// Trust the claimed size only so far: the buffer grows if the data
	// really is that large.
	buf.Grow(int(min(size, 64<<20)))
	if err := s.inflate(ctx, o, &buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// readInflated inflates o and keeps len(p) bytes from off, which the
// caller has checked lie inside the entry.
func (s *Store) readInflated(ctx context.Context, o *object, p []byte, off int64) (int, error) {
	if o.f.UncompressedSize64 <= maxKeptInflated {
		// Keep the entry inflated: FUSE reads an object 128 KiB at a time,
		// and inflating it from its start for each piece is quadratic.
		s.last.mu.Lock()
		data := s.last.data
		if s.last.o != o {
			data = nil
		}
		s.last.mu.Unlock()
		if data == nil {
			var err error
			if data, err = s.read(ctx, o); err != nil {
				return 0, err
			}
			s.last.mu.Lock()
			s.last.o, s.last.data = o, data
			s.last.mu.Unlock()
		}
		return copy(p, data[off:]), nil
	}
	w := &window{p: p, off: off}
	if err := s.inflate(ctx, o, w); err != nil {
		return 0, err
	}
	return len(p), nil
}

// inflate decompresses o into w, failing unless exactly the entry's size
// comes out and its CRC-32 matches.
func (s *Store) inflate(ctx context.Context, o *object, w io.Writer) error {
	if o.f.Flags&flagEncrypted != 0 {
		return errors.New("encrypted entries are not supported")
	}
	if o.f.Method != stdzip.Deflate {
		return fmt.Errorf("compression method %d is not supported", o.f.Method)
	}
	base, err := s.dataOffset(o)
	if err != nil {
		return err
	}
	csize := int64(o.f.CompressedSize64)
	// Read the compressed data in few large calls (one for usual chunk
	// sizes): the ReaderAt may be remote.
	bufSize := int(min(max(csize, 4096), 4<<20))
	src := bufio.NewReaderSize(ctxReader{ctx, io.NewSectionReader(s.r, base, csize)}, bufSize)
	fr := flate.NewReader(src)
	defer fr.Close()
	h := crc32.NewIEEE()
	size := int64(o.f.UncompressedSize64)
	// Copy one byte more than the entry's size to catch an entry that
	// inflates to more than it claims.
	n, err := io.Copy(io.MultiWriter(w, h), io.LimitReader(fr, size+1))
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case err != nil:
		return fmt.Errorf("inflating: %w", err)
	case n != size:
		return fmt.Errorf("inflating: got %d bytes, the central directory says %d: %w", n, size, stdzip.ErrFormat)
	}
	if got := h.Sum32(); got != o.f.CRC32 {
		return checksumError(o, got)
	}
	return nil
}

func checksumError(o *object, got uint32) error {
	return fmt.Errorf("CRC-32 %08x, the central directory says %08x: %w", got, o.f.CRC32, stdzip.ErrChecksum)
}

// window is an io.Writer that keeps the bytes written at offsets
// [off, off+len(p)) of its input in p and discards the rest.
type window struct {
	p   []byte
	off int64 // input offset of p[0]
	pos int64 // input bytes written so far
}

func (w *window) Write(b []byte) (int, error) {
	start, end := w.pos, w.pos+int64(len(b))
	w.pos = end
	lo, hi := max(start, w.off), min(end, w.off+int64(len(w.p)))
	if lo < hi {
		copy(w.p[lo-w.off:hi-w.off], b[lo-start:hi-start])
	}
	return len(b), nil
}

// ctxReader stops reading once ctx is done, so that a long inflate returns
// promptly after cancellation.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
