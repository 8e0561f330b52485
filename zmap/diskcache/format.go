package diskcache

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"io"
)

// A cache file is the object, then a table of the CRC-32C of each
// blockSize block of it (the last block may be short), 4 bytes each, then
// a footer:
//
//	magic "nzc1" | the object's size, 8 bytes | CRC-32C of the 12 bytes before, 4 bytes
//
// all little-endian. A read checks the CRCs of the blocks it touches, and
// only those, so that a read of 4 KiB of a large object costs one block's
// check, and a damaged file is noticed by any read rather than served.
const (
	blockSize  = 16 << 10
	footerSize = 16
)

var (
	castagnoli = crc32.MakeTable(crc32.Castagnoli)
	magic      = []byte("nzc1")
)

// blocks is the number of blocks of an object of size bytes.
func blocks(size int64) int64 { return (size + blockSize - 1) / blockSize }

// fileSize is the size of the cache file of an object of size bytes.
func fileSize(size int64) int64 { return size + 4*blocks(size) + footerSize }

// tail returns what follows data in its cache file: the CRC table and the
// footer.
func tail(data []byte) []byte {
	nb := blocks(int64(len(data)))
	t := make([]byte, 4*nb+footerSize)
	for i := range nb {
		b := data[i*blockSize : min((i+1)*blockSize, int64(len(data)))]
		binary.LittleEndian.PutUint32(t[4*i:], crc32.Checksum(b, castagnoli))
	}
	f := t[4*nb:]
	copy(f, magic)
	binary.LittleEndian.PutUint64(f[4:], uint64(len(data)))
	binary.LittleEndian.PutUint32(f[12:], crc32.Checksum(f[:12], castagnoli))
	return t
}

// parseFooter checks f, the last footerSize bytes of a cache file of
// size bytes, and returns the size of the object the file holds.
func parseFooter(f []byte, size int64) (int64, bool) {
	if len(f) != footerSize || !bytes.Equal(f[:4], magic) ||
		crc32.Checksum(f[:12], castagnoli) != binary.LittleEndian.Uint32(f[12:]) {
		return 0, false
	}
	n := binary.LittleEndian.Uint64(f[4:])
	if n > maxObject || fileSize(int64(n)) != size {
		return 0, false
	}
	return int64(n), true
}

// verify reports whether data, whole blocks of an object from a block
// boundary (the last may be the object's short last block), match tab,
// their CRCs.
func verify(data, tab []byte) bool {
	if int64(len(tab)) != 4*blocks(int64(len(data))) {
		return false
	}
	for i := 0; len(data) > 0; i++ {
		b := data[:min(blockSize, len(data))]
		if crc32.Checksum(b, castagnoli) != binary.LittleEndian.Uint32(tab[4*i:]) {
			return false
		}
		data = data[len(b):]
	}
	return true
}

// decode checks a whole cache file and returns the object in it.
func decode(file []byte) ([]byte, bool) {
	if len(file) < footerSize {
		return nil, false
	}
	size, ok := parseFooter(file[len(file)-footerSize:], int64(len(file)))
	if !ok {
		return nil, false
	}
	data := file[:size:size]
	if !verify(data, file[size:int64(len(file))-footerSize]) {
		return nil, false
	}
	return data, true
}

// readChecked reads into p from off of the object in the cache file r of
// size bytes, checking the blocks it reads: it returns what ReadAt of the
// object would, with ok false when the file is damaged (or cannot be
// read), and then p holds nothing to be used.
func readChecked(r io.ReaderAt, size int64, p []byte, off int64) (n int, err error, ok bool) {
	if size < footerSize || off < 0 {
		return 0, nil, false
	}
	var f [footerSize]byte
	if _, err := r.ReadAt(f[:], size-footerSize); err != nil {
		return 0, nil, false
	}
	objSize, good := parseFooter(f[:], size)
	if !good {
		return 0, nil, false
	}
	if off >= objSize {
		if len(p) == 0 {
			return 0, nil, true
		}
		return 0, io.EOF, true
	}
	want := min(int64(len(p)), objSize-off)
	end := off + want
	if want == 0 {
		return 0, nil, true
	}
	// The blocks [b0, b1) hold [off, end).
	b0, b1 := off/blockSize, (end+blockSize-1)/blockSize
	tab := make([]byte, 4*(b1-b0))
	if _, err := r.ReadAt(tab, objSize+4*b0); err != nil {
		return 0, nil, false
	}
	// readBlock reads the whole block at pos (a block boundary) into a
	// scratch buffer, checks it, and copies the part of it wanted.
	var scratch []byte
	readBlock := func(pos int64) bool {
		blockEnd := min(pos+blockSize, objSize)
		if scratch == nil {
			scratch = make([]byte, blockSize)
		}
		b := scratch[:blockEnd-pos]
		if _, err := r.ReadAt(b, pos); err != nil {
			return false
		}
		i := pos/blockSize - b0
		if !verify(b, tab[4*i:4*i+4]) {
			return false
		}
		lo, hi := max(pos, off), min(blockEnd, end)
		copy(p[lo-off:hi-off], b[lo-pos:hi-pos])
		return true
	}
	pos := off
	if head := b0 * blockSize; off != head || end < min(head+blockSize, objSize) {
		// The first block is not wanted whole.
		if !readBlock(head) {
			return 0, nil, false
		}
		pos = min(head+blockSize, end)
	}
	// The whole blocks from pos are read into p and checked there.
	mid := pos + (end-pos)/blockSize*blockSize
	if end == objSize {
		mid = end
	}
	if mid > pos {
		b := p[pos-off : mid-off]
		if _, err := r.ReadAt(b, pos); err != nil {
			return 0, nil, false
		}
		i := pos/blockSize - b0
		if !verify(b, tab[4*i:4*(i+blocks(mid-pos))]) {
			return 0, nil, false
		}
		pos = mid
	}
	if pos < end && !readBlock(pos) {
		return 0, nil, false
	}
	if want < int64(len(p)) {
		return int(want), io.EOF, true
	}
	return int(want), nil, true
}
