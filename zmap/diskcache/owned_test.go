package diskcache_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nczarrfs/nczarrfs/zmap/diskcache"
)

// userFile is what a file or link not the cache's held before the cache
// ran: it must hold the same after.
type userFile struct {
	mode  fs.FileMode // type bits
	data  []byte      // a file's bytes
	link  string      // a link's target
	mtime time.Time
}

// snapshot records every file and link under the roots, except under the
// paths skip (the cache's own folders), by path.
func snapshot(t *testing.T, skip func(p string) bool, roots ...string) map[string]userFile {
	t.Helper()
	out := map[string]userFile{}
	for _, root := range roots {
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() || skip(p) {
				return nil
			}
			info, err := os.Lstat(p)
			if err != nil {
				return err
			}
			u := userFile{mode: info.Mode().Type(), mtime: info.ModTime()}
			if u.mode&fs.ModeSymlink != 0 {
				u.link, err = os.Readlink(p)
			} else {
				u.data, err = os.ReadFile(p)
			}
			if err != nil {
				return err
			}
			out[p] = u
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// sameFiles fails t unless every file of before is still there, the same.
func sameFiles(t *testing.T, before, after map[string]userFile) {
	t.Helper()
	for p, b := range before {
		a, ok := after[p]
		switch {
		case !ok:
			t.Errorf("%s: gone", p)
		case a.mode != b.mode || a.link != b.link:
			t.Errorf("%s: was %v -> %q, now %v -> %q", p, b.mode, b.link, a.mode, a.link)
		case !bytes.Equal(a.data, b.data):
			t.Errorf("%s: its %d bytes changed (now %d)", p, len(b.data), len(a.data))
		case !a.mtime.Equal(b.mtime):
			t.Errorf("%s: modification time %v, now %v", p, b.mtime, a.mtime)
		}
	}
}

// plant writes a file of size random bytes at p, dated long ago (the
// first an eviction by age would remove).
func plant(t *testing.T, p string, size int, seed uint64) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, size)
	r := rand.NewChaCha8([32]byte{byte(seed), byte(seed >> 8)})
	r.Read(b)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	old := time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)
	if err := os.Chtimes(p, old, old); err != nil {
		t.Fatal(err)
	}
}

func symlink(t *testing.T, target, p string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, p); err != nil {
		t.Fatal(err)
	}
}

// layoutBytes is what the cache's own files take under dir: files of the
// layout's names in its folders.
func layoutBytes(t *testing.T, dir string) (n int, total int64) {
	t.Helper()
	v1 := filepath.Join(dir, "nczarrfs-cache", "v1")
	filepath.WalkDir(v1, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil
		}
		rel, _ := filepath.Rel(v1, p)
		parts := strings.Split(rel, string(filepath.Separator))
		if len(parts) != 3 || !isHex(parts[0], 24) || !isHex(parts[1], 2) || !isHex(parts[2], 30) {
			return nil
		}
		info, err := d.Info()
		if st, ok := info.Sys().(*syscall.Stat_t); err == nil && ok && st.Nlink == 1 {
			n++
			total += info.Size()
		}
		return nil
	})
	return n, total
}

// isHex reports whether s is n lowercase hex digits.
func isHex(s string, n int) bool {
	return len(s) == n && strings.Trim(s, "0123456789abcdef") == ""
}

// TestForeignFilesKept gives the cache a folder full of the user's files
// (top-level, nested, inside the cache's layout under names not its own,
// named like the cache's files of old, links to files and folders
// outside), all older than anything the cache writes, and a budget the
// user's files alone exceed; two stores (two mounts) share the folder and
// read far more than the budget: every file of the user's keeps its bytes
// and time, nothing outside is touched, the cache's own files stay within
// the budget, and every read is right.
func TestForeignFilesKept(t *testing.T) {
	for _, budget := range []int64{1 << 20, 8 << 20} {
		t.Run(fmt.Sprintf("%dMiB", budget>>20), func(t *testing.T) {
			ctx := context.Background()
			objSize := int(budget / 16)
			inner, want := objects(t, 40, objSize)
			dir, outside := t.TempDir(), t.TempDir()
			ds, _, _ := diskcache.FileName("ds", "a/0.0", inner.entry(t, "a/0.0"))
			layout := filepath.Join(dir, "nczarrfs-cache")
			mine := filepath.Join(layout, "v1", ds)
			seed := uint64(1)
			for _, f := range []struct {
				path string
				size int
			}{
				{"notes.bin", 2 << 20},
				{"README", 10},
				{"sub/deep/data.csv", 300 << 10},
				{".hidden", 5},
				{"nczarrfs-cache/README", 100},
				{"nczarrfs-cache/v1/mine.txt", 4 << 10},
				{"nczarrfs-cache/v2/" + strings.Repeat("a", 24) + "/ab/" + strings.Repeat("c", 30), 70 << 10},
				{"nczarrfs-cache/v1/" + ds + "/notes", 60 << 10},
				{"nczarrfs-cache/v1/" + ds + "/ab/foreign.dat", 90 << 10},
				{"nczarrfs-cache/v1/" + ds + "/ab/" + strings.Repeat("C", 30), 90 << 10},
				{"nczarrfs-cache/v1/" + ds + "/ab/" + strings.Repeat("c", 29), 90 << 10},
				{"nczarrfs-cache/v1/" + ds + "/ab/.tmp-" + strings.Repeat("1", 15), 90 << 10},
				{"nczarrfs-cache/v1/" + ds + "/abc/" + strings.Repeat("c", 30), 90 << 10},
				{"nczarrfs-cache/v1/" + strings.Repeat("D", 24) + "/ab/" + strings.Repeat("c", 30), 90 << 10},
				// Named like the cache's files before it had a layout.
				{strings.Repeat("0", 24) + "/12/" + strings.Repeat("3", 30), 500 << 10},
				{ds + "/ab/" + strings.Repeat("4", 30), 500 << 10},
			} {
				plant(t, filepath.Join(dir, f.path), f.size, seed)
				seed++
			}
			// A folder named as a cache file; a cache-named file with a
			// second link (the user's file linked in).
			plant(t, filepath.Join(mine, "ab", strings.Repeat("e", 30), "inside"), 1000, seed)
			plant(t, filepath.Join(outside, "linked"), 200<<10, seed+1)
			if err := os.Link(filepath.Join(outside, "linked"), filepath.Join(mine, "ab", strings.Repeat("f", 30))); err != nil {
				t.Fatal(err)
			}
			// Links, under cache names and not, to files and folders
			// outside; the folder holds cache-named files.
			plant(t, filepath.Join(outside, "folder", "ab", strings.Repeat("a", 30)), 300<<10, seed+2)
			plant(t, filepath.Join(outside, "folder", strings.Repeat("b", 30)), 300<<10, seed+3)
			plant(t, filepath.Join(outside, "file"), 300<<10, seed+4)
			for _, l := range []struct{ target, path string }{
				{filepath.Join(outside, "file"), "link-top"},
				{filepath.Join(outside, "folder"), "nczarrfs-cache/v1/" + strings.Repeat("9", 24)},
				{filepath.Join(outside, "folder"), "nczarrfs-cache/v1/" + ds + "/cd"},
				{filepath.Join(outside, "folder"), "nczarrfs-cache/v1/" + ds + "/ab/" + strings.Repeat("0", 30)},
				{filepath.Join(outside, "file"), "nczarrfs-cache/v1/" + ds + "/ab/" + strings.Repeat("1", 30)},
				{filepath.Join(outside, "folder", "ab"), "nczarrfs-cache/v1/" + ds + "/ef"},
			} {
				symlink(t, l.target, filepath.Join(dir, l.path))
			}
			notMine := func(p string) bool { return false }
			before := snapshot(t, notMine, dir, outside)

			var stores []*diskcache.Store
			for range 2 {
				s, err := diskcache.New(inner, dir, "ds", diskcache.Options{MaxBytes: budget})
				if err != nil {
					t.Fatal(err)
				}
				stores = append(stores, s)
			}
			buf := make([]byte, 2*objSize)
			for round := range 2 {
				for i := range 40 {
					key := fmt.Sprintf("a/%d.0", i)
					s := stores[(i+round)%2]
					n, err := s.ReadAt(ctx, key, buf, 0)
					if err != io.EOF || !bytes.Equal(buf[:n], want[key]) {
						t.Fatalf("round %d: ReadAt(%s) = %d bytes, %v; want %d bytes", round, key, n, err, len(want[key]))
					}
					if n, total := layoutBytes(t, dir); total > budget {
						t.Fatalf("the cache's %d files take %d bytes, over the budget %d", n, total, budget)
					}
				}
			}
			// The last object read is still cached: the second store (a
			// second mount) reads it from the folder. An object whose
			// shard folder is one of the planted links is never cached
			// (nothing is written through a link): the newest of the
			// others is checked. Its shard depends on the object's
			// identity, new in each run.
			last := ""
			for i := 39; i >= 30 && last == ""; i-- {
				key := fmt.Sprintf("a/%d.0", i)
				if _, shard, _ := diskcache.FileName("ds", key, inner.entry(t, key)); shard != "cd" && shard != "ef" {
					last = key
				}
			}
			reads := inner.reads.Load()
			if got, err := stores[(39+1)%2].Get(ctx, last); err != nil || !bytes.Equal(got, want[last]) || inner.reads.Load() != reads {
				t.Errorf("%s from the shared folder: %v, store reads %d -> %d", last, err, reads, inner.reads.Load())
			}
			if st := stores[1].Stats(); st.Written == 0 {
				t.Errorf("stats %+v: nothing written", st)
			}
			after := snapshot(t, notMine, dir, outside)
			sameFiles(t, before, after)
			tag, err := os.ReadFile(filepath.Join(layout, "CACHEDIR.TAG"))
			if err != nil || !bytes.HasPrefix(tag, []byte("Signature: 8a477f597d28d172789f06886806bc55")) {
				t.Errorf("CACHEDIR.TAG: %q, %v", tag, err)
			}
		})
	}
}

// TestPlantedLinks plants links in the places of the layout's folders and
// files, each to a place outside holding a valid cache file of the
// object read with other bytes: New refuses a linked layout folder
// (writing nothing outside), and a linked shard folder or file is never
// read, written through or removed; reads stay right.
func TestPlantedLinks(t *testing.T) {
	for _, openat2 := range []bool{true, false} {
		t.Run(fmt.Sprintf("openat2=%v", openat2), func(t *testing.T) {
			defer diskcache.UseOpenat2(diskcache.UseOpenat2(openat2))
			testPlantedLinks(t)
		})
	}
}

func testPlantedLinks(t *testing.T) {
	ctx := context.Background()
	inner, want := objects(t, 1, 40000)
	const key = "a/0.0"
	ds, shard, file := diskcache.FileName("ds", key, inner.entry(t, key))
	wrong := bytes.Clone(want[key])
	wrong[100] ^= 0xff
	for _, tc := range []struct {
		name   string
		link   string // where the link is, under the cache folder
		target string // what it points at, under the outside folder
		refuse bool
	}{
		{"top folder", "nczarrfs-cache", "t", true},
		{"version folder", "nczarrfs-cache/v1", "t", true},
		{"dataset folder", "nczarrfs-cache/v1/" + ds, "t", true},
		{"shard folder", "nczarrfs-cache/v1/" + ds + "/" + shard, "t", false},
		{"cache file", "nczarrfs-cache/v1/" + ds + "/" + shard + "/" + file, "t/" + file, false},
		{"tag", "nczarrfs-cache/CACHEDIR.TAG", "t/tag", false},
		{"dangling", "nczarrfs-cache/v1/" + ds + "/" + shard + "/" + file, "nothing/" + file, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, outside := t.TempDir(), t.TempDir()
			// Outside: a valid cache file of the object with a wrong
			// byte, wherever a link could lead a read.
			for _, p := range []string{
				file, "t/" + file, "t/" + shard + "/" + file, "t/" + ds + "/" + shard + "/" + file,
				"t/v1/" + ds + "/" + shard + "/" + file,
			} {
				p = filepath.Join(outside, p)
				os.MkdirAll(filepath.Dir(p), 0o755)
				if err := os.WriteFile(p, diskcache.Encode(wrong), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			plant(t, filepath.Join(outside, "t", "tag"), 10, 1)
			symlink(t, filepath.Join(outside, tc.target), filepath.Join(dir, tc.link))
			before := snapshot(t, func(string) bool { return false }, outside)

			s, err := diskcache.New(inner, dir, "ds", diskcache.Options{MaxBytes: 1 << 20})
			if tc.refuse {
				if err == nil {
					t.Fatalf("New over a linked %s succeeded", tc.name)
				}
				t.Logf("refused: %v", err)
			} else {
				if err != nil {
					t.Fatal(err)
				}
				buf := make([]byte, 50000)
				for range 3 {
					got, err := s.Get(ctx, key)
					if err != nil || !bytes.Equal(got, want[key]) {
						t.Fatalf("Get = %d bytes, %v; want the object", len(got), err)
					}
					n, err := s.ReadAt(ctx, key, buf[:200], 50)
					if err != nil || !bytes.Equal(buf[:n], want[key][50:250]) {
						t.Fatalf("ReadAt = %d bytes, %v; want bytes 50-250 of the object", n, err)
					}
				}
			}
			after := snapshot(t, func(string) bool { return false }, outside)
			sameFiles(t, before, after)
			if len(after) != len(before) {
				t.Errorf("outside holds %d files, held %d", len(after), len(before))
			}
		})
	}
}

// TestPartialReadsChecked flips one byte of a cached object's file (in
// the object, in its CRC table, in its footer) and reads parts of it: a
// read that touches the damage reads the store's bytes, never the
// flipped one; a read that does not is served from the file.
func TestPartialReadsChecked(t *testing.T) {
	ctx := context.Background()
	const bs = diskcache.BlockSize
	inner, want := objects(t, 1, 5*bs+1000)
	const key = "a/0.0"
	data := want[key]
	size := int64(len(data))
	ds, shard, file := diskcache.FileName("ds", key, inner.entry(t, key))
	for _, tc := range []struct {
		name     string
		flip     int64 // the byte of the file flipped
		off, n   int64 // the read
		fromFile bool  // the read is served from the file
	}{
		{"4 KiB in the damaged block", 3*bs + 10, 3*bs + 8, 4096, false},
		{"1 byte on the damaged byte", 2*bs + 5, 2*bs + 5, 1, false},
		{"across blocks into the damage", 2*bs + 5, bs + 100, bs, false},
		{"whole blocks", bs + 1, bs, 2 * bs, false},
		{"in the short last block", 5*bs + 10, 5*bs + 500, 100, false},
		{"past the end from the last block", 5*bs + 999, 5*bs + 900, 1000, false},
		{"from 0 to the end", 4*bs + 3, 0, size + 10, false},
		{"another block", 3*bs + 10, bs, 4096, true},
		{"the damaged block's CRC", size + 4*3, 3*bs + 8, 4096, false},
		{"another block's CRC", size + 4*3, 10, 4096, true},
		{"the footer", size + 4*6 + 5, 10, 4096, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			s, err := diskcache.New(inner, dir, "ds", diskcache.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.Get(ctx, key); err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(dir, "nczarrfs-cache", "v1", ds, shard, file)
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			b[tc.flip] ^= 0x5a
			if err := os.WriteFile(p, b, 0o600); err != nil {
				t.Fatal(err)
			}
			reads, hits := inner.reads.Load(), s.Stats().Hits
			buf := make([]byte, tc.n)
			n, err := s.ReadAt(ctx, key, buf, tc.off)
			end := min(tc.off+tc.n, size)
			wantErr := error(nil)
			if end < tc.off+tc.n {
				wantErr = io.EOF
			}
			if err != wantErr || !bytes.Equal(buf[:n], data[tc.off:end]) {
				t.Fatalf("ReadAt(%d, %d) = %d bytes, %v; want bytes %d-%d of the object, %v", tc.off, tc.n, n, err, tc.off, end, wantErr)
			}
			fromFile := inner.reads.Load() == reads
			if fromFile != tc.fromFile || (s.Stats().Hits > hits) != tc.fromFile {
				t.Errorf("served from the file: %v; want %v", fromFile, tc.fromFile)
			}
		})
	}
}

// BenchmarkCachedRead reads a cached 64 MiB object: 4 KiB and 1 MiB at
// spread offsets, and whole.
func BenchmarkCachedRead(b *testing.B) {
	ctx := context.Background()
	dir := b.TempDir()
	data := make([]byte, 64<<20)
	rand.NewChaCha8([32]byte{7}).Read(data)
	if err := os.MkdirAll(filepath.Join(dir, "src", "a"), 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "src", "a", "0.0"), data, 0o644); err != nil {
		b.Fatal(err)
	}
	inner := openCounting(b, filepath.Join(dir, "src"))
	s, err := diskcache.New(inner, filepath.Join(dir, "cache"), "ds", diskcache.Options{MaxBytes: 1 << 30})
	if err != nil {
		b.Fatal(err)
	}
	whole := make([]byte, len(data)+1)
	if n, err := s.ReadAt(ctx, "a/0.0", whole, 0); err != io.EOF || n != len(data) {
		b.Fatal(n, err)
	}
	for _, size := range []int{4 << 10, 1 << 20, len(data) + 1} {
		name := fmt.Sprintf("%dKiB", size>>10)
		if size > len(data) {
			name = "whole"
		}
		b.Run(name, func(b *testing.B) {
			buf := make([]byte, size)
			b.SetBytes(int64(min(size, len(data))))
			i := 0
			for b.Loop() {
				off := int64(0)
				if size < len(data) {
					off = int64(i*7919*4096+123) % int64(len(data)-size)
				}
				i++
				if _, err := s.ReadAt(ctx, "a/0.0", buf, off); err != nil && err != io.EOF {
					b.Fatal(err)
				}
			}
			if inner.reads.Load() != 1 {
				b.Fatalf("the store was read %d times", inner.reads.Load())
			}
		})
	}
}

// TestLayoutRemovedUnderStore removes the cache's folder while a Store
// uses it: reads stay right (from the store), and a new Store makes the
// layout again and caches.
func TestLayoutRemovedUnderStore(t *testing.T) {
	ctx := context.Background()
	inner, want := objects(t, 3, 3000)
	dir := t.TempDir()
	s, err := diskcache.New(inner, dir, "ds", diskcache.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "a/0.0"); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(dir, "nczarrfs-cache")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4000)
	for key, data := range want {
		for range 2 {
			n, err := s.ReadAt(ctx, key, buf, 0)
			if err != io.EOF || !bytes.Equal(buf[:n], data) {
				t.Fatalf("ReadAt(%s) with the layout gone = %d bytes, %v", key, n, err)
			}
		}
	}
	s2, err := diskcache.New(inner, dir, "ds", diskcache.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if got, err := s2.Get(ctx, "a/1.0"); err != nil || !bytes.Equal(got, want["a/1.0"]) {
			t.Fatalf("Get = %d bytes, %v", len(got), err)
		}
	}
	if st := s2.Stats(); st.Hits != 1 || st.Written != 1 {
		t.Errorf("a new Store after the layout was removed: %+v; want the object written and read back", st)
	}
}
