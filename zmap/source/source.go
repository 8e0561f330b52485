// Package source turns the SOURCE a user names (a plain path, or an NCZarr
// URL such as file:///x.zip#mode=nczarr,zip or s3://bucket/key) into an
// opened zmap.Store.
package source

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"strings"

	"github.com/nczarrfs/nczarrfs/zmap"
	"github.com/nczarrfs/nczarrfs/zmap/file"
	"github.com/nczarrfs/nczarrfs/zmap/zip"
)

// Storage is a storage medium: "file" (directory tree), "zip" or "s3".
type Storage string

// The storage media.
const (
	File Storage = "file"
	Zip  Storage = "zip"
	S3   Storage = "s3"
)

// Source is a parsed SOURCE.
type Source struct {
	Raw     string  // as given
	Path    string  // local path for file and zip
	URL     string  // the URL for s3, fragment included
	Storage Storage // "" until inferred
	Format  string  // "nczarr", "zarr" or "" (inferred by probing)
	Params  map[string]string
}

// Parse parses a SOURCE. Fragment keys follow the NCZarr spec: mode is a
// comma-separated list of nczarr|zarr, file|zip|s3, v2, noxarray, xarray;
// other key=value pairs (such as awsprofile) are kept in Params.
func Parse(raw string) (Source, error) {
	s := Source{Raw: raw, Params: map[string]string{}}
	if !strings.Contains(raw, "://") {
		if raw == "" {
			return s, errors.New("empty source")
		}
		s.Path = raw
		return s, nil
	}
	u, err := url.Parse(raw)
	if err != nil {
		return s, fmt.Errorf("source %q is not a valid URL: %w", raw, err)
	}
	if err := s.parseFragment(u.Fragment); err != nil {
		return s, fmt.Errorf("source %q: %w", raw, err)
	}
	switch u.Scheme {
	case "file":
		if u.Host != "" && u.Host != "localhost" {
			return s, fmt.Errorf("source %q: file URLs name no host (use file:///path)", raw)
		}
		s.Path = u.Path
		if s.Storage == S3 {
			return s, fmt.Errorf("source %q: mode s3 needs an s3:// or http(s):// URL", raw)
		}
	case "s3", "http", "https":
		if s.Storage != "" && s.Storage != S3 {
			return s, fmt.Errorf("source %q: mode %s does not fit a %s:// URL", raw, s.Storage, u.Scheme)
		}
		s.Storage = S3
		s.URL = raw
	default:
		return s, fmt.Errorf("source %q: unsupported scheme %q (use file, s3, http or https)", raw, u.Scheme)
	}
	return s, nil
}

func (s *Source) parseFragment(frag string) error {
	if frag == "" {
		return nil
	}
	for _, kv := range strings.Split(frag, "&") {
		k, v, _ := strings.Cut(kv, "=")
		if k != "mode" {
			s.Params[k] = v
			continue
		}
		for _, m := range strings.Split(v, ",") {
			switch m {
			case "nczarr", "zarr":
				s.Format = m
			case "file", "zip", "s3":
				if s.Storage != "" && s.Storage != Storage(m) {
					return fmt.Errorf("mode names two storage media, %s and %s", s.Storage, m)
				}
				s.Storage = Storage(m)
			case "v2", "xarray", "noxarray", "":
			case "v3":
				return errors.New("mode v3: Zarr version 3 is not supported")
			default:
				return fmt.Errorf("unknown mode %q (want nczarr|zarr, file|zip|s3, v2, noxarray)", m)
			}
		}
	}
	return nil
}

// OpenLocal opens a file or zip source, inferring the medium by probing
// the path when the source does not name it.
func OpenLocal(s Source) (zmap.Store, error) {
	info, err := os.Stat(s.Path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("source %s does not exist", s.Path)
		}
		return nil, fmt.Errorf("source: %w", err)
	}
	storage := s.Storage
	if storage == "" {
		storage = File
		if !info.IsDir() {
			storage = Zip
		}
	}
	switch storage {
	case File:
		if !info.IsDir() {
			return nil, fmt.Errorf("source %s is not a directory (mode=file); for a zip file use mode=zip", s.Path)
		}
		return file.Open(s.Path)
	case Zip:
		if info.IsDir() {
			return nil, fmt.Errorf("source %s is a directory, not a zip file (mode=zip)", s.Path)
		}
		st, err := zip.Open(s.Path)
		if errors.Is(err, zip.ErrNotZip) {
			return nil, fmt.Errorf("source %s is neither a directory nor a zip file", s.Path)
		}
		return st, err
	}
	return nil, fmt.Errorf("source %s: storage %s is not local", s.Raw, storage)
}

// Open opens any source. S3 sources go to openS3, set by the s3 wiring.
func Open(ctx context.Context, s Source, opts Options) (zmap.Store, error) {
	if s.Storage == S3 {
		return openS3(ctx, s, opts)
	}
	return OpenLocal(s)
}

// Redact returns raw with any user information (user:password@) removed,
// for logs and the mount table.
func Redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return raw
	}
	u.User = nil
	return u.String()
}
