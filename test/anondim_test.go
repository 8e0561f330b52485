package test

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestAnonymousDimensionName writes, with zarr-python 2, an array without
// _ARRAY_DIMENSIONS and checks that header.cdl (nczarrfs header), info.json
// (nczarrfs info) and nczarrfs ls all name its dimensions as ncdump -h
// (netcdf-c) does.
func TestAnonymousDimensionName(t *testing.T) {
	src := filepath.Join(t.TempDir(), "anon.zarr")
	gen := `import sys, numpy as np, zarr
g = zarr.open_group(sys.argv[1], mode="w")
g.create_dataset("a", data=np.arange(48, dtype="<i4").reshape(16, 3), chunks=(4, 3))`
	if out, err := exec.Command(python, "-c", gen, src).CombinedOutput(); err != nil {
		t.Fatalf("zarr-python: %v\n%s", err, out)
	}
	ncdump, err := exec.Command("ncdump", "-h", "file://"+src+"#mode=zarr,file").Output()
	if err != nil {
		t.Fatalf("ncdump -h: %v", err)
	}
	m := regexp.MustCompile(`int a\(([^)]*)\)`).FindSubmatch(ncdump)
	if m == nil {
		t.Fatalf("ncdump -h declares no int a(...):\n%s", ncdump)
	}
	want := strings.Split(string(m[1]), ", ")

	header, stderr, code := runBinary(t, nil, "header", src)
	if code != 0 || withoutFirstLine([]byte(header)) != withoutFirstLine(ncdump) {
		t.Errorf("nczarrfs header (exit %d, %s):\n%s\nncdump -h:\n%s", code, stderr, header, ncdump)
	}
	info, stderr, code := runBinary(t, nil, "info", src, "a")
	var doc struct {
		Dimensions []struct {
			Name string `json:"name"`
		} `json:"dimensions"`
	}
	if code != 0 || json.Unmarshal([]byte(info), &doc) != nil {
		t.Fatalf("nczarrfs info (exit %d, %s):\n%s", code, stderr, info)
	}
	var got []string
	for _, d := range doc.Dimensions {
		got = append(got, d.Name)
	}
	if !slices.Equal(got, want) {
		t.Errorf("info.json dimensions %q, ncdump %q", got, want)
	}
	ls, stderr, code := runBinary(t, nil, "ls", src)
	if code != 0 || !strings.Contains(ls, strings.Join(want, ", ")) {
		t.Errorf("nczarrfs ls (exit %d, %s):\n%s\nwant the dimensions %q", code, stderr, ls, want)
	}
}
