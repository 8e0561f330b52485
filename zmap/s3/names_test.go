package s3_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/nczarrfs/nczarrfs/zmap"
	"github.com/nczarrfs/nczarrfs/zmap/s3"
)

// TestSearchUnsafeNames lists a prefix whose keys have ".", ".." and empty
// segments, as S3 allows and MinIO refuses to store (hence a fake server):
// those names name nothing a key can reach (zmap.ValidKey), so Search
// leaves them out, and no request is made for a key that would leave the
// dataset's prefix.
func TestSearchUnsafeNames(t *testing.T) {
	var paths []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		paths = append(paths, r.URL.Path)
		if r.URL.Query().Get("list-type") != "2" {
			http.Error(w, "", http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "application/xml")
		fmt.Fprint(w, `<?xml version="1.0" encoding="UTF-8"?>
<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>bkt</Name><Prefix>ds/</Prefix><KeyCount>7</KeyCount><MaxKeys>1000</MaxKeys><Delimiter>/</Delimiter><IsTruncated>false</IsTruncated>
<Contents><Key>ds/.zgroup</Key><Size>3</Size></Contents>
<Contents><Key>ds/..</Key><Size>3</Size></Contents>
<Contents><Key>ds/.</Key><Size>3</Size></Contents>
<CommonPrefixes><Prefix>ds/../</Prefix></CommonPrefixes>
<CommonPrefixes><Prefix>ds/./</Prefix></CommonPrefixes>
<CommonPrefixes><Prefix>ds//</Prefix></CommonPrefixes>
<CommonPrefixes><Prefix>ds/g/</Prefix></CommonPrefixes>
</ListBucketResult>`)
	}))
	defer srv.Close()
	loc, err := s3.ParseURL(srv.URL + "/bkt/ds#mode=zarr,s3")
	if err != nil {
		t.Fatal(err)
	}
	st, err := s3.Open(context.Background(), loc, s3.Options{NoSignRequest: true, Region: "us-east-1", MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	entries, err := st.Search(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, fmt.Sprintf("%s dir=%v", e.Name, e.Dir))
	}
	if got, want := strings.Join(names, ", "), ".zgroup dir=false, g dir=true"; got != want {
		t.Errorf("Search lists %q, want %q", got, want)
	}
	for _, key := range []string{"..", "../x", "./.zgroup", "g//x"} {
		if _, err := st.Get(context.Background(), key); !errors.Is(err, zmap.ErrNotFound) {
			t.Errorf("Get(%q) = %v, want ErrNotFound", key, err)
		}
	}
	for _, p := range paths {
		if p != "/bkt" && p != "/bkt/" {
			t.Errorf("a request went to %s; only the listing of /bkt was expected", p)
		}
	}
}
