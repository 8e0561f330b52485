package test

// End-to-end tests of S3 sources: datasets uploaded to a real MinIO server
// on 127.0.0.1 (internal/miniotest) and mounted through the URL forms that
// reach it: http(s)://127.0.0.1:PORT/bucket/key#mode=...,s3 (a custom
// endpoint, path style) and s3://bucket/key with --endpoint-url. The AWS
// virtual-host and path-style forms name amazonaws.com hosts, which a test
// cannot reach; zmap/s3's ParseURL tests cover them.
//
// The daemon inherits this process's environment, so each test points the
// AWS SDK's default chain at its server with t.Setenv.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/nczarrfs/nczarrfs/internal/miniotest"
)

// s3Env points the AWS SDK in this process and in the daemons it starts at
// srv: its credentials in the environment, no shared config files or
// profile from the machine, no endpoint override, and no EC2 metadata
// probe. AWS_CA_BUNDLE is the server's CA for a TLS server, and otherwise
// left as the machine has it (set, on the project's machines: the daemon
// must work with it).
func s3Env(t *testing.T, srv *miniotest.Server) {
	t.Helper()
	empty := filepath.Join(t.TempDir(), "empty-aws-config")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AWS_CONFIG_FILE", empty)
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", empty)
	for _, k := range []string{"AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3"} {
		t.Setenv(k, "")
		os.Unsetenv(k) // t.Setenv restores the old value at the end
	}
	for _, kv := range srv.Env() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
}

// s3Mode is the fragment mode for a fixture set's datasets.
func s3Mode(set fixtureSet) string {
	if strings.Contains(set.Generator, "nczarr") {
		return "nczarr,s3"
	}
	return "zarr,s3"
}

// TestS3MountFixtures uploads every fixture dataset to MinIO and mounts
// each through both locally reachable URL forms; every array's data must
// equal the reference tools' values.
func TestS3MountFixtures(t *testing.T) {
	srv := miniotest.Start(t)
	s3Env(t, srv)
	srv.CreateBucket(t, "fixtures")
	sets := fixtures(t)
	start := time.Now()
	n := 0
	for _, set := range sets {
		for _, ds := range set.Datasets {
			srv.PutTree(t, "fixtures", "sets/"+ds.Name, ds.TreePath(set))
			n++
		}
	}
	t.Logf("uploaded %d datasets in %v", n, time.Since(start))
	for _, set := range sets {
		for _, ds := range set.Datasets {
			forms := []struct {
				name, source string
				args         []string
			}{
				{"endpoint-url-form", srv.Endpoint + "/fixtures/sets/" + ds.Name + "#mode=" + s3Mode(set), nil},
				{"s3-scheme", "s3://fixtures/sets/" + ds.Name, []string{"--endpoint-url", srv.Endpoint}},
			}
			for _, f := range forms {
				t.Run(ds.Name+"/"+f.name, func(t *testing.T) {
					t.Parallel()
					mnt := mount(t, f.source, f.args...)
					checkDataset(t, mnt, set, ds)
				})
			}
		}
	}
}

// TestS3MountHTTPS mounts over https from a server whose certificate only
// the CA in AWS_CA_BUNDLE vouches for; without it the mount fails and says
// why.
func TestS3MountHTTPS(t *testing.T) {
	srv := miniotest.StartTLS(t)
	s3Env(t, srv) // AWS_CA_BUNDLE is the server's CA
	srv.CreateBucket(t, "tls")
	set, ds := basicDataset(t)
	srv.PutTree(t, "tls", ds.Name, ds.TreePath(set))
	source := srv.Endpoint + "/tls/" + ds.Name + "#mode=" + s3Mode(set)

	mnt := mount(t, source)
	checkDataset(t, mnt, set, ds)

	os.Unsetenv("AWS_CA_BUNDLE")
	out, err := mountFails(t, source)
	if err == nil || !strings.Contains(out, "certificate is not trusted") {
		t.Errorf("mount without the CA bundle: %v, output:\n%s\nwant a failure naming the certificate", err, out)
	}
}

// basicDataset returns one plain fixture dataset: the first whose name
// says "basic", for a test about transport rather than content.
func basicDataset(t *testing.T) (fixtureSet, dataset) {
	t.Helper()
	for _, set := range fixtures(t) {
		for _, ds := range set.Datasets {
			if strings.Contains(ds.Name, "basic") {
				return set, ds
			}
		}
	}
	t.Fatal("no fixture dataset named *basic*")
	return fixtureSet{}, dataset{}
}

// genArrayScript writes, with zarr-python, a one-dimensional array "v" in
// a zarr DirectoryStore and the expected content of its data file read
// back by zarr. Every DROP-th chunk object is then removed, so those
// chunks read as the fill value.
//
//	genArrayScript OUTDIR N CHUNK DTYPE DROP
const genArrayScript = `
import os, sys
import numpy as np, zarr
out, n, chunk, dtype, drop = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], int(sys.argv[5])
tree = os.path.join(out, "tree")
g = zarr.open_group(zarr.DirectoryStore(tree), mode="w")
v = g.create_dataset("v", shape=(n,), chunks=(chunk,), dtype=dtype, fill_value=-7, compressor=None)
v[:] = (np.arange(n) * 3 + 1).astype(dtype)
nchunks = (n + chunk - 1) // chunk
for i in range(0, nchunks, drop):
    os.remove(os.path.join(tree, "v", str(i)))
got = zarr.open_group(zarr.DirectoryStore(tree), mode="r")["v"][:]
os.makedirs(os.path.join(out, "expected"))
with open(os.path.join(out, "expected", "v.bin"), "wb") as f:
    f.write(got.astype(np.dtype(dtype).newbyteorder("<")).tobytes())
`

// genArray runs genArrayScript and describes its output as a fixture.
func genArray(t *testing.T, n, chunk int, dtype string, drop int) (fixtureSet, dataset) {
	t.Helper()
	out := t.TempDir()
	cmd := exec.Command(python, "-c", genArrayScript, out,
		fmt.Sprint(n), fmt.Sprint(chunk), dtype, fmt.Sprint(drop))
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("generating the array with zarr-python: %v\n%s", err, msg)
	}
	item := int64(4)
	if strings.HasSuffix(dtype, "8") {
		item = 8
	}
	set := fixtureSet{Dir: out, Generator: "s3_test.go"}
	ds := dataset{Name: fmt.Sprintf("array-%d-%d", n, chunk), Tree: "tree", Arrays: []array{{
		Path: "v", Dtype: dtype, Shape: []int64{int64(n)}, Itemsize: item, Expected: "expected/v.bin",
	}}}
	set.Datasets = []dataset{ds}
	return set, ds
}

// mountFails runs "nczarrfs mount" expecting it to fail before mounting,
// and returns its output. It fails t if the daemon mounts or is still
// running after mountWait.
func mountFails(t *testing.T, source string, args ...string) (string, error) {
	t.Helper()
	mnt := filepath.Join(t.TempDir(), "mnt")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), mountWait)
	defer cancel()
	cmd := exec.CommandContext(ctx, nczarrfsBinary(t), append(append([]string{"mount"}, args...), source, mnt)...)
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Errorf("nczarrfs mount %s did not exit within %v", source, mountWait)
	}
	if _, ok := mountedAt(mnt); ok {
		t.Errorf("nczarrfs mount %s mounted; want a failure", source)
		_ = exec.Command("fusermount3", "-u", "-z", mnt).Run()
	}
	return string(out), err
}

// TestS3MountManyChunks mounts an array of 2,100 one-element chunks (more
// than two ListObjectsV2 pages) with some chunks missing, then checks what
// access errors look like through the mount.
func TestS3MountManyChunks(t *testing.T) {
	srv := miniotest.Start(t)
	s3Env(t, srv)
	set, ds := genArray(t, 2100, 1, "<i4", 10)
	srv.CreateBucket(t, "data")
	start := time.Now()
	srv.PutTree(t, "data", "big", ds.TreePath(set))
	t.Logf("uploaded the 2,100-chunk array in %v", time.Since(start))
	source := srv.Endpoint + "/data/big#mode=zarr,s3"

	t.Run("lists and reads completely", func(t *testing.T) {
		start := time.Now()
		mnt := mount(t, source)
		t.Logf("mounted in %v", time.Since(start))
		start = time.Now()
		entries, err := os.ReadDir(filepath.Join(mnt, "v"))
		if err != nil {
			t.Fatal(err)
		}
		// 2,100 chunks less the 210 removed, .zarray, .zattrs and data.
		t.Logf("listed %d entries of v in %v", len(entries), time.Since(start))
		checkDataset(t, mnt, set, ds)
	})

	t.Run("wrong secret fails the mount", func(t *testing.T) {
		const bad = "wrong-secret-5e1d"
		t.Setenv("AWS_SECRET_ACCESS_KEY", bad)
		out, err := mountFails(t, source)
		if err == nil || !strings.Contains(out, "access denied") || !strings.Contains(out, "environment") {
			t.Errorf("mount with a wrong secret: %v, output:\n%s\nwant a failure saying access denied, credentials from the environment", err, out)
		}
		if strings.Contains(out, bad) {
			t.Errorf("the daemon's output contains the secret:\n%s", out)
		}
	})

	t.Run("denied chunk is EACCES", func(t *testing.T) {
		// Anyone may list and read the bucket, except one chunk.
		policy := `{"Version": "2012-10-17", "Statement": [
			{"Effect": "Allow", "Principal": {"AWS": ["*"]}, "Action": ["s3:ListBucket", "s3:GetBucketLocation"], "Resource": ["arn:aws:s3:::data"]},
			{"Effect": "Allow", "Principal": {"AWS": ["*"]}, "Action": ["s3:GetObject"], "Resource": ["arn:aws:s3:::data/*"]},
			{"Effect": "Deny", "Principal": {"AWS": ["*"]}, "Action": ["s3:GetObject"], "Resource": ["arn:aws:s3:::data/big/v/5"]}]}`
		_, err := srv.Client(t).PutBucketPolicy(context.Background(), &awss3.PutBucketPolicyInput{
			Bucket: aws.String("data"), Policy: aws.String(policy),
		})
		if err != nil {
			t.Fatal(err)
		}
		d := startDaemon(t, "s3://data/big#mode=zarr", "--endpoint-url", srv.Endpoint, "--no-sign-request")
		want, err := os.ReadFile(filepath.Join(set.Dir, "expected", "v.bin"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := os.ReadFile(filepath.Join(d.mnt, "v", "5")); !errors.Is(err, syscall.EACCES) {
			t.Errorf("reading the denied chunk object: %v, want EACCES", err)
		}
		f, err := os.Open(filepath.Join(d.mnt, "v", "data"))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		// Element 5 lives in the denied chunk: reading it must fail, never
		// return the fill value.
		buf := make([]byte, 4)
		if _, err := f.ReadAt(buf, 5*4); !errors.Is(err, syscall.EACCES) {
			t.Errorf("reading data across the denied chunk: %v, want EACCES", err)
		}
		if got, err := os.ReadFile(filepath.Join(d.mnt, "v", "6")); err != nil || string(got) != string(want[6*4:7*4]) {
			t.Errorf("reading an allowed chunk object = %x, %v; want %x", got, err, want[6*4:7*4])
		}
		if d.exited() {
			t.Fatal("the daemon exited")
		}
		if out := d.output.String(); !strings.Contains(out, "big/v/5") || !strings.Contains(out, "anonymous") {
			t.Errorf("the daemon's log does not name the denied key and the credentials:\n%s", out)
		}
	})
}

// TestS3MountOutage freezes (SIGSTOP) and stops the server under a mount:
// reads fail with EIO in bounded time (the S3 timeout), the daemon stays
// up, and reads work again once the server is back, without remounting.
func TestS3MountOutage(t *testing.T) {
	srv := miniotest.Start(t)
	s3Env(t, srv)
	// A short S3 timeout keeps the frozen-server read brief.
	t.Setenv("NCZARRFS_S3_TIMEOUT", "3s")
	// Ten chunks of 80 KiB, so that kernel readahead around one chunk
	// does not reach the others.
	set, ds := genArray(t, 100_000, 10_000, "<f8", 1000)
	srv.CreateBucket(t, "outage")
	srv.PutTree(t, "outage", "ds", ds.TreePath(set))
	want, err := os.ReadFile(filepath.Join(set.Dir, "expected", "v.bin"))
	if err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, srv.Endpoint+"/outage/ds#mode=zarr,s3")
	f, err := os.Open(filepath.Join(d.mnt, "v", "data"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	const chunkBytes = 10_000 * 8
	readChunk := func(i int) error {
		t.Helper()
		off := int64(i*chunkBytes + 16)
		buf := make([]byte, 64)
		n, err := f.ReadAt(buf, off)
		if err != nil {
			return err
		}
		if string(buf[:n]) != string(want[off:off+64]) {
			t.Errorf("chunk %d: read %x, want %x", i, buf[:n], want[off:off+64])
		}
		return nil
	}
	if err := readChunk(0); err != nil {
		t.Fatalf("read before the outage: %v", err)
	}

	cases := []struct {
		name     string
		down, up func()
		chunk    int
	}{
		{"frozen", func() { srv.Pause(t) }, func() { srv.Resume(t) }, 4},
		{"stopped", srv.Stop, func() { srv.Start(t) }, 8},
	}
	for _, c := range cases {
		c.down()
		start := time.Now()
		err := readChunk(c.chunk)
		t.Logf("%s server: read failed after %v: %v", c.name, time.Since(start), err)
		if !errors.Is(err, syscall.EIO) {
			t.Errorf("%s server: read gave %v, want EIO", c.name, err)
		}
		if d.exited() {
			t.Fatalf("the daemon exited after the %s server failed a read:\n%s", c.name, d.output)
		}
		c.up()
		if err := readChunk(c.chunk); err != nil {
			t.Errorf("read after the %s server came back: %v", c.name, err)
		}
	}
}
