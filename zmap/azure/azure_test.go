package azure_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nczarrfs/nczarrfs/internal/azuritetest"
	"github.com/nczarrfs/nczarrfs/zmap"
	"github.com/nczarrfs/nczarrfs/zmap/azure"
	"github.com/nczarrfs/nczarrfs/zmap/zmaptest"
)

// env is an environment of the given NAME=value pairs and nothing else,
// for Options.Getenv: nothing from the machine running the tests leaks in.
func env(kv ...string) func(string) string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) string { return m[k] }
}

// keyEnv gives the server's account name and key.
func keyEnv() func(string) string {
	return env(azure.AccountEnv, azuritetest.Account, azure.KeyEnv, azuritetest.Key)
}

// open opens a Store on srv for az://container/prefix with opts (its
// endpoint set to srv's, its environment keyEnv's unless given), failing t
// on error.
func open(t testing.TB, srv *azuritetest.Server, container, prefix string, opts azure.Options) *azure.Store {
	t.Helper()
	loc, err := azure.ParseURL("az://" + container + "/" + prefix)
	if err != nil {
		t.Fatal(err)
	}
	if opts.EndpointURL == "" {
		opts.EndpointURL = srv.Endpoint
	}
	if opts.Getenv == nil {
		opts.Getenv = keyEnv()
	}
	st, err := azure.Open(context.Background(), loc, opts)
	if err != nil {
		t.Fatalf("Open(%+v): %v", loc, err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// TestConformance runs the zmap conformance suite over Azurite, with the
// dataset under a prefix and at the root of a container.
func TestConformance(t *testing.T) {
	srv := azuritetest.Start(t)
	for _, prefix := range []string{"datasets/rich", ""} {
		t.Run(fmt.Sprintf("prefix=%q", prefix), func(t *testing.T) {
			n := 0
			zmaptest.Run(t, func(t *testing.T, objects map[string][]byte) zmap.Store {
				n++
				name := fmt.Sprintf("conformance-%d-%d", len(prefix), n)
				srv.CreateContainer(t, name, azuritetest.Private)
				keyed := make(map[string][]byte, len(objects))
				for k, v := range objects {
					keyed[zmap.Join(prefix, k)] = v
				}
				if prefix != "" {
					// A sibling of the prefix that must stay invisible.
					keyed[zmap.Join(prefix+"-sibling", ".zgroup")] = []byte("{}")
				}
				if len(keyed) > 0 {
					srv.Put(t, name, keyed)
				}
				return open(t, srv, name, prefix, azure.Options{})
			})
		})
	}
}

// TestTimeoutEnv: Options.Timeout, else NCZARRFS_TIMEOUT, else
// NCZARRFS_S3_TIMEOUT, else DefaultTimeout bounds each operation; a value
// that is not a duration fails Open.
func TestTimeoutEnv(t *testing.T) {
	srv := azuritetest.Start(t)
	srv.CreateContainer(t, "timeouts", azuritetest.Private)
	withKey := func(kv ...string) func(string) string {
		return env(append([]string{azure.AccountEnv, azuritetest.Account, azure.KeyEnv, azuritetest.Key}, kv...)...)
	}
	for _, tt := range []struct {
		opts azure.Options
		want time.Duration
	}{
		{azure.Options{Getenv: withKey()}, azure.DefaultTimeout},
		{azure.Options{Getenv: withKey("NCZARRFS_S3_TIMEOUT", "7s")}, 7 * time.Second},
		{azure.Options{Getenv: withKey("NCZARRFS_TIMEOUT", "5s", "NCZARRFS_S3_TIMEOUT", "7s")}, 5 * time.Second},
		{azure.Options{Getenv: withKey("NCZARRFS_TIMEOUT", "5s"), Timeout: 3 * time.Second}, 3 * time.Second},
	} {
		if got := open(t, srv, "timeouts", "", tt.opts).Timeout(); got != tt.want {
			t.Errorf("Timeout() = %v, want %v", got, tt.want)
		}
	}
	loc, _ := azure.ParseURL("az://timeouts")
	_, err := azure.Open(context.Background(), loc, azure.Options{EndpointURL: srv.Endpoint, Getenv: withKey("NCZARRFS_TIMEOUT", "soon")})
	if err == nil || !strings.Contains(err.Error(), `NCZARRFS_TIMEOUT="soon"`) {
		t.Errorf("Open with NCZARRFS_TIMEOUT=soon: %v", err)
	}
}
