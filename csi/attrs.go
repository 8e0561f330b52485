package csi

import (
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// Volume attributes (a PersistentVolume's volumeAttributes, or an inline
// volume's volumeAttributes) name the dataset and how to mount it. Each
// becomes a flag of "nczarrfs mount"; mountOptions takes the -o options of
// the mount helper form (fstab's), for everything else.
const (
	attrSource       = "source"
	attrMountOptions = "mountOptions"
	attrNoSign       = "noSignRequest"
)

// attributeFlags maps the attributes that take a value to their mount
// flags.
var attributeFlags = map[string]string{
	"metadataTTL":  "metadata-ttl",
	"cacheSize":    "cache-size",
	"cacheDir":     "cache-dir",
	"cacheDirSize": "cache-dir-size",
	"endpointURL":  "endpoint-url",
	"region":       "region",
}

// Attributes lists every volume attribute the plugin takes, sorted.
func Attributes() []string {
	names := []string{attrSource, attrMountOptions, attrNoSign}
	for a := range attributeFlags {
		names = append(names, a)
	}
	sort.Strings(names)
	return names
}

// kubeletPrefix starts the attributes kubelet adds itself
// (podInfoOnMount's pod name, namespace, uid and service account, and
// whether the volume is ephemeral): they are not the dataset's.
const kubeletPrefix = "csi.storage.k8s.io/"

// pluginFlags are the mount flags the plugin sets itself for every
// volume; a volume's options may not set them.
var pluginFlags = []string{"--log-file", "--metrics-addr", "--daemon", "--log-format"}

// volumeSpec is what a NodePublishVolume brings beyond its record: its
// secrets, which are never recorded.
type volumeSpec struct {
	env    []string // KEY=VALUE of the secrets
	values []string // the secrets' values, kept out of messages
}

// errInvalid marks a request that can never succeed as it is
// (InvalidArgument).
var errInvalid = errors.New("invalid argument")

func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{errInvalid}, args...)...)
}

// parseAttributes turns a volume's attributes, and the mount flags of its
// volume capability (a PersistentVolume's spec.mountOptions), into the
// source and the flags of its mount. optionFlags is the mount helper's
// parser of -o options.
func parseAttributes(attrs map[string]string, capFlags []string, optionFlags func([]string) ([]string, error)) (string, []string, error) {
	src := strings.TrimSpace(attrs[attrSource])
	if src == "" {
		return "", nil, invalidf("volume attribute %q is missing: it names the dataset (a path, s3://bucket/key or an NCZarr URL)", attrSource)
	}
	var flags, opts []string
	keys := make([]string, 0, len(attrs))
	for k := range attrs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := attrs[k]
		switch {
		case k == attrSource || strings.HasPrefix(k, kubeletPrefix):
		case k == attrMountOptions:
			opts = append(opts, splitOptions(v)...)
		case k == attrNoSign:
			switch strings.ToLower(strings.TrimSpace(v)) {
			case "true", "yes", "1":
				flags = append(flags, "--no-sign-request")
			case "false", "no", "0", "":
			default:
				return "", nil, invalidf("volume attribute %s: %q is not true or false", k, v)
			}
		case attributeFlags[k] != "":
			if strings.TrimSpace(v) == "" {
				return "", nil, invalidf("volume attribute %s is empty", k)
			}
			flags = append(flags, "--"+attributeFlags[k]+"="+strings.TrimSpace(v))
		default:
			return "", nil, invalidf("unknown volume attribute %q (known: %s)", k, strings.Join(Attributes(), ", "))
		}
	}
	for _, f := range capFlags {
		opts = append(opts, splitOptions(f)...)
	}
	if len(opts) > 0 {
		if optionFlags == nil {
			return "", nil, invalidf("mount options are not supported")
		}
		more, err := optionFlags(opts)
		if err != nil {
			return "", nil, invalidf("%s: %v", attrMountOptions, err)
		}
		flags = append(flags, more...)
	}
	for _, f := range flags {
		name, _, _ := strings.Cut(f, "=")
		for _, p := range pluginFlags {
			if name == p {
				return "", nil, invalidf("%s: %s is set by the CSI plugin, not by a volume", attrMountOptions, strings.TrimPrefix(p, "--"))
			}
		}
	}
	return src, flags, nil
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

// secretName is the form of the secrets a volume may have: the variables
// of a store's credentials.
var secretName = regexp.MustCompile(`^(AWS|AZURE_STORAGE)_[A-Z0-9_]+$`)

// credentialVars are the variables of the plugin's own environment that
// name credentials: a volume with secrets of its own does not inherit
// them, so that its credentials are not mixed with the plugin's.
var credentialVars = []string{
	"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE",
	"AWS_ROLE_ARN", "AWS_ROLE_SESSION_NAME", "AWS_WEB_IDENTITY_TOKEN_FILE",
	"AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
	"AWS_CONTAINER_AUTHORIZATION_TOKEN", "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE",
}

// parseSecrets checks the publish secrets and returns them as environment
// entries, and their values (to keep out of messages). Messages name keys,
// never values.
func parseSecrets(secrets map[string]string) (env, values []string, err error) {
	keys := make([]string, 0, len(secrets))
	for k := range secrets {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := secrets[k]
		if !secretName.MatchString(k) {
			return nil, nil, invalidf("secret key %q is not a credential variable (AWS_* or AZURE_STORAGE_*)", k)
		}
		if strings.ContainsRune(v, 0) {
			return nil, nil, invalidf("secret %s holds a NUL byte", k)
		}
		env = append(env, k+"="+v)
		if len(v) >= 4 {
			values = append(values, v)
		}
	}
	return env, values, nil
}

// daemonEnv is the environment of a volume's mount daemon: the plugin's,
// without its credentials when the volume brings its own, and the
// volume's secrets.
func daemonEnv(base, secrets []string) []string {
	env := make([]string, 0, len(base)+len(secrets))
	for _, kv := range base {
		name, _, _ := strings.Cut(kv, "=")
		if len(secrets) > 0 && isCredentialVar(name) {
			continue
		}
		env = append(env, kv)
	}
	return append(env, secrets...)
}

func isCredentialVar(name string) bool {
	for _, c := range credentialVars {
		if name == c {
			return true
		}
	}
	return strings.HasPrefix(name, "AZURE_STORAGE_")
}

// scrub replaces every secret value in msg.
func scrub(msg string, values []string) string {
	for _, v := range values {
		msg = strings.ReplaceAll(msg, v, "[secret]")
	}
	return msg
}
