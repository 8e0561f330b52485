package kerchunk_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/nczarrfs/nczarrfs/zmap"
	"github.com/nczarrfs/nczarrfs/zmap/file"
	"github.com/nczarrfs/nczarrfs/zmap/kerchunk"
	"github.com/nczarrfs/nczarrfs/zmap/source"
)

// refRow is a row of a record file, as fsspec writes it.
type refRow struct {
	Path   *string `parquet:"path,optional,dict"`
	Offset int64   `parquet:"offset"`
	Size   int64   `parquet:"size"`
	Raw    []byte  `parquet:"raw,optional"`
}

func writeParquet(t *testing.T, p string, rows any) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	var err error
	switch rows := rows.(type) {
	case []refRow:
		err = parquet.Write(&b, rows)
	case []badRow:
		err = parquet.Write(&b, rows)
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

type badRow struct {
	Path   string `parquet:"path"`
	Offset string `parquet:"offset"`
	Size   int64  `parquet:"size"`
	Raw    []byte `parquet:"raw,optional"`
}

func TestParquet(t *testing.T) {
	ctx := context.Background()
	orig, data := target(t, 5000)
	dir := filepath.Join(t.TempDir(), "refs.parq")
	meta := `{"record_size": 4, "metadata": {
		".zgroup": {"zarr_format": 2},
		"v/.zarray": {"shape": [3, 4], "chunks": [1, 2], "dtype": "<i2"},
		"v/.zattrs": {"_ARRAY_DIMENSIONS": ["y", "x"]},
		"g/s/.zarray": {"shape": [], "chunks": [], "dtype": "<i2"},
		"g/bad/.zarray": {"shape": [2], "chunks": [1], "dtype": "<i2"},
		"g/nofile/.zarray": {"shape": [2], "chunks": [1], "dtype": "<i2"}}}`
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ".zmetadata"), []byte(meta), 0o644); err != nil {
		t.Fatal(err)
	}
	p := func(s string) *string { return &s }
	// v has 3x2 = 6 chunks: record 0 holds chunks 0-3, record 1 4-5
	// (padded to record_size as fsspec pads).
	writeParquet(t, filepath.Join(dir, "v/refs.0.parq"), []refRow{
		{Path: p(orig), Offset: 10, Size: 100},
		{Raw: []byte("inline")},
		{}, // missing
		{Path: p("orig.nc"), Offset: 0, Size: 0},
	})
	writeParquet(t, filepath.Join(dir, "v/refs.1.parq"), []refRow{
		{Path: p(orig), Offset: 4990, Size: 100}, // past the end
		{Path: p(""), Raw: nil},
		{}, {},
	})
	writeParquet(t, filepath.Join(dir, "g/s/refs.0.parq"), []refRow{{Path: p(orig), Offset: 1, Size: 2}, {}, {}, {}})
	writeParquet(t, filepath.Join(dir, "g/bad/refs.0.parq"), []badRow{{Path: orig, Offset: "1", Size: 2}})

	folder, err := file.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	op := source.NewOpener(source.Options{}, source.Policy{AllowLocal: true})
	st, err := kerchunk.OpenParquet(ctx, folder, kerchunk.Options{Opener: op, Closer: op, Dir: filepath.Dir(orig)})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for key, want := range map[string]string{
		".zgroup":   `{"zarr_format":2}`,
		"v/.zattrs": `{"_ARRAY_DIMENSIONS":["y","x"]}`,
		"v/0.0":     string(data[10:110]),
		"v/0.1":     "inline",
		"v/1.1":     string(data),
		"g/s/0":     string(data[1:3]),
	} {
		got, err := st.Get(ctx, key)
		if err != nil || string(got) != want {
			t.Errorf("Get(%s) = %d bytes, %v; want %d", key, len(got), err, len(want))
		}
	}
	for _, key := range []string{"v/1.0", "v/2.1", "v/3.0", "v/0", "v/0.4", "v/00.1", "g/nofile/0", "g/s/1", "w/0"} {
		if _, err := st.Get(ctx, key); !errors.Is(err, zmap.ErrNotFound) {
			t.Errorf("Get(%s): %v, want ErrNotFound", key, err)
		}
	}
	for key, part := range map[string]string{"v/2.0": "v/2.0", "g/bad/0": "column"} {
		_, err := st.Get(ctx, key)
		if err == nil || errors.Is(err, zmap.ErrNotFound) || !strings.Contains(err.Error(), part) {
			t.Errorf("Get(%s): %v, want an error containing %q", key, err, part)
		}
	}
	es, err := st.Search(ctx, "v")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, fmt.Sprint(e.Name, ":", e.Size))
	}
	if got, want := strings.Join(names, " "), ".zarray:44 .zattrs:31 0.0:100 0.1:6 1.1:5000 2.0:100"; got != want {
		t.Errorf("Search(v) = %s, want %s", got, want)
	}
	es, err = st.Search(ctx, "")
	if err != nil || len(es) != 4 || es[0].Name != ".zgroup" || es[1].Name != ".zmetadata" || !es[2].Dir || !es[3].Dir {
		t.Errorf("Search() = %v, %v", es, err)
	}
	// The record files are read once each (and not at open).
	if !st.ListsByProbing() {
		t.Error("a Parquet set does not say listing its folders costs")
	}
}
