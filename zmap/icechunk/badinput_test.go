package icechunk_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nczarrfs/nczarrfs/internal/testenv"
	"github.com/nczarrfs/nczarrfs/zmap"
	"github.com/nczarrfs/nczarrfs/zmap/file"
	"github.com/nczarrfs/nczarrfs/zmap/icechunk"
)

// copyRepo copies a fixture repository into a temporary folder that the
// test may damage.
func copyRepo(t *testing.T, name string) string {
	t.Helper()
	dst := t.TempDir()
	src := filepath.Join(fixtures, name)
	_, err := os.Stat(src)
	testenv.Require(t, "the Icechunk fixtures ../shared/fixtures/icechunk", err)
	err = filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// TestBadInput damages one object of a repository at a time: the reads
// that need it fail with an error naming it, the others still work, and a
// missing chunk file is never a missing chunk (the fill value).
func TestBadInput(t *testing.T) {
	ctx := context.Background()
	const (
		mainTip  = "2768FV3XW5ZXYM84XNNG" // test-repo-v2's main
		manifest = "WTMRMCW414QYFTX7JJPG" // big_chunks' manifest there
	)
	truncate := func(n int) func([]byte) []byte { return func(b []byte) []byte { return b[:n] } }
	flip := func(at int) func([]byte) []byte {
		return func(b []byte) []byte { b[at] ^= 0xff; return b }
	}
	for _, c := range []struct {
		name, repo, object string
		damage             func([]byte) []byte // nil: delete the object
		// fails is the step that must fail: "open", "version" or "chunk".
		fails, naming string
	}{
		{"truncated repo", "test-repo-v2", "repo", truncate(60), "open", "repo"},
		{"repo of another type", "test-repo-v2", "repo", func(b []byte) []byte { b[37] = 1; return b }, "open", "repo"},
		{"repo of unknown spec", "test-repo-v2", "repo", func(b []byte) []byte { b[36] = 9; return b }, "open", "unknown spec version 9"},
		{"truncated snapshot", "test-repo-v2", "snapshots/" + mainTip, truncate(50), "version", "snapshots/" + mainTip},
		{"snapshot of unknown spec", "test-repo-v2", "snapshots/" + mainTip, func(b []byte) []byte { b[36] = 3; return b }, "version", "snapshots/" + mainTip},
		{"missing snapshot", "test-repo-v2", "snapshots/" + mainTip, nil, "version", "snapshots/" + mainTip},
		{"corrupt manifest", "test-repo-v2", "manifests/" + manifest, flip(45), "chunk", "manifests/" + manifest},
		{"truncated manifest", "test-repo-v2", "manifests/" + manifest, truncate(39), "chunk", "manifests/" + manifest},
		{"missing manifest", "test-repo-v2", "manifests/" + manifest, nil, "chunk", "manifests/" + manifest},
		{"missing chunk file", "test-repo-v2", "chunks/*", nil, "chunk", "chunks/"},
		{"corrupt ref", "test-repo-v1", "refs/branch.main/ref.json", truncate(10), "version", "refs/branch.main/ref.json"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := copyRepo(t, c.repo)
			paths, _ := filepath.Glob(filepath.Join(dir, c.object))
			if len(paths) == 0 {
				t.Fatalf("no %s", c.object)
			}
			for _, p := range paths {
				if c.damage == nil {
					os.Remove(p)
					continue
				}
				b, _ := os.ReadFile(p)
				os.WriteFile(p, c.damage(b), 0o644)
			}
			fst, err := file.Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer fst.Close()
			check := func(step string, err error) bool {
				t.Helper()
				if step != c.fails {
					if err != nil {
						t.Fatalf("%s: %v", step, err)
					}
					return false
				}
				if err == nil {
					t.Fatalf("%s did not fail", step)
				}
				if !strings.Contains(err.Error(), c.naming) {
					t.Errorf("%s: %v, does not name %s", step, err, c.naming)
				}
				if errors.Is(err, zmap.ErrNotFound) && step == "chunk" {
					t.Errorf("%s: %v reads as a missing chunk", step, err)
				}
				return true
			}
			r, err := icechunk.Open(ctx, fst, icechunk.Options{})
			if check("open", err) {
				return
			}
			id, err := r.Branch(ctx, "main")
			var st *icechunk.Store
			if err == nil {
				st, err = r.Version(ctx, id)
			}
			if check("version", err) {
				return
			}
			if _, err := st.Get(ctx, "group1/big_chunks/zarr.json"); err != nil {
				t.Fatalf("zarr.json: %v", err)
			}
			_, err = st.Get(ctx, "group1/big_chunks/c/1/1")
			check("chunk", err)
		})
	}
}
