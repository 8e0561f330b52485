package s3_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/nczarrfs/nczarrfs/internal/miniotest"
	"github.com/nczarrfs/nczarrfs/zmap"
	"github.com/nczarrfs/nczarrfs/zmap/s3"
	"github.com/nczarrfs/nczarrfs/zmap/zmaptest"
)

// useHMACProfile keeps srv's keys only in a shared credentials file, under
// profile "hmac", as Google's HMAC keys are kept: only a store that names
// the profile signs its requests.
func useHMACProfile(t *testing.T, srv *miniotest.Server) {
	t.Helper()
	useServerEnv(t, srv)
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

// openGoogle opens gs://bucket/prefix with the endpoint replaced by ep.
func openGoogle(t testing.TB, ep, bucket, prefix string, opts s3.Options) (*s3.Store, error) {
	t.Helper()
	loc, err := s3.ParseURL("gs://" + bucket + "/" + prefix)
	if err != nil {
		t.Fatal(err)
	}
	opts.EndpointURL = ep
	st, err := s3.Open(context.Background(), loc, opts)
	if err == nil {
		t.Cleanup(func() { st.Close() })
	}
	return st, err
}

// TestGoogleConformance runs the zmap suite over gs:// URLs, with MinIO
// in the place of Google's endpoint and HMAC keys from a profile.
func TestGoogleConformance(t *testing.T) {
	srv := miniotest.Start(t)
	useHMACProfile(t, srv)
	n := 0
	zmaptest.Run(t, func(t *testing.T, objects map[string][]byte) zmap.Store {
		n++
		bucket := fmt.Sprintf("google-%d", n)
		srv.CreateBucket(t, bucket)
		keyed := map[string][]byte{}
		for k, v := range objects {
			keyed["ds/"+k] = v
		}
		srv.Put(t, bucket, keyed)
		st, err := openGoogle(t, srv.Endpoint, bucket, "ds", s3.Options{Profile: "hmac"})
		if err != nil {
			t.Fatal(err)
		}
		return st
	})
}

// recorder is a reverse proxy in front of srv that keeps the headers of
// every request it passes on.
type recorder struct {
	*httptest.Server
	mu      sync.Mutex
	headers []http.Header
}

func startRecorder(t *testing.T, target string) *recorder {
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	rp := &httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) {
		pr.SetURL(u)
		pr.Out.Host = pr.In.Host // the host the client signed
	}}
	rec.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec.mu.Lock()
		rec.headers = append(rec.headers, r.Header.Clone())
		rec.mu.Unlock()
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(rec.Close)
	return rec
}

// take returns the headers recorded so far and forgets them.
func (r *recorder) take() []http.Header {
	r.mu.Lock()
	defer r.mu.Unlock()
	h := r.headers
	r.headers = nil
	return h
}

// signedHeaders returns the SignedHeaders of a SigV4 Authorization
// header, "" when the request is not signed.
func signedHeaders(h http.Header) string {
	_, rest, ok := strings.Cut(h.Get("Authorization"), "SignedHeaders=")
	if !ok {
		return ""
	}
	v, _, _ := strings.Cut(rest, ",")
	return v
}

// TestGoogleSigning checks what a gs:// store sends: with HMAC keys, every
// request is signed but not its Accept-Encoding (Google's front end
// rewrites it; aws-sdk-go-v2 issue 1816), which is still sent, while an
// s3:// store signs it as before; without a profile, requests are
// anonymous, denied on a private bucket with a message that says so, and
// answered on a public one.
func TestGoogleSigning(t *testing.T) {
	srv := miniotest.Start(t)
	useHMACProfile(t, srv)
	srv.CreateBucket(t, "sign")
	srv.Put(t, "sign", map[string][]byte{"ds/.zgroup": []byte(`{"zarr_format": 2}`), "ds/v/0": []byte("chunk")})
	rec := startRecorder(t, srv.Endpoint)
	ctx := context.Background()

	st, err := openGoogle(t, rec.URL, "sign", "ds", s3.Options{Profile: "hmac"})
	if err != nil {
		t.Fatal(err)
	}
	rec.take()
	if b, err := st.Get(ctx, "v/0"); err != nil || string(b) != "chunk" {
		t.Fatalf("Get with HMAC keys = %q, %v", b, err)
	}
	if _, err := st.Search(ctx, ""); err != nil {
		t.Fatal(err)
	}
	for _, h := range rec.take() {
		signed := signedHeaders(h)
		if signed == "" || strings.Contains(signed, "accept-encoding") {
			t.Errorf("gs:// request signed %q; want signed, without accept-encoding", signed)
		}
		if h.Get("Accept-Encoding") == "" {
			t.Errorf("gs:// request sent no Accept-Encoding; it is left out of the signature only")
		}
	}

	// The same request to S3 signs Accept-Encoding: the check above can
	// fail.
	loc, err := s3.ParseURL(rec.URL + "/sign/ds")
	if err != nil {
		t.Fatal(err)
	}
	plain, err := s3.Open(ctx, loc, s3.Options{Profile: "hmac"})
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	rec.take()
	if _, err := plain.Get(ctx, "v/0"); err != nil {
		t.Fatal(err)
	}
	if signed := signedHeaders(rec.take()[0]); !strings.Contains(signed, "accept-encoding") {
		t.Errorf("s3 request signed %q; the SDK signs accept-encoding", signed)
	}

	// Anonymous by default: a private bucket denies, and says why.
	anon, err := openGoogle(t, rec.URL, "sign", "ds", s3.Options{})
	if err != nil {
		t.Fatalf("Open of a private bucket without keys: %v (listing denied is not an error)", err)
	}
	rec.take()
	_, err = anon.Get(ctx, "v/0")
	if !errors.Is(err, zmap.ErrPermission) || !strings.Contains(err.Error(), "anonymous") || !strings.Contains(err.Error(), "gs://sign/ds/v/0") {
		t.Errorf("anonymous Get from a private bucket: %v; want a permission error naming anonymous requests and the gs:// URL", err)
	}
	for _, h := range rec.take() {
		if h.Get("Authorization") != "" {
			t.Errorf("anonymous request carries Authorization %q", h.Get("Authorization"))
		}
	}
	// A public bucket answers anonymous requests.
	policy := `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"AWS":["*"]},"Action":["s3:GetObject","s3:ListBucket"],"Resource":["arn:aws:s3:::sign","arn:aws:s3:::sign/*"]}]}`
	if _, err := srv.Client(t).PutBucketPolicy(ctx, &awss3.PutBucketPolicyInput{Bucket: aws.String("sign"), Policy: aws.String(policy)}); err != nil {
		t.Fatal(err)
	}
	if b, err := anon.Get(ctx, "v/0"); err != nil || string(b) != "chunk" {
		t.Errorf("anonymous Get from a public bucket = %q, %v", b, err)
	}
	if e, err := anon.Search(ctx, ""); err != nil || len(e) != 2 {
		t.Errorf("anonymous Search of a public bucket = %v, %v; want .zgroup and v", e, err)
	}
}
