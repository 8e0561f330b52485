package main

import (
	"flag"
	"slices"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/nczarrfs/nczarrfs/zmap/source"
)

// TestIcechunkOptionFlags: the -o forms of the Icechunk flags.
func TestIcechunkOptionFlags(t *testing.T) {
	got, err := mountOptionFlags([]string{"branch=dev", "tag=it works!", "snapshot=1CECHNKREP0F1RSTCMT0", "virtual_chunks=s3://b/=http://127.0.0.1:9000"})
	want := []string{"--branch=dev", "--tag=it works!", "--snapshot=1CECHNKREP0F1RSTCMT0", "--virtual-chunks=s3://b/=http://127.0.0.1:9000"}
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("got %q, %v; want %q", got, err, want)
	}
}

// TestIcechunkOptions checks the flags' values: at most one version, a
// snapshot id in canonical form, URL prefixes and http(s) endpoints.
func TestIcechunkOptions(t *testing.T) {
	for _, c := range []struct {
		args    []string
		virtual []string
		err     string
	}{
		{args: nil},
		{args: []string{"--branch", "dev"}},
		{args: []string{"--branch", "dev", "--tag", "v1"}, err: "at most one"},
		{args: []string{"--snapshot", "1CECHNKREP0F1RSTCMT0"}},
		{args: []string{"--snapshot", "1cechnkrep0f1rstcmt0"}, err: "--snapshot"},
		{args: []string{"--virtual-chunks", "s3://a/", "--virtual-chunks", "s3://b=http://h:9000"}, virtual: []string{"s3://a/", "s3://b"}},
		{args: []string{"--virtual-chunks", "bucket"}, err: "URL prefix"},
		{args: []string{"--virtual-chunks", "s3://b=ftp://h"}, err: "is not an http(s)://host URL"},
	} {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		for _, f := range icechunkFlags() {
			if err := f.Apply(fs); err != nil {
				t.Fatal(err)
			}
		}
		if err := fs.Parse(c.args); err != nil {
			t.Fatal(err)
		}
		var opts source.Options
		err := icechunkOptions(cli.NewContext(cli.NewApp(), fs, nil), &opts, nil)
		switch {
		case c.err == "" && err != nil:
			t.Errorf("%q: %v", c.args, err)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%q: %v, want an error with %q", c.args, err, c.err)
		case c.err == "" && !slices.Equal(opts.Icechunk.Virtual, c.virtual):
			t.Errorf("%q: virtual %q, want %q", c.args, opts.Icechunk.Virtual, c.virtual)
		}
	}
}
