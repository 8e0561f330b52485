package test

// The soak: many readers for a long time through a real mount of the
// race-built binary over a real MinIO, with a chunk cache much smaller than
// the data, so that chunks are fetched, decoded, evicted and recycled all
// along. It checks every byte read against zarr-python's values, that the
// daemon's goroutine count and RSS stay flat, and that SIGTERM under that
// load ends the daemon cleanly. make soak runs it (NCZARRFS_SOAK=10m);
// signal_test.go runs the same load briefly in make test.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/nczarrfs/nczarrfs/internal/miniotest"
)

// soakScript writes, with zarr-python, the soak's dataset: "a", 4M
// float64 in uncompressed chunks of 64Ki elements (32 MiB), and "b", 2048
// x 2048 int32 in zlib-compressed chunks of 256 x 256 (16 MiB), with the
// data files zarr reads back in expected/.
//
//	soakScript OUTDIR
const soakScript = `
import json, os, sys
import numpy as np, zarr, numcodecs
out = sys.argv[1]
tree = os.path.join(out, "tree")
g = zarr.open_group(zarr.DirectoryStore(tree), mode="w")
rng = np.random.default_rng(42)
a = g.create_dataset("a", shape=(4 << 20,), chunks=(64 << 10,), dtype="<f8", compressor=None, fill_value=0)
a[:] = rng.standard_normal(4 << 20)
b = g.create_dataset("b", shape=(2048, 2048), chunks=(256, 256), dtype="<i4", compressor=numcodecs.Zlib(level=1), fill_value=0)
b[:] = (np.arange(2048 * 2048, dtype="<i8").reshape(2048, 2048) * 7919 % 100003).astype("<i4")
os.makedirs(os.path.join(out, "expected"))
r = zarr.open_group(zarr.DirectoryStore(tree), mode="r")
for name in ("a", "b"):
    v = r[name][...]
    with open(os.path.join(out, "expected", name + ".bin"), "wb") as f:
        f.write(v.astype(v.dtype.newbyteorder("<")).tobytes())
`

// soakData is the soak's dataset in MinIO and the expected data files.
type soakData struct {
	source string            // the S3 URL of the dataset
	want   map[string][]byte // array path -> expected data file
}

// setupSoak writes the soak dataset with zarr-python and uploads it to a
// fresh MinIO server.
func setupSoak(t *testing.T) soakData {
	t.Helper()
	srv := miniotest.Start(t)
	s3Env(t, srv)
	out := t.TempDir()
	if msg, err := exec.Command(python, "-c", soakScript, out).CombinedOutput(); err != nil {
		t.Fatalf("writing the soak dataset with zarr-python: %v\n%s", err, msg)
	}
	srv.CreateBucket(t, "soak")
	srv.PutTree(t, "soak", "ds", filepath.Join(out, "tree"))
	sd := soakData{source: srv.Endpoint + "/soak/ds#mode=zarr,s3", want: map[string][]byte{}}
	for _, name := range []string{"a", "b"} {
		b, err := os.ReadFile(filepath.Join(out, "expected", name+".bin"))
		if err != nil {
			t.Fatal(err)
		}
		sd.want[name] = b
	}
	return sd
}

// probeSource is added to package main of the soak's binary (go build
// -overlay, the tree is untouched): with NCZARRFS_PROBE set to a path it
// writes there, every second, the daemon's goroutine count on the first
// line and its goroutine profile after it, so that a test can watch the
// count and show where goroutines pile up.
const probeSource = `package main

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"time"
)

func init() {
	path := os.Getenv("NCZARRFS_PROBE")
	if path == "" {
		return
	}
	go func() {
		for {
			var b bytes.Buffer
			fmt.Fprintf(&b, "%d\n", runtime.NumGoroutine())
			pprof.Lookup("goroutine").WriteTo(&b, 1)
			if os.WriteFile(path+".tmp", b.Bytes(), 0o644) == nil {
				os.Rename(path+".tmp", path)
			}
			time.Sleep(time.Second)
		}
	}()
}
`

var (
	probeOnce sync.Once
	probePath string
	probeErr  error
)

// probeBinary builds ./cmd/nczarrfs with the race detector and the probe,
// once per test process.
func probeBinary(t testing.TB) string {
	t.Helper()
	probeOnce.Do(func() {
		root, err := moduleRoot()
		if err != nil {
			probeErr = err
			return
		}
		dir := filepath.Join(workDir, "probe")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			probeErr = err
			return
		}
		src := filepath.Join(dir, "probe.go")
		if err := os.WriteFile(src, []byte(probeSource), 0o644); err != nil {
			probeErr = err
			return
		}
		overlay, err := json.Marshal(map[string]map[string]string{
			"Replace": {filepath.Join(root, "cmd", "nczarrfs", "zz_probe_overlay.go"): src},
		})
		if err != nil {
			probeErr = err
			return
		}
		ov := filepath.Join(dir, "overlay.json")
		if err := os.WriteFile(ov, overlay, 0o644); err != nil {
			probeErr = err
			return
		}
		out := filepath.Join(dir, "nczarrfs")
		cmd := exec.Command("go", "build", "-race", "-overlay", ov, "-o", out, "./cmd/nczarrfs")
		cmd.Dir = root
		if msg, err := cmd.CombinedOutput(); err != nil {
			probeErr = fmt.Errorf("go build -race -overlay (probe) ./cmd/nczarrfs: %v\n%s", err, msg)
			return
		}
		probePath = out
	})
	if probeErr != nil {
		t.Fatal(probeErr)
	}
	return probePath
}

// loadConfig is one run of runLoad.
type loadConfig struct {
	duration time.Duration
	readers  int
	cache    string
	// watch samples the daemon's goroutines and RSS and checks that
	// they stay flat (meaningful only over minutes).
	watch bool
}

// sample is one reading of the daemon's goroutine count and RSS.
type sample struct {
	at         time.Duration
	goroutines int
	rssKiB     int64
	reads      int64
}

// runLoad mounts sd (with the probe binary when cfg.watch is set), runs
// cfg.readers readers for cfg.duration (half of them scan sequentially,
// half read at random, each through its own O_DIRECT file so that every
// read reaches the daemon), then sends SIGTERM while they still read. Every read before the signal
// must return the right bytes; after it, a read may fail but never return
// wrong bytes; the daemon must exit 0 within the bound and leave nothing
// mounted.
func runLoad(t *testing.T, sd soakData, cfg loadConfig) {
	probe := filepath.Join(t.TempDir(), "probe")
	bin := nczarrfsBinary(t)
	if cfg.watch {
		t.Setenv("NCZARRFS_PROBE", probe)
		bin = probeBinary(t)
	}
	d := startDaemonBinary(t, bin, sd.source, "--cache-size", cfg.cache)
	pid := d.cmd.Process.Pid

	seed := uint64(testSeed(t))
	t.Logf("%d readers for %v, cache %s, seed %d (NCZARRFS_TEST_SEED replays it)", cfg.readers, cfg.duration, cfg.cache, seed)
	names := slices.Sorted(func(yield func(string) bool) {
		for k := range sd.want {
			if !yield(k) {
				return
			}
		}
	})
	var (
		signalled atomic.Bool // SIGTERM sent: errors are expected from now on
		stop      = make(chan struct{})
		reads     atomic.Int64
		readBytes atomic.Int64
		failed    atomic.Int64 // reads that failed after SIGTERM
		wg        sync.WaitGroup
	)
	for r := range cfg.readers {
		rng := rand.New(rand.NewPCG(seed, uint64(r)))
		name := names[r%len(names)]
		want := sd.want[name]
		f, err := os.OpenFile(filepath.Join(d.mnt, name, "data"), os.O_RDONLY|syscall.O_DIRECT, 0)
		if err != nil {
			t.Fatal(err)
		}
		sequential := r%2 == 0
		wg.Go(func() {
			defer f.Close()
			off := rng.Int64N(int64(len(want)))
			for {
				select {
				case <-stop:
					return
				default:
				}
				var n int
				if sequential {
					if off >= int64(len(want)) {
						off = 0
					}
					n = 128 << 10
				} else {
					off = rng.Int64N(int64(len(want)))
					n = 1 + rng.IntN(256<<10)
				}
				buf := make([]byte, n)
				got, err := f.ReadAt(buf, off)
				exp := want[off:min(off+int64(n), int64(len(want)))]
				right := got <= len(exp) && bytes.Equal(buf[:got], exp[:got])
				switch {
				case !right:
					t.Errorf("%s/data: %d bytes at %d: got %d bytes, %v; want %d bytes%s", name, n, off, got, err, len(exp), firstDiff(buf[:got], exp, 1))
					return
				case got == len(exp):
					reads.Add(1)
					readBytes.Add(int64(got))
				case signalled.Load():
					failed.Add(1)
					return // the daemon is stopping: reads may fail, never lie
				default:
					t.Errorf("%s/data: %d bytes at %d: %d bytes, %v; want %d bytes", name, n, off, got, err, len(exp))
					return
				}
				off += int64(got)
			}
		})
	}

	// Watch the daemon while the readers run.
	var samples []sample
	start := time.Now()
	every := min(10*time.Second, max(time.Second, cfg.duration/60))
	tick := time.NewTicker(every)
	for time.Since(start) < cfg.duration && !t.Failed() {
		<-tick.C
		if d.exited() {
			t.Fatalf("the daemon exited under load (%v):\n%s", d.err, clip(d.output.String()))
		}
		s := sample{at: time.Since(start), reads: reads.Load()}
		s.goroutines, _ = probeGoroutines(probe)
		s.rssKiB = rss(pid)
		samples = append(samples, s)
		if s.at.Truncate(time.Minute) != (s.at - every).Truncate(time.Minute) {
			t.Logf("%v: %d reads, %d goroutines, RSS %d MiB", s.at.Round(time.Second), s.reads, s.goroutines, s.rssKiB>>10)
		}
	}
	tick.Stop()
	elapsed := time.Since(start)
	profile, _ := os.ReadFile(probe)

	// SIGTERM under load.
	signalled.Store(true)
	if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	termAt := time.Now()
	exited := d.wait(mountWait)
	close(stop)
	wg.Wait()
	switch {
	case !exited:
		t.Errorf("nczarrfs still running %v after SIGTERM under load:\n%s", mountWait, clip(d.output.String()))
	case d.err != nil:
		t.Errorf("after SIGTERM under load nczarrfs exited with %v, want status 0", d.err)
	default:
		t.Logf("SIGTERM under load: exit status 0 after %v, %d reads failed after the signal, none wrong", time.Since(termAt).Round(time.Millisecond), failed.Load())
	}
	if _, ok := mountedAt(d.mnt); ok {
		t.Errorf("%s is still mounted after SIGTERM", d.mnt)
	}
	t.Logf("%d reads, %d MiB, all right, in %v (%.1f MiB/s)", reads.Load(), readBytes.Load()>>20, elapsed.Round(time.Second),
		float64(readBytes.Load())/(1<<20)/elapsed.Seconds())
	if reads.Load() == 0 {
		t.Error("no read completed")
	}
	if cfg.watch {
		checkFlat(t, samples, profile)
	}
}

// checkFlat checks the samples of a long run: the goroutine count of the
// last minute stays within the range seen around minute 1 (plus 10% for
// the requests in flight at any moment), and the RSS of the last minute is
// at most 10% above the RSS around minute 1 (a leak grows it; a fall, of
// memory taken by the start-up burst, is logged). A window of a minute is taken for
// each (30-90 s, and the last 60 s), and its mean RSS compared, because
// the RSS of a garbage-collected process moves by several percent between
// two collections.
func checkFlat(t *testing.T, samples []sample, profile []byte) {
	t.Helper()
	var first, last []sample
	end := samples[len(samples)-1].at
	for _, s := range samples {
		if s.at >= 30*time.Second && s.at <= 90*time.Second {
			first = append(first, s)
		}
		if s.at >= end-time.Minute {
			last = append(last, s)
		}
	}
	if len(first) == 0 || len(last) == 0 || end < 3*time.Minute {
		t.Errorf("the run is too short to tell whether goroutines and RSS are flat: %v", end.Round(time.Second))
		return
	}
	byGoroutines := func(a, b sample) int { return a.goroutines - b.goroutines }
	firstMax := slices.MaxFunc(first, byGoroutines).goroutines
	firstMin := slices.MinFunc(first, byGoroutines).goroutines
	lastMax := slices.MaxFunc(last, byGoroutines).goroutines
	lastMin := slices.MinFunc(last, byGoroutines).goroutines
	rss1, rssEnd := meanRSS(first), meanRSS(last)
	change := 100 * float64(rssEnd-rss1) / float64(rss1)
	t.Logf("goroutines: %d-%d around minute 1, %d-%d in the last minute; RSS: %.1f MiB around minute 1, %.1f MiB in the last minute (%+.1f%%)",
		firstMin, firstMax, lastMin, lastMax, float64(rss1)/1024, float64(rssEnd)/1024, change)
	if lastMin > firstMax+firstMax/10 {
		t.Errorf("goroutines grew: at least %d through the last minute, at most %d around minute 1; profile:\n%s", lastMin, firstMax, clip(string(profile)))
	}
	switch {
	case change > 10:
		t.Errorf("RSS grew by %.1f%% from minute 1 to the last minute, more than 10%%", change)
	case change < -10:
		// Minute 1 holds the start-up burst (32 readers missing the
		// cache at once); the runtime returns what it no longer needs
		// to the OS over the following minutes. A fall is no leak.
		t.Logf("RSS fell by %.1f%% from minute 1: memory of the start-up burst returned to the OS", -change)
	}
}

// meanRSS is the mean RSS of samples, in KiB.
func meanRSS(samples []sample) int64 {
	var sum int64
	for _, s := range samples {
		sum += s.rssKiB
	}
	return sum / int64(len(samples))
}

// probeGoroutines reads the goroutine count the probe last wrote.
func probeGoroutines(path string) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	return strconv.Atoi(line)
}

// rss is the resident set size of process pid in KiB (0 when unknown).
func rss(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}
	return 0
}

// soakDuration is $NCZARRFS_SOAK, a Go duration; 0 when unset.
func soakDuration(t *testing.T) time.Duration {
	v := os.Getenv("NCZARRFS_SOAK")
	if v == "" {
		return 0
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		t.Fatalf("NCZARRFS_SOAK=%q is not a positive duration", v)
	}
	return d
}

// TestSoak is the long run (make soak): 32 readers for $NCZARRFS_SOAK
// through a mount over MinIO with an 8 MiB cache for 48 MiB of data, then
// SIGTERM under load. Without NCZARRFS_SOAK it is skipped: it is not part
// of make test, which runs the short form (TestSIGTERMUnderLoad).
func TestSoak(t *testing.T) {
	duration := soakDuration(t)
	if duration == 0 {
		t.Skip("the soak runs with NCZARRFS_SOAK set to a duration (make soak: 10m)")
	}
	sd := setupSoak(t)
	runLoad(t, sd, loadConfig{duration: duration, readers: 32, cache: "8MiB", watch: true})
}
