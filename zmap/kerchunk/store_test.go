package kerchunk_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/nczarrfs/nczarrfs/zmap"
	"github.com/nczarrfs/nczarrfs/zmap/kerchunk"
	"github.com/nczarrfs/nczarrfs/zmap/source"
)

// target writes a file of n distinct bytes and returns its path and
// content.
func target(t *testing.T, n int) (string, []byte) {
	t.Helper()
	data := make([]byte, n)
	for i := range data {
		data[i] = byte(i*7 + i/251)
	}
	p := filepath.Join(t.TempDir(), "orig.nc")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p, data
}

func TestStore(t *testing.T) {
	ctx := context.Background()
	p, data := target(t, 10_000)
	doc := fmt.Sprintf(`{"version": 1, "templates": {"f": %q}, "refs": {
		".zgroup": "{\"zarr_format\": 2}",
		"v/.zarray": {"shape": [3]},
		"v/0": ["{{f}}", 100, 50],
		"v/1": ["file://{{f}}", 9000, 1000],
		"v/2": ["orig.nc"],
		"g/h/.zgroup": "base64:e30=",
		"bad/0": ["%s", 9990, 20],
		"bad/1": ["%s/missing.nc", 0, 10]}}`, p, p, filepath.Dir(p))
	set, err := kerchunk.ParseJSON([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	op := source.NewOpener(source.Options{}, source.Policy{AllowLocal: true})
	st, err := kerchunk.New(set, kerchunk.Options{Opener: op, Dir: filepath.Dir(p), Closer: op})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for key, want := range map[string][]byte{
		".zgroup":     []byte(`{"zarr_format": 2}`),
		"v/.zarray":   []byte(`{"shape":[3]}`),
		"v/0":         data[100:150],
		"v/1":         data[9000:],
		"v/2":         data,
		"g/h/.zgroup": []byte("{}"),
	} {
		got, err := st.Get(ctx, key)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("Get(%s) = %d bytes, %v; want %d bytes", key, len(got), err, len(want))
		}
		if size, err := st.Size(ctx, key); err != nil || size != int64(len(want)) {
			t.Errorf("Size(%s) = %d, %v; want %d", key, size, err, len(want))
		}
		// ReadAt of the last few bytes and past the end.
		buf := make([]byte, 4)
		off := int64(len(want)) - 2
		n, err := st.ReadAt(ctx, key, buf, off)
		if n != 2 || err != io.EOF || !bytes.Equal(buf[:2], want[off:]) {
			t.Errorf("ReadAt(%s, 4 at %d) = %d, %v", key, off, n, err)
		}
		n, err = st.ReadAt(ctx, key, buf[:2], 0)
		if n != 2 || err != nil || !bytes.Equal(buf[:2], want[:2]) {
			t.Errorf("ReadAt(%s, 2 at 0) = %d, %v", key, n, err)
		}
	}
	for _, key := range []string{"nope", "v/9", "v", "../x", "/v/0"} {
		if _, err := st.Get(ctx, key); !errors.Is(err, zmap.ErrNotFound) {
			t.Errorf("Get(%s): %v, want ErrNotFound", key, err)
		}
	}
	// Unreadable references are errors that name the key and URL, never
	// a missing chunk.
	for _, key := range []string{"bad/0", "bad/1"} {
		_, err := st.Get(ctx, key)
		if err == nil || errors.Is(err, zmap.ErrNotFound) || !strings.Contains(err.Error(), key) || !strings.Contains(err.Error(), "orig.nc") && !strings.Contains(err.Error(), "missing.nc") {
			t.Errorf("Get(%s): %v, want an error naming the key and URL, not ErrNotFound", key, err)
		}
		if _, err := st.ReadAt(ctx, key, make([]byte, 20), 0); err == nil || errors.Is(err, zmap.ErrNotFound) {
			t.Errorf("ReadAt(%s): %v", key, err)
		}
	}
	for prefix, want := range map[string]string{
		"":    ".zgroup bad/ g/ v/",
		"v":   ".zarray 0 1 2",
		"g":   "h/",
		"g/h": ".zgroup",
		"x":   "",
	} {
		es, err := st.Search(ctx, prefix)
		if err != nil {
			t.Fatalf("Search(%q): %v", prefix, err)
		}
		var names []string
		for _, e := range es {
			n := e.Name
			if e.Dir {
				n += "/"
			}
			names = append(names, n)
		}
		if got := strings.Join(names, " "); got != want {
			t.Errorf("Search(%q) = %q, want %q", prefix, got, want)
		}
	}
}

// TestPolicy: a reference set whose Opener does not allow local files
// serves none of their bytes.
func TestPolicy(t *testing.T) {
	ctx := context.Background()
	p, _ := target(t, 100)
	set, err := kerchunk.ParseJSON(fmt.Appendf(nil, `{"a/0": ["file://%s", 0, 10], "a/1": ["%s"], "a/2": ["file://%s"]}`, p, p, p))
	if err != nil {
		t.Fatal(err)
	}
	op := source.NewOpener(source.Options{}, source.Policy{})
	st, err := kerchunk.New(set, kerchunk.Options{Opener: op, Remote: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"a/0", "a/1", "a/2"} {
		got, err := st.Get(ctx, key)
		if err == nil || got != nil || errors.Is(err, zmap.ErrNotFound) {
			t.Errorf("Get(%s) = %q, %v; want an error", key, got, err)
		}
		if _, err := st.ReadAt(ctx, key, make([]byte, 2), 0); err == nil {
			t.Errorf("ReadAt(%s) read a local file", key)
		}
	}
	if _, _, err := op.Open(ctx, "file://"+p); !errors.Is(err, zmap.ErrPermission) {
		t.Errorf("Opener.Open of a local file: %v, want ErrPermission", err)
	}
}

// TestMerge: neighbouring ranges asked for at once are read with one
// request; distant ones, or one too large, with more; a bad range fails
// no neighbour.
func TestMerge(t *testing.T) {
	ctx := context.Background()
	p, data := target(t, 2<<20)
	refs := map[string]string{}
	const chunk = 4000
	for i := range 12 {
		refs[fmt.Sprintf("near/%d", i)] = fmt.Sprintf(`["%s", %d, %d]`, p, 1000+i*(chunk+100), chunk)
	}
	refs["far/0"] = fmt.Sprintf(`["%s", 0, 10]`, p)
	refs["far/1"] = fmt.Sprintf(`["%s", %d, 10]`, p, 1<<20)
	refs["near/bad"] = fmt.Sprintf(`["%s", %d, 10]`, p, len(data)-5)
	var b strings.Builder
	b.WriteString("{")
	for k, v := range refs {
		if b.Len() > 1 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, "%q: %s", k, v)
	}
	b.WriteString("}")
	set, err := kerchunk.ParseJSON([]byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	op := source.NewOpener(source.Options{}, source.Policy{AllowLocal: true})
	st, err := kerchunk.New(set, kerchunk.Options{Opener: op, Remote: true})
	if err != nil {
		t.Fatal(err)
	}
	readAll := func(keys []string) []error {
		errs := make([]error, len(keys))
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i, k := range keys {
			wg.Go(func() {
				<-start
				r := set[k]
				got, err := st.Get(ctx, k)
				if err == nil && !bytes.Equal(got, data[r.Off:r.Off+r.Len]) {
					err = fmt.Errorf("%s: wrong bytes", k)
				}
				errs[i] = err
			})
		}
		close(start)
		wg.Wait()
		return errs
	}
	var near []string
	for i := range 12 {
		near = append(near, fmt.Sprintf("near/%d", i))
	}
	_, before, _, _ := op.RequestKinds()
	for _, err := range readAll(near) {
		if err != nil {
			t.Error(err)
		}
	}
	_, after, _, _ := op.RequestKinds()
	if after-before > 2 { // one, or two when the window closed between them
		t.Errorf("12 neighbouring chunks took %d requests", after-before)
	}
	before = after
	for _, err := range readAll([]string{"far/0", "far/1"}) {
		if err != nil {
			t.Error(err)
		}
	}
	if _, after, _, _ = op.RequestKinds(); after-before != 2 {
		t.Errorf("two distant chunks took %d requests, want 2", after-before)
	}
	errs := readAll(append([]string{"near/bad"}, near[11]))
	if errs[0] == nil || errors.Is(errs[0], zmap.ErrNotFound) || !strings.Contains(errs[0].Error(), "near/bad") {
		t.Errorf("a reference past the end of its file: %v", errs[0])
	}
	if errs[1] != nil {
		t.Errorf("its neighbour: %v", errs[1])
	}
}
