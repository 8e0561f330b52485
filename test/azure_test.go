package test

// End-to-end tests of Azure Blob Storage sources: datasets uploaded to a
// real Azurite (internal/azuritetest) on 127.0.0.1 and mounted through the
// URL forms that reach it with --endpoint-url: az://CONTAINER/PATH and
// abfs://CONTAINER/PATH. The https://ACCOUNT.blob.core.windows.net form
// names Azure's hosts, which a test cannot reach; zmap/azure's ParseURL
// tests cover it.
//
// The daemon inherits this process's environment, so each test gives it
// the account's key with t.Setenv.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/nczarrfs/nczarrfs/internal/azuritetest"
	"github.com/nczarrfs/nczarrfs/internal/faultproxy"
	"github.com/nczarrfs/nczarrfs/internal/stats"
)

// azureEnv gives this process and the daemons it starts the account name
// and key of srv, and no other Azure credentials or S3 endpoint from the
// machine.
func azureEnv(t *testing.T, srv *azuritetest.Server) {
	t.Helper()
	for _, k := range []string{"AZURE_STORAGE_CONNECTION_STRING", "AZURE_STORAGE_SAS_TOKEN", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3"} {
		t.Setenv(k, "")
		os.Unsetenv(k) // t.Setenv restores the old value at the end
	}
	for _, kv := range srv.Env() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
}

// azureMode is the fragment mode for a fixture set's datasets.
func azureMode(set fixtureSet) string {
	if strings.Contains(set.Generator, "nczarr") {
		return "nczarr"
	}
	return "zarr"
}

// TestAzureMountFixtures uploads every fixture dataset to Azurite and
// mounts each through both URL forms: every file is the same, byte for
// byte, as in the dataset's folder, and every array's data equals the
// reference tools' values (checkDataset, as from MinIO).
func TestAzureMountFixtures(t *testing.T) {
	srv := azuritetest.Start(t)
	azureEnv(t, srv)
	srv.CreateContainer(t, "fixtures", azuritetest.Private)
	sets := fixtures(t)
	for _, set := range sets {
		for _, ds := range set.Datasets {
			srv.PutTree(t, "fixtures", "sets/"+ds.Name, ds.TreePath(set))
		}
	}
	for _, set := range sets {
		for _, ds := range set.Datasets {
			for _, form := range []string{
				"az://fixtures/sets/" + ds.Name,
				"abfs://fixtures/sets/" + ds.Name + "#mode=" + azureMode(set),
			} {
				t.Run(ds.Name+"/"+strings.SplitN(form, ":", 2)[0], func(t *testing.T) {
					t.Parallel()
					mnt := mount(t, form, "--endpoint-url", srv.Endpoint)
					checkDataset(t, mnt, set, ds)
				})
			}
		}
	}
}

// TestAzureBrowse mounts a group of 100 arrays with .zmetadata and counts
// the requests of mount, ls -l and cat in .nczarrfs/stats: the mount
// lists the dataset flat (one List Blobs) and reads .zgroup and .zmetadata;
// ls -l makes none; cat of an array's data makes one ranged Get Blob.
func TestAzureBrowse(t *testing.T) {
	srv := azuritetest.Start(t)
	azureEnv(t, srv)
	srv.CreateContainer(t, "browse", azuritetest.Private)
	const n = 100
	out := t.TempDir()
	if msg, err := exec.Command(python, "-c", genGroupScript, out, fmt.Sprint(n), "1").CombinedOutput(); err != nil {
		t.Fatalf("generating the group with zarr-python: %v\n%s", err, msg)
	}
	srv.PutTree(t, "browse", "g", filepath.Join(out, "tree"))
	mnt := mount(t, "az://browse/g#mode=zarr", "--endpoint-url", srv.Endpoint, "--metadata-ttl", "1h")
	if got, want := readRequests(t, mnt), (stats.Kinds{GET: 2, LIST: 1}); got != want {
		t.Errorf("mount made %+v requests, want %+v", got, want)
	}
	steps := []struct {
		what string
		run  func() error
		want stats.Kinds
	}{
		{"ls -l", func() error { return command("ls", "-l", mnt) }, stats.Kinds{}},
		{"ls -lR", func() error { return command("ls", "-lR", mnt) }, stats.Kinds{}},
		{"cat v0003/data", func() error {
			got, err := os.ReadFile(filepath.Join(mnt, "v0003", "data"))
			if err != nil {
				return err
			}
			want, err := os.ReadFile(filepath.Join(out, "expected", "v0003.bin"))
			if err == nil && !bytes.Equal(got, want) {
				err = fmt.Errorf("v0003/data = %x, want %x (zarr)", got, want)
			}
			return err
		}, stats.Kinds{RangedGET: 1}},
	}
	for _, s := range steps {
		before := readRequests(t, mnt)
		if err := s.run(); err != nil {
			t.Fatalf("%s: %v", s.what, err)
		}
		if got := minus(readRequests(t, mnt), before); got != s.want {
			t.Errorf("%s made %+v requests, want %+v", s.what, got, s.want)
		}
	}
}

// TestAzureMountBadInput: a wrong key (from AZURE_STORAGE_KEY, or in a
// connection string), a missing container and a private container read
// anonymously each fail the mount with status 1 and a line that says why
// and names the credentials, never the key.
func TestAzureMountBadInput(t *testing.T) {
	srv := azuritetest.Start(t)
	azureEnv(t, srv)
	srv.CreateContainer(t, "private", azuritetest.Private)
	set, ds := basicDataset(t)
	srv.PutTree(t, "private", ds.Name, ds.TreePath(set))
	source := "az://private/" + ds.Name
	const wrongKey = "d3Jvbmcta2V5LWZvci1hLXRlc3Q="
	cases := []struct {
		name   string
		env    []string // NAME=value, set for the case
		source string
		args   []string
		want   []string
	}{
		{"wrong key", []string{"AZURE_STORAGE_KEY=" + wrongKey}, source, nil,
			[]string{"access denied", "AZURE_STORAGE_ACCOUNT and AZURE_STORAGE_KEY (account devstoreaccount1)"}},
		{"wrong key in a connection string", []string{"AZURE_STORAGE_CONNECTION_STRING=AccountName=devstoreaccount1;AccountKey=" + wrongKey + ";BlobEndpoint=" + srv.Endpoint}, source, nil,
			[]string{"access denied", "AZURE_STORAGE_CONNECTION_STRING (account devstoreaccount1)"}},
		{"missing container", nil, "az://nosuch/" + ds.Name, nil,
			[]string{`container "nosuch" does not exist`}},
		{"private container read anonymously", nil, source, []string{"--no-sign-request"},
			[]string{"access denied", "anonymous"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, kv := range c.env {
				k, v, _ := strings.Cut(kv, "=")
				t.Setenv(k, v)
			}
			out, err := mountFails(t, c.source, append([]string{"--endpoint-url", srv.Endpoint}, c.args...)...)
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 1 {
				t.Errorf("mount: %v, want exit status 1; output:\n%s", err, out)
			}
			for _, w := range c.want {
				if !strings.Contains(out, w) {
					t.Errorf("the output does not say %q:\n%s", w, out)
				}
			}
			if strings.Contains(out, wrongKey) || strings.Contains(out, azuritetest.Key) {
				t.Errorf("the output shows a key:\n%s", out)
			}
		})
	}

	// The same dataset with the right key mounts: the cases above failed
	// for the reason they name.
	mnt := mount(t, source, "--endpoint-url", srv.Endpoint)
	checkDataset(t, mnt, set, ds)
}

// TestAzureMountFaults reads chunk objects through a proxy that breaks
// requests for them in each way a connection breaks, throttles
// (ServerBusy) or answers 500: once, the read returns the right bytes
// (retried, or its body resumed with If-Match); on every request, the
// right bytes or EIO, never wrong bytes, and the right bytes once the
// fault is lifted; the daemon stays up. Then a throttled cat of the whole array is right, and
// .nczarrfs/stats counts the throttled answers.
func TestAzureMountFaults(t *testing.T) {
	srv := azuritetest.Start(t)
	azureEnv(t, srv)
	srv.CreateContainer(t, "faults", azuritetest.Private)
	const chunk = 8192 // elements of 8 bytes: 64 KiB chunk objects
	set, ds := genArray(t, 20*chunk, chunk, "<f8", 1000)
	tree := ds.TreePath(set)
	srv.PutTree(t, "faults", "ds", tree)
	u, err := url.Parse(srv.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	proxy := faultproxy.Start(t, u.Scheme+"://"+u.Host)
	d := startDaemon(t, "az://faults/ds#mode=zarr", "--endpoint-url", proxy.URL+"/"+azuritetest.Account, "--s3-timeout", "2s")

	faults := []faultproxy.Fault{
		{Kind: faultproxy.ResetBeforeReply},
		{Kind: faultproxy.ResetMidBody},
		{Kind: faultproxy.CutBody},
		{Kind: faultproxy.CutBodyNoLength},
		{Kind: faultproxy.StallMidBody},
		faultproxy.ServerBusy,
		faultproxy.InternalError,
	}
	read := func(t *testing.T, name string) ([]byte, []byte, error) {
		t.Helper()
		want, err := os.ReadFile(filepath.Join(tree, "v", name))
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(d.mnt, "v", name))
		return got, want, err
	}
	for i, fault := range faults {
		t.Run(fault.String(), func(t *testing.T) {
			// Chunk objects of its own.
			once, always := fmt.Sprint(2*i+1), fmt.Sprint(2*i+2)

			// Once: retried or resumed into the right bytes.
			proxy.Inject("faults/ds/v/"+once, fault, 1)
			if got, want, err := read(t, once); err != nil || !bytes.Equal(got, want) {
				t.Errorf("one fault: %d bytes, %v; want the chunk's %d", len(got), err, len(want))
			}
			if n := proxy.Count("faults/ds/v/" + once); n < 2 {
				t.Errorf("one fault: %d requests for the chunk, want a second", n)
			}

			// On every request: the right bytes or EIO.
			key := "faults/ds/v/" + always
			proxy.Inject(key, fault, -1)
			got, want, err := read(t, always)
			proxy.Lift(key)
			if proxy.Count(key) == 0 {
				t.Errorf("the read did not meet the fault: %v", err)
			}
			switch {
			case err == nil && !bytes.Equal(got, want):
				t.Errorf("under the fault: %d wrong bytes", len(got))
			case err != nil && !errors.Is(err, syscall.EIO):
				t.Errorf("under the fault: %v, want EIO", err)
			}
			t.Logf("under the fault on every request: %v", err)
			// Once the fault is lifted: right bytes (a failed read is
			// not kept).
			if got, want, err := read(t, always); err != nil || !bytes.Equal(got, want) {
				t.Errorf("after the fault was lifted: %d bytes, %v", len(got), err)
			}
		})
	}

	// A burst of 5, then 50 requests a second.
	proxy.Throttle(50)
	got, err := os.ReadFile(filepath.Join(d.mnt, "v", "data"))
	proxy.Throttle(0)
	want, rerr := os.ReadFile(filepath.Join(set.Dir, "expected", "v.bin"))
	if rerr != nil {
		t.Fatal(rerr)
	}
	if err != nil || !bytes.Equal(got, want) {
		t.Errorf("cat of the throttled array: %d bytes, %v; want the %d bytes zarr reads", len(got), err, len(want))
	}
	if proxy.Throttled() == 0 {
		t.Errorf("the proxy throttled no request of the cat")
	}
	b, err := os.ReadFile(filepath.Join(d.mnt, ".nczarrfs", "stats"))
	if err != nil || !bytes.Contains(b, []byte(`"throttled"`)) {
		t.Errorf(".nczarrfs/stats: %v, no pacing counters:\n%s", err, clip(string(b)))
	}
	if d.exited() {
		t.Fatalf("the daemon exited:\n%s", clip(d.output.String()))
	}
}

// TestAzureDiskCache mounts a dataset with --cache-dir, then mounts it
// again once the first mount is gone: both read the reference tools'
// values; the first writes the blobs it fetched whole into the folder,
// and the second reads them from there (.nczarrfs/stats, disk_cache).
// (No faultproxy here: checkDataset maps data files, and a page fault on
// a mount whose store is served from the test's own process can stall it.)
func TestAzureDiskCache(t *testing.T) {
	srv := azuritetest.Start(t)
	azureEnv(t, srv)
	srv.CreateContainer(t, "cached", azuritetest.Private)
	set, ds := basicDataset(t)
	srv.PutTree(t, "cached", ds.Name, ds.TreePath(set))
	args := []string{"--endpoint-url", srv.Endpoint, "--cache-dir", t.TempDir(), "--cache-dir-size", "64MiB"}
	source := "az://cached/" + ds.Name + "#mode=" + azureMode(set)
	var disk [2]stats.DiskSnapshot
	for i := range disk {
		t.Run(fmt.Sprint("mount ", i+1), func(t *testing.T) {
			mnt := mount(t, source, args...)
			checkDataset(t, mnt, set, ds)
			b, err := os.ReadFile(filepath.Join(mnt, ".nczarrfs", "stats"))
			if err != nil {
				t.Fatal(err)
			}
			var snap stats.Snapshot
			if err := json.Unmarshal(b, &snap); err != nil || snap.Disk == nil {
				t.Fatalf(".nczarrfs/stats: %v, no disk_cache:\n%s", err, clip(string(b)))
			}
			disk[i] = *snap.Disk
		})
	}
	t.Logf("disk cache: first mount %+v, second %+v", disk[0], disk[1])
	if disk[0].Written == 0 || disk[1].Hits == 0 || disk[1].Misses >= disk[0].Misses {
		t.Errorf("disk cache: first mount %+v, second %+v; want the first to write blobs and the second to read them", disk[0], disk[1])
	}
}

// TestAzureCommands runs ls, info, header and cat on an NCZarr dataset
// written by ncgen, from its folder and from Azurite through az:// and
// abfs://: each prints exactly what it prints from the folder (the header
// but for its name line, which comes from the path).
func TestAzureCommands(t *testing.T) {
	srv := azuritetest.Start(t)
	azureEnv(t, srv)
	srv.CreateContainer(t, "commands", azuritetest.Private)
	set, ds := findDataset(t, "nczarr-4.9.0-basic")
	srv.PutTree(t, "commands", ds.Name, ds.TreePath(set))
	arr := ds.Arrays[len(ds.Arrays)-1]
	outputs := func(t *testing.T, f sourceForm) map[string][]byte {
		return map[string][]byte{
			"ls -R":           f.run(t, "ls", []string{"-R"}),
			"ls -R --json":    f.run(t, "ls", []string{"-R", "--json"}),
			"info":            f.run(t, "info", nil),
			"header":          []byte(withoutFirstLine(f.run(t, "header", nil))),
			"cat " + arr.Path: f.run(t, "cat", nil, arr.Path),
		}
	}
	want := outputs(t, sourceForm{"tree", []string{ds.TreePath(set)}})
	checkCat(t, set, arr, want["cat "+arr.Path])
	for _, f := range []sourceForm{
		{"az", []string{"az://commands/" + ds.Name, "--endpoint-url", srv.Endpoint}},
		{"abfs", []string{"abfs://commands/" + ds.Name + "#mode=nczarr", "--endpoint-url", srv.Endpoint}},
	} {
		t.Run(f.name, func(t *testing.T) {
			got := outputs(t, f)
			for k, w := range want {
				if !bytes.Equal(got[k], w) {
					t.Errorf("%s differs from the tree's:\n got %.300q\nwant %.300q", k, got[k], w)
				}
			}
		})
	}
}
