package azure

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// The environment variables that give credentials, read in this order
// (see resolve).
const (
	ConnectionStringEnv = "AZURE_STORAGE_CONNECTION_STRING"
	AccountEnv          = "AZURE_STORAGE_ACCOUNT"
	KeyEnv              = "AZURE_STORAGE_KEY"
	SASTokenEnv         = "AZURE_STORAGE_SAS_TOKEN"
)

// credKind is how requests are authorised.
type credKind int

const (
	anonymous credKind = iota
	sharedKey          // signed with the account key (Shared Key)
	sasToken           // a shared access signature in each URL's query
)

// creds are the resolved credentials and the endpoint they go with.
type creds struct {
	kind     credKind
	account  string // "" when neither the URL nor the credentials name one
	key      string // the account key, base64 (secret)
	sas      string // the SAS query, without "?" (secret)
	endpoint string // the blob service endpoint, without a trailing slash
	// source says where the credentials come from, for messages: never
	// a secret.
	source string
}

// resolve finds the credentials for loc, in the order the docs give:
//
//  1. AZURE_STORAGE_CONNECTION_STRING;
//  2. AZURE_STORAGE_ACCOUNT with AZURE_STORAGE_KEY, or a SAS token: the
//     URL's query, else AZURE_STORAGE_SAS_TOKEN (the URL's is bound to
//     the URL, so it wins);
//  3. none: anonymous requests, for public containers.
//
// anon (--no-sign-request) skips to 3. The endpoint is endpointURL
// (--endpoint-url) when given, else the URL's, else the connection
// string's, else the account's in Azure's public cloud.
func resolve(loc Location, endpointURL string, anon bool, getenv func(string) string) (creds, error) {
	var c creds
	switch cs := getenv(ConnectionStringEnv); {
	case anon:
		c.source = "none (anonymous requests, --no-sign-request)"
	case cs != "":
		p, err := parseConnectionString(cs)
		if err != nil {
			return c, fmt.Errorf("azure: %s: %w", ConnectionStringEnv, err)
		}
		c = p
		c.source = ConnectionStringEnv
	case getenv(AccountEnv) != "" && getenv(KeyEnv) != "":
		c = creds{kind: sharedKey, account: strings.ToLower(getenv(AccountEnv)), key: getenv(KeyEnv),
			source: AccountEnv + " and " + KeyEnv}
	case loc.SAS != "":
		c = creds{kind: sasToken, sas: loc.SAS, source: "the SAS token in the URL's query"}
	case getenv(SASTokenEnv) != "":
		c = creds{kind: sasToken, sas: strings.TrimPrefix(getenv(SASTokenEnv), "?"), source: SASTokenEnv}
	default:
		c.source = "none (anonymous requests: set " + ConnectionStringEnv + ", or " + AccountEnv + " and " + KeyEnv + ", or " + SASTokenEnv + ", for a private container)"
	}
	if c.kind == sharedKey {
		if _, err := base64.StdEncoding.DecodeString(c.key); err != nil {
			return c, fmt.Errorf("azure: the account key from %s is not base64 (copy it from the storage account's access keys)", c.source)
		}
	}
	if c.kind == sasToken {
		if _, err := url.ParseQuery(c.sas); err != nil {
			return c, fmt.Errorf("azure: the SAS token from %s is not a URL query (sv=...&sig=...)", c.source)
		}
	}

	switch {
	case loc.Account != "" && c.kind == sharedKey && c.account != "" && c.account != loc.Account:
		return c, fmt.Errorf("azure: the source names storage account %q, but the key from %s is for account %q", loc.Account, c.source, c.account)
	case loc.Account != "":
		c.account = loc.Account
	case c.account == "":
		c.account = strings.ToLower(getenv(AccountEnv))
	}

	switch {
	case endpointURL != "":
		ep, err := checkEndpoint(endpointURL)
		if err != nil {
			return c, err
		}
		c.endpoint = ep
	case loc.Endpoint != "":
		c.endpoint = loc.Endpoint
	case c.endpoint != "":
	case c.account != "":
		c.endpoint = "https://" + c.account + ".blob.core.windows.net"
	default:
		return c, fmt.Errorf("azure: %s names no storage account: set %s (or %s), write https://ACCOUNT.blob.core.windows.net/%s/..., or give the blob service endpoint with --endpoint-url",
			loc, AccountEnv, ConnectionStringEnv, loc.Container)
	}
	if c.kind == sharedKey && c.account == "" {
		return c, fmt.Errorf("azure: %s gives a key but no account name", c.source)
	}
	return c, nil
}

// describe says where the credentials come from and for which account,
// for messages.
func (c creds) describe() string {
	if c.kind == anonymous || c.account == "" {
		return c.source
	}
	return fmt.Sprintf("%s (account %s)", c.source, c.account)
}

// parseConnectionString reads an Azure Storage connection string:
// KEY=VALUE pairs separated by ';', keys matched without regard to case.
// It knows AccountName, AccountKey, SharedAccessSignature, BlobEndpoint,
// DefaultEndpointsProtocol, EndpointSuffix and UseDevelopmentStorage.
// Error messages never quote a value: the string holds a secret.
func parseConnectionString(cs string) (creds, error) {
	var c creds
	kv := map[string]string{}
	for part := range strings.SplitSeq(cs, ";") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		k, v, ok := strings.Cut(part, "=")
		if !ok {
			return c, errors.New("not a connection string (want Name=value pairs separated by ';')")
		}
		kv[strings.ToLower(strings.TrimSpace(k))] = strings.TrimSpace(v)
	}
	if strings.EqualFold(kv["usedevelopmentstorage"], "true") {
		// The emulator's well-known account and endpoint (Azurite).
		c.account = "devstoreaccount1"
		c.key = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
		c.kind = sharedKey
		c.endpoint = "http://127.0.0.1:10000/devstoreaccount1"
		return c, nil
	}
	c.account = strings.ToLower(kv["accountname"])
	switch {
	case kv["accountkey"] != "":
		c.kind, c.key = sharedKey, kv["accountkey"]
	case kv["sharedaccesssignature"] != "":
		c.kind, c.sas = sasToken, strings.TrimPrefix(kv["sharedaccesssignature"], "?")
	default:
		return c, errors.New("has neither AccountKey nor SharedAccessSignature")
	}
	if ep := kv["blobendpoint"]; ep != "" {
		ep, err := checkEndpoint(ep)
		if err != nil {
			return c, fmt.Errorf("BlobEndpoint: %w", err)
		}
		c.endpoint = ep
	} else if c.account != "" {
		proto := strings.ToLower(kv["defaultendpointsprotocol"])
		if proto == "" {
			proto = "https"
		}
		if proto != "http" && proto != "https" {
			return c, errors.New("DefaultEndpointsProtocol is neither http nor https")
		}
		suffix := kv["endpointsuffix"]
		if suffix == "" {
			suffix = "core.windows.net"
		}
		c.endpoint = proto + "://" + c.account + ".blob." + suffix
	}
	if c.kind == sharedKey && c.account == "" {
		return c, errors.New("has an AccountKey but no AccountName")
	}
	if c.endpoint == "" {
		return c, errors.New("names neither AccountName nor BlobEndpoint")
	}
	return c, nil
}

// checkEndpoint validates a blob service endpoint URL and returns it
// without a trailing slash.
func checkEndpoint(ep string) (string, error) {
	u, err := url.Parse(ep)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("azure: endpoint URL %q must look like http(s)://host[:port][/ACCOUNT]", ep)
	}
	if u.User != nil || u.RawQuery != "" {
		return "", errors.New("azure: endpoint URL must contain neither user information nor a query")
	}
	return strings.TrimSuffix(ep, "/"), nil
}
