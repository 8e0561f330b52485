package csi

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/nczarrfs/nczarrfs/zmap/source"
)

// recordingMounter keeps the mounts it is asked for and makes none: the
// unit tests check what reaches a mount, the end-to-end tests
// (test/csi_inline_test.go) that it mounts.
type recordingMounter struct {
	mu   sync.Mutex
	reqs []MountRequest
}

func (m *recordingMounter) Mount(_ context.Context, r MountRequest) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.reqs = append(m.reqs, r)
	return nil
}

func (m *recordingMounter) taken() []MountRequest {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := m.reqs
	m.reqs = nil
	return out
}

// optionsAsFlags stands for the mount helper's parser of -o options: each
// option becomes the flag of its name (follow_links is --follow-links),
// as the real parser does for every option it knows.
func optionsAsFlags(opts []string) ([]string, error) {
	var out []string
	for _, o := range opts {
		name, value, ok := strings.Cut(o, "=")
		flag := "--" + strings.ReplaceAll(name, "_", "-")
		if ok {
			flag += "=" + value
		}
		out = append(out, flag)
	}
	return out, nil
}

// pluginEnv is a plugin's environment holding credentials of every kind
// a node has.
var pluginEnv = []string{
	"PATH=/usr/bin", "HOME=/root",
	"AWS_ACCESS_KEY_ID=plugin-key", "AWS_SECRET_ACCESS_KEY=plugin-secret", "AWS_PROFILE=node",
	"AWS_WEB_IDENTITY_TOKEN_FILE=/var/run/secrets/token", "AWS_ROLE_ARN=arn:aws:iam::1:role/node",
	"AWS_CONTAINER_CREDENTIALS_FULL_URI=http://169.254.170.2/creds", "AWS_ENDPOINT_URL=http://10.0.0.1:9000",
	"AZURE_STORAGE_KEY=plugin-azure", "AZURE_CLIENT_SECRET=sp", "GOOGLE_APPLICATION_CREDENTIALS=/etc/gcp.json",
}

func newTestDriver(t *testing.T, trust bool) (*Driver, *recordingMounter) {
	t.Helper()
	m := &recordingMounter{}
	d, err := New(Options{NodeID: "n", StateDir: t.TempDir(), Mounter: m, OptionFlags: optionsAsFlags, Env: pluginEnv, TrustInline: trust})
	if err != nil {
		t.Fatal(err)
	}
	return d, m
}

func inlineReq(target string, attrs, secrets map[string]string, capFlags ...string) *csi.NodePublishVolumeRequest {
	return &csi.NodePublishVolumeRequest{
		VolumeId:   "csi-0123",
		TargetPath: target,
		VolumeCapability: &csi.VolumeCapability{
			AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{MountFlags: capFlags}},
			AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_SINGLE_NODE_READER_ONLY},
		},
		VolumeContext: attrs,
		Secrets:       secrets,
	}
}

// TestInlineRefusals publishes each volume three ways: inline with the
// plugin untrusting (refused with PermissionDenied naming the flag, and
// nothing mounted or recorded, when refuse is set), inline with
// --trust-inline-volumes, and as a PersistentVolume (both mounted as
// asked). An untrusted inline volume that is mounted gets none of the
// plugin's credentials, and is anonymous without secrets.
func TestInlineRefusals(t *testing.T) {
	keys := map[string]string{"AWS_ACCESS_KEY_ID": "AKIDVOL", "AWS_SECRET_ACCESS_KEY": "volume-secret"}
	for _, c := range []struct {
		name     string
		attrs    map[string]string
		secrets  map[string]string
		capFlags []string
		refuse   string // the refusal's words; "" when served
	}{
		{"s3", map[string]string{"source": "s3://bucket/run42"}, nil, nil, ""},
		{"s3 with keys", map[string]string{"source": "s3://bucket/run42", "region": "eu-west-1"}, keys, nil, ""},
		{"MinIO endpoint", map[string]string{"source": "http://127.0.0.1:9000/bucket/run42#mode=zarr,s3", "noSignRequest": "true"}, nil, nil, ""},
		{"endpointURL", map[string]string{"source": "s3://bucket/run42", "endpointURL": "https://minio.example:9000"}, nil, nil, ""},
		{"gcs", map[string]string{"source": "gs://bucket/run42"}, nil, nil, ""},
		{"azure", map[string]string{"source": "az://container/run42"}, map[string]string{"AZURE_STORAGE_ACCOUNT": "acct", "AZURE_STORAGE_KEY": "a2V5"}, nil, ""},
		{"azure URL with SAS", map[string]string{"source": "https://acct.blob.core.windows.net/data/run42?sv=1&sig=x"}, nil, nil, ""},
		{"web server", map[string]string{"source": "https://data.example/run42#mode=zarr,http"}, nil, nil, ""},
		{"allowed attributes", map[string]string{"source": "s3://b/k", "metadataTTL": "forever", "cacheSize": "64MiB", "csi.storage.k8s.io/pod.name": "p"}, nil, nil, ""},
		{"allowed options", map[string]string{"source": "s3://b/k", "mountOptions": "uid=1000,gid=1000,umask=022,page_cache,timeout=20s,metadata_ttl=1m"}, nil, nil, ""},
		{"remote virtual chunks", map[string]string{"source": "s3://b/k", "mountOptions": "virtual_chunks=s3://other/=https://s3.example"}, nil, nil, ""},
		{"session token", map[string]string{"source": "s3://b/k"}, map[string]string{"AWS_ACCESS_KEY_ID": "AKIDVOL", "AWS_SECRET_ACCESS_KEY": "volume-secret", "AWS_SESSION_TOKEN": "tok"}, nil, ""},

		{"node path", map[string]string{"source": "/var/lib/data/x.zip"}, nil, nil, "is a path of the node"},
		{"relative path", map[string]string{"source": "data/x"}, nil, nil, "is a path of the node"},
		{"node root", map[string]string{"source": "/"}, nil, nil, "is a path of the node"},
		{"file URL", map[string]string{"source": "file:///etc/x#mode=nczarr,file"}, nil, nil, "is a path of the node"},
		{"zip URL", map[string]string{"source": "file:///var/lib/x.zip#mode=zarr,zip"}, nil, nil, "is a path of the node"},
		{"file URL with keys", map[string]string{"source": "file:///srv/x"}, keys, nil, "is a path of the node"},
		{"awsprofile", map[string]string{"source": "s3://bucket/run42#mode=zarr,s3&awsprofile=admin"}, nil, nil, "names an AWS profile"},
		{"cacheDir", map[string]string{"source": "s3://b/k", "cacheDir": "/home"}, nil, nil, "attribute cacheDir is for PersistentVolumes only"},
		{"cacheDirSize", map[string]string{"source": "s3://b/k", "cacheDirSize": "1MiB"}, nil, nil, "attribute cacheDirSize is for PersistentVolumes only"},
		{"cache_dir option", map[string]string{"source": "s3://b/k", "mountOptions": "cache_dir=/etc"}, nil, nil, "mount option cache_dir is for PersistentVolumes only"},
		{"cache_dir capability flag", map[string]string{"source": "s3://b/k"}, nil, []string{"cache_dir=/etc"}, "mount option cache_dir is for PersistentVolumes only"},
		{"profile option", map[string]string{"source": "s3://b/k", "mountOptions": "profile=admin"}, nil, nil, "mount option profile is for PersistentVolumes only"},
		{"follow_links", map[string]string{"source": "s3://b/k", "mountOptions": "follow_links"}, nil, nil, "mount option follow_links is for PersistentVolumes only"},
		{"debug", map[string]string{"source": "s3://b/k", "mountOptions": "debug"}, nil, nil, "mount option debug is for PersistentVolumes only"},
		{"a flag not judged", map[string]string{"source": "s3://b/k", "mountOptions": "max_object_size=1TiB"}, nil, nil, "mount option max_object_size is for PersistentVolumes only"},
		{"local references", map[string]string{"source": "s3://b/k", "mountOptions": "allow_local_references"}, nil, nil, "mount option allow_local_references is for PersistentVolumes only"},
		{"local virtual chunks", map[string]string{"source": "s3://b/k", "mountOptions": "virtual_chunks=file:///etc/"}, nil, nil, "virtual_chunks"},
		{"virtual chunks to a file endpoint", map[string]string{"source": "s3://b/k", "mountOptions": "virtual_chunks=s3://o/=file:///etc"}, nil, nil, "virtual_chunks"},
		{"file endpoint", map[string]string{"source": "s3://b/k", "endpointURL": "file:///etc"}, nil, nil, "endpoint_url"},
		{"shared credentials file", map[string]string{"source": "s3://b/k"}, map[string]string{"AWS_SHARED_CREDENTIALS_FILE": "/root/.aws/credentials"}, nil, "secret key AWS_SHARED_CREDENTIALS_FILE"},
		{"config file", map[string]string{"source": "s3://b/k"}, map[string]string{"AWS_CONFIG_FILE": "/root/.aws/config"}, nil, "secret key AWS_CONFIG_FILE"},
		{"web identity", map[string]string{"source": "s3://b/k"}, map[string]string{"AWS_ROLE_ARN": "arn:aws:iam::1:role/admin", "AWS_WEB_IDENTITY_TOKEN_FILE": "/var/run/secrets/eks/token"}, nil, "secret key AWS_ROLE_ARN"},
		{"container credentials", map[string]string{"source": "s3://b/k"}, map[string]string{"AWS_CONTAINER_CREDENTIALS_FULL_URI": "http://169.254.170.2/v2/credentials"}, nil, "secret key AWS_CONTAINER_CREDENTIALS_FULL_URI"},
		{"profile secret", map[string]string{"source": "s3://b/k"}, map[string]string{"AWS_PROFILE": "admin"}, nil, "secret key AWS_PROFILE"},
		{"metadata service back on", map[string]string{"source": "s3://b/k"}, map[string]string{"AWS_EC2_METADATA_DISABLED": "false"}, nil, "secret key AWS_EC2_METADATA_DISABLED"},
		{"CA bundle", map[string]string{"source": "s3://b/k"}, map[string]string{"AWS_CA_BUNDLE": "/etc/shadow"}, nil, "secret key AWS_CA_BUNDLE"},
	} {
		for _, mode := range []string{"untrusted", "trusted", "persistent"} {
			t.Run(c.name+"/"+mode, func(t *testing.T) {
				d, m := newTestDriver(t, mode == "trusted")
				attrs := map[string]string{}
				for k, v := range c.attrs {
					attrs[k] = v
				}
				if mode != "persistent" {
					attrs[attrEphemeral] = "true"
				}
				target := filepath.Join(t.TempDir(), "mount")
				_, err := node{d: d}.NodePublishVolume(context.Background(), inlineReq(target, attrs, c.secrets, c.capFlags...))
				reqs := m.taken()
				if mode == "untrusted" && c.refuse != "" {
					st := status.Convert(err)
					if st.Code() != codes.PermissionDenied || !strings.Contains(st.Message(), c.refuse) || !strings.Contains(st.Message(), "--trust-inline-volumes") {
						t.Fatalf("%v %q; want PermissionDenied with %q naming --trust-inline-volumes", st.Code(), st.Message(), c.refuse)
					}
					for _, v := range c.secrets {
						if strings.Contains(st.Message(), v) {
							t.Errorf("the refusal shows a secret's value: %q", st.Message())
						}
					}
					if len(reqs) != 0 {
						t.Errorf("a refused volume was mounted: %+v", reqs)
					}
					if left, _ := os.ReadDir(filepath.Join(d.opts.StateDir, "volumes")); len(left) != 0 {
						t.Errorf("a refused volume left records: %v", left)
					}
					return
				}
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if len(reqs) != 1 {
					t.Fatalf("%d mounts, want 1", len(reqs))
				}
				checkDaemonCredentials(t, reqs[0], mode == "untrusted", c.secrets)
			})
		}
	}
}

// checkDaemonCredentials checks where a daemon's credentials come from:
// a confined one has none of the plugin's and no shared files nor
// metadata service, and is anonymous without secrets; any other keeps the
// plugin's unless it has secrets.
func checkDaemonCredentials(t *testing.T, r MountRequest, confined bool, secrets map[string]string) {
	t.Helper()
	env := map[string]string{}
	for _, kv := range r.Env {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v // the last wins, as in exec.Cmd
	}
	for k, v := range secrets {
		if env[k] != v {
			t.Errorf("the daemon's %s is %q, want the secret's", k, env[k])
		}
	}
	anonymous := slices.Contains(r.Flags, "--no-sign-request")
	if !confined {
		if len(secrets) == 0 && env["AWS_ACCESS_KEY_ID"] != "plugin-key" {
			t.Errorf("a trusted volume without secrets lost the plugin's credentials: %q", r.Env)
		}
		return
	}
	for k, v := range env {
		if (strings.HasPrefix(k, "AWS_") || strings.HasPrefix(k, "AZURE_") || strings.HasPrefix(k, "GOOGLE_")) && secrets[k] != v {
			switch k + "=" + v {
			case "AWS_CONFIG_FILE=/dev/null", "AWS_SHARED_CREDENTIALS_FILE=/dev/null", "AWS_EC2_METADATA_DISABLED=true":
			default:
				t.Errorf("a confined daemon has %s=%s, not from its secrets", k, v)
			}
		}
	}
	for _, want := range []string{"AWS_CONFIG_FILE=/dev/null", "AWS_SHARED_CREDENTIALS_FILE=/dev/null", "AWS_EC2_METADATA_DISABLED=true"} {
		k, v, _ := strings.Cut(want, "=")
		if env[k] != v {
			t.Errorf("a confined daemon's %s is %q, want %q", k, env[k], v)
		}
	}
	if env["PATH"] != "/usr/bin" || env["HOME"] != "/root" {
		t.Errorf("a confined daemon lost the plugin's other variables: %q", r.Env)
	}
	if len(secrets) == 0 && !anonymous {
		t.Errorf("a confined volume without secrets is not anonymous: flags %q", r.Flags)
	}
}

// TestInlineEphemeralValues: kubelet writes "true" or "false"; any casing
// counts. Without it (a CSIDriver without podInfoOnMount), an id of the
// form kubelet gives inline volumes is inline.
func TestInlineEphemeralValues(t *testing.T) {
	const handle = "csi-0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0"
	for _, c := range []struct {
		id    string
		value string // "-": no attribute
		want  bool
	}{
		{"v", "true", true}, {"v", "True", true}, {"v", " TRUE ", true},
		{"v", "false", false}, {"v", "", false}, {"v", "1", false}, {"v", "-", false},
		{handle, "-", true}, {handle, "false", false},
		{handle[:len(handle)-1], "-", false}, {strings.ToUpper(handle), "-", false}, {"x" + handle, "-", false},
	} {
		attrs := map[string]string{}
		if c.value != "-" {
			attrs[attrEphemeral] = c.value
		}
		if got := isInline(c.id, attrs); got != c.want {
			t.Errorf("isInline(%q, ephemeral=%q) = %v, want %v", c.id, c.value, got, c.want)
		}
	}
}

// TestNodeCache: the plugin's --cache-dir is every volume's that names
// none of its own, inline volumes' too; a PersistentVolume's own wins.
func TestNodeCache(t *testing.T) {
	m := &recordingMounter{}
	d, err := New(Options{NodeID: "n", StateDir: t.TempDir(), Mounter: m, OptionFlags: optionsAsFlags, Env: pluginEnv, CacheDir: "/var/cache/nczarrfs", CacheDirSize: "20GiB"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		attrs map[string]string
		want  []string
	}{
		{map[string]string{"source": "s3://b/k", attrEphemeral: "true"}, []string{"--no-sign-request", "--cache-dir=/var/cache/nczarrfs", "--cache-dir-size=20GiB"}},
		{map[string]string{"source": "s3://b/k"}, []string{"--cache-dir=/var/cache/nczarrfs", "--cache-dir-size=20GiB"}},
		{map[string]string{"source": "s3://b/k", "cacheDir": "/srv/cache"}, []string{"--cache-dir=/srv/cache"}},
		{map[string]string{"source": "s3://b/k", "cacheDir": "/srv/cache", "cacheDirSize": "1GiB"}, []string{"--cache-dir=/srv/cache", "--cache-dir-size=1GiB"}},
	} {
		target := filepath.Join(t.TempDir(), "mount")
		if _, err := (node{d: d}).NodePublishVolume(context.Background(), inlineReq(target, c.attrs, nil)); err != nil {
			t.Fatal(err)
		}
		reqs := m.taken()
		if len(reqs) != 1 || !slices.Equal(reqs[0].Flags, c.want) {
			t.Errorf("%q: mounts %+v, want one with flags %q", c.attrs, reqs, c.want)
		}
	}
}

func TestConfinedEnv(t *testing.T) {
	got := confinedEnv(pluginEnv, []string{"AWS_ACCESS_KEY_ID=vol", "AWS_SECRET_ACCESS_KEY=vs"})
	want := []string{"PATH=/usr/bin", "HOME=/root", "AWS_ACCESS_KEY_ID=vol", "AWS_SECRET_ACCESS_KEY=vs",
		"AWS_CONFIG_FILE=/dev/null", "AWS_SHARED_CREDENTIALS_FILE=/dev/null", "AWS_EC2_METADATA_DISABLED=true"}
	if !slices.Equal(got, want) {
		t.Errorf("confinedEnv = %q, want %q", got, want)
	}
}

// TestSecretsDigest: a record tells the secrets it was made with from
// others, and keeps none of them.
func TestSecretsDigest(t *testing.T) {
	a := []string{"AWS_ACCESS_KEY_ID=AKID", "AWS_SECRET_ACCESS_KEY=one"}
	b := []string{"AWS_ACCESS_KEY_ID=AKID", "AWS_SECRET_ACCESS_KEY=two"}
	var r, o record
	if err := r.setSecrets(a); err != nil {
		t.Fatal(err)
	}
	if err := o.setSecrets(a); err != nil {
		t.Fatal(err)
	}
	switch {
	case !r.sameSecrets(a):
		t.Error("the same secrets differ")
	case r.sameSecrets(b), r.sameSecrets(nil), r.sameSecrets(a[:1]):
		t.Error("other secrets are the same")
	case r.SecretsSHA256 == o.SecretsSHA256:
		t.Error("two records of the same secrets have one digest: no salt")
	case strings.Contains(r.SecretsSHA256+r.SecretsSalt, "one"):
		t.Error("the record holds a secret")
	}
	// A record of an earlier plugin, with no digest.
	old := record{Secrets: true}
	if old.sameSecrets(a) || !(record{}).sameSecrets(nil) || (record{}).sameSecrets(a) {
		t.Error("records without a digest")
	}
}

// FuzzCheckInline: whatever an untrusted pod author writes, an inline
// volume the checks accept reads a remote store, has only allowed flags
// and secrets, and a refusal is PermissionDenied or InvalidArgument.
func FuzzCheckInline(f *testing.F) {
	f.Add("s3://b/k", "region", "r", "page_cache", "AWS_ACCESS_KEY_ID")
	f.Add("/data/x.zip", "cacheDir", "/", "follow_links", "AWS_SHARED_CREDENTIALS_FILE")
	f.Add("file:///x#mode=zip", "endpointURL", "file:///", "virtual_chunks=s3://a/=http://h", "AZURE_STORAGE_KEY")
	f.Add("s3://b/k#awsprofile=p", "mountOptions", "cache_dir=/x", "log_file=/x", "AWS_PROFILE")
	f.Fuzz(func(t *testing.T, src, k, v, mountOptions, secretKey string) {
		attrs := map[string]string{attrSource: src, k: v, attrEphemeral: "true"}
		if mountOptions != "" {
			attrs[attrMountOptions] = mountOptions
		}
		secrets := map[string]string{secretKey: "value"}
		s, flags, err := parseAttributes(attrs, nil, optionsAsFlags)
		if err == nil {
			_, _, err = parseSecrets(secrets)
		}
		if err == nil {
			err = checkInline(attrs, s, flags, secrets)
		}
		if err != nil {
			if !errors.Is(err, errDenied) && !errors.Is(err, errInvalid) {
				t.Fatalf("error %v is neither PermissionDenied nor InvalidArgument", err)
			}
			if errors.Is(err, errDenied) && !strings.Contains(err.Error(), trustFlag) {
				t.Fatalf("refusal %v does not name %s", err, trustFlag)
			}
			return
		}
		parsed, perr := source.Parse(s)
		if perr != nil || parsed.Path != "" || parsed.S3.Profile != "" ||
			parsed.Storage != source.S3 && parsed.Storage != source.HTTP && parsed.Storage != source.Azure {
			t.Fatalf("accepted source %q: %+v %v", s, parsed, perr)
		}
		for a := range attrs {
			if a == "cacheDir" || a == "cacheDirSize" {
				t.Fatalf("accepted attribute %s", a)
			}
		}
		for _, fl := range flags {
			name, value, _ := strings.Cut(fl, "=")
			if _, ok := inlineFlags[strings.TrimPrefix(name, "--")]; !ok || !strings.HasPrefix(name, "--") {
				t.Fatalf("accepted flag %q", fl)
			}
			if name == "--endpoint-url" || name == "--virtual-chunks" || name == "--references-endpoint" {
				for _, part := range strings.Split(value, "=") {
					if p := strings.ToLower(strings.TrimSpace(part)); !strings.HasPrefix(p, "http") && !strings.HasPrefix(p, "s3:") &&
						!strings.HasPrefix(p, "gs") && !strings.HasPrefix(p, "az:") && !strings.HasPrefix(p, "abfs") {
						t.Fatalf("accepted %q: %q is not remote", fl, part)
					}
				}
			}
		}
		if !slices.Contains(inlineSecrets, secretKey) {
			t.Fatalf("accepted secret key %q", secretKey)
		}
	})
}
