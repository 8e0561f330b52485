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
	"github.com/nczarrfs/nczarrfs/zmap/azure"
	"github.com/nczarrfs/nczarrfs/zmap/file"
	"github.com/nczarrfs/nczarrfs/zmap/s3"
	"github.com/nczarrfs/nczarrfs/zmap/zip"
)

// Storage is a storage medium: "file" (directory tree), "zip", "s3"
// (S3, S3-compatible servers and Google Cloud Storage), "http" (a web
// server that cannot be listed) or "azure".
type Storage string

// The storage media.
const (
	File Storage = "file"
	Zip  Storage = "zip"
	S3   Storage = "s3"
	HTTP Storage = "http"
	// Azure is Azure Blob Storage: az://, abfs:// and
	// https://ACCOUNT.blob.core.windows.net URLs (azure.go).
	Azure Storage = "azure"
)

// Source is a parsed SOURCE: everything the user's string says, parsed
// once.
type Source struct {
	Raw     string  // as given
	Storage Storage // "" until inferred (a plain path, or a file URL without a medium)
	Format  string  // "nczarr", "zarr", "icechunk", "kerchunk" or "" (inferred by probing)
	Version int     // Zarr version the mode names (2 or 3), 0 when it names none
	Path    string  // local path, for file and zip
	// S3 is where an s3 source lives, its Profile taken from the
	// fragment's awsprofile or aws.profile.
	S3 s3.Location
	// URL is an http source's base URL, without its fragment.
	URL string
	// Azure is where an azure source lives.
	Azure azure.Location
	// Params holds the fragment's other keys (netcdf-c has several, such
	// as log or show), lower-cased, each with its value as written ("" for
	// a bare key).
	Params map[string]string
}

// Parse parses a SOURCE: a plain path, or a URL (file://, s3://, gs://,
// gs3://, http(s)://) with an optional fragment that Fragment reads. An
// http(s) URL whose mode names http is a web server that cannot be listed;
// every other http(s) URL, and s3://, gs:// and gs3://, name an S3 store
// (Google Cloud Storage for gs://, gs3:// and storage.googleapis.com),
// located by s3.LocationOf.
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
		// url.Error quotes the whole URL, which may hold a password.
		return s, fmt.Errorf("source %q is not a valid URL: %w", Redact(raw), errors.Unwrap(err))
	}
	f, err := ParseFragment(u.Fragment)
	if err != nil {
		return s, fmt.Errorf("source %q: %w", Redact(raw), err)
	}
	s.Storage, s.Format, s.Version, s.Params = f.Storage, f.Format, f.Version, f.Params
	if azure.IsURL(u) {
		return parseAzure(s, u)
	}
	switch scheme := strings.ToLower(u.Scheme); scheme {
	case "file":
		if u.Host != "" && u.Host != "localhost" {
			return s, fmt.Errorf("source %q: file URLs name no host (use file:///path)", raw)
		}
		if s.Storage == S3 || s.Storage == HTTP {
			return s, fmt.Errorf("source %q: mode %s needs an %s URL", raw, s.Storage, map[Storage]string{S3: "s3://, gs:// or http(s)://", HTTP: "http(s)://"}[s.Storage])
		}
		if u.Path == "" {
			return s, fmt.Errorf("source %q: file URL names no path", raw)
		}
		s.Path = u.Path
	case "http", "https":
		if s.Storage != HTTP {
			return parseS3(s, u, scheme, f)
		}
		if u.User != nil {
			return s, fmt.Errorf("source %q: URL must not contain user information", Redact(raw))
		}
		if u.RawQuery != "" || u.ForceQuery {
			return s, fmt.Errorf("source %q: URL must not have a query string", Redact(raw))
		}
		if u.Host == "" {
			return s, fmt.Errorf("source %q: URL has no host", Redact(raw))
		}
		base := *u
		base.Fragment, base.RawFragment = "", ""
		s.URL = base.String()
	case "s3", "gs", "gs3":
		return parseS3(s, u, scheme, f)
	default:
		return s, fmt.Errorf("source %q: unsupported scheme %q (use file, s3, gs, gs3, az, abfs, http or https)", Redact(raw), u.Scheme)
	}
	return s, nil
}

// parseS3 reads the location of an S3 source from u, whose fragment f
// has been read into s.
func parseS3(s Source, u *url.URL, scheme string, f Fragment) (Source, error) {
	if s.Storage != "" && s.Storage != S3 {
		return s, fmt.Errorf("source %q: mode %s does not fit a %s:// URL", Redact(s.Raw), s.Storage, scheme)
	}
	s.Storage = S3
	var err error
	if s.S3, err = s3.LocationOf(u); err != nil {
		return s, fmt.Errorf("source %q: %w", Redact(s.Raw), err)
	}
	s.S3.Profile = f.Profile
	return s, nil
}

// Fragment is a parsed NCZarr URL fragment.
type Fragment struct {
	Format  string  // "nczarr" or "zarr", "" when the mode names neither
	Storage Storage // "" when the mode names no medium
	Version int     // 2 or 3 (mode v2, v3), 0 when the mode names none
	Profile string  // the AWS profile of awsprofile or aws.profile
	Params  map[string]string
}

// ParseFragment reads an NCZarr URL fragment as netcdf-c does: key=value
// pairs separated by '&' (a bare key has the value ""), keys matched
// without regard to case. mode's value is a comma-separated list of words,
// also matched without regard to case: nczarr|zarr, file|zip|s3|http, v2|v3,
// xarray|noxarray; several mode keys add up. awsprofile and aws.profile
// name the AWS profile. Every other key goes to Params.
func ParseFragment(frag string) (Fragment, error) {
	f := Fragment{Params: map[string]string{}}
	if frag == "" {
		return f, nil
	}
	for _, kv := range strings.Split(frag, "&") {
		k, v, _ := strings.Cut(kv, "=")
		switch k = strings.ToLower(strings.TrimSpace(k)); k {
		case "":
			continue
		case "mode":
			if err := f.addModes(v); err != nil {
				return f, err
			}
		case "awsprofile", "aws.profile":
			if v == "" {
				return f, fmt.Errorf("%s names an empty profile", k)
			}
			f.Profile = v
		default:
			f.Params[k] = v
		}
	}
	return f, nil
}

func (f *Fragment) addModes(list string) error {
	for _, m := range strings.Split(list, ",") {
		switch m = strings.ToLower(strings.TrimSpace(m)); m {
		case "nczarr", "zarr", Icechunk, Kerchunk:
			if f.Format != "" && f.Format != m {
				return fmt.Errorf("mode names two formats, %s and %s", f.Format, m)
			}
			f.Format = m
		case "file", "zip", "s3", "http":
			if f.Storage != "" && f.Storage != Storage(m) {
				return fmt.Errorf("mode names two storage media, %s and %s", f.Storage, m)
			}
			f.Storage = Storage(m)
		case "v2", "v3":
			v := int(m[1] - '0')
			if f.Version != 0 && f.Version != v {
				return fmt.Errorf("mode names two Zarr versions, v%d and %s", f.Version, m)
			}
			f.Version = v
		case "xarray", "noxarray", "":
		default:
			return fmt.Errorf("unknown mode %q (want nczarr|zarr|icechunk|kerchunk, file|zip|s3|http, v2|v3, xarray|noxarray)", m)
		}
	}
	return nil
}

// OpenLocal opens a file or zip source, inferring the medium by probing
// the path when the source does not name it.
func OpenLocal(s Source) (zmap.Store, error) { return openLocal(s, Options{}) }

func openLocal(s Source, opts Options) (zmap.Store, error) {
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
		return file.OpenWith(s.Path, file.Options{FollowLinks: opts.FollowLinks})
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

// Open opens any source: a kerchunk reference set (kerchunk.go) as a
// zmap/kerchunk store, an Icechunk repository (icechunk.go) as the store of
// the version opts.Icechunk names.
func Open(ctx context.Context, s Source, opts Options) (zmap.Store, error) {
	if st, ok, err := openReferences(ctx, s, opts); ok {
		return st, err
	}
	st, err := openStorage(ctx, s, opts)
	if err != nil {
		return nil, err
	}
	return maybeIcechunk(ctx, s, st, opts)
}

func openStorage(ctx context.Context, s Source, opts Options) (zmap.Store, error) {
	switch s.Storage {
	case S3:
		return openS3(ctx, s, opts)
	case HTTP:
		return openHTTP(ctx, s, opts)
	case Azure:
		return openAzure(ctx, s, opts)
	}
	return openLocal(s, opts)
}

// Redact returns raw with any user information (user:password@) removed,
// and any query replaced by REDACTED (an Azure URL's query is a SAS
// token), for logs and the mount table.
func Redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil && u.RawQuery == "" {
		return raw
	}
	u.User = nil
	if u.RawQuery != "" {
		u.RawQuery = "REDACTED"
	}
	return u.String()
}
