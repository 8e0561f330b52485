package main

import (
	"flag"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/nczarrfs/nczarrfs/zmap"
)

// TestParseBounds reads --max-object-size and --max-metadata-size as the
// mount command gets them, and the -o forms of the mount helper.
func TestParseBounds(t *testing.T) {
	for _, tt := range []struct {
		args             []string
		object, metadata int64
		err              string
	}{
		{args: nil, metadata: zmap.DefaultMaxSize},
		{args: []string{"--max-object-size", "2GiB"}, object: 2 << 30, metadata: zmap.DefaultMaxSize},
		{args: []string{"--max-metadata-size=1MiB"}, metadata: 1 << 20},
		{args: []string{"--max-object-size", "lots"}, err: "--max-object-size"},
		{args: []string{"--max-metadata-size", "10"}, err: "too small"},
	} {
		set := flag.NewFlagSet("mount", flag.ContinueOnError)
		for _, f := range boundFlags() {
			if err := f.Apply(set); err != nil {
				t.Fatal(err)
			}
		}
		if err := set.Parse(tt.args); err != nil {
			t.Fatal(err)
		}
		b, err := parseBounds(cli.NewContext(cli.NewApp(), set, nil))
		switch {
		case tt.err != "":
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%v: %v; want an error saying %q", tt.args, err, tt.err)
			}
		case err != nil || b.object != tt.object || b.metadata != tt.metadata:
			t.Errorf("%v: %+v, %v; want object %d, metadata %d", tt.args, b, err, tt.object, tt.metadata)
		}
	}
	got, err := mountOptionFlags([]string{"max_object_size=1GiB", "max_metadata_size=8MiB"})
	if err != nil || strings.Join(got, " ") != "--max-object-size=1GiB --max-metadata-size=8MiB" {
		t.Errorf("mount options: %q, %v", got, err)
	}
}
