package diskcache

import (
	"bytes"
	"io"
	"testing"
)

// FuzzCacheFile reads arbitrary bytes as a cache file, whole and in part,
// and arbitrary names as names of the layout: nothing panics, a part read
// from a file that checks whole is that part of the object, a part read
// at all is the file's bytes there, and a file the cache writes reads
// back.
//
// The file is raw, or (to keep inputs small) the file the cache writes of
// an object of size bytes, with patch written over it at at.
func FuzzCacheFile(f *testing.F) {
	for _, n := range []uint32{0, 1, 100, blockSize - 1, blockSize, blockSize + 1, 3*blockSize + 7} {
		f.Add([]byte(nil), n, uint32(0), []byte(nil), int64(n/2), uint32(blockSize), "0123456789abcdef0123456789abcd")
		f.Add([]byte(nil), n, n+5, []byte{1}, int64(0), n+1, ".tmp-0123456789abcdef")
	}
	f.Add([]byte("nzc1"), uint32(1<<31), uint32(0), []byte(nil), int64(-1), uint32(3), "ABCDEF")
	f.Fuzz(func(t *testing.T, raw []byte, size, at uint32, patch []byte, off int64, n uint32, name string) {
		file := raw
		if size < 1<<31 {
			size %= 4 * blockSize
			data := make([]byte, size)
			for i := range data {
				data[i] = byte(i * 7 / 3)
			}
			file = append(data, tail(data)...)
			if len(file) > 0 && len(patch) > 0 {
				copy(file[int(at)%len(file):], patch)
			}
		}
		if temp, ok := ownFile(name); ok {
			if temp != (len(name) == tmpLen) || !(isHex(name, restLen) || isHex(name[len(tmpPrefix):], 16)) {
				t.Errorf("ownFile(%q) = %v, %v", name, temp, ok)
			}
		}
		n %= 4 * blockSize
		obj, whole := decode(file)
		if whole {
			again := append(bytes.Clone(obj), tail(obj)...)
			if !bytes.Equal(again, file) {
				t.Fatalf("a %d-byte file decodes to %d bytes that encode to another file", len(file), len(obj))
			}
		}
		p := make([]byte, n)
		got, err, ok := readChecked(bytes.NewReader(file), int64(len(file)), p, off)
		if whole && off >= 0 {
			if !ok {
				t.Fatalf("ReadAt(%d, %d) of a good file failed", off, n)
			}
			end := min(max(off, 0)+int64(n), int64(len(obj)))
			if off > end {
				end = off
			}
			var wantErr error
			if end-off < int64(n) {
				wantErr = io.EOF
			}
			if off < int64(len(obj)) && (!bytes.Equal(p[:got], obj[off:end]) || err != wantErr) {
				t.Fatalf("ReadAt(%d, %d) = %d, %v; want %d bytes, %v", off, n, got, err, end-off, wantErr)
			}
			if off >= int64(len(obj)) && (got != 0 || err != wantErr) {
				t.Fatalf("ReadAt(%d, %d) past the end = %d, %v", off, n, got, err)
			}
		}
		if ok && got > 0 && !bytes.Equal(p[:got], file[off:off+int64(got)]) {
			t.Fatalf("ReadAt(%d, %d) served bytes not in the file", off, n)
		}
	})
}
