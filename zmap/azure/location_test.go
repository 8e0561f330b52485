package azure

import (
	"strings"
	"testing"
)

func TestLocationOf(t *testing.T) {
	tests := []struct {
		raw     string
		want    Location
		errPart string
	}{
		{raw: "az://data/era5/t2m.zarr", want: Location{Container: "data", Prefix: "era5/t2m.zarr"}},
		{raw: "az://data", want: Location{Container: "data"}},
		{raw: "az://data/", want: Location{Container: "data"}},
		{raw: "abfs://data/x", want: Location{Container: "data", Prefix: "x"}},
		{raw: "ABFSS://data/x/y/", want: Location{Container: "data", Prefix: "x/y"}},
		{raw: "abfs://data@myacct.dfs.core.windows.net/x", want: Location{Container: "data", Account: "myacct", Prefix: "x"}},
		{raw: "az://data@MyAcct.blob.core.windows.net/x", want: Location{Container: "data", Account: "myacct", Prefix: "x"}},
		{raw: "https://myacct.blob.core.windows.net/data/x/y", want: Location{Account: "myacct", Container: "data", Prefix: "x/y", Endpoint: "https://myacct.blob.core.windows.net"}},
		{raw: "https://myacct.blob.core.windows.net/data/x?sv=2024&sig=abc", want: Location{Account: "myacct", Container: "data", Prefix: "x", Endpoint: "https://myacct.blob.core.windows.net", SAS: "sv=2024&sig=abc"}},
		{raw: "https://myacct.blob.core.chinacloudapi.cn/data", want: Location{Account: "myacct", Container: "data", Endpoint: "https://myacct.blob.core.chinacloudapi.cn"}},
		{raw: "az://$root/x", want: Location{Container: "$root", Prefix: "x"}},

		{raw: "az://data/x?sig=1", errPart: "no query"},
		{raw: "az://data:443/x", errPart: "port"},
		{raw: "az://Data/x", errPart: "not a container name"},
		{raw: "az://ab/x", errPart: "not a container name"},
		{raw: "az://a--b/x", errPart: "not a container name"},
		{raw: "az:///x", errPart: "names no container"},
		{raw: "az:data", errPart: "no host"},
		{raw: "az://data/a//b", errPart: "empty"},
		{raw: "az://data/a/../b", errPart: ".."},
		{raw: "az://data:secret@acct.dfs.core.windows.net/x", errPart: "password"},
		{raw: "az://data@x.dfs.core.windows.net/x", errPart: "not a storage account"},
		{raw: "https://myacct.blob.core.windows.net/", errPart: "no container"},
		{raw: "https://u:p@myacct.blob.core.windows.net/data", errPart: "user information"},
		{raw: "https://example.org/data", errPart: "not a blob service host"},
		{raw: "gs://b/x", errPart: "not az"},
	}
	for _, tt := range tests {
		got, err := ParseURL(tt.raw)
		if tt.errPart != "" {
			if err == nil || !strings.Contains(err.Error(), tt.errPart) {
				t.Errorf("ParseURL(%q) = %+v, %v; want an error containing %q", tt.raw, got, err, tt.errPart)
			}
			if err != nil && strings.Contains(err.Error(), "secret") {
				t.Errorf("ParseURL(%q): error %q shows the password", tt.raw, err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ParseURL(%q) = %+v, %v; want %+v", tt.raw, got, err, tt.want)
		}
	}
}

func TestIsURL(t *testing.T) {
	for raw, want := range map[string]bool{
		"az://c/x":                                true,
		"abfs://c/x":                              true,
		"abfss://c@a.dfs.core.windows.net/x":      true,
		"https://acct.blob.core.windows.net/c/x":  true,
		"http://acct.blob.core.windows.net/c/x":   true,
		"https://s3.amazonaws.com/b/x":            false,
		"https://acct.dfs.core.windows.net/c/x":   false,
		"http://127.0.0.1:10000/devstoreaccount1": false,
		"s3://b/x":  false,
		"file:///x": false,
	} {
		u, err := urlParse(raw)
		if err != nil {
			t.Fatal(err)
		}
		if got := IsURL(u); got != want {
			t.Errorf("IsURL(%q) = %v, want %v", raw, got, want)
		}
	}
}

// String names the location without the SAS.
func TestLocationString(t *testing.T) {
	loc, err := ParseURL("https://myacct.blob.core.windows.net/data/x?sv=1&sig=SECRET")
	if err != nil {
		t.Fatal(err)
	}
	if got := loc.String(); got != "az://data@myacct/x" {
		t.Errorf("String() = %q, want az://data@myacct/x", got)
	}
}

// FuzzParseURL: any URL either parses to a location whose container is
// valid and whose prefix is a sequence of valid segments, or fails.
func FuzzParseURL(f *testing.F) {
	for _, s := range []string{"az://data/x", "abfs://c@acct.dfs.core.windows.net/a/b", "https://acct.blob.core.windows.net/c/p?sig=x", "az://$root", "az://a--b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		loc, err := ParseURL(raw)
		if err != nil {
			return
		}
		if validContainer(loc.Container) != nil {
			t.Fatalf("ParseURL(%q) gives container %q", raw, loc.Container)
		}
		if loc.Prefix != "" {
			if _, err := pathSegments(loc.Prefix); err != nil || strings.HasPrefix(loc.Prefix, "/") || strings.HasSuffix(loc.Prefix, "/") {
				t.Fatalf("ParseURL(%q) gives prefix %q", raw, loc.Prefix)
			}
		}
		if loc.Account != "" && !validAccount(loc.Account) {
			t.Fatalf("ParseURL(%q) gives account %q", raw, loc.Account)
		}
	})
}
