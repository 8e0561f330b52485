// Package miniotest runs a real MinIO server for tests: on 127.0.0.1, on a
// free port, over a temporary data directory, stopped when the test ends.
//
// The server binary comes from $MINIO_BIN, else from the project cache
// (${NCZARRFS_CACHE:-$HOME/.cache/nczarrfs}/bin/minio) where
// scripts/install-minio.sh puts it. Without it the test is skipped with the
// reason, or fails under make test (see internal/testenv).
//
// Besides starting and stopping, a Server can be stopped and restarted on
// the same port and data (to test recovery after an outage) and paused with
// SIGSTOP (to test a server that accepts connections but never answers).
package miniotest

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
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

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go/logging"

	"github.com/nczarrfs/nczarrfs/internal/testenv"
)

// Credentials of the root user of every test server. They are test-only
// values, not secrets.
const (
	User     = "nczarrfs-test"
	Password = "nczarrfs-test-secret"
	Region   = "us-east-1"
)

// startTimeout bounds how long a server may take to become ready.
const startTimeout = 60 * time.Second

// Binary returns the path of the MinIO server binary. When there is none,
// testenv.Require skips or fails t with the command that installs it.
func Binary(t testing.TB) string {
	t.Helper()
	path := os.Getenv("MINIO_BIN")
	if path == "" {
		cache := os.Getenv("NCZARRFS_CACHE")
		if cache == "" {
			home, err := os.UserHomeDir()
			if err != nil {
				t.Fatalf("miniotest: no MINIO_BIN and no home directory: %v", err)
			}
			cache = filepath.Join(home, ".cache", "nczarrfs")
		}
		path = filepath.Join(cache, "bin", "minio")
	}
	var err error
	if _, err = os.Stat(path); err != nil {
		err = fmt.Errorf("%w (run scripts/install-minio.sh, or set MINIO_BIN)", err)
	}
	testenv.Require(t, "a MinIO server binary", err)
	return path
}

// Server is a running (or stopped) MinIO server.
type Server struct {
	// Addr is host:port, always on 127.0.0.1.
	Addr string
	// Endpoint is the server's base URL: http://Addr, or https://Addr for
	// a TLS server.
	Endpoint string
	// Dir is the server's data directory.
	Dir string
	// CAFile is the PEM file of the CA that signed a TLS server's
	// certificate; "" for a plain http server.
	CAFile string

	bin      string
	console  string
	certsDir string
	logPath  string

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{} // closed when cmd has been waited for
	paused bool
}

// Start starts a plain http server and stops it when t ends.
func Start(t testing.TB) *Server {
	t.Helper()
	s := newServer(t)
	s.Start(t)
	return s
}

// StartTLS starts an https server whose certificate, for 127.0.0.1, is
// signed by a CA made for this server alone (written to CAFile), and stops
// it when t ends.
func StartTLS(t testing.TB) *Server {
	t.Helper()
	s := newServer(t)
	s.CAFile = writeCerts(t, s.certsDir)
	s.Endpoint = "https://" + s.Addr
	s.Start(t)
	return s
}

func newServer(t testing.TB) *Server {
	t.Helper()
	root := t.TempDir()
	s := &Server{
		Addr:     testenv.FreeAddr(t),
		console:  testenv.FreeAddr(t),
		Dir:      filepath.Join(root, "data"),
		certsDir: filepath.Join(root, "certs"),
		logPath:  filepath.Join(root, "minio.log"),
		bin:      Binary(t),
	}
	s.Endpoint = "http://" + s.Addr
	for _, d := range []string{s.Dir, s.certsDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		s.Stop()
		if t.Failed() {
			t.Logf("miniotest: server log (%s):\n%s", s.logPath, tail(s.logPath, 4000))
		}
	})
	return s
}

// Start starts the server, on the same address and data directory as any
// earlier run, and waits until it is ready. It fails the test if the
// server does not come up.
func (s *Server) Start(t testing.TB) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		t.Fatal("miniotest: Start: server already running")
	}
	logf, err := os.OpenFile(s.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(s.bin, "server", "--quiet",
		"--address", s.Addr, "--console-address", s.console,
		"--certs-dir", s.certsDir, s.Dir)
	cmd.Env = []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + filepath.Dir(s.Dir),
		"MINIO_ROOT_USER=" + User,
		"MINIO_ROOT_PASSWORD=" + Password,
		"MINIO_BROWSER=off",
		"MINIO_UPDATE=off",
		"MINIO_CI_CD=1",
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	// Die with the test process, even when it is killed.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		t.Fatalf("miniotest: starting %s: %v", s.bin, err)
	}
	exited := make(chan struct{})
	go func() {
		cmd.Wait()
		logf.Close()
		close(exited)
	}()
	s.cmd, s.exited = cmd, exited
	if err := s.waitReady(t, exited); err != nil {
		t.Fatalf("miniotest: %v\nserver log:\n%s", err, tail(s.logPath, 4000))
	}
}

// waitReady polls the liveness endpoint until it answers 200.
func (s *Server) waitReady(t testing.TB, exited <-chan struct{}) error {
	client := &http.Client{Timeout: 2 * time.Second, Transport: s.transport(t)}
	defer client.CloseIdleConnections()
	deadline := time.Now().Add(startTimeout)
	for {
		resp, err := client.Get(s.Endpoint + "/minio/health/live")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("status %s", resp.Status)
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

// transport trusts the server's CA for a TLS server.
func (s *Server) transport(t testing.TB) *http.Transport {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if s.CAFile != "" {
		pool := x509.NewCertPool()
		pem, err := os.ReadFile(s.CAFile)
		if err != nil || !pool.AppendCertsFromPEM(pem) {
			t.Fatalf("miniotest: reading CA %s: %v", s.CAFile, err)
		}
		tr.TLSClientConfig.RootCAs = pool
	}
	return tr
}

// Stop stops the server (SIGTERM, then SIGKILL after 10 s) and waits for it
// to exit. Stopping a stopped server does nothing.
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	if s.paused {
		s.cmd.Process.Signal(syscall.SIGCONT)
		s.paused = false
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

// Pause freezes the server with SIGSTOP: the kernel still accepts
// connections on its port, but nothing answers them.
func (s *Server) Pause(t testing.TB) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		t.Fatal("miniotest: Pause: server not running")
	}
	if err := s.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatalf("miniotest: Pause: %v", err)
	}
	s.paused = true
	// The signal is delivered asynchronously: until every thread has
	// stopped, the server may still answer a request.
	deadline := time.Now().Add(10 * time.Second)
	for !stopped(s.cmd.Process.Pid) {
		if time.Now().After(deadline) {
			t.Fatal("miniotest: Pause: the server did not stop within 10s of SIGSTOP")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// stopped reports whether every thread of process pid is stopped (state T
// in /proc/PID/task/TID/stat).
func stopped(pid int) bool {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil || len(tasks) == 0 {
		return false
	}
	for _, task := range tasks {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/stat", pid, task.Name()))
		if err != nil {
			return false
		}
		// pid (comm) state ...; comm may contain spaces and parentheses.
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 || i+2 >= len(stat) || (stat[i+2] != 'T' && stat[i+2] != 't') {
			return false
		}
	}
	return true
}

// Resume undoes Pause.
func (s *Server) Resume(t testing.TB) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil || !s.paused {
		return
	}
	if err := s.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatalf("miniotest: Resume: %v", err)
	}
	s.paused = false
}

// Env returns environment variables that give a process (such as a
// mounted nczarrfs daemon) the server's root credentials and region, and
// that keep the AWS SDK from probing the EC2 instance metadata address.
func (s *Server) Env() []string {
	env := []string{
		"AWS_ACCESS_KEY_ID=" + User,
		"AWS_SECRET_ACCESS_KEY=" + Password,
		"AWS_REGION=" + Region,
		"AWS_EC2_METADATA_DISABLED=true",
	}
	if s.CAFile != "" {
		env = append(env, "AWS_CA_BUNDLE="+s.CAFile)
	}
	return env
}

// Client returns an S3 client for the server, with its root credentials.
func (s *Server) Client(t testing.TB) *s3.Client {
	t.Helper()
	opts := []func(*config.LoadOptions) error{
		config.WithRegion(Region),
		config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider(User, Password, "")),
		config.WithRetryMaxAttempts(5),
		config.WithLogger(logging.Nop{}),
	}
	if s.CAFile != "" {
		pem, err := os.ReadFile(s.CAFile)
		if err != nil {
			t.Fatal(err)
		}
		opts = append(opts, config.WithCustomCABundle(bytes.NewReader(pem)))
	}
	cfg, err := config.LoadDefaultConfig(context.Background(), opts...)
	if err != nil {
		t.Fatalf("miniotest: client config: %v", err)
	}
	return s3.NewFromConfig(cfg, func(o *s3.Options) {
		o.BaseEndpoint = aws.String(s.Endpoint)
		o.UsePathStyle = true
	})
}

// CreateBucket creates a bucket.
func (s *Server) CreateBucket(t testing.TB, bucket string) {
	t.Helper()
	_, err := s.Client(t).CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String(bucket)})
	if err != nil {
		t.Fatalf("miniotest: CreateBucket %s: %v", bucket, err)
	}
}

// uploadParallelism bounds concurrent uploads: enough to hide per-request
// latency, few enough for a 2-core machine.
const uploadParallelism = 16

// Put uploads objects (key -> content) to bucket, several at a time.
func (s *Server) Put(t testing.TB, bucket string, objects map[string][]byte) {
	t.Helper()
	client := s.Client(t)
	ctx := context.Background()
	sem := make(chan struct{}, uploadParallelism)
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	for key, data := range objects {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			_, err := client.PutObject(ctx, &s3.PutObjectInput{
				Bucket: aws.String(bucket),
				Key:    aws.String(key),
				Body:   bytes.NewReader(data),
			})
			if err != nil {
				mu.Lock()
				if first == nil {
					first = fmt.Errorf("PutObject %s/%s: %w", bucket, key, err)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if first != nil {
		t.Fatalf("miniotest: %v", first)
	}
}

// PutTree uploads every regular file under dir to bucket, under key prefix
// (its path relative to dir, slash-separated, after prefix/).
func (s *Server) PutTree(t testing.TB, bucket, prefix, dir string) {
	t.Helper()
	objects, err := testenv.ReadTree(dir, prefix)
	if err != nil {
		t.Fatalf("miniotest: PutTree: %v", err)
	}
	s.Put(t, bucket, objects)
}

// writeCerts writes a fresh CA and a certificate for 127.0.0.1 signed by
// it into MinIO's certs directory, and returns the CA's PEM file.
func writeCerts(t testing.TB, certsDir string) string {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "nczarrfs test CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	leafTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "127.0.0.1"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, leafTmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	write := func(path, typ string, der []byte) {
		if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(certsDir, "public.crt"), "CERTIFICATE", leafDER)
	write(filepath.Join(certsDir, "private.key"), "PRIVATE KEY", keyDER)
	caFile := filepath.Join(filepath.Dir(certsDir), "ca.pem")
	write(caFile, "CERTIFICATE", caDER)
	return caFile
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
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return strings.TrimSpace(string(b))
}
