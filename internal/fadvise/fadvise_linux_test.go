package fadvise

import (
	"os"
	"path/filepath"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestWillNeedReadsIntoPageCache drops a file's pages and checks that
// advice brings them back without a read. The kernel reads in the
// background, so the test waits for it (up to a generous deadline, which
// is not a speed assertion: without advice the pages never come back).
func TestWillNeedReadsIntoPageCache(t *testing.T) {
	const size = 4 << 20
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, make([]byte, size), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil { // dirty pages would stay resident
		t.Fatal(err)
	}
	mem, err := unix.Mmap(int(f.Fd()), 0, size, unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(mem)
	resident := func() int {
		vec := make([]byte, (size+os.Getpagesize()-1)/os.Getpagesize())
		_, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&mem[0])), uintptr(len(mem)), uintptr(unsafe.Pointer(&vec[0])))
		if errno != 0 {
			t.Fatal("mincore:", errno)
		}
		n := 0
		for _, v := range vec {
			n += int(v & 1)
		}
		return n
	}
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		t.Fatal(err)
	}
	pages := size / os.Getpagesize()
	before := resident()
	WillNeed(f, 0, 0)
	for deadline := time.Now().Add(30 * time.Second); resident() < pages; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d pages resident 30 s after the advice (%d before it)", resident(), pages, before)
		}
	}
	t.Logf("%d of %d pages resident before the advice, all after", before, pages)
}
