package testenv

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestRequire runs a test that requires a missing prerequisite in a child
// process, with and without RequireAllEnv, and checks that it skips with
// the reason, or fails.
func TestRequire(t *testing.T) {
	if os.Getenv("TESTENV_CHILD") != "" {
		Require(t, "a test prerequisite", errors.New("not installed here"))
		Require(t, "twice", nil) // not reached when the first one stops t
		return
	}
	for _, tc := range []struct {
		requireAll string
		wantFail   bool
		wantOut    string
	}{
		{"", false, "--- SKIP: TestRequire"},
		{"1", true, "--- FAIL: TestRequire"},
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestRequire$", "-test.v")
		cmd.Env = append(os.Environ(), "TESTENV_CHILD=1", RequireAllEnv+"="+tc.requireAll)
		out, err := cmd.CombinedOutput()
		if failed := err != nil; failed != tc.wantFail {
			t.Errorf("%s=%q: child failed = %v (%v), want %v\n%s", RequireAllEnv, tc.requireAll, failed, err, tc.wantFail, out)
		}
		for _, want := range []string{tc.wantOut, "needs a test prerequisite: not installed here"} {
			if !strings.Contains(string(out), want) {
				t.Errorf("%s=%q: output lacks %q:\n%s", RequireAllEnv, tc.requireAll, want, out)
			}
		}
	}
}

func TestRequireNil(t *testing.T) {
	Require(t, "nothing", nil)
	if t.Skipped() || t.Failed() {
		t.Error("Require with a nil error stopped the test")
	}
}

// TestHDF5Filter checks the probe against a filter id no plugin has and,
// with HDF5_PLUGIN_PATH pointing nowhere, against LZ4.
func TestHDF5Filter(t *testing.T) {
	Require(t, "h5py", exec.Command(Python, "-c", "import h5py").Run())
	if err := HDF5Filter(1); err != nil {
		t.Errorf("HDF5Filter(1), deflate, built into HDF5: %v", err)
	}
	if err := HDF5Filter(65000); err == nil || !strings.Contains(err.Error(), "not available") {
		t.Errorf("HDF5Filter(65000) = %v, want 'not available'", err)
	}
	t.Setenv("HDF5_PLUGIN_PATH", t.TempDir())
	if err := HDF5Filter(32004); err == nil {
		t.Error("HDF5Filter(32004) with an empty HDF5_PLUGIN_PATH succeeded")
	}
}
