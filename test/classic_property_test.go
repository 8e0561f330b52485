package test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestClassicProperty checks dataset.nc against the properties
// (test/fixtures/classic_property.py check) for hand-made hostile groups
// (wide attributes, NaN, null and v3 fills, names netCDF forbids, a
// corrupt last chunk followed by a good variable) and random groups that
// the script generates from a seed (NCZARRFS_PROPERTY_SEED, else the
// time; the log names it): every variable equals its `data` or fails
// where `data` fails, attributes equal their JSON values, names are
// legal, CDF-2 unless a variable needs CDF-5, scipy reads every CDF-2
// file, and ncdump | ncgen | ncdump round-trips. One mount per tree.
func TestClassicProperty(t *testing.T) {
	requireTools(t, "ncdump", "ncgen")
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(root, "test", "fixtures", "classic_property.py")
	seed := time.Now().UnixNano() % 1000000
	if s := os.Getenv("NCZARRFS_PROPERTY_SEED"); s != "" {
		if seed, err = strconv.ParseInt(s, 10, 64); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("seed %d (NCZARRFS_PROPERTY_SEED=%d repeats it)", seed, seed)
	dir := t.TempDir()
	run(t, python, script, "gen", dir, strconv.FormatInt(seed, 10), "6")
	for _, tree := range []string{"v2", "v3"} {
		t.Run(tree, func(t *testing.T) {
			src := filepath.Join(dir, tree)
			d := startDaemon(t, src)
			out, err := exec.Command(python, script, "check", src, d.mnt).CombinedOutput()
			if err != nil {
				t.Errorf("seed %d: %v\n%s", seed, err, clip(string(out)))
			} else if !strings.HasPrefix(string(out), "checks ") {
				t.Errorf("check printed %q", out)
			} else {
				t.Log(strings.TrimSpace(string(out)))
			}
			if tree == "v2" && !strings.Contains(d.output.String(), "a_bad/2.0") {
				t.Errorf("no log line names the corrupt chunk a_bad/2.0:\n%s", clip(d.output.String()))
			}
		})
	}
}
