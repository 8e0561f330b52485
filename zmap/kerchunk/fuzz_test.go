package kerchunk

import (
	"bytes"
	"testing"

	"github.com/parquet-go/parquet-go"
)

// FuzzParquet checks that a record file and a .zmetadata never panic the
// reader, and that what they accept is within bounds.
func FuzzParquet(f *testing.F) {
	s := "s3://b/f.nc"
	var b bytes.Buffer
	if err := parquet.Write(&b, []pqRow{{Path: &s, Offset: 1, Size: 2}, {Raw: []byte("x")}, {}}); err != nil {
		f.Fatal(err)
	}
	f.Add(b.Bytes(), []byte(`{"record_size": 3, "metadata": {"v/.zarray": {"shape": [5], "chunks": [2]}}}`))
	f.Fuzz(func(t *testing.T, rec, meta []byte) {
		if rows, err := parseRecord(rec, 10); err == nil && len(rows) > 10 {
			t.Fatalf("%d rows", len(rows))
		}
		x, err := parseParquetMeta(meta)
		if err != nil {
			return
		}
		for p, a := range x.arrays {
			for n := range min(a.nchunks, 50) {
				name := a.chunkName(n)
				if m, ok := a.chunkNumber(name); !ok || m != n {
					t.Fatalf("%s: chunk %d is named %q, which is chunk %d", p, n, name, m)
				}
			}
		}
	})
}
