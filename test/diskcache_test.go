package test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nczarrfs/nczarrfs/internal/miniotest"
	"github.com/nczarrfs/nczarrfs/internal/stats"
)

// TestS3DiskCacheShared mounts one dataset from MinIO twice at once with
// one --cache-dir, then a third time after both are gone: every mount
// reads the reference tools' values, and the folder fills with objects
// within its budget.
func TestS3DiskCacheShared(t *testing.T) {
	srv := miniotest.Start(t)
	s3Env(t, srv)
	srv.CreateBucket(t, "cached")
	set, ds := basicDataset(t)
	srv.PutTree(t, "cached", ds.Name, ds.TreePath(set))
	source := srv.Endpoint + "/cached/" + ds.Name + "#mode=" + s3Mode(set)
	dir := t.TempDir()
	args := []string{"--cache-dir", dir, "--cache-dir-size", "64MiB"}

	// The group returns once both parallel mounts are checked.
	t.Run("two at once", func(t *testing.T) {
		for i := range 2 {
			t.Run(fmt.Sprint(i), func(t *testing.T) {
				t.Parallel()
				checkDataset(t, mount(t, source, args...), set, ds)
			})
		}
	})
	files, bytes := 0, int64(0)
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files++
			if info, err := d.Info(); err == nil {
				bytes += info.Size()
			}
		}
		return nil
	})
	if files == 0 || bytes > 64<<20 {
		t.Errorf("cache folder holds %d files, %d bytes; want some, within 64 MiB", files, bytes)
	}
	checkDataset(t, mount(t, source, args...), set, ds)
}

// readSnapshot reads the .nczarrfs/stats of the mount at mnt.
func readSnapshot(t *testing.T, mnt string) stats.Snapshot {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(mnt, ".nczarrfs", "stats"))
	if err != nil {
		t.Fatal(err)
	}
	var s stats.Snapshot
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatalf("%s/.nczarrfs/stats: %v", mnt, err)
	}
	if s.Store == nil || s.Disk == nil {
		t.Fatalf("%s/.nczarrfs/stats has no store or disk_cache counters:\n%s", mnt, b)
	}
	return s
}

// TestS3DiskCacheRewritten rewrites a zstd chunk in MinIO under a mount
// with --cache-dir and --metadata-ttl 2s that has read it: a new mount
// sharing the folder reads the new bytes at once, and the first mount
// once the TTL has passed; neither asks for the ETag of a chunk (HEAD),
// the flat listing holding them all, and the new mount reads the chunks
// that did not change from the folder. With --metadata-ttl 0 nothing listed is
// kept: each chunk's ETag is asked (HEAD) and the bytes are right.
func TestS3DiskCacheRewritten(t *testing.T) {
	const n, chunk = 4096, 512 // 8 chunks of float64
	dir, _ := genCodecArrays(t, n, chunk)
	const ttl = 2 * time.Second
	cacheDir := t.TempDir()
	args := []string{"--cache-dir", cacheDir, "--metadata-ttl", ttl.String()}
	m := startNetMount(t, dir, []string{"zstd"}, 0, args...)
	want := m.want["zstd"]
	f := m.openData(t, "zstd")
	if out, err := preadCheck(f, want, 0, len(want)); out != readRight {
		t.Fatalf("first read: %v", err)
	}
	s := readSnapshot(t, m.d.mnt)
	t.Logf("first mount, first read: disk %+v, requests %+v", *s.Disk, s.Store.Requests)
	if s.Disk.Checked != 0 || s.Store.Requests.HEAD != 0 || s.Disk.Written < 8 {
		t.Errorf("first read: disk %+v, %d HEAD; want no HEAD, no ETag asked, the 8 chunks kept", *s.Disk, s.Store.Requests.HEAD)
	}

	// Chunk 0 becomes what chunk 1 holds: zarr-python's own bytes.
	one, err := os.ReadFile(filepath.Join(dir, "tree", "zstd", "1"))
	if err != nil {
		t.Fatal(err)
	}
	m.srv.Put(t, "net", map[string][]byte{"ds/zstd/0": one})
	now := bytes.Clone(want)
	copy(now, want[chunk*8:2*chunk*8])

	// A new mount sharing the folder, which holds chunk 0's old bytes.
	source := m.proxy.URL + "/net/ds#mode=zarr,s3"
	d := startDaemon(t, source, args...)
	got, err := os.ReadFile(filepath.Join(d.mnt, "zstd", "data"))
	if err != nil || !bytes.Equal(got, now) {
		t.Errorf("a new mount sharing --cache-dir: %d bytes, %v%s; want chunk 0's new bytes", len(got), err, firstDiff(got, now, 8))
	}
	s = readSnapshot(t, d.mnt)
	t.Logf("second mount: disk %+v, requests %+v", *s.Disk, s.Store.Requests)
	if s.Disk.Checked != 0 || s.Store.Requests.HEAD != 0 || s.Disk.Hits < 7 || s.Disk.Misses < 1 {
		t.Errorf("second mount: disk %+v, %d HEAD; want no HEAD, chunk 0 fetched, and the 7 chunks that did not change read from the folder", *s.Disk, s.Store.Requests.HEAD)
	}

	// The first mount, once the TTL has passed.
	time.Sleep(ttl + 500*time.Millisecond)
	if out, err := preadCheck(f, now, 0, len(now)); out != readRight {
		t.Errorf("the same mount after the TTL: %v; want chunk 0's new bytes", err)
	}

	// Nothing listed is kept: each object's ETag is asked.
	d = startDaemon(t, source, "--cache-dir", cacheDir, "--metadata-ttl", "0")
	got, err = os.ReadFile(filepath.Join(d.mnt, "zstd", "data"))
	if err != nil || !bytes.Equal(got, now) {
		t.Errorf("--metadata-ttl 0: %d bytes, %v%s; want chunk 0's new bytes", len(got), err, firstDiff(got, now, 8))
	}
	s = readSnapshot(t, d.mnt)
	t.Logf("--metadata-ttl 0: disk %+v", *s.Disk)
	if s.Disk.Checked < 8 || s.Disk.Hits < 8 {
		t.Errorf("--metadata-ttl 0: disk %+v; want the 8 chunks' ETags asked, and the chunks read from the folder", *s.Disk)
	}
}
