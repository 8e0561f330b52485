package main

import (
	"errors"
	"io"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nczarrfs/nczarrfs/zmap/listcache"
)

func TestNormalizeArgs(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want []string // nil: an error is expected
		err  string   // substring of the error
	}{
		{"flags first", []string{"nczarrfs", "mount", "--debug", "--cache-size", "1MiB", "s", "m"},
			[]string{"nczarrfs", "mount", "--debug", "--cache-size", "1MiB", "s", "m"}, ""},
		{"flags after arguments", []string{"nczarrfs", "mount", "s", "m", "--cache-size", "1MiB", "--debug"},
			[]string{"nczarrfs", "mount", "--cache-size", "1MiB", "--debug", "s", "m"}, ""},
		{"flags between arguments", []string{"nczarrfs", "mount", "s", "--uid=5", "m", "-debug"},
			[]string{"nczarrfs", "mount", "--uid=5", "-debug", "s", "m"}, ""},
		{"value that looks like an argument", []string{"nczarrfs", "mount", "s", "--log-file", "m", "x"},
			[]string{"nczarrfs", "mount", "--log-file", "m", "s", "x"}, ""},
		{"double dash", []string{"nczarrfs", "mount", "--debug", "--", "-s", "m"},
			[]string{"nczarrfs", "mount", "--debug", "--", "-s", "m"}, ""},
		{"unknown flag kept for the parser", []string{"nczarrfs", "mount", "s", "m", "--bogus"},
			[]string{"nczarrfs", "mount", "--bogus", "s", "m"}, ""},
		{"global flag", []string{"nczarrfs", "--version"}, []string{"nczarrfs", "--version"}, ""},
		{"help command", []string{"nczarrfs", "help", "mount"}, []string{"nczarrfs", "help", "mount"}, ""},
		{"completion request untouched", []string{"nczarrfs", "mount", "s", "--generate-bash-completion"},
			[]string{"nczarrfs", "mount", "s", "--generate-bash-completion"}, ""},
		{"helper form", []string{"nczarrfs", "/d/x.zip", "/mnt", "-o", "ro,cache_size=1GiB,allow_other,uid=7,x-systemd.automount,_netdev"},
			[]string{"nczarrfs", "mount", "--daemon", "--mount-helper", "--cache-size=1GiB", "--allow-other", "--uid=7", "--", "/d/x.zip", "/mnt"}, ""},
		{"helper metrics address", []string{"nczarrfs", "/d/x.zip", "/mnt", "-o", "ro,metrics_addr=127.0.0.1:9100"},
			[]string{"nczarrfs", "mount", "--daemon", "--mount-helper", "--metrics-addr=127.0.0.1:9100", "--", "/d/x.zip", "/mnt"}, ""},
		{"helper page cache", []string{"nczarrfs", "/d/x.zip", "/mnt", "-o", "ro,page_cache"},
			[]string{"nczarrfs", "mount", "--daemon", "--mount-helper", "--page-cache", "--", "/d/x.zip", "/mnt"}, ""},
		{"helper form without options", []string{"nczarrfs", "/d/x.zip", "/mnt"},
			[]string{"nczarrfs", "mount", "--daemon", "--mount-helper", "--", "/d/x.zip", "/mnt"}, ""},
		{"helper program name", []string{"/sbin/mount.fuse.nczarrfs", "/d/x.zip", "/mnt", "-n", "-s", "-v", "-orw,debug", "-t", "fuse.nczarrfs"},
			[]string{"/sbin/mount.fuse.nczarrfs", "mount", "--daemon", "--mount-helper", "--debug", "--", "/d/x.zip", "/mnt"}, ""},
		{"helper unknown option", []string{"nczarrfs", "s", "/", "-o", "cache_sise=1"}, nil, `unknown mount option "cache_sise=1"`},
		{"helper option missing value", []string{"mount.fuse.nczarrfs", "s", "m", "-o", "uid"}, nil, "needs a value"},
		{"helper bool with value", []string{"mount.fuse.nczarrfs", "s", "m", "-o", "debug=1"}, nil, "takes no value"},
		{"helper argument count", []string{"mount.fuse.nczarrfs", "s"}, nil, "need SOURCE and MOUNTPOINT"},
		{"unknown command", []string{"nczarrfs", "moutn", "a", "b", "c"}, nil, `unknown command "moutn"`},
		{"unknown command alone", []string{"nczarrfs", "moutn"}, nil, `unknown command "moutn"`},
		{"unknown command, two arguments", []string{"nczarrfs", "moutn", "s", "/nonexistent/m"}, nil, `unknown command "moutn"`},
		{"unknown command, one argument", []string{"nczarrfs", "moutn", "/nonexistent/m"}, nil, `unknown command "moutn"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := normalizeArgs(newApp(io.Discard, io.Discard), tt.args)
			if tt.want == nil {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("normalizeArgs(%q) = %q, %v; want an error with %q", tt.args, got, err, tt.err)
				}
				return
			}
			if err != nil || !slices.Equal(got, tt.want) {
				t.Fatalf("normalizeArgs(%q) =\n %q, %v; want\n %q", tt.args, got, err, tt.want)
			}
		})
	}
}

func TestHelperFake(t *testing.T) {
	_, err := normalizeArgs(newApp(io.Discard, io.Discard), []string{"mount.fuse.nczarrfs", "s", "m", "-f", "-o", "ro"})
	if !errors.Is(err, errFake) {
		t.Fatalf("mount -f: %v, want errFake", err)
	}
}

func TestParseSize(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"268435456", 268435456, true},
		{"256MiB", 256 << 20, true},
		{"256M", 256 << 20, true},
		{" 1 GiB ", 1 << 30, true},
		{"4KiB", 4096, true},
		{"0", 0, true},
		{"-1", 0, false},
		{"lots", 0, false},
		{"1.5GiB", 0, false},
		{"9999999TiB", 0, false},
		{"", 0, false},
	}
	for _, tt := range tests {
		got, err := parseSize(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("parseSize(%q) = %d, %v; want %d, ok %v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

func TestParseUmaskAndID(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want uint32
		ok   bool
	}{{"022", 0o22, true}, {"0027", 0o27, true}, {"777", 0o777, true}, {"1000", 0, false}, {"8", 0, false}, {"-1", 0, false}, {"", 0, false}} {
		got, err := parseUmask(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("parseUmask(%q) = %o, %v; want %o, ok %v", tt.in, got, err, tt.want, tt.ok)
		}
	}
	lookup := func(name string) (string, error) {
		if name == "alice" {
			return "1001", nil
		}
		return "", errors.New("no such name")
	}
	for _, tt := range []struct {
		in   string
		want uint32
		ok   bool
	}{{"0", 0, true}, {"1000", 1000, true}, {"alice", 1001, true}, {"bob", 0, false}, {"4294967295", 0, false}, {"-1", 0, false}, {"", 0, false}, {"12x", 0, false}} {
		got, err := parseID(tt.in, lookup)
		if (err == nil) != tt.ok || (err == nil && *got != tt.want) {
			t.Errorf("parseID(%q) = %v, %v; want %d, ok %v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

func FuzzNormalizeArgs(f *testing.F) {
	f.Add("mount s m --cache-size 1MiB")
	f.Add("s m -o ro,uid=1,cache_size=2")
	f.Add("mount -- -x m --debug")
	f.Fuzz(func(t *testing.T, line string) {
		args := append([]string{"nczarrfs"}, strings.Fields(line)...)
		out, err := normalizeArgs(newApp(io.Discard, io.Discard), args)
		if err != nil {
			return
		}
		// Reordering keeps every word (helper options are translated).
		if len(args) > 1 && args[1] == "mount" && len(out) < len(args) {
			t.Fatalf("normalizeArgs(%q) lost words: %q", args, out)
		}
	})
}

// TestHelpExamples: every command's help ends with examples of its use.
func TestHelpExamples(t *testing.T) {
	examples := regexp.MustCompile(`(?s)\nExamples?:\n.*\bnczarrfs `)
	for _, c := range commands() {
		if !examples.MatchString(c.Description) {
			t.Errorf("nczarrfs help %s has no examples", c.Name)
		}
	}
}

func TestParseTTL(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"5m", 5 * time.Minute, true},
		{"0", 0, true},
		{"1h30m", 90 * time.Minute, true},
		{"forever", listcache.Forever, true},
		{"-1s", 0, false},
		{"never", 0, false},
		{"", 0, false},
	}
	for _, tt := range tests {
		got, err := parseTTL(tt.in)
		if (err == nil) != tt.ok || (tt.ok && got != tt.want) {
			t.Errorf("parseTTL(%q) = %v, %v; want %v, ok %v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}
