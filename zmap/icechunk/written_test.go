package icechunk_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nczarrfs/nczarrfs/zmap"
	"github.com/nczarrfs/nczarrfs/zmap/file"
	"github.com/nczarrfs/nczarrfs/zmap/icechunk"
	"github.com/nczarrfs/nczarrfs/zmap/icechunk/icechunktest"
)

const groupJSON = `{"zarr_format":3,"node_type":"group","attributes":{}}`

func arrayJSON(n int) []byte {
	return fmt.Appendf(nil, `{"zarr_format":3,"node_type":"array","shape":[%d],"data_type":"uint8","chunk_grid":{"name":"regular","configuration":{"chunk_shape":[4]}},"chunk_key_encoding":{"name":"default","configuration":{"separator":"/"}},"fill_value":0,"codecs":[{"name":"bytes"}]}`, 4*n)
}

// chunkBytes is chunk i of commit c: 4 bytes that say both.
func chunkBytes(c, i int) []byte { return []byte{byte(c), byte(i), 0xAB, byte(c + i)} }

// manyCommits writes a repository of n commits in a line, each rewriting
// every chunk of /a (chunks native in one packed file, but the last one
// inline), split in manifests of 3 chunks; main is the last commit, and
// every tenth is tagged.
func manyCommits(t *testing.T, n, chunks int) (string, icechunktest.Written) {
	t.Helper()
	var r icechunktest.Repo
	r.Branches, r.Tags = map[string]int{"main": n - 1}, map[string]int{}
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for c := range n {
		a := icechunktest.Node{Path: "/a", ZarrJSON: arrayJSON(chunks), Array: true, Split: 3}
		for i := range chunks {
			a.Chunks = append(a.Chunks, icechunktest.Chunk{Index: []uint32{uint32(i)}, Data: chunkBytes(c, i), Inline: i == chunks-1})
		}
		r.Commits = append(r.Commits, icechunktest.Commit{
			Message: fmt.Sprintf("commit %d", c), Parent: c - 1, Time: start.Add(time.Duration(c) * time.Minute),
			Nodes: []icechunktest.Node{{Path: "/", ZarrJSON: []byte(groupJSON)}, a},
		})
		if c%10 == 0 {
			r.Tags[fmt.Sprintf("t%02d", c)] = c
		}
	}
	dir := t.TempDir()
	w, err := icechunktest.Write(dir, r)
	if err != nil {
		t.Fatal(err)
	}
	return dir, w
}

// TestManySnapshots: a repository of 60 snapshots lists them all from its
// repo file alone, and every version reads its own bytes, packed, inline
// and split as written.
func TestManySnapshots(t *testing.T) {
	ctx := context.Background()
	const n, chunks = 60, 8
	dir, w := manyCommits(t, n, chunks)
	fst, err := file.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer fst.Close()
	st := &logged{Store: fst}
	r, err := icechunk.Open(ctx, st, icechunk.Options{})
	if err != nil {
		t.Fatal(err)
	}
	all, err := r.Snapshots(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != n || all[0].ID != w.Snapshots[n-1] || all[n-1].ID != w.Snapshots[0] || all[n-1].HasParent {
		t.Fatalf("%d snapshots, first %v, last %v", len(all), all[0], all[n-1])
	}
	if got := st.take(); strings.Join(got, ",") != "get repo" {
		t.Errorf("listing the snapshots read %q", got)
	}
	tags, _ := r.Tags(ctx)
	if len(tags) != 6 || tags[0] != "t00" || tags[5] != "t50" {
		t.Errorf("tags %q", tags)
	}
	for _, c := range []int{0, 1, 29, n - 1} {
		v, err := r.Version(ctx, w.Snapshots[c])
		if err != nil {
			t.Fatal(err)
		}
		for i := range chunks {
			got, err := v.Get(ctx, "a/c/"+fmt.Sprint(i))
			if err != nil || !bytes.Equal(got, chunkBytes(c, i)) {
				t.Errorf("commit %d chunk %d = %x, %v; want %x", c, i, got, err, chunkBytes(c, i))
			}
			// A read inside the chunk.
			p := make([]byte, 2)
			if n, err := v.ReadAt(ctx, "a/c/"+fmt.Sprint(i), p, 1); n != 2 || err != nil || !bytes.Equal(p, chunkBytes(c, i)[1:3]) {
				t.Errorf("commit %d chunk %d [1:3] = %x, %d, %v", c, i, p, n, err)
			}
		}
		if _, err := v.Get(ctx, "a/c/"+fmt.Sprint(chunks)); !errors.Is(err, zmap.ErrNotFound) {
			t.Errorf("chunk past the grid: %v", err)
		}
		ents, err := v.Search(ctx, "a/c")
		if err != nil || len(ents) != chunks {
			t.Errorf("commit %d: %d chunks listed, %v", c, len(ents), err)
		}
	}
}

// TestShortChunkFile: a chunk whose reference runs past its chunk file
// is an error, never short or zero bytes, never a missing chunk.
func TestShortChunkFile(t *testing.T) {
	ctx := context.Background()
	dir, w := manyCommits(t, 1, 4)
	// Cut the packed file in the middle of its third chunk.
	path := dir + "/chunks/" + w.Chunks[0].String()
	if err := truncateFile(path, 9); err != nil {
		t.Fatal(err)
	}
	fst, _ := file.Open(dir)
	defer fst.Close()
	r, err := icechunk.Open(ctx, fst, icechunk.Options{})
	if err != nil {
		t.Fatal(err)
	}
	v, err := r.Version(ctx, w.Snapshots[0])
	if err != nil {
		t.Fatal(err)
	}
	if got, err := v.Get(ctx, "a/c/1"); err != nil || !bytes.Equal(got, chunkBytes(0, 1)) {
		t.Errorf("whole chunk: %x, %v", got, err)
	}
	_, err = v.Get(ctx, "a/c/2")
	if err == nil || errors.Is(err, zmap.ErrNotFound) || !strings.Contains(err.Error(), w.Chunks[0].String()) {
		t.Errorf("cut chunk: %v", err)
	}
	p := make([]byte, 4)
	if n, err := v.ReadAt(ctx, "a/c/2", p, 0); err == nil || errors.Is(err, zmap.ErrNotFound) {
		t.Errorf("cut chunk ReadAt: %d, %v", n, err)
	}
}

// TestVirtualETag: a virtual reference with an ETag reads while the
// object has it, and fails with ErrChanged once it has another.
func TestVirtualETag(t *testing.T) {
	ctx := context.Background()
	a := icechunktest.Node{Path: "/a", ZarrJSON: arrayJSON(1), Array: true, Chunks: []icechunktest.Chunk{
		{Index: []uint32{0}, Location: "s3://testbucket/f.nc", Offset: 2, Length: 4, ETag: `"v1"`},
	}}
	dir := t.TempDir()
	w, err := icechunktest.Write(dir, icechunktest.Repo{
		Commits:  []icechunktest.Commit{{Message: "virtual", Parent: -1, Nodes: []icechunktest.Node{{Path: "/", ZarrJSON: []byte(groupJSON)}, a}}},
		Branches: map[string]int{"main": 0},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		etag string
		want error
	}{{"v1", nil}, {"v2", icechunk.ErrChanged}} {
		fst, _ := file.Open(dir)
		r, err := icechunk.Open(ctx, fst, icechunk.Options{
			Opener:  etagOpener{etag: c.etag, data: []byte("..wxyz..")},
			Virtual: []string{"s3://testbucket"},
		})
		if err != nil {
			t.Fatal(err)
		}
		v, err := r.Version(ctx, w.Snapshots[0])
		if err != nil {
			t.Fatal(err)
		}
		got, err := v.Get(ctx, "a/c/0")
		if c.want == nil && (err != nil || string(got) != "wxyz") || c.want != nil && !errors.Is(err, c.want) {
			t.Errorf("ETag %s: %q, %v; want %v", c.etag, got, err, c.want)
		}
		fst.Close()
	}
}

type etagOpener struct {
	etag string
	data []byte
}

func (o etagOpener) Open(ctx context.Context, url string) (zmap.Store, string, error) {
	return etagStore{memStore{"f.nc": o.data}, o.etag}, "f.nc", nil
}

type etagStore struct {
	memStore
	etag string
}

func (s etagStore) Stat(ctx context.Context, key string) (zmap.Entry, error) {
	e, err := s.memStore.Stat(ctx, key)
	e.ETag = s.etag
	return e, err
}

func truncateFile(path string, n int64) error { return os.Truncate(path, n) }

// TestConcurrentReads reads every chunk of several versions from many
// goroutines at once, with a manifest cache too small to keep them: each
// read gets its own bytes (run with -race).
func TestConcurrentReads(t *testing.T) {
	ctx := context.Background()
	const n, chunks = 6, 12
	dir, w := manyCommits(t, n, chunks)
	fst, _ := file.Open(dir)
	defer fst.Close()
	r, err := icechunk.Open(ctx, fst, icechunk.Options{CacheBytes: 1})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 16*n*chunks)
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c := range n {
				c = (c + g) % n
				v, err := r.Version(ctx, w.Snapshots[c])
				if err != nil {
					errs <- err
					return
				}
				for i := range chunks {
					got, err := v.Get(ctx, fmt.Sprintf("a/c/%d", i))
					if err != nil || !bytes.Equal(got, chunkBytes(c, i)) {
						errs <- fmt.Errorf("commit %d chunk %d: %x, %v", c, i, got, err)
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
