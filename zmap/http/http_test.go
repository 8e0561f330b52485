package http_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	nethttp "net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nczarrfs/nczarrfs/internal/faultproxy"
	"github.com/nczarrfs/nczarrfs/internal/testenv"
	cmeta "github.com/nczarrfs/nczarrfs/nczarr/consolidated"
	"github.com/nczarrfs/nczarrfs/zmap"
	zhttp "github.com/nczarrfs/nczarrfs/zmap/http"
	"github.com/nczarrfs/nczarrfs/zmap/remote"
	"github.com/nczarrfs/nczarrfs/zmap/zmaptest"
)

// consolidated returns the .zmetadata that declares every object of the
// conformance suite's set: its .zarray objects as arrays whose chunk keys
// are those the set holds (found by probing), every other object as a
// metadata object.
func consolidated(objects map[string][]byte) map[string][]byte {
	meta := map[string]json.RawMessage{}
	for key, content := range objects {
		switch {
		case path.Base(key) != ".zarray":
			meta[key] = json.RawMessage(`{}`)
		case json.Valid(content) && bytes.Contains(content, []byte(`"shape"`)):
			meta[key] = content
		case bytes.Contains(content, []byte(`"/"`)):
			// nested/v: chunks 0/0/1, 0/1/0 and 1/0/0 of a 2x2x2 grid.
			meta[key] = json.RawMessage(`{"shape": [2, 2, 2], "chunks": [1, 1, 1], "dimension_separator": "/"}`)
		default:
			meta[key] = json.RawMessage(`{"shape": [0], "chunks": [1]}`)
		}
	}
	doc, err := json.Marshal(map[string]any{"metadata": meta, "zarr_consolidated_format": 1})
	if err != nil {
		panic(err)
	}
	return map[string][]byte{".zmetadata": doc}
}

// writeTree writes objects under a new folder and returns it.
func writeTree(t *testing.T, objects map[string][]byte) string {
	t.Helper()
	dir := t.TempDir()
	for key, content := range objects {
		p := filepath.Join(dir, filepath.FromSlash(key))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, content, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// withETags serves dir with http.FileServer and a strong ETag per file
// (its content's hash), which FileServer honours in If-Match and Range
// requests.
func withETags(dir string) nethttp.Handler {
	fs := nethttp.FileServer(nethttp.Dir(dir))
	return nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
		if b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(path.Clean(r.URL.Path)))); err == nil {
			w.Header().Set("ETag", fmt.Sprintf(`"%x"`, sha256.Sum256(b)))
		}
		fs.ServeHTTP(w, r)
	})
}

func open(t *testing.T, base string, opts zhttp.Options) *zhttp.Store {
	t.Helper()
	opts.Consolidated = cmeta.Parse
	st, err := zhttp.Open(context.Background(), base, opts)
	if err != nil {
		t.Fatalf("Open(%s): %v", base, err)
	}
	return st
}

// TestConformance runs the zmap suite against Go's file server, with
// ETags, and against Python's http.server, which ignores Range and sends
// no ETag.
func TestConformance(t *testing.T) {
	t.Run("FileServer", func(t *testing.T) {
		zmaptest.RunWith(t, func(t *testing.T, objects map[string][]byte) zmap.Store {
			srv := httptest.NewServer(withETags(writeTree(t, objects)))
			t.Cleanup(srv.Close)
			return open(t, srv.URL, zhttp.Options{Timeout: 10 * time.Second})
		}, zmaptest.Options{Own: consolidated})
	})
	t.Run("python http.server", func(t *testing.T) {
		zmaptest.RunWith(t, func(t *testing.T, objects map[string][]byte) zmap.Store {
			base := pythonServer(t, writeTree(t, objects))
			return open(t, base+"/", zhttp.Options{Timeout: 10 * time.Second})
		}, zmaptest.Options{Own: consolidated})
	})
}

// pythonServer serves dir with python3 -m http.server on 127.0.0.1 until
// t ends, and returns its base URL.
func pythonServer(t *testing.T, dir string) string {
	t.Helper()
	_, err := exec.LookPath("python3")
	testenv.Require(t, "python3", err)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command("python3", "-u", "-m", "http.server", "--bind", "127.0.0.1", "--directory", dir, fmt.Sprint(port))
	out, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	// The server is up once it accepts a connection.
	go io.Copy(io.Discard, bufio.NewReader(out))
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	for deadline := time.Now().Add(20 * time.Second); ; {
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err == nil {
			c.Close()
			return base
		}
		if time.Now().After(deadline) {
			t.Fatalf("python3 -m http.server did not start: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestOpenErrors: a dataset without consolidated metadata is refused with
// one line that says so, and so is a server that answers every path with
// a web page (not the service it is taken for).
func TestOpenErrors(t *testing.T) {
	plain := httptest.NewServer(nethttp.FileServer(nethttp.Dir(writeTree(t, map[string][]byte{
		"v2/.zgroup":     []byte(`{"zarr_format": 2}`),
		"v3/zarr.json":   []byte(`{"zarr_format": 3, "node_type": "group", "attributes": {}}`),
		"bad/.zmetadata": []byte(`{"metadata": {"a/.zarray": {"shape": [2], "chunks": [0]}}}`),
	}))))
	t.Cleanup(plain.Close)
	page := httptest.NewServer(nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, "<html><body>Welcome</body></html>")
	}))
	t.Cleanup(page.Close)
	tests := []struct {
		url       string
		wantParts []string
		notCons   bool
	}{
		{plain.URL + "/v2", []string{"neither .zmetadata nor zarr.json", "consolidated"}, true},
		{plain.URL + "/v3", []string{"no consolidated metadata in zarr.json"}, true},
		{plain.URL + "/missing", []string{"neither .zmetadata nor zarr.json"}, true},
		{plain.URL + "/bad", []string{"is not consolidated Zarr metadata", "a/.zarray"}, false},
		{page.URL + "/x.zarr", []string{"is not consolidated Zarr metadata", ".zmetadata"}, false},
		{"ftp://host/x", []string{"not an http(s)"}, false},
		{"http://u:p@host/x", []string{"user information"}, false},
	}
	for _, tt := range tests {
		_, err := zhttp.Open(context.Background(), tt.url, zhttp.Options{Timeout: 5 * time.Second, Consolidated: cmeta.Parse})
		if err == nil {
			t.Errorf("Open(%s) succeeded", tt.url)
			continue
		}
		for _, part := range tt.wantParts {
			if !strings.Contains(err.Error(), part) {
				t.Errorf("Open(%s) error %q does not say %q", tt.url, err, part)
			}
		}
		if strings.Contains(err.Error(), "\n") {
			t.Errorf("Open(%s) error is more than one line: %q", tt.url, err)
		}
		if got := errors.Is(err, zhttp.ErrNotConsolidated); got != tt.notCons {
			t.Errorf("Open(%s) error wraps ErrNotConsolidated: %v, want %v", tt.url, got, tt.notCons)
		}
	}
}

// TestFaults breaks requests to the server in each way a connection
// breaks: reads return every byte, resumed from where a body broke, and
// the store counts what it did.
func TestFaults(t *testing.T) {
	data := make([]byte, 300_000)
	for i := range data {
		data[i] = byte(i * 7 / 3)
	}
	objects := map[string][]byte{"v/0": data}
	objects[".zmetadata"] = consolidated(objects)[".zmetadata"]
	srv := httptest.NewServer(withETags(writeTree(t, objects)))
	t.Cleanup(srv.Close)
	p := faultproxy.Start(t, srv.URL)
	st := open(t, p.URL, zhttp.Options{Timeout: 5 * time.Second})
	ctx := context.Background()
	for _, f := range []faultproxy.Fault{
		{Kind: faultproxy.ResetBeforeReply},
		{Kind: faultproxy.ResetMidBody},
		{Kind: faultproxy.CutBody},
		{Kind: faultproxy.CutBodyNoLength},
		{Kind: faultproxy.StallMidBody},
		{Kind: faultproxy.Answer, Status: 503},
		{Kind: faultproxy.Answer, Status: 429},
		{Kind: faultproxy.Answer, Status: 502},
	} {
		// The proxy's key is the path after its first segment.
		p.Inject("0", f, 1)
		buf := make([]byte, 200_000)
		n, err := st.ReadAt(ctx, "v/0", buf, 1000)
		if err != nil || n != len(buf) || !bytes.Equal(buf, data[1000:1000+len(buf)]) {
			t.Errorf("%v: ReadAt = %d, %v; want every byte", f, n, err)
		}
	}
	if resumed, _ := st.Resumed(); resumed == 0 {
		t.Errorf("no body was resumed")
	}
	if st.Throttled() < 2 {
		t.Errorf("Throttled = %d, want the 2 throttling answers", st.Throttled())
	}
	// A 404 is not found, for the reader to fill; a 403 is denied.
	p.Inject("0", faultproxy.Fault{Kind: faultproxy.Answer, Status: 403}, 1)
	if _, err := st.Get(ctx, "v/0"); !errors.Is(err, zmap.ErrPermission) {
		t.Errorf("Get answered 403: %v; want ErrPermission", err)
	}
	if _, err := st.Get(ctx, "v/1"); !errors.Is(err, zmap.ErrNotFound) {
		t.Errorf("Get of a missing chunk: %v; want ErrNotFound", err)
	}
	// A server that never answers: the read fails within the timeout
	// with DeadlineExceeded, not a hang.
	p.Inject("0", faultproxy.Fault{Kind: faultproxy.Answer, Status: 503}, -1)
	short := open(t, p.URL, zhttp.Options{Timeout: 500 * time.Millisecond})
	if _, err := short.Get(ctx, "v/0"); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Get always throttled: %v; want DeadlineExceeded", err)
	}
	p.Lift("0")
}

// TestChangedObject replaces an object between a body that breaks off and
// its resumption: the read fails with remote.ErrChanged.
func TestChangedObject(t *testing.T) {
	dir := writeTree(t, map[string][]byte{"v/0": bytes.Repeat([]byte("a"), 200_000)})
	cons := consolidated(map[string][]byte{"v/0": nil})
	if err := os.WriteFile(filepath.Join(dir, ".zmetadata"), cons[".zmetadata"], 0o644); err != nil {
		t.Fatal(err)
	}
	var replaced atomic.Bool
	h := withETags(dir)
	srv := httptest.NewServer(nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
		h.ServeHTTP(w, r)
		if r.URL.Path == "/v/0" && replaced.CompareAndSwap(false, true) {
			os.WriteFile(filepath.Join(dir, "v", "0"), bytes.Repeat([]byte("b"), 200_000), 0o644)
		}
	}))
	t.Cleanup(srv.Close)
	p := faultproxy.Start(t, srv.URL)
	st := open(t, p.URL, zhttp.Options{Timeout: 5 * time.Second})
	p.Inject("0", faultproxy.Fault{Kind: faultproxy.ResetMidBody}, 1)
	_, err := st.Get(context.Background(), "v/0")
	if !errors.Is(err, remote.ErrChanged) {
		t.Fatalf("read across a replacement: %v; want ErrChanged", err)
	}
}
