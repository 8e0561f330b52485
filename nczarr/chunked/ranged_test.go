package chunked_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/nczarrfs/nczarrfs/cache"
	"github.com/nczarrfs/nczarrfs/nczarr"
	"github.com/nczarrfs/nczarrfs/nczarr/codec"
	"github.com/nczarrfs/nczarrfs/zmap"
	"github.com/nczarrfs/nczarrfs/zmap/file"
)

// remoteStore is a real store that says it is remote, as S3 does, and
// counts the bytes read from it.
type remoteStore struct {
	zmap.Store
	remote bool
	read   atomic.Int64
}

func (s *remoteStore) Remote() bool { return s.remote }

func (s *remoteStore) ReadAt(ctx context.Context, key string, p []byte, off int64) (int, error) {
	n, err := s.Store.ReadAt(ctx, key, p, off)
	s.read.Add(int64(n))
	return n, err
}

// rangedArray writes with zarr-python an uncompressed int32 array of shape
// (40, 300), chunks (20, 100), fill -9, with chunk 1.2 never written, and
// its values as zarr-python reads them (expected.bin).
func rangedArray(t *testing.T) (dir string, want []byte) {
	t.Helper()
	dir = t.TempDir()
	script := `import sys, zarr, numpy as np
z = zarr.open(sys.argv[1] + "/a", mode="w", shape=(40, 300), chunks=(20, 100), dtype="<i4", compressor=None, fill_value=-9)
v = np.arange(40 * 300, dtype="<i4").reshape(40, 300)
z[:20, :] = v[:20, :]
z[20:, :200] = v[20:, :200]
zarr.open(sys.argv[1] + "/a", mode="r")[:].tofile(sys.argv[1] + "/expected.bin")
`
	if out, err := exec.Command("/usr/bin/python3", "-c", script, dir).CombinedOutput(); err != nil {
		t.Fatalf("zarr-python: %v\n%s", err, out)
	}
	want, err := os.ReadFile(filepath.Join(dir, "expected.bin"))
	if err != nil {
		t.Fatal(err)
	}
	return dir, want
}

func TestRangedReadsFetchOnlyWhatTheyNeed(t *testing.T) {
	dir, want := rangedArray(t)
	ctx := context.Background()
	const chunkBytes = 20 * 100 * 4
	for _, remote := range []bool{true, false} {
		st, err := file.Open(filepath.Join(dir, "a"))
		if err != nil {
			t.Fatal(err)
		}
		store := &remoteStore{Store: st, remote: remote}
		ds, err := nczarr.Open(ctx, store, nczarr.Options{})
		if err != nil {
			t.Fatal(err)
		}
		a := ds.Array("")
		for _, r := range []struct{ off, n int64 }{
			{0, 8}, {396, 16}, {1200 * 25, 4800}, {1200*39 + 800, 400}, {0, 48000}, {47996, 4},
		} {
			before := store.read.Load()
			buf := make([]byte, r.n)
			n, err := a.ReadAt(ctx, buf, r.off)
			if err != nil || !bytes.Equal(buf[:n], want[r.off:r.off+r.n]) {
				t.Errorf("remote %v: ReadAt(%d, %d) = %d, %v; differs from zarr-python's values", remote, r.off, r.n, n, err)
			}
			fetched := store.read.Load() - before
			switch {
			case remote && r.n < chunkBytes && fetched > r.n:
				t.Errorf("remote: ReadAt(%d, %d) fetched %d bytes, want at most the %d it needs", r.off, r.n, fetched, r.n)
			case !remote && fetched > 0 && fetched%(chunkBytes+1) != 0 && fetched%chunkBytes != 0:
				t.Errorf("local: ReadAt(%d, %d) fetched %d bytes, want whole chunks", r.off, r.n, fetched)
			}
		}
	}
}

func TestRangedReadOfShortChunkFails(t *testing.T) {
	dir, _ := rangedArray(t)
	ctx := context.Background()
	// Chunk 0.1 cut short: its last row is missing.
	chunk := filepath.Join(dir, "a", "0.1")
	b, err := os.ReadFile(chunk)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(chunk, b[:len(b)-400], 0o644); err != nil {
		t.Fatal(err)
	}
	st, err := file.Open(filepath.Join(dir, "a"))
	if err != nil {
		t.Fatal(err)
	}
	ds, err := nczarr.Open(ctx, &remoteStore{Store: st, remote: true}, nczarr.Options{})
	if err != nil {
		t.Fatal(err)
	}
	a := ds.Array("")
	buf := make([]byte, 400)
	// Row 19, columns 100-199: the chunk's last row.
	if _, err := a.ReadAt(ctx, buf, (19*300+100)*4); !errors.Is(err, codec.ErrCorrupt) {
		t.Errorf("ReadAt of the missing row: %v, want ErrCorrupt", err)
	}
	// Row 0 of the same chunk is stored, and reads.
	if _, err := a.ReadAt(ctx, buf, 100*4); err != nil {
		t.Errorf("ReadAt of a stored row: %v", err)
	}
}

// vecStore is a file store that counts the bytes ReadVec reads.
type vecStore struct {
	*file.Store
	read atomic.Int64
}

func (s *vecStore) ReadVec(ctx context.Context, key string, bufs [][]byte, off int64) (int64, error) {
	size, err := s.Store.ReadVec(ctx, key, bufs, off)
	if err == nil {
		for _, b := range bufs {
			s.read.Add(int64(len(b)))
		}
	}
	return size, err
}

// TestVecReads reads an uncompressed array from a store that offers
// zmap.VecReader: every read reads exactly the stored bytes it returns
// (none for the chunk that is not stored, which reads as fill), and the
// cache stays empty, with and without a Reader.
func TestVecReads(t *testing.T) {
	dir, want := rangedArray(t)
	ctx := context.Background()
	st, err := file.Open(filepath.Join(dir, "a"))
	if err != nil {
		t.Fatal(err)
	}
	store := &vecStore{Store: st}
	c := cache.New(1 << 20)
	ds, err := nczarr.Open(ctx, store, nczarr.Options{Cache: c})
	if err != nil {
		t.Fatal(err)
	}
	a := ds.Array("")
	const fillRow = 100 * 4 // row 20's columns 200-299 lie in chunk 1.2
	for _, r := range []struct{ off, n, fill int64 }{
		{0, 8, 0}, {396, 16, 0}, {1200 * 25, 4800, 4 * fillRow}, {1200*39 + 800, 400, fillRow}, {0, 48000, 20 * fillRow}, {47996, 4, 4},
	} {
		for _, read := range []func(context.Context, []byte, int64) (int, error){a.ReadAt, a.NewReader().ReadAt} {
			before := store.read.Load()
			buf := make([]byte, r.n)
			n, err := read(ctx, buf, r.off)
			if err != nil || !bytes.Equal(buf[:n], want[r.off:r.off+r.n]) {
				t.Errorf("ReadAt(%d, %d) = %d, %v; differs from zarr-python's values", r.off, r.n, n, err)
			}
			if got := store.read.Load() - before; got != r.n-r.fill {
				t.Errorf("ReadAt(%d, %d) read %d stored bytes, want %d", r.off, r.n, got, r.n-r.fill)
			}
		}
	}
	if st := c.Stats(); st.LoadedBytes != 0 {
		t.Errorf("cache %+v: reads went through it", st)
	}
}

// TestVecReadOfWrongSizeChunkFails: a stored chunk shorter or longer than
// a chunk fails every read of it with ErrCorrupt, as a whole-chunk load
// does, where its neighbours read.
func TestVecReadOfWrongSizeChunkFails(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		change func([]byte) []byte
	}{
		{"short", func(b []byte) []byte { return b[:len(b)-400] }},
		{"long", func(b []byte) []byte { return append(b, 0) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, want := rangedArray(t)
			chunk := filepath.Join(dir, "a", "0.1")
			b, err := os.ReadFile(chunk)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(chunk, tc.change(b), 0o644); err != nil {
				t.Fatal(err)
			}
			st, err := file.Open(filepath.Join(dir, "a"))
			if err != nil {
				t.Fatal(err)
			}
			ds, err := nczarr.Open(ctx, st, nczarr.Options{})
			if err != nil {
				t.Fatal(err)
			}
			a := ds.Array("")
			buf := make([]byte, 400)
			// Row 0, columns 100-199: the first row of chunk 0.1.
			if _, err := a.ReadAt(ctx, buf, 100*4); !errors.Is(err, codec.ErrCorrupt) || !strings.Contains(err.Error(), "0.1") {
				t.Errorf("ReadAt of chunk 0.1: %v, want ErrCorrupt naming the chunk", err)
			}
			// Columns 0-99 of row 0 are chunk 0.0's, and read.
			if _, err := a.ReadAt(ctx, buf, 0); err != nil || !bytes.Equal(buf, want[:400]) {
				t.Errorf("ReadAt of chunk 0.0: %v", err)
			}
		})
	}
}

// halfVecStore is a file store whose ReadVec cannot read chunk 0.1 (as a
// zip store cannot read a compressed entry) and, for every other chunk,
// waits until its read is cancelled.
type halfVecStore struct{ *file.Store }

func (s halfVecStore) ReadVec(ctx context.Context, key string, bufs [][]byte, off int64) (int64, error) {
	if key == "0.1" {
		return 0, fmt.Errorf("readvec %q: %w", key, errors.ErrUnsupported)
	}
	<-ctx.Done()
	return 0, ctx.Err()
}

// TestVecReadsUnsupported: a store whose ReadVec turns out to be
// unsupported for a chunk leaves the read, and every later one, to the
// cache, even while its other chunks' reads are cancelled by that.
func TestVecReadsUnsupported(t *testing.T) {
	dir, want := rangedArray(t)
	ctx := context.Background()
	st, err := file.Open(filepath.Join(dir, "a"))
	if err != nil {
		t.Fatal(err)
	}
	ds, err := nczarr.Open(ctx, halfVecStore{st}, nczarr.Options{})
	if err != nil {
		t.Fatal(err)
	}
	a := ds.Array("")
	// Row 0, columns 0-199: chunk 0.0, then 0.1; then a whole row.
	for _, r := range []struct{ off, n int64 }{{0, 800}, {1200 * 5, 1200}} {
		buf := make([]byte, r.n)
		if n, err := a.ReadAt(ctx, buf, r.off); err != nil || !bytes.Equal(buf[:n], want[r.off:r.off+r.n]) {
			t.Errorf("ReadAt(%d, %d) = %d, %v; differs from zarr-python's values", r.off, r.n, n, err)
		}
	}
}
