// Package test holds the end-to-end tests of nczarrfs: they build the
// binary, mount datasets produced at test time by reference tools
// (test/fixtures/gen_*.py) and compare what the mount shows with what those
// tools say the dataset holds.
//
// This file is the harness shared by every test of the package (the S3
// tests included): fixtures, nczarrfsBinary, mount and checkDataset.
package test

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nczarrfs/nczarrfs/internal/mountinfo"
)

// python is the interpreter that has zarr, numcodecs, xarray and netCDF4.
// The python3 on PATH may be another one without those packages.
const python = "/usr/bin/python3"

// Bounds on waiting for the daemon. They catch hangs; they are not
// assertions about speed.
const (
	mountWait   = 30 * time.Second
	unmountWait = 10 * time.Second
)

// workDir is this process's scratch directory: generated fixtures and the
// race-built binary. TestMain creates and removes it.
var workDir string

func TestMain(m *testing.M) {
	if dir := os.Getenv(etagServeEnv); dir != "" {
		fmt.Fprintln(os.Stderr, serveETags(dir, os.Getenv(etagAddrEnv)))
		os.Exit(1)
	}
	dir, err := os.MkdirTemp("", "nczarrfs-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	workDir = dir
	code := m.Run()
	if err := os.RemoveAll(dir); err != nil {
		fmt.Fprintln(os.Stderr, "removing test work directory:", err)
	}
	os.Exit(code)
}

// fixtureSet is the output of one generator: the folder it wrote and the
// datasets its manifest.json lists.
type fixtureSet struct {
	Dir       string    // absolute folder the generator wrote into
	Generator string    // file name of the generator, e.g. "gen_zarr.py"
	Datasets  []dataset `json:"datasets"`
}

// dataset mirrors one manifest entry (see test/fixtures/README.md).
type dataset struct {
	Name    string  `json:"name"`
	Tree    string  `json:"tree"`     // directory tree, relative to the set's Dir
	Zip     string  `json:"zip"`      // zip of the tree, "" when none
	ZipRoot string  `json:"zip_root"` // folder inside the zip holding the dataset
	Arrays  []array `json:"arrays"`
}

// array mirrors one array of a manifest entry.
type array struct {
	Path     string  `json:"path"`
	Dtype    string  `json:"dtype"`
	Shape    []int64 `json:"shape"`
	Itemsize int64   `json:"itemsize"`
	Expected string  `json:"expected"` // relative to the set's Dir; "" for error arrays
	// JSON is, for a variable-length array (served as data.json, not
	// data), its expected data.json relative to the set's Dir.
	JSON  string `json:"json"`
	Error bool   `json:"error"`
}

// TreePath is the absolute path of the dataset's directory tree.
func (ds dataset) TreePath(set fixtureSet) string { return filepath.Join(set.Dir, ds.Tree) }

// ZipPath is the absolute path of the dataset's zip file ("" when none).
func (ds dataset) ZipPath(set fixtureSet) string {
	if ds.Zip == "" {
		return ""
	}
	return filepath.Join(set.Dir, ds.Zip)
}

var (
	fixturesOnce sync.Once
	fixtureSets  []fixtureSet
	fixtureErrs  []string // one message per generator that failed
	fixtureNotes []string // what the generators printed on stderr
	notesOnce    sync.Once
)

// fixtures runs every test/fixtures/gen_*.py once per test process, each
// into its own folder of the work directory, and returns their parsed
// manifests. A generator that fails is reported as an error of the calling
// test; the sets of the others are still returned.
func fixtures(t testing.TB) []fixtureSet {
	t.Helper()
	fixturesOnce.Do(generateFixtures)
	notesOnce.Do(func() {
		for _, note := range fixtureNotes {
			t.Log(note)
		}
	})
	for _, msg := range fixtureErrs {
		t.Error(msg)
	}
	if len(fixtureSets) == 0 {
		t.Fatal("no fixture generator produced anything")
	}
	return fixtureSets
}

func generateFixtures() {
	src, err := filepath.Abs("fixtures")
	if err != nil {
		fixtureErrs = append(fixtureErrs, err.Error())
		return
	}
	gens, err := filepath.Glob(filepath.Join(src, "gen_*.py"))
	if err != nil || len(gens) == 0 {
		fixtureErrs = append(fixtureErrs, fmt.Sprintf("no generators in %s (%v)", src, err))
		return
	}
	sort.Strings(gens)
	type result struct {
		set   fixtureSet
		notes string
		err   error
	}
	results := make([]result, len(gens))
	var wg sync.WaitGroup
	for i, gen := range gens {
		wg.Add(1)
		go func() {
			defer wg.Done()
			set, notes, err := runGenerator(gen)
			results[i] = result{set, notes, err}
		}()
	}
	wg.Wait()
	names := map[string]string{}
	for i, r := range results {
		if r.notes != "" {
			fixtureNotes = append(fixtureNotes, filepath.Base(gens[i])+": "+r.notes)
		}
		if r.err != nil {
			fixtureErrs = append(fixtureErrs, r.err.Error())
			continue
		}
		for _, ds := range r.set.Datasets {
			if other, dup := names[ds.Name]; dup {
				fixtureErrs = append(fixtureErrs, fmt.Sprintf("dataset name %q from both %s and %s", ds.Name, other, r.set.Generator))
			}
			names[ds.Name] = r.set.Generator
		}
		fixtureSets = append(fixtureSets, r.set)
	}
}

// runGenerator runs one generator into a fresh folder and reads its manifest.
func runGenerator(gen string) (fixtureSet, string, error) {
	base := filepath.Base(gen)
	out := filepath.Join(workDir, "fixtures", strings.TrimSuffix(base, ".py"))
	if err := os.MkdirAll(out, 0o755); err != nil {
		return fixtureSet{}, "", err
	}
	cmd := exec.Command(python, gen, out)
	cmd.Env = append(os.Environ(), "PYTHONHASHSEED=0", "PYTHONDONTWRITEBYTECODE=1")
	var stderr bytes.Buffer
	cmd.Stdout = &stderr
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fixtureSet{}, "", fmt.Errorf("generator %s failed: %v\n%s", base, err, stderr.String())
	}
	set := fixtureSet{Dir: out, Generator: base}
	raw, err := os.ReadFile(filepath.Join(out, "manifest.json"))
	if err != nil {
		return fixtureSet{}, "", fmt.Errorf("generator %s: %w", base, err)
	}
	if err := json.Unmarshal(raw, &set); err != nil {
		return fixtureSet{}, "", fmt.Errorf("generator %s: manifest.json: %w", base, err)
	}
	if err := validateSet(set); err != nil {
		return fixtureSet{}, "", fmt.Errorf("generator %s: manifest.json: %w", base, err)
	}
	return set, strings.TrimSpace(stderr.String()), nil
}

// validateSet checks a manifest against the contract in fixtures/README.md,
// so that a generator's mistake is not mistaken for a bug of the mount.
func validateSet(set fixtureSet) error {
	if len(set.Datasets) == 0 {
		return errors.New("no datasets")
	}
	for _, ds := range set.Datasets {
		if ds.Name == "" || ds.Tree == "" {
			return fmt.Errorf("dataset %+v: name and tree are required", ds)
		}
		if st, err := os.Stat(ds.TreePath(set)); err != nil || !st.IsDir() {
			return fmt.Errorf("dataset %s: tree %s is not a directory (%v)", ds.Name, ds.Tree, err)
		}
		if ds.Zip != "" {
			if _, err := os.Stat(ds.ZipPath(set)); err != nil {
				return fmt.Errorf("dataset %s: %w", ds.Name, err)
			}
		} else if ds.ZipRoot != "" {
			return fmt.Errorf("dataset %s: zip_root without zip", ds.Name)
		}
		seen := map[string]bool{}
		for _, a := range ds.Arrays {
			if a.Path == "" || seen[a.Path] || a.Itemsize <= 0 {
				return fmt.Errorf("dataset %s: bad or repeated array %+v", ds.Name, a)
			}
			seen[a.Path] = true
			if _, err := os.Stat(filepath.Join(ds.TreePath(set), a.Path, ".zarray")); err != nil {
				return fmt.Errorf("dataset %s: array %s: %w", ds.Name, a.Path, err)
			}
			if a.Error {
				continue
			}
			st, err := os.Stat(filepath.Join(set.Dir, a.Expected))
			if a.Expected == "" || err != nil {
				return fmt.Errorf("dataset %s: array %s: expected %q: %v", ds.Name, a.Path, a.Expected, err)
			}
			if st.Size() != elements(a.Shape)*a.Itemsize {
				return fmt.Errorf("dataset %s: array %s: expected holds %d bytes, shape %v itemsize %d says %d",
					ds.Name, a.Path, st.Size(), a.Shape, a.Itemsize, elements(a.Shape)*a.Itemsize)
			}
		}
		// Every array in the tree must be listed.
		err := filepath.WalkDir(ds.TreePath(set), func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || d.Name() != ".zarray" {
				return err
			}
			rel, _ := filepath.Rel(ds.TreePath(set), filepath.Dir(p))
			if !seen[filepath.ToSlash(rel)] {
				return fmt.Errorf("dataset %s: array %s is not in the manifest", ds.Name, rel)
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

func elements(shape []int64) int64 {
	n := int64(1)
	for _, s := range shape {
		n *= s
	}
	return n
}

// findDataset returns the named dataset of any set, failing the test when
// no generator made it.
func findDataset(t testing.TB, name string) (fixtureSet, dataset) {
	t.Helper()
	for _, set := range fixtures(t) {
		for _, ds := range set.Datasets {
			if ds.Name == name {
				return set, ds
			}
		}
	}
	t.Fatalf("no fixture dataset named %q", name)
	return fixtureSet{}, dataset{}
}

// builtBinary is a binary built once per test process.
type builtBinary struct {
	once sync.Once
	path string
	err  error
}

// get builds the binary, the first time, into workDir/dir/nczarrfs with
// the command that command makes (run in the module's root), and returns
// its path.
func (b *builtBinary) get(t testing.TB, dir string, command func(root, out string) *exec.Cmd) string {
	t.Helper()
	b.once.Do(func() {
		root, err := moduleRoot()
		if err != nil {
			b.err = err
			return
		}
		out := filepath.Join(workDir, dir, "nczarrfs")
		cmd := command(root, out)
		cmd.Dir = root
		if msg, err := cmd.CombinedOutput(); err != nil {
			b.err = fmt.Errorf("%s: %v\n%s", strings.Join(cmd.Args, " "), err, msg)
			return
		}
		b.path = out
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}

var raceBinary builtBinary

// nczarrfsBinary builds ./cmd/nczarrfs with the race detector, once per
// test process, and returns its path.
func nczarrfsBinary(t testing.TB) string {
	return raceBinary.get(t, "bin", func(_, out string) *exec.Cmd {
		return exec.Command("go", "build", "-race", "-o", out, "./cmd/nczarrfs")
	})
}

// moduleRoot is the nearest parent of the working directory with a go.mod.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the test directory")
		}
		dir = parent
	}
}

// syncBuffer is a bytes.Buffer safe for the daemon's output copier and the
// test reading it at the same time.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// daemon is a running "nczarrfs mount".
type daemon struct {
	mnt    string
	cmd    *exec.Cmd
	output *syncBuffer   // stdout and stderr
	done   chan struct{} // closed when the process has exited
	err    error         // the result of Wait, valid once done is closed
	// mounted is set once the mount appeared; a daemon that never mounted
	// was reported by startDaemon already.
	mounted bool
}

// exited reports whether the process has exited, without waiting.
func (d *daemon) exited() bool {
	select {
	case <-d.done:
		return true
	default:
		return false
	}
}

// wait waits up to limit for the process to exit.
func (d *daemon) wait(limit time.Duration) bool {
	timer := time.NewTimer(limit)
	defer timer.Stop()
	select {
	case <-d.done:
		return true
	case <-timer.C:
		return false
	}
}

// mount mounts source on a fresh mountpoint under t.TempDir() with
// "nczarrfs mount [extraArgs] source mnt" and returns the mountpoint. The
// test fails if the daemon exits before the mount appears. At cleanup the
// mountpoint is unmounted with fusermount3 -u and the daemon must exit 0.
func mount(t *testing.T, source string, extraArgs ...string) string {
	t.Helper()
	return startDaemon(t, source, extraArgs...).mnt
}

// startDaemon is mount, returning the process for tests that signal it.
func startDaemon(t *testing.T, source string, extraArgs ...string) *daemon {
	t.Helper()
	mnt := filepath.Join(t.TempDir(), "mnt")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"mount"}, extraArgs...)
	args = append(args, source, mnt)
	d, fstype := launch(t, nczarrfsBinary(t), mnt, args)
	if fstype != "fuse.nczarrfs" {
		t.Errorf("mount of %s has fstype %q, want fuse.nczarrfs", source, fstype)
	}
	return d
}

// launch starts bin with args, a daemon that mounts at mnt, and waits for
// the mount: the test fails if the daemon exits first or nothing is
// mounted within mountWait. It returns the mount's filesystem type too.
// Cleanup is stopDaemon's.
func launch(t *testing.T, bin, mnt string, args []string) (*daemon, string) {
	t.Helper()
	d := &daemon{mnt: mnt, output: &syncBuffer{}, done: make(chan struct{})}
	d.cmd = exec.Command(bin, args...)
	d.cmd.Stdout, d.cmd.Stderr = d.output, d.output
	if err := d.cmd.Start(); err != nil {
		t.Fatalf("starting nczarrfs: %v", err)
	}
	go func() {
		d.err = d.cmd.Wait()
		close(d.done)
	}()
	t.Cleanup(func() { stopDaemon(t, d) })
	deadline := time.Now().Add(mountWait)
	for {
		if fstype, ok := mountedAt(mnt); ok {
			d.mounted = true
			return d, fstype
		}
		if d.exited() {
			t.Fatalf("nczarrfs %s exited before mounting (%v):\n%s", strings.Join(args, " "), d.err, clip(d.output.String()))
		}
		if time.Now().After(deadline) {
			t.Fatalf("nczarrfs %s: no mount at %s after %v:\n%s", strings.Join(args, " "), mnt, mountWait, clip(d.output.String()))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// unmount runs fusermount3 -u mnt, again while it answers that the mount
// is busy, for up to unmountWait. A file this test process has just
// closed can stay open a moment longer in a child that another test's
// fork has not yet replaced by exec (every exec.Command copies the whole
// descriptor table), and the kernel refuses the unmount until then.
func unmount(t *testing.T, mnt string) error {
	t.Helper()
	deadline := time.Now().Add(unmountWait)
	for tries := 1; ; tries++ {
		msg, err := exec.Command("fusermount3", "-u", mnt).CombinedOutput()
		if err == nil {
			if tries > 1 {
				t.Logf("fusermount3 -u %s: done at try %d", mnt, tries)
			}
			return nil
		}
		if !bytes.Contains(msg, []byte("busy")) || time.Now().After(deadline) {
			return fmt.Errorf("fusermount3 -u %s (try %d): %v: %s", mnt, tries, err, msg)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stopDaemon unmounts d's mountpoint (unless the daemon is gone already),
// waits for it to exit and fails the test unless it exited 0.
func stopDaemon(t *testing.T, d *daemon) {
	t.Helper()
	if !d.exited() {
		if _, ok := mountedAt(d.mnt); ok {
			if err := unmount(t, d.mnt); err != nil {
				t.Error(err)
			}
		}
		if !d.wait(unmountWait) {
			t.Errorf("nczarrfs did not exit within %v of the unmount; killing it", unmountWait)
			_ = d.cmd.Process.Kill()
			<-d.done
		}
	}
	if d.err != nil && d.mounted {
		t.Errorf("nczarrfs exited with %v, want exit status 0", d.err)
	}
	if _, ok := mountedAt(d.mnt); ok {
		t.Errorf("%s is still mounted after nczarrfs exited", d.mnt)
		_ = exec.Command("fusermount3", "-u", "-z", d.mnt).Run()
	}
	if t.Failed() {
		t.Logf("nczarrfs output:\n%s", clip(d.output.String()))
	}
}

// clip shortens daemon output for the test log (--debug logs every FUSE
// request): the start and the end are kept.
func clip(s string) string {
	const keep = 8 << 10
	if len(s) <= 2*keep {
		return s
	}
	return s[:keep] + fmt.Sprintf("\n[... %d bytes left out ...]\n", len(s)-2*keep) + s[len(s)-keep:]
}

// mountedAt returns the filesystem type of the topmost mount at dir.
func mountedAt(dir string) (fstype string, ok bool) {
	m, ok := mountinfo.At(dir)
	return m.FSType, ok
}

// testSeed is the seed of the random reads; NCZARRFS_TEST_SEED replays one.
func testSeed(t testing.TB) int64 {
	t.Helper()
	if s := os.Getenv("NCZARRFS_TEST_SEED"); s != "" {
		seed, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatalf("NCZARRFS_TEST_SEED: %v", err)
		}
		return seed
	}
	return time.Now().UnixNano()
}

// checkDataset compares the mount of ds at mnt with the dataset's stored
// tree and expected values:
//   - every error array's data fails to read with EIO (first, so that the
//     checks after it show the rest of the dataset still works);
//   - every directory lists exactly the stored names, plus "data" and
//     info.json in array directories and .nczarrfs in the root;
//   - every stored file reads back byte for byte;
//   - every array's data has the expected size and content, read whole and
//     by random reads (seed logged) that cross chunk boundaries and EOF.
func checkDataset(t *testing.T, mnt string, set fixtureSet, ds dataset) {
	t.Helper()
	tree := ds.TreePath(set)
	arrays := map[string]array{}
	for _, a := range ds.Arrays {
		arrays[a.Path] = a
	}

	for _, a := range ds.Arrays {
		if a.Error {
			checkErrorArray(t, mnt, a)
		}
	}

	err := filepath.WalkDir(tree, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(tree, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if rel == "." {
			rel = ""
		}
		if d.IsDir() {
			a, isArray := arrays[rel]
			checkListing(t, p, filepath.Join(mnt, rel), rel, isArray, a.JSON != "")
			return nil
		}
		checkFile(t, p, filepath.Join(mnt, rel), rel)
		return nil
	})
	if err != nil {
		t.Fatalf("walking %s: %v", tree, err)
	}

	seed := testSeed(t)
	t.Logf("%s: random reads use seed %d (NCZARRFS_TEST_SEED replays it)", ds.Name, seed)
	rng := rand.New(rand.NewSource(seed))
	for _, a := range ds.Arrays {
		if a.Error {
			continue
		}
		if a.JSON != "" {
			checkDataJSON(t, mnt, a, filepath.Join(set.Dir, a.JSON))
			continue
		}
		want, err := os.ReadFile(filepath.Join(set.Dir, a.Expected))
		if err != nil {
			t.Fatal(err)
		}
		checkArray(t, mnt, tree, a, want, rng)
	}

	// Failing arrays fail the same way after all the successful reads.
	for _, a := range ds.Arrays {
		if a.Error {
			checkErrorArray(t, mnt, a)
		}
	}
}

// checkListing compares the names in the mounted directory with the stored
// one (plus "data" in an array directory), and their types.
func checkListing(t *testing.T, stored, mounted, rel string, isArray, isJSON bool) {
	t.Helper()
	want := map[string]bool{} // name -> is a directory
	entries, err := os.ReadDir(stored)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		want[e.Name()] = e.IsDir()
	}
	switch {
	case isJSON:
		want["data.json"] = false
	case isArray:
		want["data"] = false
	}
	// Of the other files the mount synthesizes (checked in fusefs), every
	// array has info.json and the root .nczarrfs, unless a stored name
	// hides them; data.npy, data.vrt, preview.png, index.html, dataset.nc and
	// header.cdl depend on the array, the group or the dataset, and are
	// left out of this comparison.
	optional := map[string]bool{"data.npy": true, "data.vrt": true, "preview.png": true, "index.html": true, "header.cdl": true, "dataset.nc": true}
	if _, stored := want["info.json"]; isArray && !stored {
		want["info.json"] = false
	}
	if _, stored := want[".nczarrfs"]; rel == "" && !stored {
		want[".nczarrfs"] = true
	}
	got, err := os.ReadDir(mounted)
	if err != nil {
		t.Errorf("listing /%s: %v", rel, err)
		return
	}
	var gotNames, wantNames []string
	for _, e := range got {
		isDir, ok := want[e.Name()]
		if !ok && optional[e.Name()] {
			continue
		}
		gotNames = append(gotNames, e.Name())
		if ok && isDir != e.IsDir() {
			t.Errorf("/%s: %s is a directory: %v, stored: %v", rel, e.Name(), e.IsDir(), isDir)
		}
	}
	for name := range want {
		wantNames = append(wantNames, name)
	}
	sort.Strings(gotNames)
	sort.Strings(wantNames)
	if !slices.Equal(gotNames, wantNames) {
		t.Errorf("listing /%s:\n got %q\nwant %q", rel, gotNames, wantNames)
	}
}

// checkDataJSON compares the data.json of a variable-length array with
// the expected document, as parsed values.
func checkDataJSON(t *testing.T, mnt string, a array, file string) {
	t.Helper()
	got, err := os.ReadFile(filepath.Join(mnt, a.Path, "data.json"))
	if err != nil {
		t.Errorf("%s/data.json: %v", a.Path, err)
		return
	}
	exp, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil || json.Unmarshal(exp, &w) != nil || !reflect.DeepEqual(g, w) {
		t.Errorf("%s/data.json (%v):\n%s\nwant\n%s", a.Path, err, got, exp)
	}
}

// checkFile compares a mounted file with the stored one.
func checkFile(t *testing.T, stored, mounted, rel string) {
	t.Helper()
	want, err := os.ReadFile(stored)
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(mounted)
	if err != nil {
		t.Errorf("stat /%s: %v", rel, err)
		return
	}
	if !st.Mode().IsRegular() || st.Size() != int64(len(want)) {
		t.Errorf("/%s: mode %v size %d, want a regular file of %d bytes", rel, st.Mode(), st.Size(), len(want))
	}
	got, err := os.ReadFile(mounted)
	if err != nil {
		t.Errorf("reading /%s: %v", rel, err)
		return
	}
	if !bytes.Equal(got, want) {
		t.Errorf("/%s: mounted bytes differ from the stored object (%d vs %d bytes)%s", rel, len(got), len(want), firstDiff(got, want, 1))
	}
}

// checkErrorArray requires reading the array's data to fail with EIO.
func checkErrorArray(t *testing.T, mnt string, a array) {
	t.Helper()
	_, err := os.ReadFile(filepath.Join(mnt, a.Path, "data"))
	if !errors.Is(err, syscall.EIO) {
		t.Errorf("%s/data: reading it gave %v, want EIO", a.Path, err)
	}
}

// checkArray reads an array's data whole and at random, comparing with want.
func checkArray(t *testing.T, mnt, tree string, a array, want []byte, rng *rand.Rand) {
	t.Helper()
	name := filepath.Join(mnt, a.Path, "data")
	st, err := os.Stat(name)
	if err != nil {
		t.Errorf("%s/data: %v", a.Path, err)
		return
	}
	if !st.Mode().IsRegular() || st.Size() != int64(len(want)) {
		t.Errorf("%s/data: mode %v size %d, want a regular file of %d bytes", a.Path, st.Mode(), st.Size(), len(want))
	}
	got, err := os.ReadFile(name)
	if err != nil {
		t.Errorf("%s/data: %v", a.Path, err)
		return
	}
	if !sameData(a, got, want) {
		t.Errorf("%s/data (%s): whole-file read differs from expected (%d vs %d bytes)%s",
			a.Path, a.Dtype, len(got), len(want), firstDiff(got, want, a.Itemsize))
		return // the random reads would only repeat it
	}

	f, err := os.Open(name)
	if err != nil {
		t.Errorf("%s/data: %v", a.Path, err)
		return
	}
	defer f.Close()
	// data is opened for direct I/O; a memory map of it (numpy.memmap)
	// must still work.
	if len(got) > 0 {
		m, err := syscall.Mmap(int(f.Fd()), 0, len(got), syscall.PROT_READ, syscall.MAP_SHARED)
		if err != nil {
			t.Errorf("%s/data: mmap: %v", a.Path, err)
		} else {
			if !bytes.Equal(m, got) {
				t.Errorf("%s/data: mapped bytes differ from read ones%s", a.Path, firstDiff(m, got, a.Itemsize))
			}
			syscall.Munmap(m)
		}
	}
	for _, r := range readPlan(rng, a, chunkShape(tree, a), int64(len(want))) {
		buf := make([]byte, r.n)
		n, err := f.ReadAt(buf, r.off)
		start := min(r.off, int64(len(want)))
		exp := want[start:min(r.off+r.n, int64(len(want)))]
		// io.ReaderAt: a short read comes with io.EOF, a full one without.
		wantErr := error(nil)
		if int64(len(exp)) < r.n {
			wantErr = io.EOF
		}
		if n != len(exp) || err != wantErr {
			t.Errorf("%s/data: ReadAt(%d bytes at %d) = %d, %v; want %d, %v", a.Path, r.n, r.off, n, err, len(exp), wantErr)
			continue
		}
		if !bytes.Equal(buf[:n], exp) {
			// Only NaNs of another bit pattern may differ: compare in place.
			whole := slices.Clone(want)
			copy(whole[start:], buf[:n])
			if !sameData(a, whole, want) {
				t.Errorf("%s/data: ReadAt(%d bytes at %d) differs from expected%s", a.Path, r.n, r.off, firstDiff(buf[:n], exp, 1))
			}
		}
	}
}

// sameData reports whether got and want, whole data files of a, hold the
// same elements. They must be equal byte for byte, except that a NaN
// matches any NaN: a fill value "NaN" in JSON has no sign or payload, and
// the reference tools do not agree on one (zarr-python gives a complex
// fill NaN the sign bit).
func sameData(a array, got, want []byte) bool {
	if bytes.Equal(got, want) {
		return true
	}
	if len(got) != len(want) || len(a.Dtype) < 2 {
		return false
	}
	part := a.Itemsize // bytes per floating-point number
	switch a.Dtype[1] {
	case 'f':
	case 'c':
		part /= 2
	default:
		return false
	}
	for i := 0; i+int(part) <= len(got); i += int(part) {
		g, w := got[i:i+int(part)], want[i:i+int(part)]
		if !bytes.Equal(g, w) && !(isNaN(g) && isNaN(w)) {
			return false
		}
	}
	return true
}

// isNaN reports whether b, a little-endian IEEE 754 number of 2, 4 or 8
// bytes, is a NaN.
func isNaN(b []byte) bool {
	switch len(b) {
	case 2:
		v := binary.LittleEndian.Uint16(b)
		return v&0x7c00 == 0x7c00 && v&0x03ff != 0
	case 4:
		return math.IsNaN(float64(math.Float32frombits(binary.LittleEndian.Uint32(b))))
	case 8:
		return math.IsNaN(math.Float64frombits(binary.LittleEndian.Uint64(b)))
	}
	return false
}

// firstDiff describes where two byte slices first differ.
func firstDiff(got, want []byte, itemsize int64) string {
	for i := 0; i < min(len(got), len(want)); i++ {
		if got[i] != want[i] {
			e := int64(i) / itemsize * itemsize
			end := func(b []byte) []byte { return b[e:min(int64(len(b)), e+itemsize)] }
			return fmt.Sprintf(": first at byte %d (element %d: got % x, want % x)", i, e/itemsize, end(got), end(want))
		}
	}
	return ""
}

// chunkShape reads the array's chunk shape from its stored .zarray (nil for
// a 0-d array or when it cannot be read).
func chunkShape(tree string, a array) []int64 {
	raw, err := os.ReadFile(filepath.Join(tree, a.Path, ".zarray"))
	if err != nil {
		return nil
	}
	var meta struct {
		Chunks []int64 `json:"chunks"`
	}
	if json.Unmarshal(raw, &meta) != nil || len(meta.Chunks) != len(a.Shape) {
		return nil
	}
	return meta.Chunks
}

// read is one ReadAt of a plan.
type read struct{ off, n int64 }

// readPlan returns about 50 reads of an array's data of size bytes: across
// chunk boundaries of the first and last dimension, at and after EOF,
// straddling EOF, and at random offsets and lengths.
func readPlan(rng *rand.Rand, a array, chunks []int64, size int64) []read {
	item := a.Itemsize
	var plan []read
	around := func(elem int64) { // a read from a little before elem to a little after
		before := 1 + rng.Int63n(3*item)
		after := 1 + rng.Int63n(3*item)
		off := max(0, elem*item-before)
		plan = append(plan, read{off, elem*item + after - off})
	}
	if len(chunks) == len(a.Shape) && len(chunks) > 0 && size > 0 {
		last := len(a.Shape) - 1
		rowLen := a.Shape[last]
		rows := size / item / max(1, rowLen)
		for k := int64(1); k*chunks[last] < rowLen && len(plan) < 8; k++ {
			row := rng.Int63n(max(1, rows))
			around(row*rowLen + k*chunks[last])
		}
		inner := size / item / max(1, a.Shape[0])
		for k := int64(1); k*chunks[0] < a.Shape[0] && len(plan) < 16; k++ {
			around(k*chunks[0]*inner + rng.Int63n(max(1, inner)))
		}
	}
	plan = append(plan,
		read{size, 1},                        // at EOF
		read{size + 1 + rng.Int63n(4096), 8}, // after EOF
		read{max(0, size-3), 16},             // straddling EOF
		read{0, size + 1},                    // everything and one more
		read{0, 1},
	)
	for len(plan) < 50 && size > 0 {
		off := rng.Int63n(size)
		var n int64
		switch rng.Intn(4) {
		case 0:
			n = 1 + rng.Int63n(item) // part of an element
		case 1:
			n = 1 + rng.Int63n(min(size, 256))
		default:
			n = 1 + rng.Int63n(min(size, 256<<10))
		}
		plan = append(plan, read{off, n})
	}
	return plan
}
