package test

// End-to-end tests of the commands that read a SOURCE without mounting:
// nczarrfs ls, info, header and cat, on every SOURCE form (directory tree,
// zip, file:// URLs with #mode=, and S3 through a real MinIO on 127.0.0.1).
// What they print is checked against the fixtures' manifests (written by
// ncgen and zarr-python), against ncdump -h and numpy.load, and for
// agreement between the forms.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/nczarrfs/nczarrfs/internal/miniotest"
)

// commandResult is what one run of the binary printed and how it ended.
type commandResult struct {
	stdout []byte
	stderr string
	err    error
}

// nczarrfsCommand runs the binary with args and the test process's
// environment, and returns what it printed.
func nczarrfsCommand(t *testing.T, args ...string) commandResult {
	t.Helper()
	cmd := exec.Command(nczarrfsBinary(t), args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return commandResult{stdout.Bytes(), stderr.String(), err}
}

// mustRun is nczarrfsCommand for a run that must succeed with nothing on
// stderr; it returns stdout.
func mustRun(t *testing.T, args ...string) []byte {
	t.Helper()
	r := nczarrfsCommand(t, args...)
	if r.err != nil || r.stderr != "" {
		t.Fatalf("nczarrfs %s: %v\nstderr: %s", strings.Join(args, " "), r.err, r.stderr)
	}
	return r.stdout
}

// sourceForm is one way of naming a fixture dataset on the command line.
type sourceForm struct {
	name string
	args []string // SOURCE, then any flags it needs
}

// sourceForms are the forms of the dataset ds: its tree and its zip on
// disk, each also as a file:// URL with #mode=, and S3 (a s3:// URL with
// --endpoint-url, and an http URL with #mode=...,s3) of its upload under
// bucket/ds.Name on srv.
func sourceForms(srv *miniotest.Server, set fixtureSet, ds dataset, bucket string) []sourceForm {
	format, _, _ := strings.Cut(s3Mode(set), ",")
	key := bucket + "/" + ds.Name
	return []sourceForm{
		{"tree", []string{ds.TreePath(set)}},
		{"tree-url", []string{"file://" + ds.TreePath(set) + "#mode=" + format + ",file"}},
		{"zip", []string{ds.ZipPath(set)}},
		{"zip-url", []string{"file://" + ds.ZipPath(set) + "#mode=" + format + ",zip"}},
		{"s3-scheme", []string{"s3://" + key, "--endpoint-url", srv.Endpoint}},
		{"s3-endpoint-url", []string{srv.Endpoint + "/" + key + "#mode=" + s3Mode(set)}},
	}
}

// run runs "nczarrfs CMD [OPTS] [FORM FLAGS] SOURCE [ARGS]", every flag
// before the arguments, and returns stdout.
func (f sourceForm) run(t *testing.T, cmd string, opts []string, args ...string) []byte {
	t.Helper()
	line := append(append(append([]string{cmd}, opts...), f.args[1:]...), f.args[0])
	return mustRun(t, append(line, args...)...)
}

// TestCommandsOnEverySource runs ls, info, header and cat on an NCZarr
// dataset written by ncgen through every SOURCE form: the tree's output
// must agree with the manifest and ncdump -h, and every other form must
// print exactly what the tree's does (the header but for its name line,
// which comes from the path).
func TestCommandsOnEverySource(t *testing.T) {
	srv := miniotest.Start(t)
	s3Env(t, srv)
	srv.CreateBucket(t, "commands")
	set, ds := findDataset(t, "nczarr-4.9.0-basic")
	if ds.Zip == "" {
		t.Fatalf("%s has no zip", ds.Name)
	}
	srv.PutTree(t, "commands", ds.Name, ds.TreePath(set))
	arr := ds.Arrays[len(ds.Arrays)-1]

	outputs := func(t *testing.T, f sourceForm) map[string][]byte {
		return map[string][]byte{
			"ls -R":           f.run(t, "ls", []string{"-R"}),
			"ls -R --json":    f.run(t, "ls", []string{"-R", "--json"}),
			"info":            f.run(t, "info", nil),
			"header":          []byte(withoutFirstLine(f.run(t, "header", nil))),
			"cat " + arr.Path: f.run(t, "cat", nil, arr.Path),
		}
	}
	forms := sourceForms(srv, set, ds, "commands")
	want := outputs(t, forms[0])
	checkLs(t, ds, want["ls -R --json"], want["ls -R"])
	checkInfo(t, ds, want["info"])
	ncdump, err := exec.Command("ncdump", "-h", "file://"+ds.TreePath(set)+"#mode=nczarr,file").Output()
	if err != nil {
		t.Fatalf("ncdump -h: %v", err)
	}
	if string(want["header"]) != withoutFirstLine(ncdump) {
		t.Errorf("header differs from ncdump -h:\n got %s\nwant %s", want["header"], ncdump)
	}
	checkCat(t, set, arr, want["cat "+arr.Path])

	for _, f := range forms[1:] {
		t.Run(f.name, func(t *testing.T) {
			got := outputs(t, f)
			for _, k := range slices.Sorted(maps.Keys(want)) {
				if !bytes.Equal(got[k], want[k]) {
					t.Errorf("%s differs from the tree's:\n got %.300q\nwant %.300q", k, got[k], want[k])
				}
			}
		})
	}
}

// checkLs checks ls -R --json and ls -R of ds: every array of the
// manifest, with its shape, and whether it can be read.
func checkLs(t *testing.T, ds dataset, lsJSON, ls []byte) {
	t.Helper()
	var entries []struct {
		Path, Kind, DType, Error string
		Shape                    []int64
	}
	if err := json.Unmarshal(lsJSON, &entries); err != nil {
		t.Fatalf("ls -R --json: %v\n%s", err, lsJSON)
	}
	listed := map[string]int{}
	for i, e := range entries {
		if e.Kind == "array" {
			listed[strings.TrimPrefix(e.Path, "/")] = i
		}
	}
	if len(listed) != len(ds.Arrays) {
		t.Errorf("ls -R --json lists %d arrays, the manifest %d", len(listed), len(ds.Arrays))
	}
	for _, a := range ds.Arrays {
		i, ok := listed[a.Path]
		if !ok {
			t.Errorf("ls -R --json does not list %s", a.Path)
			continue
		}
		e := entries[i]
		if len(a.Shape) > 0 && !slices.Equal(e.Shape, a.Shape) {
			t.Errorf("ls: %s has shape %v, the manifest %v", a.Path, e.Shape, a.Shape)
		}
		if (e.Error != "") != a.Error {
			t.Errorf("ls: %s error %q, the manifest says error=%v", a.Path, e.Error, a.Error)
		}
		if !bytes.Contains(ls, []byte(a.Path)) {
			t.Errorf("ls -R does not name %s:\n%s", a.Path, ls)
		}
	}
}

// checkInfo checks that info of the whole dataset gives every array of
// the manifest its shape and item size.
func checkInfo(t *testing.T, ds dataset, raw []byte) {
	t.Helper()
	var info struct {
		Arrays []struct {
			Path     string  `json:"path"`
			Shape    []int64 `json:"shape"`
			Itemsize int64   `json:"itemsize"`
		} `json:"arrays"`
	}
	if err := json.Unmarshal(raw, &info); err != nil {
		t.Fatalf("info: %v\n%.500s", err, raw)
	}
	byPath := map[string]int{}
	for i, a := range info.Arrays {
		byPath[a.Path] = i
	}
	for _, a := range ds.Arrays {
		i, ok := byPath["/"+a.Path]
		if !ok {
			t.Errorf("info does not hold /%s", a.Path)
			continue
		}
		got := info.Arrays[i]
		if (len(a.Shape) > 0 && !slices.Equal(got.Shape, a.Shape)) || got.Itemsize != a.Itemsize {
			t.Errorf("info /%s: shape %v itemsize %d, the manifest %v %d", a.Path, got.Shape, got.Itemsize, a.Shape, a.Itemsize)
		}
	}
}

// checkCat compares what cat printed for a with the expected bytes.
func checkCat(t *testing.T, set fixtureSet, a array, got []byte) {
	t.Helper()
	want, err := os.ReadFile(filepath.Join(set.Dir, a.Expected))
	if err != nil {
		t.Fatal(err)
	}
	if !sameData(a, got, want) {
		t.Errorf("cat %s: %d bytes, want %d%s", a.Path, len(got), len(want), firstDiff(got, want, a.Itemsize))
	}
}

// TestCatEveryDtype writes every array of zarr-python's dtype fixture
// with cat --npy -o and loads each with numpy.load, memory-mapped: the
// shape must be the manifest's and the elements the expected bytes. One
// array is also written plain, to stdout and with -o.
func TestCatEveryDtype(t *testing.T) {
	set, ds := findDataset(t, "zarr-dtypes")
	src := ds.TreePath(set)
	dir := t.TempDir()
	var files []string
	var arrays []array
	for _, a := range ds.Arrays {
		f := filepath.Join(dir, strings.ReplaceAll(a.Path, "/", "_")+".npy")
		mustRun(t, "cat", "--npy", "-o", f, src, a.Path)
		files = append(files, f)
		arrays = append(arrays, a)
	}
	checkNPY(t, set, files, arrays)

	a := ds.Arrays[0]
	out := mustRun(t, "cat", src, a.Path)
	checkCat(t, set, a, out)
	f := filepath.Join(dir, "plain.bin")
	mustRun(t, "cat", "-o", f, src, a.Path)
	if b, err := os.ReadFile(f); err != nil || !bytes.Equal(b, out) {
		t.Errorf("cat -o: %v, %d bytes differ from stdout's %d", err, len(b), len(out))
	}
}

// TestCatErrors checks that cat of an array with a bad chunk fails with
// one line naming the chunk's key, writes nothing, and leaves no -o file.
func TestCatErrors(t *testing.T) {
	set, ds := findDataset(t, "zarr-errors")
	src := ds.TreePath(set)
	n := 0
	for _, a := range ds.Arrays {
		if !a.Error {
			continue
		}
		n++
		out := filepath.Join(t.TempDir(), "out")
		r := nczarrfsCommand(t, "cat", "-o", out, src, a.Path)
		if r.err == nil || len(r.stdout) != 0 {
			t.Errorf("cat %s: %v with %d bytes on stdout, want a failure and none", a.Path, r.err, len(r.stdout))
		}
		if !strings.HasPrefix(r.stderr, "nczarrfs: ") || strings.Count(r.stderr, "\n") != 1 || !strings.Contains(r.stderr, a.Path) {
			t.Errorf("cat %s: error %q, want one line naming the array", a.Path, r.stderr)
		}
		if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("cat -o of %s left %s behind (%v)", a.Path, out, err)
		}
	}
	if n == 0 {
		t.Fatalf("%s has no error array", ds.Name)
	}
}

// checkNPY loads each .npy file with numpy.load, memory-mapped, in one
// Python run, and compares its shape and elements with the manifest's
// array and expected bytes.
func checkNPY(t *testing.T, set fixtureSet, files []string, arrays []array) {
	t.Helper()
	script := `import json, sys, numpy as np
for path in sys.argv[1:]:
    a = np.load(path, mmap_mode="r")
    b = np.ascontiguousarray(a).tobytes()
    sys.stdout.buffer.write(json.dumps({"shape": list(a.shape), "n": len(b)}).encode() + b"\n" + b)`
	out, err := exec.Command(python, append([]string{"-c", script}, files...)...).Output()
	if err != nil {
		t.Fatalf("numpy.load: %v", err)
	}
	for i, a := range arrays {
		line, rest, _ := bytes.Cut(out, []byte("\n"))
		var head struct {
			Shape []int64
			N     int
		}
		if err := json.Unmarshal(line, &head); err != nil || head.N > len(rest) {
			t.Fatalf("numpy.load %s: %v (%q)", a.Path, err, line)
		}
		elems := rest[:head.N]
		out = rest[head.N:]
		if !slices.Equal(head.Shape, a.Shape) && len(a.Shape) > 0 {
			t.Errorf("numpy.load %s: shape %v, want %v", files[i], head.Shape, a.Shape)
		}
		want, err := os.ReadFile(filepath.Join(set.Dir, a.Expected))
		if err != nil {
			t.Fatal(err)
		}
		if !sameData(a, elems, want) {
			t.Errorf("numpy.load %s: %d bytes of elements, want %d%s", files[i], len(elems), len(want), firstDiff(elems, want, a.Itemsize))
		}
	}
}

// withoutFirstLine drops the "netcdf NAME {" line, whose name comes from
// the path.
func withoutFirstLine(b []byte) string {
	_, rest, _ := bytes.Cut(b, []byte("\n"))
	return string(rest)
}

// TestCatProgress checks cat's progress bar on a 64 MiB array written by
// zarr-python: drawn on stderr when stderr is a terminal (script(1) gives
// cat one) and the output a file, and absent when stderr is a pipe. The
// bytes are the same either way.
func TestCatProgress(t *testing.T) {
	if _, err := exec.LookPath("script"); err != nil {
		t.Fatalf("script (util-linux) runs cat on a terminal: %v", err)
	}
	dir := t.TempDir()
	src, want := filepath.Join(dir, "long.zarr"), filepath.Join(dir, "expected.bin")
	gen := `import sys, numpy as np, zarr
z = zarr.open(sys.argv[1], mode="w", shape=(8192, 1024), chunks=(1024, 1024), dtype="<f8", fill_value=1.5)
z[100:200, :] = np.arange(100 * 1024, dtype="<f8").reshape(100, 1024)
z[...].astype("<f8").tofile(sys.argv[2])`
	if out, err := exec.Command(python, "-c", gen, src, want).CombinedOutput(); err != nil {
		t.Fatalf("zarr-python: %v\n%s", err, out)
	}
	expected, err := os.ReadFile(want)
	if err != nil {
		t.Fatal(err)
	}

	out := filepath.Join(dir, "out.bin")
	line := fmt.Sprintf("'%s' cat -o '%s' '%s' ''", nczarrfsBinary(t), out, src)
	tty, err := exec.Command("script", "-qec", line, "/dev/null").CombinedOutput()
	if err != nil {
		t.Fatalf("script -qec %q: %v\n%q", line, err, tty)
	}
	if last := lastRedraw(string(tty)); !strings.Contains(last, "100%") || !strings.Contains(last, "64.0 MiB / 64.0 MiB") || !strings.Contains(last, "/s") {
		t.Errorf("on a terminal, the bar ends with %q; want 100%% of 64.0 MiB and a throughput (all: %q)", last, tty)
	}
	if got, err := os.ReadFile(out); err != nil || !bytes.Equal(got, expected) {
		t.Errorf("cat -o on a terminal: %v, %d bytes, want zarr-python's %d", err, len(got), len(expected))
	}

	// Through pipes: the same bytes and nothing on stderr (mustRun).
	if got := mustRun(t, "cat", src, ""); !bytes.Equal(got, expected) {
		t.Errorf("cat to a pipe: %d bytes, want zarr-python's %d%s", len(got), len(expected), firstDiff(got, expected, 8))
	}
}

// lastRedraw is the last state of a line redrawn with carriage returns.
func lastRedraw(s string) string {
	s = strings.TrimRight(s, "\r\n ")
	return s[strings.LastIndexByte(s, '\r')+1:]
}
