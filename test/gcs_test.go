package test

// End-to-end tests of Google Cloud Storage sources (gs://, gs3://): MinIO
// on 127.0.0.1 stands in for Google's XML API (--endpoint-url replaces
// the host), with HMAC keys from a profile, anonymous requests to a public
// bucket, a bucket whose listing is refused, and a server that is not an
// object store at all.

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/nczarrfs/nczarrfs/internal/miniotest"
	"github.com/nczarrfs/nczarrfs/internal/stats"
)

// gcsEnv is s3Env with srv's keys only in a shared credentials file, as
// profile "hmac" (Google's HMAC keys are kept so): a gs:// mount signs
// only when --profile or awsprofile= names it.
func gcsEnv(t *testing.T, srv *miniotest.Server) {
	t.Helper()
	s3Env(t, srv)
	creds := filepath.Join(t.TempDir(), "credentials")
	body := fmt.Sprintf("[hmac]\naws_access_key_id = %s\naws_secret_access_key = %s\n", miniotest.User, miniotest.Password)
	if err := os.WriteFile(creds, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", creds)
	for _, k := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_REGION"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
}

// setPolicy sets bucket's policy to let anyone do actions.
func setPolicy(t *testing.T, srv *miniotest.Server, bucket string, actions ...string) {
	t.Helper()
	policy := fmt.Sprintf(`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"AWS":["*"]},"Action":["%s"],"Resource":["arn:aws:s3:::%s","arn:aws:s3:::%s/*"]}]}`,
		strings.Join(actions, `","`), bucket, bucket)
	if _, err := srv.Client(t).PutBucketPolicy(context.Background(), &awss3.PutBucketPolicyInput{Bucket: aws.String(bucket), Policy: aws.String(policy)}); err != nil {
		t.Fatal(err)
	}
}

// TestGCSMountFixtures uploads the fixture datasets of zarr-python and
// netcdf-c to MinIO and mounts each as Google Cloud Storage, through
// gs:// with HMAC keys from --profile, gs3:// with awsprofile=, and gs://
// anonymously from a public bucket: the same files and bytes as the tree.
func TestGCSMountFixtures(t *testing.T) {
	srv := miniotest.Start(t)
	gcsEnv(t, srv)
	srv.CreateBucket(t, "gcs")
	srv.CreateBucket(t, "public")
	setPolicy(t, srv, "public", "s3:GetObject", "s3:ListBucket")
	var sets []fixtureSet
	for _, set := range fixtures(t) {
		if set.Generator == "gen_zarr.py" || set.Generator == "gen_nczarr.py" {
			sets = append(sets, set)
		}
	}
	if len(sets) == 0 {
		t.Fatal("no zarr-python or netcdf-c fixtures")
	}
	for _, set := range sets {
		for _, ds := range set.Datasets {
			srv.PutTree(t, "gcs", "sets/"+ds.Name, ds.TreePath(set))
			srv.PutTree(t, "public", "sets/"+ds.Name, ds.TreePath(set))
		}
	}
	for _, set := range sets {
		for _, ds := range set.Datasets {
			mode := s3Mode(set)
			forms := []struct {
				name, source string
				args         []string
			}{
				{"gs-profile", "gs://gcs/sets/" + ds.Name + "#mode=" + mode, []string{"--endpoint-url", srv.Endpoint, "--profile", "hmac"}},
				{"gs3-awsprofile", "gs3://gcs/sets/" + ds.Name + "#mode=" + mode + "&awsprofile=hmac", []string{"--endpoint-url", srv.Endpoint}},
				{"gs-anonymous", "gs://public/sets/" + ds.Name, []string{"--endpoint-url", srv.Endpoint}},
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

// TestGCSMountBadInput: a private bucket read without keys and an
// endpoint that is a web server, not an object store, each end the mount
// with exit status 1 and a last line that says what is wrong (warnings
// logged before it name the denied requests). A public bucket that
// refuses listing mounts from its consolidated metadata: every array
// reads, and a listing fails with EACCES, not an empty folder.
func TestGCSMountBadInput(t *testing.T) {
	srv := miniotest.Start(t)
	gcsEnv(t, srv)
	set, ds := findDataset(t, "zarr-consolidated")
	for _, b := range []string{"private", "nolist"} {
		srv.CreateBucket(t, b)
		srv.PutTree(t, b, "ds", ds.TreePath(set))
	}
	setPolicy(t, srv, "nolist", "s3:GetObject")
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, "<html><body>Welcome</body></html>")
	}))
	t.Cleanup(web.Close)
	tests := []struct {
		name     string
		args     []string
		wantPart string
	}{
		{"private bucket, no keys", []string{"gs://private/ds", "--endpoint-url", srv.Endpoint}, "anonymous"},
		{"not an object store", []string{"gs://bucket/ds", "--endpoint-url", web.URL}, "gs://bucket/ds"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mnt := filepath.Join(t.TempDir(), "mnt")
			if err := os.Mkdir(mnt, 0o755); err != nil {
				t.Fatal(err)
			}
			args := append([]string{"mount", "--daemon", "--timeout", "5s"}, tt.args...)
			_, stderr, code := runBinary(t, nil, append(args, mnt)...)
			lines := strings.Split(strings.TrimSpace(stderr), "\n")
			last := lines[len(lines)-1]
			if code != 1 || !strings.HasPrefix(last, "nczarrfs: ") || !strings.Contains(last, tt.wantPart) {
				t.Errorf("mount: exit %d, stderr %q; want 1 and a last line saying %q", code, stderr, tt.wantPart)
			}
			if _, ok := mountedAt(mnt); ok {
				unmount(t, mnt)
				t.Error("it was mounted")
			}
		})
	}

	t.Run("listing refused", func(t *testing.T) {
		mnt := mount(t, "gs://nolist/ds", "--endpoint-url", srv.Endpoint, "--timeout", "5s")
		for _, a := range ds.Arrays {
			if a.Error || a.Expected == "" {
				continue
			}
			want, err := os.ReadFile(filepath.Join(set.Dir, a.Expected))
			if err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(filepath.Join(mnt, a.Path, "data"))
			if err != nil || !sameData(a, got, want) {
				t.Errorf("%s/data from a bucket that refuses listing: %d bytes, %v; want the reference's %d", a.Path, len(got), err, len(want))
			}
		}
		_, err := os.ReadDir(filepath.Join(mnt, ds.Arrays[0].Path))
		if !errors.Is(err, syscall.EACCES) {
			t.Errorf("listing a folder of a bucket that refuses listing: %v; want EACCES", err)
		}
	})
}

// TestGCSMountRequests mounts a zarr-python group of 20 arrays with
// .zmetadata from gs:// (MinIO in Google's place, HMAC keys) and counts
// the requests of each step, as for S3: the mount lists the dataset flat
// and reads the root's metadata; ls -l makes no request; cat of an
// array's data reads its one chunk.
func TestGCSMountRequests(t *testing.T) {
	srv := miniotest.Start(t)
	gcsEnv(t, srv)
	out := t.TempDir()
	if b, err := exec.Command(python, "-c", genGroupScript, out, "20", "1").CombinedOutput(); err != nil {
		t.Fatalf("writing the group: %v\n%s", err, b)
	}
	srv.CreateBucket(t, "counts")
	srv.PutTree(t, "counts", "ds", filepath.Join(out, "tree"))
	mnt := mount(t, "gs://counts/ds", "--endpoint-url", srv.Endpoint, "--profile", "hmac", "--metadata-ttl", "1h")
	base := readRequests(t, mnt)
	t.Logf("mount: %+v", base)
	if base.LIST == 0 || base.GET == 0 {
		t.Errorf("mount: %+v; want the flat listing and the root's metadata", base)
	}
	step := func(what string, run func() error) stats.Kinds {
		t.Helper()
		before := readRequests(t, mnt)
		if err := run(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		got := minus(readRequests(t, mnt), before)
		t.Logf("%s: %+v", what, got)
		return got
	}
	if got := step("ls -l /", func() error { return exec.Command("ls", "-l", mnt).Run() }); got.Total() != 0 {
		t.Errorf("ls -l of the root: %+v; want none (the flat listing answers)", got)
	}
	if got := step("ls -l v0002", func() error { return exec.Command("ls", "-l", filepath.Join(mnt, "v0002")).Run() }); got.Total() != 0 {
		t.Errorf("ls -l of an array: %+v; want none", got)
	}
	want, err := os.ReadFile(filepath.Join(out, "expected", "v0003.bin"))
	if err != nil {
		t.Fatal(err)
	}
	var data []byte
	if got := step("cat v0003/data", func() (err error) {
		data, err = os.ReadFile(filepath.Join(mnt, "v0003", "data"))
		return err
	}); got.GET+got.RangedGET != 1 || got.LIST+got.HEAD != 0 {
		t.Errorf("cat of an array's data: %+v; want its one chunk", got)
	}
	if string(data) != string(want) {
		t.Errorf("v0003/data = %x, want zarr's %x", data, want)
	}
}
