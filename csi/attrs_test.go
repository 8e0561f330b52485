package csi

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestParseAttributes(t *testing.T) {
	// options stands for the mount helper's parser (cmd/nczarrfs's
	// mountOptionFlags, tested with the plugin in test/csi_test.go): it
	// knows one option.
	options := func(opts []string) ([]string, error) {
		var out []string
		for _, o := range opts {
			if o != "allow_non_empty" {
				return nil, errors.New("unknown mount option " + o)
			}
			out = append(out, "--allow-non-empty")
		}
		return out, nil
	}
	for _, c := range []struct {
		name     string
		attrs    map[string]string
		capFlags []string
		flags    []string
		err      string
	}{
		{"source only", map[string]string{"source": "/data/x.zip"}, nil, nil, ""},
		{"every attribute", map[string]string{
			"source": "s3://b/k", "metadataTTL": "forever", "cacheSize": "1GiB", "cacheDir": "/cache", "cacheDirSize": "2GiB",
			"endpointURL": "http://127.0.0.1:9000", "region": "eu-west-1", "noSignRequest": "true", "mountOptions": "allow_non_empty",
		}, nil, []string{"--cache-dir=/cache", "--cache-dir-size=2GiB", "--cache-size=1GiB", "--endpoint-url=http://127.0.0.1:9000",
			"--metadata-ttl=forever", "--no-sign-request", "--region=eu-west-1", "--allow-non-empty"}, ""},
		{"kubelet's own", map[string]string{"source": "/x", "csi.storage.k8s.io/pod.name": "p", "csi.storage.k8s.io/ephemeral": "true"}, nil, nil, ""},
		{"noSignRequest false", map[string]string{"source": "/x", "noSignRequest": "false"}, nil, nil, ""},
		{"capability's mount flags", map[string]string{"source": "/x"}, []string{"allow_non_empty"}, []string{"--allow-non-empty"}, ""},
		{"no source", map[string]string{"region": "r"}, nil, nil, `volume attribute "source" is missing`},
		{"blank source", map[string]string{"source": " "}, nil, nil, `volume attribute "source" is missing`},
		{"unknown", map[string]string{"source": "/x", "Region": "r"}, nil, nil, `unknown volume attribute "Region" (known: cacheDir, `},
		{"empty value", map[string]string{"source": "/x", "region": ""}, nil, nil, "volume attribute region is empty"},
		{"bad boolean", map[string]string{"source": "/x", "noSignRequest": "y"}, nil, nil, `noSignRequest: "y" is not true or false`},
		{"bad option", map[string]string{"source": "/x", "mountOptions": "turbo"}, nil, nil, "mountOptions: unknown mount option turbo"},
	} {
		t.Run(c.name, func(t *testing.T) {
			src, flags, err := parseAttributes(c.attrs, c.capFlags, options)
			if c.err != "" {
				if !errors.Is(err, errInvalid) || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err = %v, want InvalidArgument with %q", err, c.err)
				}
				return
			}
			if err != nil || src != c.attrs["source"] || !slices.Equal(flags, c.flags) {
				t.Fatalf("= %q %q %v, want %q %q", src, flags, err, c.attrs["source"], c.flags)
			}
		})
	}
}

// TestPluginFlags: a volume's options cannot set what the plugin sets.
func TestPluginFlags(t *testing.T) {
	for _, flag := range pluginFlags {
		options := func([]string) ([]string, error) { return []string{flag + "=x"}, nil }
		_, _, err := parseAttributes(map[string]string{"source": "/x", "mountOptions": "o"}, nil, options)
		if !errors.Is(err, errInvalid) || !strings.Contains(err.Error(), "is set by the CSI plugin") {
			t.Errorf("%s from mountOptions: %v, want refused", flag, err)
		}
	}
	if _, _, err := parseAttributes(map[string]string{"source": "/x", "mountOptions": "o"}, nil, nil); !errors.Is(err, errInvalid) {
		t.Errorf("mountOptions without a parser: %v, want InvalidArgument", err)
	}
}

func TestParseSecrets(t *testing.T) {
	env, values, err := parseSecrets(map[string]string{"AWS_SECRET_ACCESS_KEY": "s3cr3t-value", "AWS_ACCESS_KEY_ID": "AKID", "AZURE_STORAGE_KEY": "k"})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"AWS_ACCESS_KEY_ID=AKID", "AWS_SECRET_ACCESS_KEY=s3cr3t-value", "AZURE_STORAGE_KEY=k"}; !slices.Equal(env, want) {
		t.Errorf("env = %q, want %q", env, want)
	}
	// Values under 4 bytes are not scrubbed: they would blank out
	// ordinary words of messages.
	if want := []string{"AKID", "s3cr3t-value"}; !slices.Equal(values, want) {
		t.Errorf("values = %q, want %q", values, want)
	}
	for _, bad := range []map[string]string{
		{"PASSWORD": "x"}, {"aws_access_key_id": "x"}, {"AWS_": "x"}, {"PATH": "/tmp"}, {"AWS_X": "a\x00b"},
	} {
		_, _, err := parseSecrets(bad)
		if !errors.Is(err, errInvalid) {
			t.Errorf("parseSecrets(%q) = %v, want InvalidArgument", bad, err)
		}
		for _, v := range bad {
			if strings.Contains(err.Error(), v) && len(v) > 1 {
				t.Errorf("the error %q shows the value %q", err, v)
			}
		}
	}
}

func TestDaemonEnv(t *testing.T) {
	base := []string{"PATH=/bin", "AWS_REGION=r", "AWS_ACCESS_KEY_ID=plugin", "AWS_PROFILE=p", "AZURE_STORAGE_KEY=plugin", "HOME=/root"}
	if got := daemonEnv(base, nil); !slices.Equal(got, base) {
		t.Errorf("no secrets: %q, want the plugin's environment %q", got, base)
	}
	got := daemonEnv(base, []string{"AWS_ACCESS_KEY_ID=vol", "AWS_SECRET_ACCESS_KEY=vs"})
	want := []string{"PATH=/bin", "AWS_REGION=r", "HOME=/root", "AWS_ACCESS_KEY_ID=vol", "AWS_SECRET_ACCESS_KEY=vs"}
	if !slices.Equal(got, want) {
		t.Errorf("with secrets: %q, want %q", got, want)
	}
}

func TestScrub(t *testing.T) {
	got := scrub("key AKIDXYZ and s3cr3t in s3cr3ts", []string{"AKIDXYZ", "s3cr3t"})
	if want := "key [secret] and [secret] in [secret]s"; got != want {
		t.Errorf("scrub = %q, want %q", got, want)
	}
}

// FuzzParseAttributes: any attributes give a clear refusal or a source and
// flags that set nothing the plugin sets itself.
func FuzzParseAttributes(f *testing.F) {
	f.Add("source", "/data/x.zip", "metadataTTL", "5m", "allow_other,page_cache")
	f.Add("source", "s3://b/k", "noSignRequest", "true", "metrics_addr=0.0.0.0:1")
	f.Add("cacheSize", "1GiB", "csi.storage.k8s.io/pod.name", "p", ",,")
	// options turns each option into the flag of its name, as the mount
	// helper's parser does for the options it knows.
	options := func(opts []string) ([]string, error) {
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
	f.Fuzz(func(t *testing.T, k1, v1, k2, v2, mountOptions string) {
		attrs := map[string]string{k1: v1, k2: v2, attrMountOptions: mountOptions}
		src, flags, err := parseAttributes(attrs, nil, options)
		if err != nil {
			if !errors.Is(err, errInvalid) {
				t.Fatalf("error %v is not InvalidArgument", err)
			}
			return
		}
		if strings.TrimSpace(src) == "" {
			t.Fatalf("no source from %q", attrs)
		}
		for _, fl := range flags {
			name, _, _ := strings.Cut(fl, "=")
			if !strings.HasPrefix(fl, "--") || slices.Contains(pluginFlags, name) {
				t.Fatalf("flag %q from %q", fl, attrs)
			}
		}
	})
}
