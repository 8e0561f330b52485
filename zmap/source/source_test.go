package source

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/nczarrfs/nczarrfs/zmap/azure"
	"github.com/nczarrfs/nczarrfs/zmap/s3"
)

func TestParse(t *testing.T) {
	tests := []struct {
		raw     string
		want    Source // Raw is filled in from raw; nil Params means none
		errPart string
	}{
		{raw: "/data/x.zip", want: Source{Path: "/data/x.zip"}},
		{raw: "relative/dir", want: Source{Path: "relative/dir"}},
		{raw: "file:///data/x.zip#mode=nczarr,zip", want: Source{Path: "/data/x.zip", Storage: Zip, Format: "nczarr"}},
		{raw: "file:///data/x.file#mode=zarr,file", want: Source{Path: "/data/x.file", Storage: File, Format: "zarr"}},
		{raw: "file:///data/x.file#mode=nczarr,file,noxarray,v2", want: Source{Path: "/data/x.file", Storage: File, Format: "nczarr", Version: 2}},
		{raw: "file:///data/my%20data.file", want: Source{Path: "/data/my data.file"}},
		{raw: "file:///x#mode=nczarr", want: Source{Path: "/x", Format: "nczarr"}},
		{raw: "FILE://localhost/x#MODE=ZARR,ZIP,V3", want: Source{Path: "/x", Storage: Zip, Format: "zarr", Version: 3}},
		{raw: "file:///x#mode=nczarr&mode=zip", want: Source{Path: "/x", Storage: Zip, Format: "nczarr"}},
		{raw: "file:///x#mode= nczarr , file ,", want: Source{Path: "/x", Storage: File, Format: "nczarr"}},
		{raw: "file:///x#log&show=fetch&mode=zarr", want: Source{Path: "/x", Format: "zarr", Params: map[string]string{"log": "", "show": "fetch"}}},
		{raw: "s3://bucket/key", want: Source{Storage: S3, S3: s3.Location{Bucket: "bucket", Prefix: "key"}}},
		// The same fragment rules as for files, with the profile keys.
		{raw: "s3://b/k#mode=NCZarr,S3&aws.profile=p", want: Source{Storage: S3, Format: "nczarr", S3: s3.Location{Bucket: "b", Prefix: "k", Profile: "p"}}},
		{raw: "s3://datasetbucket/rootkey#mode=nczarr&awsprofile=unidata", want: Source{Storage: S3, Format: "nczarr", S3: s3.Location{Bucket: "datasetbucket", Prefix: "rootkey", Profile: "unidata"}}},
		{raw: "s3://b/k#AWSPROFILE=Mixed.Case", want: Source{Storage: S3, S3: s3.Location{Bucket: "b", Prefix: "k", Profile: "Mixed.Case"}}},
		{raw: "https://s3.us-west-2.amazonaws.com/bucket/key#mode=nczarr,s3", want: Source{Storage: S3, Format: "nczarr", S3: s3.Location{Bucket: "bucket", Prefix: "key", Region: "us-west-2"}}},
		{raw: "http://127.0.0.1:9000/bucket/key", want: Source{Storage: S3, S3: s3.Location{Bucket: "bucket", Prefix: "key", Endpoint: "http://127.0.0.1:9000", Insecure: true}}},
		{raw: "https://ceph.example.org:7480/b/x/y#mode=zarr,s3&awsprofile=ceph", want: Source{Storage: S3, Format: "zarr", S3: s3.Location{Bucket: "b", Prefix: "x/y", Endpoint: "https://ceph.example.org:7480", Profile: "ceph"}}},
		// Google Cloud Storage: netcdf-c's gs3://, fsspec's gs://, and the
		// XML API's host, with or without a mode.
		{raw: "gs3://b/k", want: Source{Storage: S3, S3: s3.Location{Bucket: "b", Prefix: "k", Endpoint: s3.GoogleEndpoint, Google: true}}},
		{raw: "gs://b/k#mode=zarr,s3&awsprofile=hmac", want: Source{Storage: S3, Format: "zarr", S3: s3.Location{Bucket: "b", Prefix: "k", Endpoint: s3.GoogleEndpoint, Google: true, Profile: "hmac"}}},
		{raw: "https://storage.googleapis.com/b/k/l#mode=zarr", want: Source{Storage: S3, Format: "zarr", S3: s3.Location{Bucket: "b", Prefix: "k/l", Endpoint: s3.GoogleEndpoint, Google: true}}},
		// A web server that cannot be listed: the mode word http.
		{raw: "http://127.0.0.1:8000/x.zarr#mode=zarr,http", want: Source{Storage: HTTP, Format: "zarr", URL: "http://127.0.0.1:8000/x.zarr"}},
		{raw: "https://data.example.org/a/b.zarr/#mode=HTTP", want: Source{Storage: HTTP, URL: "https://data.example.org/a/b.zarr/"}},
		{raw: "https://storage.googleapis.com/b/k#mode=zarr,http", want: Source{Storage: HTTP, Format: "zarr", URL: "https://storage.googleapis.com/b/k"}},
		{raw: "az://data/era5.zarr", want: Source{Storage: Azure, Azure: azure.Location{Container: "data", Prefix: "era5.zarr"}}},
		{raw: "abfs://data/x#mode=zarr,v3", want: Source{Storage: Azure, Format: "zarr", Version: 3, Azure: azure.Location{Container: "data", Prefix: "x"}}},
		{raw: "https://acct.blob.core.windows.net/data/x?sv=1&sig=s#mode=nczarr", want: Source{Storage: Azure, Format: "nczarr", Azure: azure.Location{Account: "acct", Container: "data", Prefix: "x", Endpoint: "https://acct.blob.core.windows.net", SAS: "sv=1&sig=s"}}},

		{raw: "az://data/x#mode=s3", errPart: "does not fit an Azure"},
		{raw: "az://Data/x", errPart: "not a container name"},
		{raw: "https://acct.blob.core.windows.net/data/x?sig=secret#mode=zip", errPart: "does not fit"},
		{raw: "file:///x#mode=bogus", errPart: `unknown mode "bogus"`},
		{raw: "file:///x#mode=zip,file", errPart: "two storage media"},
		{raw: "file:///x#mode=zarr,nczarr", errPart: "two formats"},
		{raw: "file:///x#mode=v2,v3", errPart: "two Zarr versions"},
		{raw: "file:///x#mode=nczarr,s3", errPart: "mode s3 needs"},
		{raw: "s3://b/k#mode=zip", errPart: "does not fit"},
		{raw: "s3://b/k#awsprofile=", errPart: "empty profile"},
		{raw: "s3://b/k#aws.profile", errPart: "empty profile"},
		{raw: "s3://b:9000/k", errPart: "port"},
		{raw: "https://user:secret@host/b/k", errPart: "user information"},
		{raw: "ftp://host/x", errPart: "unsupported scheme"},
		{raw: "gs://b/k#mode=http", errPart: "does not fit"},
		{raw: "gs://b:1/k", errPart: "port"},
		{raw: "file:///x#mode=http", errPart: "mode http needs an http(s):// URL"},
		{raw: "http://u:secret@host/x#mode=http", errPart: "user information"},
		{raw: "http://host/x?a=1#mode=http", errPart: "query"},
		{raw: "http:///x#mode=http", errPart: "no host"},
		{raw: "file://otherhost/x", errPart: "no host"},
		{raw: "file://", errPart: "no path"},
		{raw: "", errPart: "empty source"},
	}
	for _, tt := range tests {
		s, err := Parse(tt.raw)
		if tt.errPart != "" {
			if err == nil || !strings.Contains(err.Error(), tt.errPart) {
				t.Errorf("Parse(%q) error = %v, want one containing %q", tt.raw, err, tt.errPart)
			}
			if err != nil && strings.Contains(err.Error(), "secret") {
				t.Errorf("Parse(%q) error %q repeats the password", tt.raw, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("Parse(%q): %v", tt.raw, err)
			continue
		}
		tt.want.Raw = tt.raw
		if tt.want.Params == nil {
			tt.want.Params = map[string]string{}
		}
		if !reflect.DeepEqual(s, tt.want) {
			t.Errorf("Parse(%q) =\n\t%+v\nwant\n\t%+v", tt.raw, s, tt.want)
		}
	}
}

// FuzzParse checks that Parse never panics, and that an accepted S3
// source has a bucket and an accepted local one a path.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"/data/x.zip",
		"file:///data/x.zip#mode=nczarr,zip",
		"s3://b/k#mode=NCZarr,S3&aws.profile=p",
		"http://127.0.0.1:9000/bucket/key#mode=zarr,s3&log",
		"https://u:p@host/b",
		"gs3://b/k#mode=zarr",
		"http://127.0.0.1:8000/x.zarr#mode=zarr,http",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		s, err := Parse(raw)
		if err != nil {
			return
		}
		if s.Storage == S3 && s.S3.Bucket == "" {
			t.Errorf("Parse(%q): S3 source without a bucket", raw)
		}
		if s.Storage == HTTP && s.URL == "" {
			t.Errorf("Parse(%q): http source without a URL", raw)
		}
		if s.Storage != S3 && s.Storage != HTTP && s.Path == "" {
			t.Errorf("Parse(%q): local source without a path", raw)
		}
	})
}

func TestOpenLocalErrors(t *testing.T) {
	dir := t.TempDir()
	notZip := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(notZip, []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		src     Source
		errPart string
	}{
		{Source{Path: filepath.Join(dir, "missing")}, "does not exist"},
		{Source{Path: notZip}, "neither a directory nor a zip file"},
		{Source{Path: notZip, Storage: File}, "not a directory"},
		{Source{Path: dir, Storage: Zip}, "is a directory, not a zip file"},
	}
	for _, tt := range tests {
		_, err := OpenLocal(tt.src)
		if err == nil || !strings.Contains(err.Error(), tt.errPart) || !strings.Contains(err.Error(), tt.src.Path) {
			t.Errorf("OpenLocal(%+v) error = %v, want one naming the path and containing %q", tt.src, err, tt.errPart)
		}
	}
	st, err := OpenLocal(Source{Path: dir})
	if err != nil {
		t.Fatalf("a directory: %v", err)
	}
	st.Close()
}

func TestRedact(t *testing.T) {
	for raw, want := range map[string]string{
		"https://user:secret@host/b/k#mode=s3": "https://host/b/k#mode=s3",
		"s3://bucket/key":                      "s3://bucket/key",
		"/plain/path":                          "/plain/path",
		"https://acct.blob.core.windows.net/c/x?sv=1&sig=secret#mode=zarr": "https://acct.blob.core.windows.net/c/x?REDACTED#mode=zarr",
	} {
		if got := Redact(raw); got != want {
			t.Errorf("Redact(%q) = %q, want %q", raw, got, want)
		}
	}
}
