package source

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nczarrfs/nczarrfs/zmap"
	"github.com/nczarrfs/nczarrfs/zmap/kerchunk"
)

func TestOpenReferences(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("orig.nc", "0123456789")
	refs := write("refs.json", ` {".zgroup": "{\"zarr_format\": 2}", "v/0": ["orig.nc", 2, 3]}`)
	odd := write("refs.txt", `{"version": 1, "refs": {"v/0": ["orig.nc", 2, 3]}}`)
	write("pq/.zmetadata", `{"metadata": {".zgroup": {"zarr_format": 2}}, "record_size": 10}`)
	write("zarr/.zmetadata", `{"metadata": {".zgroup": {"zarr_format": 2}}}`)
	write("zarr/.zgroup", `{"zarr_format": 2}`)
	tests := []struct {
		src      string
		kerchunk bool
		errPart  string
	}{
		{src: refs, kerchunk: true},
		{src: "file://" + odd + "#mode=kerchunk", kerchunk: true},
		{src: odd, kerchunk: true}, // by content
		{src: filepath.Join(dir, "pq"), kerchunk: true},
		{src: filepath.Join(dir, "zarr")},
		{src: write("empty.json", "{}"), errPart: "no references"},
		{src: write("bad.json", "{ nope"), errPart: "not a kerchunk reference file"},
		{src: write("notes.txt", "hello"), errPart: "neither a directory nor a zip file"},
		{src: "file://" + write("plain.bin", "hello") + "#mode=kerchunk", errPart: "not a kerchunk reference file"},
		{src: "file://" + filepath.Join(dir, "zarr") + "#mode=kerchunk", errPart: "record_size"},
	}
	for _, tt := range tests {
		s, err := Parse(tt.src)
		if err != nil {
			t.Fatal(err)
		}
		st, err := Open(ctx, s, Options{})
		if tt.errPart != "" {
			if err == nil || !strings.Contains(err.Error(), tt.errPart) || strings.Contains(err.Error(), "\n") {
				t.Errorf("%s: error %v, want one line containing %q", tt.src, err, tt.errPart)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tt.src, err)
			continue
		}
		_, isK := st.(*kerchunk.Store)
		if isK != tt.kerchunk {
			t.Errorf("%s: a %T", tt.src, st)
		}
		if isK && !strings.Contains(tt.src, "pq") {
			if got, err := st.Get(ctx, "v/0"); err != nil || string(got) != "234" {
				t.Errorf("%s: v/0 = %q, %v", tt.src, got, err)
			}
		}
		st.Close()
	}
}

func TestParseEndpoint(t *testing.T) {
	for in, want := range map[string]Endpoint{
		"s3://bucket/=http://127.0.0.1:9000":            {Prefix: "s3://bucket/", URL: "http://127.0.0.1:9000"},
		"https://data.example.org/x=http://mirror:8080": {Prefix: "https://data.example.org/x", URL: "http://mirror:8080"},
	} {
		if got, err := ParseEndpoint(in); err != nil || got != want {
			t.Errorf("ParseEndpoint(%q) = %+v, %v", in, got, err)
		}
	}
	for _, in := range []string{"s3://b", "=http://x", "s3://b=", "bucket=http://x", "s3://b=ftp://x", "s3://b=http://"} {
		if _, err := ParseEndpoint(in); err == nil {
			t.Errorf("ParseEndpoint(%q) accepted", in)
		}
	}
	// The longest prefix wins; an http(s) prefix is rewritten.
	o := NewOpener(Options{}, Policy{Endpoints: []Endpoint{{"s3://b/", "http://one:1"}, {"s3://b/x/", "http://two:2"}, {"https://h/d/", "http://m:3/e"}}})
	for in, want := range map[string][2]string{
		"s3://b/x/f.nc":     {"s3://b/x/f.nc", "http://two:2"},
		"s3://b/y/f.nc":     {"s3://b/y/f.nc", "http://one:1"},
		"s3://c/f.nc":       {"s3://c/f.nc", ""},
		"https://h/d/f/g.h": {"http://m:3/e/f/g.h", ""},
	} {
		u, ep := o.override(in)
		if u != want[0] || ep != want[1] {
			t.Errorf("override(%q) = %q, %q; want %q", in, u, ep, want)
		}
	}
}

// TestOpenerHTTP reads references into objects of a web server (a plain
// one, with ranged GETs), directly and through an endpoint override, and
// counts the requests.
func TestOpenerHTTP(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	data := []byte("0123456789abcdefghij")
	if err := os.WriteFile(filepath.Join(dir, "orig.nc"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.FileServer(http.Dir(dir)))
	defer srv.Close()
	doc := fmt.Sprintf(`{"a/0": ["%s/orig.nc", 2, 3], "a/1": ["https://mirror.invalid/d/orig.nc", 10, 4], "a/2": ["%s/missing.nc", 0, 1], "a/3": ["%s/orig.nc"]}`, srv.URL, srv.URL, srv.URL)
	set, err := kerchunk.ParseJSON([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	op := NewOpener(Options{}, Policy{Endpoints: []Endpoint{{Prefix: "https://mirror.invalid/d/", URL: srv.URL}}})
	st, err := kerchunk.New(set, kerchunk.Options{Opener: op, Closer: op})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for key, want := range map[string]string{"a/0": "234", "a/1": "abcd", "a/3": string(data)} {
		if got, err := st.Get(ctx, key); err != nil || string(got) != want {
			t.Errorf("Get(%s) = %q, %v; want %q", key, got, err, want)
		}
	}
	if _, err := st.Get(ctx, "a/2"); err == nil || errors.Is(err, zmap.ErrNotFound) || !strings.Contains(err.Error(), "missing.nc") {
		t.Errorf("Get(a/2) of a 404: %v, want an error naming the URL, not ErrNotFound", err)
	}
	get, ranged, _, _ := st.RequestKinds()
	if get != 1 || ranged != 3 {
		t.Errorf("requests: %d GET, %d ranged GET; want 1 and 3", get, ranged)
	}
}

// TestRemoteReferences opens reference sets on a web server: a JSON file
// by its name, one of another name with #mode=kerchunk, a Parquet folder
// by its name; references from them to local files read only when the
// policy allows.
func TestRemoteReferences(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	write := func(name, content string) {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	srv := httptest.NewServer(http.FileServer(http.Dir(dir)))
	defer srv.Close()
	write("orig.nc", "0123456789")
	write("refs.json", fmt.Sprintf(`{".zgroup": "{}", "v/0": ["%s/orig.nc", 1, 2]}`, srv.URL))
	write("refs.txt", fmt.Sprintf(`{"version": 1, "refs": {"v/0": ["%s/orig.nc", 3, 2]}}`, srv.URL))
	write("local.json", fmt.Sprintf(`{"v/0": ["file://%s", 5, 2]}`, filepath.Join(dir, "orig.nc")))
	write("pq.parq/.zmetadata", `{"metadata": {".zgroup": {"zarr_format": 2}}, "record_size": 10}`)
	tests := []struct {
		src, want string
		policy    Policy
		errPart   string
	}{
		{src: srv.URL + "/refs.json#mode=http", want: "12"},
		{src: srv.URL + "/refs.txt#mode=http,kerchunk", want: "34"},
		{src: srv.URL + "/local.json#mode=http", errPart: "--allow-local-references"},
		{src: srv.URL + "/local.json#mode=http", policy: Policy{AllowLocal: true}, want: "56"},
		{src: srv.URL + "/pq.parq#mode=http"},
	}
	for _, tt := range tests {
		s, err := Parse(tt.src)
		if err != nil {
			t.Fatal(err)
		}
		st, err := Open(ctx, s, Options{References: tt.policy})
		if err != nil {
			t.Errorf("%s: %v", tt.src, err)
			continue
		}
		if _, ok := st.(*kerchunk.Store); !ok {
			t.Errorf("%s: a %T", tt.src, st)
		}
		got, err := st.Get(ctx, "v/0")
		switch {
		case tt.errPart != "":
			if err == nil || !strings.Contains(err.Error(), tt.errPart) || errors.Is(err, zmap.ErrNotFound) || got != nil {
				t.Errorf("%s: v/0 = %q, %v; want an error containing %q", tt.src, got, err, tt.errPart)
			}
		case tt.want != "":
			if err != nil || string(got) != tt.want {
				t.Errorf("%s: v/0 = %q, %v; want %q", tt.src, got, err, tt.want)
			}
		default:
			if g, err := st.Get(ctx, ".zgroup"); err != nil || !strings.Contains(string(g), "zarr_format") {
				t.Errorf("%s: .zgroup = %q, %v", tt.src, g, err)
			}
		}
		st.Close()
	}
}
