package azure

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// Location is where a dataset lives in Azure Blob Storage, as its SOURCE
// URL says.
type Location struct {
	// Account is the storage account the URL names (the host of an
	// https://ACCOUNT.blob.core.windows.net URL, or of adlfs's
	// az://CONTAINER@ACCOUNT.dfs.core.windows.net form); "" when the URL
	// names none (az://CONTAINER/PATH): the credentials then say it.
	Account string
	// Container is the blob container.
	Container string
	// Prefix is the blob name prefix of the dataset root inside the
	// container, without leading or trailing slash; "" when the dataset
	// is the whole container.
	Prefix string
	// Endpoint is the blob service endpoint the URL names
	// (https://ACCOUNT.blob.core.windows.net); "" for az:// and abfs://,
	// whose endpoint comes from the account.
	Endpoint string
	// SAS is the URL's query, a shared access signature; "" when it has
	// none. It is a secret: String never shows it.
	SAS string
}

// String returns the location as an az:// URL, for messages. It never
// contains the SAS.
func (l Location) String() string {
	s := "az://" + l.Container
	if l.Account != "" {
		s = "az://" + l.Container + "@" + l.Account
	}
	if l.Prefix != "" {
		s += "/" + l.Prefix
	}
	return s
}

// blob returns the blob name of a store key, or the prefix itself for the
// root key "".
func (l Location) blob(k string) string {
	switch {
	case l.Prefix == "":
		return k
	case k == "":
		return l.Prefix
	}
	return l.Prefix + "/" + k
}

// IsURL reports whether u names Azure Blob Storage: its scheme is az,
// abfs or abfss (adlfs's forms), or it is an http(s) URL of a blob
// service host, ACCOUNT.blob.core.windows.net (or a national cloud's
// ACCOUNT.blob.core.<suffix>).
func IsURL(u *url.URL) bool {
	switch strings.ToLower(u.Scheme) {
	case "az", "abfs", "abfss":
		return true
	case "http", "https":
		_, ok := blobHostAccount(u.Hostname())
		return ok
	}
	return false
}

// blobHostAccount returns the account of a blob service host name
// ACCOUNT.blob.core.SUFFIX.
func blobHostAccount(host string) (string, bool) {
	labels := strings.Split(strings.ToLower(host), ".")
	if len(labels) < 5 || labels[1] != "blob" || labels[2] != "core" {
		return "", false
	}
	return labels[0], validAccount(labels[0])
}

// LocationOf reads the location of an Azure dataset from a parsed URL in
// one of these forms:
//
//	az://CONTAINER/PATH                                  (adlfs; also abfs://, abfss://)
//	az://CONTAINER@ACCOUNT.dfs.core.windows.net/PATH     (adlfs, with the account)
//	https://ACCOUNT.blob.core.windows.net/CONTAINER/PATH[?SAS]
//
// The fragment is not read here: it is the SOURCE's, and zmap/source
// parses it. Only the https form may carry a query, a shared access
// signature.
func LocationOf(u *url.URL) (Location, error) {
	var loc Location
	if u.Opaque != "" {
		return loc, fmt.Errorf("azure: URL %s:%s has no host (write %s://CONTAINER/PATH)", u.Scheme, u.Opaque, u.Scheme)
	}
	segs, err := pathSegments(u.Path)
	if err != nil {
		return loc, err
	}
	switch scheme := strings.ToLower(u.Scheme); scheme {
	case "az", "abfs", "abfss":
		if u.RawQuery != "" || u.ForceQuery {
			return loc, fmt.Errorf("azure: a %s:// URL has no query; give a SAS token in AZURE_STORAGE_SAS_TOKEN, or use https://ACCOUNT.blob.core.windows.net/CONTAINER/PATH?SAS", scheme)
		}
		if u.Port() != "" {
			return loc, fmt.Errorf("azure: %s:// URL has a port; for another endpoint use --endpoint-url", scheme)
		}
		loc.Container = u.Hostname()
		if u.User != nil {
			// CONTAINER@ACCOUNT.dfs.core.windows.net: the host is the
			// account's.
			if _, hasPassword := u.User.Password(); hasPassword {
				return loc, errors.New("azure: URL must not contain a password; give credentials through the environment")
			}
			account, _, _ := strings.Cut(strings.ToLower(u.Hostname()), ".")
			if !validAccount(account) {
				return loc, fmt.Errorf("azure: %q in host %s is not a storage account name", account, u.Hostname())
			}
			loc.Container, loc.Account = u.User.Username(), account
		}
	case "http", "https":
		account, ok := blobHostAccount(u.Hostname())
		if !ok {
			return loc, fmt.Errorf("azure: %s is not a blob service host (ACCOUNT.blob.core.windows.net)", u.Host)
		}
		if u.User != nil {
			return loc, errors.New("azure: URL must not contain user information; give credentials through the environment")
		}
		if len(segs) == 0 {
			return loc, fmt.Errorf("azure: URL has no container: the path of %s://%s starts with the container name", scheme, u.Host)
		}
		loc.Account, loc.Endpoint = account, scheme+"://"+strings.ToLower(u.Host)
		loc.Container, segs = segs[0], segs[1:]
		loc.SAS = u.RawQuery
	default:
		return loc, fmt.Errorf("azure: URL scheme %q is not az, abfs, abfss or https", u.Scheme)
	}
	if err := validContainer(loc.Container); err != nil {
		return loc, err
	}
	loc.Prefix = strings.Join(segs, "/")
	return loc, nil
}

// pathSegments splits a URL path into name segments, dropping the leading
// and trailing slash. Empty, "." and ".." segments are errors: a prefix
// with them would not name the blobs the user meant.
func pathSegments(p string) ([]string, error) {
	p = strings.Trim(p, "/")
	if p == "" {
		return nil, nil
	}
	segs := strings.Split(p, "/")
	for _, s := range segs {
		if s == "" || s == "." || s == ".." {
			return nil, fmt.Errorf("azure: URL path %q has an empty, . or .. segment", p)
		}
	}
	return segs, nil
}

// validAccount reports whether a is a storage account name: 3 to 24
// lower-case letters and digits.
func validAccount(a string) bool {
	if len(a) < 3 || len(a) > 24 {
		return false
	}
	for _, c := range a {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// validContainer checks a container name as the service does: 3 to 63
// lower-case letters, digits and single hyphens, starting and ending with
// a letter or digit ($root and $web are the service's own).
func validContainer(c string) error {
	if c == "$root" || c == "$web" {
		return nil
	}
	ok := len(c) >= 3 && len(c) <= 63 && c[0] != '-' && c[len(c)-1] != '-' && !strings.Contains(c, "--")
	for _, r := range c {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') {
			ok = false
		}
	}
	if !ok {
		if c == "" {
			return errors.New("azure: URL names no container")
		}
		return fmt.Errorf("azure: %q is not a container name (3 to 63 lower-case letters, digits and hyphens)", c)
	}
	return nil
}

// ParseURL parses raw and reads the location with LocationOf. It ignores
// the fragment: parse a SOURCE with zmap/source, which reads the fragment
// too.
func ParseURL(raw string) (Location, error) {
	u, err := url.Parse(raw)
	if err != nil {
		// url.Error quotes the whole URL, which may hold a SAS.
		return Location{}, fmt.Errorf("azure: invalid URL: %w", errors.Unwrap(err))
	}
	return LocationOf(u)
}
