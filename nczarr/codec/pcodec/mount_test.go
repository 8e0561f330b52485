package pcodec_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"math"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/nczarrfs/nczarrfs/cache"
	"github.com/nczarrfs/nczarrfs/fusefs"
	"github.com/nczarrfs/nczarrfs/internal/testenv"
	"github.com/nczarrfs/nczarrfs/nczarr"
	_ "github.com/nczarrfs/nczarrfs/nczarr/codec/all" // crc32c for the shard index, as the command has it
	"github.com/nczarrfs/nczarrfs/nczarr/codec/pcodec"
	"github.com/nczarrfs/nczarrfs/zmap/file"
)

// TestMount mounts a Zarr v2 array (compressor pcodec, float64, float-mult
// mode), a Zarr v3 array (array-to-bytes codec numcodecs.pcodec after a
// transpose, int32) and a sharded v3 array (numcodecs.pcodec inside
// sharding_indexed) whose chunks the test encoder made, and reads their
// data through FUSE.
func TestMount(t *testing.T) {
	testenv.Require(t, "/dev/fuse", func() error { _, err := os.Stat("/dev/fuse"); return err }())
	const rows, cols, chunk = 40, 30, 16

	// v2: float64 multiples of 0.25, chunks padded to full size as v2 does.
	v2 := t.TempDir()
	value := func(i, j int) float64 { return float64(i*cols+j) * 0.25 }
	want := make([]byte, 0, rows*cols*8)
	for i := range rows {
		for j := range cols {
			want = binary.LittleEndian.AppendUint64(want, math.Float64bits(value(i, j)))
		}
	}
	writeJSON(t, filepath.Join(v2, ".zarray"), `{"zarr_format": 2, "shape": [40, 30], "chunks": [16, 16],
		"dtype": "<f8", "compressor": {"id": "pcodec", "level": 8, "mode_spec": "auto",
		"delta_spec": "auto", "paging_spec": "equal_pages_up_to", "delta_encoding_order": null,
		"equal_pages_up_to": 262144}, "fill_value": 0.0, "order": "C", "filters": null}`)
	for ci := 0; ci*chunk < rows; ci++ {
		for cj := 0; cj*chunk < cols; cj++ {
			var nums []uint64
			for i := ci * chunk; i < (ci+1)*chunk; i++ {
				for j := cj * chunk; j < (cj+1)*chunk; j++ {
					nums = append(nums, math.Float64bits(value(i, j)))
				}
			}
			src := pcodec.EncodeForTest(6, [][]uint64{nums}, math.Float64bits(0.25), 1, 16)
			writeFile(t, filepath.Join(v2, itoa(ci)+"."+itoa(cj)), src)
		}
	}

	// v3: int32 stored transposed (order [1, 0]), two pco chunks per
	// chunk, partial edge chunks written whole as v3 does.
	v3 := t.TempDir()
	ivalue := func(i, j int) int32 { return int32(i*1000 - j*j) }
	iwant := make([]byte, 0, rows*cols*4)
	for i := range rows {
		for j := range cols {
			iwant = binary.LittleEndian.AppendUint32(iwant, uint32(ivalue(i, j)))
		}
	}
	writeJSON(t, filepath.Join(v3, "zarr.json"), `{"zarr_format": 3, "node_type": "array",
		"shape": [40, 30], "data_type": "int32",
		"chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [16, 16]}},
		"chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
		"fill_value": 0, "codecs": [{"name": "transpose", "configuration": {"order": [1, 0]}},
		{"name": "numcodecs.pcodec", "configuration": {"level": 8, "mode_spec": "auto"}}]}`)
	for ci := 0; ci*chunk < rows; ci++ {
		for cj := 0; cj*chunk < cols; cj++ {
			var nums []uint64
			for j := cj * chunk; j < (cj+1)*chunk; j++ { // transposed: columns outer
				for i := ci * chunk; i < (ci+1)*chunk; i++ {
					nums = append(nums, uint64(uint32(ivalue(i, j))))
				}
			}
			src := pcodec.EncodeForTest(3, [][]uint64{nums[:100], nums[100:]}, 0, 2, 8)
			writeFile(t, filepath.Join(v3, "c", itoa(ci), itoa(cj)), src)
		}
	}

	// v3 sharded: shards of 20×16 holding 2×2 inner chunks of 10×8, each a
	// pco stream, the index (bytes, crc32c) at the end.
	sh := t.TempDir()
	writeJSON(t, filepath.Join(sh, "zarr.json"), `{"zarr_format": 3, "node_type": "array",
		"shape": [40, 30], "data_type": "int32",
		"chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [20, 16]}},
		"chunk_key_encoding": {"name": "default"}, "fill_value": 0,
		"codecs": [{"name": "sharding_indexed", "configuration": {"chunk_shape": [10, 8],
			"codecs": [{"name": "numcodecs.pcodec", "configuration": {"level": 8}}],
			"index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}]}}]}`)
	for si := 0; si < 2; si++ {
		for sj := 0; sj < 2; sj++ {
			var shard, index []byte
			for ii := 0; ii < 2; ii++ {
				for ij := 0; ij < 2; ij++ {
					var nums []uint64
					for i := si*20 + ii*10; i < si*20+(ii+1)*10; i++ {
						for j := sj*16 + ij*8; j < sj*16+(ij+1)*8; j++ {
							nums = append(nums, uint64(uint32(ivalue(i, j))))
						}
					}
					enc := pcodec.EncodeForTest(3, [][]uint64{nums}, 0, 1, 4)
					index = binary.LittleEndian.AppendUint64(index, uint64(len(shard)))
					index = binary.LittleEndian.AppendUint64(index, uint64(len(enc)))
					shard = append(shard, enc...)
				}
			}
			index = binary.LittleEndian.AppendUint32(index, crc32.Checksum(index, crc32.MakeTable(crc32.Castagnoli)))
			writeFile(t, filepath.Join(sh, "c", itoa(si), itoa(sj)), append(shard, index...))
		}
	}

	for _, tc := range []struct {
		name, dir string
		want      []byte
	}{{"v2", v2, want}, {"v3", v3, iwant}, {"v3-sharded", sh, iwant}} {
		t.Run(tc.name, func(t *testing.T) {
			mnt := mount(t, tc.dir)
			got, err := os.ReadFile(filepath.Join(mnt, "data"))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, tc.want) {
				t.Fatalf("data: %d bytes differ from the array's %d", len(got), len(tc.want))
			}
		})
	}

	// A corrupt chunk fails the read with EIO; the rest of the array reads.
	writeFile(t, filepath.Join(v2, "1.1"), []byte("pco!\x03\x06garbage"))
	mnt := mount(t, v2)
	f, err := os.Open(filepath.Join(mnt, "data"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 8*16)
	if _, err := f.ReadAt(buf, 0); err != nil || !bytes.Equal(buf, want[:len(buf)]) {
		t.Errorf("first row of a good chunk: %v", err)
	}
	if _, err := f.ReadAt(buf, 8*(16*cols+16)); !errors.Is(err, syscall.EIO) {
		t.Errorf("read of the corrupt chunk 1.1: err = %v, want EIO", err)
	}
}

func mount(t *testing.T, dir string) string {
	t.Helper()
	store, err := file.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	ds, err := nczarr.Open(context.Background(), store, nczarr.Options{Cache: cache.New(1 << 20)})
	if err != nil {
		t.Fatal(err)
	}
	mnt := t.TempDir()
	server, err := fusefs.Mount(mnt, ds, store, fusefs.Options{FsName: "pcodec-test"})
	if err != nil {
		t.Fatalf("mount: %v", err)
	}
	t.Cleanup(func() {
		if err := server.Unmount(); err != nil {
			t.Errorf("unmount: %v", err)
		}
		server.Wait()
	})
	return mnt
}

func writeJSON(t *testing.T, path, s string) { writeFile(t, path, []byte(s)) }

func writeFile(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func itoa(i int) string { return string(rune('0' + i)) }
