package azure_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/nczarrfs/nczarrfs/internal/azuritetest"
	"github.com/nczarrfs/nczarrfs/zmap"
	"github.com/nczarrfs/nczarrfs/zmap/azure"
)

// TestBadInput opens stores that cannot work: each fails at Open, at once
// (a 403 is not tried again), with one line that says why.
func TestBadInput(t *testing.T) {
	srv := azuritetest.Start(t)
	srv.CreateContainer(t, "private", azuritetest.Private)
	srv.Put(t, "private", map[string][]byte{"ds/.zgroup": []byte(`{"zarr_format":2}`)})
	// A key of the right form that is not the account's.
	wrongKey := "d3Jvbmcta2V5LWZvci10aGUtdGVzdHMtb25seS0wMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDA="
	type badCase struct {
		name      string
		container string
		opts      azure.Options
		want      []string // parts of the message
		kind      error
	}
	tests := []badCase{
		{name: "wrong key", container: "private",
			opts: azure.Options{Getenv: env(azure.AccountEnv, azuritetest.Account, azure.KeyEnv, wrongKey)},
			want: []string{"access denied", "not accepted", "AZURE_STORAGE_ACCOUNT and AZURE_STORAGE_KEY (account devstoreaccount1)"},
			kind: zmap.ErrPermission},
		{name: "wrong key in a connection string", container: "private",
			opts: azure.Options{Getenv: env(azure.ConnectionStringEnv, "AccountName="+azuritetest.Account+";AccountKey="+wrongKey+";BlobEndpoint="+srv.Endpoint)},
			want: []string{"access denied", "AZURE_STORAGE_CONNECTION_STRING (account devstoreaccount1)"},
			kind: zmap.ErrPermission},
		{name: "missing container", container: "nosuch",
			want: []string{`container "nosuch" does not exist at ` + srv.Endpoint}},
	}
	// Servers that are not a blob service: a web server that answers
	// every request with a page, and one that answers 404 to all.
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "<html><body>It works!</body></html>")
	}))
	t.Cleanup(page.Close)
	notFound := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(notFound.Close)
	tests = append(tests,
		badCase{name: "a web server", container: "private", opts: azure.Options{EndpointURL: page.URL + "/acct"},
			want: []string{"not a blob service", page.URL}},
		badCase{name: "a server that answers 404", container: "private", opts: azure.Options{EndpointURL: notFound.URL + "/acct"},
			want: []string{"not a blob service", notFound.URL}},
	)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			loc, err := azure.ParseURL("az://" + tt.container + "/ds")
			if err != nil {
				t.Fatal(err)
			}
			if tt.opts.EndpointURL == "" {
				tt.opts.EndpointURL = srv.Endpoint
			}
			if tt.opts.Getenv == nil {
				tt.opts.Getenv = keyEnv()
			}
			tt.opts.Timeout = 20 * time.Second
			st, err := azure.Open(context.Background(), loc, tt.opts)
			if err == nil {
				st.Close()
				t.Fatal("Open succeeded")
			}
			msg := err.Error()
			t.Logf("Open: %v", msg)
			for _, w := range tt.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q does not say %q", msg, w)
				}
			}
			if strings.Contains(msg, "\n") || strings.Contains(msg, wrongKey) || strings.Contains(msg, azuritetest.Key) {
				t.Errorf("error %q is not one line without a secret", msg)
			}
			if tt.kind != nil && !errors.Is(err, tt.kind) {
				t.Errorf("error %v does not wrap %v", err, tt.kind)
			}
		})
	}
}

// TestAnonymous reads containers without credentials: a public one lists
// and reads; one whose blobs only are public refuses the listing (which
// Open lets pass) but reads; a private one refuses reads with
// ErrPermission and a message that says the requests were anonymous.
func TestAnonymous(t *testing.T) {
	srv := azuritetest.Start(t)
	blobs := map[string][]byte{"ds/.zgroup": []byte(`{"zarr_format":2}`)}
	for name, access := range map[string]azuritetest.Access{"private": azuritetest.Private, "pubblob": azuritetest.PublicBlob, "pubcont": azuritetest.PublicContainer} {
		srv.CreateContainer(t, name, access)
		srv.Put(t, name, blobs)
	}
	ctx := context.Background()
	for _, anon := range []azure.Options{
		{Getenv: env()},
		{Getenv: keyEnv(), Anonymous: true}, // --no-sign-request
	} {
		pub := open(t, srv, "pubcont", "ds", anon)
		if got, err := pub.Get(ctx, ".zgroup"); err != nil || string(got) != string(blobs["ds/.zgroup"]) {
			t.Errorf("public container: Get = %q, %v", got, err)
		}
		if entries, err := pub.Search(ctx, ""); err != nil || len(entries) != 1 || entries[0].Name != ".zgroup" {
			t.Errorf("public container: Search = %v, %v", entries, err)
		}
		if !strings.Contains(pub.Credentials(), "anonymous") {
			t.Errorf("Credentials() = %q, want anonymous", pub.Credentials())
		}

		blobOnly := open(t, srv, "pubblob", "ds", anon)
		if got, err := blobOnly.Get(ctx, ".zgroup"); err != nil || string(got) != string(blobs["ds/.zgroup"]) {
			t.Errorf("public blobs: Get = %q, %v", got, err)
		}
		if _, err := blobOnly.Get(ctx, "missing"); !errors.Is(err, zmap.ErrNotFound) {
			t.Errorf("public blobs: Get of a missing blob: %v, want ErrNotFound", err)
		}
		if _, err := blobOnly.Search(ctx, ""); !errors.Is(err, zmap.ErrPermission) {
			t.Errorf("public blobs: Search: %v, want ErrPermission", err)
		}

		private := open(t, srv, "private", "ds", anon)
		_, err := private.Get(ctx, ".zgroup")
		if !errors.Is(err, zmap.ErrPermission) || errors.Is(err, zmap.ErrNotFound) || !strings.Contains(err.Error(), "anonymous") || strings.Contains(err.Error(), "\n") {
			t.Errorf("private container: Get: %v, want one line, ErrPermission, saying anonymous", err)
		}
	}
}

// TestSASNotShown: a SAS token in the URL appears in no error, whether the
// endpoint refuses the connection or answers 403.
func TestSASNotShown(t *testing.T) {
	srv := azuritetest.Start(t)
	srv.CreateContainer(t, "private", azuritetest.Private)
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close() // its port now refuses connections
	const sig = "c2VjcmV0LXNpZ25hdHVyZQ"
	loc, err := azure.ParseURL("https://acct.blob.core.windows.net/private/ds?sv=2024-01-01&sp=rl&sig=" + sig)
	if err != nil {
		t.Fatal(err)
	}
	for _, ep := range []string{closed.URL + "/acct", srv.Endpoint} {
		_, err := azure.Open(context.Background(), loc, azure.Options{EndpointURL: ep, Getenv: env(), Timeout: 2 * time.Second})
		if err == nil {
			t.Fatalf("Open through %s succeeded", ep)
		}
		t.Logf("Open through %s: %v", ep, err)
		if strings.Contains(err.Error(), sig) || strings.Contains(err.Error(), "\n") {
			t.Errorf("error %q shows the SAS or is more than one line", err)
		}
	}
}
