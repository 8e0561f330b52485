package csi

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/nczarrfs/nczarrfs/zmap/source"
)

// Inline volumes. An inline (ephemeral) volume is written in a pod's spec
// by whoever may create pods, not by the cluster's administrator; kubelet
// marks its NodePublishVolume with csi.storage.k8s.io/ephemeral: "true".
// Its mount daemon runs as root on the node, so, unless the plugin is told
// that every pod author is trusted (Options.TrustInline, the flag
// --trust-inline-volumes), an inline volume gets only what its pod may
// have:
//
//   - a remote source (S3, Google Cloud Storage, Azure, a web server),
//     never a path of the node (plain, file:// or a zip file's) nor an AWS
//     profile of the node's configuration;
//   - the attributes and mount options of inlineAttributes and
//     inlineFlags, an allow-list: cacheDir and cacheDirSize (the node's
//     disk), profiles, follow_links, log files and any flag a later
//     release adds are refused until judged safe;
//   - secrets of the keys in inlineSecrets only, which name credentials,
//     never a file or a service of the node;
//   - credentials from its secrets or none (anonymous requests): its
//     daemon's environment has none of the plugin's (confinedEnv).
//
// A refusal is PermissionDenied, before anything is mounted or recorded,
// and names the flag. PersistentVolumes, which the administrator writes,
// keep every attribute.

// attrEphemeral is the attribute kubelet sets on inline volumes.
const attrEphemeral = kubeletPrefix + "ephemeral"

// trustFlag is the plugin flag that lets inline volumes do what
// PersistentVolumes do.
const trustFlag = "--trust-inline-volumes"

// isInline reports whether the volume id with attrs is an inline one.
// kubelet says so in attrEphemeral ("true" or "false", overriding what
// the pod's spec wrote) when the CSIDriver has podInfoOnMount; without
// it, the volume id tells: kubelet names an inline volume csi- and the
// SHA-256 of its pod's uid and volume name, in hex.
func isInline(id string, attrs map[string]string) bool {
	if v, ok := attrs[attrEphemeral]; ok {
		return strings.EqualFold(strings.TrimSpace(v), "true")
	}
	return inlineHandle.MatchString(id)
}

// inlineHandle is the form of kubelet's ids of inline volumes.
var inlineHandle = regexp.MustCompile(`^csi-[0-9a-f]{64}$`)

// errDenied marks a request the plugin refuses to serve as it is
// (PermissionDenied).
var errDenied = errors.New("permission denied")

// deniedf is an inline volume's refusal: it says what to do instead.
func deniedf(format string, args ...any) error {
	return fmt.Errorf("%w: inline volume: "+format+" (an inline volume is written by whoever writes the pod, and its mount runs as root on the node; use a PersistentVolume, or start the plugin with %s if every pod author is trusted)",
		append(append([]any{errDenied}, args...), trustFlag)...)
}

// inlineAttributes are the volume attributes an inline volume may set
// (besides kubelet's own).
var inlineAttributes = []string{attrSource, attrMountOptions, attrNoSign, "metadataTTL", "cacheSize", "endpointURL", "region"}

// inlineFlags are the mount flags an inline volume may have, whichever
// attribute or option gave them, with a check of their value (nil: any
// value the mount command takes). A flag not here is refused.
var inlineFlags = map[string]func(string) error{
	"no-sign-request": nil,
	"metadata-ttl":    nil,
	"cache-size":      nil, // the daemon's memory, as the pod's own would be
	"endpoint-url":    remoteURL,
	"region":          nil,
	"timeout":         nil,
	"s3-timeout":      nil,
	"uid":             nil,
	"gid":             nil,
	"umask":           nil,
	"page-cache":      nil,
	"allow-non-empty": nil,
	"allow-other":     nil, // the plugin sets it anyway
	// Versions of an Icechunk repository, and remote places its virtual
	// chunks or a reference set's files may be read from: remote URLs
	// only (PREFIX or PREFIX=ENDPOINT_URL).
	"branch":              nil,
	"tag":                 nil,
	"snapshot":            nil,
	"virtual-chunks":      remotePrefix,
	"references-endpoint": remotePrefix,
}

// inlineSecrets are the secret keys an inline volume may have: keys,
// secrets and tokens, never a file (AWS_SHARED_CREDENTIALS_FILE,
// AWS_WEB_IDENTITY_TOKEN_FILE), a profile, a role to assume with the
// node's identity, or a service to fetch credentials from
// (AWS_CONTAINER_CREDENTIALS_FULL_URI, the instance metadata).
var inlineSecrets = []string{
	"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_REGION", "AWS_DEFAULT_REGION",
	"AZURE_STORAGE_ACCOUNT", "AZURE_STORAGE_KEY", "AZURE_STORAGE_SAS_TOKEN", "AZURE_STORAGE_CONNECTION_STRING",
}

// checkInline checks an inline volume that the plugin does not trust:
// its attributes, its source, the mount flags they gave, and its secrets'
// keys. Each refusal is errDenied.
func checkInline(attrs map[string]string, src string, flags []string, secrets map[string]string) error {
	for _, k := range sortedKeys(attrs) {
		if !strings.HasPrefix(k, kubeletPrefix) && !slices.Contains(inlineAttributes, k) {
			return deniedf("attribute %s is for PersistentVolumes only (an inline volume may set %s)", k, strings.Join(inlineAttributes, ", "))
		}
	}
	if err := remoteSource(src); err != nil {
		return err
	}
	for _, f := range flags {
		name, value, hasValue := strings.Cut(f, "=")
		check, ok := inlineFlags[strings.TrimPrefix(name, "--")]
		if !strings.HasPrefix(name, "--") || !ok {
			return deniedf("mount option %s is for PersistentVolumes only", optionName(name))
		}
		if check != nil && hasValue {
			if err := check(value); err != nil {
				return deniedf("mount option %s: %v", optionName(name), err)
			}
		}
	}
	for _, k := range sortedKeys(secrets) {
		if !slices.Contains(inlineSecrets, k) {
			return deniedf("secret key %s is for PersistentVolumes only (an inline volume's secrets may be %s)", k, strings.Join(inlineSecrets, ", "))
		}
	}
	return nil
}

// optionName is a mount flag as a volume names it: --cache-dir is
// cache_dir.
func optionName(flag string) string {
	return strings.ReplaceAll(strings.TrimLeft(flag, "-"), "-", "_")
}

// remoteSource refuses a source that names anything of the node: a path,
// a file:// URL (a folder or a zip file), or an AWS profile of the node's
// configuration.
func remoteSource(raw string) error {
	s, err := source.Parse(raw)
	if err != nil {
		return invalidf("%v", err)
	}
	switch {
	case s.Path != "" || (s.Storage != source.S3 && s.Storage != source.HTTP && s.Storage != source.Azure):
		return deniedf("source %q is a path of the node; an inline volume reads a remote store only (s3://, gs://, az://, http(s)://)", source.Redact(raw))
	case s.S3.Profile != "":
		return deniedf("source %q names an AWS profile of the node's configuration; give the volume credentials as secrets", source.Redact(raw))
	}
	return nil
}

// remoteURL refuses a URL that is not http(s)://HOST...: an endpoint is a
// service on the network, never a file of the node.
func remoteURL(v string) error {
	u, err := url.Parse(strings.TrimSpace(v))
	if err != nil {
		return fmt.Errorf("%q is not a URL", v)
	}
	if s := strings.ToLower(u.Scheme); s != "http" && s != "https" || u.Host == "" {
		return fmt.Errorf("%q is not an http(s) URL", v)
	}
	return nil
}

// remotePrefix checks PREFIX or PREFIX=ENDPOINT_URL: the prefix a remote
// store's (s3://, gs://, az://, abfs://, http(s)://), the endpoint an
// http(s) URL.
func remotePrefix(v string) error {
	prefix, endpoint, hasEndpoint := strings.Cut(v, "=")
	scheme, _, ok := strings.Cut(strings.TrimSpace(prefix), "://")
	switch strings.ToLower(scheme) {
	case "s3", "gs", "gs3", "az", "abfs", "abfss", "http", "https":
	default:
		ok = false
	}
	if !ok {
		return fmt.Errorf("%q is not the prefix of a remote store (s3://, gs://, az://, http(s)://)", prefix)
	}
	if hasEndpoint {
		return remoteURL(endpoint)
	}
	return nil
}

// credentialPrefixes start the variables of the plugin's environment that
// a confined daemon does not get: every AWS, Azure and Google setting may
// name credentials, a file holding them, or a service that hands them out.
var credentialPrefixes = []string{"AWS_", "AZURE_", "GOOGLE_"}

// confinedSettings come after the secrets in a confined daemon's
// environment: no shared config or credentials file (not the node's
// ~/.aws), no instance metadata service.
var confinedSettings = []string{
	"AWS_CONFIG_FILE=/dev/null",
	"AWS_SHARED_CREDENTIALS_FILE=/dev/null",
	"AWS_EC2_METADATA_DISABLED=true",
}

// confinedEnv is the environment of an untrusted inline volume's daemon:
// the plugin's without any AWS_*, AZURE_* or GOOGLE_* variable, the
// volume's secrets, and confinedSettings, which come last and so win.
func confinedEnv(base, secrets []string) []string {
	env := make([]string, 0, len(base)+len(secrets)+len(confinedSettings))
	for _, kv := range base {
		name, _, _ := strings.Cut(kv, "=")
		if !hasPrefix(name, credentialPrefixes) {
			env = append(env, kv)
		}
	}
	env = append(env, secrets...)
	return append(env, confinedSettings...)
}

func hasPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// sortedKeys returns m's keys, sorted: checks and messages go in one
// order whatever the map's.
func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
