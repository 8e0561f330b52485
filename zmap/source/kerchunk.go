package source

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/nczarrfs/nczarrfs/zmap"
	"github.com/nczarrfs/nczarrfs/zmap/azure"
	"github.com/nczarrfs/nczarrfs/zmap/file"
	zhttp "github.com/nczarrfs/nczarrfs/zmap/http"
	"github.com/nczarrfs/nczarrfs/zmap/kerchunk"
	"github.com/nczarrfs/nczarrfs/zmap/s3"
)

// Kerchunk is the format word of a kerchunk reference set
// (#mode=kerchunk).
const Kerchunk = "kerchunk"

// referenceName reports whether a remote object's name says it is a JSON
// reference file: .json, .json.gz or .json.zst.
func referenceName(name string) bool {
	name = strings.ToLower(name)
	return strings.HasSuffix(name, ".json") || strings.HasSuffix(name, ".json.gz") || strings.HasSuffix(name, ".json.zst")
}

// parquetName reports whether a remote folder's name says it is a
// Parquet reference folder: .parq or .parquet (fsspec's examples name
// them so). Other remote folders need #mode=kerchunk: finding out by
// their .zmetadata would cost every mount of a bucket a request.
func parquetName(name string) bool {
	name = strings.ToLower(name)
	return strings.HasSuffix(name, ".parq") || strings.HasSuffix(name, ".parquet")
}

// openReferences opens s as a kerchunk reference set when it is one: a
// local file that holds JSON, a local folder whose .zmetadata holds
// record_size (Parquet), a remote object named like a JSON reference
// file or folder named like a Parquet one, or any source whose mode says
// kerchunk. ok is false for any other
// source.
func openReferences(ctx context.Context, s Source, opts Options) (st zmap.Store, ok bool, err error) {
	named := s.Format == Kerchunk
	switch s.Storage {
	case S3, HTTP, Azure:
		if !named && !referenceName(remoteName(s)) && !parquetName(remoteName(s)) {
			return nil, false, nil
		}
		st, err := openRemoteReferences(ctx, s, opts)
		return st, true, err
	}
	if s.Storage != "" && !named {
		return nil, false, nil // mode=file or mode=zip: as it says
	}
	info, err := os.Stat(s.Path)
	if err != nil {
		return nil, false, nil // openLocal says why
	}
	policy := Policy{AllowLocal: true, Endpoints: opts.References.Endpoints}
	if info.IsDir() {
		meta, err := os.ReadFile(filepath.Join(s.Path, ".zmetadata"))
		if !named && (err != nil || !parquetMeta(meta)) {
			return nil, false, nil
		}
		dir, err := file.OpenWith(s.Path, file.Options{FollowLinks: opts.FollowLinks})
		if err != nil {
			return nil, true, err
		}
		st, err := openParquet(ctx, dir, s, opts, policy, false)
		return st, true, err
	}
	if !named && !localJSON(s.Path) {
		return nil, false, nil
	}
	data, err := readLocal(s.Path)
	if err != nil {
		return nil, true, err
	}
	abs, err := filepath.Abs(s.Path)
	if err != nil {
		return nil, true, err
	}
	st, err = newReferences(data, s, opts, policy, filepath.Dir(abs), false)
	return st, true, err
}

// localJSON reports whether the file at p starts like a JSON reference
// file.
func localJSON(p string) bool {
	f, err := os.Open(p)
	if err != nil {
		return false
	}
	defer f.Close()
	head := make([]byte, 512)
	n, _ := io.ReadFull(f, head)
	return kerchunk.LooksLikeJSON(head[:n])
}

func readLocal(p string) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, fmt.Errorf("source: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, kerchunk.MaxJSONSize+1))
	if err != nil {
		return nil, fmt.Errorf("source %s: %w", p, err)
	}
	if len(data) > kerchunk.MaxJSONSize {
		return nil, fmt.Errorf("source %s: a reference file larger than %d bytes", p, kerchunk.MaxJSONSize)
	}
	return data, nil
}

// parquetMeta reports whether a .zmetadata is that of a Parquet reference
// folder: it holds record_size.
func parquetMeta(data []byte) bool {
	if !bytes.Contains(data, []byte(`"record_size"`)) {
		return false // a Zarr store's consolidated metadata: not parsed twice
	}
	var doc struct {
		RecordSize json.RawMessage `json:"record_size"`
	}
	return json.Unmarshal(data, &doc) == nil && doc.RecordSize != nil
}

// newReferences parses a JSON reference file and serves it.
func newReferences(data []byte, s Source, opts Options, policy Policy, dir string, remote bool) (zmap.Store, error) {
	set, err := kerchunk.ParseJSON(data)
	if err != nil {
		return nil, fmt.Errorf("source %s is not a kerchunk reference file: %w", Redact(s.Raw), err)
	}
	op := NewOpener(opts, policy)
	st, err := kerchunk.New(set, kerchunk.Options{Opener: op, Dir: dir, Remote: remote, Logger: opts.S3.Logger, Closer: op, Name: Redact(s.Raw)})
	if err != nil {
		op.Close()
		return nil, fmt.Errorf("source %s: %w", Redact(s.Raw), err)
	}
	return st, nil
}

// remoteName is the last segment of a remote source's path.
func remoteName(s Source) string {
	switch s.Storage {
	case S3:
		return path.Base(s.S3.Prefix)
	case Azure:
		return path.Base(s.Azure.Prefix)
	case HTTP:
		if u, err := url.Parse(s.URL); err == nil {
			return path.Base(u.Path)
		}
	}
	return ""
}

// openRemoteReferences reads a remote reference file, or opens a remote
// Parquet reference folder, through a store of its folder. A name that is
// not a JSON file's is taken for a Parquet folder, and for a JSON object
// when no .zmetadata is under it. Its references may reach local files
// only when opts.References allows it.
func openRemoteReferences(ctx context.Context, s Source, opts Options) (zmap.Store, error) {
	if !referenceName(remoteName(s)) {
		dir, err := remoteFolder(ctx, s, opts, false)
		if err != nil {
			return nil, err
		}
		st, err := openParquet(ctx, dir, s, opts, opts.References, true)
		if err == nil {
			return st, nil
		}
		dir.Close()
		if !errors.Is(err, zmap.ErrNotFound) || parquetName(remoteName(s)) {
			return nil, err
		}
	}
	parent, err := remoteFolder(ctx, s, opts, true)
	if err != nil {
		return nil, err
	}
	defer parent.Close()
	// Held in memory: its size is asked first, and the Get is bounded by
	// the reference file's own limit (the caller's context carries the
	// metadata documents' smaller bound, or none).
	if size, err := parent.Size(ctx, remoteName(s)); err == nil && size > kerchunk.MaxJSONSize {
		return nil, fmt.Errorf("source %s: a reference file of %d bytes, larger than %d", Redact(s.Raw), size, kerchunk.MaxJSONSize)
	}
	data, err := parent.Get(zmap.WithMaxSize(ctx, kerchunk.MaxJSONSize), remoteName(s))
	if err != nil {
		if errors.Is(err, zmap.ErrNotFound) {
			return nil, fmt.Errorf("source %s does not exist", Redact(s.Raw))
		}
		return nil, fmt.Errorf("source %s: %w", Redact(s.Raw), err)
	}
	if len(data) > kerchunk.MaxJSONSize {
		return nil, fmt.Errorf("source %s: a reference file larger than %d bytes", Redact(s.Raw), kerchunk.MaxJSONSize)
	}
	return newReferences(data, s, opts, opts.References, "", true)
}

// remoteFolder opens a store of the remote source's folder, or of the
// folder that holds it (parent).
func remoteFolder(ctx context.Context, s Source, opts Options, parent bool) (zmap.Store, error) {
	switch s.Storage {
	case S3:
		loc := s.S3
		if parent {
			loc.Prefix = parentOf(loc.Prefix)
		}
		return s3.Open(ctx, loc, opts.S3)
	case Azure:
		loc := s.Azure
		if parent {
			loc.Prefix = parentOf(loc.Prefix)
		}
		o := opts.Azure
		if o.Logger == nil {
			o.Logger = opts.S3.Logger
		}
		return azure.Open(ctx, loc, o)
	}
	base := strings.TrimSuffix(s.URL, "/")
	if parent {
		base = base[:strings.LastIndexByte(base, '/')]
	}
	return zhttp.Open(ctx, base, zhttp.Options{Raw: true, Timeout: opts.S3.Timeout, Logger: opts.S3.Logger})
}

// parentOf is the folder of key ("" at the top).
func parentOf(key string) string {
	if i := strings.LastIndexByte(key, '/'); i >= 0 {
		return key[:i]
	}
	return ""
}

// openParquet opens a Parquet reference folder served by dir.
func openParquet(ctx context.Context, dir zmap.Store, s Source, opts Options, policy Policy, remote bool) (zmap.Store, error) {
	op := NewOpener(opts, policy)
	ko := kerchunk.Options{Opener: op, Remote: remote, Logger: opts.S3.Logger, Closer: op, Name: Redact(s.Raw)}
	if !remote {
		abs, err := filepath.Abs(s.Path)
		if err != nil {
			return nil, err
		}
		ko.Dir = filepath.Dir(abs)
	}
	st, err := kerchunk.OpenParquet(ctx, dir, ko)
	if err != nil {
		op.Close()
		if errors.Is(err, zmap.ErrNotFound) {
			return nil, fmt.Errorf("source %s is not a kerchunk reference set: %w", Redact(s.Raw), err)
		}
		return nil, fmt.Errorf("source %s: %w", Redact(s.Raw), err)
	}
	return st, nil
}
