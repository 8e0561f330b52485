package main

import (
	"strings"
	"testing"
)

// TestCheckMountArgs checks a volume's mount command line with the mount
// command's own parser, as the CSI plugin does before it mounts.
func TestCheckMountArgs(t *testing.T) {
	for _, c := range []struct {
		args []string
		err  string
	}{
		{[]string{"--", "/data/x.zip", "/mnt"}, ""},
		{[]string{"--cache-size=1GiB", "--metadata-ttl=forever", "--no-sign-request", "--region=r", "--", "s3://b/k", "/mnt"}, ""},
		{[]string{"--cache-dir=/c", "--cache-dir-size=2GiB", "--", "s3://b/k", "/mnt"}, ""},
		{[]string{"--cache-size=lots", "--", "/x", "/mnt"}, `--cache-size: "lots" is not a size`},
		{[]string{"--metadata-ttl=soon", "--", "/x", "/mnt"}, `--metadata-ttl: "soon" is not a duration`},
		{[]string{"--cache-dir=/c", "--cache-dir-size=1KiB", "--", "s3://b/k", "/mnt"}, "--cache-dir-size: 1KiB is too small"},
		{[]string{"--turbo", "--", "/x", "/mnt"}, "unknown option -turbo"},
		{[]string{"--", "ftp://host/x", "/mnt"}, "ftp"},
		{[]string{"--", "/x"}, "mount needs SOURCE and MOUNTPOINT"},
	} {
		err := checkMountArgs(c.args)
		if c.err == "" && err != nil || c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)) {
			t.Errorf("checkMountArgs(%q) = %v, want %q", c.args, err, c.err)
		}
	}
}
