// Package azuritetest runs a real Azurite blob service (Microsoft's Azure
// Storage emulator) for tests: on 127.0.0.1, on a free port, over a
// temporary data directory, stopped when the test ends.
//
// The server comes from $AZURITE_BLOB_BIN, else from the project cache
// (${NCZARRFS_CACHE:-$HOME/.cache/nczarrfs}/azurite/node_modules/.bin/azurite-blob)
// where scripts/install-azurite.sh puts it. Without it the test is skipped
// with the reason, or fails under make test (see internal/testenv).
//
// Azurite serves the emulator's well-known account, Account with Key; its
// blob service endpoint is http://ADDR/devstoreaccount1 (path-style URLs).
package azuritetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/nczarrfs/nczarrfs/internal/testenv"
)

// The emulator's well-known development account. These are published,
// test-only values, the same in every Azurite, not secrets.
const (
	Account = "devstoreaccount1"
	Key     = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)

// startTimeout bounds how long a server may take to become ready.
const startTimeout = 60 * time.Second

// Binary returns the path of Azurite's blob server command. When there is
// none, testenv.Require skips or fails t with the command that installs it.
func Binary(t testing.TB) string {
	t.Helper()
	path := os.Getenv("AZURITE_BLOB_BIN")
	if path == "" {
		cache := os.Getenv("NCZARRFS_CACHE")
		if cache == "" {
			home, err := os.UserHomeDir()
			if err != nil {
				t.Fatalf("azuritetest: no AZURITE_BLOB_BIN and no home directory: %v", err)
			}
			cache = filepath.Join(home, ".cache", "nczarrfs")
		}
		path = filepath.Join(cache, "azurite", "node_modules", ".bin", "azurite-blob")
	}
	var err error
	if _, err = os.Stat(path); err != nil {
		err = fmt.Errorf("%w (run scripts/install-azurite.sh, or set AZURITE_BLOB_BIN)", err)
	}
	testenv.Require(t, "Azurite (the Azure Storage emulator)", err)
	return path
}

// Server is a running Azurite blob service.
type Server struct {
	// Addr is host:port, always on 127.0.0.1.
	Addr string
	// Endpoint is the blob service endpoint of Account:
	// http://Addr/devstoreaccount1, what --endpoint-url takes.
	Endpoint string

	logPath string
	mu      sync.Mutex
	cmd     *exec.Cmd
	exited  chan struct{}
}

// Start starts a server and stops it when t ends.
func Start(t testing.TB) *Server {
	t.Helper()
	dir := t.TempDir()
	s := &Server{Addr: testenv.FreeAddr(t), logPath: filepath.Join(dir, "azurite.log")}
	s.Endpoint = "http://" + s.Addr + "/" + Account
	_, port, _ := net.SplitHostPort(s.Addr)
	logf, err := os.Create(s.logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(Binary(t),
		"--blobHost", "127.0.0.1", "--blobPort", port,
		"--location", dir,
		// No telemetry (there is no network), and every API version the
		// SDK may ask for.
		"--disableTelemetry", "--skipApiVersionCheck",
		// The account is the first path segment, whatever the host.
		"--disableProductStyleUrl")
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir}
	cmd.Stdout, cmd.Stderr = logf, logf
	// Die with the test process, even when it is killed.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		t.Fatalf("azuritetest: starting %s: %v", cmd.Path, err)
	}
	exited := make(chan struct{})
	go func() {
		cmd.Wait()
		logf.Close()
		close(exited)
	}()
	s.cmd, s.exited = cmd, exited
	t.Cleanup(func() {
		s.Stop()
		if t.Failed() {
			t.Logf("azuritetest: server log (%s):\n%s", s.logPath, tail(s.logPath, 4000))
		}
	})
	if err := s.waitReady(exited); err != nil {
		t.Fatalf("azuritetest: %v\nserver log:\n%s", err, tail(s.logPath, 4000))
	}
	return s
}

// waitReady polls the service until it answers anything over HTTP (an
// anonymous listing of the account's containers is refused, which is an
// answer).
func (s *Server) waitReady(exited <-chan struct{}) error {
	client := &http.Client{Timeout: 2 * time.Second}
	defer client.CloseIdleConnections()
	deadline := time.Now().Add(startTimeout)
	for {
		resp, err := client.Get(s.Endpoint + "?comp=list")
		if err == nil {
			resp.Body.Close()
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("server exited before it was ready (last probe: %v)", err)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("server not ready after %v: %v", startTimeout, err)
		}
	}
}

// Stop stops the server (SIGTERM, then SIGKILL after 10 s) and waits for it
// to exit. Stopping a stopped server does nothing.
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(10 * time.Second):
		s.cmd.Process.Kill()
		<-s.exited
	}
	s.cmd, s.exited = nil, nil
}

// ConnectionString is the connection string of Account on this server.
func (s *Server) ConnectionString() string {
	return "DefaultEndpointsProtocol=http;AccountName=" + Account + ";AccountKey=" + Key + ";BlobEndpoint=" + s.Endpoint + ";"
}

// Env returns environment variables that give a process (such as a mounted
// nczarrfs daemon) the account's name and key.
func (s *Server) Env() []string {
	return []string{"AZURE_STORAGE_ACCOUNT=" + Account, "AZURE_STORAGE_KEY=" + Key}
}

// Client returns a blob service client for the server, with the account's
// key.
func (s *Server) Client(t testing.TB) *azblob.Client {
	t.Helper()
	cred, err := azblob.NewSharedKeyCredential(Account, Key)
	if err != nil {
		t.Fatal(err)
	}
	c, err := azblob.NewClientWithSharedKeyCredential(s.Endpoint+"/", cred, &azblob.ClientOptions{
		ClientOptions: policy.ClientOptions{Retry: policy.RetryOptions{MaxRetries: 4, RetryDelay: 50 * time.Millisecond}},
	})
	if err != nil {
		t.Fatalf("azuritetest: client: %v", err)
	}
	return c
}

// Access is who may read a container without credentials.
type Access int

// The access levels of a container.
const (
	// Private: nobody without credentials.
	Private Access = iota
	// PublicBlob: anyone may read blobs, but not list them.
	PublicBlob
	// PublicContainer: anyone may read and list blobs.
	PublicContainer
)

// CreateContainer creates a container with the given anonymous access.
func (s *Server) CreateContainer(t testing.TB, name string, access Access) {
	t.Helper()
	var opts container.CreateOptions
	switch access {
	case PublicBlob:
		a := container.PublicAccessTypeBlob
		opts.Access = &a
	case PublicContainer:
		a := container.PublicAccessTypeContainer
		opts.Access = &a
	}
	_, err := s.Client(t).ServiceClient().NewContainerClient(name).Create(context.Background(), &opts)
	if err != nil {
		t.Fatalf("azuritetest: creating container %s: %v", name, err)
	}
}

// uploadParallelism bounds concurrent uploads: enough to hide per-request
// latency, few enough for a 2-core machine.
const uploadParallelism = 16

// Put uploads blobs (name -> content) to a container, several at a time.
func (s *Server) Put(t testing.TB, containerName string, blobs map[string][]byte) {
	t.Helper()
	client := s.Client(t)
	ctx := context.Background()
	sem := make(chan struct{}, uploadParallelism)
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	for name, data := range blobs {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			if _, err := client.UploadBuffer(ctx, containerName, name, data, nil); err != nil {
				mu.Lock()
				if first == nil {
					first = fmt.Errorf("uploading %s/%s: %w", containerName, name, err)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if first != nil {
		t.Fatalf("azuritetest: %v", first)
	}
}

// PutTree uploads every regular file under dir to a container, under
// prefix (its path relative to dir, slash-separated, after prefix/).
func (s *Server) PutTree(t testing.TB, containerName, prefix, dir string) {
	t.Helper()
	objects, err := testenv.ReadTree(dir, prefix)
	if err != nil {
		t.Fatalf("azuritetest: PutTree: %v", err)
	}
	s.Put(t, containerName, objects)
}

// tail returns the last n bytes of a file, for failure messages.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "(no log)"
		}
		return err.Error()
	}
	b = bytes.TrimSpace(b)
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return strings.TrimSpace(string(b))
}
