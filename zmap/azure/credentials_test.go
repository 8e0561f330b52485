package azure

import (
	"net/url"
	"strings"
	"testing"
)

var urlParse = url.Parse

// key is a well-formed (base64) account key; not a real one.
const key = "a2V5LWZvci10ZXN0cw=="

func TestResolve(t *testing.T) {
	type env map[string]string
	tests := []struct {
		name     string
		src      string
		endpoint string // --endpoint-url
		anon     bool
		env      env
		kind     credKind
		account  string
		ep       string
		source   string // a part of describe()
		errPart  string
	}{
		{name: "connection string first", src: "az://cnt/x",
			env:  env{ConnectionStringEnv: "DefaultEndpointsProtocol=https;AccountName=csacct;AccountKey=" + key + ";EndpointSuffix=core.windows.net", AccountEnv: "other", KeyEnv: key},
			kind: sharedKey, account: "csacct", ep: "https://csacct.blob.core.windows.net", source: ConnectionStringEnv + " (account csacct)"},
		{name: "connection string with BlobEndpoint", src: "az://cnt/x",
			env:  env{ConnectionStringEnv: "AccountName=devstoreaccount1;AccountKey=" + key + ";BlobEndpoint=http://127.0.0.1:10000/devstoreaccount1/;"},
			kind: sharedKey, account: "devstoreaccount1", ep: "http://127.0.0.1:10000/devstoreaccount1"},
		{name: "connection string with a SAS", src: "az://cnt/x",
			env:  env{ConnectionStringEnv: "BlobEndpoint=https://a1b.blob.core.windows.net;SharedAccessSignature=sv=1&sig=2"},
			kind: sasToken, ep: "https://a1b.blob.core.windows.net"},
		{name: "development storage", src: "az://cnt/x", env: env{ConnectionStringEnv: "UseDevelopmentStorage=true"},
			kind: sharedKey, account: "devstoreaccount1", ep: "http://127.0.0.1:10000/devstoreaccount1"},
		{name: "account and key", src: "az://cnt/x", env: env{AccountEnv: "MyAcct", KeyEnv: key, SASTokenEnv: "sig=x"},
			kind: sharedKey, account: "myacct", ep: "https://myacct.blob.core.windows.net", source: AccountEnv + " and " + KeyEnv + " (account myacct)"},
		{name: "account and key, https URL", src: "https://myacct.blob.core.windows.net/cnt/x", env: env{AccountEnv: "myacct", KeyEnv: key},
			kind: sharedKey, account: "myacct", ep: "https://myacct.blob.core.windows.net"},
		{name: "SAS from the URL before the environment's", src: "https://myacct.blob.core.windows.net/cnt/x?sv=1&sig=url", env: env{SASTokenEnv: "sv=1&sig=env"},
			kind: sasToken, account: "myacct", source: "the SAS token in the URL's query"},
		{name: "SAS from the environment", src: "az://cnt/x", env: env{AccountEnv: "myacct", SASTokenEnv: "?sv=1&sig=env"},
			kind: sasToken, account: "myacct", ep: "https://myacct.blob.core.windows.net", source: SASTokenEnv},
		{name: "anonymous", src: "https://myacct.blob.core.windows.net/cnt/x",
			kind: anonymous, account: "myacct", source: "none (anonymous requests"},
		{name: "anonymous with the account from the environment", src: "az://cnt/x", env: env{AccountEnv: "myacct"},
			kind: anonymous, account: "myacct", ep: "https://myacct.blob.core.windows.net"},
		{name: "--no-sign-request", src: "az://cnt/x", anon: true, env: env{AccountEnv: "myacct", KeyEnv: key},
			kind: anonymous, account: "myacct", source: "--no-sign-request"},
		{name: "--endpoint-url wins", src: "https://myacct.blob.core.windows.net/cnt/x", endpoint: "http://127.0.0.1:10000/devstoreaccount1/",
			kind: anonymous, account: "myacct", ep: "http://127.0.0.1:10000/devstoreaccount1"},
		{name: "--endpoint-url without an account", src: "az://cnt/x", endpoint: "http://127.0.0.1:1/acct",
			kind: anonymous, ep: "http://127.0.0.1:1/acct"},

		{name: "no account", src: "az://cnt/x", errPart: "names no storage account"},
		{name: "key not base64", src: "az://cnt/x", env: env{AccountEnv: "a1b", KeyEnv: "not base64!"}, errPart: "not base64"},
		{name: "key for another account", src: "https://myacct.blob.core.windows.net/cnt/x", env: env{AccountEnv: "other", KeyEnv: key}, errPart: `is for account "other"`},
		{name: "bad connection string", src: "az://cnt/x", env: env{ConnectionStringEnv: "garbage"}, errPart: "not a connection string"},
		{name: "connection string without a key", src: "az://cnt/x", env: env{ConnectionStringEnv: "AccountName=abc"}, errPart: "neither AccountKey"},
		{name: "connection string key without a name", src: "az://cnt/x", env: env{ConnectionStringEnv: "AccountKey=" + key}, errPart: "no AccountName"},
		{name: "connection string bad protocol", src: "az://cnt/x", env: env{ConnectionStringEnv: "DefaultEndpointsProtocol=ftp;AccountName=abc;AccountKey=" + key}, errPart: "DefaultEndpointsProtocol"},
		{name: "bad endpoint", src: "az://cnt/x", endpoint: "127.0.0.1:10000", errPart: "must look like"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			loc, err := ParseURL(strings.Replace(tt.src, "az://c/", "az://cnt/", 1))
			if err != nil {
				t.Fatal(err)
			}
			c, err := resolve(loc, tt.endpoint, tt.anon, func(k string) string { return tt.env[k] })
			if tt.errPart != "" {
				if err == nil || !strings.Contains(err.Error(), tt.errPart) {
					t.Fatalf("resolve: %v, want an error containing %q", err, tt.errPart)
				}
				if strings.Contains(err.Error(), key) {
					t.Fatalf("resolve: error %q shows the key", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.kind != tt.kind || c.account != tt.account || tt.ep != "" && c.endpoint != tt.ep {
				t.Errorf("resolve = kind %d account %q endpoint %q, want kind %d account %q endpoint %q", c.kind, c.account, c.endpoint, tt.kind, tt.account, tt.ep)
			}
			d := c.describe()
			if !strings.Contains(d, tt.source) || strings.Contains(d, key) || strings.Contains(d, "sig=") {
				t.Errorf("describe() = %q, want it to contain %q and no secret", d, tt.source)
			}
		})
	}
}

// FuzzParseConnectionString: any string parses to credentials with an
// endpoint, or fails without quoting the string (it holds a secret).
func FuzzParseConnectionString(f *testing.F) {
	for _, s := range []string{
		"DefaultEndpointsProtocol=https;AccountName=a1b;AccountKey=" + key + ";EndpointSuffix=core.windows.net",
		"BlobEndpoint=http://127.0.0.1:10000/devstoreaccount1;SharedAccessSignature=sv=1&sig=2",
		"UseDevelopmentStorage=true", ";;=;", "AccountKey==",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, cs string) {
		c, err := parseConnectionString(cs)
		if err != nil {
			if len(cs) > 8 && strings.Contains(err.Error(), cs) {
				t.Fatalf("error %q quotes the connection string", err)
			}
			return
		}
		if c.endpoint == "" || c.kind == anonymous || c.kind == sharedKey && c.account == "" {
			t.Fatalf("parseConnectionString(%q) = %+v", cs, c)
		}
	})
}
