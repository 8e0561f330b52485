package s3

import (
	"reflect"
	"strings"
	"testing"
)

// TestParseURL reads locations; the fragments some URLs carry are left to
// zmap/source and do not change the location.
func TestParseURL(t *testing.T) {
	tests := []struct {
		url  string
		want Location
	}{
		// s3:// — the host is the bucket.
		{"s3://bucket", Location{Bucket: "bucket"}},
		{"s3://bucket/", Location{Bucket: "bucket"}},
		{"s3://bucket/root/key", Location{Bucket: "bucket", Prefix: "root/key"}},
		{"s3://bucket/root/key/", Location{Bucket: "bucket", Prefix: "root/key"}},
		{"s3://my.dotted.bucket/k", Location{Bucket: "my.dotted.bucket", Prefix: "k"}},
		{"s3://datasetbucket/rootkey#mode=nczarr&awsprofile=unidata",
			Location{Bucket: "datasetbucket", Prefix: "rootkey"}},
		{"s3://b/k#mode=nczarr,s3", Location{Bucket: "b", Prefix: "k"}},
		{"s3://b/k#mode=NCZarr,S3&aws.profile=p", Location{Bucket: "b", Prefix: "k"}},
		{"s3://b/k#log&show=fetch&mode=zarr", Location{Bucket: "b", Prefix: "k"}},
		{"s3://b/a%20b/c", Location{Bucket: "b", Prefix: "a b/c"}},
		// s3:// with an Amazon host, as in the NCZarr examples.
		{"s3://s3.us-west-1.amazonaws.com/datasetbucket",
			Location{Bucket: "datasetbucket", Region: "us-west-1"}},
		{"s3://s3.us-west-1.amazonaws.com/datasetbucket/a/b#mode=zarr",
			Location{Bucket: "datasetbucket", Prefix: "a/b", Region: "us-west-1"}},

		// AWS path style.
		{"https://s3.us-east-1.amazonaws.com/noaa-goes16/ABI-L1b-RadC/2017",
			Location{Bucket: "noaa-goes16", Prefix: "ABI-L1b-RadC/2017", Region: "us-east-1"}},
		{"https://s3.eu-central-1.amazonaws.com/bucket/key#mode=nczarr,s3&awsprofile=x",
			Location{Bucket: "bucket", Prefix: "key", Region: "eu-central-1"}},
		{"https://s3.amazonaws.com/bucket/key", Location{Bucket: "bucket", Prefix: "key"}},
		{"https://s3-us-west-2.amazonaws.com/bucket/key", Location{Bucket: "bucket", Prefix: "key", Region: "us-west-2"}},
		{"https://s3-external-1.amazonaws.com/bucket", Location{Bucket: "bucket", Region: "us-east-1"}},
		{"https://s3.dualstack.ap-south-1.amazonaws.com/bucket/k", Location{Bucket: "bucket", Prefix: "k", Region: "ap-south-1"}},
		{"https://s3.cn-north-1.amazonaws.com.cn/bucket/k", Location{Bucket: "bucket", Prefix: "k", Region: "cn-north-1"}},
		{"https://S3.US-WEST-2.AMAZONAWS.COM/bucket/k", Location{Bucket: "bucket", Prefix: "k", Region: "us-west-2"}},
		{"http://s3.us-west-2.amazonaws.com/bucket/k", Location{Bucket: "bucket", Prefix: "k", Region: "us-west-2", Insecure: true}},

		// AWS virtual-host style.
		{"https://bucket.s3.us-west-2.amazonaws.com/root/key",
			Location{Bucket: "bucket", Prefix: "root/key", Region: "us-west-2"}},
		{"https://bucket.s3.us-west-2.amazonaws.com", Location{Bucket: "bucket", Region: "us-west-2"}},
		{"https://bucket.s3.amazonaws.com/k", Location{Bucket: "bucket", Prefix: "k"}},
		{"https://bucket.s3-eu-west-1.amazonaws.com/k", Location{Bucket: "bucket", Prefix: "k", Region: "eu-west-1"}},
		{"https://my.s3.bucket.s3.us-west-2.amazonaws.com/k#mode=nczarr,s3",
			Location{Bucket: "my.s3.bucket", Prefix: "k", Region: "us-west-2"}},

		// Any other host: a custom endpoint, path style.
		{"http://127.0.0.1:9000/bucket/key#mode=nczarr,s3",
			Location{Bucket: "bucket", Prefix: "key", Endpoint: "http://127.0.0.1:9000", Insecure: true}},
		{"https://minio.example.org/bucket", Location{Bucket: "bucket", Endpoint: "https://minio.example.org"}},
		{"https://ceph.example.org:7480/b/x/y/z#mode=zarr,s3&awsprofile=ceph",
			Location{Bucket: "b", Prefix: "x/y/z", Endpoint: "https://ceph.example.org:7480"}},
		{"HTTP://[::1]:9000/bucket/k", Location{Bucket: "bucket", Prefix: "k", Endpoint: "http://[::1]:9000", Insecure: true}},

		// Google Cloud Storage: netcdf-c's gs3://, fsspec's gs://, and
		// the XML API's host, detected by name.
		{"gs3://gcp-public-data-arco-era5/ar/full.zarr#mode=zarr,s3",
			Location{Bucket: "gcp-public-data-arco-era5", Prefix: "ar/full.zarr", Endpoint: GoogleEndpoint, Google: true}},
		{"gs://cmip6/CMIP6/CMIP/x", Location{Bucket: "cmip6", Prefix: "CMIP6/CMIP/x", Endpoint: GoogleEndpoint, Google: true}},
		{"GS://b", Location{Bucket: "b", Endpoint: GoogleEndpoint, Google: true}},
		{"https://storage.googleapis.com/cmip6/a/b#mode=zarr", Location{Bucket: "cmip6", Prefix: "a/b", Endpoint: GoogleEndpoint, Google: true}},
		{"https://STORAGE.googleapis.com/b", Location{Bucket: "b", Endpoint: GoogleEndpoint, Google: true}},
		{"https://my-bucket.storage.googleapis.com/k", Location{Bucket: "my-bucket", Prefix: "k", Endpoint: GoogleEndpoint, Google: true}},
	}
	for _, tt := range tests {
		got, err := ParseURL(tt.url)
		if err != nil {
			t.Errorf("ParseURL(%q): %v", tt.url, err)
			continue
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ParseURL(%q) =\n\t%+v\nwant\n\t%+v", tt.url, got, tt.want)
		}
	}
}

func TestParseURLErrors(t *testing.T) {
	tests := []struct {
		url     string
		wantMsg string // a part of the error message
	}{
		{"", "scheme"},
		{"/local/path", "scheme"},
		{"file:///x.zip#mode=nczarr,zip", "scheme"},
		{"ftp://host/bucket", "scheme"},
		{"s3://", "no host"},
		{"s3:bucket/key", "no host"},
		{"https://host:9000", "no bucket"},
		{"https://host:9000/", "no bucket"},
		{"https://s3.us-west-2.amazonaws.com/", "no bucket"},
		{"https://ec2.us-west-2.amazonaws.com/bucket", "not an Amazon S3 host"},
		{"https://bucket.s3-website-us-east-1.amazonaws.com/k", "not a plain S3 API endpoint"},
		{"https://s3.a.b.c.amazonaws.com/bucket", "cannot read the region"},
		{"https://s3.us_west.amazonaws.com/bucket", "not a region name"},
		{"s3://bucket:9000/key", "port"},
		{"https://key:secret@host/bucket", "user information"},
		{"s3://AKIA:secret@bucket/key", "user information"},
		{"https://host/bucket/key?versionId=3", "query"},
		{"https://host/bucket/a//b", "empty, . or .. segment"},
		{"s3://bucket/a/../b", "empty, . or .. segment"},
		{"s3://bucket/./b", "empty, . or .. segment"},
		{"https://host/bucket/%zz", "invalid URL"},
		{"gs://bucket:443/k", "port"},
		{"gs://", "no host"},
		{"https://storage.googleapis.com/", "no bucket"},
		{"https://storage.googleapis.com:8443/b", "https on its own port"},
		{"http://storage.googleapis.com/b", "https on its own port"},
	}
	for _, tt := range tests {
		got, err := ParseURL(tt.url)
		if err == nil {
			t.Errorf("ParseURL(%q) = %+v, want an error", tt.url, got)
			continue
		}
		if !strings.Contains(err.Error(), tt.wantMsg) {
			t.Errorf("ParseURL(%q) error %q does not say %q", tt.url, err, tt.wantMsg)
		}
		if strings.Contains(err.Error(), "secret") {
			t.Errorf("ParseURL(%q) error %q repeats the password", tt.url, err)
		}
	}
}

func TestLocationKey(t *testing.T) {
	tests := []struct {
		prefix, key, want string
	}{
		{"", "", ""},
		{"", ".zgroup", ".zgroup"},
		{"a/b", "", "a/b"},
		{"a/b", "g/.zarray", "a/b/g/.zarray"},
	}
	for _, tt := range tests {
		if got := (Location{Prefix: tt.prefix}).key(tt.key); got != tt.want {
			t.Errorf("Location{Prefix: %q}.key(%q) = %q, want %q", tt.prefix, tt.key, got, tt.want)
		}
	}
}

// FuzzParseURL checks that ParseURL never panics, and that what it accepts
// is well formed: a bucket, and a prefix without empty segments.
func FuzzParseURL(f *testing.F) {
	for _, s := range []string{
		"s3://bucket/key#mode=nczarr,s3&awsprofile=p",
		"https://s3.us-west-2.amazonaws.com/bucket/a/b",
		"https://bucket.s3.us-west-2.amazonaws.com/k",
		"http://127.0.0.1:9000/bucket/key#mode=nczarr,s3",
		"s3://s3.us-west-1.amazonaws.com/datasetbucket",
		"https://s3-external-1.amazonaws.com/b",
		"https://u:p@host/b",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		loc, err := ParseURL(raw)
		if err != nil {
			return
		}
		if loc.Bucket == "" || strings.Contains(loc.Bucket, "/") {
			t.Errorf("ParseURL(%q): bad bucket %q", raw, loc.Bucket)
		}
		if loc.Prefix != "" {
			for _, seg := range strings.Split(loc.Prefix, "/") {
				if seg == "" || seg == "." || seg == ".." {
					t.Errorf("ParseURL(%q): bad prefix %q", raw, loc.Prefix)
				}
			}
		}
		if loc.Endpoint != "" && !strings.HasPrefix(loc.Endpoint, "http://") && !strings.HasPrefix(loc.Endpoint, "https://") {
			t.Errorf("ParseURL(%q): bad endpoint %q", raw, loc.Endpoint)
		}
	})
}
