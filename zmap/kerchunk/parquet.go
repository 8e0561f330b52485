package kerchunk

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/parquet-go/parquet-go"

	"github.com/nczarrfs/nczarrfs/zmap"
)

// Bounds of a Parquet reference folder.
const (
	// MaxRecordSize is the most rows a record file may hold.
	MaxRecordSize = 1 << 20
	// MaxRecordFile is the most bytes of one record file.
	MaxRecordFile = 256 << 20
	// keptRecords is how many record files are kept decoded.
	keptRecords = 64
	// maxListed is the most chunks an array's folder lists.
	maxListed = 10_000_000
)

// OpenParquet returns a Store over the Parquet reference folder that dir
// serves (fsspec's LazyReferenceMapper layout): .zmetadata holds the
// metadata and record_size, and VAR/refs.K.parq the references of
// variable VAR, record_size rows a file, row r being chunk r of the
// variable's chunk grid in C order. Only .zmetadata is read here; a
// record file is read when a key it holds is first asked for. The Store
// closes dir.
func OpenParquet(ctx context.Context, dir zmap.Store, opts Options) (*Store, error) {
	if opts.Opener == nil {
		return nil, errors.New("kerchunk: no Opener")
	}
	size, err := dir.Size(ctx, ".zmetadata")
	if err == nil && size > MaxJSONSize {
		err = fmt.Errorf("%d bytes, more than %d", size, MaxJSONSize)
	}
	var data []byte
	if err == nil {
		data, err = dir.Get(ctx, ".zmetadata")
	}
	if err != nil {
		return nil, fmt.Errorf("kerchunk: a Parquet reference folder's .zmetadata: %w", err)
	}
	idx, err := parseParquetMeta(data)
	if err != nil {
		return nil, fmt.Errorf("kerchunk: .zmetadata: %w", err)
	}
	idx.dir, idx.base = dir, opts.Dir
	s := newStore(idx, opts, opts.Remote)
	s.probe = true
	return s, nil
}

// parquetIndex finds the references of a Parquet reference folder.
type parquetIndex struct {
	dir        zmap.Store
	base       string // Options.Dir
	meta       Set    // the metadata objects, .zmetadata included
	metaKeys   []string
	recordSize int64
	arrays     map[string]*pqArray // by path

	mu      sync.Mutex
	records map[string]*record // GUARDED_BY(mu): by record file key
}

// pqArray is an array's chunk grid: how many chunks along each
// dimension.
type pqArray struct {
	grid    []int64
	nchunks int64
}

// record is one record file, being read or read.
type record struct {
	done chan struct{}
	rows []pqRow
	err  error
}

// pqRow is one row of a record file.
type pqRow struct {
	Path   *string `parquet:"path,optional"`
	Offset int64   `parquet:"offset"`
	Size   int64   `parquet:"size"`
	Raw    []byte  `parquet:"raw,optional"`
}

func parseParquetMeta(data []byte) (*parquetIndex, error) {
	var doc struct {
		Metadata   map[string]json.RawMessage `json:"metadata"`
		RecordSize *int64                     `json:"record_size"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	if doc.RecordSize == nil || *doc.RecordSize <= 0 || *doc.RecordSize > MaxRecordSize {
		return nil, fmt.Errorf("record_size is not a count of at most %d", MaxRecordSize)
	}
	x := &parquetIndex{meta: Set{".zmetadata": {Data: data, Len: int64(len(data))}}, recordSize: *doc.RecordSize, arrays: map[string]*pqArray{}, records: map[string]*record{}}
	for key, raw := range doc.Metadata {
		if !zmap.ValidKey(key) {
			return nil, fmt.Errorf("metadata key %q is not a key", key)
		}
		r, err := parseValue(raw, nil)
		if err != nil || r.URL != "" {
			return nil, fmt.Errorf("metadata %q is neither a string nor an object", key)
		}
		x.meta[key] = r
		dir, ok := strings.CutSuffix(key, "/.zarray")
		if !ok {
			continue
		}
		var za struct {
			Shape  []int64 `json:"shape"`
			Chunks []int64 `json:"chunks"`
		}
		if err := json.Unmarshal(r.Data, &za); err != nil {
			return nil, fmt.Errorf("%s: %w", key, err)
		}
		if len(za.Shape) != len(za.Chunks) {
			return nil, fmt.Errorf("%s: shape and chunks differ in rank", key)
		}
		a := &pqArray{grid: []int64{1}, nchunks: 1}
		if len(za.Shape) > 0 {
			a.grid = make([]int64, len(za.Shape))
			for d := range za.Shape {
				if za.Chunks[d] <= 0 || za.Shape[d] < 0 {
					return nil, fmt.Errorf("%s: bad shape or chunks", key)
				}
				a.grid[d] = (za.Shape[d] + za.Chunks[d] - 1) / za.Chunks[d]
				if a.grid[d] != 0 && a.nchunks > (1<<62)/a.grid[d] {
					return nil, fmt.Errorf("%s: too many chunks", key)
				}
				a.nchunks *= a.grid[d]
			}
		}
		x.arrays[dir] = a
	}
	for k := range x.meta {
		x.metaKeys = append(x.metaKeys, k)
	}
	slices.Sort(x.metaKeys)
	return x, nil
}

func (x *parquetIndex) Close() error { return x.dir.Close() }

func notFound(key string) error { return fmt.Errorf("kerchunk: %s: %w", key, zmap.ErrNotFound) }

func (x *parquetIndex) lookup(ctx context.Context, key string) (Ref, error) {
	if r, ok := x.meta[key]; ok {
		return r, nil
	}
	i := strings.LastIndexByte(key, '/')
	if i < 0 {
		return Ref{}, notFound(key)
	}
	a := x.arrays[key[:i]]
	if a == nil {
		return Ref{}, notFound(key)
	}
	n, ok := a.chunkNumber(key[i+1:])
	if !ok {
		return Ref{}, notFound(key)
	}
	rows, err := x.record(ctx, key[:i], n/x.recordSize)
	if err != nil {
		return Ref{}, err
	}
	ri := n % x.recordSize
	if ri >= int64(len(rows)) {
		return Ref{}, notFound(key)
	}
	return x.ref(key, rows[ri])
}

// ref is the reference of a row, as fsspec reads it: raw bytes, else a
// missing key without a path, else the whole object for offset and size
// 0, else a range. The Parquet reader gives a null raw as empty bytes, so
// an empty raw is taken for null (a chunk is never empty).
func (x *parquetIndex) ref(key string, row pqRow) (Ref, error) {
	switch {
	case len(row.Raw) > 0:
		return Ref{Data: row.Raw, Len: int64(len(row.Raw))}, nil
	case row.Path == nil || *row.Path == "":
		return Ref{}, notFound(key)
	}
	u := *row.Path
	if x.base != "" && isRelativePath(u) {
		u = filepath.Join(x.base, u)
	}
	if row.Offset == 0 && row.Size == 0 {
		return Ref{URL: u, Len: -1}, nil
	}
	r, err := checkRange(u, row.Offset, row.Size)
	if err != nil {
		return Ref{}, fmt.Errorf("kerchunk: reference %s: %v", key, err)
	}
	return r, nil
}

// chunkNumber is the C-order number of the chunk named name ("1.2").
func (a *pqArray) chunkNumber(name string) (int64, bool) {
	parts := strings.Split(name, ".")
	if len(parts) != len(a.grid) {
		return 0, false
	}
	var n int64
	for d, p := range parts {
		i, err := strconv.ParseInt(p, 10, 64)
		if err != nil || i < 0 || i >= a.grid[d] || strconv.FormatInt(i, 10) != p {
			return 0, false
		}
		n = n*a.grid[d] + i
	}
	return n, true
}

// chunkName is the name of chunk number n.
func (a *pqArray) chunkName(n int64) string {
	parts := make([]string, len(a.grid))
	for d := len(a.grid) - 1; d >= 0; d-- {
		parts[d] = strconv.FormatInt(n%a.grid[d], 10)
		n /= a.grid[d]
	}
	return strings.Join(parts, ".")
}

// record returns the rows of record file k of the array at path, read
// once (and again after a failure); a record file that does not exist
// holds no reference (fsspec's reader says the same).
func (x *parquetIndex) record(ctx context.Context, path string, k int64) ([]pqRow, error) {
	key := zmap.Join(path, "refs."+strconv.FormatInt(k, 10)+".parq")
	x.mu.Lock()
	r := x.records[key]
	if r == nil {
		if len(x.records) >= keptRecords {
			for k, old := range x.records {
				select {
				case <-old.done:
					delete(x.records, k)
				default:
				}
			}
		}
		r = &record{done: make(chan struct{})}
		x.records[key] = r
		x.mu.Unlock()
		// Read in a context of its own: the reader's cancellation
		// fails no one else waiting for it; the store bounds it.
		r.rows, r.err = x.read(context.WithoutCancel(ctx), key)
		close(r.done)
		if r.err != nil && !errors.Is(r.err, zmap.ErrNotFound) {
			x.mu.Lock()
			if x.records[key] == r {
				delete(x.records, key)
			}
			x.mu.Unlock()
		}
	} else {
		x.mu.Unlock()
	}
	select {
	case <-r.done:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if errors.Is(r.err, zmap.ErrNotFound) {
		return nil, nil
	}
	return r.rows, r.err
}

func (x *parquetIndex) read(ctx context.Context, key string) ([]pqRow, error) {
	size, err := x.dir.Size(ctx, key)
	if err != nil {
		if errors.Is(err, zmap.ErrNotFound) {
			return nil, err
		}
		return nil, fmt.Errorf("kerchunk: record file %s: %v", key, err)
	}
	if size > MaxRecordFile {
		return nil, fmt.Errorf("kerchunk: record file %s of %d bytes is larger than %d", key, size, MaxRecordFile)
	}
	data := make([]byte, size)
	if _, err := x.dir.ReadAt(ctx, key, data, 0); err != nil {
		return nil, fmt.Errorf("kerchunk: record file %s: %v", key, err)
	}
	rows, err := parseRecord(data, x.recordSize)
	if err != nil {
		return nil, fmt.Errorf("kerchunk: record file %s: %w", key, err)
	}
	return rows, nil
}

// parseRecord reads the rows of a record file of at most maxRows rows,
// checking its columns: path (string, optional), offset and size
// (int64), raw (bytes, optional).
func parseRecord(data []byte, maxRows int64) (rows []pqRow, err error) {
	defer func() {
		// A Parquet reader that panics on a hostile file fails the
		// file, not the mount.
		if p := recover(); p != nil {
			rows, err = nil, fmt.Errorf("not a Parquet file: %v", p)
		}
	}()
	f, err := parquet.OpenFile(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return nil, fmt.Errorf("not a Parquet file: %w", err)
	}
	if n := f.NumRows(); n < 0 || n > maxRows {
		return nil, fmt.Errorf("%d rows, more than record_size %d", n, maxRows)
	}
	if err := checkColumns(f.Schema()); err != nil {
		return nil, err
	}
	rows = make([]pqRow, f.NumRows())
	r := parquet.NewGenericReader[pqRow](f)
	defer r.Close()
	n, err := r.Read(rows)
	if err != nil && err != io.EOF {
		return nil, fmt.Errorf("reading rows: %w", err)
	}
	if int64(n) != f.NumRows() {
		return nil, fmt.Errorf("%d rows of %d read", n, f.NumRows())
	}
	return rows, nil
}

// checkColumns checks that the schema has the columns of a record file,
// of their kinds.
func checkColumns(s *parquet.Schema) error {
	want := map[string]parquet.Kind{"path": parquet.ByteArray, "offset": parquet.Int64, "size": parquet.Int64, "raw": parquet.ByteArray}
	for name, kind := range want {
		col, ok := s.Lookup(name)
		if !ok {
			return fmt.Errorf("no column %q (want path, offset, size and raw)", name)
		}
		if col.Node.Type().Kind() != kind {
			return fmt.Errorf("column %q is %v, not %v", name, col.Node.Type().Kind(), kind)
		}
	}
	return nil
}

func (x *parquetIndex) children(ctx context.Context, prefix string) (map[string]Ref, map[string]bool, error) {
	objs, dirs, _ := childrenOf(x.metaKeys, prefix, func(k string) Ref { return x.meta[k] })
	for p := range x.arrays {
		if prefix == "" && p != "" {
			name, _, _ := strings.Cut(p, "/")
			dirs[name] = true
		} else if rest, ok := strings.CutPrefix(p, prefix+"/"); ok && prefix != "" {
			name, _, _ := strings.Cut(rest, "/")
			dirs[name] = true
		}
	}
	a := x.arrays[prefix]
	if a == nil || prefix == "" {
		return objs, dirs, nil
	}
	if a.nchunks > maxListed {
		return nil, nil, fmt.Errorf("kerchunk: array %s has %d chunks; its folder lists at most %d", prefix, a.nchunks, maxListed)
	}
	for k := int64(0); k*x.recordSize < a.nchunks; k++ {
		rows, err := x.record(ctx, prefix, k)
		if err != nil {
			return nil, nil, err
		}
		for ri, row := range rows {
			n := k*x.recordSize + int64(ri)
			if n >= a.nchunks {
				break
			}
			name := a.chunkName(n)
			r, err := x.ref(zmap.Join(prefix, name), row)
			if errors.Is(err, zmap.ErrNotFound) {
				continue
			}
			if err != nil {
				return nil, nil, err
			}
			objs[name] = r
		}
	}
	return objs, dirs, nil
}
