package fusefs

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/nczarrfs/nczarrfs/cache"
	"github.com/nczarrfs/nczarrfs/internal/stats"
	"github.com/nczarrfs/nczarrfs/nczarr"
	_ "github.com/nczarrfs/nczarrfs/nczarr/codec/all" // zlib
	"github.com/nczarrfs/nczarrfs/zmap"
	"github.com/nczarrfs/nczarrfs/zmap/file"
)

// synthFiles lists the files the mount adds to a dataset whose root is a
// group and whose arrays of fixed-size elements are at the given paths,
// besides each array's data; vrts are the arrays that also get data.vrt
// and preview.png. Of index.html and dataset.nc, only the root's are listed.
func synthFiles(arrays []string, vrts ...string) []string {
	files := []string{HeaderName, IndexName, ClassicName, ControlDir + "/" + ErrorsName, ControlDir + "/" + StatsName}
	for _, a := range arrays {
		files = append(files, a+"/"+NPYName, a+"/"+InfoName)
	}
	for _, a := range vrts {
		files = append(files, a+"/"+VRTName, a+"/"+PreviewName)
	}
	return files
}

// rootSynth lists the names the mount adds to the root directory, besides
// data, when the root is a 2-D numeric array.
func rootSynth() []string {
	return []string{NPYName, VRTName, PreviewName, InfoName, ControlDir}
}

// mountCounted mounts the dataset in store in-process, with its store
// requests and cache counted, and unmounts it when the test ends.
func mountCounted(t *testing.T, store zmap.Store) (string, *stats.Mount) {
	t.Helper()
	return mountWith(t, store, Options{FsName: "test"})
}

// mountWith is mountCounted with opts, whose Stats it sets.
func mountWith(t *testing.T, store zmap.Store, opts Options) (string, *stats.Mount) {
	t.Helper()
	counted := stats.CountStore(store)
	c := cache.New(1 << 20)
	ds, err := nczarr.Open(context.Background(), counted, nczarr.Options{Cache: c})
	if err != nil {
		t.Fatalf("open dataset: %v", err)
	}
	m := &stats.Mount{Source: "test", Store: counted, Cache: c}
	opts.Stats = m
	return mountDataset(t, ds, counted, opts), m
}

// zarrPython runs a zarr-python script with the argument dir.
func zarrPython(t *testing.T, dir, script string) {
	t.Helper()
	if out, err := exec.Command("/usr/bin/python3", "-c", script, dir).CombinedOutput(); err != nil {
		t.Fatalf("zarr-python: %v\n%s", err, out)
	}
}

// statSize is the size stat reports for name, asked of the mount: the
// kernel keeps even a live file's attributes for one clock tick, which a
// test that reads and stats in quick succession would otherwise see.
func statSize(t *testing.T, name string) int64 {
	t.Helper()
	var stx unix.Statx_t
	if err := unix.Statx(unix.AT_FDCWD, name, unix.AT_STATX_FORCE_SYNC, unix.STATX_SIZE, &stx); err != nil {
		t.Fatalf("statx %s: %v", name, err)
	}
	return int64(stx.Size)
}

// readStats reads .nczarrfs/stats, checks that stat reports its size,
// and decodes it.
func readStats(t *testing.T, mnt string) stats.Snapshot {
	t.Helper()
	name := filepath.Join(mnt, ControlDir, StatsName)
	size := statSize(t, name)
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	if size != int64(len(b)) {
		t.Errorf("stat says %d bytes, read %d:\n%s", size, len(b), b)
	}
	var s stats.Snapshot
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatalf("%v in\n%s", err, b)
	}
	if s.Store == nil || s.Cache == nil {
		t.Fatalf("no store or cache counters in\n%s", b)
	}
	return s
}

func TestStatsMoveAfterARead(t *testing.T) {
	store := openSample(t)
	mnt, _ := mountCounted(t, store)

	entries, err := os.ReadDir(filepath.Join(mnt, ControlDir))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if !slices.Equal(names, []string{ErrorsName, StatsName}) {
		t.Errorf("%s lists %v", ControlDir, names)
	}

	before := readStats(t, mnt)
	if _, err := os.ReadFile(filepath.Join(mnt, "temperature", DataName)); err != nil {
		t.Fatal(err)
	}
	after := readStats(t, mnt)
	// temperature has two stored chunks, both loaded by the read.
	if after.Store.Objects < before.Store.Objects+2 || after.Store.Bytes <= before.Store.Bytes ||
		after.Cache.Hits+after.Cache.Misses < before.Cache.Hits+before.Cache.Misses+2 {
		t.Errorf("counters did not move with the read:\nbefore %+v %+v\nafter  %+v %+v",
			*before.Store, *before.Cache, *after.Store, *after.Cache)
	}
	fi, err := os.Stat(filepath.Join(mnt, "temperature", DataName))
	if err != nil {
		t.Fatal(err)
	}
	// The chunks tile the array: decoding them gives at least its size.
	if d := after.Cache.DecodedBytes - before.Cache.DecodedBytes; d < fi.Size() {
		t.Errorf("decoded %d bytes for a %d-byte array", d, fi.Size())
	}
	// Read again: the chunks come from the cache, not the store.
	if _, err := os.ReadFile(filepath.Join(mnt, "temperature", DataName)); err != nil {
		t.Fatal(err)
	}
	again := readStats(t, mnt)
	if again.Store.Objects != after.Store.Objects {
		// The kernel may serve the second read from its page cache, so
		// hits need not move; store fetches must not.
		t.Errorf("second read fetched %d objects", again.Store.Objects-after.Store.Objects)
	}
	if len(again.Errors) != 0 {
		t.Errorf("errors counted: %v", again.Errors)
	}
}

func TestErrorsFileNamesTheKey(t *testing.T) {
	mnt, _ := mountCounted(t, corruptArray(t))

	errorsFile := filepath.Join(mnt, ControlDir, ErrorsName)
	if b, err := os.ReadFile(errorsFile); err != nil || len(b) != 0 {
		t.Fatalf("errors before any failure: %q, %v", b, err)
	}
	if _, err := os.ReadFile(filepath.Join(mnt, "v", DataName)); !errors.Is(err, syscall.EIO) {
		t.Fatalf("read of a corrupt array: %v, want EIO", err)
	}
	b, err := os.ReadFile(errorsFile)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	var e stats.Error
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &e); err != nil {
		t.Fatalf("%v in %q", err, b)
	}
	if e.Key != "v" || e.Kind != "corrupt" || e.Errno != "EIO" || !strings.Contains(e.Err, "v/1.0") || e.Time.IsZero() {
		t.Errorf("last error %+v, want key v, kind corrupt, EIO, naming v/1.0", e)
	}
	if size := statSize(t, errorsFile); size != int64(len(b)) {
		t.Errorf("stat of errors: size %d, want %d", size, len(b))
	}
	if s := readStats(t, mnt); s.Errors["corrupt"] < 1 {
		t.Errorf("errors by kind: %v, want corrupt counted", s.Errors)
	}
}

// TestSynthesizedNeverShadows stores objects under the names the mount
// synthesizes: the stored ones are shown, once, byte for byte.
func TestSynthesizedNeverShadows(t *testing.T) {
	dir := t.TempDir()
	zarrPython(t, dir, `import sys, zarr
g = zarr.open_group(sys.argv[1] + "/ds", mode="w")
g.create_dataset("v", shape=(2, 3), chunks=(2, 3), dtype="<i2", compressor=None)[:] = 1
`)
	stored := map[string]string{}
	for _, name := range []string{ControlDir, HeaderName, IndexName, "v/" + NPYName, "v/" + VRTName, "v/" + InfoName, "v/" + PreviewName} {
		stored[name] = "a stored object named " + name
	}
	for name, content := range stored {
		if err := os.WriteFile(filepath.Join(dir, "ds", name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	store, err := file.Open(filepath.Join(dir, "ds"))
	if err != nil {
		t.Fatal(err)
	}
	// Look up before and after a listing: both paths must agree.
	for _, listFirst := range []bool{false, true} {
		mnt, _ := mountCounted(t, store)
		if listFirst {
			for _, d := range []string{mnt, filepath.Join(mnt, "v")} {
				if _, err := os.ReadDir(d); err != nil {
					t.Fatal(err)
				}
			}
		}
		for name, content := range stored {
			got, err := os.ReadFile(filepath.Join(mnt, name))
			if err != nil || string(got) != content {
				t.Errorf("listFirst %v: %s = %q, %v; want the stored %q", listFirst, name, got, err, content)
			}
		}
		count := map[string]int{}
		for _, d := range []string{"", "v"} {
			entries, err := os.ReadDir(filepath.Join(mnt, d))
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range entries {
				count[path.Join(d, e.Name())]++
			}
		}
		for name := range stored {
			if count[name] != 1 {
				t.Errorf("listFirst %v: %s listed %d times", listFirst, name, count[name])
			}
		}
	}
}

func TestLiveFileReadsPastEnd(t *testing.T) {
	store := openSample(t)
	mnt, _ := mountCounted(t, store)
	f, err := os.Open(filepath.Join(mnt, ControlDir, StatsName))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 16)
	n, err := f.ReadAt(buf, 1<<20)
	if n != 0 || err == nil {
		t.Errorf("ReadAt past the end = %d, %v", n, err)
	}
	whole := new(bytes.Buffer)
	if _, err := whole.ReadFrom(f); err != nil || !json.Valid(whole.Bytes()) {
		t.Errorf("read after: %v, valid JSON %v", err, json.Valid(whole.Bytes()))
	}
}

// TestStatsCountReadAhead reads an array of many chunk rows in order: the
// reader's read-ahead loads the rows ahead, and the stats say so.
func TestStatsCountReadAhead(t *testing.T) {
	_, mnt := mountZarr(t, `import sys, zarr, numpy as np
g = zarr.open_group(sys.argv[1] + "/ds", mode="w")
g.create_dataset("v", shape=(1024, 256), chunks=(16, 256), dtype="<f8")[...] = np.arange(1024 * 256).reshape(1024, 256)
`)
	before := readStats(t, mnt)
	b, err := os.ReadFile(filepath.Join(mnt, "v", DataName))
	if err != nil || len(b) != 1024*256*8 {
		t.Fatalf("read %d bytes, %v", len(b), err)
	}
	after := readStats(t, mnt)
	if after.Cache.ReadAheadLoads <= before.Cache.ReadAheadLoads {
		t.Errorf("read-ahead loads %d before, %d after a sequential read", before.Cache.ReadAheadLoads, after.Cache.ReadAheadLoads)
	}
	// Whether a read finds a row loaded or still loading depends on
	// timing; only the first counts as a read-ahead hit.
	t.Logf("read-ahead: %d loads, %d hits; store: %d objects", after.Cache.ReadAheadLoads, after.Cache.ReadAheadHits, after.Store.Objects)
}

// corruptArray writes, with zarr-python, a 4x4 <i4 zlib array v whose
// second chunk (1.0) is cut short, and returns a store of it.
func corruptArray(t *testing.T) zmap.Store {
	t.Helper()
	dir := t.TempDir()
	zarrPython(t, dir, `import sys, zarr, numpy as np, numcodecs
g = zarr.open_group(sys.argv[1] + "/ds", mode="w")
g.create_dataset("v", shape=(4, 4), chunks=(2, 4), dtype="<i4",
                 compressor=numcodecs.Zlib())[:] = np.arange(16).reshape(4, 4)
`)
	chunk := filepath.Join(dir, "ds", "v", "1.0")
	b, err := os.ReadFile(chunk)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(chunk, b[:len(b)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	store, err := file.Open(filepath.Join(dir, "ds"))
	if err != nil {
		t.Fatal(err)
	}
	return store
}
