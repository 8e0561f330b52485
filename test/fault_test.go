package test

// Faults through a real mount of the real binary: symbolic links that leave
// a directory store, and S3 connections that break in every way a network
// breaks them (through internal/faultproxy in front of a real MinIO). Each
// test checks what a user reading the mount sees: the right bytes or EIO,
// never short or wrong data, and a mount that recovers by itself once the
// fault ends. Signals are in signal_test.go.

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/nczarrfs/nczarrfs/internal/faultproxy"
	"github.com/nczarrfs/nczarrfs/internal/miniotest"
)

// faultTimeout is the S3 timeout of the mounts under faults: short, so
// that a stalled read fails soon.
const faultTimeout = 3 * time.Second

// hangLimit catches a read that hangs. It is far above faultTimeout: it is
// not a measure of speed.
const hangLimit = 10 * faultTimeout

// TestMountConfinedLinks mounts a directory store holding symbolic links
// that leave it, and one that stays inside: what lies outside reads as
// EACCES, with one log line naming the key, and the inside link works.
func TestMountConfinedLinks(t *testing.T) {
	set, ds := genArray(t, 1000, 100, "<i4", 1000)
	tree := ds.TreePath(set)
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("not for the mount\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	up, err := filepath.Rel(filepath.Join(tree, "v"), outside)
	if err != nil {
		t.Fatal(err)
	}
	for name, target := range map[string]string{
		"outside":      outside,                          // absolute, out
		"v/up":         up,                               // relative, out
		"secretfile":   filepath.Join(outside, "secret"), // a file, out
		"etc":          "/etc",                           // the example
		"inside":       "v",                              // stays inside
		"v/chunk-link": "1",                              // stays inside
	} {
		if err := os.Symlink(target, filepath.Join(tree, filepath.FromSlash(name))); err != nil {
			t.Fatal(err)
		}
	}
	d := startDaemon(t, tree)

	// The kernel looks up each path component: the refusal comes at
	// the first one that leaves the root.
	for _, name := range []string{"outside/secret", "secretfile", "etc/passwd", "etc/hostname", "v/up/secret"} {
		for range 2 { // twice: still one log line
			b, err := os.ReadFile(filepath.Join(d.mnt, name))
			if !errors.Is(err, syscall.EACCES) {
				t.Errorf("reading %s through the mount = %q, %v; want EACCES", name, b, err)
			}
		}
	}
	if _, err := os.ReadDir(filepath.Join(d.mnt, "outside")); !errors.Is(err, syscall.EACCES) {
		t.Errorf("listing outside/ = %v; want EACCES", err)
	}
	chunk, err := os.ReadFile(filepath.Join(tree, "v", "1"))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"inside/1", "v/chunk-link"} {
		if got, err := os.ReadFile(filepath.Join(d.mnt, name)); err != nil || !bytes.Equal(got, chunk) {
			t.Errorf("reading %s (a link inside the dataset): %d bytes, %v; want chunk v/1's %d", name, len(got), err, len(chunk))
		}
	}
	// The array itself is untouched.
	want, err := os.ReadFile(filepath.Join(set.Dir, "expected", "v.bin"))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(filepath.Join(d.mnt, "v", "data")); err != nil || !bytes.Equal(got, want) {
		t.Errorf("v/data: %d bytes, %v; want zarr-python's %d bytes", len(got), err, len(want))
	}

	// The daemon logs each refused key once, saying why. Its log reaches
	// the test through a pipe, a moment after the answers above.
	keys := []string{"outside", "secretfile", "etc", "v/up"}
	logged := func(out, key string) int {
		n := 0
		for line := range strings.Lines(out) {
			if strings.Contains(line, "key="+key+" ") && strings.Contains(line, "out of the dataset root") {
				n++
			}
		}
		return n
	}
	waitFor(t, "log line for every refused key", func() bool {
		out := d.output.String()
		for _, key := range keys {
			if logged(out, key) == 0 {
				return false
			}
		}
		return true
	})
	out := d.output.String()
	for _, key := range keys {
		if n := logged(out, key); n != 1 {
			t.Errorf("the daemon logged %d lines naming key %s and the escape, want 1:\n%s", n, key, clip(out))
		}
	}
}

// faultMount is a dataset in MinIO, mounted through a fault proxy.
type faultMount struct {
	proxy *faultproxy.Proxy
	d     *daemon
	want  []byte // the expected data of array v, from zarr-python
	key   string // the proxy key pattern of v's chunk objects
}

// startFaultMount uploads a one-dimensional float64 array of n elements in
// chunks of chunk (uncompressed, so that no decoder can notice a body cut
// short: the store must) and mounts it through a fault proxy, with a cache
// of cacheSize so that reads keep going to S3.
func startFaultMount(t *testing.T, n, chunk int, cacheSize string) *faultMount {
	t.Helper()
	srv := miniotest.Start(t)
	s3Env(t, srv)
	t.Setenv("NCZARRFS_S3_TIMEOUT", faultTimeout.String())
	set, ds := genArray(t, n, chunk, "<f8", 7)
	srv.CreateBucket(t, "faults")
	srv.PutTree(t, "faults", "ds", ds.TreePath(set))
	want, err := os.ReadFile(filepath.Join(set.Dir, "expected", "v.bin"))
	if err != nil {
		t.Fatal(err)
	}
	p := faultproxy.Start(t, srv.Endpoint)
	d := startDaemon(t, p.URL+"/faults/ds#mode=zarr,s3", "--cache-size", cacheSize)
	return &faultMount{proxy: p, d: d, want: want, key: "ds/v/*"}
}

// openDirect opens v/data with O_DIRECT, so that every read reaches the
// daemon instead of the kernel's page cache.
func (m *faultMount) openDirect(t *testing.T) *os.File {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(m.d.mnt, "v", "data"), os.O_RDONLY|syscall.O_DIRECT, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// readCheck reads n bytes at off and compares them with the expected data.
// It returns nil for the right bytes, the read's error for a failed read,
// and an error wrapping errWrongBytes for a read that succeeded with short
// or wrong data.
func (m *faultMount) readCheck(f *os.File, off int64, n int) error {
	buf := make([]byte, n)
	got, err := f.ReadAt(buf, off)
	end := min(off+int64(n), int64(len(m.want)))
	exp := m.want[off:end]
	switch {
	case err != nil && !(err == io.EOF && got == len(exp)):
		return err
	case got != len(exp):
		return fmt.Errorf("%w: %d bytes at %d, want %d", errWrongBytes, got, off, len(exp))
	case !bytes.Equal(buf[:got], exp):
		return fmt.Errorf("%w: %d bytes at %d differ%s", errWrongBytes, got, off, firstDiff(buf[:got], exp, 8))
	}
	return nil
}

// errWrongBytes marks a read that returned bytes other than the dataset's.
var errWrongBytes = errors.New("wrong bytes")

// TestS3MountBodyFaults breaks every chunk request of a mount in each way
// a connection breaks, one way at a time, until lifted: a read returns EIO
// (or the right bytes, if a retry or resumption got through) within the
// S3 timeout and a second, and the right bytes once the fault is lifted,
// through the same mount.
func TestS3MountBodyFaults(t *testing.T) {
	const chunk = 8192 // elements: 64 KiB chunks
	m := startFaultMount(t, 40*chunk, chunk, "1MiB")
	f := m.openDirect(t)
	faults := []faultproxy.Fault{
		{Kind: faultproxy.ResetBeforeReply},
		{Kind: faultproxy.ResetMidBody},
		{Kind: faultproxy.CutBody},
		{Kind: faultproxy.CutBodyNoLength},
		{Kind: faultproxy.StallMidBody},
		faultproxy.SlowDown,
	}
	for i, fault := range faults {
		t.Run(fault.String(), func(t *testing.T) {
			// A chunk of its own, beyond what the earlier cases read,
			// that no request has fetched yet: the read-ahead the
			// earlier cases started may have reached further than six
			// chunks, and a read served from the cache never meets the
			// fault.
			// First the earlier cases' read-ahead ends: no request for
			// 300 ms (a wait for quiet, not a bound on anything).
			for prev := -1; ; {
				n := m.proxy.Requests()
				if n == prev {
					break
				}
				prev = n
				time.Sleep(300 * time.Millisecond)
			}
			c := 1 + 6*i
			for c < 40 && m.proxy.Count(fmt.Sprintf("ds/v/%d", c)) > 0 {
				c++
			}
			if c == 40 {
				t.Fatalf("every chunk from %d on was fetched before the case", 1+6*i)
			}
			off := int64(c) * chunk * 8
			before := injectedTotal(m.proxy)
			m.proxy.Inject(m.key, fault, -1)
			start := time.Now()
			err := m.readCheck(f, off+100, 5000)
			elapsed := time.Since(start)
			m.proxy.Lift(m.key)
			if injectedTotal(m.proxy) == before {
				t.Errorf("the read did not meet the fault (no request for its chunk reached the proxy): %v", err)
			}
			switch {
			case errors.Is(err, errWrongBytes):
				t.Errorf("under the fault: %v", err)
			case err != nil && !errors.Is(err, syscall.EIO):
				t.Errorf("under the fault: %v, want EIO", err)
			}
			if elapsed > hangLimit {
				t.Errorf("the read took %v under the fault; the S3 timeout is %v", elapsed, faultTimeout)
			}
			t.Logf("under the fault: %v after %v", err, elapsed.Round(time.Millisecond))
			if err := m.readCheck(f, off+100, 5000); err != nil {
				t.Errorf("after the fault was lifted: %v", err)
			}
		})
	}
	if m.d.exited() {
		t.Fatalf("the daemon exited:\n%s", clip(m.d.output.String()))
	}
}

// faultsDuration is how long TestS3MountRandomFaults runs: 20 s, or
// $NCZARRFS_FAULTS (a Go duration; make soak sets minutes).
func faultsDuration(t *testing.T) time.Duration {
	v := os.Getenv("NCZARRFS_FAULTS")
	if v == "" {
		return 20 * time.Second
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		t.Fatalf("NCZARRFS_FAULTS=%q is not a positive duration", v)
	}
	return d
}

// TestS3MountRandomFaults breaks 10% of all S3 requests at random, in
// every way (error answers, resets, bodies cut short, stalls), while
// readers read at random: every read returns the right bytes, none EIO
// (error answers are retried, broken bodies resumed). Once the faults
// stop, every byte of the array reads right. TestS3MountRandomFaultsFar
// does the same 20 ms away, with more readers and every codec.
func TestS3MountRandomFaults(t *testing.T) {
	const (
		chunk   = 4096 // elements: 32 KiB chunks
		readers = 8
	)
	m := startFaultMount(t, 64*chunk, chunk, "512KiB")
	seed := uint64(testSeed(t))
	m.proxy.InjectRandom(0.10, []faultproxy.Fault{
		faultproxy.SlowDown,
		faultproxy.InternalError,
		faultproxy.BadGateway,
		{Kind: faultproxy.ResetBeforeReply},
		{Kind: faultproxy.ResetMidBody},
		{Kind: faultproxy.CutBody},
		{Kind: faultproxy.CutBodyNoLength},
		{Kind: faultproxy.StallMidBody},
	}, seed)
	duration := faultsDuration(t)
	deadline := time.Now().Add(duration)
	var ok, eio, slowest atomic.Int64
	var wg sync.WaitGroup
	for r := range readers {
		f := m.openDirect(t)
		rng := rand.New(rand.NewPCG(seed, uint64(r)))
		wg.Go(func() {
			for time.Now().Before(deadline) && !t.Failed() {
				off := rng.Int64N(int64(len(m.want)))
				n := 1 + rng.IntN(256<<10)
				start := time.Now()
				err := m.readCheck(f, off, n)
				if d := int64(time.Since(start)); d > slowest.Load() {
					slowest.Store(d)
				}
				switch {
				case err == nil:
					ok.Add(1)
				case errors.Is(err, syscall.EIO):
					eio.Add(1)
				default:
					t.Errorf("reader %d: %d bytes at %d: %v", r, n, off, err)
				}
			}
		})
	}
	wg.Wait()
	m.proxy.InjectRandom(0, nil, 0)
	injected := m.proxy.Injected()
	total := injectedTotal(m.proxy)
	t.Logf("%v of 10%% random faults (seed %d): %d reads right, %d EIO, none wrong; slowest read %v; %d S3 requests, faults injected: %v",
		duration, seed, ok.Load(), eio.Load(), time.Duration(slowest.Load()).Round(time.Millisecond), m.proxy.Requests(), injected)
	if ok.Load() == 0 {
		t.Error("no read succeeded under 10% faults")
	}
	if eio.Load() > 0 {
		t.Errorf("%d reads failed with EIO; every fault should have been retried or resumed", eio.Load())
	}
	if time.Duration(slowest.Load()) > hangLimit {
		t.Errorf("the slowest read took %v; the S3 timeout is %v", time.Duration(slowest.Load()), faultTimeout)
	}
	if total == 0 {
		t.Error("the proxy injected no fault")
	}

	// The faults are over: the mount recovers by itself.
	f := m.openDirect(t)
	for off := int64(0); off < int64(len(m.want)); off += 100_000 {
		if err := m.readCheck(f, off, 100_000); err != nil {
			t.Fatalf("after the faults: %v", err)
		}
	}
	if m.d.exited() {
		t.Fatalf("the daemon exited:\n%s", clip(m.d.output.String()))
	}
}

// injectedTotal is how many faults p has injected, of every kind.
func injectedTotal(p *faultproxy.Proxy) int {
	total := 0
	for _, n := range p.Injected() {
		total += n
	}
	return total
}
