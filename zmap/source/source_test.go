package source

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	tests := []struct {
		raw     string
		path    string
		storage Storage
		format  string
		errPart string
	}{
		{raw: "/data/x.zip", path: "/data/x.zip"},
		{raw: "relative/dir", path: "relative/dir"},
		{raw: "file:///data/x.zip#mode=nczarr,zip", path: "/data/x.zip", storage: Zip, format: "nczarr"},
		{raw: "file:///data/x.file#mode=zarr,file", path: "/data/x.file", storage: File, format: "zarr"},
		{raw: "file:///data/x.file#mode=nczarr,file,noxarray,v2", path: "/data/x.file", storage: File, format: "nczarr"},
		{raw: "file:///data/my%20data.file", path: "/data/my data.file"},
		{raw: "file:///x#mode=nczarr", path: "/x", format: "nczarr"},
		{raw: "s3://bucket/key", storage: S3},
		{raw: "https://s3.us-west-2.amazonaws.com/bucket/key#mode=nczarr,s3", storage: S3, format: "nczarr"},
		{raw: "http://127.0.0.1:9000/bucket/key", storage: S3},
		{raw: "file:///x#mode=bogus", errPart: `unknown mode "bogus"`},
		{raw: "file:///x#mode=zip,file", errPart: "two storage media"},
		{raw: "file:///x#mode=nczarr,s3", errPart: "mode s3 needs"},
		{raw: "s3://b/k#mode=zip", errPart: "does not fit"},
		{raw: "file:///x#mode=v3", errPart: "version 3"},
		{raw: "ftp://host/x", errPart: "unsupported scheme"},
		{raw: "file://otherhost/x", errPart: "no host"},
		{raw: "", errPart: "empty source"},
	}
	for _, tt := range tests {
		s, err := Parse(tt.raw)
		if tt.errPart != "" {
			if err == nil || !strings.Contains(err.Error(), tt.errPart) {
				t.Errorf("Parse(%q) error = %v, want one containing %q", tt.raw, err, tt.errPart)
			}
			continue
		}
		if err != nil {
			t.Errorf("Parse(%q): %v", tt.raw, err)
			continue
		}
		if s.Path != tt.path || s.Storage != tt.storage || s.Format != tt.format {
			t.Errorf("Parse(%q) = path %q storage %q format %q; want %q %q %q", tt.raw, s.Path, s.Storage, s.Format, tt.path, tt.storage, tt.format)
		}
	}
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
	} {
		if got := Redact(raw); got != want {
			t.Errorf("Redact(%q) = %q, want %q", raw, got, want)
		}
	}
}
