package test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestSynthesizedFilesFromTheCommand mounts the bundled sample with the
// nczarrfs command: header.cdl is ncdump -h's, first line included (the
// command names the dataset after SOURCE), and .nczarrfs/stats counts the
// store's requests and the cache's chunks. fusefs tests every synthesized
// file in detail.
func TestSynthesizedFilesFromTheCommand(t *testing.T) {
	sample, err := filepath.Abs("../examples/sample.zip")
	if err != nil {
		t.Fatal(err)
	}
	mnt := mount(t, sample)

	// Debian's netcdf-c reads no zip: give ncdump the unzipped tree.
	dir := t.TempDir()
	unzip := `import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])`
	if out, err := exec.Command("/usr/bin/python3", "-c", unzip, sample, dir).CombinedOutput(); err != nil {
		t.Fatalf("unzip: %v\n%s", err, out)
	}
	want, err := exec.Command("ncdump", "-h", "file://"+filepath.Join(dir, "sample.file")+"#mode=nczarr,file").Output()
	if err != nil {
		t.Fatalf("ncdump -h: %v", err)
	}
	got, err := os.ReadFile(filepath.Join(mnt, "header.cdl"))
	if err != nil || string(got) != string(want) {
		t.Errorf("header.cdl (%v):\n%s\nncdump -h:\n%s", err, got, want)
	}

	type counters struct {
		Store *struct {
			Objects int64 `json:"objects"`
			Bytes   int64 `json:"bytes"`
		} `json:"store"`
		Cache *struct {
			Misses       int64 `json:"misses"`
			DecodedBytes int64 `json:"decoded_bytes"`
		} `json:"cache"`
	}
	readStats := func() counters {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(mnt, ".nczarrfs", "stats"))
		if err != nil {
			t.Fatal(err)
		}
		var c counters
		if err := json.Unmarshal(b, &c); err != nil || c.Store == nil || c.Cache == nil {
			t.Fatalf("stats: %v, no store or cache counters in\n%s", err, b)
		}
		return c
	}
	before := readStats()
	data, err := os.ReadFile(filepath.Join(mnt, "temperature", "data"))
	if err != nil {
		t.Fatal(err)
	}
	after := readStats()
	if after.Store.Objects <= before.Store.Objects || after.Store.Bytes <= before.Store.Bytes ||
		after.Cache.Misses <= before.Cache.Misses || after.Cache.DecodedBytes-before.Cache.DecodedBytes < int64(len(data)) {
		t.Errorf("a read of temperature/data (%d bytes) moved the counters from %+v %+v to %+v %+v",
			len(data), *before.Store, *before.Cache, *after.Store, *after.Cache)
	}
}
