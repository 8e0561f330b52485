package test

// Browsing a dataset in a bucket costs no request per name (issue 19): a
// group of many small arrays, written by zarr-python with and without
// .zmetadata, is uploaded to MinIO and browsed through the mount with the
// tools people use (ls -l, ls -lR, find, stat of names that do not exist,
// cat); the requests each makes are read from .nczarrfs/stats.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nczarrfs/nczarrfs/internal/miniotest"
	"github.com/nczarrfs/nczarrfs/internal/stats"
)

// genGroupScript writes, with zarr-python, a group of N arrays v0000...
// of 10 int32 each in one chunk, every other one with an attribute, and
// consolidates its metadata when asked; expected/v0003.bin is v0003 read
// back by zarr.
//
//	genGroupScript OUTDIR N CONSOLIDATED(0|1)
const genGroupScript = `
import os, sys
import numpy as np, zarr
out, n, consolidated = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1"
tree = os.path.join(out, "tree")
store = zarr.DirectoryStore(tree)
g = zarr.open_group(store, mode="w")
for i in range(n):
    a = g.create_dataset(f"v{i:04d}", shape=(10,), chunks=(10,), dtype="<i4")
    a[:] = np.arange(i, i + 10, dtype="<i4")
    if i % 2 == 0:
        a.attrs["units"] = "K"
if consolidated:
    zarr.consolidate_metadata(store)
os.makedirs(os.path.join(out, "expected"))
with open(os.path.join(out, "expected", "v0003.bin"), "wb") as f:
    f.write(zarr.open_group(zarr.DirectoryStore(tree), mode="r")["v0003"][:].astype("<i4").tobytes())
`

// readRequests reads the request counts of the mount at mnt.
func readRequests(t *testing.T, mnt string) stats.Kinds {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(mnt, ".nczarrfs", "stats"))
	if err != nil {
		t.Fatal(err)
	}
	var s stats.Snapshot
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatalf("%s/.nczarrfs/stats: %v", mnt, err)
	}
	if s.Store == nil {
		t.Fatalf("%s/.nczarrfs/stats counts no store requests:\n%s", mnt, b)
	}
	return s.Store.Requests
}

func minus(a, b stats.Kinds) stats.Kinds {
	return stats.Kinds{GET: a.GET - b.GET, RangedGET: a.RangedGET - b.RangedGET, HEAD: a.HEAD - b.HEAD, LIST: a.LIST - b.LIST}
}

// TestS3BrowseFromMemory mounts a group of 200 arrays from MinIO, with
// and without .zmetadata, and checks the requests of each step: the mount
// lists the dataset flat and reads the root's metadata; ls -l makes no
// request; the first ls -lR reads each array's metadata once (none with
// .zmetadata); ls -lR again,
// ls -lR (twice), find, header.cdl, info.json and the probes of names that
// do not exist then make none; cat of an array's data makes one request,
// cat of a metadata object one unless the mount read it already.
func TestS3BrowseFromMemory(t *testing.T) {
	srv := miniotest.Start(t)
	s3Env(t, srv)
	srv.CreateBucket(t, "browse")
	const n = 200
	for _, consolidated := range []bool{true, false} {
		t.Run(fmt.Sprint("consolidated ", consolidated), func(t *testing.T) {
			out := t.TempDir()
			flag := map[bool]string{true: "1", false: "0"}[consolidated]
			if msg, err := exec.Command(python, "-c", genGroupScript, out, fmt.Sprint(n), flag).CombinedOutput(); err != nil {
				t.Fatalf("generating the group with zarr-python: %v\n%s", err, msg)
			}
			prefix := "g" + flag
			srv.PutTree(t, "browse", prefix, filepath.Join(out, "tree"))
			mnt := mount(t, srv.Endpoint+"/browse/"+prefix+"#mode=zarr,s3", "--metadata-ttl", "1h")

			mounted := readRequests(t, mnt)
			t.Logf("mount: %+v", mounted)
			if mounted.HEAD != 0 || mounted.RangedGET != 0 || mounted.LIST != 1 {
				t.Errorf("mount made %+v; want one LIST (the flat listing of %d keys) and no HEAD", mounted, 2*n+2)
			}
			// .zgroup and the consolidated metadata; without it, .zgroup
			// only: the arrays are read when first looked up.
			wantGET := map[bool]int64{true: 2, false: 1}[consolidated]
			if mounted.GET != wantGET {
				t.Errorf("mount made %d GETs, want %d", mounted.GET, wantGET)
			}
			// Without .zmetadata, ls -l reads no metadata: the listing
			// says what each folder is. The first look into an array
			// folder (ls -lR) reads every .zarray of the group, and the
			// .zattrs of the arrays that have one (the listing says
			// which), once.
			firstLsR := map[bool]stats.Kinds{true: {}, false: {GET: n + n/2}}[consolidated]

			steps := []struct {
				what string
				run  func() error
				want stats.Kinds
			}{
				{"ls -l of the root", func() error { return command("ls", "-l", mnt) }, stats.Kinds{}},
				{"ls -l of the root again", func() error { return command("ls", "-l", mnt) }, stats.Kinds{}},
				{"ls -lR", func() error { return command("ls", "-lR", mnt) }, firstLsR},
				{"ls -lR again", func() error { return command("ls", "-lR", mnt) }, stats.Kinds{}},
				{"find of 10 arrays", func() error {
					names, _ := filepath.Glob(filepath.Join(mnt, "v000*"))
					if len(names) != 10 {
						return fmt.Errorf("the shell's glob found %d names, want 10", len(names))
					}
					return command("find", names...)
				}, stats.Kinds{}},
				{"stat of names that do not exist", func() error {
					for _, name := range []string{".git", "__pycache__", ".hidden", "desktop.ini", "v0001/.git", "v0001/x/y", "nothing/here"} {
						if _, err := os.Stat(filepath.Join(mnt, name)); !errors.Is(err, fs.ErrNotExist) {
							return fmt.Errorf("stat %s: %v, want ENOENT", name, err)
						}
					}
					return nil
				}, stats.Kinds{}},
				{"header.cdl and info.json", func() error {
					for _, name := range []string{"header.cdl", "v0002/info.json"} {
						if b, err := os.ReadFile(filepath.Join(mnt, name)); err != nil || len(b) == 0 {
							return fmt.Errorf("reading %s: %d bytes, %v", name, len(b), err)
						}
					}
					return nil
				}, stats.Kinds{}},
				{"cat v0002/.zattrs", func() error {
					b, err := os.ReadFile(filepath.Join(mnt, "v0002", ".zattrs"))
					if err == nil && !bytes.Contains(b, []byte(`"units"`)) {
						err = fmt.Errorf("v0002/.zattrs = %q", b)
					}
					return err
				}, map[bool]stats.Kinds{true: {RangedGET: 1}, false: {}}[consolidated]},
				{"getfattr of an array", func() error {
					b, err := exec.Command("getfattr", "-d", filepath.Join(mnt, "v0004")).CombinedOutput()
					if err == nil && !bytes.Contains(b, []byte(`user.units="K"`)) {
						err = fmt.Errorf("no user.units in\n%s", b)
					}
					if errors.Is(err, exec.ErrNotFound) {
						return nil // attr is not installed; ls -l listed them already
					}
					return err
				}, stats.Kinds{}},
				{"cat v0003/data", func() error {
					got, err := os.ReadFile(filepath.Join(mnt, "v0003", "data"))
					if err != nil {
						return err
					}
					want, err := os.ReadFile(filepath.Join(out, "expected", "v0003.bin"))
					if err == nil && !bytes.Equal(got, want) {
						err = fmt.Errorf("v0003/data = %x, want %x (zarr)", got, want)
					}
					return err
				}, stats.Kinds{RangedGET: 1}},
			}
			for _, s := range steps {
				before := readRequests(t, mnt)
				if err := s.run(); err != nil {
					t.Fatalf("%s: %v", s.what, err)
				}
				if got := minus(readRequests(t, mnt), before); got != s.want {
					t.Errorf("%s made %+v requests, want %+v", s.what, got, s.want)
				}
			}

			// header.cdl first thing on a fresh mount: made when opened
			// (without .zmetadata its size is not known before), the
			// same as nczarrfs header's.
			source := srv.Endpoint + "/browse/" + prefix + "#mode=zarr,s3"
			fresh := mount(t, source)
			got, err := os.ReadFile(filepath.Join(fresh, "header.cdl"))
			if err != nil {
				t.Fatal(err)
			}
			want, err := exec.Command(nczarrfsBinary(t), "header", source).Output()
			if err != nil {
				t.Fatalf("nczarrfs header: %v", err)
			}
			if !bytes.Equal(got, want) || len(got) == 0 {
				t.Errorf("header.cdl read first =\n%s\nwant nczarrfs header's\n%s", clip(string(got)), clip(string(want)))
			}
			if fi, err := os.Stat(filepath.Join(fresh, "header.cdl")); err != nil || fi.Size() != int64(len(got)) {
				t.Errorf("header.cdl after it was read: %v, %v; want size %d", fi, err, len(got))
			}
		})
	}
}

// command runs a command, discarding its output.
func command(name string, args ...string) error {
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %v\n%s", name, strings.Join(args, " "), err, clip(string(out)))
	}
	return nil
}

// TestS3MetadataTTL checks that what is written to the bucket after the
// mount shows once --metadata-ttl has passed, and not before: the kept
// listing and the kernel's negative entry both answer until then.
func TestS3MetadataTTL(t *testing.T) {
	srv := miniotest.Start(t)
	s3Env(t, srv)
	srv.CreateBucket(t, "ttl")
	set, ds := genArray(t, 20, 10, "<i4", 100)
	srv.PutTree(t, "ttl", "a", ds.TreePath(set))
	const ttl = 2 * time.Second
	mnt := mount(t, srv.Endpoint+"/ttl/a#mode=zarr,s3", "--metadata-ttl", ttl.String())
	extra := filepath.Join(mnt, "v", "notes.txt")
	if _, err := os.Stat(extra); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("stat %s before it is written: %v", extra, err)
	}
	// Listed twice: the kernel keeps the folder's entries (FOPEN_CACHE_DIR)
	// until the listing is made again.
	for range 2 {
		if names := listNames(t, filepath.Join(mnt, "v")); names["notes.txt"] {
			t.Fatalf("notes.txt listed before it is written")
		}
	}
	start := time.Now()
	srv.Put(t, "ttl", map[string][]byte{"a/v/notes.txt": []byte("written after the mount\n")})
	before := readRequests(t, mnt)
	if _, err := os.Stat(extra); !errors.Is(err, fs.ErrNotExist) && time.Since(start) < ttl {
		t.Errorf("a name written after the mount is seen within the TTL: %v", err)
	}
	if got := minus(readRequests(t, mnt), before); got.Total() != 0 && time.Since(start) < ttl {
		t.Errorf("a stat within the TTL made %+v requests, want none", got)
	}
	for {
		b, err := os.ReadFile(extra)
		if err == nil {
			if string(b) != "written after the mount\n" {
				t.Errorf("%s = %q", extra, b)
			}
			if time.Since(start) < ttl {
				t.Errorf("seen after %v, before the TTL (%v)", time.Since(start), ttl)
			}
			// The listing shows it too: the kernel's copy was dropped.
			for range 2 {
				if names := listNames(t, filepath.Join(mnt, "v")); !names["notes.txt"] {
					t.Errorf("notes.txt read but not listed after the TTL")
				}
			}
			break
		}
		if !errors.Is(err, syscall.ENOENT) {
			t.Fatal(err)
		}
		if time.Since(start) > ttl+20*time.Second {
			t.Fatalf("%s still not seen %v after it was written (TTL %v)", extra, time.Since(start), ttl)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// listNames lists the folder dir.
func listNames(t *testing.T, dir string) map[string]bool {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, e := range entries {
		names[e.Name()] = true
	}
	return names
}

// readKernel reads the kernel's request counts of the mount at mnt.
func readKernel(t *testing.T, mnt string) stats.KernelSnapshot {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(mnt, ".nczarrfs", "stats"))
	if err != nil {
		t.Fatal(err)
	}
	var s stats.Snapshot
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatalf("%s/.nczarrfs/stats: %v", mnt, err)
	}
	return s.Kernel
}

// TestS3ListAgainFromKernel lists a group of 50 arrays in MinIO with
// ls -lR twice within --metadata-ttl: the second gets every folder's
// entries from the kernel's cache (FOPEN_CACHE_DIR), with no listing and
// no lookup from the daemon, and no request to the store. Once the TTL
// has passed, an object written meanwhile is listed.
func TestS3ListAgainFromKernel(t *testing.T) {
	srv := miniotest.Start(t)
	s3Env(t, srv)
	srv.CreateBucket(t, "again")
	out := t.TempDir()
	if msg, err := exec.Command(python, "-c", genGroupScript, out, "50", "0").CombinedOutput(); err != nil {
		t.Fatalf("generating the group with zarr-python: %v\n%s", err, msg)
	}
	srv.PutTree(t, "again", "g", filepath.Join(out, "tree"))
	const ttl = 3 * time.Second
	mnt := mount(t, srv.Endpoint+"/again/g#mode=zarr,s3", "--metadata-ttl", ttl.String())
	lsLR := func() string {
		t.Helper()
		b, err := exec.Command("ls", "-lR", mnt).CombinedOutput()
		if err != nil {
			t.Fatalf("ls -lR: %v\n%s", err, b)
		}
		return string(b)
	}
	start := time.Now()
	// The first reads every array's metadata, which sizes header.cdl
	// and index.html: the second is the one to compare with.
	lsLR()
	second := lsLR()
	k0, r0 := readKernel(t, mnt), readRequests(t, mnt)
	third := time.Now()
	again := lsLR()
	took := time.Since(third)
	k1, r1 := readKernel(t, mnt), readRequests(t, mnt)
	if time.Since(start) >= ttl {
		t.Skipf("the ls -lR took %v, past the TTL of %v: the machine is too loaded to tell", time.Since(start), ttl)
	}
	t.Logf("ls -lR again in %v: readdirs %d, lookups %d, opendirs %d, xattrs %d, store %+v (before it: kernel %+v)",
		took.Round(time.Millisecond), k1.Readdirs-k0.Readdirs, k1.Lookups-k0.Lookups, k1.Opendirs-k0.Opendirs, k1.Xattrs-k0.Xattrs, minus(r1, r0), k0)
	if second != again {
		t.Errorf("ls -lR again differs:\n%s\nthen\n%s", second, again)
	}
	if k0.Readdirs < 51 {
		t.Errorf("the first ls -lR made %d listings for the kernel; want one per folder (51)", k0.Readdirs)
	}
	if d := k1.Readdirs - k0.Readdirs; d != 0 {
		t.Errorf("ls -lR again within the TTL made the daemon list %d folders; want 0 (the kernel's cache)", d)
	}
	if d := k1.Lookups - k0.Lookups; d != 0 {
		t.Errorf("ls -lR again within the TTL made %d lookups; want 0", d)
	}
	if got := minus(r1, r0); got.Total() != 0 {
		t.Errorf("ls -lR again within the TTL made %+v store requests; want none", got)
	}

	srv.Put(t, "again", map[string][]byte{"g/v0007/notes.txt": []byte("written after the mount\n")})
	time.Sleep(time.Until(start.Add(ttl + 500*time.Millisecond)))
	k2 := readKernel(t, mnt)
	if !strings.Contains(lsLR(), "notes.txt") {
		t.Errorf("ls -lR after the TTL does not list an object written meanwhile")
	}
	if k3 := readKernel(t, mnt); k3.Readdirs == k2.Readdirs {
		t.Errorf("ls -lR after the TTL listed nothing from the daemon")
	}
}
