package fusefs

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"unsafe"
)

// TestDataDirectIO checks how data is served: by direct I/O by default
// where the kernel can still map such files (Linux 6.6), so that reading
// it leaves nothing in the page cache and it asks for 1 MiB reads, and
// through the page cache with Options.PageCache. A memory map of data
// works either way (checked by numpy in another process).
func TestDataDirectIO(t *testing.T) {
	for _, tc := range []struct {
		name      string
		pageCache bool
	}{
		{"default", false},
		{"page cache", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			direct := !tc.pageCache && kernelAtLeast(t, 6, 6)
			store := openSample(t)
			ds := openDataset(t, store)
			mnt := mountDataset(t, ds, store, Options{FsName: "test", PageCache: tc.pageCache})
			name := filepath.Join(mnt, "temperature", DataName)

			var st syscall.Stat_t
			if err := syscall.Stat(name, &st); err != nil {
				t.Fatal(err)
			}
			if wantBlk := map[bool]int64{true: readSize, false: 1 << 16}[direct]; st.Blksize != wantBlk {
				t.Errorf("st_blksize %d, want %d", st.Blksize, wantBlk)
			}
			read, err := os.ReadFile(name)
			if err != nil || len(read) != 240 {
				t.Fatalf("read: %d bytes, %v; want 240", len(read), err)
			}

			f, err := os.Open(name)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			m, err := syscall.Mmap(int(f.Fd()), 0, len(read), syscall.PROT_READ, syscall.MAP_SHARED)
			if err != nil {
				t.Fatalf("mmap: %v", err)
			}
			// Whether the read left the page in the page cache: a new
			// mapping has faulted nothing in yet. This process must not
			// touch the mapping: its own server answers the fault, and
			// the fault cannot be preempted, so a garbage collection
			// that waits for it to stop would never end.
			cached := resident(t, m)
			syscall.Munmap(m)
			if cached == direct {
				t.Errorf("after a read the page is cached: %v; want %v", cached, !direct)
			}
			// numpy.memmap maps it in another process.
			python(t, `import sys, numpy as np
m = np.memmap(sys.argv[1], dtype="<f4", mode="r")
assert m.tobytes() == open(sys.argv[1], "rb").read(), "mapped and read bytes differ"
assert m.shape == (60,), m.shape`, name)
		})
	}
}

// resident reports whether the first page of the mapping m is in memory.
func resident(t *testing.T, m []byte) bool {
	t.Helper()
	var vec [1]byte
	_, _, errno := syscall.Syscall(syscall.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), uintptr(unsafe.Pointer(&vec[0])))
	if errno != 0 {
		t.Fatalf("mincore: %v", errno)
	}
	return vec[0]&1 != 0
}

// kernelAtLeast reports whether the running kernel is at least
// major.minor.
func kernelAtLeast(t *testing.T, major, minor int) bool {
	t.Helper()
	var u syscall.Utsname
	if err := syscall.Uname(&u); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, c := range u.Release {
		if c == 0 {
			break
		}
		b.WriteByte(byte(c))
	}
	f := strings.FieldsFunc(b.String(), func(r rune) bool { return r < '0' || r > '9' })
	if len(f) < 2 {
		t.Fatalf("kernel release %q", b.String())
	}
	ma, _ := strconv.Atoi(f[0])
	mi, _ := strconv.Atoi(f[1])
	return ma > major || ma == major && mi >= minor
}
