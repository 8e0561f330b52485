package s3_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/nczarrfs/nczarrfs/internal/miniotest"
	"github.com/nczarrfs/nczarrfs/zmap/s3"
)

// listBodies are ListObjectsV2 answers, and whether the fast decoder takes
// them (false: it leaves them to the SDK's decoder).
var listBodies = []struct {
	name string
	body string
	fast bool
}{
	{"minio", `<?xml version="1.0" encoding="UTF-8"?>
<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>b</Name><Prefix>p/</Prefix><KeyCount>2</KeyCount><MaxKeys>1000</MaxKeys><Delimiter>/</Delimiter><IsTruncated>true</IsTruncated><NextContinuationToken>MTAw/Mg==</NextContinuationToken><Contents><Key>p/0.0</Key><LastModified>2026-11-25T10:14:32.123Z</LastModified><ETag>&#34;abc&#34;</ETag><Size>123</Size><Owner><ID>02d6</ID><DisplayName>minio</DisplayName></Owner><StorageClass>STANDARD</StorageClass></Contents><CommonPrefixes><Prefix>p/sub/</Prefix></CommonPrefixes></ListBucketResult>`, true},
	{"indented, comments", `<?xml version="1.0"?>
<!-- a listing -->
<ListBucketResult>
  <Name>b</Name>
  <!-- between elements -->
  <IsTruncated>false</IsTruncated>
  <StartAfter>p/a</StartAfter>
  <ContinuationToken>t</ContinuationToken>
  <EncodingType>url</EncodingType>
  <Contents>
    <Key>p/a b</Key>
    <Size>0</Size>
    <ChecksumAlgorithm>CRC32</ChecksumAlgorithm>
    <ChecksumAlgorithm>SHA256</ChecksumAlgorithm>
    <ChecksumType>FULL_OBJECT</ChecksumType>
    <RestoreStatus><IsRestoreInProgress>true</IsRestoreInProgress><RestoreExpiryDate>2026-01-02T03:04:05Z</RestoreExpiryDate></RestoreStatus>
  </Contents>
  <Contents><Key>p/2</Key><Owner/></Contents>
</ListBucketResult>
`, true},
	{"entities, unicode", `<ListBucketResult><Contents><Key>a&amp;b&lt;c&gt;d&apos;e&quot;f&#233;&#x1F600;é g</Key><Size>9223372036854775807</Size></Contents></ListBucketResult>`, true},
	{"empty values", `<ListBucketResult><Contents><Key/><ETag></ETag></Contents><CommonPrefixes/><Prefix></Prefix></ListBucketResult>`, true},
	{"names in any case", `<listbucketresult><CONTENTS><key>k</key><size>1</size></CONTENTS><istruncated>0</istruncated><maxkeys>5000000000</maxkeys></listbucketresult>`, true},
	{"unknown elements", `<ListBucketResult a="1" b='2'><Foo x="&amp;"><Bar><Baz/>text</Bar></Foo><Contents><Key>k</Key><Extra><Deep>1</Deep></Extra></Contents></ListBucketResult>`, true},
	{"nothing after the root is read", `<ListBucketResult><Name>n</Name></ListBucketResult><garbage`, true},
	// Google Cloud Storage's XML API answer to list-type=2, in the shape
	// of its documented schema: the namespace of doc.s3.amazonaws.com,
	// and Generation and MetaGeneration in each Contents.
	{"google cloud storage", `<?xml version='1.0' encoding='UTF-8'?>
<ListBucketResult xmlns="http://doc.s3.amazonaws.com/2006-03-01"><Name>gcp-public-data-arco-era5</Name><Prefix>ar/</Prefix><KeyCount>2</KeyCount><MaxKeys>1000</MaxKeys><Delimiter>/</Delimiter><IsTruncated>true</IsTruncated><NextContinuationToken>CgphcmNvL3guemFycg==</NextContinuationToken><Contents><Key>ar/.zmetadata</Key><Generation>1699999999999999</Generation><MetaGeneration>1</MetaGeneration><LastModified>2026-11-20T08:01:02.345Z</LastModified><ETag>"d41d8cd98f00b204e9800998ecf8427e"</ETag><Size>95123</Size></Contents><CommonPrefixes><Prefix>ar/2m_temperature/</Prefix></CommonPrefixes></ListBucketResult>`, true},
	{"white space in a value", `<ListBucketResult><Contents><Key>  k
</Key></Contents></ListBucketResult>`, true},

	// Left to the SDK, which decodes them or fails.
	{"carriage return", "<ListBucketResult><Contents><Key>a\r\nb</Key></Contents></ListBucketResult>", false},
	{"CDATA", `<ListBucketResult><Contents><Key><![CDATA[a<b]]></Key></Contents></ListBucketResult>`, false},
	{"DOCTYPE", `<!DOCTYPE x><ListBucketResult><Name>n</Name></ListBucketResult>`, false},
	{"namespace prefix", `<s3:ListBucketResult xmlns:s3="x"><s3:Name>n</s3:Name></s3:ListBucketResult>`, false},
	{"comment inside a value", `<ListBucketResult><Contents><Key>a<!--x-->b</Key></Contents></ListBucketResult>`, false},
	{"comment before a value", `<ListBucketResult><Contents><Key><!--x-->a</Key></Contents></ListBucketResult>`, false},
	{"element in a value", `<ListBucketResult><Contents><Key>a<b/></Key></Contents></ListBucketResult>`, false},
	{"unknown entity", `<ListBucketResult><Contents><Key>a&nbsp;b</Key></Contents></ListBucketResult>`, false},
	{"character 0", `<ListBucketResult><Contents><Key>a&#0;</Key></Contents></ListBucketResult>`, false},
	{"control character", "<ListBucketResult><Name>a\x01</Name></ListBucketResult>", false},
	{"invalid UTF-8", "<ListBucketResult><Contents><Key>a\xff</Key></Contents></ListBucketResult>", false},
	{"bad size", `<ListBucketResult><Contents><Key>k</Key><Size>12x</Size></Contents></ListBucketResult>`, false},
	{"bad flag", `<ListBucketResult><IsTruncated>yes</IsTruncated></ListBucketResult>`, false},
	{"bad time", `<ListBucketResult><Contents><LastModified>yesterday</LastModified></Contents></ListBucketResult>`, false},
	{"mismatched tags", `<ListBucketResult><Contents><Key>k</Size></Contents></ListBucketResult>`, false},
	{"cut short", `<ListBucketResult><Contents><Key>k</Key>`, false},
	{"other encoding", `<?xml version="1.0" encoding="ISO-8859-1"?><ListBucketResult/>`, false},
	{"other root", `<Other><Name>n</Name></Other>`, false},
	{"empty root", `<ListBucketResult/>`, false},
	{"empty", ``, false},
	{"attribute without quotes", `<ListBucketResult a=1><Name>n</Name></ListBucketResult>`, false},
}

// TestListDecoderMatchesSDK decodes each body with the SDK's decoder and
// with decodeListsFast in its place: both give the same output or both
// fail, and the fast decoder takes the bodies it should.
func TestListDecoderMatchesSDK(t *testing.T) {
	for _, tc := range listBodies {
		t.Run(tc.name, func(t *testing.T) {
			if _, ok := s3.DecodeListV2([]byte(tc.body)); ok != tc.fast {
				t.Errorf("fast decoder takes it: %v, want %v", ok, tc.fast)
			}
			want, wantErr := decodeBySDK(t, tc.body, false)
			got, err := decodeBySDK(t, tc.body, true)
			if (err != nil) != (wantErr != nil) {
				t.Fatalf("error %v, the SDK's %v", err, wantErr)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("output\n%s\nthe SDK's\n%s", dumpList(got), dumpList(want))
			}
		})
	}
}

// FuzzDecodeListV2: whatever body the fast decoder takes, the SDK's
// decoder decodes to the same output.
func FuzzDecodeListV2(f *testing.F) {
	for _, tc := range listBodies {
		f.Add([]byte(tc.body))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		fast, ok := s3.DecodeListV2(body)
		if !ok {
			return
		}
		want, err := decodeBySDK(t, string(body), false)
		if err != nil {
			t.Fatalf("fast decoder took a body the SDK rejects (%v): %q", err, body)
		}
		if !reflect.DeepEqual(fast, want) {
			t.Fatalf("body %q:\n%s\nthe SDK's\n%s", body, dumpList(fast), dumpList(want))
		}
	})
}

// TestListDecoderTakesMinIOAnswers lists keys with names that need
// escaping from MinIO, a page of two at a time, and checks that the fast
// decoder takes every answer and decodes it as the SDK does.
func TestListDecoderTakesMinIOAnswers(t *testing.T) {
	srv := miniotest.Start(t)
	srv.CreateBucket(t, "names")
	objects := map[string][]byte{}
	for i, name := range []string{"a&b", "<x>", `q"uote'`, "é ü", "sp ace", "0.0.1", "tab\there", "sub/0", "sub2/x/y", "%41"} {
		objects["ds/"+name] = bytes.Repeat([]byte{'x'}, i)
	}
	srv.Put(t, "names", objects)

	var bodies [][]byte
	capture := func(stack *middleware.Stack) error {
		return stack.Deserialize.Add(middleware.DeserializeMiddlewareFunc("capture", func(ctx context.Context, in middleware.DeserializeInput, next middleware.DeserializeHandler) (middleware.DeserializeOutput, middleware.Metadata, error) {
			out, md, err := next.HandleDeserialize(ctx, in)
			if resp, ok := out.RawResponse.(*smithyhttp.Response); ok && err == nil {
				body, rerr := io.ReadAll(resp.Body)
				if rerr != nil {
					return out, md, rerr
				}
				bodies = append(bodies, body)
				resp.Body = io.NopCloser(bytes.NewReader(body))
			}
			return out, md, err
		}), middleware.After)
	}
	client := srv.Client(t)
	for _, delim := range []string{"/", ""} {
		in := &awss3.ListObjectsV2Input{Bucket: aws.String("names"), Prefix: aws.String("ds/"), MaxKeys: aws.Int32(2)}
		if delim != "" {
			in.Delimiter = aws.String(delim)
		}
		pager := awss3.NewListObjectsV2Paginator(client, in)
		for pager.HasMorePages() {
			n := len(bodies)
			page, err := pager.NextPage(context.Background(), awss3.WithAPIOptions(capture))
			if err != nil {
				t.Fatal(err)
			}
			if len(bodies) != n+1 {
				t.Fatalf("captured %d bodies for one page", len(bodies)-n)
			}
			fast, ok := s3.DecodeListV2(bodies[n])
			if !ok {
				t.Fatalf("fast decoder leaves MinIO's answer to the SDK:\n%s", bodies[n])
			}
			page.ResultMetadata = middleware.Metadata{}
			if !reflect.DeepEqual(fast, page) {
				t.Errorf("MinIO's answer\n%s\ndecodes to\n%s\nthe SDK's\n%s", bodies[n], dumpList(fast), dumpList(page))
			}
		}
	}
	if len(bodies) < 5 {
		t.Errorf("%d pages; want the keys over several", len(bodies))
	}
}

// decodeBySDK runs a ListObjectsV2 request whose answer is body (status
// 200) through the SDK's client, with decodeListsFast or without.
func decodeBySDK(t testing.TB, body string, fast bool) (*awss3.ListObjectsV2Output, error) {
	t.Helper()
	client := awss3.New(awss3.Options{
		Region:           "us-east-1",
		BaseEndpoint:     aws.String("http://127.0.0.1:9"),
		UsePathStyle:     true,
		Credentials:      aws.AnonymousCredentials{},
		RetryMaxAttempts: 1,
		HTTPClient: doerFunc(func(req *http.Request) (*http.Response, error) {
			return &http.Response{
				StatusCode: 200, Header: http.Header{}, Request: req, ContentLength: int64(len(body)),
				Body: io.NopCloser(strings.NewReader(body)),
			}, nil
		}),
	})
	var opts []func(*awss3.Options)
	if fast {
		opts = append(opts, awss3.WithAPIOptions(s3.DecodeListsFast))
	}
	out, err := client.ListObjectsV2(context.Background(), &awss3.ListObjectsV2Input{Bucket: aws.String("b")}, opts...)
	if out != nil {
		out.ResultMetadata = middleware.Metadata{}
	}
	return out, err
}

type doerFunc func(*http.Request) (*http.Response, error)

func (f doerFunc) Do(req *http.Request) (*http.Response, error) { return f(req) }

// dumpList prints a listing's fields for a failure message.
func dumpList(o *awss3.ListObjectsV2Output) string {
	if o == nil {
		return "<nil>"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "name %v prefix %v delim %v max %v count %v truncated %v token %v next %v after %v enc %q\n",
		deref(o.Name), deref(o.Prefix), deref(o.Delimiter), deref(o.MaxKeys), deref(o.KeyCount), deref(o.IsTruncated),
		deref(o.ContinuationToken), deref(o.NextContinuationToken), deref(o.StartAfter), o.EncodingType)
	for _, c := range o.Contents {
		fmt.Fprintf(&b, "  object %q size %v time %v etag %v class %q sums %v %q owner %+v restore %+v\n",
			deref(c.Key), deref(c.Size), deref(c.LastModified), deref(c.ETag), c.StorageClass,
			c.ChecksumAlgorithm, c.ChecksumType, c.Owner, c.RestoreStatus)
	}
	for _, p := range o.CommonPrefixes {
		fmt.Fprintf(&b, "  prefix %q\n", deref(p.Prefix))
	}
	return b.String()
}

func deref[T any](p *T) any {
	if p == nil {
		return "<nil>"
	}
	return *p
}
