package test

// Tests of issue 29: the CSI node plugin, "nczarrfs csi". csi-sanity's
// Identity and Node suites run against the real plugin, and a kubelet-like
// test publishes real volumes (a zip, and a MinIO bucket whose credentials
// come only from the publish secrets), reads them, kills the plugin and
// the daemons, and checks what comes back.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/kubernetes-csi/csi-test/v5/pkg/sanity"
	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"gopkg.in/yaml.v3"

	"github.com/nczarrfs/nczarrfs/internal/miniotest"
)

// csiPlugin is a running "nczarrfs csi".
type csiPlugin struct {
	cmd    *exec.Cmd
	output *syncBuffer
	done   chan struct{}
	sock   string
}

// startCSI starts the plugin serving on sock with its records in state,
// and waits until it serves. Extra args follow. It is stopped (SIGTERM)
// when the test ends, unless it was killed before.
func startCSI(t *testing.T, sock, state string, env []string, args ...string) *csiPlugin {
	t.Helper()
	p := &csiPlugin{output: &syncBuffer{}, done: make(chan struct{}), sock: sock}
	p.cmd = exec.Command(nczarrfsBinary(t), append([]string{"csi", "--endpoint", "unix://" + sock, "--node-id", "node-1", "--state-dir", state}, args...)...)
	p.cmd.Env = env
	p.cmd.Stdout, p.cmd.Stderr = p.output, p.output
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(unmountWait):
			p.cmd.Process.Kill()
			<-p.done
		}
		// The binary is built with the race detector.
		if out := p.output.String(); strings.Contains(out, "DATA RACE") || strings.Contains(out, "panic:") {
			t.Errorf("nczarrfs csi:\n%s", out)
		}
	})
	// The plugin listens first, adopts its volumes, then serves.
	waitFor(t, "the CSI plugin serving", func() bool {
		select {
		case <-p.done:
			t.Fatalf("nczarrfs csi exited:\n%s", p.output.String())
		default:
		}
		return strings.Contains(p.output.String(), `msg="serving CSI"`)
	})
	return p
}

// kill ends the plugin with SIGKILL, leaving its socket file behind.
func (p *csiPlugin) kill(t *testing.T) {
	t.Helper()
	p.cmd.Process.Kill()
	<-p.done
}

// client dials the plugin.
func (p *csiPlugin) client(t *testing.T) (csi.IdentityClient, csi.NodeClient) {
	t.Helper()
	conn, err := grpc.NewClient("unix://"+p.sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return csi.NewIdentityClient(conn), csi.NewNodeClient(conn)
}

// csiDir is a short folder for the plugin's socket and state: a Unix
// socket's path has at most 107 bytes, and t.TempDir's names are long.
func csiDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "csi-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// pluginEnv is the test's environment without AWS credentials: a volume
// that reads a bucket can only get them from its secrets.
func pluginEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AWS_ACCESS_KEY_ID=") && !strings.HasPrefix(kv, "AWS_SECRET_ACCESS_KEY=") {
			env = append(env, kv)
		}
	}
	return env
}

// TestCSISanity runs csi-sanity v5.4.0's Identity and Node suites against
// the real plugin. Its Controller suite is skipped (the plugin has no
// Controller service to speak of), and so is the one Node test that
// needs CreateVolume; TestCSIKubelet checks what it would (the target is
// removed by NodeUnpublishVolume).
func TestCSISanity(t *testing.T) {
	set, ds := basicDataset(t)
	dir := csiDir(t)
	sock := filepath.Join(dir, "csi.sock")
	startCSI(t, sock, filepath.Join(dir, "state"), pluginEnv())

	cfg := sanity.NewTestConfig()
	cfg.Address = sock
	cfg.TargetPath = filepath.Join(dir, "target")
	cfg.StagingPath = filepath.Join(dir, "staging")
	cfg.TestVolumeParameters = map[string]string{"source": ds.ZipPath(set)}
	sanity.GinkgoTest(&cfg)
	gomega.RegisterFailHandler(ginkgo.Fail)
	suite, reporter := ginkgo.GinkgoConfiguration()
	suite.SkipStrings = []string{"Controller Service", "should remove target path"}
	reporter.Verbose = testing.Verbose()
	reporter.NoColor = true
	if !ginkgo.RunSpecs(t, "nczarrfs CSI sanity", suite, reporter) {
		t.Error("csi-sanity failed")
	}
}

// publishReq is a NodePublishVolume request of a mount volume in mode.
func publishReq(id, target string, mode csi.VolumeCapability_AccessMode_Mode, attrs, secrets map[string]string) *csi.NodePublishVolumeRequest {
	return &csi.NodePublishVolumeRequest{
		VolumeId:   id,
		TargetPath: target,
		VolumeCapability: &csi.VolumeCapability{
			AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{}},
			AccessMode: &csi.VolumeCapability_AccessMode{Mode: mode},
		},
		VolumeContext: attrs,
		Secrets:       secrets,
	}
}

// compareTrees checks that every folder and file of the mount got is the
// same as in the mount want, names, sizes and bytes; .nczarrfs (the
// mount's own counters) aside.
func compareTrees(t *testing.T, want, got string) {
	t.Helper()
	files := 0
	err := filepath.WalkDir(want, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(want, p)
		if d.Name() == ".nczarrfs" {
			return filepath.SkipDir
		}
		other := filepath.Join(got, rel)
		if d.IsDir() {
			a, errA := os.ReadDir(p)
			b, errB := os.ReadDir(other)
			if errA != nil || errB != nil || len(a) != len(b) {
				t.Errorf("folder %s: %d entries (%v) in the direct mount, %d (%v) in the volume", rel, len(a), errA, len(b), errB)
				return nil
			}
			for i := range a {
				if a[i].Name() != b[i].Name() {
					t.Errorf("folder %s: entry %q in the direct mount, %q in the volume", rel, a[i].Name(), b[i].Name())
				}
			}
			return nil
		}
		a, errA := os.ReadFile(p)
		b, errB := os.ReadFile(other)
		if errA != nil || errB != nil || !bytes.Equal(a, b) {
			t.Errorf("file %s: %d bytes (%v) in the direct mount, %d (%v) in the volume, or they differ", rel, len(a), errA, len(b), errB)
		}
		files++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 5 {
		t.Fatalf("compared %d files only", files)
	}
}

// cmdlinesWith lists the processes whose command line holds s.
func cmdlinesWith(s string) []string {
	var found []string
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		if _, err := strconv.Atoi(d.Name()); err != nil {
			continue
		}
		raw, err := os.ReadFile(filepath.Join("/proc", d.Name(), "cmdline"))
		if err == nil && bytes.Contains(raw, []byte(s)) {
			found = append(found, d.Name()+": "+strings.ReplaceAll(string(raw), "\x00", " "))
		}
	}
	return found
}

var pluginMetricsURL = regexp.MustCompile(`msg="serving metrics" url=(\S+)`)

// TestCSIKubelet does what kubelet does with the plugin, on two volumes:
// a zip file, without secrets, and a MinIO bucket whose credentials come
// only from the publish secrets. It publishes them (a writer mode: mounted read-only),
// again (idempotent), reads every file and compares it with a direct
// mount, publishes the zip for a second pod too, checks the per-volume
// metrics against each mount's stats,
// SIGKILLs the plugin and restarts it (the mounts are adopted), kills the
// mount daemons (the zip's is mounted again in place by the next plugin,
// the bucket's by the next publish, which brings its secrets), unpublishes
// (the targets are gone, twice over), and checks that no secret is in the
// plugin's log or metrics, a daemon's log or any process's command line.
func TestCSIKubelet(t *testing.T) {
	set, ds := basicDataset(t)
	zip := ds.ZipPath(set)
	direct := mount(t, zip, "--metadata-ttl", "forever")

	srv := miniotest.Start(t)
	srv.CreateBucket(t, "csi")
	srv.PutTree(t, "csi", ds.Name, ds.TreePath(set))
	s3Source := srv.Endpoint + "/csi/" + ds.Name + "#mode=" + s3Mode(set)
	s3Env(t, srv) // the direct mount's credentials; pluginEnv drops them
	s3Direct := mount(t, s3Source, "--metadata-ttl", "forever")

	dir := csiDir(t)
	sock, state := filepath.Join(dir, "csi.sock"), filepath.Join(dir, "state")
	env := pluginEnv()
	p := startCSI(t, sock, state, env, "--metrics-addr", "127.0.0.1:0")
	_, node := p.client(t)
	ctx := context.Background()

	// Targets as kubelet makes them; the folder itself is the plugin's
	// to create.
	pods := t.TempDir()
	zipTarget := filepath.Join(pods, "pod-a", "volumes", "kubernetes.io~csi", "run42", "mount")
	s3Target := filepath.Join(pods, "pod-b", "volumes", "kubernetes.io~csi", "bucket", "mount")
	for _, target := range []string{zipTarget, s3Target} {
		cleanupDetached(t, target)
	}
	zipReq := publishReq("run42", zipTarget, csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER,
		map[string]string{"source": zip, "metadataTTL": "forever", "cacheSize": "64MiB", "csi.storage.k8s.io/pod.name": "pod-a"},
		nil)
	s3Req := publishReq("bucket", s3Target, csi.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY,
		map[string]string{"source": s3Source, "region": miniotest.Region, "mountOptions": "s3_timeout=20s"},
		map[string]string{"AWS_ACCESS_KEY_ID": miniotest.User, "AWS_SECRET_ACCESS_KEY": miniotest.Password})
	publish := func(req *csi.NodePublishVolumeRequest) {
		t.Helper()
		if _, err := node.NodePublishVolume(ctx, req); err != nil {
			t.Fatalf("NodePublishVolume %s: %v\n%s", req.VolumeId, err, p.output.String())
		}
	}
	publish(zipReq)
	publish(s3Req)
	// Credentials the bucket refuses: the mount's own error, without the
	// secret, and nothing left mounted.
	badTarget := filepath.Join(pods, "pod-d", "volumes", "kubernetes.io~csi", "bucket", "mount")
	cleanupDetached(t, badTarget)
	badSecret := fmt.Sprintf("wrong-secret-%d", time.Now().UnixNano())
	bad := publishReq("bucket", badTarget, csi.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY, s3Req.VolumeContext,
		map[string]string{"AWS_ACCESS_KEY_ID": miniotest.User, "AWS_SECRET_ACCESS_KEY": badSecret})
	_, err := node.NodePublishVolume(ctx, bad)
	if st := status.Convert(err); st.Code() != codes.Internal || !strings.Contains(st.Message(), ds.Name) || strings.Contains(st.Message(), badSecret) {
		t.Errorf("publishing with credentials the bucket refuses: %v %q; want Internal with the mount's error naming the dataset, and no secret", st.Code(), st.Message())
	} else {
		t.Logf("refused credentials: %s", st.Message())
	}
	if _, ok := mountedAt(badTarget); ok {
		t.Errorf("a refused publish left a mount at %s", badTarget)
	}
	publish(zipReq) // again: idempotent
	publish(s3Req)
	checkVolumes := func(what string) {
		t.Helper()
		t.Logf("reading the volumes: %s", what)
		compareTrees(t, direct, zipTarget)
		compareTrees(t, s3Direct, s3Target)
	}
	checkVolumes("published")
	for _, target := range []string{zipTarget, s3Target} {
		if fstype, _ := mountedAt(target); fstype != "fuse.nczarrfs" {
			t.Errorf("%s: mounted as %q, want fuse.nczarrfs", target, fstype)
		}
		err := os.WriteFile(filepath.Join(target, "new"), []byte("x"), 0o644)
		if !errors.Is(err, syscall.EROFS) {
			t.Errorf("writing in %s: %v, want EROFS (a writer mode is served read-only)", target, err)
		}
	}
	other := publishReq("run42", zipTarget, csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER, map[string]string{"source": zip, "cacheSize": "32MiB"}, nil)
	if _, err := node.NodePublishVolume(ctx, other); status.Code(err) != codes.AlreadyExists {
		t.Errorf("publishing run42 at its target with other attributes: %v, want AlreadyExists", err)
	}

	// The plugin's metrics: each volume's, labelled, equal to its stats.
	m := pluginMetricsURL.FindStringSubmatch(p.output.String())
	if m == nil {
		t.Fatalf("no metrics address in the plugin's log:\n%s", p.output.String())
	}
	// The same volume for a second pod: a mount of its own, with metrics
	// of its own; unpublishing it leaves the first.
	secondTarget := filepath.Join(pods, "pod-c", "volumes", "kubernetes.io~csi", "run42", "mount")
	cleanupDetached(t, secondTarget)
	second := publishReq("run42", secondTarget, csi.VolumeCapability_AccessMode_SINGLE_NODE_READER_ONLY, zipReq.VolumeContext, nil)
	publish(second)
	compareTrees(t, direct, secondTarget)
	checkVolumeMetrics(t, m[1], [][2]string{{"run42", zipTarget}, {"bucket", s3Target}, {"run42", secondTarget}})
	if _, body := httpGet(t, m[1]); strings.Contains(body, miniotest.Password) {
		t.Errorf("a secret is in the plugin's metrics")
	}
	if _, err := node.NodeUnpublishVolume(ctx, &csi.NodeUnpublishVolumeRequest{VolumeId: "run42", TargetPath: secondTarget}); err != nil {
		t.Fatal(err)
	}
	waitDetachedExit(t, secondTarget)
	if _, err := os.Lstat(secondTarget); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("%s after NodeUnpublishVolume: %v, want it gone", secondTarget, err)
	}

	// A crash of the plugin: the mounts stay, and the next one adopts them.
	p.kill(t)
	compareTrees(t, direct, zipTarget)
	p = startCSI(t, sock, state, env, "--metrics-addr", "127.0.0.1:0")
	_, node = p.client(t)
	if n := strings.Count(p.output.String(), "adopted the mount of a previous plugin"); n != 2 {
		t.Errorf("the restarted plugin adopted %d mounts, want 2:\n%s", n, p.output.String())
	}
	checkVolumes("after a restart of the plugin")
	publish(zipReq) // kubelet's republish: nothing to do
	publish(s3Req)

	// The daemons die: the next plugin mounts the zip again in place (no
	// secrets needed); the bucket's waits for the next publish.
	for _, target := range []string{zipTarget, s3Target} {
		pids := daemonPIDs(target)
		if len(pids) != 1 {
			t.Fatalf("%d processes serve %s, want 1", len(pids), target)
		}
		syscall.Kill(pids[0], syscall.SIGKILL)
		waitDetachedExit(t, target)
		var st syscall.Statfs_t
		if err := syscall.Statfs(target, &st); !errors.Is(err, syscall.ENOTCONN) && !errors.Is(err, syscall.ECONNABORTED) {
			t.Fatalf("%s after its daemon was killed: %v, want ENOTCONN or ECONNABORTED", target, err)
		}
	}
	p.kill(t)
	p = startCSI(t, sock, state, env)
	_, node = p.client(t)
	if !strings.Contains(p.output.String(), "mounted again in place") {
		t.Errorf("the restarted plugin did not mount the zip again:\n%s", p.output.String())
	}
	compareTrees(t, direct, zipTarget)
	if entries, err := os.ReadDir(s3Target); err != nil || len(entries) != 0 {
		t.Errorf("the bucket's target after its daemon died and the plugin restarted: %d entries, %v; want an empty folder", len(entries), err)
	}
	publish(s3Req) // kubelet's republish brings the secrets
	checkVolumes("after the daemons died")

	// No secret anywhere it must not be.
	secrets := []string{miniotest.Password, badSecret}
	logs, _ := filepath.Glob(filepath.Join(state, "volumes", "*", "mount.log"))
	if len(logs) != 2 {
		t.Errorf("daemon logs %v, want 2", logs)
	}
	for _, s := range secrets {
		if found := cmdlinesWith(s); len(found) > 0 {
			t.Errorf("a secret is on command lines: %q", found)
		}
		if strings.Contains(p.output.String(), s) {
			t.Errorf("a secret is in the plugin's log")
		}
		for _, l := range logs {
			if b, _ := os.ReadFile(l); bytes.Contains(b, []byte(s)) {
				t.Errorf("a secret is in %s", l)
			}
		}
	}

	// Unpublish: unmounted (the zip's lazily: a file in it is open),
	// target removed, daemon gone once the file is closed; again: fine.
	open, err := os.Open(filepath.Join(zipTarget, "header.cdl"))
	if err != nil {
		t.Fatal(err)
	}
	defer open.Close()
	for _, req := range []*csi.NodePublishVolumeRequest{zipReq, s3Req} {
		for range 2 {
			if _, err := node.NodeUnpublishVolume(ctx, &csi.NodeUnpublishVolumeRequest{VolumeId: req.VolumeId, TargetPath: req.TargetPath}); err != nil {
				t.Fatalf("NodeUnpublishVolume %s: %v", req.VolumeId, err)
			}
		}
		if _, err := os.Lstat(req.TargetPath); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s after NodeUnpublishVolume: %v, want it gone", req.TargetPath, err)
		}
		if req == zipReq {
			want, _ := os.ReadFile(filepath.Join(direct, "header.cdl"))
			got, err := io.ReadAll(open)
			if err != nil || !bytes.Equal(got, want) {
				t.Errorf("reading a file left open in the unpublished volume: %d bytes, %v; want the %d of the dataset", len(got), err, len(want))
			}
			open.Close()
		}
		waitDetachedExit(t, req.TargetPath)
	}
	if left, _ := os.ReadDir(filepath.Join(state, "volumes")); len(left) != 0 {
		t.Errorf("records left in the state folder after unpublishing: %v", left)
	}
}

// checkVolumeMetrics scrapes the plugin's metrics and checks, for each
// volume (id and target), that it is up and that its store and cache
// counters are its mount's .nczarrfs/stats.
func checkVolumeMetrics(t *testing.T, url string, volumes [][2]string) {
	t.Helper()
	for _, v := range volumes {
		id, target := v[0], v[1]
		labels := fmt.Sprintf(`target="%s",volume_id="%s"`, target, id)
		var got map[string]float64
		var stats map[string]float64
		// Two scrapes that agree, the stats read between them: the mount
		// is at rest.
		waitFor(t, "metrics at rest of "+id, func() bool {
			a := scrape(t, url)
			stats = readStats(t, target)
			got = scrape(t, url)
			for k, v := range a {
				if strings.Contains(k, labels) && !strings.Contains(k, "process_") && !strings.Contains(k, "duration_seconds") && got[k] != v {
					return false
				}
			}
			return true
		})
		if v, ok := got["nczarrfs_csi_volume_up{"+labels+"}"]; !ok || v != 1 {
			t.Errorf("nczarrfs_csi_volume_up{%s} = %v, %v; want 1", labels, v, ok)
		}
		checked := 0
		for key, name := range map[string]string{
			"store.objects":       "nczarrfs_store_objects_total",
			"store.bytes":         "nczarrfs_store_bytes_total",
			"cache.misses":        "nczarrfs_cache_misses_total",
			"cache.decoded_bytes": "nczarrfs_cache_decoded_bytes_total",
		} {
			want, ok := stats[key]
			if !ok {
				t.Errorf("%s: no %s in .nczarrfs/stats", target, key)
				continue
			}
			if v, ok := got[name+"{"+labels+"}"]; !ok || v != want {
				t.Errorf("%s{%s} = %v (%v), want %v as .nczarrfs/stats says", name, labels, v, ok, want)
			}
			checked++
		}
		if stats["store.objects"] == 0 {
			t.Errorf("%s: the volume read no object", id)
		}
		t.Logf("%s: %d counters equal the mount's stats", id, checked)
	}
}

// TestCSIPublishErrors checks what NodePublishVolume refuses, and how:
// bad attributes and secrets with InvalidArgument and one message saying
// what is wrong, a source that cannot be mounted with the mount's own
// error; none leaves a mount, a record or a secret behind.
func TestCSIPublishErrors(t *testing.T) {
	set, ds := basicDataset(t)
	zip := ds.ZipPath(set)
	dir := csiDir(t)
	state := filepath.Join(dir, "state")
	p := startCSI(t, filepath.Join(dir, "csi.sock"), state, pluginEnv())
	_, node := p.client(t)
	target := filepath.Join(t.TempDir(), "mount")
	cleanupDetached(t, target)
	secret := fmt.Sprintf("csi-error-secret-%d", time.Now().UnixNano())
	reader := csi.VolumeCapability_AccessMode_SINGLE_NODE_READER_ONLY
	for _, c := range []struct {
		name    string
		req     *csi.NodePublishVolumeRequest
		code    codes.Code
		message string
	}{
		{"no source", publishReq("v", target, reader, map[string]string{"cacheSize": "1GiB"}, nil), codes.InvalidArgument, `volume attribute "source" is missing`},
		{"unknown attribute", publishReq("v", target, reader, map[string]string{"source": zip, "cachesize": "1GiB"}, nil), codes.InvalidArgument, `unknown volume attribute "cachesize"`},
		{"bad size", publishReq("v", target, reader, map[string]string{"source": zip, "cacheSize": "lots"}, nil), codes.InvalidArgument, `--cache-size: "lots" is not a size`},
		{"bad ttl", publishReq("v", target, reader, map[string]string{"source": zip, "metadataTTL": "often"}, nil), codes.InvalidArgument, `--metadata-ttl: "often" is not a duration`},
		{"bad boolean", publishReq("v", target, reader, map[string]string{"source": zip, "noSignRequest": "maybe"}, nil), codes.InvalidArgument, `noSignRequest: "maybe" is not true or false`},
		{"unknown option", publishReq("v", target, reader, map[string]string{"source": zip, "mountOptions": "cache_size=1GiB,turbo"}, nil), codes.InvalidArgument, `unknown mount option "turbo"`},
		{"plugin's option", publishReq("v", target, reader, map[string]string{"source": zip, "mountOptions": "metrics_addr=0.0.0.0:9100"}, nil), codes.InvalidArgument, `metrics-addr is set by the CSI plugin`},
		{"bad source URL", publishReq("v", target, reader, map[string]string{"source": "ftp://host/x"}, nil), codes.InvalidArgument, `ftp`},
		{"bad secret key", publishReq("v", target, reader, map[string]string{"source": zip}, map[string]string{"password": secret}), codes.InvalidArgument, `secret key "password" is not a credential variable`},
		{"relative target", publishReq("v", "mnt", reader, map[string]string{"source": zip}, nil), codes.InvalidArgument, `not absolute`},
		{"missing source", publishReq("v", target, reader, map[string]string{"source": filepath.Join(dir, "none.zip")}, map[string]string{"AWS_SECRET_ACCESS_KEY": secret}), codes.Internal, "none.zip"},
		{"not a dataset", publishReq("v", target, reader, map[string]string{"source": dir}, nil), codes.Internal, "holds no dataset"},
	} {
		_, err := node.NodePublishVolume(context.Background(), c.req)
		st := status.Convert(err)
		if st.Code() != c.code || !strings.Contains(st.Message(), c.message) {
			t.Errorf("%s: %v %q, want %v with %q", c.name, st.Code(), st.Message(), c.code, c.message)
		}
		if strings.Contains(st.Message(), secret) {
			t.Errorf("%s: the error names a secret's value: %q", c.name, st.Message())
		}
		if _, ok := mountedAt(target); ok {
			t.Fatalf("%s: left a mount at %s", c.name, target)
		}
	}
	block := publishReq("v", target, reader, map[string]string{"source": zip}, nil)
	block.VolumeCapability.AccessType = &csi.VolumeCapability_Block{Block: &csi.VolumeCapability_BlockVolume{}}
	if _, err := node.NodePublishVolume(context.Background(), block); status.Code(err) != codes.InvalidArgument {
		t.Errorf("a block volume: %v, want InvalidArgument", err)
	}
	if left, _ := os.ReadDir(filepath.Join(state, "volumes")); len(left) != 0 {
		t.Errorf("failed publishes left records: %v", left)
	}
	if strings.Contains(p.output.String(), secret) {
		t.Errorf("a secret is in the plugin's log:\n%s", p.output.String())
	}
}

// TestCSIStaleSocket starts the plugin where a killed one left its socket
// file: it serves; and where a running one serves: it refuses.
func TestCSIStaleSocket(t *testing.T) {
	dir := csiDir(t)
	sock := filepath.Join(dir, "csi.sock")
	p := startCSI(t, sock, filepath.Join(dir, "state"), pluginEnv())
	_, _, code := runBinary(t, nil, "csi", "--endpoint", "unix://"+sock, "--node-id", "n", "--state-dir", filepath.Join(dir, "state2"))
	if code == 0 {
		t.Errorf("a second plugin on a served socket exited 0")
	}
	p.kill(t)
	if _, err := os.Lstat(sock); err != nil {
		t.Fatalf("the killed plugin left no socket file: %v", err)
	}
	p = startCSI(t, sock, filepath.Join(dir, "state"), pluginEnv())
	id, _ := p.client(t)
	info, err := id.GetPluginInfo(context.Background(), &csi.GetPluginInfoRequest{})
	if err != nil || info.Name != "nczarrfs.csi.nczarrfs.io" {
		t.Errorf("GetPluginInfo after replacing a stale socket: %v, %v", info, err)
	}
}

// csiManifest is the part of the CSI manifests the checks read.
type csiManifest struct {
	Kind     string `yaml:"kind"`
	Metadata struct {
		Name string `yaml:"name"`
	} `yaml:"metadata"`
	StringData map[string]string `yaml:"stringData"` // a Secret's
	Resources  []string          `yaml:"resources"`  // a Kustomization's
	Spec       struct {
		// CSIDriver
		AttachRequired       *bool    `yaml:"attachRequired"`
		PodInfoOnMount       bool     `yaml:"podInfoOnMount"`
		RequiresRepublish    bool     `yaml:"requiresRepublish"`
		VolumeLifecycleModes []string `yaml:"volumeLifecycleModes"`
		// PersistentVolume
		CSI *csiVolumeSource `yaml:"csi"`
		// Pod
		Volumes    []csiPodVolume `yaml:"volumes"`
		Containers []k8sContainer `yaml:"containers"`
		// DaemonSet
		Template struct {
			Spec struct {
				ShareProcessNamespace bool           `yaml:"shareProcessNamespace"`
				Containers            []k8sContainer `yaml:"containers"`
				Volumes               []csiPodVolume `yaml:"volumes"`
			} `yaml:"spec"`
		} `yaml:"template"`
	} `yaml:"spec"`
}

type csiVolumeSource struct {
	Driver           string            `yaml:"driver"`
	ReadOnly         bool              `yaml:"readOnly"`
	VolumeAttributes map[string]string `yaml:"volumeAttributes"`
	SecretRef        *struct {
		Name string `yaml:"name"`
	} `yaml:"nodePublishSecretRef"`
}

type csiPodVolume struct {
	Name     string           `yaml:"name"`
	CSI      *csiVolumeSource `yaml:"csi"`
	HostPath *struct {
		Path string `yaml:"path"`
	} `yaml:"hostPath"`
}

var helpAttributes = regexp.MustCompile(`Volume attributes: ([a-zA-Z, ]+)\.`)

// TestKubernetesCSIManifests parses examples/kubernetes/csi and checks
// what makes them work with the binary: the CSIDriver's name and modes;
// the DaemonSet's shared process namespace (whose pause process reaps the
// daemons), its nczarrfs csi flags (its own --help has them), its
// liveness probe on --metrics-addr, the plugin's socket where
// node-driver-registrar looks for it and where kubelet will (the
// registration path in the host folder mounted at the socket's folder),
// kubelet's folder mounted Bidirectional; every volume's driver, its
// attributes (those --help lists) and its Secret, whose keys are
// credential variables. kubectl kustomize builds them offline.
func TestKubernetesCSIManifests(t *testing.T) {
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "examples", "kubernetes", "csi")
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) < 5 {
		t.Fatalf("manifests in %s: %v, %v", dir, files, err)
	}
	help, _, code := runCommand(t, nil, staticBinary(t), "csi", "--help")
	if code != 0 {
		t.Fatalf("nczarrfs csi --help: exit %d", code)
	}
	m := helpAttributes.FindStringSubmatch(help)
	if m == nil {
		t.Fatalf("nczarrfs csi --help lists no volume attributes:\n%s", help)
	}
	attributes := map[string]bool{}
	for _, a := range strings.Split(m[1], ", ") {
		attributes[strings.TrimSpace(a)] = true
	}
	const driver = "nczarrfs.csi.nczarrfs.io"
	if !strings.Contains(help, "node plugin "+driver) {
		t.Errorf("nczarrfs csi --help does not name the driver %s", driver)
	}

	kinds := map[string]int{}
	secrets := map[string]map[string]string{}
	var volumes []*csiVolumeSource
	var listed []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		dec := yaml.NewDecoder(bytes.NewReader(b))
		for {
			var obj csiManifest
			if err := dec.Decode(&obj); err == io.EOF {
				break
			} else if err != nil {
				t.Fatalf("%s: not YAML: %v", f, err)
			}
			name := filepath.Base(f) + ": " + obj.Kind + " " + obj.Metadata.Name
			kinds[obj.Kind]++
			switch obj.Kind {
			case "Kustomization":
				listed = obj.Resources
			case "Secret":
				secrets[obj.Metadata.Name] = obj.StringData
			case "CSIDriver":
				s := obj.Spec
				if obj.Metadata.Name != driver || s.AttachRequired == nil || *s.AttachRequired || !s.PodInfoOnMount || !s.RequiresRepublish ||
					!slices.Contains(s.VolumeLifecycleModes, "Persistent") || !slices.Contains(s.VolumeLifecycleModes, "Ephemeral") {
					t.Errorf("%s: %+v; want %s, attachRequired false, podInfoOnMount and requiresRepublish true, Persistent and Ephemeral", name, s, driver)
				}
			case "PersistentVolume":
				volumes = append(volumes, obj.Spec.CSI)
			case "Pod":
				for _, v := range obj.Spec.Volumes {
					if v.CSI != nil {
						volumes = append(volumes, v.CSI)
					}
				}
			case "DaemonSet":
				checkCSIDaemonSet(t, name, obj, help, driver)
			}
		}
	}
	for _, kind := range []string{"CSIDriver", "DaemonSet", "Secret", "PersistentVolume", "PersistentVolumeClaim", "Pod", "Kustomization"} {
		if kinds[kind] == 0 {
			t.Errorf("no %s in %s", kind, dir)
		}
	}
	if kinds["Pod"] < 2 || len(volumes) < 2 {
		t.Errorf("%d pods and %d CSI volumes; want a PersistentVolume's and an inline one", kinds["Pod"], len(volumes))
	}
	for _, v := range volumes {
		if v == nil || v.Driver != driver || !v.ReadOnly {
			t.Errorf("volume %+v: want driver %s, read-only", v, driver)
			continue
		}
		if v.VolumeAttributes["source"] == "" {
			t.Errorf("volume %+v has no source", v)
		}
		for a := range v.VolumeAttributes {
			if !attributes[a] {
				t.Errorf("volume attribute %q is not one of nczarrfs csi's (%s)", a, m[1])
			}
		}
		if v.SecretRef != nil {
			s, ok := secrets[v.SecretRef.Name]
			if !ok {
				t.Errorf("volume's secret %q is not in the manifests", v.SecretRef.Name)
			}
			for k := range s {
				if !regexp.MustCompile(`^(AWS|AZURE_STORAGE)_[A-Z0-9_]+$`).MatchString(k) {
					t.Errorf("secret %s: key %s is not a credential variable the plugin takes", v.SecretRef.Name, k)
				}
			}
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
	if n := strings.Count("\n"+out, "\nkind: "); code != 0 || n != 7 {
		t.Errorf("kubectl kustomize %s: exit %d, %d objects, want 7: %s%s", dir, code, n, out, stderr)
	}
}

// checkCSIDaemonSet checks the node plugin's DaemonSet (see
// TestKubernetesCSIManifests).
func checkCSIDaemonSet(t *testing.T, name string, obj csiManifest, help, driver string) {
	t.Helper()
	spec := obj.Spec.Template.Spec
	if !spec.ShareProcessNamespace {
		t.Errorf("%s: shareProcessNamespace is not set: the mount daemons, orphaned once started, would stay zombies after they exit", name)
	}
	hostPaths := map[string]string{}
	for _, v := range spec.Volumes {
		if v.HostPath != nil {
			hostPaths[v.Name] = v.HostPath.Path
		}
	}
	// hostFolder is the node's folder mounted at path in container c.
	hostFolder := func(c k8sContainer, path string) string {
		for _, vm := range c.VolumeMounts {
			if vm.MountPath == path {
				return hostPaths[vm.Name]
			}
		}
		return ""
	}
	var socket, registration string
	for _, c := range spec.Containers {
		switch {
		case strings.Contains(c.Image, "nczarrfs"):
			if len(c.Args) == 0 || c.Args[0] != "csi" {
				t.Fatalf("%s: container %s: args %q, want csi ...", name, c.Name, c.Args)
			}
			port := ""
			for _, a := range c.Args[1:] {
				flag, value, _ := strings.Cut(a, "=")
				if !strings.Contains(help, flag+" ") {
					t.Errorf("%s: nczarrfs csi has no flag %s", name, flag)
				}
				switch flag {
				case "--endpoint":
					p := strings.TrimPrefix(value, "unix://")
					if host := hostFolder(c, filepath.Dir(p)); host != "" {
						socket = filepath.Join(host, filepath.Base(p))
					}
				case "--metrics-addr":
					_, port, _ = strings.Cut(value, ":")
				}
			}
			ports := map[string]string{}
			for _, p := range c.Ports {
				ports[p.Name] = strconv.Itoa(p.ContainerPort)
			}
			if p := c.LivenessProbe; p == nil || p.HTTPGet.Path != "/healthz" || ports[p.HTTPGet.Port] != port || port == "" {
				t.Errorf("%s: liveness probe %+v, want GET /healthz on --metrics-addr's port %q", name, p, port)
			}
			if !c.SecurityContext.Privileged {
				t.Errorf("%s: the plugin's container is not privileged", name)
			}
			kubelet := false
			for _, vm := range c.VolumeMounts {
				kubelet = kubelet || vm.MountPath == "/var/lib/kubelet" && vm.MountPropagation == "Bidirectional" && hostPaths[vm.Name] == "/var/lib/kubelet"
			}
			if !kubelet {
				t.Errorf("%s: kubelet's folder is not mounted at /var/lib/kubelet with Bidirectional propagation", name)
			}
		case strings.Contains(c.Image, "csi-node-driver-registrar"):
			var address string
			for _, a := range c.Args {
				flag, value, _ := strings.Cut(a, "=")
				switch flag {
				case "--csi-address":
					if host := hostFolder(c, filepath.Dir(value)); host != "" {
						address = filepath.Join(host, filepath.Base(value))
					}
				case "--kubelet-registration-path":
					registration = value
				}
			}
			if address == "" || address != registration {
				t.Errorf("%s: the registrar reaches the socket at %q on the node, and tells kubelet %q", name, address, registration)
			}
			if c.LivenessProbe == nil {
				t.Errorf("%s: the registrar has no liveness probe", name)
			}
		}
	}
	if socket == "" || socket != registration || !strings.Contains(socket, driver) {
		t.Errorf("%s: the plugin's socket is %q on the node, kubelet is told %q", name, socket, registration)
	}
}
