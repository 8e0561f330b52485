package test

// End-to-end tests of Icechunk repositories: the repositories icechunk
// keeps for its read-compatibility tests (../shared/fixtures/icechunk,
// see its README), mounted from a folder and from MinIO. Their expected
// contents are those icechunk-python/tests/test_can_read_old.py asserts
// (do_icechunk_can_read_old_repo): icechunk itself cannot be installed
// here, so the values below are that test's, line by line.

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nczarrfs/nczarrfs/internal/miniotest"
	"github.com/nczarrfs/nczarrfs/internal/netem"
	"github.com/nczarrfs/nczarrfs/internal/stats"
	"github.com/nczarrfs/nczarrfs/internal/testenv"
)

// icechunkFixture is the folder of a fixture repository, beside the
// repository root as ../shared/fixtures/icechunk/NAME.
func icechunkFixture(t *testing.T, name string) string {
	t.Helper()
	_, self, _, _ := runtime.Caller(0)
	dir := filepath.Join(filepath.Dir(self), "..", "..", "shared", "fixtures", "icechunk", name)
	_, err := os.Stat(dir)
	testenv.Require(t, "the Icechunk fixtures ../shared/fixtures/icechunk", err)
	return dir
}

func readDir(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

// int8s reads a data file of int8 values.
func int8s(t *testing.T, path string) []int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]int, len(b))
	for i, c := range b {
		out[i] = int(int8(c))
	}
	return out
}

// float32s reads a data file of little-endian float32 values.
func float32s(path string) ([]float32, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	out := make([]float32, len(b)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out, nil
}

type snapshotEntry struct {
	ID        string  `json:"id"`
	Parent    *string `json:"parent"`
	WrittenAt string  `json:"written_at"`
	Message   string  `json:"message"`
}

// TestIcechunk mounts test-repo-v2 from a folder with its virtual chunk
// in MinIO, then test-repo-v1 and test-repo-v2 from MinIO, and checks
// what test_can_read_old.py asserts through the mounts: histories, tags
// (not the deleted one), values on each branch, tag and snapshot, the
// chunk deleted on my-branch as fill, and the virtual chunk read when
// allowed and EIO when not.
func TestIcechunk(t *testing.T) {
	v2 := icechunkFixture(t, "test-repo-v2")
	v1 := icechunkFixture(t, "test-repo-v1")
	srv := miniotest.Start(t)
	s3Env(t, srv)
	srv.CreateBucket(t, "testbucket")
	srv.CreateBucket(t, "repos")
	srv.PutTree(t, "repos", "test-repo-v2", v2)
	srv.PutTree(t, "repos", "test-repo-v1", v1)

	// The virtual chunk c/0/0 of big_chunks holds the bytes of the native
	// chunk c/0/1 (test_can_read_old.py, write_chunks_to_minio).
	plain := startDaemon(t, v2)
	chunk, err := os.ReadFile(filepath.Join(plain.mnt, "group1", "big_chunks", "c", "0", "1"))
	if err != nil {
		t.Fatal(err)
	}
	srv.Put(t, "testbucket", map[string][]byte{"can_read_old/chunk-1": chunk})

	mnt := mount(t, v2, "--virtual-chunks", "s3://testbucket/="+srv.Endpoint)
	ice := filepath.Join(mnt, ".icechunk")
	mainHistory := []string{"set virtual chunk", "fill data", "empty structure", "Repository initialized"}
	branchHistory := append([]string{"some more structure", "delete a chunk"}, mainHistory...)
	var snaps []snapshotEntry

	t.Run("folders", func(t *testing.T) {
		if got := readDir(t, mnt); !slices.Contains(got, ".icechunk") || !slices.Contains(got, "group1") || slices.Contains(got, "group2") {
			t.Errorf("root: %q", got)
		}
		if got, want := readDir(t, ice), []string{"branches", "snapshots", "snapshots.json", "tags"}; !slices.Equal(got, want) {
			t.Errorf(".icechunk: %q, want %q", got, want)
		}
		if got, want := readDir(t, filepath.Join(ice, "branches")), []string{"main", "my-branch"}; !slices.Equal(got, want) {
			t.Errorf("branches: %q, want %q", got, want)
		}
		// The tag "deleted" was deleted (test_can_read_old.py: "ref not found").
		if got, want := readDir(t, filepath.Join(ice, "tags")), []string{"it also works!", "it works!"}; !slices.Equal(got, want) {
			t.Errorf("tags: %q, want %q", got, want)
		}
		if _, err := os.Stat(filepath.Join(ice, "tags", "deleted")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("tags/deleted: %v", err)
		}
		// my-branch has group2 down to group5/inner.
		br := filepath.Join(ice, "branches", "my-branch")
		for dir, want := range map[string][]string{
			"":                            {"group1", "group2"},
			"group2/group3/group4/group5": {"inner"},
		} {
			got := readDir(t, filepath.Join(br, dir))
			for _, w := range want {
				if !slices.Contains(got, w) {
					t.Errorf("my-branch/%s: %q lacks %q", dir, got, w)
				}
			}
		}
		for _, f := range []string{"header.cdl", "dataset.nc", "group1/small_chunks/data", "group1/zarr.json"} {
			if st, err := os.Stat(filepath.Join(br, f)); err != nil || st.Size() == 0 {
				t.Errorf("my-branch/%s: %v", f, err)
			}
		}
	})

	t.Run("snapshots.json", func(t *testing.T) {
		before := readRequests(t, mnt)
		listed := readDir(t, filepath.Join(ice, "snapshots"))
		if err := command("ls", "-l", filepath.Join(ice, "snapshots")); err != nil {
			t.Error(err)
		}
		b, err := os.ReadFile(filepath.Join(ice, "snapshots.json"))
		if err != nil {
			t.Fatal(err)
		}
		// All of it comes from the repo file, read at mount.
		if got := minus(readRequests(t, mnt), before); got != (stats.Kinds{}) {
			t.Errorf("listing snapshots/ and reading snapshots.json made %+v requests, want none", got)
		}
		if err := json.Unmarshal(b, &snaps); err != nil {
			t.Fatalf("%v\n%s", err, b)
		}
		var ids, msgs []string
		byID := map[string]snapshotEntry{}
		for i, s := range snaps {
			ids, msgs = append(ids, s.ID), append(msgs, s.Message)
			byID[s.ID] = s
			at, err := time.Parse(time.RFC3339, s.WrittenAt)
			if err != nil {
				t.Errorf("%s: written_at %q: %v", s.ID, s.WrittenAt, err)
			}
			if i > 0 {
				if prev, _ := time.Parse(time.RFC3339, snaps[i-1].WrittenAt); at.After(prev) {
					t.Errorf("%s is newer than %s, listed before it", s.ID, snaps[i-1].ID)
				}
			}
		}
		// Every snapshot: my-branch's history (the longest) holds them all.
		if !slices.Equal(msgs, branchHistory) {
			t.Errorf("messages %q, want %q", msgs, branchHistory)
		}
		// Each parent is the next older snapshot of that history.
		for i, s := range snaps {
			switch {
			case i == len(snaps)-1 && s.Parent != nil:
				t.Errorf("first snapshot has parent %v", *s.Parent)
			case i < len(snaps)-1 && (s.Parent == nil || *s.Parent != snaps[i+1].ID):
				t.Errorf("%s (%q): parent %v, want %s", s.ID, s.Message, s.Parent, snaps[i+1].ID)
			}
		}
		slices.Sort(ids)
		if !slices.Equal(listed, ids) {
			t.Errorf("snapshots/ lists %q, snapshots.json %q", listed, ids)
		}
	})

	t.Run("values", func(t *testing.T) {
		if len(snaps) != len(branchHistory) {
			t.Skip("no snapshots.json")
		}
		emptyStructure := filepath.Join(ice, "snapshots", snaps[len(snaps)-2].ID)
		// "Repository initialized" holds nothing, not even the root group.
		if got := readDir(t, filepath.Join(ice, "snapshots", snaps[len(snaps)-1].ID)); len(got) != 0 {
			t.Errorf("the first snapshot lists %q", got)
		}
		for path, want := range map[string][]int{
			// "small_chunks[:] = 84"; my-branch deleted c/4: the fill value 8.
			filepath.Join(mnt, "group1/small_chunks/data"):                           {84, 84, 84, 84, 84},
			filepath.Join(ice, "branches/main/group1/small_chunks/data"):             {84, 84, 84, 84, 84},
			filepath.Join(ice, "branches/my-branch/group1/small_chunks/data"):        {84, 84, 84, 84, 8},
			filepath.Join(ice, "tags/it works!/group1/small_chunks/data"):            {84, 84, 84, 84, 8},
			filepath.Join(ice, "tags/it also works!/group1/small_chunks/data"):       {84, 84, 84, 84, 8},
			filepath.Join(emptyStructure, "group1/small_chunks/data"):                {8, 8, 8, 8, 8},
			filepath.Join(ice, "snapshots", snaps[0].ID, "group1/small_chunks/data"): {84, 84, 84, 84, 8},
		} {
			if got := int8s(t, path); !slices.Equal(got, want) {
				t.Errorf("%s = %v, want %v", strings.TrimPrefix(path, mnt), got, want)
			}
		}
		if _, err := os.Stat(filepath.Join(ice, "branches/my-branch/group1/small_chunks/c/4")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("deleted chunk c/4: %v", err)
		}
		// big_chunks is 42.0 everywhere, its virtual chunk included; inner
		// was never written: NaN.
		for path, want := range map[string]float32{
			filepath.Join(mnt, "group1/big_chunks/data"):                                    42,
			filepath.Join(ice, "tags/it works!/group1/big_chunks/data"):                     42,
			filepath.Join(ice, "branches/my-branch/group2/group3/group4/group5/inner/data"): float32(math.NaN()),
			filepath.Join(emptyStructure, "group1/big_chunks/data"):                         float32(math.NaN()),
		} {
			got, err := float32s(path)
			if err != nil || len(got) != 100 {
				t.Errorf("%s: %d values, %v", path, len(got), err)
				continue
			}
			for i, v := range got {
				if v != want && !(math.IsNaN(float64(v)) && math.IsNaN(float64(want))) {
					t.Errorf("%s[%d] = %v, want %v", strings.TrimPrefix(path, mnt), i, v, want)
					break
				}
			}
		}
	})

	t.Run("virtual chunk not allowed", func(t *testing.T) {
		for range 2 {
			_, err := os.ReadFile(filepath.Join(plain.mnt, "group1", "big_chunks", "data"))
			if !errors.Is(err, syscall.EIO) {
				t.Fatalf("big_chunks/data without --virtual-chunks: %v, want EIO", err)
			}
		}
		// The other chunks still read.
		if got := int8s(t, filepath.Join(plain.mnt, "group1", "small_chunks", "data")); !slices.Equal(got, []int{84, 84, 84, 84, 84}) {
			t.Errorf("small_chunks = %v", got)
		}
		log := plain.output.String()
		// One line says which prefix to allow, with which flag, however
		// many reads fail.
		if n := strings.Count(log, "s3://testbucket/ are not allowed; allow them with --virtual-chunks s3://testbucket/"); n != 1 {
			t.Errorf("%d log lines name the prefix and the flag, want 1:\n%s", n, clip(log))
		}
	})

	t.Run("minio", func(t *testing.T) {
		// Found with no mode word; the tag of a spec 1 repository.
		m1 := mount(t, "s3://repos/test-repo-v1", "--endpoint-url", srv.Endpoint, "--tag", "it works!")
		if got := int8s(t, filepath.Join(m1, "group1/small_chunks/data")); !slices.Equal(got, []int{84, 84, 84, 84, 8}) {
			t.Errorf("v1 tag it works!: small_chunks = %v", got)
		}
		if got, want := readDir(t, filepath.Join(m1, ".icechunk", "tags")), []string{"it also works!", "it works!"}; !slices.Equal(got, want) {
			t.Errorf("v1 tags: %q, want %q", got, want)
		}
		m2 := mount(t, "s3://repos/test-repo-v2#mode=icechunk", "--endpoint-url", srv.Endpoint,
			"--branch", "my-branch", "--virtual-chunks", "s3://testbucket="+srv.Endpoint)
		if got := int8s(t, filepath.Join(m2, "group1/small_chunks/data")); !slices.Equal(got, []int{84, 84, 84, 84, 8}) {
			t.Errorf("v2 my-branch: small_chunks = %v", got)
		}
		if got, err := float32s(filepath.Join(m2, "group1/big_chunks/data")); err != nil || len(got) != 100 || got[0] != 42 || got[99] != 42 {
			t.Errorf("v2 my-branch: big_chunks: %v %v", got, err)
		}
	})

	t.Run("web server", func(t *testing.T) {
		// python3 -m http.server ignores Range: every chunk read gets the
		// whole packed file. A spec 2 repository needs no listing.
		base := pythonHTTPServer(t, filepath.Dir(v2))
		m := mount(t, base+"/test-repo-v2#mode=icechunk,http", "--tag", "it works!",
			"--virtual-chunks", "s3://testbucket/="+srv.Endpoint)
		if got := int8s(t, filepath.Join(m, "group1/small_chunks/data")); !slices.Equal(got, []int{84, 84, 84, 84, 8}) {
			t.Errorf("web server, tag it works!: small_chunks = %v", got)
		}
		if got, err := float32s(filepath.Join(m, "group1/big_chunks/data")); err != nil || len(got) != 100 || got[0] != 42 || got[99] != 42 {
			t.Errorf("web server: big_chunks: %v %v", got, err)
		}
		if got := int8s(t, filepath.Join(m, ".icechunk/branches/main/group1/small_chunks/data")); !slices.Equal(got, []int{84, 84, 84, 84, 84}) {
			t.Errorf("web server, branches/main: small_chunks = %v", got)
		}
	})

	t.Run("requests", func(t *testing.T) {
		// MinIO 20 ms away: the mount reads the repo file and one
		// snapshot, and listing the root reads nothing more.
		link := netem.Start(t, srv.Addr, netem.Options{Delay: 10 * time.Millisecond})
		m := mount(t, "s3://repos/test-repo-v2#mode=icechunk", "--endpoint-url", "http://"+link.Addr)
		if got := readDir(t, m); !slices.Contains(got, "group1") {
			t.Fatalf("root: %q", got)
		}
		got := readRequests(t, m)
		n := got.GET + got.RangedGET + got.HEAD + got.LIST
		t.Logf("requests before the root lists: %d (%+v)", n, got)
		if n > 4 {
			t.Errorf("%d requests before the root lists (%+v), want at most 4", n, got)
		}
		// small_chunks' five chunks are inline in one manifest: at most
		// one GET, none when the mount's background listing of the
		// folders under the root (listcache's prefetch) read the
		// manifest first.
		if v := int8s(t, filepath.Join(m, "group1/small_chunks/data")); !slices.Equal(v, []int{84, 84, 84, 84, 84}) {
			t.Errorf("small_chunks = %v", v)
		}
		if got := minus(readRequests(t, m), got); got.GET > 1 || got.RangedGET+got.HEAD+got.LIST > 0 {
			t.Errorf("reading small_chunks made %+v requests, want at most 1 GET (its manifest)", got)
		}
	})

	t.Run("bad root", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.CopyFS(dir, os.DirFS(v2)); err != nil {
			t.Fatal(err)
		}
		tip := snapshotOf(t, filepath.Join(dir, "snapshots"), snaps)
		if err := os.Truncate(tip, 50); err != nil {
			t.Fatal(err)
		}
		out, err := mountFails(t, dir)
		if err == nil {
			t.Fatal("mount of a repository whose main snapshot is truncated succeeded")
		}
		if lines := strings.Count(strings.TrimSpace(out), "\n") + 1; lines != 1 || !strings.Contains(out, "snapshots/"+filepath.Base(tip)) {
			t.Errorf("mount said, in %d lines:\n%s", lines, out)
		}
	})
}

// snapshotOf is the file of main's tip: the newest snapshot of
// snapshots.json whose message is main's.
func snapshotOf(t *testing.T, dir string, snaps []snapshotEntry) string {
	t.Helper()
	for _, s := range snaps {
		if s.Message == "set virtual chunk" {
			return filepath.Join(dir, s.ID)
		}
	}
	t.Fatal("no snapshot of main's tip in snapshots.json")
	return ""
}
