package icechunk

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/nczarrfs/nczarrfs/zmap"
)

// ErrNotAllowed is wrapped by the error of a virtual chunk whose location
// no --virtual-chunks prefix allows.
var ErrNotAllowed = errors.New("virtual chunk location not allowed")

// ErrChanged is wrapped by the error of a virtual chunk whose object no
// longer matches the reference's checksum (ETag or last-modified time).
var ErrChanged = errors.New("virtual chunk's object changed since it was referenced")

// Allowed reports whether location starts with one of prefixes; a
// prefix's trailing slash is optional ("s3://b/" allows "s3://b/x" and
// "s3://b" does too, but not "s3://bb/x").
func Allowed(prefixes []string, location string) bool {
	for _, p := range prefixes {
		p = strings.TrimSuffix(p, "/")
		if p == "" {
			continue
		}
		rest, ok := strings.CutPrefix(location, p)
		if ok && (rest == "" || rest[0] == '/' || strings.HasSuffix(p, "://")) {
			return true
		}
	}
	return false
}

// container is the prefix a user would allow for location: its scheme
// and bucket (or host), with a trailing slash.
func container(location string) string {
	scheme, rest, ok := strings.Cut(location, "://")
	if !ok {
		return location
	}
	host, _, _ := strings.Cut(rest, "/")
	return scheme + "://" + host + "/"
}

// virtual returns the store and key of a virtual chunk's object, once
// its location is allowed and its checksum holds.
func (r *Repository) virtual(ctx context.Context, ref ChunkRef) (zmap.Store, string, error) {
	if !Allowed(r.opts.Virtual, ref.Location) {
		c := container(ref.Location)
		r.mu.Lock()
		first := !r.warned[c]
		r.warned[c] = true
		r.mu.Unlock()
		if first {
			r.log.Error("icechunk: virtual chunks from " + c + " are not allowed; allow them with --virtual-chunks " + c)
		}
		return nil, "", fmt.Errorf("%s: %w (allow with --virtual-chunks %s)", ref.Location, ErrNotAllowed, c)
	}
	if r.opts.Opener == nil {
		return nil, "", fmt.Errorf("%s: %w: no opener for virtual chunks", ref.Location, ErrNotAllowed)
	}
	st, key, err := r.opts.Opener.Open(ctx, ref.Location)
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", ref.Location, err)
	}
	if ref.ETag == "" && ref.LastModified.IsZero() {
		return st, key, nil
	}
	check := ref.Location + "\x00" + ref.ETag + "\x00" + ref.LastModified.String()
	_, err = get(ctx, &r.mu, r.checks, check, func() (struct{}, error) {
		e, err := st.Stat(ctx, key)
		if err != nil {
			return struct{}{}, fmt.Errorf("%s: %w", ref.Location, err)
		}
		if ref.ETag != "" && strings.Trim(e.ETag, `"`) != strings.Trim(ref.ETag, `"`) {
			return struct{}{}, fmt.Errorf("%s: %w: ETag %q, referenced %q", ref.Location, ErrChanged, e.ETag, ref.ETag)
		}
		if !ref.LastModified.IsZero() && e.ModTime.After(ref.LastModified) {
			return struct{}{}, fmt.Errorf("%s: %w: modified %s, after %s", ref.Location, ErrChanged, e.ModTime, ref.LastModified)
		}
		return struct{}{}, nil
	})
	if err != nil {
		return nil, "", err
	}
	return st, key, nil
}
