package test

// Tests of issue 23's "many machines": the static binary, the container
// image run from its exported root filesystem, the metrics endpoint, many
// daemons reading one bucket, make install without root, and the
// Kubernetes manifests of examples/kubernetes.

import (
	"bufio"
	"debug/elf"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/nczarrfs/nczarrfs/internal/faultproxy"
	"github.com/nczarrfs/nczarrfs/internal/miniotest"
	"github.com/nczarrfs/nczarrfs/internal/testenv"
)

var staticBin builtBinary

// staticBinary builds bin/nczarrfs the way make build does (CGO_ENABLED=0,
// no race detector: it needs cgo), once per test process.
func staticBinary(t testing.TB) string {
	return staticBin.get(t, "static", func(root, out string) *exec.Cmd {
		return exec.Command("make", "-C", root, "build", "BIN="+out)
	})
}

// TestStaticBinary checks that make build's binary asks for no dynamic
// loader and no shared library, and that --version names its target.
func TestStaticBinary(t *testing.T) {
	bin := staticBinary(t)
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			t.Errorf("%s has a %v program header: dynamically linked", bin, p.Type)
		}
	}
	if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
		t.Errorf("%s needs shared libraries %v", bin, libs)
	}
	out, stderr, code := runCommand(t, nil, bin, "--version")
	if want := " " + runtime.GOOS + "/" + runtime.GOARCH + "\n"; code != 0 || !strings.HasSuffix(out, want) {
		t.Errorf("--version: %q %q (exit %d), want it to end with %q", out, stderr, code, want)
	}
}

// containerTool is podman or buildah, whichever is installed.
func containerTool() (string, error) {
	for _, name := range []string{"podman", "buildah"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("neither podman nor buildah is installed (apt-get install buildah)")
}

// buildImage runs make image into a container storage of the test's own
// and returns the image's root filesystem, copied out of the storage.
func buildImage(t *testing.T) string {
	t.Helper()
	tool, err := containerTool()
	testenv.Require(t, "podman or buildah", err)
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	conf := filepath.Join(dir, "storage.conf")
	// vfs: plain folders, nothing mounted that could outlive the test.
	storage := fmt.Sprintf("[storage]\ndriver = \"vfs\"\ngraphroot = %q\nrunroot = %q\n", filepath.Join(dir, "graph"), filepath.Join(dir, "run"))
	if err := os.WriteFile(conf, []byte(storage), 0o644); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "CONTAINERS_STORAGE_CONF="+conf)
	image := fmt.Sprintf("localhost/nczarrfs-test:%d", os.Getpid())
	run := func(name string, args ...string) string {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Env = env
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%s %s: %v\n%s%s", name, strings.Join(args, " "), err, out, stderr.String())
		}
		return strings.TrimSpace(string(out))
	}
	run("make", "-C", root, "image", "IMAGE="+image)
	t.Cleanup(func() {
		cmd := exec.Command(tool, "rmi", "-f", image)
		cmd.Env = env
		cmd.Run()
	})
	// buildah from + mount give the image's files; podman has the same
	// through "podman create" and "podman mount".
	var ctr, mnt string
	if filepath.Base(tool) == "buildah" {
		ctr = run(tool, "from", image)
		t.Cleanup(func() {
			cmd := exec.Command(tool, "rm", ctr)
			cmd.Env = env
			cmd.Run()
		})
		mnt = run(tool, "mount", ctr)
	} else {
		ctr = run(tool, "create", image)
		t.Cleanup(func() {
			cmd := exec.Command(tool, "rm", "-f", ctr)
			cmd.Env = env
			cmd.Run()
		})
		mnt = run(tool, "mount", ctr)
	}
	rootfs := filepath.Join(dir, "rootfs")
	run("cp", "-a", mnt+"/.", rootfs)
	run(tool, "umount", ctr)
	return rootfs
}

// TestImage builds the container image, checks what it holds and its
// size, and runs its binary in a new mount namespace chrooted into the
// image's files: --version, then a mount of a dataset in MinIO, read
// through /proc/PID/root from outside. The chroot has what a pod gives
// the container and nothing more: /dev/fuse and the mountpoint, no
// fusermount3, no /proc, no shell.
func TestImage(t *testing.T) {
	rootfs := buildImage(t)
	var size int64
	var files []string
	filepath.WalkDir(rootfs, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if info, err := d.Info(); err == nil && info.Mode().IsRegular() {
			size += info.Size()
			rel, _ := filepath.Rel(rootfs, p)
			files = append(files, rel)
		}
		return nil
	})
	t.Logf("image: %d files, %.1f MB: %v", len(files), float64(size)/1e6, files)
	if size >= 40e6 {
		t.Errorf("the image's files take %d bytes, want under 40 MB", size)
	}
	for _, want := range []string{"usr/bin/nczarrfs", "etc/ssl/certs/ca-certificates.crt"} {
		if _, err := os.Stat(filepath.Join(rootfs, want)); err != nil {
			t.Errorf("image: %v", err)
		}
	}
	for _, dir := range []string{"dev", "mnt/data"} {
		mustMkdir(t, filepath.Join(rootfs, dir))
	}
	if err := os.WriteFile(filepath.Join(rootfs, "dev", "fuse"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	// inChroot runs the image's nczarrfs with args in a new mount
	// namespace, with the host's /dev/fuse bound in.
	inChroot := func(args ...string) *exec.Cmd {
		script := `r=$1; shift; mount --bind /dev/fuse "$r/dev/fuse" && exec chroot "$r" /usr/bin/nczarrfs "$@"`
		cmd := exec.Command("unshare", append([]string{"--mount", "--propagation", "private", "sh", "-c", script, "sh", rootfs}, args...)...)
		// The image has no AWS_CA_BUNDLE of the host's, and needs none
		// for the plain-http MinIO.
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, "AWS_CA_BUNDLE=") {
				cmd.Env = append(cmd.Env, kv)
			}
		}
		return cmd
	}
	out, err := inChroot("--version").CombinedOutput()
	if want := " linux/" + runtime.GOARCH + "\n"; err != nil || !strings.HasPrefix(string(out), "nczarrfs version ") || !strings.HasSuffix(string(out), want) {
		t.Fatalf("nczarrfs --version in the image: %v: %q, want a version ending in %q", err, out, want)
	}

	srv := miniotest.Start(t)
	s3Env(t, srv)
	srv.CreateBucket(t, "image")
	set, ds := basicDataset(t)
	srv.PutTree(t, "image", ds.Name, ds.TreePath(set))
	cmd := inChroot("mount", "--metrics-addr", "127.0.0.1:0", srv.Endpoint+"/image/"+ds.Name+"#mode="+s3Mode(set), "/mnt/data")
	output := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = output, output
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			cmd.Process.Kill()
			<-done
		}
	})
	// unshare and chroot exec: the daemon is cmd's process.
	mnt := fmt.Sprintf("/proc/%d/root/mnt/data", cmd.Process.Pid)
	waitFor(t, "mount in the image's namespace", func() bool {
		if _, err := os.Stat(filepath.Join(mnt, ".nczarrfs")); err == nil {
			return true
		}
		select {
		case err := <-done:
			stopped = true
			t.Fatalf("nczarrfs in the image exited before mounting (%v):\n%s", err, output.String())
		default:
		}
		return false
	})
	checkDataset(t, mnt, set, ds)
	url := metricsURL(t, output)
	if code, body := httpGet(t, strings.TrimSuffix(url, "/metrics")+"/readyz"); code != 200 {
		t.Errorf("/readyz of the image's mount: %d %q", code, body)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-done:
		stopped = true
		if err != nil {
			t.Errorf("nczarrfs in the image exited with %v after SIGTERM:\n%s", err, output.String())
		}
	case <-time.After(unmountWait):
		t.Errorf("nczarrfs in the image still running %v after SIGTERM", unmountWait)
	}
}

var metricsLine = regexp.MustCompile(`nczarrfs: metrics on (http://\S+/metrics)`)

// metricsURL is the metrics address a daemon announced on stderr.
func metricsURL(t *testing.T, output *syncBuffer) string {
	t.Helper()
	var url string
	waitFor(t, "metrics address in the daemon's output", func() bool {
		m := metricsLine.FindStringSubmatch(output.String())
		if m != nil {
			url = m[1]
		}
		return m != nil
	})
	return url
}

func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// scrape reads a Prometheus text page: "name{labels}" -> value, for the
// nczarrfs_ samples.
func scrape(t *testing.T, url string) map[string]float64 {
	t.Helper()
	code, body := httpGet(t, url)
	if code != 200 {
		t.Fatalf("%s: %d %q", url, code, body)
	}
	got := map[string]float64{}
	sc := bufio.NewScanner(strings.NewReader(body))
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "nczarrfs_") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("%s: sample %q: %v", url, line, err)
		}
		got[line[:i]] = v
	}
	return got
}

// readStats reads .nczarrfs/stats as numbers by path ("store.get.requests").
func readStats(t *testing.T, mnt string) map[string]float64 {
	t.Helper()
	var raw map[string]any
	b, err := os.ReadFile(filepath.Join(mnt, ".nczarrfs", "stats"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatalf(".nczarrfs/stats: %v", err)
	}
	flat := map[string]float64{}
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		switch v := v.(type) {
		case float64:
			flat[prefix] = v
		case map[string]any:
			for k, x := range v {
				walk(strings.TrimPrefix(prefix+"."+k, "."), x)
			}
		}
	}
	walk("", raw)
	return flat
}

// statsMetrics pairs counters of .nczarrfs/stats with their metrics; ""
// for the requests of a kind, the sum of its ok and error outcomes.
var statsMetrics = map[string]string{
	"store.objects":            "nczarrfs_store_objects_total",
	"store.bytes":              "nczarrfs_store_bytes_total",
	"store.get.requests":       "", // ok + error
	"store.get.bytes":          `nczarrfs_store_request_bytes_total{op="get"}`,
	"store.read_at.requests":   "",
	"store.read_at.bytes":      `nczarrfs_store_request_bytes_total{op="read_at"}`,
	"store.stat.requests":      "",
	"store.search.requests":    "",
	"store.search.entries":     `nczarrfs_store_request_entries_total{op="search"}`,
	"cache.hits":               "nczarrfs_cache_hits_total",
	"cache.misses":             "nczarrfs_cache_misses_total",
	"cache.evictions":          "nczarrfs_cache_evictions_total",
	"cache.decoded_bytes":      "nczarrfs_cache_decoded_bytes_total",
	"cache.read_ahead_loads":   "nczarrfs_cache_read_ahead_loads_total",
	"cache.bytes":              "nczarrfs_cache_bytes",
	"cache.entries":            "nczarrfs_cache_entries",
	"disk_cache.misses":        "nczarrfs_disk_cache_misses_total",
	"disk_cache.hits":          "nczarrfs_disk_cache_hits_total",
	"store.in_flight":          "nczarrfs_store_in_flight",
	"cache.read_ahead_hits":    "nczarrfs_cache_read_ahead_hits_total",
	"store.size.requests":      "",
	"store.get.errors":         `nczarrfs_store_requests_total{op="get",outcome="error"}`,
	"store.read_at.errors":     `nczarrfs_store_requests_total{op="read_at",outcome="error"}`,
	"disk_cache.written":       "nczarrfs_disk_cache_written_total",
	"disk_cache.checked":       "nczarrfs_disk_cache_checked_total",
	"kernel.lookups":           "nczarrfs_kernel_lookups_total",
	"kernel.opendirs":          "nczarrfs_kernel_opendirs_total",
	"kernel.readdirs":          "nczarrfs_kernel_readdirs_total",
	"kernel.xattrs":            "nczarrfs_kernel_xattrs_total",
	"cache.budget":             "nczarrfs_cache_budget",
	"store.search.errors":      `nczarrfs_store_requests_total{op="search",outcome="error"}`,
	"store.stat.errors":        `nczarrfs_store_requests_total{op="stat",outcome="error"}`,
	"store.size.errors":        `nczarrfs_store_requests_total{op="size",outcome="error"}`,
	"cache.load_seconds":       "nczarrfs_cache_load_seconds_total",
	"cache.recycled":           "nczarrfs_cache_recycled_total",
	"store.list_flat.requests": "",
	"store.list_flat.entries":  `nczarrfs_store_request_entries_total{op="list_flat"}`,
	"store.list_flat.errors":   `nczarrfs_store_requests_total{op="list_flat",outcome="error"}`,
}

// metricOf is the value metrics give for the stats counter key.
func metricOf(m map[string]float64, key string) (float64, bool) {
	if name := statsMetrics[key]; name != "" {
		v, ok := m[name]
		return v, ok
	}
	if op, ok := strings.CutSuffix(strings.TrimPrefix(key, "store."), ".requests"); ok {
		okv, ok1 := m[`nczarrfs_store_requests_total{op="`+op+`",outcome="ok"}`]
		errv, ok2 := m[`nczarrfs_store_requests_total{op="`+op+`",outcome="error"}`]
		return okv + errv, ok1 && ok2
	}
	// The collector's rule for what the table does not name.
	name := "nczarrfs_" + strings.ReplaceAll(key, ".", "_")
	if v, ok := m[name+"_total"]; ok {
		return v, true
	}
	v, ok := m[name]
	return v, ok
}

// TestMetricsEqualStats mounts with --metrics-addr, reads an array with
// cat, and checks that the metrics page and .nczarrfs/stats say the same
// of requests, bytes and the cache at that moment (read between two
// scrapes that agree, so that nothing moved in between).
func TestMetricsEqualStats(t *testing.T) {
	srv := miniotest.Start(t)
	s3Env(t, srv)
	srv.CreateBucket(t, "metrics")
	set, ds := basicDataset(t)
	srv.PutTree(t, "metrics", ds.Name, ds.TreePath(set))
	d := startDaemon(t, srv.Endpoint+"/metrics/"+ds.Name+"#mode="+s3Mode(set), "--metrics-addr", "127.0.0.1:0", "--cache-dir", t.TempDir())
	url := metricsURL(t, d.output)
	base := strings.TrimSuffix(url, "/metrics")
	if code, body := httpGet(t, base+"/healthz"); code != 200 || body != "ok\n" {
		t.Errorf("/healthz: %d %q", code, body)
	}
	if code, body := httpGet(t, base+"/readyz"); code != 200 || body != "ok\n" {
		t.Errorf("/readyz: %d %q", code, body)
	}
	var catted []string
	for _, a := range ds.Arrays {
		if a.Error {
			continue
		}
		if _, err := exec.Command("cat", filepath.Join(d.mnt, a.Path, "data")).Output(); err != nil {
			t.Fatalf("cat %s/data: %v", a.Path, err)
		}
		catted = append(catted, a.Path)
	}
	var before, after map[string]float64
	var st map[string]float64
	for try := 0; ; try++ {
		before = scrape(t, url)
		st = readStats(t, d.mnt)
		after = scrape(t, url)
		same := true
		for k := range st {
			if v1, ok := metricOf(before, k); ok {
				if v2, _ := metricOf(after, k); v1 != v2 {
					same = false
				}
			}
		}
		if same {
			break
		}
		if try == 50 {
			t.Fatal("the counters kept moving between scrapes")
		}
		time.Sleep(100 * time.Millisecond)
	}
	compared := 0
	for k, v := range st {
		if k == "cache.load_seconds" {
			continue // a float sum: compared to a rounding
		}
		m, ok := metricOf(before, k)
		if !ok {
			if _, listed := statsMetrics[k]; !listed && !strings.HasPrefix(k, "errors.") {
				t.Errorf(".nczarrfs/stats has %s = %v, which no metric shows", k, v)
			}
			continue
		}
		compared++
		if m != v {
			t.Errorf("%s: metrics %v, .nczarrfs/stats %v", k, m, v)
		}
	}
	for _, k := range []string{"store.objects", "store.bytes", "cache.misses", "cache.decoded_bytes"} {
		if st[k] == 0 {
			t.Errorf("%s = 0 after cat of %v", k, catted)
		}
	}
	t.Logf("%d counters equal in /metrics and .nczarrfs/stats; objects %v, bytes %v, cache hits %v, misses %v",
		compared, st["store.objects"], st["store.bytes"], st["cache.hits"], st["cache.misses"])
	if compared < 20 {
		t.Errorf("only %d counters compared", compared)
	}

	// A bad address is refused before anything is read.
	out, err := mountFails(t, srv.Endpoint+"/metrics/"+ds.Name+"#mode="+s3Mode(set), "--metrics-addr", "9100")
	if err == nil || !strings.Contains(out, `--metrics-addr: "9100" is not HOST:PORT`) {
		t.Errorf("--metrics-addr 9100: %v, %q", err, out)
	}
}

// countingProxyEnv, in the environment of this test binary, makes it a
// proxy in front of the S3 server the variable names instead of running
// tests (startCountingProxy).
const countingProxyEnv = "NCZARRFS_TEST_COUNTING_PROXY"

func init() {
	if target := os.Getenv(countingProxyEnv); target != "" {
		os.Exit(countingProxy(target))
	}
}

// countingProxy forwards requests to target and counts them by
// faultproxy.Key. It prints two URLs on stdout, the proxy's and that of
// its counts (JSON), and serves until stdin is closed.
func countingProxy(target string) int {
	u, err := url.Parse(target)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	var mu sync.Mutex
	counts := map[string]int{}
	rp := &httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) {
		pr.SetURL(u)
		pr.Out.Host = pr.In.Host // what the client signed
	}}
	proxy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	report, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	go http.Serve(proxy, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		counts[faultproxy.Key(r)]++
		mu.Unlock()
		rp.ServeHTTP(w, r)
	}))
	go http.Serve(report, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		json.NewEncoder(w).Encode(counts)
	}))
	fmt.Printf("http://%s http://%s\n", proxy.Addr(), report.Addr())
	io.Copy(io.Discard, os.Stdin)
	return 0
}

// countingProxyProcess is a countingProxy running as a child process.
type countingProxyProcess struct {
	url, countsURL string
}

// startCountingProxy starts this test binary as a counting proxy in front
// of target. It is a process of its own because the tests read files by
// mmap: a page fault on a FUSE file holds the faulting process's memory
// map while the daemon answers, and a daemon that needs a proxy in that
// same process to answer would wait for ever on its next allocation.
func startCountingProxy(t *testing.T, target string) *countingProxyProcess {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), countingProxyEnv+"="+target)
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	p := &countingProxyProcess{}
	if _, err2 := fmt.Sscan(line, &p.url, &p.countsURL); err != nil || err2 != nil {
		t.Fatalf("counting proxy: %q, %v %v", line, err, err2)
	}
	return p
}

// counts returns how many requests the proxy has seen for each key.
func (p *countingProxyProcess) counts(t *testing.T) map[string]int {
	t.Helper()
	code, body := httpGet(t, p.countsURL)
	var counts map[string]int
	if err := json.Unmarshal([]byte(body), &counts); code != 200 || err != nil {
		t.Fatalf("proxy counts: %d %q: %v", code, body, err)
	}
	return counts
}

// nodes is how many daemons TestManyNodes runs: one per simulated node.
const nodes = 8

// TestManyNodes runs 8 daemons as 8 nodes would: each in a mount
// namespace of its own, with a --cache-dir of its own, all reading the
// same bucket at once (whole arrays and random slices, every byte
// checked). The bucket is behind a proxy that counts what it served;
// the requests the daemons' metrics say reached the bucket (their disk
// caches' misses and their HEADs) must add up to the object requests the
// proxy saw, and their listings to no more than the proxy's listings.
func TestManyNodes(t *testing.T) {
	bin := staticBinary(t)
	srv := miniotest.Start(t)
	s3Env(t, srv)
	srv.CreateBucket(t, "shared")
	set, ds := basicDataset(t)
	srv.PutTree(t, "shared", ds.Name, ds.TreePath(set))
	proxy := startCountingProxy(t, srv.Endpoint)
	source := proxy.url + "/shared/" + ds.Name + "#mode=" + s3Mode(set)

	type node struct {
		cmd    *exec.Cmd
		output *syncBuffer
		done   chan error
		mnt    string // as seen from this process, through /proc/PID/root
		url    string
	}
	var all []*node
	for i := range nodes {
		dir := t.TempDir()
		mnt := filepath.Join(dir, "mnt")
		mustMkdir(t, mnt)
		n := &node{output: &syncBuffer{}, done: make(chan error, 1)}
		// The mount exists only in the daemon's namespace: another
		// node's mounts are not seen.
		n.cmd = exec.Command("unshare", "--mount", "--propagation", "private", bin, "mount",
			"--cache-dir", filepath.Join(dir, "cache"), "--metrics-addr", "127.0.0.1:0", source, mnt)
		// Gone with the test process, should it be killed.
		n.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		n.cmd.Stdout, n.cmd.Stderr = n.output, n.output
		if err := n.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { n.done <- n.cmd.Wait() }()
		t.Cleanup(func() {
			n.cmd.Process.Signal(syscall.SIGTERM)
			select {
			case err := <-n.done:
				if err != nil {
					t.Errorf("node %d: nczarrfs exited with %v after SIGTERM:\n%s", i, err, clip(n.output.String()))
				}
			case <-time.After(unmountWait):
				n.cmd.Process.Kill()
				<-n.done
				t.Errorf("node %d: nczarrfs still running %v after SIGTERM", i, unmountWait)
			}
		})
		n.mnt = fmt.Sprintf("/proc/%d/root%s", n.cmd.Process.Pid, mnt)
		all = append(all, n)
	}
	for i, n := range all {
		n.url = metricsURL(t, n.output)
		waitFor(t, fmt.Sprintf("node %d's mount", i), func() bool {
			_, err := os.Stat(filepath.Join(n.mnt, ".nczarrfs"))
			return err == nil
		})
		if _, ok := mountedAt(strings.TrimPrefix(n.mnt, fmt.Sprintf("/proc/%d/root", n.cmd.Process.Pid))); ok {
			t.Errorf("node %d's mount is seen outside its namespace", i)
		}
	}
	// All at once, whatever -parallel says: t.Run from a goroutine each.
	var wg sync.WaitGroup
	for i, n := range all {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t.Run(fmt.Sprintf("node%d", i), func(t *testing.T) { checkDataset(t, n.mnt, set, ds) })
		}()
	}
	wg.Wait()

	var fromNodes, lists float64
	for i, n := range all {
		// Read-ahead may still be loading: scrape once nothing is in
		// flight and the counts stand still.
		var m map[string]float64
		waitFor(t, fmt.Sprintf("node %d at rest", i), func() bool {
			before := requestCounts(scrape(t, n.url))
			time.Sleep(50 * time.Millisecond)
			m = scrape(t, n.url)
			return m["nczarrfs_store_in_flight"] == 0 && maps.Equal(before, requestCounts(m))
		})
		get := func(name string) float64 {
			v, ok := m[name]
			if !ok {
				t.Fatalf("node %d: no metric %s", i, name)
			}
			return v
		}
		misses := get("nczarrfs_disk_cache_misses_total")
		heads := get(`nczarrfs_store_requests_total{op="stat",outcome="ok"}`) + get(`nczarrfs_store_requests_total{op="stat",outcome="error"}`) +
			get(`nczarrfs_store_requests_total{op="size",outcome="ok"}`) + get(`nczarrfs_store_requests_total{op="size",outcome="error"}`)
		// Listings by the kind S3 bills: a search, or each page of the
		// one flat listing of the dataset.
		lists += get("nczarrfs_store_requests_LIST_total")
		t.Logf("node %d: %v objects fetched (%v from its --cache-dir), %v HEADs", i, get("nczarrfs_store_objects_total"), get("nczarrfs_disk_cache_hits_total"), heads)
		if misses == 0 {
			t.Errorf("node %d fetched nothing from the bucket", i)
		}
		fromNodes += misses + heads
	}
	var objects, listed int
	for key, n := range proxy.counts(t) {
		switch {
		case strings.HasPrefix(key, "list:"):
			listed += n
		case key != "":
			objects += n
		default:
			t.Logf("bucket requests: %d", n)
		}
	}
	t.Logf("%d nodes: the bucket served %d object requests and %d listings; the nodes' metrics count %v object requests and %v listings",
		nodes, objects, listed, fromNodes, lists)
	if float64(objects) != fromNodes {
		t.Errorf("the bucket served %d object requests; the nodes' metrics add up to %v", objects, fromNodes)
	}
	// Each mount lists once when it opens the store (a check, before
	// anything is counted), then what its metrics count.
	if float64(listed) != lists+float64(nodes) {
		t.Errorf("the bucket served %d listings; the nodes' metrics count %v listings and %d opens", listed, lists, nodes)
	}
}

// requestCounts keeps of scraped metrics those of the store's requests
// and of the --cache-dir folder.
func requestCounts(m map[string]float64) map[string]float64 {
	maps.DeleteFunc(m, func(k string, _ float64) bool {
		return !strings.HasPrefix(k, "nczarrfs_store_") && !strings.HasPrefix(k, "nczarrfs_disk_cache_")
	})
	return m
}

// k8sContainer is the part of a container spec the manifest checks read.
type k8sContainer struct {
	Name            string   `yaml:"name"`
	Image           string   `yaml:"image"`
	Args            []string `yaml:"args"`
	SecurityContext struct {
		Privileged bool `yaml:"privileged"`
	} `yaml:"securityContext"`
	Ports []struct {
		Name          string `yaml:"name"`
		ContainerPort int    `yaml:"containerPort"`
	} `yaml:"ports"`
	StartupProbe   *k8sProbe `yaml:"startupProbe"`
	ReadinessProbe *k8sProbe `yaml:"readinessProbe"`
	LivenessProbe  *k8sProbe `yaml:"livenessProbe"`
	Lifecycle      struct {
		PreStop struct {
			Exec struct {
				Command []string `yaml:"command"`
			} `yaml:"exec"`
		} `yaml:"preStop"`
	} `yaml:"lifecycle"`
	VolumeMounts []struct {
		Name             string `yaml:"name"`
		MountPath        string `yaml:"mountPath"`
		MountPropagation string `yaml:"mountPropagation"`
	} `yaml:"volumeMounts"`
}

type k8sProbe struct {
	HTTPGet struct {
		Path string `yaml:"path"`
		Port string `yaml:"port"`
	} `yaml:"httpGet"`
}

type k8sPodSpec struct {
	InitContainers []k8sContainer `yaml:"initContainers"`
	Containers     []k8sContainer `yaml:"containers"`
	Volumes        []struct {
		Name     string    `yaml:"name"`
		EmptyDir *struct{} `yaml:"emptyDir"`
		HostPath *struct {
			Path string `yaml:"path"`
		} `yaml:"hostPath"`
	} `yaml:"volumes"`
}

type k8sObject struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Metadata   struct {
		Name string `yaml:"name"`
	} `yaml:"metadata"`
	Spec struct {
		k8sPodSpec `yaml:",inline"`
		Template   struct {
			Spec k8sPodSpec `yaml:"spec"`
		} `yaml:"template"`
	} `yaml:"spec"`
	Resources []string `yaml:"resources"` // of a Kustomization
}

// TestKubernetesManifests parses examples/kubernetes and checks what makes
// the examples work: nczarrfs's flags exist (its own --help says so), the
// probes reach --metrics-addr on the pod's address, the preStop hook
// unmounts the mountpoint nczarrfs mounts, which propagates Bidirectional
// from a privileged container to the workloads' HostToContainer mounts.
// kubectl kustomize builds them all offline; kubectl apply --dry-run=client
// needs a cluster to answer its discovery requests, and runs when one does.
func TestKubernetesManifests(t *testing.T) {
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "examples", "kubernetes")
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) < 4 {
		t.Fatalf("manifests in %s: %v, %v", dir, files, err)
	}
	help, _, code := runCommand(t, nil, staticBinary(t), "mount", "--help")
	if code != 0 {
		t.Fatalf("nczarrfs mount --help: exit %d", code)
	}
	kinds := map[string]int{}
	var listed []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		dec := yaml.NewDecoder(strings.NewReader(string(b)))
		for {
			var obj k8sObject
			err := dec.Decode(&obj)
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("%s: not YAML: %v", f, err)
			}
			name := filepath.Base(f) + ": " + obj.Kind + " " + obj.Metadata.Name
			if obj.APIVersion == "" || obj.Kind == "" || (obj.Metadata.Name == "" && obj.Kind != "Kustomization") {
				t.Errorf("%s: apiVersion %q, kind %q, name %q", filepath.Base(f), obj.APIVersion, obj.Kind, obj.Metadata.Name)
			}
			kinds[obj.Kind]++
			if obj.Kind == "Kustomization" {
				listed = obj.Resources
			}
			spec := obj.Spec.k8sPodSpec
			if obj.Kind == "DaemonSet" {
				spec = obj.Spec.Template.Spec
			}
			checkPodSpec(t, name, spec, help)
		}
	}
	for _, kind := range []string{"Pod", "DaemonSet", "Secret", "ServiceAccount", "Kustomization"} {
		if kinds[kind] == 0 {
			t.Errorf("no %s in %s", kind, dir)
		}
	}
	for _, f := range files {
		if base := filepath.Base(f); base != "kustomization.yaml" && !slices.Contains(listed, base) {
			t.Errorf("kustomization.yaml does not list %s", base)
		}
	}

	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Logf("kubectl not installed: the manifests were checked as YAML only")
		return
	}
	out, stderr, code := runCommand(t, nil, kubectl, "kustomize", dir)
	if code != 0 || strings.Count(out, "\nkind: ")+strings.Count(out[:min(len(out), 200)], "kind: ") < 4 {
		t.Errorf("kubectl kustomize %s: exit %d: %s%s", dir, code, out, stderr)
	}
	for _, f := range files {
		if filepath.Base(f) == "kustomization.yaml" {
			continue
		}
		out, stderr, code := runCommand(t, nil, kubectl, "apply", "--dry-run=client", "--validate=false", "--request-timeout=5s", "-f", f)
		if code != 0 && (strings.Contains(stderr, "connection refused") || strings.Contains(stderr, "couldn't get current server API group list") || strings.Contains(stderr, "no configuration has been provided")) {
			t.Logf("kubectl apply --dry-run=client: no cluster to ask for its API groups, which client dry runs need (%s); kubectl kustomize built the manifests", strings.TrimSpace(strings.SplitN(stderr, "\n", 2)[0]))
			break
		}
		if code != 0 {
			t.Errorf("kubectl apply --dry-run=client -f %s: exit %d: %s%s", f, code, out, stderr)
		}
	}
}

// checkPodSpec checks the pod spec of manifest name (see
// TestKubernetesManifests).
func checkPodSpec(t *testing.T, name string, spec k8sPodSpec, help string) {
	t.Helper()
	all := append(append([]k8sContainer(nil), spec.InitContainers...), spec.Containers...)
	propagation := map[string]string{} // volume -> Bidirectional, from nczarrfs
	for _, c := range all {
		if !strings.Contains(c.Image, "nczarrfs") {
			continue
		}
		if len(c.Args) < 3 || c.Args[0] != "mount" {
			t.Errorf("%s: container %s: args %q, want mount SOURCE MOUNTPOINT ...", name, c.Name, c.Args)
			continue
		}
		var positional []string
		port := ""
		for _, a := range c.Args[1:] {
			if !strings.HasPrefix(a, "--") {
				positional = append(positional, a)
				continue
			}
			flag, value, _ := strings.Cut(a, "=")
			if !strings.Contains(help, flag+" ") && !strings.Contains(help, flag+"\t") {
				t.Errorf("%s: nczarrfs mount has no flag %s", name, flag)
			}
			if flag == "--metrics-addr" {
				host, p, _ := strings.Cut(value, ":")
				if host != "0.0.0.0" {
					t.Errorf("%s: --metrics-addr %s: kubelet probes the pod's address, so it must listen on 0.0.0.0", name, value)
				}
				port = p
			}
		}
		if len(positional) != 2 {
			t.Fatalf("%s: arguments %q, want SOURCE and MOUNTPOINT", name, positional)
		}
		mnt := positional[1]
		if port == "" {
			t.Errorf("%s: no --metrics-addr for the probes", name)
		}
		ports := map[string]string{}
		for _, p := range c.Ports {
			ports[p.Name] = strconv.Itoa(p.ContainerPort)
		}
		for what, p := range map[string]*k8sProbe{"startupProbe": c.StartupProbe, "readinessProbe": c.ReadinessProbe, "livenessProbe": c.LivenessProbe} {
			want := "/readyz"
			if what == "livenessProbe" {
				want = "/healthz"
			}
			if p == nil || p.HTTPGet.Path != want || ports[p.HTTPGet.Port] != port {
				t.Errorf("%s: %s %+v, want GET %s on port %s", name, what, p, want, port)
			}
		}
		if got, want := c.Lifecycle.PreStop.Exec.Command, []string{"/usr/bin/nczarrfs", "unmount", mnt}; !slices.Equal(got, want) {
			t.Errorf("%s: preStop %q, want %q", name, got, want)
		}
		if !c.SecurityContext.Privileged {
			t.Errorf("%s: container %s is not privileged: Bidirectional propagation needs it", name, c.Name)
		}
		found := false
		for _, m := range c.VolumeMounts {
			if m.MountPath == mnt {
				found = true
				if m.MountPropagation != "Bidirectional" {
					t.Errorf("%s: the mountpoint's volume %s has propagation %q, want Bidirectional", name, m.Name, m.MountPropagation)
				}
				propagation[m.Name] = m.MountPropagation
			}
		}
		if !found {
			t.Errorf("%s: no volume mounted at the mountpoint %s", name, mnt)
		}
	}
	for _, c := range all {
		if strings.Contains(c.Image, "nczarrfs") {
			continue
		}
		for _, m := range c.VolumeMounts {
			_, shared := propagation[m.Name]
			hostPath := false
			for _, v := range spec.Volumes {
				hostPath = hostPath || v.Name == m.Name && v.HostPath != nil
			}
			if (shared || hostPath) && m.MountPropagation != "HostToContainer" {
				t.Errorf("%s: workload %s mounts %s with propagation %q, want HostToContainer to see the mount", name, c.Name, m.Name, m.MountPropagation)
			}
		}
	}
}

// TestInstallNotRoot runs make install as the user nobody into a PREFIX
// nobody owns: the binary is installed, the mount(8) helper in /sbin is
// not, and the output says the command that adds it. The build itself is
// this test's (GO=true makes make's build step a no-op): nobody cannot
// read root's Go caches.
func TestInstallNotRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run make as another user")
	}
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	// nobody walks through the test's folders (0700 as made).
	for _, dir := range []string{home, filepath.Dir(home)} {
		if err := os.Chmod(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	prefix := filepath.Join(home, "nobody", ".local")
	mustMkdir(t, filepath.Dir(prefix))
	if err := os.Chown(filepath.Dir(prefix), 65534, 65534); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(home, "nczarrfs")
	b, err := os.ReadFile(staticBinary(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + filepath.Dir(prefix)}
	out, stderr, code := runCommand(t, env, "setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups",
		"make", "-C", root, "install", "PREFIX="+prefix, "BIN="+bin, "GO=true")
	if code != 0 {
		t.Fatalf("make install as nobody: exit %d:\n%s%s", code, out, stderr)
	}
	installed := filepath.Join(prefix, "bin", "nczarrfs")
	info, err := os.Stat(installed)
	if err != nil || info.Mode().Perm() != 0o755 || info.Sys().(*syscall.Stat_t).Uid != 65534 {
		t.Fatalf("installed binary: %v, %v; want mode 0755, owned by nobody", info, err)
	}
	if got, _, code := runCommand(t, nil, installed, "--version"); code != 0 || !strings.HasPrefix(got, "nczarrfs version ") {
		t.Errorf("%s --version: %q, exit %d", installed, got, code)
	}
	if want := "ln -sfn " + installed + " /sbin/mount.fuse.nczarrfs"; !strings.Contains(out, want) {
		t.Errorf("make install as nobody says:\n%s%s\nwant the command %q", out, stderr, want)
	}
	if target, err := os.Readlink("/sbin/mount.fuse.nczarrfs"); err == nil && target == installed {
		t.Errorf("/sbin/mount.fuse.nczarrfs links to nobody's binary")
	}
}

// TestDist runs make dist for this machine's target alone (the other,
// linux/arm64 or amd64, is a cross-build of the same code, left to
// make dist): one archive with the static binary, the docs it names, and
// SHA256SUMS that sha256sum -c accepts.
func TestDist(t *testing.T) {
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	dist := t.TempDir()
	target := runtime.GOOS + "/" + runtime.GOARCH
	out, stderr, code := runCommand(t, nil, "make", "-C", root, "dist", "DIST="+dist, "PLATFORMS="+target, "VERSION=test")
	if code != 0 {
		t.Fatalf("make dist: exit %d:\n%s%s", code, out, stderr)
	}
	name := "nczarrfs-test-" + runtime.GOOS + "-" + runtime.GOARCH
	cmd := exec.Command("sha256sum", "-c", "SHA256SUMS")
	cmd.Dir = dist
	if msg, err := cmd.CombinedOutput(); err != nil || string(msg) != name+".tar.gz: OK\n" {
		t.Errorf("sha256sum -c SHA256SUMS: %v: %s", err, msg)
	}
	list, err := exec.Command("tar", "-tzf", filepath.Join(dist, name+".tar.gz")).Output()
	if want := name + "/\n" + name + "/README.md\n" + name + "/install.md\n" + name + "/nczarrfs\n"; err != nil || string(list) != want {
		t.Errorf("the archive holds %q (%v), want %q", list, err, want)
	}
	if err := exec.Command("tar", "-C", dist, "-xzf", filepath.Join(dist, name+".tar.gz")).Run(); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dist, name, "nczarrfs")
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("%s asks for a dynamic loader", bin)
		}
	}
	if v, _, code := runCommand(t, nil, bin, "--version"); code != 0 || !strings.HasPrefix(v, "nczarrfs version test ") || !strings.HasSuffix(v, " "+target+"\n") {
		t.Errorf("--version: %q, exit %d", v, code)
	}
}
