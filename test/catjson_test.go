package test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestCatObjectArray checks that `nczarrfs cat` writes an array of
// variable-length strings (written by zarr-python) as the JSON that
// data.json holds, matching what zarr-python reads, and refuses --npy.
func TestCatObjectArray(t *testing.T) {
	bin := nczarrfsBinary(t)
	dir := t.TempDir()
	if out, err := exec.Command("/usr/bin/python3", "../nczarr/chunked/testdata/gen_vlen.py", dir).CombinedOutput(); err != nil {
		t.Fatalf("gen_vlen.py (needs python3-zarr, python3-xarray, python3-msgpack): %v\n%s", err, out)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "expected.json"))
	if err != nil {
		t.Fatal(err)
	}
	var expected map[string]any
	if err := json.Unmarshal(raw, &expected); err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(dir, "ds")
	for _, name := range []string{"str2", "bytes", "msgpack", "xr/name"} {
		var stdout, stderr bytes.Buffer
		cmd := exec.Command(bin, "cat", src, name)
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Errorf("cat %s: %v\n%s", name, err, stderr.String())
			continue
		}
		var got any
		if err := json.Unmarshal(stdout.Bytes(), &got); err != nil || !reflect.DeepEqual(got, expected[name]) {
			t.Errorf("cat %s: %v\n got %.200s\nwant %.200v", name, err, stdout.String(), expected[name])
		}
	}
	out, err := exec.Command(bin, "cat", "--npy", src, "str2").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "no .npy form") {
		t.Errorf("cat --npy of an object array: %v, %q; want a refusal", err, out)
	}
	out, err = exec.Command(bin, "cat", src, "corrupt").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "corrupt/1") {
		t.Errorf("cat of an object array with a corrupt chunk: %v, %q; want an error naming corrupt/1", err, out)
	}
}
