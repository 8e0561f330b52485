package s3

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// Location is where a dataset lives in S3, as written in an NCZarr URL.
type Location struct {
	// Bucket is the bucket name.
	Bucket string
	// Prefix is the key prefix of the dataset root inside the bucket,
	// without leading or trailing slash; "" when the dataset is the whole
	// bucket.
	Prefix string
	// Endpoint is the base URL (scheme://host[:port]) of a custom S3
	// endpoint such as MinIO or Ceph. It is "" for Amazon S3, whose
	// endpoint the SDK derives from the region.
	Endpoint string
	// Region is the AWS region named by an Amazon S3 host name; "" when
	// the URL does not say.
	Region string
	// Profile is the AWS shared-config profile the SOURCE's fragment names
	// (awsprofile=NAME); zmap/source sets it, "" when none is named.
	Profile string
	// Insecure is true when the URL uses plain http rather than https.
	Insecure bool
	// Google is true for a bucket of Google Cloud Storage, read through
	// its XML API (gs://, gs3://, storage.googleapis.com): Endpoint is
	// GoogleEndpoint, requests are anonymous unless a profile is named,
	// and signed requests leave out the headers Google's front end
	// rewrites.
	Google bool
}

// GoogleEndpoint is the endpoint of Google Cloud Storage's XML API.
const GoogleEndpoint = "https://storage.googleapis.com"

// googleHost is the host name of GoogleEndpoint.
const googleHost = "storage.googleapis.com"

// String returns the location as an s3:// URL, for messages. It names the
// bucket and prefix only: never credentials.
func (l Location) String() string {
	return l.scheme() + "://" + l.Bucket + l.keyPath(l.Prefix)
}

// scheme is the URL scheme that names the location's service: gs or s3.
func (l Location) scheme() string {
	if l.Google {
		return "gs"
	}
	return "s3"
}

// keyPath is "/" and full, or "" for an empty full key.
func (l Location) keyPath(full string) string {
	if full == "" {
		return ""
	}
	return "/" + full
}

// key returns the full object key of a store key, or the prefix itself for
// the root key "".
func (l Location) key(k string) string {
	switch {
	case l.Prefix == "":
		return k
	case k == "":
		return l.Prefix
	}
	return l.Prefix + "/" + k
}

// ParseURL parses raw and reads the location with LocationOf. It ignores
// the fragment: parse a SOURCE with zmap/source, which reads the fragment
// too.
func ParseURL(raw string) (Location, error) {
	u, err := url.Parse(raw)
	if err != nil {
		// url.Error quotes the whole URL, which may hold a password.
		return Location{}, fmt.Errorf("s3: invalid URL: %w", errors.Unwrap(err))
	}
	return LocationOf(u)
}

// LocationOf reads the location of an S3 dataset from a parsed URL in one
// of the forms NCZarr accepts:
//
//	s3://bucket/key
//	https://s3.<region>.amazonaws.com/bucket/key      (AWS path style)
//	https://bucket.s3.<region>.amazonaws.com/key      (AWS virtual-host style)
//	http(s)://host[:port]/bucket/key                  (custom endpoint, path style)
//	gs://bucket/key, gs3://bucket/key                 (Google Cloud Storage)
//	https://storage.googleapis.com/bucket/key         (Google Cloud Storage, path style)
//	https://bucket.storage.googleapis.com/key         (Google Cloud Storage, virtual-host style)
//
// An s3:// URL whose host is an Amazon S3 host name
// (s3://s3.us-west-1.amazonaws.com/bucket) is read as the https form, as
// netcdf-c does. The legacy host forms s3.amazonaws.com, s3-<region> and
// s3.dualstack.<region> are accepted too. The fragment (such as
// #mode=nczarr,s3&awsprofile=NAME) is not read here: it is the SOURCE's,
// and zmap/source parses it.
//
// LocationOf rejects URLs carrying user information (credentials belong in
// the environment or ~/.aws, not in a URL that ends up in logs) or a query
// string, which no S3 dataset URL has.
func LocationOf(u *url.URL) (Location, error) {
	var loc Location
	scheme := strings.ToLower(u.Scheme)
	switch scheme {
	case "s3", "https":
	case "gs", "gs3":
		loc.Google = true
	case "http":
		loc.Insecure = true
	default:
		return Location{}, fmt.Errorf("s3: URL scheme %q is not s3, gs, gs3, http or https", u.Scheme)
	}
	if u.User != nil {
		return Location{}, errors.New("s3: URL must not contain user information; give credentials through the environment, ~/.aws or --profile")
	}
	if u.RawQuery != "" || u.ForceQuery {
		return Location{}, errors.New("s3: URL must not have a query string")
	}
	if u.Opaque != "" {
		return Location{}, fmt.Errorf("s3: URL %s:%s has no host (write %s://host/path)", u.Scheme, u.Opaque, u.Scheme)
	}
	segs, err := pathSegments(u.Path)
	if err != nil {
		return Location{}, err
	}
	host := strings.ToLower(u.Hostname())
	if host == "" {
		return Location{}, errors.New("s3: URL has no host (for s3:// the host is the bucket)")
	}

	switch {
	case isAWSHost(host):
		bucket, region, err := parseAWSHost(host)
		if err != nil {
			return Location{}, err
		}
		loc.Region = region
		if bucket == "" { // path style: the bucket is the first segment
			if len(segs) == 0 {
				return Location{}, fmt.Errorf("s3: URL has no bucket: the path of a path-style URL starts with the bucket name")
			}
			bucket, segs = segs[0], segs[1:]
		}
		loc.Bucket = bucket
	case host == googleHost || strings.HasSuffix(host, "."+googleHost):
		// Google's XML API, detected by host as netcdf-c does: path
		// style, or the bucket in the host name.
		loc.Google = true
		if bucket := strings.TrimSuffix(host, "."+googleHost); bucket != host {
			loc.Bucket = bucket
		} else {
			if len(segs) == 0 {
				return Location{}, fmt.Errorf("s3: URL has no bucket: the path of %s://%s/... starts with the bucket name", scheme, u.Host)
			}
			loc.Bucket, segs = segs[0], segs[1:]
		}
		if u.Port() != "" || scheme == "http" {
			return Location{}, fmt.Errorf("s3: %s is reached with https on its own port; for another endpoint use --endpoint-url", googleHost)
		}
	case scheme == "s3" || loc.Google:
		// s3://bucket/key: the host is the bucket, the endpoint is AWS's
		// (or --endpoint-url); gs://bucket/key the same in Google's.
		if u.Port() != "" {
			return Location{}, fmt.Errorf("s3: %s:// URL has a port; for a custom endpoint write http(s)://%s/bucket/... or use --endpoint-url", scheme, u.Host)
		}
		loc.Bucket = u.Hostname()
	default:
		// Any other host is a custom endpoint addressed in path style.
		if len(segs) == 0 {
			return Location{}, fmt.Errorf("s3: URL has no bucket: for endpoint %s://%s the path starts with the bucket name", scheme, u.Host)
		}
		loc.Endpoint = scheme + "://" + u.Host
		loc.Bucket, segs = segs[0], segs[1:]
	}
	loc.Prefix = strings.Join(segs, "/")
	if loc.Google {
		loc.Endpoint, loc.Insecure = GoogleEndpoint, false
	}
	return loc, nil
}

// pathSegments splits a URL path into key segments, dropping the leading
// and trailing slash. Empty, "." and ".." segments are errors: a key prefix
// with them would not name the objects the user meant.
func pathSegments(p string) ([]string, error) {
	p = strings.Trim(p, "/")
	if p == "" {
		return nil, nil
	}
	segs := strings.Split(p, "/")
	for _, s := range segs {
		if s == "" || s == "." || s == ".." {
			return nil, fmt.Errorf("s3: URL path %q has an empty, . or .. segment", p)
		}
	}
	return segs, nil
}

// awsSuffixes are the DNS suffixes of Amazon S3 endpoints.
var awsSuffixes = []string{".amazonaws.com", ".amazonaws.com.cn"}

func isAWSHost(host string) bool {
	for _, s := range awsSuffixes {
		if strings.HasSuffix(host, s) {
			return true
		}
	}
	return false
}

// parseAWSHost splits an Amazon S3 host name into the bucket (for a
// virtual-host name; "" for a path-style one) and the region ("" for the
// legacy global endpoint s3.amazonaws.com).
//
// The service label is the last label that is "s3" or starts with "s3-":
// bucket names may themselves contain such labels, region names never do.
func parseAWSHost(host string) (bucket, region string, err error) {
	name := host
	for _, s := range awsSuffixes {
		if strings.HasSuffix(host, s) {
			name = strings.TrimSuffix(host, s)
			break
		}
	}
	labels := strings.Split(name, ".")
	svc := -1
	for i, l := range labels {
		if l == "s3" || strings.HasPrefix(l, "s3-") {
			svc = i
		}
	}
	if svc < 0 {
		return "", "", fmt.Errorf("s3: %s is not an Amazon S3 host name (expected s3.<region>.amazonaws.com or <bucket>.s3.<region>.amazonaws.com)", host)
	}
	bucket = strings.Join(labels[:svc], ".")
	rest := labels[svc+1:]
	label := labels[svc]
	switch {
	case strings.HasPrefix(label, "s3-website") || strings.HasPrefix(label, "s3-accesspoint") ||
		strings.HasPrefix(label, "s3-control") || strings.HasPrefix(label, "s3-object-lambda"):
		return "", "", fmt.Errorf("s3: %s is not a plain S3 API endpoint; use s3.<region>.amazonaws.com", host)
	case label == "s3-external-1" && len(rest) == 0:
		region = "us-east-1"
	case label != "s3" && len(rest) == 0: // legacy s3-<region>
		region = strings.TrimPrefix(label, "s3-")
	case label == "s3" && len(rest) == 0:
		// Legacy global endpoint: the SDK's default region applies.
	case label == "s3" && len(rest) == 1:
		region = rest[0]
	case label == "s3" && len(rest) == 2 && rest[0] == "dualstack":
		region = rest[1]
	default:
		return "", "", fmt.Errorf("s3: cannot read the region from Amazon S3 host name %s", host)
	}
	if region != "" && !validRegion(region) {
		return "", "", fmt.Errorf("s3: %q in host name %s is not a region name", region, host)
	}
	return bucket, region, nil
}

// validRegion reports whether r looks like a region name (us-west-2,
// cn-north-1): lower-case letters, digits and hyphens.
func validRegion(r string) bool {
	for _, c := range r {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return r != "" && r[0] != '-' && r[len(r)-1] != '-'
}
