package test

import (
	"archive/zip"
	"bytes"
	"errors"
	"io"
	"maps"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nczarrfs/nczarrfs/internal/miniotest"
)

// TestMountDirectories mounts every fixture dataset's directory tree by its
// plain path and checks it against the stored tree and expected values.
func TestMountDirectories(t *testing.T) {
	for _, set := range fixtures(t) {
		for _, ds := range set.Datasets {
			t.Run(ds.Name, func(t *testing.T) {
				t.Parallel()
				mnt := mount(t, ds.TreePath(set))
				checkDataset(t, mnt, set, ds)
			})
		}
	}
}

// TestMountZips mounts every fixture zip by its plain path: datasets at the
// top of the zip (zarr-python's ZipStore) and under one folder (netcdf-c's
// zip driver), deflated and stored. These mounts serve data through the
// page cache (--page-cache), the directory mounts by direct I/O, so that
// every dataset is read both ways.
func TestMountZips(t *testing.T) {
	n := 0
	for _, set := range fixtures(t) {
		for _, ds := range set.Datasets {
			if ds.Zip == "" {
				continue
			}
			n++
			t.Run(ds.Name, func(t *testing.T) {
				t.Parallel()
				checkZipMatchesTree(t, set, ds)
				mnt := mount(t, ds.ZipPath(set), "--page-cache")
				checkDataset(t, mnt, set, ds)
			})
		}
	}
	if n == 0 {
		t.Fatal("no fixture has a zip")
	}
}

// checkZipMatchesTree makes sure a zip fixture holds exactly its tree under
// zip_root, so that comparing its mount with the tree is fair.
func checkZipMatchesTree(t *testing.T, set fixtureSet, ds dataset) {
	t.Helper()
	zr, err := zip.OpenReader(ds.ZipPath(set))
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	prefix := ""
	if ds.ZipRoot != "" {
		prefix = ds.ZipRoot + "/"
	}
	files := 0
	for _, f := range zr.File {
		if strings.HasSuffix(f.Name, "/") {
			continue
		}
		if !strings.HasPrefix(f.Name, prefix) {
			t.Fatalf("%s: entry %s is outside zip_root %q", ds.Zip, f.Name, ds.ZipRoot)
		}
		want, err := os.ReadFile(filepath.Join(ds.TreePath(set), strings.TrimPrefix(f.Name, prefix)))
		if err != nil {
			t.Fatalf("%s: entry %s: %v", ds.Zip, f.Name, err)
		}
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(rc)
		rc.Close()
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%s: entry %s differs from the tree (%v)", ds.Zip, f.Name, err)
		}
		files++
	}
	stored := 0
	_ = filepath.WalkDir(ds.TreePath(set), func(_ string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			stored++
		}
		return err
	})
	if files != stored {
		t.Fatalf("%s holds %d files, its tree %d", ds.Zip, files, stored)
	}
}

// TestMountURLForms mounts fixtures through NCZarr URLs instead of plain
// paths: with and without the storage mode, zarr and nczarr formats.
func TestMountURLForms(t *testing.T) {
	tests := []struct {
		name    string
		dataset string
		zip     bool   // use the dataset's zip rather than its tree
		mode    string // the URL fragment, "" for none
		args    []string
	}{
		{name: "nczarr,file", dataset: "nczarr-4.9.0-basic", mode: "#mode=nczarr,file"},
		{name: "nczarr,zip", dataset: "nczarr-4.9.0-basic", zip: true, mode: "#mode=nczarr,zip"},
		{name: "zarr,file", dataset: "zarr-dtypes", mode: "#mode=zarr,file"},
		{name: "zarr,zip", dataset: "zarr-dtypes", zip: true, mode: "#mode=zarr,zip"},
		{name: "inferred file", dataset: "nczarr-4.9.3-basic", mode: "#mode=nczarr"},
		{name: "inferred zip", dataset: "nczarr-4.9.3-basic", zip: true, mode: "#mode=nczarr"},
		{name: "no fragment file", dataset: "zarr-layout", mode: ""},
		{name: "no fragment zip", dataset: "zarr-layout", zip: true, mode: ""},
		{name: "debug and small cache", dataset: "zarr-fill", mode: "#mode=zarr,file", args: []string{"--debug", "--cache-size", "64KiB"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set, ds := findDataset(t, tt.dataset)
			path := ds.TreePath(set)
			if tt.zip {
				if path = ds.ZipPath(set); path == "" {
					t.Fatalf("dataset %s has no zip", ds.Name)
				}
			}
			mnt := mount(t, "file://"+path+tt.mode, tt.args...)
			checkDataset(t, mnt, set, ds)
		})
	}
}

// TestReadOnly tries every kind of change inside a mount: each must fail
// with EROFS and leave the dataset as it was.
func TestReadOnly(t *testing.T) {
	set, ds := findDataset(t, "nczarr-4.9.0-basic")
	mnt := mount(t, ds.TreePath(set))
	file := filepath.Join(mnt, ".zgroup")
	data := filepath.Join(mnt, "v_int", "data")
	dir := filepath.Join(mnt, "g1")
	tests := []struct {
		name string
		op   func() error
	}{
		{"create", func() error { f, err := os.Create(filepath.Join(mnt, "new")); closeIf(f); return err }},
		{"create in group", func() error { f, err := os.Create(filepath.Join(dir, "new")); closeIf(f); return err }},
		{"open file for writing", func() error { f, err := os.OpenFile(file, os.O_WRONLY, 0); closeIf(f); return err }},
		{"open data for read-write", func() error { f, err := os.OpenFile(data, os.O_RDWR, 0); closeIf(f); return err }},
		{"open with O_TRUNC", func() error { f, err := os.OpenFile(file, os.O_RDONLY|os.O_TRUNC, 0); closeIf(f); return err }},
		{"mkdir", func() error { return os.Mkdir(filepath.Join(mnt, "newdir"), 0o755) }},
		{"mkdir in array", func() error { return os.Mkdir(filepath.Join(mnt, "v_int", "newdir"), 0o755) }},
		{"rename file", func() error { return os.Rename(file, filepath.Join(mnt, "renamed")) }},
		{"rename group", func() error { return os.Rename(dir, filepath.Join(mnt, "g9")) }},
		{"unlink file", func() error { return os.Remove(file) }},
		{"unlink data", func() error { return os.Remove(data) }},
		{"rmdir", func() error { return syscall.Rmdir(filepath.Join(mnt, "empty_group")) }},
		{"truncate file", func() error { return os.Truncate(file, 0) }},
		{"truncate data", func() error { return os.Truncate(data, 1) }},
		{"chmod", func() error { return os.Chmod(file, 0o777) }},
		{"chmod dir", func() error { return os.Chmod(dir, 0o777) }},
		{"chown", func() error { return os.Chown(file, 1, 1) }},
		{"chtimes", func() error { return os.Chtimes(data, time.Unix(0, 0), time.Unix(0, 0)) }},
		{"symlink", func() error { return os.Symlink(".zgroup", filepath.Join(mnt, "link")) }},
		{"hard link", func() error { return os.Link(file, filepath.Join(mnt, "hard")) }},
		{"mknod fifo", func() error { return syscall.Mkfifo(filepath.Join(mnt, "fifo"), 0o644) }},
		{"setxattr", func() error { return syscall.Setxattr(file, "user.test", []byte("x"), 0) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.op(); !errors.Is(err, syscall.EROFS) {
				t.Errorf("got %v, want EROFS", err)
			}
		})
	}
	checkDataset(t, mnt, set, ds)
}

func closeIf(f *os.File) {
	if f != nil {
		f.Close()
	}
}

// TestSignalUnmount stops the daemon with SIGTERM and with SIGINT: each
// must unmount and exit 0.
func TestSignalUnmount(t *testing.T) {
	set, ds := findDataset(t, "zarr-dtypes")
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			d := startDaemon(t, ds.TreePath(set))
			// The mount works before the signal...
			if _, err := os.ReadFile(filepath.Join(d.mnt, ".zgroup")); err != nil {
				t.Fatal(err)
			}
			if err := d.cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			if !d.wait(unmountWait) {
				t.Fatalf("nczarrfs still running %v after %v", unmountWait, sig)
			}
			if d.err != nil {
				t.Errorf("after %v nczarrfs exited with %v, want exit status 0", sig, d.err)
			}
			if _, ok := mountedAt(d.mnt); ok {
				t.Errorf("%s still mounted after %v", d.mnt, sig)
			}
			// ...and the mountpoint is an empty directory after it.
			if entries, err := os.ReadDir(d.mnt); err != nil || len(entries) != 0 {
				t.Errorf("mountpoint after unmount: %d entries, %v; want an empty directory", len(entries), err)
			}
		})
	}
}

// TestSignalWhileReading sends SIGTERM while readers are busy: the daemon
// must still unmount and exit 0 once they let go.
func TestSignalWhileReading(t *testing.T) {
	set, ds := findDataset(t, "zarr-layout")
	d := startDaemon(t, ds.TreePath(set), "--cache-size", "64KiB")
	data := filepath.Join(d.mnt, "big", "data")
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := os.ReadFile(data); err != nil {
					return // the unmount ends reads with an error; that is expected
				}
			}
		}()
	}
	time.Sleep(100 * time.Millisecond) // let the readers get going; not a timing assertion
	if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	close(stop)
	wg.Wait()
	if !d.wait(unmountWait) {
		t.Fatalf("nczarrfs still running %v after SIGTERM with readers", unmountWait)
	}
	if d.err != nil {
		t.Errorf("nczarrfs exited with %v, want exit status 0", d.err)
	}
}

// TestCLIErrors runs the binary on bad input: it must exit non-zero, say
// what is wrong on stderr, and mount nothing.
func TestCLIErrors(t *testing.T) {
	set, ds := findDataset(t, "zarr-dtypes")
	good := ds.TreePath(set)
	tmp := t.TempDir()
	emptyDir := filepath.Join(tmp, "empty.file")
	mustMkdir(t, emptyDir)
	notZip := filepath.Join(tmp, "notzip.zip")
	mustWrite(t, notZip, []byte("this is not a zip file"))
	noDatasetZip := filepath.Join(tmp, "nodataset.zip")
	writeZip(t, noDatasetZip, map[string]string{"readme.txt": "no dataset here", "dir/other.txt": "x"})
	plainFile := filepath.Join(tmp, "plain.txt")
	mustWrite(t, plainFile, []byte("hello"))
	badJSON := filepath.Join(tmp, "badjson.file")
	mustMkdir(t, badJSON)
	mustWrite(t, filepath.Join(badJSON, ".zgroup"), []byte(`{"zarr_format": 2`))

	tests := []struct {
		name string
		args []string // after "mount"; "MNT" is replaced by a fresh mountpoint
		want []string // substrings of stderr
	}{
		{"missing source", []string{"/nonexistent/nczarrfs/source.file", "MNT"}, []string{"/nonexistent/nczarrfs/source.file"}},
		{"missing zip", []string{"/nonexistent/nczarrfs/source.zip", "MNT"}, []string{"/nonexistent/nczarrfs/source.zip"}},
		{"directory without dataset", []string{emptyDir, "MNT"}, []string{emptyDir}},
		{"file that is not a zip", []string{notZip, "MNT"}, []string{notZip}},
		{"zip without dataset", []string{noDatasetZip, "MNT"}, []string{noDatasetZip}},
		{"plain file", []string{plainFile, "MNT"}, []string{plainFile}},
		{"corrupt .zgroup", []string{badJSON, "MNT"}, []string{".zgroup"}},
		{"missing mountpoint", []string{good, "/nonexistent/nczarrfs/mnt"}, []string{"/nonexistent/nczarrfs/mnt"}},
		{"mountpoint is a file", []string{good, plainFile}, []string{plainFile}},
		{"unknown mode", []string{"file://" + good + "#mode=nczarr,bogus", "MNT"}, []string{"bogus"}},
		{"unknown scheme", []string{"gopher://host/bucket/key", "MNT"}, []string{"gopher"}},
		{"file URL to missing path", []string{"file:///nonexistent/nczarrfs/x.zip#mode=nczarr,zip", "MNT"}, []string{"/nonexistent/nczarrfs/x.zip"}},
		{"zip mode on a directory", []string{"file://" + good + "#mode=zarr,zip", "MNT"}, []string{good}},
		{"bad URL", []string{"s3://%zz/key", "MNT"}, nil},
		{"no arguments", nil, nil},
		{"one argument", []string{good}, nil},
		{"three arguments", []string{good, "MNT", "extra"}, nil},
		{"bad cache size", []string{"--cache-size", "lots", good, "MNT"}, []string{"lots"}},
		{"unknown flag", []string{"--no-such-flag", good, "MNT"}, []string{"no-such-flag"}},
	}
	bin := nczarrfsBinary(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mnt := filepath.Join(t.TempDir(), "mnt")
			mustMkdir(t, mnt)
			args := []string{"mount"}
			for _, a := range tt.args {
				args = append(args, strings.ReplaceAll(a, "MNT", mnt))
			}
			cmd := exec.Command(bin, args...)
			var stderr syncBuffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			var err error
			select {
			case err = <-done:
			case <-time.After(mountWait):
				_ = cmd.Process.Kill()
				<-done
				if _, ok := mountedAt(mnt); ok {
					_ = exec.Command("fusermount3", "-u", "-z", mnt).Run()
				}
				t.Fatalf("nczarrfs %q still running after %v (it should have failed):\n%s", args, mountWait, stderr.String())
			}
			if _, ok := mountedAt(mnt); ok {
				t.Errorf("%s is mounted", mnt)
				_ = exec.Command("fusermount3", "-u", "-z", mnt).Run()
			}
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() == 0 {
				t.Errorf("nczarrfs %q: %v, want a non-zero exit status", args, err)
			}
			msg := stderr.String()
			if strings.TrimSpace(msg) == "" {
				t.Errorf("nczarrfs %q: nothing on stderr", args)
			}
			if strings.Contains(msg, "panic:") || strings.Contains(msg, "goroutine ") {
				t.Errorf("nczarrfs %q panicked:\n%s", args, msg)
			}
			for _, w := range tt.want {
				if !strings.Contains(msg, w) {
					t.Errorf("nczarrfs %q: stderr %q does not name %q", args, msg, w)
				}
			}
		})
	}
}

// TestConcurrentReaders reads random ranges of the same data files from
// many goroutines at once, through shared and separate descriptors, with
// the default cache and with one so small that chunks are evicted all the
// time. The daemon is race-built: a data race makes it exit non-zero.
func TestConcurrentReaders(t *testing.T) {
	set, ds := findDataset(t, "zarr-layout")
	targets := []string{"big", "uneven", "order_f_3d", "nested/slash_3d"}
	expected := map[string][]byte{}
	for _, a := range ds.Arrays {
		if slices.Contains(targets, a.Path) {
			b, err := os.ReadFile(filepath.Join(set.Dir, a.Expected))
			if err != nil {
				t.Fatal(err)
			}
			expected[a.Path] = b
		}
	}
	if len(expected) != len(targets) {
		t.Fatalf("zarr-layout lacks some of %v", targets)
	}
	for _, args := range [][]string{nil, {"--cache-size", "64KiB"}} {
		t.Run("cache="+strings.Join(args, ""), func(t *testing.T) {
			mnt := mount(t, ds.TreePath(set), args...)
			seed := testSeed(t)
			t.Logf("seed %d", seed)
			shared := map[string]*os.File{}
			for p := range expected {
				f, err := os.Open(filepath.Join(mnt, p, "data"))
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				shared[p] = f
			}
			const readers = 8
			var wg sync.WaitGroup
			errs := make(chan string, readers)
			for r := range readers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					rng := rand.New(rand.NewSource(seed + int64(r)))
					if msg := concurrentReads(rng, mnt, shared, expected, r%2 == 0); msg != "" {
						errs <- msg
					}
				}()
			}
			wg.Wait()
			close(errs)
			for msg := range errs {
				t.Error(msg)
			}
		})
	}
}

// concurrentReads does one reader's share of TestConcurrentReaders and
// returns a description of the first wrong read, or "".
func concurrentReads(rng *rand.Rand, mnt string, shared map[string]*os.File, expected map[string][]byte, own bool) string {
	paths := slices.Sorted(maps.Keys(expected))
	for i := 0; i < 150; i++ {
		p := paths[rng.Intn(len(paths))]
		want := expected[p]
		f := shared[p]
		if own {
			var err error
			if f, err = os.Open(filepath.Join(mnt, p, "data")); err != nil {
				return err.Error()
			}
		}
		off := rng.Int63n(int64(len(want)))
		n := 1 + rng.Int63n(min(int64(len(want)), 128<<10))
		buf := make([]byte, n)
		got, err := f.ReadAt(buf, off)
		if own {
			f.Close()
		}
		end := min(off+n, int64(len(want)))
		if int64(got) != end-off || (err != nil && err != io.EOF) {
			return p + ": short or failed read: " + errString(err)
		}
		if !bytes.Equal(buf[:got], want[off:end]) {
			return p + ": wrong bytes" + firstDiff(buf[:got], want[off:end], 1)
		}
	}
	return ""
}

func errString(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

func mustMkdir(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
}

func mustWrite(t *testing.T, name string, b []byte) {
	t.Helper()
	if err := os.WriteFile(name, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// writeZip writes a zip holding files (name -> content).
func writeZip(t *testing.T, name string, files map[string]string) {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, n := range slices.Sorted(maps.Keys(files)) {
		w, err := zw.Create(n)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(w, files[n]); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, name, buf.Bytes())
}

// TestNoFUSEHint: a user who is not root and has no fusermount3 is told
// to install fuse3, and nothing is mounted. (Root mounts with mount(2)
// where fusermount3 is missing, as in the container image: TestImage.)
func TestNoFUSEHint(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run the daemon as another user")
	}
	set, ds := findDataset(t, "zarr-dtypes")
	home := t.TempDir()
	// nobody walks through the test's folders (0700 as made) to the
	// binary and the mountpoint; the dataset stays out of its reach,
	// and the daemon must refuse before it reads it.
	for _, dir := range []string{home, filepath.Dir(home)} {
		if err := os.Chmod(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	bin := filepath.Join(home, "nczarrfs")
	b, err := os.ReadFile(nczarrfsBinary(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	mnt := filepath.Join(home, "mnt")
	mustMkdir(t, mnt)
	if err := os.Chown(mnt, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", bin, "mount", ds.TreePath(set), mnt)
	cmd.Env = append(os.Environ(), "PATH="+t.TempDir())
	cmd.WaitDelay = mountWait
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("exit %v, want 1; output:\n%s", err, out)
	}
	if !strings.Contains(string(out), "install fuse3") {
		t.Errorf("output %q does not say to install fuse3", out)
	}
	if _, ok := mountedAt(mnt); ok {
		t.Errorf("%s is mounted", mnt)
	}
}

// TestLargeReadsLogNothing reads a 16 MiB array written by zarr-python in
// reads of 1 MiB, the largest the kernel sends, by direct I/O and through
// the page cache, and checks the bytes and that the daemon logged nothing
// but its start and stop: go-fuse once logged a warning for every 1 MiB
// READ (its splice path, which our replies never need, wanted a pipe
// larger than the system allows), and a foreground mount or --log-file
// filled with them.
func TestLargeReadsLogNothing(t *testing.T) {
	dir := t.TempDir()
	src, want := filepath.Join(dir, "large.zarr"), filepath.Join(dir, "expected.bin")
	gen := `import sys, numpy as np, zarr
z = zarr.open(sys.argv[1], mode="w", shape=(4096, 1024), chunks=(512, 1024), dtype="<f4", compressor=None)
z[...] = np.arange(4096 * 1024, dtype="<f4").reshape(4096, 1024)
z[...].tofile(sys.argv[2])`
	if out, err := exec.Command(python, "-c", gen, src, want).CombinedOutput(); err != nil {
		t.Fatalf("zarr-python: %v\n%s", err, out)
	}
	expected, err := os.ReadFile(want)
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{nil, {"--page-cache"}} {
		t.Run("args="+strings.Join(args, ","), func(t *testing.T) {
			d := startDaemon(t, src, args...)
			f, err := os.Open(filepath.Join(d.mnt, "data"))
			if err != nil {
				t.Fatal(err)
			}
			var got []byte
			buf := make([]byte, 1<<20)
			for err == nil {
				var n int
				n, err = f.Read(buf)
				got = append(got, buf[:n]...)
			}
			f.Close()
			if err != io.EOF || !bytes.Equal(got, expected) {
				t.Fatalf("data: %v, %d bytes, want zarr-python's %d%s", err, len(got), len(expected), firstDiff(got, expected, 4))
			}
			stopDaemon(t, d)
			for _, line := range strings.Split(strings.TrimSpace(d.output.String()), "\n") {
				if !strings.HasPrefix(line, "nczarrfs: mounted ") && !strings.Contains(line, "level=INFO msg=unmounted") {
					t.Errorf("the daemon logged %q; want only its mounted and unmounted lines", line)
				}
			}
		})
	}
}

// TestHiddenObjectMount mounts a consolidated store whose .zmetadata
// declares arrays at ".zmetadata" and "g/.zattrs"
// (fixtures/hidden_object.py): both stay the stored files, byte for byte,
// and the real arrays read.
func TestHiddenObjectMount(t *testing.T) {
	src := filepath.Join(t.TempDir(), "hidden.zarr")
	if out, err := exec.Command(python, "fixtures/hidden_object.py", src).CombinedOutput(); err != nil {
		t.Fatalf("zarr-python: %v\n%s", err, out)
	}
	check := func(t *testing.T, mnt string) {
		for _, rel := range []string{".zmetadata", "g/.zattrs", "g/notes.txt"} {
			checkFile(t, filepath.Join(src, rel), filepath.Join(mnt, rel), rel)
		}
		if _, err := os.Stat(filepath.Join(mnt, "v", "data")); err != nil {
			t.Error(err)
		}
		if _, err := os.Stat(filepath.Join(mnt, "g", "w", "data")); err != nil {
			t.Error(err)
		}
	}
	t.Run("directory", func(t *testing.T) { check(t, mount(t, src)) })
	// On S3 the dataset's flat listing tells the objects from the nodes.
	t.Run("s3", func(t *testing.T) {
		srv := miniotest.Start(t)
		s3Env(t, srv)
		srv.CreateBucket(t, "hidden")
		srv.PutTree(t, "hidden", "ds", src)
		check(t, startDaemon(t, srv.Endpoint+"/hidden/ds#mode=zarr,s3").mnt)
	})
}
