package test

// End-to-end tests of plain HTTP(S) sources (#mode=...,http): fixture
// datasets, with consolidated metadata written by zarr-python, served by
// Go's http.FileServer and by python3 -m http.server on 127.0.0.1, mounted
// and compared with the trees byte for byte; the requests of mount, ls -l
// and cat; faults through internal/faultproxy; a dataset without
// consolidated metadata refused.

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nczarrfs/nczarrfs/internal/faultproxy"
	"github.com/nczarrfs/nczarrfs/internal/stats"
	"github.com/nczarrfs/nczarrfs/internal/testenv"
)

// consolidateScript consolidates the Zarr v2 (or NCZarr) tree argv[1]
// with zarr-python, as a publisher does before putting it on a web
// server.
const consolidateScript = `
import sys, zarr
zarr.consolidate_metadata(zarr.DirectoryStore(sys.argv[1]))
`

// consolidatedCopy copies the dataset's tree to a new folder and, unless
// it has consolidated metadata (.zmetadata, or consolidated_metadata or an
// array in a v3 root zarr.json), consolidates it with zarr-python. ok is
// false for a tree that cannot be: a v3 group without it (zarr-python 2
// writes v2 only; consolidateV3 does what zarr-python 3 would) or a v2
// root array.
func consolidatedCopy(t *testing.T, set fixtureSet, ds dataset) (dir string, ok bool) {
	t.Helper()
	src := ds.TreePath(set)
	dir = filepath.Join(t.TempDir(), ds.Name)
	if out, err := exec.Command("cp", "-a", src, dir).CombinedOutput(); err != nil {
		t.Fatalf("cp -a %s: %v\n%s", src, err, out)
	}
	if _, err := os.Stat(filepath.Join(dir, ".zmetadata")); err == nil {
		return dir, true
	}
	if root, err := os.ReadFile(filepath.Join(dir, "zarr.json")); err == nil {
		var doc map[string]any
		if err := json.Unmarshal(root, &doc); err != nil {
			t.Fatalf("%s/zarr.json: %v", ds.Name, err)
		}
		cm, _ := doc["consolidated_metadata"].(map[string]any)
		return dir, cm != nil || doc["node_type"] == "array"
	}
	if _, err := os.Stat(filepath.Join(dir, ".zgroup")); err != nil {
		return dir, false // a root array without .zmetadata
	}
	if out, err := exec.Command(python, "-c", consolidateScript, dir).CombinedOutput(); err != nil {
		t.Fatalf("consolidating %s: %v\n%s", ds.Name, err, out)
	}
	return dir, true
}

// httpMode is the fragment mode of a fixture set's datasets on a web
// server.
func httpMode(set fixtureSet) string {
	return strings.Replace(s3Mode(set), "s3", "http", 1)
}

// etagServer serves dir with http.FileServer and a strong ETag per file
// (its content's hash), which FileServer honours in Range and If-Match
// requests: a body that breaks off can be resumed. It runs in a process of
// its own (this test binary again, see TestMain): checkDataset maps data
// into memory, and a page fault on the mount stalls the whole test
// process, a server in it included, which would then never answer the
// mount that is serving the fault.
func etagServer(t *testing.T, dir string) etagSrv {
	t.Helper()
	addr := testenv.FreeAddr(t)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), etagServeEnv+"="+dir, etagAddrEnv+"="+addr)
	cmd.Stdout, cmd.Stderr = io.Discard, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return etagSrv{URL: "http://" + addr}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the ETag server on %s did not start", addr)
		}
	}
}

// etagSrv is a running etagServer.
type etagSrv struct{ URL string }

// The environment that makes this test binary an etagServer (TestMain).
const (
	etagServeEnv = "NCZARRFS_TEST_ETAG_SERVE"
	etagAddrEnv  = "NCZARRFS_TEST_ETAG_ADDR"
)

// serveETags is the etagServer process: it serves the folder of
// etagServeEnv on etagAddrEnv until it is killed.
func serveETags(dir, addr string) error {
	fs := http.FileServer(http.Dir(dir))
	return http.ListenAndServe(addr, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(path.Clean(r.URL.Path)))); err == nil {
			w.Header().Set("ETag", fmt.Sprintf(`"%x"`, sha256.Sum256(b)))
		}
		fs.ServeHTTP(w, r)
	}))
}

// pythonHTTPServer serves dir with python3 -m http.server on 127.0.0.1
// (no Range, no ETag) until t ends, and returns its base URL.
func pythonHTTPServer(t *testing.T, dir string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command(python, "-m", "http.server", "--bind", "127.0.0.1", "--directory", dir, fmt.Sprint(port))
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return "http://" + addr
		}
		if time.Now().After(deadline) {
			t.Fatalf("python3 -m http.server on %s did not start", addr)
		}
	}
}

// TestHTTPMountFixtures serves every fixture dataset that has, or can be
// given, consolidated metadata from python3 -m http.server (which ignores
// Range and sends no ETag) and mounts it: the same files and bytes as the
// tree, every array's data equal to the reference tools' values. Two are
// also served by Go's file server, with Range and ETags.
func TestHTTPMountFixtures(t *testing.T) {
	served := 0
	for _, set := range fixtures(t) {
		for _, ds := range set.Datasets {
			t.Run(ds.Name, func(t *testing.T) {
				t.Parallel()
				dir, ok := consolidatedCopy(t, set, ds)
				if !ok {
					t.Skipf("%s is a Zarr v3 group without consolidated metadata; a web server cannot serve it", ds.Name)
				}
				// The copy, as the tree the mount must show.
				rel, err := filepath.Rel(set.Dir, dir)
				if err != nil {
					t.Fatal(err)
				}
				copied := ds
				copied.Tree = rel
				// A server in a process of its own, as MinIO is: one in
				// this test process, slowed down with it on a loaded
				// machine, makes the mount's reads wait on the very
				// process that reads.
				base := pythonHTTPServer(t, dir)
				mnt := mount(t, base+"/#mode="+httpMode(set))
				checkDataset(t, mnt, set, copied)
				if ds.Name == "zarr-consolidated" || ds.Name == "zarr-codecs" {
					srv := etagServer(t, dir)
					mnt := mount(t, srv.URL+"#mode="+httpMode(set))
					checkDataset(t, mnt, set, copied)
				}
			})
			served++
		}
	}
	if served == 0 {
		t.Fatal("no fixture dataset to serve")
	}
}

// TestHTTPMountRequests mounts a zarr-python group of 20 arrays from a web
// server and counts the requests of each step: the mount reads the
// consolidated metadata (no listing: the server has none); ls -l of the
// root asks for the size of each metadata object there (HEAD) and lists
// nothing; ls -l of an array asks for its metadata objects and probes its
// one chunk key; a second ls -l asks nothing; cat of an array's data reads
// its one chunk; cat of a chunk that does not exist reads nothing.
func TestHTTPMountRequests(t *testing.T) {
	out := t.TempDir()
	if b, err := exec.Command(python, "-c", genGroupScript, out, "20", "1").CombinedOutput(); err != nil {
		t.Fatalf("writing the group: %v\n%s", err, b)
	}
	tree := filepath.Join(out, "tree")
	srv := etagServer(t, tree)
	mnt := mount(t, srv.URL+"#mode=zarr,http", "--metadata-ttl", "1h")
	base := readRequests(t, mnt)
	if base.LIST != 0 || base.GET+base.RangedGET == 0 {
		t.Errorf("mount: %+v; want the metadata read and no listing", base)
	}
	t.Logf("mount: %+v", base)

	step := func(what string, run func() error) (got stats.Kinds) {
		t.Helper()
		before := readRequests(t, mnt)
		if err := run(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		got = minus(readRequests(t, mnt), before)
		t.Logf("%s: %+v", what, got)
		return got
	}
	ls := func(dir string) func() error {
		return func() error { _, err := exec.Command("ls", "-l", dir).Output(); return err }
	}
	// The root holds .zgroup and .zmetadata (no .zattrs); the arrays'
	// .zattrs that the consolidated metadata does not declare are not
	// asked for.
	if got := step("ls -l /", ls(mnt)); got.LIST != 0 || got.HEAD > 2 || got.GET+got.RangedGET != 0 {
		t.Errorf("ls -l of the root: %+v; want at most a HEAD per metadata object and nothing else", got)
	}
	// v0002: .zarray, .zattrs and chunk 0; v0003 has no .zattrs.
	if got := step("ls -l v0002", ls(filepath.Join(mnt, "v0002"))); got.LIST != 0 || got.HEAD != 3 || got.GET+got.RangedGET != 0 {
		t.Errorf("ls -l of an array: %+v; want 3 HEADs (its 2 metadata objects, its 1 chunk key)", got)
	}
	if got := step("ls -l v0002 again", ls(filepath.Join(mnt, "v0002"))); got.Total() != 0 {
		t.Errorf("second ls -l of an array: %+v; want none", got)
	}
	want, err := os.ReadFile(filepath.Join(out, "expected", "v0003.bin"))
	if err != nil {
		t.Fatal(err)
	}
	var data []byte
	if got := step("cat v0003/data", func() (err error) {
		data, err = os.ReadFile(filepath.Join(mnt, "v0003", "data"))
		return err
	}); got.GET+got.RangedGET != 1 || got.LIST != 0 {
		t.Errorf("cat of an array's data: %+v; want the one chunk read", got)
	}
	if !bytes.Equal(data, want) {
		t.Errorf("v0003/data = %x, want zarr's %x", data, want)
	}
	// A chunk the server does not have, asked for by name.
	if got := step("stat v0003/1", func() error {
		if _, err := os.Stat(filepath.Join(mnt, "v0003", "1")); !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("stat of a chunk the server does not have: %v, want ENOENT", err)
		}
		return nil
	}); got.GET+got.RangedGET != 0 {
		t.Errorf("stat of a missing chunk: %+v; want no read", got)
	}
}

// TestHTTPMountNotConsolidated: a dataset without consolidated metadata
// on a web server is refused, with one line that says why, and exit
// status 1.
func TestHTTPMountNotConsolidated(t *testing.T) {
	out := t.TempDir()
	if b, err := exec.Command(python, "-c", genGroupScript, out, "4", "0").CombinedOutput(); err != nil {
		t.Fatalf("writing the group: %v\n%s", err, b)
	}
	srv := etagServer(t, filepath.Join(out, "tree"))
	mnt := filepath.Join(t.TempDir(), "mnt")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := runBinary(t, nil, "mount", "--daemon", srv.URL+"#mode=zarr,http", mnt)
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	if code != 1 || len(lines) != 1 || !strings.Contains(stderr, "consolidated metadata") {
		t.Errorf("mount of a dataset without .zmetadata: exit %d, stderr %q; want 1 and one line about consolidated metadata", code, stderr)
	}
	if _, ok := mountedAt(mnt); ok {
		unmount(t, mnt)
		t.Error("it was mounted")
	}
}

// TestHTTPMountFaults mounts through a fault proxy that breaks a third
// of the requests (resets, bodies cut short, stalls, 503s) and reads every
// array of the zarr-python consolidated fixture: the same bytes as the
// reference, bodies resumed, nothing short.
func TestHTTPMountFaults(t *testing.T) {
	set, ds := findDataset(t, "zarr-consolidated")
	dir, _ := consolidatedCopy(t, set, ds)
	srv := etagServer(t, dir)
	p := faultproxy.Start(t, srv.URL)
	t.Setenv("NCZARRFS_TIMEOUT", "5s")
	mnt := mount(t, p.URL+"#mode="+httpMode(set))
	p.InjectRandom(0.3, []faultproxy.Fault{
		{Kind: faultproxy.ResetBeforeReply},
		{Kind: faultproxy.ResetMidBody},
		{Kind: faultproxy.CutBody},
		{Kind: faultproxy.StallMidBody},
		{Kind: faultproxy.Answer, Status: 503},
	}, uint64(testSeed(t)))
	for _, a := range ds.Arrays {
		if a.Error || a.Expected == "" {
			continue
		}
		want, err := os.ReadFile(filepath.Join(set.Dir, a.Expected))
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(mnt, a.Path, "data"))
		if err != nil || !sameData(a, got, want) {
			t.Errorf("%s/data under faults: %d bytes, %v; want the reference's %d", a.Path, len(got), err, len(want))
		}
	}
	p.InjectRandom(0, nil, 0)
	s := readStats(t, mnt)
	t.Logf("injected %v; resumed %v, throttled %v", p.Injected(), s["store.pacing.resumed"], s["store.pacing.throttled"])
}

// TestHTTPMountV3 serves the zarrita datasets a web server can serve (a
// root zarr.json with consolidated_metadata, or a root array) from
// python3 -m http.server and mounts them: the same files and bytes as the
// tree. The others (v3 groups without consolidated metadata) are
// refused.
func TestHTTPMountV3(t *testing.T) {
	set := v3Fixtures(t)
	served := 0
	for _, ds := range set.Datasets {
		t.Run(ds.Name, func(t *testing.T) {
			t.Parallel()
			dir, ok := consolidatedCopy(t, set, ds)
			if !ok && ds.Name == "v3-sharded" {
				// Shards are read by Range requests: give it what
				// zarr-python 3's consolidate_metadata writes.
				consolidateV3(t, dir)
				ok = true
			}
			base := pythonHTTPServer(t, dir)
			if !ok {
				mnt := filepath.Join(t.TempDir(), "mnt")
				if err := os.Mkdir(mnt, 0o755); err != nil {
					t.Fatal(err)
				}
				_, stderr, code := runBinary(t, nil, "mount", "--daemon", base+"#mode=zarr,http", mnt)
				if code != 1 || !strings.Contains(stderr, "consolidated metadata") {
					t.Errorf("mount of a v3 group without consolidated metadata: exit %d, %q; want 1 and a line saying why", code, stderr)
				}
				if _, mounted := mountedAt(mnt); mounted {
					unmount(t, mnt)
				}
				return
			}
			rel, err := filepath.Rel(set.Dir, dir)
			if err != nil {
				t.Fatal(err)
			}
			copied := ds
			copied.Tree = rel
			mnt := mount(t, base+"#mode=zarr,http")
			checkDataset(t, mnt, set, copied)
			if ds.Name == "v3-sharded" {
				// From a server that honours Range, a shard's index
				// and inner chunks are read by ranged GETs.
				srv := etagServer(t, dir)
				mnt := mount(t, srv.URL+"#mode=zarr,http")
				checkDataset(t, mnt, set, copied)
				if got := readRequests(t, mnt); got.RangedGET == 0 {
					t.Errorf("sharded array read with %+v; want ranged GETs", got)
				}
			}
		})
		if ds.Name == "v3-consolidated" || ds.Name == "v3-root-array" || ds.Name == "v3-sharded" {
			served++
		}
	}
	if served != 3 {
		t.Errorf("served %d of v3-consolidated, v3-root-array and v3-sharded; want all", served)
	}
}

// consolidateV3 adds to the root zarr.json of the v3 tree dir the
// consolidated_metadata of every node below it, as zarr-python 3's
// consolidate_metadata does (inline: each node's zarr.json by its path).
func consolidateV3(t *testing.T, dir string) {
	t.Helper()
	nodes := map[string]any{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != "zarr.json" || filepath.Dir(p) == dir {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		var doc any
		if err := json.Unmarshal(b, &doc); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		rel, err := filepath.Rel(dir, filepath.Dir(p))
		nodes[filepath.ToSlash(rel)] = doc
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	rootFile := filepath.Join(dir, "zarr.json")
	b, err := os.ReadFile(rootFile)
	if err != nil {
		t.Fatal(err)
	}
	var root map[string]any
	if err := json.Unmarshal(b, &root); err != nil {
		t.Fatal(err)
	}
	root["consolidated_metadata"] = map[string]any{"kind": "inline", "must_understand": false, "metadata": nodes}
	if b, err = json.MarshalIndent(root, "", "  "); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(rootFile, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
