package s3_test

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nczarrfs/nczarrfs/internal/miniotest"
	"github.com/nczarrfs/nczarrfs/zmap"
	"github.com/nczarrfs/nczarrfs/zmap/s3"
	"github.com/nczarrfs/nczarrfs/zmap/zmaptest"
)

// useServerEnv points the AWS SDK's default chain at srv's credentials for
// the rest of the test: the environment is where Open finds them, as the
// daemon does. It also clears the shared config files, so that nothing on
// the machine running the tests leaks in, and disables the EC2 metadata
// probe.
func useServerEnv(t *testing.T, srv *miniotest.Server) {
	t.Helper()
	empty := filepath.Join(t.TempDir(), "empty")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, kv := range []string{
		"AWS_CONFIG_FILE=" + empty,
		"AWS_SHARED_CREDENTIALS_FILE=" + empty,
		"AWS_PROFILE=",
		"AWS_SESSION_TOKEN=",
		"AWS_ENDPOINT_URL=",
		"AWS_ENDPOINT_URL_S3=",
	} {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
		if v == "" {
			os.Unsetenv(k) // t.Setenv restores it afterwards
		}
	}
	for _, kv := range srv.Env() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
}

// open opens a Store on srv for bucket/prefix with opts, failing t on error.
func open(t testing.TB, srv *miniotest.Server, bucket, prefix string, opts s3.Options) *s3.Store {
	t.Helper()
	loc, err := s3.ParseURL(srv.Endpoint + "/" + bucket + "/" + prefix + "#mode=nczarr,s3")
	if err != nil {
		t.Fatal(err)
	}
	st, err := s3.Open(context.Background(), loc, opts)
	if err != nil {
		t.Fatalf("Open(%+v): %v", loc, err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// TestConformance runs the zmap conformance suite over MinIO, with the
// dataset under a key prefix and at the root of a bucket.
func TestConformance(t *testing.T) {
	srv := miniotest.Start(t)
	useServerEnv(t, srv)
	for _, prefix := range []string{"datasets/rich", ""} {
		t.Run(fmt.Sprintf("prefix=%q", prefix), func(t *testing.T) {
			n := 0
			zmaptest.Run(t, func(t *testing.T, objects map[string][]byte) zmap.Store {
				n++
				bucket := fmt.Sprintf("conformance-%d-%d", len(prefix), n)
				srv.CreateBucket(t, bucket)
				keyed := make(map[string][]byte, len(objects))
				for k, v := range objects {
					keyed[zmap.Join(prefix, k)] = v
				}
				if prefix != "" {
					// A sibling of the prefix that must stay invisible.
					keyed[zmap.Join(prefix+"-sibling", ".zgroup")] = []byte("{}")
				}
				srv.Put(t, bucket, keyed)
				return open(t, srv, bucket, prefix, s3.Options{})
			})
		})
	}
}

// TestSearchPaginates lists an array directory holding more keys than one
// ListObjectsV2 page (1,000) twice over.
func TestSearchPaginates(t *testing.T) {
	srv := miniotest.Start(t)
	useServerEnv(t, srv)
	srv.CreateBucket(t, "big")
	const nChunks = 2100
	objects := map[string][]byte{
		"ds/.zgroup":     []byte(`{"zarr_format": 2}`),
		"ds/v/.zarray":   []byte(`{}`),
		"ds/v/sub/0.0.0": []byte("deeper"),
		// Names on and around the ranges a long listing is cut into.
		"ds/v/0":      []byte("0"),
		"ds/v/1":      []byte("1"),
		"ds/v/9":      []byte("9"),
		"ds/v/99":     []byte("99"),
		"ds/v/999":    []byte("999"),
		"ds/v/10/x":   []byte("dir 10"),
		"ds/v/5/y":    []byte("dir 5"),
		"ds/v/a":      []byte("a"),
		"ds/v/zz":     []byte("zz"),
		"ds/v/~tilde": []byte("~"),
		"ds/v/-dash":  []byte("-"),
		"ds/v/.b":     []byte(".b"),
		"ds/v/:colon": []byte(":"),
		"ds/v/9~":     []byte("9~"),
		"ds/v/3x/z":   []byte("dir 3x"),
	}
	for i := range nChunks {
		objects[fmt.Sprintf("ds/v/%d.%d", i/100, i%100)] = bytes.Repeat([]byte{byte(i)}, 1+i%7)
	}
	start := time.Now()
	srv.Put(t, "big", objects)
	t.Logf("uploaded %d objects in %v", len(objects), time.Since(start))

	want := map[string]zmap.Entry{".zarray": {Name: ".zarray", Size: 2}, "sub": {Name: "sub", Dir: true},
		"10": {Name: "10", Dir: true}, "5": {Name: "5", Dir: true}, "3x": {Name: "3x", Dir: true}}
	for k, v := range objects {
		if name, ok := strings.CutPrefix(k, "ds/v/"); ok && !strings.Contains(name, "/") {
			want[name] = zmap.Entry{Name: name, Size: int64(len(v))}
		}
	}
	st := open(t, srv, "big", "ds", s3.Options{})
	// 1000 is S3's page; with smaller ones the first page ends elsewhere
	// (before the digits, within them) and the parts take several pages.
	for _, page := range []int32{1000, 37, 2} {
		t.Run(fmt.Sprint("page ", page), func(t *testing.T) {
			defer s3.SetListPageSize(page)()
			start = time.Now()
			got, err := st.Search(context.Background(), "v")
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("Search of %d keys took %v", len(got), time.Since(start))
			if len(got) != len(want) {
				t.Errorf("Search(v) returned %d entries, want %d", len(got), len(want))
			}
			for i, e := range got {
				if i > 0 && got[i-1].Name >= e.Name {
					t.Errorf("Search(v) not sorted: %q before %q", got[i-1].Name, e.Name)
				}
				if w, ok := want[e.Name]; !ok || zmaptest.WithoutTimes([]zmap.Entry{e})[0] != w {
					t.Errorf("Search(v) entry %+v, want %+v", e, w)
				}
			}
		})
	}
}

// TestListFlat checks that a flat listing of a dataset holds every key
// under it exactly once, sorted, with sizes, whatever page size cuts its
// parts, and that a limit stops it with Complete false.
func TestListFlat(t *testing.T) {
	srv := miniotest.Start(t)
	useServerEnv(t, srv)
	srv.CreateBucket(t, "flat")
	objects := map[string][]byte{
		"ds/.zgroup":   []byte(`{"zarr_format": 2}`),
		"ds/.zattrs":   []byte(`{}`),
		"ds/v/.zarray": []byte(`{}`), "ds/v/sub/0.0.0": []byte("deeper"),
		"ds/a/x": []byte("x"), "ds/~z": []byte("z"), "ds/-": []byte("-"),
		"outside/x": []byte("not listed"), "ds2/x": []byte("not listed"),
	}
	for i := range 300 {
		objects[fmt.Sprintf("ds/v/%d.%d", i/10, i%10)] = bytes.Repeat([]byte{1}, 1+i%5)
		objects[fmt.Sprintf("ds/g%03d/.zarray", i)] = []byte(`{}`)
	}
	srv.Put(t, "flat", objects)
	want := map[string]int64{}
	for k, v := range objects {
		if name, ok := strings.CutPrefix(k, "ds/"); ok {
			want[name] = int64(len(v))
		}
	}
	st := open(t, srv, "flat", "ds", s3.Options{})
	for _, page := range []int32{1000, 37, 2} {
		t.Run(fmt.Sprint("page ", page), func(t *testing.T) {
			defer s3.SetListPageSize(page)()
			got, err := st.ListFlat(context.Background(), "", 0)
			if err != nil {
				t.Fatal(err)
			}
			if !got.Complete || len(got.Entries) != len(want) {
				t.Fatalf("ListFlat: complete %v, %d entries, want %d", got.Complete, len(got.Entries), len(want))
			}
			if min := (len(want) + int(page) - 1) / int(page); got.Requests < min {
				t.Errorf("ListFlat says %d requests; %d keys take at least %d pages", got.Requests, len(want), min)
			}
			for i, e := range got.Entries {
				if i > 0 && got.Entries[i-1].Name >= e.Name {
					t.Errorf("not sorted: %q before %q", got.Entries[i-1].Name, e.Name)
				}
				if size, ok := want[e.Name]; !ok || size != e.Size || e.Dir || e.ModTime.IsZero() {
					t.Errorf("entry %+v, want size %d (listed %v) and a time", e, size, ok)
				}
			}
			under, err := st.ListFlat(context.Background(), "v", 0)
			if err != nil || !under.Complete || len(under.Entries) != 302 {
				t.Errorf("ListFlat(v): %d entries, complete %v, %v; want 302", len(under.Entries), under.Complete, err)
			}
			limited, err := st.ListFlat(context.Background(), "", 100)
			if err != nil || limited.Complete || limited.Entries != nil {
				t.Errorf("ListFlat with limit 100: complete %v, %d entries, %v; want incomplete and none", limited.Complete, len(limited.Entries), err)
			}
		})
	}
}

// TestWrongCredentials checks that refused credentials give errors that
// wrap zmap.ErrPermission, name the key and the credentials' source, and
// never contain the secret.
func TestWrongCredentials(t *testing.T) {
	srv := miniotest.Start(t)
	useServerEnv(t, srv)
	srv.CreateBucket(t, "private")
	srv.Put(t, "private", map[string][]byte{"ds/.zgroup": []byte(`{"zarr_format": 2}`)})
	loc, err := s3.ParseURL(srv.Endpoint + "/private/ds")
	if err != nil {
		t.Fatal(err)
	}
	const badSecret = "not-the-right-secret-9f3a"

	t.Run("wrong secret", func(t *testing.T) {
		t.Setenv("AWS_SECRET_ACCESS_KEY", badSecret)
		_, err := s3.Open(context.Background(), loc, s3.Options{})
		checkDenied(t, err, badSecret, "environment")
	})
	t.Run("unknown access key", func(t *testing.T) {
		t.Setenv("AWS_ACCESS_KEY_ID", "NOSUCHKEY")
		t.Setenv("AWS_SECRET_ACCESS_KEY", badSecret)
		_, err := s3.Open(context.Background(), loc, s3.Options{})
		checkDenied(t, err, badSecret, "environment")
	})
	t.Run("anonymous read of a private bucket", func(t *testing.T) {
		var logBuf bytes.Buffer
		logger := slog.New(slog.NewTextHandler(&syncWriter{w: &logBuf}, &slog.HandlerOptions{Level: slog.LevelDebug}))
		// Listing is refused, but that alone does not fail Open: some
		// buckets allow reads and not listing.
		st, err := s3.Open(context.Background(), loc, s3.Options{NoSignRequest: true, Logger: logger})
		if err != nil {
			t.Fatalf("Open anonymous: %v", err)
		}
		defer st.Close()
		_, err = st.Get(context.Background(), ".zgroup")
		checkDenied(t, err, miniotest.Password, "anonymous")
		_, err = st.ReadAt(context.Background(), ".zgroup", make([]byte, 4), 0)
		checkDenied(t, err, miniotest.Password, "anonymous")
		_, err = st.Size(context.Background(), ".zgroup")
		checkDenied(t, err, miniotest.Password, "anonymous")
		_, err = st.Search(context.Background(), "")
		checkDenied(t, err, miniotest.Password, "anonymous")
		log := logBuf.String()
		if !strings.Contains(log, "access denied") || !strings.Contains(log, "s3://private/ds/.zgroup") || !strings.Contains(log, "anonymous") {
			t.Errorf("log does not name the key and the credentials:\n%s", log)
		}
	})
	t.Run("profile", func(t *testing.T) {
		creds := filepath.Join(t.TempDir(), "credentials")
		ini := fmt.Sprintf("[good]\naws_access_key_id = %s\naws_secret_access_key = %s\n[bad]\naws_access_key_id = %s\naws_secret_access_key = %s\n",
			miniotest.User, miniotest.Password, miniotest.User, badSecret)
		if err := os.WriteFile(creds, []byte(ini), 0o600); err != nil {
			t.Fatal(err)
		}
		t.Setenv("AWS_SHARED_CREDENTIALS_FILE", creds)
		os.Unsetenv("AWS_ACCESS_KEY_ID")
		os.Unsetenv("AWS_SECRET_ACCESS_KEY")

		// The profile from Options, then from the URL fragment.
		st, err := s3.Open(context.Background(), loc, s3.Options{Profile: "good"})
		if err != nil {
			t.Fatalf("Open with profile good: %v", err)
		}
		if c := st.Credentials(); !strings.Contains(c, `profile "good"`) {
			t.Errorf("Credentials() = %q, want it to name profile good", c)
		}
		if _, err := st.Get(context.Background(), ".zgroup"); err != nil {
			t.Errorf("Get with profile good: %v", err)
		}
		st.Close()
		badLoc := loc
		badLoc.Profile = "bad"
		_, err = s3.Open(context.Background(), badLoc, s3.Options{})
		checkDenied(t, err, badSecret, `profile "bad"`)
		_, err = s3.Open(context.Background(), loc, s3.Options{Profile: "missing"})
		if err == nil || !strings.Contains(err.Error(), "missing") {
			t.Errorf("Open with an unknown profile: %v, want an error naming it", err)
		}
	})
}

func checkDenied(t *testing.T, err error, secret, source string) {
	t.Helper()
	if !errors.Is(err, zmap.ErrPermission) {
		t.Errorf("error %v does not wrap zmap.ErrPermission", err)
		return
	}
	if errors.Is(err, zmap.ErrNotFound) {
		t.Errorf("error %v wraps zmap.ErrNotFound too", err)
	}
	msg := err.Error()
	if strings.Contains(msg, secret) {
		t.Errorf("error %q contains the secret", msg)
	}
	if !strings.Contains(msg, source) {
		t.Errorf("error %q does not name the credentials source %q", msg, source)
	}
	t.Logf("%v", err)
}

// syncWriter serializes writes from concurrent log calls.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.w.Write(p)
}

// TestOpenErrors checks that Open says clearly what is wrong.
func TestOpenErrors(t *testing.T) {
	srv := miniotest.Start(t)
	useServerEnv(t, srv)
	ctx := context.Background()

	loc, _ := s3.ParseURL(srv.Endpoint + "/no-such-bucket/ds")
	_, err := s3.Open(ctx, loc, s3.Options{})
	if err == nil || !strings.Contains(err.Error(), `bucket "no-such-bucket" does not exist`) {
		t.Errorf("Open of a missing bucket: %v", err)
	}
	if errors.Is(err, zmap.ErrNotFound) {
		t.Errorf("a missing bucket must not read as a missing object: %v", err)
	}

	// Nothing listens on a port we just closed.
	down := miniotest.Start(t)
	down.Stop()
	loc, _ = s3.ParseURL(down.Endpoint + "/bucket/ds")
	_, err = s3.Open(ctx, loc, s3.Options{Timeout: 2 * time.Second})
	if err == nil || !strings.Contains(err.Error(), "cannot reach "+down.Endpoint) {
		t.Errorf("Open of an unreachable endpoint: %v", err)
	}

	// --endpoint-url with an s3:// URL.
	srv.CreateBucket(t, "viaflag")
	srv.Put(t, "viaflag", map[string][]byte{"ds/.zgroup": []byte("{}")})
	loc, _ = s3.ParseURL("s3://viaflag/ds")
	st, err := s3.Open(ctx, loc, s3.Options{EndpointURL: srv.Endpoint})
	if err != nil {
		t.Fatalf("Open with EndpointURL: %v", err)
	}
	defer st.Close()
	if b, err := st.Get(ctx, ".zgroup"); err != nil || string(b) != "{}" {
		t.Errorf("Get through EndpointURL = %q, %v", b, err)
	}
	if _, err := s3.Open(ctx, loc, s3.Options{EndpointURL: "127.0.0.1:9000"}); err == nil {
		t.Errorf("Open with an endpoint URL without scheme succeeded")
	}
	t.Setenv(s3.TimeoutEnv, "soon")
	if _, err := s3.Open(ctx, loc, s3.Options{EndpointURL: srv.Endpoint}); err == nil || !strings.Contains(err.Error(), s3.TimeoutEnv) {
		t.Errorf("Open with %s=soon: %v, want an error naming the variable", s3.TimeoutEnv, err)
	}
	if _, err := s3.Open(ctx, loc, s3.Options{EndpointURL: srv.Endpoint, Timeout: time.Second}); err != nil {
		t.Errorf("Options.Timeout does not override %s: %v", s3.TimeoutEnv, err)
	}
}

// TestCABundle talks https to a server whose certificate is signed by a CA
// that only AWS_CA_BUNDLE names: the SDK's default HTTP client must pick it
// up, and without it the error must say the certificate is not trusted.
func TestCABundle(t *testing.T) {
	srv := miniotest.StartTLS(t)
	useServerEnv(t, srv) // sets AWS_CA_BUNDLE to the server's CA
	srv.CreateBucket(t, "tls")
	srv.Put(t, "tls", map[string][]byte{"ds/.zgroup": []byte(`{"zarr_format": 2}`)})
	ctx := context.Background()
	loc, err := s3.ParseURL(srv.Endpoint + "/tls/ds#mode=nczarr,s3")
	if err != nil {
		t.Fatal(err)
	}

	st, err := s3.Open(ctx, loc, s3.Options{})
	if err != nil {
		t.Fatalf("Open with AWS_CA_BUNDLE=%s: %v", os.Getenv("AWS_CA_BUNDLE"), err)
	}
	if b, err := st.Get(ctx, ".zgroup"); err != nil || string(b) != `{"zarr_format": 2}` {
		t.Errorf("Get over https = %q, %v", b, err)
	}
	st.Close()

	// A plain http server with the bundle set: the bundle must not get in
	// the way (with a hand-made HTTP client the SDK fails on it).
	plain := miniotest.Start(t)
	plain.CreateBucket(t, "plain")
	plain.Put(t, "plain", map[string][]byte{"ds/.zgroup": []byte("{}")})
	st = open(t, plain, "plain", "ds", s3.Options{})
	if b, err := st.Get(ctx, ".zgroup"); err != nil || string(b) != "{}" {
		t.Errorf("Get over http with AWS_CA_BUNDLE set = %q, %v", b, err)
	}

	os.Unsetenv("AWS_CA_BUNDLE")
	_, err = s3.Open(ctx, loc, s3.Options{Timeout: 5 * time.Second})
	if err == nil || !strings.Contains(err.Error(), "certificate is not trusted") {
		t.Errorf("Open without the CA: %v, want a certificate error", err)
	}
}

// TestOutage stops and freezes the server under an open Store: reads fail
// within the timeout (never hang, never read as missing objects), and the
// same Store works again once the server is back.
func TestOutage(t *testing.T) {
	srv := miniotest.Start(t)
	useServerEnv(t, srv)
	srv.CreateBucket(t, "fault")
	data := bytes.Repeat([]byte("0123456789"), 1000)
	srv.Put(t, "fault", map[string][]byte{"ds/.zgroup": []byte("{}"), "ds/v/0.0": data})
	ctx := context.Background()
	const timeout = 2 * time.Second
	st := open(t, srv, "fault", "ds", s3.Options{Timeout: timeout})

	readOK := func(when string) {
		t.Helper()
		p := make([]byte, 100)
		if n, err := st.ReadAt(ctx, "v/0.0", p, 5); err != nil || !bytes.Equal(p[:n], data[5:105]) {
			t.Fatalf("ReadAt %s = %d, %v", when, n, err)
		}
		if got, err := st.Search(ctx, "v"); err != nil || len(got) != 1 {
			t.Fatalf("Search %s = %v, %v", when, got, err)
		}
	}
	checkDown := func(what string, err error) {
		t.Helper()
		if err == nil {
			t.Errorf("%s succeeded with the server down", what)
			return
		}
		if errors.Is(err, zmap.ErrNotFound) || errors.Is(err, zmap.ErrPermission) {
			t.Errorf("%s with the server down: %v; want an I/O error, not not-found or permission", what, err)
		}
		// A transport errno (ECONNREFUSED) must not surface: a FUSE
		// layer would hand it to read(2) instead of EIO.
		var errno syscall.Errno
		if errors.As(err, &errno) {
			t.Errorf("%s with the server down: %v unwraps to errno %v", what, err, errno)
		}
	}
	readOK("before the outage")

	t.Run("frozen server", func(t *testing.T) {
		srv.Pause(t)
		start := time.Now()
		_, err := st.ReadAt(ctx, "v/0.0", make([]byte, 100), 0)
		t.Logf("ReadAt on a frozen server failed after %v: %v", time.Since(start), err)
		checkDown("ReadAt", err)
		// It was the timeout that ended the read.
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("ReadAt on a frozen server: %v, want an error wrapping context.DeadlineExceeded", err)
		}
		_, err = st.Get(ctx, "v/0.0")
		checkDown("Get", err)
		srv.Resume(t)
		readOK("after the server resumed")
	})

	t.Run("stopped server", func(t *testing.T) {
		srv.Stop()
		start := time.Now()
		_, err := st.ReadAt(ctx, "v/0.0", make([]byte, 100), 0)
		t.Logf("ReadAt on a stopped server failed after %v: %v", time.Since(start), err)
		checkDown("ReadAt", err)
		_, err = st.Size(ctx, "v/0.0")
		checkDown("Size", err)
		_, err = st.Search(ctx, "v")
		checkDown("Search", err)
		srv.Start(t)
		readOK("after a restart")
	})

	t.Run("restart during retries", func(t *testing.T) {
		// A request that fails while the server is down is retried with
		// backoff; a server back before the retries run out serves it.
		retried := make(chan struct{})
		var once sync.Once
		logger := slog.New(&notifyHandler{msg: "s3: retrying request", fn: func() { once.Do(func() { close(retried) }) }})
		st := open(t, srv, "fault", "ds", s3.Options{Timeout: 60 * time.Second, MaxAttempts: 50, Logger: logger})
		srv.Stop()
		type result struct {
			b   []byte
			err error
		}
		done := make(chan result, 1)
		go func() {
			b, err := st.Get(ctx, "v/0.0")
			done <- result{b, err}
		}()
		select {
		case <-retried:
		case r := <-done:
			t.Fatalf("Get with the server down returned before retrying: %v", r.err)
		}
		srv.Start(t)
		if r := <-done; r.err != nil || !bytes.Equal(r.b, data) {
			t.Errorf("Get retried across a restart = %d bytes, %v", len(r.b), r.err)
		}
	})
}

// notifyHandler is a slog.Handler that calls fn for every record with
// message msg.
type notifyHandler struct {
	msg string
	fn  func()
}

func (h *notifyHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *notifyHandler) Handle(_ context.Context, r slog.Record) error {
	if r.Message == h.msg {
		h.fn()
	}
	return nil
}
func (h *notifyHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *notifyHandler) WithGroup(string) slog.Handler      { return h }

// BenchmarkGet measures the latency of one small GetObject (a chunk).
func BenchmarkGet(b *testing.B) {
	srv, st := benchStore(b)
	_ = srv
	ctx := context.Background()
	b.ResetTimer()
	for b.Loop() {
		if _, err := st.Get(ctx, "v/0.0"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReadAt measures one ranged GetObject of 4 KiB.
func BenchmarkReadAt(b *testing.B) {
	_, st := benchStore(b)
	ctx := context.Background()
	p := make([]byte, 4096)
	b.ResetTimer()
	for b.Loop() {
		if _, err := st.ReadAt(ctx, "v/0.0", p, 1000); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReadAtParallel measures ranged reads from several goroutines.
func BenchmarkReadAtParallel(b *testing.B) {
	_, st := benchStore(b)
	ctx := context.Background()
	b.RunParallel(func(pb *testing.PB) {
		p := make([]byte, 4096)
		for pb.Next() {
			if _, err := st.ReadAt(ctx, "v/0.0", p, 1000); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

func benchStore(b *testing.B) (*miniotest.Server, *s3.Store) {
	b.Helper()
	srv := miniotest.Start(b)
	for _, kv := range srv.Env() {
		k, v, _ := strings.Cut(kv, "=")
		b.Setenv(k, v)
	}
	srv.CreateBucket(b, "bench")
	srv.Put(b, "bench", map[string][]byte{"ds/.zgroup": []byte("{}"), "ds/v/0.0": bytes.Repeat([]byte{7}, 64<<10)})
	return srv, open(b, srv, "bench", "ds", s3.Options{})
}

// TestETag checks that listings (by folder and flat) and Stat give each
// object's ETag, without quotes: for an object written in one part, the
// MD5 of its bytes, as S3 and MinIO make it. A rewritten object has
// another.
func TestETag(t *testing.T) {
	srv := miniotest.Start(t)
	useServerEnv(t, srv)
	srv.CreateBucket(t, "etag")
	objects := map[string][]byte{"ds/v/0": []byte("first"), "ds/v/1": []byte("second")}
	srv.Put(t, "etag", objects)
	st := open(t, srv, "etag", "ds", s3.Options{})
	ctx := context.Background()
	check := func(what string) {
		t.Helper()
		listed, err := st.Search(ctx, "v")
		if err != nil {
			t.Fatal(err)
		}
		flat, err := st.ListFlat(ctx, "", 0)
		if err != nil {
			t.Fatal(err)
		}
		for i, e := range listed {
			key := "v/" + e.Name
			sum := md5.Sum(objects["ds/"+key])
			want := hex.EncodeToString(sum[:])
			stat, err := st.Stat(ctx, key)
			if err != nil {
				t.Fatal(err)
			}
			if e.ETag != want || stat.ETag != want || flat.Entries[i].ETag != want || flat.Entries[i].Name != key {
				t.Errorf("%s: ETag of %s: listed %q, stat %q, listed flat %+v; want %q", what, key, e.ETag, stat.ETag, flat.Entries[i], want)
			}
		}
	}
	check("as written")
	objects["ds/v/0"] = []byte("rewritten")
	srv.Put(t, "etag", map[string][]byte{"ds/v/0": objects["ds/v/0"]})
	check("rewritten")
}
