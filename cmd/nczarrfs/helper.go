package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
)

// The mount helper form. mount(8) runs /sbin/mount.fuse.nczarrfs (a link
// to nczarrfs that make install creates) as
//
//	mount.fuse.nczarrfs SOURCE MOUNTPOINT [-sfnv] [-o OPTIONS] [-t TYPE]
//
// and mount.fuse3, when that link is missing, runs "nczarrfs SOURCE
// MOUNTPOINT -o OPTIONS" from PATH. Either must return once the mount is
// up, so the form runs "nczarrfs mount --daemon".

// errFake is returned for mount -f ("fake"): do nothing, succeed.
var errFake = errors.New("fake mount")

// looksLikeHelper reports whether args (after the program name) are the
// helper form: two positional arguments and only helper options.
// The mountpoint must exist, as mount(8) checks before it runs a helper,
// so that "nczarrfs moutn x" stays a mistyped command.
func looksLikeHelper(args []string) bool {
	positional, _, err := splitHelperArgs(args)
	return err == nil && !isMissing(positional[1])
}

// isMissing reports whether path does not exist.
func isMissing(path string) bool {
	_, err := os.Lstat(path)
	return errors.Is(err, fs.ErrNotExist)
}

// helperArgs turns the helper form into "nczarrfs mount --daemon ...".
func helperArgs(prog string, args []string) ([]string, error) {
	positional, opts, err := splitHelperArgs(args)
	if err != nil {
		return nil, fmt.Errorf("%w; usage: %s SOURCE MOUNTPOINT [-o opt1,opt2=value]", err, prog)
	}
	out := []string{prog, "mount", "--daemon", "--mount-helper"}
	for _, o := range opts {
		if o == "-f" {
			return nil, errFake
		}
	}
	flags, err := mountOptionFlags(opts)
	if err != nil {
		return nil, err
	}
	out = append(out, flags...)
	return append(append(out, "--"), positional...), nil
}

// splitHelperArgs separates the helper form's positional arguments from
// its options: the -o values (each may hold several, comma-separated),
// and -f when given. -n, -s, -v and -t TYPE are accepted and ignored.
func splitHelperArgs(args []string) (positional, opts []string, err error) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-o":
			if i+1 == len(args) {
				return nil, nil, errors.New("-o needs a value")
			}
			i++
			opts = append(opts, splitOptions(args[i])...)
		case strings.HasPrefix(a, "-o"):
			opts = append(opts, splitOptions(a[2:])...)
		case a == "-t":
			i++ // the type, fuse.nczarrfs: known already
		case a == "-f":
			opts = append(opts, "-f")
		case a == "-n", a == "-s", a == "-v":
		case strings.HasPrefix(a, "-") && a != "-":
			return nil, nil, fmt.Errorf("unknown option %s", a)
		default:
			positional = append(positional, a)
		}
	}
	if len(positional) != 2 {
		return nil, nil, fmt.Errorf("need SOURCE and MOUNTPOINT, got %d arguments", len(positional))
	}
	return positional, opts, nil
}

func splitOptions(s string) []string {
	var out []string
	for _, o := range strings.Split(s, ",") {
		if o = strings.TrimSpace(o); o != "" {
			out = append(out, o)
		}
	}
	return out
}

// ignoredOptions are the generic options mount(8) and fstab pass to every
// helper; they mean nothing to a read-only FUSE mount.
var ignoredOptions = map[string]bool{
	"ro": true, "rw": true, "defaults": true, "auto": true, "noauto": true,
	"user": true, "nouser": true, "users": true, "owner": true, "group": true,
	"_netdev": true, "nofail": true, "dev": true, "nodev": true, "suid": true,
	"nosuid": true, "exec": true, "noexec": true, "async": true, "sync": true,
	"dirsync": true, "atime": true, "noatime": true, "relatime": true,
	"norelatime": true, "strictatime": true, "nostrictatime": true,
	"diratime": true, "nodiratime": true, "lazytime": true, "nolazytime": true,
	"silent": true, "loud": true, "mand": true, "nomand": true,
	"iversion": true, "noiversion": true, "default_permissions": true,
}

// ignoredPrefixes mark options for other programs (systemd, mount) and
// the FUSE names mount.fuse3 may add.
var ignoredPrefixes = []string{"x-", "comment=", "fsname=", "subtype=", "helper="}

// optionFlags maps each -o option nczarrfs understands to its mount flag
// and whether that flag takes a value.
var optionFlags = map[string]struct {
	flag  string
	value bool
}{
	"allow_other":     {"allow-other", false},
	"debug":           {"debug", false},
	"page_cache":      {"page-cache", false},
	"allow_non_empty": {"allow-non-empty", false},
	"nonempty":        {"allow-non-empty", false},
	"no_sign_request": {"no-sign-request", false},
	"follow_links":    {"follow-links", false},
	"cache_size":      {"cache-size", true},
	"uid":             {"uid", true},
	"gid":             {"gid", true},
	"umask":           {"umask", true},
	"endpoint_url":    {"endpoint-url", true},
	"region":          {"region", true},
	"profile":         {"profile", true},
	"timeout":         {"timeout", true},
	"s3_timeout":      {"s3-timeout", true},
	"metadata_ttl":    {"metadata-ttl", true},
	"log_file":        {"log-file", true},
	"log_format":      {"log-format", true},
	"metrics_addr":    {"metrics-addr", true},
	"branch":          {"branch", true},
	"tag":             {"tag", true},
	"snapshot":        {"snapshot", true},
	"virtual_chunks":  {"virtual-chunks", true},
	// Kerchunk reference sets (docs/stores.md).
	"references_endpoint":    {"references-endpoint", true},
	"allow_local_references": {"allow-local-references", false},

	// The bounds on the objects read (docs/codecs.md).
	"max_object_size":   {"max-object-size", true},
	"max_metadata_size": {"max-metadata-size", true},
}

// mountOptionFlags turns -o options into mount flags. An option it does
// not know is an error, so that a typo in fstab does not go unnoticed.
func mountOptionFlags(opts []string) ([]string, error) {
	var flags []string
	for _, o := range opts {
		name, value, hasValue := strings.Cut(o, "=")
		if ignoredOptions[name] && !hasValue || hasAnyPrefix(o, ignoredPrefixes) {
			continue
		}
		f, ok := optionFlags[name]
		switch {
		case !ok:
			return nil, fmt.Errorf("unknown mount option %q", o)
		case f.value && !hasValue:
			return nil, fmt.Errorf("mount option %s needs a value (%s=...)", name, name)
		case !f.value && hasValue:
			return nil, fmt.Errorf("mount option %s takes no value", name)
		case f.value:
			flags = append(flags, "--"+f.flag+"="+value)
		default:
			flags = append(flags, "--"+f.flag)
		}
	}
	return flags, nil
}

func hasAnyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}
