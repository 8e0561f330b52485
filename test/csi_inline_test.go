package test

// Tests of issue 33's inline CSI volumes: an inline volume gets only what
// its pod may have, never the node's paths, disk or credentials, while
// PersistentVolumes keep every attribute; and a republish with rotated
// secrets applies them.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/nczarrfs/nczarrfs/internal/miniotest"
)

// privilegedPluginEnv is the environment of a plugin that holds valid
// credentials of srv in every place the AWS SDK looks: its environment
// and ~/.aws (HOME is home). The machine's own AWS settings are dropped.
func privilegedPluginEnv(t *testing.T, home string) []string {
	t.Helper()
	aws := filepath.Join(home, ".aws")
	if err := os.MkdirAll(aws, 0o700); err != nil {
		t.Fatal(err)
	}
	creds := fmt.Sprintf("[default]\naws_access_key_id = %s\naws_secret_access_key = %s\n", miniotest.User, miniotest.Password)
	if err := os.WriteFile(filepath.Join(aws, "credentials"), []byte(creds), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(aws, "config"), []byte("[default]\nregion = "+miniotest.Region+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AWS_") && !strings.HasPrefix(kv, "HOME=") {
			env = append(env, kv)
		}
	}
	return append(env, "HOME="+home)
}

// inlineAttrs marks attrs as kubelet marks an inline volume's.
func inlineAttrs(attrs map[string]string) map[string]string {
	out := map[string]string{"csi.storage.k8s.io/ephemeral": "true", "csi.storage.k8s.io/pod.name": "pod"}
	for k, v := range attrs {
		out[k] = v
	}
	return out
}

// daemonEnviron reads the environment of the daemon serving target.
func daemonEnviron(t *testing.T, target string) map[string]string {
	t.Helper()
	pids := daemonPIDs(target)
	if len(pids) != 1 {
		t.Fatalf("%d processes serve %s, want 1", len(pids), target)
	}
	return environOf(t, pids[0])
}

// environOf reads the environment of the process pid.
func environOf(t *testing.T, pid int) map[string]string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "environ"))
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	for _, kv := range strings.Split(string(raw), "\x00") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	return env
}

// TestCSIInlineVolumes publishes inline volumes through a plugin that
// holds valid MinIO credentials in its environment and in ~/.aws: a node
// path, a file:// URL, cacheDir, cacheDirSize and a secret naming the
// node's credentials file are refused with PermissionDenied naming
// --trust-inline-volumes; a private bucket without secrets fails (the
// daemon is anonymous), and so does one with secrets that hold no key
// (the daemon must not fall back on the plugin's ~/.aws); each leaves
// nothing mounted and no record. A
// public bucket mounts (its daemon has none of the plugin's credentials),
// the private bucket with the volume's own secrets mounts, and
// PersistentVolumes of a zip file and of the private bucket without
// secrets (the plugin's credentials) publish. A plugin started with
// --trust-inline-volumes publishes the node path inline.
func TestCSIInlineVolumes(t *testing.T) {
	set, ds := basicDataset(t)
	zip := ds.ZipPath(set)
	srv := miniotest.Start(t)
	srv.CreateBucket(t, "private")
	srv.CreateBucket(t, "public")
	srv.PutTree(t, "private", ds.Name, ds.TreePath(set))
	srv.PutTree(t, "public", ds.Name, ds.TreePath(set))
	setPolicy(t, srv, "public", "s3:GetObject", "s3:ListBucket")
	privateSrc := srv.Endpoint + "/private/" + ds.Name + "#mode=" + s3Mode(set)
	publicSrc := srv.Endpoint + "/public/" + ds.Name + "#mode=" + s3Mode(set)

	dir := csiDir(t)
	env := privilegedPluginEnv(t, filepath.Join(dir, "home"))
	// The plugin's ~/.aws alone reads the private bucket.
	if out, stderr, code := runBinary(t, env, "ls", privateSrc); code != 0 || out == "" {
		t.Fatalf("nczarrfs ls with the plugin's ~/.aws only: exit %d: %s%s", code, out, stderr)
	}
	env = append(env, "AWS_ACCESS_KEY_ID="+miniotest.User, "AWS_SECRET_ACCESS_KEY="+miniotest.Password, "AWS_REGION="+miniotest.Region)
	state := filepath.Join(dir, "state")
	p := startCSI(t, filepath.Join(dir, "csi.sock"), state, env)
	_, node := p.client(t)
	ctx := context.Background()
	pods := t.TempDir()
	reader := csi.VolumeCapability_AccessMode_SINGLE_NODE_READER_ONLY
	n := 0
	newTarget := func() string {
		n++
		target := filepath.Join(pods, fmt.Sprintf("pod-%d", n), "volumes", "kubernetes.io~csi", "data", "mount")
		cleanupDetached(t, target)
		return target
	}

	cacheDir := filepath.Join(dir, "user-folder")
	if err := os.MkdirAll(cacheDir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name    string
		attrs   map[string]string
		secrets map[string]string
		code    codes.Code
		message string
	}{
		{"node path", map[string]string{"source": zip}, nil, codes.PermissionDenied, "is a path of the node"},
		{"file URL", map[string]string{"source": "file://" + ds.TreePath(set) + "#mode=" + strings.Replace(s3Mode(set), "s3", "file", 1)}, nil, codes.PermissionDenied, "is a path of the node"},
		{"cacheDir", map[string]string{"source": publicSrc, "cacheDir": cacheDir}, nil, codes.PermissionDenied, "attribute cacheDir"},
		{"cacheDirSize", map[string]string{"source": publicSrc, "cacheDirSize": "1MiB"}, nil, codes.PermissionDenied, "attribute cacheDirSize"},
		{"profile option", map[string]string{"source": privateSrc, "mountOptions": "profile=default"}, nil, codes.PermissionDenied, "mount option profile"},
		{"credentials file secret", map[string]string{"source": privateSrc},
			map[string]string{"AWS_SHARED_CREDENTIALS_FILE": filepath.Join(dir, "home", ".aws", "credentials")}, codes.PermissionDenied, "secret key AWS_SHARED_CREDENTIALS_FILE"},
		// The daemon is anonymous: the bucket refuses it, whatever the
		// plugin holds.
		{"private bucket without secrets", map[string]string{"source": privateSrc}, nil, codes.Internal, ds.Name},
		// Secrets without keys: the daemon signs, with no key in its
		// environment, and must not find the plugin's ~/.aws.
		{"private bucket with secrets but no keys", map[string]string{"source": privateSrc}, map[string]string{"AWS_REGION": miniotest.Region}, codes.Internal, "no usable AWS credentials"},
	} {
		t.Run(c.name, func(t *testing.T) {
			target := newTarget()
			_, err := node.NodePublishVolume(ctx, publishReq("data", target, reader, inlineAttrs(c.attrs), c.secrets))
			st := status.Convert(err)
			if st.Code() != c.code || !strings.Contains(st.Message(), c.message) {
				t.Errorf("%v %q, want %v with %q", st.Code(), st.Message(), c.code, c.message)
			}
			if c.code == codes.PermissionDenied && !strings.Contains(st.Message(), "--trust-inline-volumes") {
				t.Errorf("the refusal %q does not name --trust-inline-volumes", st.Message())
			}
			t.Logf("refused: %s", st.Message())
			if fstype, ok := mountedAt(target); ok {
				t.Errorf("a refused inline volume left a %s mount at its target", fstype)
			}
			if left, _ := os.ReadDir(filepath.Join(state, "volumes")); len(left) != 0 {
				t.Errorf("a refused inline volume left records: %v", left)
			}
		})
	}
	if entries, err := os.ReadDir(cacheDir); err != nil || len(entries) != 0 {
		t.Errorf("the folder an inline volume named as its cache: %d entries, %v; want it untouched", len(entries), err)
	}

	publish := func(req *csi.NodePublishVolumeRequest) {
		t.Helper()
		if _, err := node.NodePublishVolume(ctx, req); err != nil {
			t.Fatalf("NodePublishVolume %s: %v\n%s", req.TargetPath, err, p.output.String())
		}
	}
	// A public bucket, inline: anonymous, with none of the plugin's
	// credentials.
	publicTarget := newTarget()
	publish(publishReq("data", publicTarget, reader, inlineAttrs(map[string]string{"source": publicSrc}), nil))
	checkVolume(t, publicTarget, set, ds)
	denv := daemonEnviron(t, publicTarget)
	for k, v := range denv {
		if strings.HasPrefix(k, "AWS_") && k != "AWS_CONFIG_FILE" && k != "AWS_SHARED_CREDENTIALS_FILE" && k != "AWS_EC2_METADATA_DISABLED" {
			t.Errorf("the public inline volume's daemon has %s=%s", k, v)
		}
	}
	if denv["AWS_CONFIG_FILE"] != "/dev/null" || denv["AWS_SHARED_CREDENTIALS_FILE"] != "/dev/null" || denv["AWS_EC2_METADATA_DISABLED"] != "true" {
		t.Errorf("the inline volume's daemon reads the node's AWS files or metadata service: AWS_CONFIG_FILE=%q AWS_SHARED_CREDENTIALS_FILE=%q AWS_EC2_METADATA_DISABLED=%q",
			denv["AWS_CONFIG_FILE"], denv["AWS_SHARED_CREDENTIALS_FILE"], denv["AWS_EC2_METADATA_DISABLED"])
	}

	// The private bucket with the volume's own secrets, inline.
	secretTarget := newTarget()
	publish(publishReq("data", secretTarget, reader, inlineAttrs(map[string]string{"source": privateSrc, "region": miniotest.Region}),
		map[string]string{"AWS_ACCESS_KEY_ID": miniotest.User, "AWS_SECRET_ACCESS_KEY": miniotest.Password}))
	checkVolume(t, secretTarget, set, ds)

	// PersistentVolumes keep every attribute: a zip file of the node,
	// and the private bucket with the plugin's credentials.
	zipTarget := newTarget()
	publish(publishReq("zip", zipTarget, reader, map[string]string{"source": zip}, nil))
	checkVolume(t, zipTarget, set, ds)
	privateTarget := newTarget()
	publish(publishReq("private", privateTarget, reader, map[string]string{"source": privateSrc}, nil))
	checkVolume(t, privateTarget, set, ds)

	// A plugin that trusts every pod author: the node path, inline.
	p.kill(t)
	p = startCSI(t, filepath.Join(dir, "csi.sock"), state, env, "--trust-inline-volumes")
	_, node = p.client(t)
	trusted := newTarget()
	publish(publishReq("data", trusted, reader, inlineAttrs(map[string]string{"source": zip}), nil))
	checkVolume(t, trusted, set, ds)

	published := [][2]string{{"data", publicTarget}, {"data", secretTarget}, {"zip", zipTarget}, {"private", privateTarget}, {"data", trusted}}
	for _, v := range published {
		if _, err := node.NodeUnpublishVolume(ctx, &csi.NodeUnpublishVolumeRequest{VolumeId: v[0], TargetPath: v[1]}); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Lstat(v[1]); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s after NodeUnpublishVolume: %v, want it gone", v[1], err)
		}
	}
	for _, v := range published {
		waitDetachedExit(t, v[1])
	}
	if left, _ := os.ReadDir(filepath.Join(state, "volumes")); len(left) != 0 {
		t.Errorf("records left after unpublishing: %v", left)
	}
}

// temporaryKeys asks srv's STS for temporary credentials of its root
// user: an access key, a secret and a session token, as a rotating
// Secret holds them.
func temporaryKeys(t *testing.T, srv *miniotest.Server) map[string]string {
	t.Helper()
	client := sts.New(sts.Options{
		Region:       miniotest.Region,
		BaseEndpoint: aws.String(srv.Endpoint),
		Credentials:  credentials.NewStaticCredentialsProvider(miniotest.User, miniotest.Password, ""),
	})
	out, err := client.AssumeRole(context.Background(), &sts.AssumeRoleInput{
		RoleArn:         aws.String("arn:xxx:xxx:xxx:xxxx"),
		RoleSessionName: aws.String("csi"),
		DurationSeconds: aws.Int32(3600),
	})
	if err != nil {
		t.Fatalf("STS AssumeRole: %v", err)
	}
	c := out.Credentials
	return map[string]string{"AWS_ACCESS_KEY_ID": *c.AccessKeyId, "AWS_SECRET_ACCESS_KEY": *c.SecretAccessKey, "AWS_SESSION_TOKEN": *c.SessionToken}
}

// TestCSISecretRotation republishes an inline volume of a private bucket
// as kubelet does when its Secret rotates (temporary keys from MinIO's
// STS): the same secrets change nothing; secrets the bucket refuses fail
// the republish and leave the running mount serving; new valid secrets
// are mounted beside it and then take its place (a daemon with the new
// keys serves the target; a file opened before still reads, from the old
// daemon, which exits once it is closed). The record keeps a salted
// digest of the secrets, never their values.
func TestCSISecretRotation(t *testing.T) {
	set, ds := basicDataset(t)
	srv := miniotest.Start(t)
	srv.CreateBucket(t, "private")
	srv.PutTree(t, "private", ds.Name, ds.TreePath(set))
	src := srv.Endpoint + "/private/" + ds.Name + "#mode=" + s3Mode(set)
	first, second := temporaryKeys(t, srv), temporaryKeys(t, srv)

	dir := csiDir(t)
	state := filepath.Join(dir, "state")
	p := startCSI(t, filepath.Join(dir, "csi.sock"), state, pluginEnv())
	_, node := p.client(t)
	ctx := context.Background()
	target := filepath.Join(t.TempDir(), "pod", "volumes", "kubernetes.io~csi", "data", "mount")
	cleanupDetached(t, target)
	attrs := inlineAttrs(map[string]string{"source": src, "region": miniotest.Region})
	req := func(secrets map[string]string) *csi.NodePublishVolumeRequest {
		return publishReq("data", target, csi.VolumeCapability_AccessMode_SINGLE_NODE_READER_ONLY, attrs, secrets)
	}
	publish := func(secrets map[string]string) {
		t.Helper()
		if _, err := node.NodePublishVolume(ctx, req(secrets)); err != nil {
			t.Fatalf("NodePublishVolume: %v\n%s", err, p.output.String())
		}
	}
	header := filepath.Join(target, "header.cdl")
	publish(first)
	want, err := os.ReadFile(header)
	if err != nil || len(want) == 0 {
		t.Fatalf("reading the volume: %d bytes, %v", len(want), err)
	}
	// serving is the daemon serving the target, found by the metrics
	// socket its record names (a rotation's daemon was started on
	// another mountpoint, so its command line does not name the target),
	// and its access key.
	serving := func() (int, string) {
		t.Helper()
		recs, _ := filepath.Glob(filepath.Join(state, "volumes", "*", "volume.json"))
		if len(recs) != 1 {
			t.Fatalf("records %v, want 1", recs)
		}
		var rec struct {
			Socket string `json:"socket"`
		}
		if b, err := os.ReadFile(recs[0]); err != nil || json.Unmarshal(b, &rec) != nil {
			t.Fatalf("reading %s: %v", recs[0], err)
		}
		if rec.Socket == "" {
			rec.Socket = "metrics.sock"
		}
		sock := "unix:" + filepath.Join(filepath.Dir(recs[0]), rec.Socket)
		pids := daemonPIDs(sock)
		if len(pids) != 1 {
			t.Fatalf("%d daemons serve their metrics on %s, want 1", len(pids), sock)
		}
		return pids[0], environOf(t, pids[0])["AWS_ACCESS_KEY_ID"]
	}
	// dev is the device of the mount at the target: each mount has its own.
	dev := func() uint64 {
		t.Helper()
		var st syscall.Stat_t
		if err := syscall.Stat(target, &st); err != nil {
			t.Fatal(err)
		}
		return st.Dev
	}
	pid, key := serving()
	firstDev := dev()
	if key != first["AWS_ACCESS_KEY_ID"] {
		t.Fatalf("the daemon's access key is %q, want the first secret's", key)
	}

	publish(first) // kubelet's periodic republish, nothing rotated
	if again, _ := serving(); again != pid {
		t.Errorf("a republish with the same secrets replaced the daemon (%d, then %d)", pid, again)
	}

	// Secrets the bucket refuses: the republish fails, the mount stays.
	bad := map[string]string{"AWS_ACCESS_KEY_ID": second["AWS_ACCESS_KEY_ID"], "AWS_SECRET_ACCESS_KEY": "not-the-secret-" + strconv.Itoa(os.Getpid()), "AWS_SESSION_TOKEN": second["AWS_SESSION_TOKEN"]}
	_, err = node.NodePublishVolume(ctx, req(bad))
	if st := status.Convert(err); st.Code() != codes.Internal || strings.Contains(st.Message(), bad["AWS_SECRET_ACCESS_KEY"]) {
		t.Errorf("republishing with refused secrets: %v %q; want Internal, without the secret", st.Code(), st.Message())
	} else {
		t.Logf("refused secrets: %s", st.Message())
	}
	if again, key := serving(); again != pid || key != first["AWS_ACCESS_KEY_ID"] {
		t.Errorf("after refused secrets, daemon %d with key %q serves; want %d with the first", again, key, pid)
	}
	if got, err := os.ReadFile(header); err != nil || string(got) != string(want) {
		t.Errorf("reading the volume after refused secrets: %d bytes, %v", len(got), err)
	}

	// Rotated secrets: a new daemon with them, the old one gone once the
	// file a container holds open is closed.
	open, err := os.Open(header)
	if err != nil {
		t.Fatal(err)
	}
	defer open.Close()
	publish(second)
	newPID, key := serving()
	if newPID == pid || key != second["AWS_ACCESS_KEY_ID"] {
		t.Errorf("after the rotation, daemon %d with key %q serves; want a new one (not %d) with the second", newPID, key, pid)
	}
	if fstype, _ := mountedAt(target); fstype != "fuse.nczarrfs" || dev() == firstDev {
		t.Errorf("after the rotation the target is mounted as %q, device %d (%d before); want a new nczarrfs mount", fstype, dev(), firstDev)
	}
	if got, err := os.ReadFile(header); err != nil || string(got) != string(want) {
		t.Errorf("reading the volume after the rotation: %d bytes, %v", len(got), err)
	}
	checkVolume(t, target, set, ds)
	got := make([]byte, len(want)+1)
	if n, err := open.ReadAt(got, 0); n != len(want) || string(got[:n]) != string(want) {
		t.Errorf("a file opened before the rotation: %d bytes, %v", n, err)
	}
	open.Close()
	waitFor(t, "exit of the daemon with the old secrets", func() bool {
		return processGone(pid)
	})
	trials, _ := filepath.Glob(filepath.Join(state, "volumes", "*", "next"))
	for _, d := range trials {
		if _, ok := mountedAt(d); ok {
			t.Errorf("the rotation left a mount at %s", d)
		}
	}
	publish(second) // and again: nothing to do
	if again, _ := serving(); again != newPID {
		t.Errorf("a republish after the rotation replaced the daemon")
	}

	recs, _ := filepath.Glob(filepath.Join(state, "volumes", "*", "volume.json"))
	if len(recs) != 1 {
		t.Fatalf("records %v, want 1", recs)
	}
	rec, err := os.ReadFile(recs[0])
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(rec), `"secrets_sha256"`) {
		t.Errorf("the record keeps no digest of the secrets:\n%s", rec)
	}
	for _, secrets := range []map[string]string{first, second, bad} {
		for _, v := range secrets {
			if strings.Contains(string(rec), v) || strings.Contains(p.output.String(), v) {
				t.Errorf("a secret's value is in the record or the plugin's log")
			}
		}
	}
	if _, err := node.NodeUnpublishVolume(ctx, &csi.NodeUnpublishVolumeRequest{VolumeId: "data", TargetPath: target}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "exit of the daemon with the new secrets", func() bool {
		return processGone(newPID)
	})
	if _, err := os.Lstat(target); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("%s after NodeUnpublishVolume: %v, want it gone", target, err)
	}
	if left, _ := os.ReadDir(filepath.Join(state, "volumes")); len(left) != 0 {
		t.Errorf("records left after unpublishing: %v", left)
	}
}

// processGone reports whether pid has exited (a zombie has no command
// line).
func processGone(pid int) bool {
	raw, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
	return err != nil || len(raw) == 0
}

// checkVolume reads, in the volume at mnt, the data of ds's first
// readable array (equal to what zarr-python read when it made the
// fixture) and header.cdl: the volume reads its store, metadata and
// chunks alike.
func checkVolume(t *testing.T, mnt string, set fixtureSet, ds dataset) {
	t.Helper()
	a := someArray(t, ds)
	want, err := os.ReadFile(filepath.Join(set.Dir, a.Expected))
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(mnt, a.Path, "data"))
	if err != nil || !bytes.Equal(got, want) {
		t.Errorf("%s/%s/data: %d bytes, %v; want the %d zarr-python read", mnt, a.Path, len(got), err, len(want))
	}
	cdl, err := os.ReadFile(filepath.Join(mnt, "header.cdl"))
	if err != nil || !bytes.HasPrefix(cdl, []byte("netcdf ")) || !bytes.HasSuffix(cdl, []byte("}\n")) {
		t.Errorf("%s/header.cdl: %v, not ncdump -h's form:\n%s", mnt, err, cdl)
	}
}
