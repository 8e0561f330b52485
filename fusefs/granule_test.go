package fusefs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/nczarrfs/nczarrfs/describe/netcdf3"
)

// failingVar is a variable's decoded bytes (all 1s) that fail to read
// from bad on, as an array whose last chunk is corrupt.
type failingVar struct{ size, bad int64 }

var errCorrupt = errors.New("chunk v/3: corrupt")

func (v failingVar) ReadAt(_ context.Context, p []byte, off int64) (int, error) {
	if off+int64(len(p)) > v.bad {
		return 0, errCorrupt
	}
	for i := range p {
		p[i] = 1
	}
	return len(p), nil
}

// TestGranuleReads: a read of dataset.nc returns all its bytes or fails;
// it fails when its granule of the variable holds a failing byte, and
// never for another variable's bytes.
func TestGranuleReads(t *testing.T) {
	const n = 3<<20 + 1000 // bytes of each variable
	bad := failingVar{size: n, bad: n - 10}
	good := failingVar{size: n, bad: n}
	h := &netcdf3.Header{Format: netcdf3.CDF2, RecDim: -1, DataGap: 1 << 20,
		Dims: []netcdf3.Dim{{Name: "x", Len: n}},
		Vars: []netcdf3.Var{
			{Name: "a", Type: netcdf3.Byte, Dims: []int{0}, Open: func() netcdf3.ReaderAt { return bad }},
			{Name: "b", Type: netcdf3.Byte, Dims: []int{0}, Open: func() netcdf3.ReaderAt { return good }},
		}}
	f, err := netcdf3.New(h)
	if err != nil {
		t.Fatal(err)
	}
	a, b := f.Begin(0), f.Begin(1)
	// The granule of a holding its failing bytes: from the 1 MiB below
	// them to a's extent's end.
	failFrom := (a + n - 10) / granuleSize * granuleSize
	blk := f.BlockSize()
	for _, tc := range []struct {
		name    string
		off, n  int64
		wantErr bool
	}{
		{"header", 0, 4096, false},
		{"a's first block", a, blk, false},
		{"a's block before its failing granule", failFrom - blk, blk, false},
		{"a's first block of its failing granule", failFrom, blk, true},
		{"a's last block", (a + n - 1) / blk * blk, blk, true},
		{"b's first block", b, blk, false},
		{"b's last bytes", b + n - 100, 100, false},
		{"a's end into b", a + n - 100, b - (a + n - 100) + 100, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, g := range []*granuleReader{newGranuleReader(f), newGranuleReader(f)} {
				p := make([]byte, tc.n)
				if tc.name == "b's first block" {
					// After a failed read, the same reader still reads.
					_ = g.ReadAt(context.Background(), make([]byte, 10), a+n-20)
				}
				err := g.ReadAt(context.Background(), p, tc.off)
				if (err != nil) != tc.wantErr {
					t.Fatalf("read of %d at %d: %v, want error %v", tc.n, tc.off, err, tc.wantErr)
				}
				if err != nil {
					if !errors.Is(err, errCorrupt) {
						t.Errorf("error %v does not wrap the chunk's", err)
					}
					continue
				}
				want := make([]byte, tc.n)
				if _, err := f.NewReader().ReadAt(context.Background(), want, tc.off); err != nil {
					t.Fatal(err)
				}
				if string(p) != string(want) {
					t.Errorf("read of %d at %d differs from the file's bytes", tc.n, tc.off)
				}
			}
		})
	}
	if a%blk != 0 || b%blk != 0 || b < a+n {
		t.Errorf("begins %d, %d not on the block %d", a, b, blk)
	}
}

// TestGranuleReadsConcurrent: concurrent reads of one reader, of sizes
// the kernel sends, all return the file's bytes while granules are
// loaded, shared, dropped and their buffers reused.
func TestGranuleReadsConcurrent(t *testing.T) {
	const n = 3<<20 + 12345
	h := &netcdf3.Header{Format: netcdf3.CDF2, RecDim: -1, DataGap: 1 << 20,
		Dims: []netcdf3.Dim{{Name: "x", Len: n}},
		Vars: []netcdf3.Var{{Name: "a", Type: netcdf3.Byte, Dims: []int{0}, Open: func() netcdf3.ReaderAt { return ramp{} }}}}
	f, err := netcdf3.New(h)
	if err != nil {
		t.Fatal(err)
	}
	want := make([]byte, f.Size())
	if _, err := f.NewReader().ReadAt(context.Background(), want, 0); err != nil {
		t.Fatal(err)
	}
	g := newGranuleReader(f)
	errs := make(chan error, 8)
	for w := 0; w < 8; w++ {
		go func(w int) {
			for i := 0; i < 20; i++ {
				size := int64([]int{4096, 131072, 262144, 1 << 20, 100}[(w+i)%5])
				off := (int64(i*7919+w*104729) * 4096) % (f.Size() - size)
				p := make([]byte, size)
				if err := g.ReadAt(context.Background(), p, off); err != nil {
					errs <- err
					return
				}
				if !bytes.Equal(p, want[off:off+size]) {
					errs <- fmt.Errorf("read of %d at %d: wrong bytes", size, off)
					return
				}
			}
			errs <- nil
		}(w)
	}
	for w := 0; w < 8; w++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

// ramp is a variable whose byte i is i mod 251.
type ramp struct{}

var rampBytes = func() []byte {
	b := make([]byte, 251*2)
	for i := range b {
		b[i] = byte(i % 251)
	}
	return b
}()

func (ramp) ReadAt(_ context.Context, p []byte, off int64) (int, error) {
	for i := 0; i < len(p); i += 251 {
		copy(p[i:], rampBytes[(off+int64(i))%251:][:251])
	}
	return len(p), nil
}

// TestGranuleRelease: closing a handle drops its granules, and a read
// after it still reads.
func TestGranuleRelease(t *testing.T) {
	h := &netcdf3.Header{Format: netcdf3.CDF2, RecDim: -1, DataGap: 1 << 20,
		Dims: []netcdf3.Dim{{Name: "x", Len: 3 << 20}},
		Vars: []netcdf3.Var{{Name: "a", Type: netcdf3.Byte, Dims: []int{0}, Open: func() netcdf3.ReaderAt { return ramp{} }}}}
	f, err := netcdf3.New(h)
	if err != nil {
		t.Fatal(err)
	}
	hd := &classicHandle{g: newGranuleReader(f)}
	p := make([]byte, 4096)
	for off := f.Begin(0); off < f.Begin(0)+3<<20; off += 1 << 20 {
		if err := hd.g.ReadAt(context.Background(), p, off); err != nil {
			t.Fatal(err)
		}
	}
	if len(hd.g.kept) == 0 {
		t.Fatal("no granule kept")
	}
	hd.Release(context.Background())
	if len(hd.g.kept) != 0 {
		t.Fatalf("%d granules kept after Release", len(hd.g.kept))
	}
	if err := hd.g.ReadAt(context.Background(), p, f.Begin(0)+100); err != nil || p[0] != byte(100%251) {
		t.Fatalf("read after Release: %v, %d", err, p[0])
	}
}
