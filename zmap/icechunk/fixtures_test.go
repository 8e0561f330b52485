package icechunk_test

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nczarrfs/nczarrfs/internal/testenv"
	"github.com/nczarrfs/nczarrfs/nczarr"
	_ "github.com/nczarrfs/nczarrfs/nczarr/codec/all" // zstd, which the fixtures use
	"github.com/nczarrfs/nczarrfs/zmap"
	"github.com/nczarrfs/nczarrfs/zmap/file"
	"github.com/nczarrfs/nczarrfs/zmap/icechunk"
)

// fixtures is where the repositories of icechunk's read-compatibility
// tests are (shared/fixtures/icechunk beside the repository root, see its
// README); their expected contents are those
// icechunk-python/tests/test_can_read_old.py asserts.
const fixtures = "../../../shared/fixtures/icechunk"

// memOpener is an Opener of one in-memory object, standing in for the
// bucket of the fixtures' virtual chunk (s3://testbucket/can_read_old/chunk-1).
type memOpener struct {
	objects map[string][]byte
}

func (o memOpener) Open(ctx context.Context, url string) (zmap.Store, string, error) {
	bucket, key, _ := strings.Cut(strings.TrimPrefix(url, "s3://"), "/")
	if bucket != "testbucket" {
		return nil, "", zmap.ErrPermission
	}
	return memStore(o.objects), key, nil
}

type memStore map[string][]byte

func (m memStore) Get(ctx context.Context, key string) ([]byte, error) {
	b, ok := m[key]
	if !ok {
		return nil, zmap.ErrNotFound
	}
	return slices.Clone(b), nil
}

func (m memStore) ReadAt(ctx context.Context, key string, p []byte, off int64) (int, error) {
	b, ok := m[key]
	if !ok {
		return 0, zmap.ErrNotFound
	}
	if off >= int64(len(b)) {
		return 0, errEOF
	}
	n := copy(p, b[off:])
	if n < len(p) {
		return n, errEOF
	}
	return n, nil
}

func (m memStore) Size(ctx context.Context, key string) (int64, error) {
	e, err := m.Stat(ctx, key)
	return e.Size, err
}

func (m memStore) Stat(ctx context.Context, key string) (zmap.Entry, error) {
	b, ok := m[key]
	if !ok {
		return zmap.Entry{}, zmap.ErrNotFound
	}
	return zmap.Entry{Name: key, Size: int64(len(b))}, nil
}

func (m memStore) Search(ctx context.Context, prefix string) ([]zmap.Entry, error) {
	return nil, nil
}

func (m memStore) Close() error { return nil }

func openFixture(t *testing.T, name string, opts icechunk.Options) *icechunk.Repository {
	t.Helper()
	_, err := os.Stat(filepath.Join(fixtures, name))
	testenv.Require(t, "the Icechunk fixtures ../shared/fixtures/icechunk", err)
	st, err := file.Open(filepath.Join(fixtures, name))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	r, err := icechunk.Open(context.Background(), st, opts)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func messages(t *testing.T, r *icechunk.Repository, id icechunk.ID) []string {
	t.Helper()
	anc, err := r.Ancestry(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, s := range anc {
		out = append(out, s.Message)
	}
	return out
}

// values reads the whole array at path of the store as float64s.
func values(t *testing.T, st zmap.Store, path string) ([]float64, error) {
	t.Helper()
	ctx := context.Background()
	ds, err := nczarr.Open(ctx, st, nczarr.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := ds.Ready(ctx, path); err != nil {
		t.Fatal(err)
	}
	a := ds.Array(path)
	if a == nil {
		t.Fatalf("no array %s (arrays: %v)", path, ds.Arrays())
	}
	p := make([]byte, a.Size())
	if _, err := a.ReadAt(ctx, p, 0); err != nil {
		return nil, err
	}
	var out []float64
	switch a.ItemSize {
	case 1:
		for _, b := range p {
			out = append(out, float64(int8(b)))
		}
	case 4:
		for i := 0; i+4 <= len(p); i += 4 {
			out = append(out, float64(math.Float32frombits(binary.LittleEndian.Uint32(p[i:]))))
		}
	case 8:
		for i := 0; i+8 <= len(p); i += 8 {
			out = append(out, float64(int64(binary.LittleEndian.Uint64(p[i:]))))
		}
	default:
		t.Fatalf("%s: item size %d", path, a.ItemSize)
	}
	return out, nil
}

func all(v float64, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = v
	}
	return out
}

func equal(a, b []float64) bool {
	return slices.EqualFunc(a, b, func(x, y float64) bool { return x == y || math.IsNaN(x) && math.IsNaN(y) })
}

func version(t *testing.T, r *icechunk.Repository, id icechunk.ID) *icechunk.Store {
	t.Helper()
	st, err := r.Version(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func wantValues(t *testing.T, st zmap.Store, path string, want []float64) {
	t.Helper()
	got, err := values(t, st, path)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if !equal(got, want) {
		t.Errorf("%s = %v, want %v", path, got, want)
	}
}

func names(t *testing.T, st zmap.Store, prefix string) []string {
	t.Helper()
	ents, err := st.Search(context.Background(), prefix)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name)
	}
	return out
}

// TestCanReadOld reads test-repo-v1, -v2 and -v2-migrated as
// do_icechunk_can_read_old_repo does.
func TestCanReadOld(t *testing.T) {
	ctx := context.Background()
	mainHistory := []string{"set virtual chunk", "fill data", "empty structure", "Repository initialized"}
	branchHistory := append([]string{"some more structure", "delete a chunk"}, mainHistory...)
	for _, name := range []string{"test-repo-v1", "test-repo-v2", "test-repo-v2-migrated"} {
		t.Run(name, func(t *testing.T) {
			// The virtual chunk holds the bytes of the native chunk c/0/1.
			plain := openFixture(t, name, icechunk.Options{})
			mainID, err := plain.Branch(ctx, "main")
			if err != nil {
				t.Fatal(err)
			}
			chunk, err := version(t, plain, mainID).Get(ctx, "group1/big_chunks/c/0/1")
			if err != nil {
				t.Fatal(err)
			}
			r := openFixture(t, name, icechunk.Options{
				Opener:  memOpener{map[string][]byte{"can_read_old/chunk-1": chunk}},
				Virtual: []string{"s3://testbucket"},
			})

			if got := messages(t, r, mainID); !slices.Equal(got, mainHistory) {
				t.Errorf("main history %q, want %q", got, mainHistory)
			}
			branchID, err := r.Branch(ctx, "my-branch")
			if err != nil {
				t.Fatal(err)
			}
			if got := messages(t, r, branchID); !slices.Equal(got, branchHistory) {
				t.Errorf("my-branch history %q, want %q", got, branchHistory)
			}
			for tag, want := range map[string][]string{"it also works!": branchHistory, "it works!": branchHistory[1:]} {
				id, err := r.Tag(ctx, tag)
				if err != nil {
					t.Fatal(err)
				}
				if got := messages(t, r, id); !slices.Equal(got, want) {
					t.Errorf("tag %q history %q, want %q", tag, got, want)
				}
			}
			if _, err := r.Tag(ctx, "deleted"); !errors.Is(err, icechunk.ErrNoRef) {
				t.Errorf("tag deleted: %v, want ErrNoRef", err)
			}
			if tags, err := r.Tags(ctx); err != nil || !slices.Equal(tags, []string{"it also works!", "it works!"}) {
				t.Errorf("tags %q, %v", tags, err)
			}
			if br, err := r.Branches(ctx); err != nil || !slices.Equal(br, []string{"main", "my-branch"}) {
				t.Errorf("branches %q, %v", br, err)
			}

			st := version(t, r, branchID)
			for prefix, want := range map[string][]string{
				"":                                  {"group1", "group2", "zarr.json"},
				"group1":                            {"big_chunks", "small_chunks", "zarr.json"},
				"group2":                            {"group3", "zarr.json"},
				"group2/group3/group4/group5":       {"inner", "zarr.json"},
				"group2/group3/group4/group5/inner": {"zarr.json"},
				"group1/small_chunks/c":             {"0", "1", "2", "3"},
				"group1/big_chunks/c/0":             {"0", "1"},
			} {
				if got := names(t, st, prefix); !slices.Equal(got, want) {
					t.Errorf("list %q = %q, want %q", prefix, got, want)
				}
			}
			wantValues(t, st, "group2/group3/group4/group5/inner", all(math.NaN(), 100))
			wantValues(t, st, "group1/small_chunks", []float64{84, 84, 84, 84, 8})
			wantValues(t, st, "group1/big_chunks", all(42, 100))
			if _, err := st.Get(ctx, "group1/small_chunks/c/4"); !errors.Is(err, zmap.ErrNotFound) {
				t.Errorf("deleted chunk: %v, want ErrNotFound", err)
			}
			main := version(t, r, mainID)
			wantValues(t, main, "group1/small_chunks", all(84, 5))
			wantValues(t, main, "group1/big_chunks", all(42, 100))

			// The first commit with arrays has no chunks: all fill values.
			anc, _ := r.Ancestry(ctx, mainID)
			empty := version(t, r, anc[2].ID)
			wantValues(t, empty, "group1/small_chunks", all(8, 5))
			wantValues(t, empty, "group1/big_chunks", all(math.NaN(), 100))

			// Without the prefix allowed, the virtual chunk fails (never
			// the fill value).
			if _, err := version(t, plain, mainID).Get(ctx, "group1/big_chunks/c/0/0"); !errors.Is(err, icechunk.ErrNotAllowed) {
				t.Errorf("virtual chunk not allowed: %v", err)
			}
			if _, err := values(t, version(t, plain, mainID), "group1/big_chunks"); err == nil {
				t.Error("big_chunks read without the virtual chunk allowed")
			}

			all, err := r.Snapshots(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(all) != 6 || all[0].Message != "some more structure" || all[5].Message != "Repository initialized" {
				t.Errorf("snapshots: %+v", all)
			}
		})
	}
}

// TestCanReadOldSplit reads the split-repo fixtures as
// do_icechunk_can_read_old_repo_with_manifest_splitting does, and their
// values as write_a_split_repo wrote them.
func TestCanReadOldSplit(t *testing.T) {
	ctx := context.Background()
	for _, name := range []string{"split-repo-v1", "split-repo-v2", "split-repo-v2-migrated"} {
		t.Run(name, func(t *testing.T) {
			r := openFixture(t, name, icechunk.Options{})
			mainID, err := r.Branch(ctx, "main")
			if err != nil {
				t.Fatal(err)
			}
			anc, err := r.Ancestry(ctx, mainID)
			if err != nil {
				t.Fatal(err)
			}
			slices.Reverse(anc)
			for i, want := range []struct {
				msg          string
				manifests    int
				split, small float64
			}{
				1: {"empty structure", 0, math.NaN(), 8},
				2: {"write data", 9, 120, 0},
				3: {"write data again", 9, 12, 1},
				4: {"write data again with more splits", 17, 14, 3},
			} {
				if i == 0 {
					continue
				}
				if anc[i].Message != want.msg {
					t.Errorf("snapshot %d: %q, want %q", i, anc[i].Message, want.msg)
				}
				st := version(t, r, anc[i].ID)
				ids := map[icechunk.ID]bool{}
				for _, n := range st.Snapshot().Nodes {
					for _, m := range n.Manifests {
						ids[m.ID] = true
					}
				}
				if len(ids) != want.manifests {
					t.Errorf("%q: %d manifests, want %d", want.msg, len(ids), want.manifests)
				}
				wantValues(t, st, "group1/split", all(want.split, 100))
				wantValues(t, st, "group1/small_chunks", all(want.small, 5))
			}
		})
	}
}

// TestReadExpired reads the expire-repo fixtures as do_read_expired_repo
// does (transaction logs aside).
func TestReadExpired(t *testing.T) {
	ctx := context.Background()
	for _, name := range []string{"expire-repo-v1-by-1.1.21", "expire-repo-v1-by-2.0.5", "expire-repo-v2-by-2.0.5", "expire-repo-v1-by-working-copy", "expire-repo-v2-by-working-copy"} {
		t.Run(name, func(t *testing.T) {
			r := openFixture(t, name, icechunk.Options{})
			br, err := r.Branches(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Contains(br, "main") || !slices.Contains(br, "feature") || slices.Contains(br, "doomed1") || slices.Contains(br, "doomed2") {
				t.Errorf("branches %q", br)
			}
			tags, err := r.Tags(ctx)
			if err != nil || !slices.Contains(tags, "protect-b") {
				t.Errorf("tags %q, %v", tags, err)
			}
			for ref, want := range map[string][]string{
				"branch main":    {"write j", "Repository initialized"},
				"branch feature": {"feature post-t2", "Repository initialized"},
				"tag protect-b":  {"write b", "Repository initialized"},
			} {
				kind, n, _ := strings.Cut(ref, " ")
				var id icechunk.ID
				if kind == "tag" {
					id, err = r.Tag(ctx, n)
				} else {
					id, err = r.Branch(ctx, n)
				}
				if err != nil {
					t.Fatal(err)
				}
				if got := messages(t, r, id); !slices.Equal(got, want) {
					t.Errorf("%s history %q, want %q", ref, got, want)
				}
			}
			mainID, _ := r.Branch(ctx, "main")
			st := version(t, r, mainID)
			data, err := values(t, st, "group1/data")
			if err != nil {
				t.Fatal(err)
			}
			ds, _ := nczarr.Open(ctx, st, nczarr.Options{})
			_ = ds.Ready(ctx, "group1/data")
			cols := int(ds.Array("group1/data").Meta.Shape[1])
			for row, want := range map[int]float64{0: 99, 5: 5, 8: 8, 11: 0} {
				if got := data[row*cols]; got != want {
					t.Errorf("data[%d,0] = %v, want %v", row, got, want)
				}
			}
			small, err := values(t, st, "group1/small")
			if err != nil || !equal(small, all(0, len(small))) {
				t.Errorf("small = %v, %v", small, err)
			}
		})
	}
}

var errEOF = io.EOF

// changedOpener serves the virtual chunk's object with a modification
// time after the reference's checksum.
type changedOpener struct{ memOpener }

func (o changedOpener) Open(ctx context.Context, url string) (zmap.Store, string, error) {
	st, key, err := o.memOpener.Open(ctx, url)
	return modStore{st.(memStore)}, key, err
}

type modStore struct{ memStore }

func (m modStore) Stat(ctx context.Context, key string) (zmap.Entry, error) {
	e, err := m.memStore.Stat(ctx, key)
	e.ModTime = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
	return e, err
}

// TestVirtualChanged: the fixtures' virtual reference carries a
// last-modified checksum; an object changed after it reads as an error
// (ErrChanged), never its new bytes.
func TestVirtualChanged(t *testing.T) {
	ctx := context.Background()
	r := openFixture(t, "test-repo-v2", icechunk.Options{
		Opener:  changedOpener{memOpener{map[string][]byte{"can_read_old/chunk-1": []byte("new bytes")}}},
		Virtual: []string{"s3://testbucket/"},
	})
	id, err := r.Branch(ctx, "main")
	if err != nil {
		t.Fatal(err)
	}
	_, err = version(t, r, id).Get(ctx, "group1/big_chunks/c/0/0")
	if !errors.Is(err, icechunk.ErrChanged) {
		t.Fatalf("changed object: %v, want ErrChanged", err)
	}
}

// TestAllowed: a prefix allows URLs that start with it, its trailing
// slash optional, and no other bucket whose name it begins.
func TestAllowed(t *testing.T) {
	for _, c := range []struct {
		prefixes []string
		url      string
		want     bool
	}{
		{[]string{"s3://testbucket/"}, "s3://testbucket/can_read_old/chunk-1", true},
		{[]string{"s3://testbucket"}, "s3://testbucket/x", true},
		{[]string{"s3://testbucket/can_read_old/"}, "s3://testbucket/can_read_old/x", true},
		{[]string{"s3://testbucket"}, "s3://testbucket2/x", false},
		{[]string{"s3://other/"}, "s3://testbucket/x", false},
		{nil, "s3://testbucket/x", false},
		{[]string{""}, "s3://testbucket/x", false},
	} {
		if got := icechunk.Allowed(c.prefixes, c.url); got != c.want {
			t.Errorf("Allowed(%q, %q) = %v", c.prefixes, c.url, got)
		}
	}
}

// TestManifestBoundOwn reads a one-byte inline chunk under a chunk's
// bound: the manifest the read needs is far larger than that bound, and is
// read under the repository files' own.
func TestManifestBoundOwn(t *testing.T) {
	r := openFixture(t, "test-repo-v2", icechunk.Options{})
	ctx := context.Background()
	id, err := r.Branch(ctx, "main")
	if err != nil {
		t.Fatal(err)
	}
	v, err := r.Version(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	got, err := v.Get(zmap.WithMaxSize(ctx, 64), "group1/small_chunks/c/0")
	if err != nil || len(got) == 0 || len(got) > 64 {
		t.Fatalf("inline chunk under a 64-byte bound: %v, %v", got, err)
	}
}
