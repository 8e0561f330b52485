package test

// Unreliable networks through a real mount of the real binary: MinIO
// behind internal/faultproxy (faults, throttling) behind internal/netem
// (20 ms round trip). A read returns every byte asked for, right, or
// fails with EIO; it is never short. A request is answered within
// --s3-timeout and a second, whatever the server does.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/nczarrfs/nczarrfs/internal/faultproxy"
	"github.com/nczarrfs/nczarrfs/internal/miniotest"
	"github.com/nczarrfs/nczarrfs/internal/netem"
)

// codecScript writes, with zarr-python, one array for each codec a
// dataset in S3 is likely to use (and none), each n float64 (int64 under
// delta) in chunks of chunk elements, with the data files zarr reads back
// in expected/.
//
//	codecScript OUTDIR N CHUNK
const codecScript = `
import os, sys
import numpy as np, zarr, numcodecs as nc
out, n, chunk = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
tree = os.path.join(out, "tree")
g = zarr.open_group(zarr.DirectoryStore(tree), mode="w")
rng = np.random.default_rng(5)
x = np.round(np.sin(np.arange(n) / 300.0) * 1000 + rng.standard_normal(n), 2)
arrays = {
    "none": (None, None, "<f8"),
    "zlib": (nc.Zlib(level=1), None, "<f8"),
    "gzip": (nc.GZip(level=1), None, "<f8"),
    "bz2": (nc.BZ2(level=1), None, "<f8"),
    "lzma": (nc.LZMA(), None, "<f8"),
    "zstd": (nc.Zstd(level=1), None, "<f8"),
    "lz4": (nc.LZ4(), None, "<f8"),
    "blosc-lz4": (nc.Blosc(cname="lz4", shuffle=nc.Blosc.SHUFFLE), None, "<f8"),
    "blosc-zstd": (nc.Blosc(cname="zstd", shuffle=nc.Blosc.BITSHUFFLE), None, "<f8"),
    "blosc-blosclz": (nc.Blosc(cname="blosclz", shuffle=nc.Blosc.NOSHUFFLE), None, "<f8"),
    "delta-zlib": (nc.Zlib(level=1), [nc.Delta(dtype="<i8")], "<i8"),
    "shuffle-zstd": (nc.Zstd(level=1), [nc.Shuffle(elementsize=8)], "<f8"),
}
os.makedirs(os.path.join(out, "expected"))
for name, (comp, filters, dt) in arrays.items():
    a = g.create_dataset(name, shape=(n,), chunks=(chunk,), dtype=dt, compressor=comp, filters=filters, fill_value=0)
    a[:] = (x * 100).astype(dt) if dt == "<i8" else x
    v = zarr.open_group(zarr.DirectoryStore(tree), mode="r")[name][...]
    with open(os.path.join(out, "expected", name + ".bin"), "wb") as f:
        f.write(v.astype(v.dtype.newbyteorder("<")).tobytes())
print(" ".join(arrays))
`

// netMount is a dataset in MinIO, mounted through a fault proxy and,
// when a delay is given, a link of that one-way delay in front of it.
type netMount struct {
	srv   *miniotest.Server
	proxy *faultproxy.Proxy
	d     *daemon
	want  map[string][]byte // array path -> zarr-python's data
}

// startNetMount uploads the dataset tree (with expected data files in
// expected/ for the arrays names) to a fresh MinIO and mounts it through
// a fault proxy and a link of one-way delay delay, with the daemon's
// extra arguments args and an S3 timeout of faultTimeout.
func startNetMount(t *testing.T, dir string, names []string, delay time.Duration, args ...string) *netMount {
	t.Helper()
	srv := miniotest.Start(t)
	s3Env(t, srv)
	t.Setenv("NCZARRFS_S3_TIMEOUT", faultTimeout.String())
	srv.CreateBucket(t, "net")
	srv.PutTree(t, "net", "ds", filepath.Join(dir, "tree"))
	m := &netMount{srv: srv, want: map[string][]byte{}}
	for _, name := range names {
		b, err := os.ReadFile(filepath.Join(dir, "expected", name+".bin"))
		if err != nil {
			t.Fatal(err)
		}
		m.want[name] = b
	}
	m.proxy = faultproxy.Start(t, srv.Endpoint)
	endpoint := m.proxy.URL
	if delay > 0 {
		link := netem.Start(t, strings.TrimPrefix(m.proxy.URL, "http://"), netem.Options{Delay: delay})
		endpoint = "http://" + link.Addr
	}
	m.d = startDaemon(t, endpoint+"/net/ds#mode=zarr,s3", args...)
	return m
}

// genCodecArrays writes codecScript's dataset and returns its folder and
// array names.
func genCodecArrays(t *testing.T, n, chunk int) (string, []string) {
	t.Helper()
	out := t.TempDir()
	msg, err := exec.Command(python, "-c", codecScript, out, fmt.Sprint(n), fmt.Sprint(chunk)).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			msg = ee.Stderr
		}
		t.Fatalf("writing the codec arrays with zarr-python: %v\n%s", err, msg)
	}
	return out, strings.Fields(string(msg))
}

// readOutcome is what one read of a data file gave.
type readOutcome int

const (
	readRight readOutcome = iota
	readEIO
	readShort // fewer bytes than asked, before the end, and no error
	readWrong // bytes other than zarr-python's
	readOther // another error
)

// preadCheck reads n bytes at off of f with one pread(2), as cat and cp
// do (os.File.ReadAt would hide a short read by asking again), and
// compares them with want. The buffer starts 1,000 bytes into a page, so
// that the kernel splits a read of 1 MiB into two FUSE requests, as it
// does for many programs' buffers: when the second failed and the first
// did not, the reader used to get the first part alone, with no error.
func preadCheck(f *os.File, want []byte, off int64, n int) (readOutcome, error) {
	buf := make([]byte, n+4096)[1000 : 1000+n]
	got, err := syscall.Pread(int(f.Fd()), buf, off)
	exp := want[off:min(off+int64(n), int64(len(want)))]
	switch {
	case errors.Is(err, syscall.EIO):
		return readEIO, err
	case err != nil:
		return readOther, err
	case got < len(exp):
		return readShort, fmt.Errorf("%d bytes at %d, want %d", got, off, len(exp))
	case got > len(exp) || !bytes.Equal(buf[:got], exp):
		return readWrong, fmt.Errorf("%d bytes at %d differ%s", got, off, firstDiff(buf[:got], exp, 8))
	}
	return readRight, nil
}

// openData opens an array's data file with O_DIRECT, so that every read
// reaches the daemon instead of the page cache.
func (m *netMount) openData(t *testing.T, name string) *os.File {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(m.d.mnt, name, "data"), os.O_RDONLY|syscall.O_DIRECT, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// pacing reads the store's pacing counters from .nczarrfs/stats.
func (m *netMount) pacing(t *testing.T) pacingStats {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(m.d.mnt, ".nczarrfs", "stats"))
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Store struct {
			Pacing *pacingStats `json:"pacing"`
		} `json:"store"`
		Errors map[string]int64 `json:"errors"`
	}
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatalf(".nczarrfs/stats: %v\n%s", err, b)
	}
	if s.Store.Pacing == nil {
		t.Fatalf(".nczarrfs/stats has no store.pacing:\n%s", b)
	}
	return *s.Store.Pacing
}

// pacingStats is store.pacing of .nczarrfs/stats.
type pacingStats struct {
	Throttled          int64 `json:"throttled"`
	RequestLimit       int   `json:"request_limit"`
	LowestRequestLimit int   `json:"lowest_request_limit"`
	Resumed            int64 `json:"resumed"`
	Changed            int64 `json:"changed"`
}

// TestS3MountReadsWhole breaks the chunk requests of reads in each way a
// connection breaks, a few times in a row (so that a resumed request
// breaks too): every read, one pread of up to 1 MiB from a buffer that is
// not page-aligned (the kernel splits it in two FUSE requests), returns
// every byte asked for, right. The mount counts the resumed bodies.
func TestS3MountReadsWhole(t *testing.T) {
	const chunk = 8192 // float64: 64 KiB chunks
	set, _ := genArray(t, 160*chunk, chunk, "<f8", 1000)
	m := startNetMount(t, set.Dir, []string{"v"}, 0, "--cache-size", "1MiB")
	f := m.openData(t, "v")
	want := m.want["v"]
	faults := []faultproxy.Fault{
		{Kind: faultproxy.ResetBeforeReply},
		{Kind: faultproxy.ResetMidBody},
		{Kind: faultproxy.CutBody},
		{Kind: faultproxy.CutBodyNoLength},
		{Kind: faultproxy.StallMidBody},
		faultproxy.SlowDown,
		faultproxy.InternalError,
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for i, fault := range faults {
		t.Run(fault.String(), func(t *testing.T) {
			before := injectedTotal(m.proxy)
			for j := range 3 {
				// Fresh chunks for each read: from the ranged path (a
				// jump) and the whole-chunk path alike.
				off := int64(i*20+j*6)*chunk*8 + int64(rng.IntN(4096))
				n := 1<<20 - 1 - rng.IntN(4096)
				m.proxy.Inject("ds/v/*", fault, 2)
				out, err := preadCheck(f, want, off, n)
				m.proxy.Lift("ds/v/*")
				if out != readRight {
					t.Errorf("read %d: %d bytes at %d under %v: %v", j, n, off, fault, err)
				}
			}
			if injectedTotal(m.proxy) == before {
				t.Error("no request met the fault")
			}
		})
	}
	p := m.pacing(t)
	t.Logf("faults injected: %v; stats: %+v", m.proxy.Injected(), p)
	if p.Resumed == 0 {
		t.Error("stats show no resumed body")
	}
	if m.d.exited() {
		t.Fatalf("the daemon exited:\n%s", clip(m.d.output.String()))
	}
}

// TestS3MountObjectChanged replaces a chunk in MinIO while a read of it
// waits on a stalled body: the read fails with EIO (its resumption,
// conditional on the first answer's ETag, is refused), never a mix of the
// two versions, the daemon logs the key, and .nczarrfs/errors shows it;
// after --metadata-ttl the new bytes are read, of that chunk and of one
// read and cached before it changed.
func TestS3MountObjectChanged(t *testing.T) {
	const chunk = 8192
	set, _ := genArray(t, 8*chunk, chunk, "<f8", 1000)
	// A stalled body is given up after a fifth of the timeout: 2 s to
	// replace the object before the read asks for the rest.
	const ttl = 2 * time.Second
	m := startNetMount(t, set.Dir, []string{"v"}, 0, "--cache-size", "1MiB", "--s3-timeout", "10s", "--metadata-ttl", ttl.String())
	// Chunk 0 is read, and kept, before it changes too: through a file
	// of its own, whose read-ahead the read below does not follow.
	f0 := m.openData(t, "v")
	if out, err := preadCheck(f0, m.want["v"], 0, chunk*8); out != readRight {
		t.Fatalf("reading chunk 0: %v", err)
	}
	f := m.openData(t, "v")
	key := "ds/v/3"
	m.proxy.Inject(key, faultproxy.Fault{Kind: faultproxy.StallMidBody}, 1)
	replaced := bytes.Repeat([]byte{0x5a}, chunk*8)
	done := make(chan error, 1)
	go func() {
		_, err := preadCheck(f, m.want["v"], 3*chunk*8+100, 60000)
		done <- err
	}()
	for m.proxy.Count(key) == 0 {
		time.Sleep(5 * time.Millisecond)
	}
	m.srv.Put(t, "net", map[string][]byte{key: replaced})
	if err := <-done; !errors.Is(err, syscall.EIO) {
		t.Fatalf("reading across the replacement: %v; want EIO", err)
	}
	if p := m.pacing(t); p.Changed != 1 {
		t.Errorf("stats show %d changed objects, want 1", p.Changed)
	}
	if out := m.d.output.String(); !strings.Contains(out, "changed while it was read") || !strings.Contains(out, "v/3") {
		t.Errorf("the daemon did not log the changed chunk:\n%s", clip(out))
	}
	errs, err := os.ReadFile(filepath.Join(m.d.mnt, ".nczarrfs", "errors"))
	if err != nil || !bytes.Contains(errs, []byte("changed while it was read")) {
		t.Errorf(".nczarrfs/errors = %q, %v; want the changed object", errs, err)
	}

	// Once --metadata-ttl has passed, reads get the new version of both
	// chunks, the one whose read failed and the one read before it
	// changed, whole.
	m.srv.Put(t, "net", map[string][]byte{"ds/v/0": replaced})
	time.Sleep(ttl + 500*time.Millisecond)
	now := bytes.Clone(m.want["v"])
	copy(now[3*chunk*8:], replaced)
	copy(now, replaced)
	for _, c := range []int64{3, 0} {
		if out, err := preadCheck(f0, now, c*chunk*8, chunk*8); out != readRight {
			t.Errorf("chunk %d after the TTL: %v; want its new bytes", c, err)
		}
	}
}

// TestS3MountServerPaused freezes MinIO (SIGSTOP) under a mount with
// --s3-timeout 3s: a cat, an ls of a folder not listed yet and a stat of
// a chunk not looked up yet, started together, each fail within 5 s (the
// bound is the point here), and once MinIO is back the same mount reads
// every byte right.
func TestS3MountServerPaused(t *testing.T) {
	const chunk = 8192
	set, _ := genArray(t, 64*chunk, chunk, "<f8", 1000)
	dir := set.Dir
	// --metadata-ttl 0: nothing listed is kept, so that the ls and the
	// stat below ask the server (with the default the mount lists this
	// small dataset whole, and both are answered from memory).
	m := startNetMount(t, dir, []string{"v"}, 0, "--cache-size", "1MiB", "--s3-timeout", faultTimeout.String(), "--metadata-ttl", "0")
	// The mount works, and the data file is looked up.
	f := m.openData(t, "v")
	if out, err := preadCheck(f, m.want["v"], 0, 1000); out != readRight {
		t.Fatalf("before the pause: %v", err)
	}
	f.Close()

	m.srv.Pause(t)
	paused := true
	defer func() {
		if paused {
			m.srv.Resume(t)
		}
	}()
	type result struct {
		what    string
		err     error
		elapsed time.Duration
	}
	ops := map[string]func() error{
		"cat v/data": func() error {
			return exec.Command("cat", filepath.Join(m.d.mnt, "v", "data")).Run()
		},
		"ls v": func() error {
			return exec.Command("ls", filepath.Join(m.d.mnt, "v")).Run()
		},
		"stat v/7": func() error {
			_, err := os.Stat(filepath.Join(m.d.mnt, "v", "7"))
			return err
		},
		"read v/data at 2 MiB": func() error {
			g, err := os.Open(filepath.Join(m.d.mnt, "v", "data"))
			if err != nil {
				return err
			}
			defer g.Close()
			_, err = g.ReadAt(make([]byte, 1<<20), 2<<20)
			return err
		},
	}
	results := make(chan result, len(ops))
	for what, op := range ops {
		go func() {
			start := time.Now()
			err := op()
			results <- result{what, err, time.Since(start)}
		}()
	}
	bound := faultTimeout + 2*time.Second
	var slowest time.Duration
	for range ops {
		select {
		case r := <-results:
			t.Logf("%s with the server stopped: %v after %v", r.what, r.err, r.elapsed.Round(time.Millisecond))
			if r.err == nil {
				t.Errorf("%s succeeded with the server stopped", r.what)
			}
			if r.elapsed > bound {
				t.Errorf("%s answered after %v; want within --s3-timeout + 2 s = %v", r.what, r.elapsed, bound)
			}
			slowest = max(slowest, r.elapsed)
		case <-time.After(hangLimit):
			t.Fatalf("no answer within %v with the server stopped", hangLimit)
		}
	}
	t.Logf("slowest answer with the server stopped: %v (bound %v)", slowest.Round(time.Millisecond), bound)
	if m.d.exited() {
		t.Fatalf("the daemon exited:\n%s", clip(m.d.output.String()))
	}

	m.srv.Resume(t)
	paused = false
	got, err := os.ReadFile(filepath.Join(m.d.mnt, "v", "data"))
	if err != nil || !bytes.Equal(got, m.want["v"]) {
		t.Fatalf("after the server is back: %d bytes, %v; want zarr-python's %d", len(got), err, len(m.want["v"]))
	}
	if entries, err := os.ReadDir(filepath.Join(m.d.mnt, "v")); err != nil || len(entries) < 64 {
		t.Errorf("ls v after the server is back: %d entries, %v", len(entries), err)
	}
}

// TestS3MountThrottled reads an array of 1,000 chunks through a proxy
// that answers 503 SlowDown above 200 requests a second, 20 ms away: the
// read completes with zarr-python's bytes and no EIO, and the stats show
// the throttled answers and the request limit that came down; once the
// throttling stops, the limit grows again.
func TestS3MountThrottled(t *testing.T) {
	const chunk = 512 // float64: 4 KiB chunks
	set, _ := genArray(t, 1000*chunk, chunk, "<f8", 100000)
	m := startNetMount(t, set.Dir, []string{"v"}, 10*time.Millisecond, "--cache-size", "64MiB")
	m.proxy.Throttle(200)
	start := time.Now()
	got, err := os.ReadFile(filepath.Join(m.d.mnt, "v", "data"))
	elapsed := time.Since(start)
	if err != nil || !bytes.Equal(got, m.want["v"]) {
		t.Fatalf("cat of 1,000 chunks, throttled: %d bytes, %v; want zarr-python's %d", len(got), err, len(m.want["v"]))
	}
	p := m.pacing(t)
	t.Logf("1,000 chunks in %v; the proxy saw %d requests and throttled %d; stats: %+v",
		elapsed.Round(time.Millisecond), m.proxy.Requests(), m.proxy.Throttled(), p)
	if m.proxy.Throttled() == 0 {
		t.Fatal("the proxy throttled nothing: the test did not test throttling")
	}
	if p.Throttled == 0 || p.LowestRequestLimit >= 64 {
		t.Errorf("stats show %d throttled answers and a lowest request limit of %d; want some, and below 64", p.Throttled, p.LowestRequestLimit)
	}

	// The throttling stops: the limit grows again with the answers.
	m.proxy.Throttle(0)
	for i := 1; i <= 300; i++ {
		if _, err := os.ReadFile(filepath.Join(m.d.mnt, "v", fmt.Sprint(i))); err != nil {
			t.Fatalf("reading stored chunk v/%d after the throttling: %v", i, err)
		}
	}
	after := m.pacing(t)
	t.Logf("after 300 more objects without throttling: %+v", after)
	if after.Throttled != p.Throttled || after.RequestLimit <= after.LowestRequestLimit {
		t.Errorf("after the throttling stopped: %+v; want no more throttled answers and the limit above its lowest", after)
	}
}

// faultsRandom are the faults of the random-fault tests: error answers,
// resets before the reply and mid-body, bodies cut short with and without
// a length, stalls (shorter than the timeout: the store gives a stalled
// body up after a fifth of it).
var faultsRandom = []faultproxy.Fault{
	faultproxy.SlowDown,
	faultproxy.InternalError,
	faultproxy.BadGateway,
	{Kind: faultproxy.ResetBeforeReply},
	{Kind: faultproxy.ResetMidBody},
	{Kind: faultproxy.CutBody},
	{Kind: faultproxy.CutBodyNoLength},
	{Kind: faultproxy.StallMidBody},
}

// TestS3MountRandomFaultsFar breaks 10% of S3 requests at random, in
// every way, 20 ms away, while 16 readers read arrays of every codec:
// half read random slices of up to 1 MiB, half whole arrays in 1 MiB
// reads, each read one pread checked for length and bytes. Every read
// must be whole and right: no EIO, no short read, no wrong byte. It runs
// for $NCZARRFS_FAULTS (20 s by default; make soak sets minutes).
func TestS3MountRandomFaultsFar(t *testing.T) {
	const readers = 16
	dir, names := genCodecArrays(t, 256<<10, 16<<10) // 2 MiB arrays of 128 KiB chunks
	m := startNetMount(t, dir, names, 10*time.Millisecond, "--cache-size", "4MiB")
	seed := uint64(testSeed(t))
	m.proxy.InjectRandom(0.10, faultsRandom, seed)
	duration := faultsDuration(t)
	deadline := time.Now().Add(duration)
	var counts [readOther + 1]atomic.Int64
	var bytesRead, slowest atomic.Int64
	var mu sync.Mutex
	var failures []string
	var wg sync.WaitGroup
	for r := range readers {
		rng := rand.New(rand.NewPCG(seed, uint64(r)))
		wg.Go(func() {
			for time.Now().Before(deadline) {
				name := names[rng.IntN(len(names))]
				want := m.want[name]
				f, err := os.OpenFile(filepath.Join(m.d.mnt, name, "data"), os.O_RDONLY|syscall.O_DIRECT, 0)
				if err != nil {
					counts[readOther].Add(1)
					mu.Lock()
					failures = append(failures, fmt.Sprintf("reader %d: open %s: %v", r, name, err))
					mu.Unlock()
					continue
				}
				var plan [][2]int64 // offset, length
				if r%2 == 0 {
					for off := int64(0); off < int64(len(want)); off += 1 << 20 {
						plan = append(plan, [2]int64{off, 1 << 20})
					}
				} else {
					for range 4 {
						plan = append(plan, [2]int64{rng.Int64N(int64(len(want))), 1 + rng.Int64N(1<<20)})
					}
				}
				for _, rd := range plan {
					start := time.Now()
					out, err := preadCheck(f, want, rd[0], int(rd[1]))
					if d := int64(time.Since(start)); d > slowest.Load() {
						slowest.Store(d)
					}
					counts[out].Add(1)
					if out != readRight {
						mu.Lock()
						failures = append(failures, fmt.Sprintf("reader %d: %s/data: %v", r, name, err))
						mu.Unlock()
						continue
					}
					bytesRead.Add(min(rd[1], int64(len(want))-rd[0]))
				}
				f.Close()
			}
		})
	}
	wg.Wait()
	m.proxy.InjectRandom(0, nil, 0)
	injected := m.proxy.Injected()
	p := m.pacing(t)
	kinds := make([]string, 0, len(injected))
	for k, n := range injected {
		kinds = append(kinds, fmt.Sprintf("%v: %d", k, n))
	}
	sort.Strings(kinds)
	t.Logf("%v of 10%% random faults 20 ms away (seed %d), %d readers, %d arrays (%s): %d reads right (%d MiB), %d EIO, %d short, %d wrong, %d other errors; slowest read %v; %d S3 requests, %d faults injected (%s); %d bodies resumed, %d throttled answers, lowest request limit %d",
		duration, seed, readers, len(names), strings.Join(names, ", "),
		counts[readRight].Load(), bytesRead.Load()>>20, counts[readEIO].Load(), counts[readShort].Load(), counts[readWrong].Load(), counts[readOther].Load(),
		time.Duration(slowest.Load()).Round(time.Millisecond), m.proxy.Requests(), injectedTotal(m.proxy), strings.Join(kinds, ", "),
		p.Resumed, p.Throttled, p.LowestRequestLimit)
	for i, f := range failures {
		if i == 20 {
			t.Errorf("... and %d more", len(failures)-20)
			break
		}
		t.Error(f)
	}
	if counts[readRight].Load() == 0 || injectedTotal(m.proxy) == 0 {
		t.Error("no read succeeded, or no fault was injected: the test tested nothing")
	}
	if m.d.exited() {
		t.Fatalf("the daemon exited:\n%s", clip(m.d.output.String()))
	}
}

// TestS3MountChunkReplacedAfterTTL: a compressed chunk decoded and kept in
// the chunk cache, then replaced in the bucket, is read again from the
// bucket once --metadata-ttl has passed: the next read gets the new bytes,
// whole.
func TestS3MountChunkReplacedAfterTTL(t *testing.T) {
	const n, chunk = 4096, 512
	dir, _ := genCodecArrays(t, n, chunk)
	const ttl = 2 * time.Second
	m := startNetMount(t, dir, []string{"zlib"}, 0, "--metadata-ttl", ttl.String())
	f := m.openData(t, "zlib")
	want := m.want["zlib"]
	if out, err := preadCheck(f, want, 0, chunk*8); out != readRight {
		t.Fatalf("reading chunk 0: %v", err)
	}
	// Chunk 0 becomes what chunk 1 holds: zarr-python's own bytes.
	one, err := os.ReadFile(filepath.Join(dir, "tree", "zlib", "1"))
	if err != nil {
		t.Fatal(err)
	}
	m.srv.Put(t, "net", map[string][]byte{"ds/zlib/0": one})
	time.Sleep(ttl + 500*time.Millisecond)
	now := bytes.Clone(want)
	copy(now, want[chunk*8:2*chunk*8])
	if out, err := preadCheck(f, now, 0, chunk*8); out != readRight {
		t.Errorf("chunk 0 after the TTL: %v; want its new bytes", err)
	}
}

// TestS3MountPausedFirstLook freezes MinIO (SIGSTOP) under a mount with
// --s3-timeout 3s before anything of the dataset but its root has been
// looked at, and looks: the decoded data of an array whose metadata is
// not read yet (a lazily read group, then chunks), a chunk object, a
// listing and a metadata object each fail within the bound. Two seconds
// after MinIO is back, the same mount answers each of them right: no
// failure to reach the store is remembered, whether listings are kept
// (--metadata-ttl 5m) or not (0).
func TestS3MountPausedFirstLook(t *testing.T) {
	const n, chunk = 4096, 512
	dir, _ := genCodecArrays(t, n, chunk)
	// An attributes object that nothing reads before it is looked at.
	if err := os.WriteFile(filepath.Join(dir, "tree", "lz4", ".zattrs"), []byte(`{"units": "m"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	read := func(path string) func() ([]byte, error) {
		return func() ([]byte, error) { return os.ReadFile(path) }
	}
	for _, ttl := range []string{"5m", "0"} {
		t.Run("ttl "+ttl, func(t *testing.T) {
			m := startNetMount(t, dir, []string{"zstd"}, 0, "--s3-timeout", faultTimeout.String(), "--metadata-ttl", ttl)
			mnt := m.d.mnt
			stored := func(rel string) []byte {
				b, err := os.ReadFile(filepath.Join(dir, "tree", rel))
				if err != nil {
					t.Fatal(err)
				}
				return b
			}
			ops := []struct {
				what string
				op   func() ([]byte, error)
				want []byte
			}{
				{"cat zstd/data", read(filepath.Join(mnt, "zstd", "data")), m.want["zstd"]},
				{"cat zlib/3", read(filepath.Join(mnt, "zlib", "3")), stored("zlib/3")},
				{"cat lz4/.zattrs", read(filepath.Join(mnt, "lz4", ".zattrs")), stored("lz4/.zattrs")},
				{"ls gzip", func() ([]byte, error) {
					entries, err := os.ReadDir(filepath.Join(mnt, "gzip"))
					var names []string
					for _, e := range entries {
						names = append(names, e.Name())
					}
					return []byte(strings.Join(names, " ")), err
				}, nil},
			}

			// The root is looked at (its time found): each command
			// below then makes one request that needs the store, which
			// --s3-timeout bounds.
			if _, err := os.Stat(mnt); err != nil {
				t.Fatal(err)
			}
			m.srv.Pause(t)
			paused := true
			defer func() {
				if paused {
					m.srv.Resume(t)
				}
			}()
			type result struct {
				what    string
				err     error
				elapsed time.Duration
			}
			results := make(chan result, len(ops))
			for _, o := range ops {
				go func() {
					start := time.Now()
					_, err := o.op()
					results <- result{o.what, err, time.Since(start)}
				}()
			}
			bound := faultTimeout + 2*time.Second
			for range ops {
				select {
				case r := <-results:
					t.Logf("%s with the server stopped: %v after %v", r.what, r.err, r.elapsed.Round(time.Millisecond))
					if !errors.Is(r.err, syscall.EIO) {
						t.Errorf("%s with the server stopped: %v; want EIO", r.what, r.err)
					}
					if r.elapsed > bound {
						t.Errorf("%s answered after %v; want within --s3-timeout + 2 s = %v", r.what, r.elapsed, bound)
					}
				case <-time.After(hangLimit):
					t.Fatalf("no answer within %v with the server stopped", hangLimit)
				}
			}

			m.srv.Resume(t)
			paused = false
			// The target: a read 2 s after the server is back
			// succeeds (no back-off stays shut longer).
			time.Sleep(2 * time.Second)
			for _, o := range ops {
				got, err := o.op()
				switch {
				case err != nil:
					t.Errorf("%s after the server is back: %v", o.what, err)
				case o.want == nil:
					if !strings.Contains(" "+string(got)+" ", " .zarray ") || !strings.Contains(" "+string(got)+" ", " data ") {
						t.Errorf("%s after the server is back: %q; want .zarray, data and the chunks", o.what, got)
					}
				case !bytes.Equal(got, o.want):
					t.Errorf("%s after the server is back: %d bytes%s", o.what, len(got), firstDiff(got, o.want, 1))
				}
			}
			if m.d.exited() {
				t.Fatalf("the daemon exited:\n%s", clip(m.d.output.String()))
			}
		})
	}
}
