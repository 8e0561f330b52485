package test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nczarrfs/nczarrfs/internal/testenv"
)

// Every object is read under a bound known before it is read
// (docs/codecs.md, "Bounds on stored objects"): these tests mount stores
// whose chunk objects are huge or endless and check that reading them
// fails with EIO soon, with one log line, in little memory, and that the
// daemon goes on serving the rest.

// hugeChunk is the size of the sparse chunk files: 3 GiB.
const hugeChunk = 3 << 30

// maxHWM is the most memory (VmHWM) the daemon may have used.
const maxHWM = 512 << 20

// boundDataset writes, with zarr-python, a consolidated Zarr v2 group at
// dir with three arrays of 64x50 float64 in chunks of 32x50: zstd (zstd),
// raw (no compressor) and ok (zstd), and ok's values as numpy gives them
// (C order, little-endian) in the file want.
func boundDataset(t *testing.T, dir, want string) {
	t.Helper()
	script := `import sys, zarr, numcodecs, numpy as np
out, want = sys.argv[1], sys.argv[2]
a = np.random.default_rng(3).standard_normal((64, 50))
g = zarr.open_group(out, mode="w")
g.create_dataset("zstd", data=a, chunks=(32, 50), compressor=numcodecs.Zstd(1))
g.create_dataset("raw", data=a, chunks=(32, 50), compressor=None)
g.create_dataset("ok", data=a, chunks=(32, 50), compressor=numcodecs.Zstd(1))
zarr.consolidate_metadata(out)
a.astype("<f8").tofile(want)
`
	out, err := exec.Command(python, "-c", script, dir, want).CombinedOutput()
	if err != nil {
		testenv.Require(t, "zarr-python", fmt.Errorf("%v: %s", err, out))
	}
}

// vmHWM is the peak resident memory of process pid, from
// /proc/PID/status.
func vmHWM(t *testing.T, pid int) int64 {
	t.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				t.Fatalf("VmHWM %q: %v", v, err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no VmHWM in /proc/%d/status", pid)
	return 0
}

// readFailsEIO reads the file p whole and checks that it fails with EIO; it
// returns how long that took.
func readFailsEIO(t *testing.T, p string) time.Duration {
	t.Helper()
	start := time.Now()
	b, err := os.ReadFile(p)
	took := time.Since(start)
	if !errors.Is(err, syscall.EIO) {
		t.Errorf("reading %s: %d bytes, %v; want EIO", p, len(b), err)
	}
	return took
}

// checkBoundLog checks that the daemon's log has one line for the object
// key, naming its size and its bound.
func checkBoundLog(t *testing.T, d *daemon, key string, sizes ...string) {
	t.Helper()
	var lines []string
	for _, l := range strings.Split(d.output.String(), "\n") {
		if strings.Contains(l, "object "+key+" is ") {
			lines = append(lines, l)
		}
	}
	if len(lines) != 1 {
		t.Errorf("%d log lines for %s, want 1:\n%s", len(lines), key, clip(d.output.String()))
		return
	}
	for _, s := range sizes {
		if !strings.Contains(lines[0], s) {
			t.Errorf("log line %q does not say %s", lines[0], s)
		}
	}
}

// checkOK reads the ok array and compares it with numpy's bytes.
func checkOK(t *testing.T, mnt, want string) {
	t.Helper()
	w, err := os.ReadFile(want)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(mnt, "ok", "data"))
	if err != nil || !bytes.Equal(got, w) {
		t.Errorf("ok/data: %d bytes, %v; want numpy's %d bytes", len(got), err, len(w))
	}
}

// TestOversizedChunkFile mounts a folder whose zstd chunk and raw chunk
// objects are 3 GiB sparse files: reading either array's data fails with
// EIO, one log line names each object with both sizes, the daemon's peak
// memory stays under 512 MiB, and the other array still reads right.
func TestOversizedChunkFile(t *testing.T) {
	work := t.TempDir()
	dir, want := filepath.Join(work, "ds"), filepath.Join(work, "ok.bin")
	boundDataset(t, dir, want)
	for _, key := range []string{"zstd/0.0", "raw/0.0"} {
		if err := os.Truncate(filepath.Join(dir, filepath.FromSlash(key)), hugeChunk); err != nil {
			t.Fatal(err)
		}
	}
	d := startDaemon(t, dir)
	// The bound of a zstd chunk of 32x50 float64 (12,800 bytes):
	// ZSTD_COMPRESSBOUND is 12,800 + 50 + 57, and 4 KiB of slack.
	const zstdBound = 12800 + 12800/256 + (128<<10-12800)>>11 + 4096
	for _, tc := range []struct {
		array, key string
		sizes      []string
	}{
		{"zstd", "zstd/0.0", []string{strconv.Itoa(hugeChunk), strconv.Itoa(zstdBound)}},
		{"raw", "raw/0.0", []string{strconv.Itoa(hugeChunk), "12800"}},
	} {
		t.Run(tc.array, func(t *testing.T) {
			took := readFailsEIO(t, filepath.Join(d.mnt, tc.array, "data"))
			t.Logf("%s/data: EIO after %v", tc.array, took)
			readFailsEIO(t, filepath.Join(d.mnt, tc.array, "data")) // and again: the same, no second line
			if tc.array == "zstd" {
				checkBoundLog(t, d, tc.key, tc.sizes...)
			} else if out := d.output.String(); !strings.Contains(out, tc.key) || !strings.Contains(out, tc.sizes[0]) {
				t.Errorf("no log line names %s and its %s bytes:\n%s", tc.key, tc.sizes[0], clip(out))
			}
		})
	}
	checkOK(t, d.mnt, want)
	if d.exited() {
		t.Fatalf("the daemon exited: %v", d.err)
	}
	hwm := vmHWM(t, d.cmd.Process.Pid)
	t.Logf("daemon VmHWM %d MiB", hwm>>20)
	if hwm > maxHWM {
		t.Errorf("daemon VmHWM %d MiB, over %d MiB", hwm>>20, maxHWM>>20)
	}
}

// The environment that makes this test binary an endless server
// (serveEndless), read in init, before TestMain.
const (
	endlessDirEnv  = "NCZARRFS_TEST_ENDLESS_DIR"
	endlessAddrEnv = "NCZARRFS_TEST_ENDLESS_ADDR"
	endlessKeyEnv  = "NCZARRFS_TEST_ENDLESS_KEY"
)

func init() {
	if dir := os.Getenv(endlessDirEnv); dir != "" {
		fmt.Fprintln(os.Stderr, serveEndless(dir, os.Getenv(endlessAddrEnv), os.Getenv(endlessKeyEnv)))
		os.Exit(1)
	}
}

// serveEndless serves dir on addr, except that a GET of key answers an
// endless body with no length (chunked), which ends only when the client
// goes away.
func serveEndless(dir, addr, key string) error {
	fs := http.FileServer(http.Dir(dir))
	return http.ListenAndServe(addr, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if path.Clean(r.URL.Path) != "/"+key {
			fs.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		w.WriteHeader(http.StatusOK)
		if r.Method == http.MethodHead {
			return
		}
		buf := make([]byte, 256<<10)
		for r.Context().Err() == nil {
			if _, err := w.Write(buf); err != nil {
				return
			}
		}
	}))
}

// endlessServer runs serveEndless in a process of its own (this test
// binary again): the test reads the mount, and a server in the test's
// own process would stall with it on a page fault.
func endlessServer(t *testing.T, dir, key string) string {
	t.Helper()
	addr := testenv.FreeAddr(t)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), endlessDirEnv+"="+dir, endlessAddrEnv+"="+addr, endlessKeyEnv+"="+key)
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
			return "http://" + addr
		}
		if time.Now().After(deadline) {
			t.Fatalf("the endless server on %s did not start", addr)
		}
	}
}

// TestEndlessChunkBody mounts, with --timeout 5s, a web server that
// answers one chunk key with an endless body: reading that array fails
// with EIO, one log line names the key and the bound, the daemon's peak
// memory stays under 512 MiB, and it goes on serving the other arrays.
func TestEndlessChunkBody(t *testing.T) {
	work := t.TempDir()
	dir, want := filepath.Join(work, "ds"), filepath.Join(work, "ok.bin")
	boundDataset(t, dir, want)
	url := endlessServer(t, dir, "zstd/0.0")
	d := startDaemon(t, url+"#mode=zarr,http", "--timeout", "5s")
	took := readFailsEIO(t, filepath.Join(d.mnt, "zstd", "data"))
	t.Logf("zstd/data: EIO after %v", took)
	readFailsEIO(t, filepath.Join(d.mnt, "zstd", "data"))
	const zstdBound = 12800 + 12800/256 + (128<<10-12800)>>11 + 4096
	checkBoundLog(t, d, "zstd/0.0", "at least "+strconv.Itoa(zstdBound+1), strconv.Itoa(zstdBound))
	checkOK(t, d.mnt, want)
	raw, err := os.ReadFile(filepath.Join(d.mnt, "raw", "data"))
	if w, _ := os.ReadFile(want); err != nil || !bytes.Equal(raw, w) {
		t.Errorf("raw/data: %d bytes, %v", len(raw), err)
	}
	if d.exited() {
		t.Fatalf("the daemon exited: %v", d.err)
	}
	hwm := vmHWM(t, d.cmd.Process.Pid)
	t.Logf("daemon VmHWM %d MiB", hwm>>20)
	if hwm > maxHWM {
		t.Errorf("daemon VmHWM %d MiB, over %d MiB", hwm>>20, maxHWM>>20)
	}
}
