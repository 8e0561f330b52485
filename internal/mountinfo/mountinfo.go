// Package mountinfo reads the kernel's table of mounts
// (/proc/self/mountinfo, proc(5)): the daemon checks its mountpoint and
// finds what to unmount with it, and the tests see what is mounted.
package mountinfo

import (
	"bufio"
	"io"
	"os"
	"strconv"
	"strings"
)

// Entry is one mount.
type Entry struct {
	Mountpoint string
	FSType     string // "fuse.nczarrfs" for a mount of ours
	Source     string
}

// Parse reads the mountinfo format:
//
//	36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue
//
// Lines it cannot read are skipped. Mounts are in the order the kernel
// lists them, so of several at one mountpoint the last is on top.
func Parse(r io.Reader) ([]Entry, error) {
	var out []Entry
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		sep := -1
		for i := 6; i < len(fields); i++ {
			if fields[i] == "-" {
				sep = i
				break
			}
		}
		if len(fields) < 5 || sep < 0 || sep+2 >= len(fields) {
			continue
		}
		out = append(out, Entry{
			Mountpoint: Unescape(fields[4]),
			FSType:     fields[sep+1],
			Source:     Unescape(fields[sep+2]),
		})
	}
	return out, sc.Err()
}

// Read parses /proc/self/mountinfo.
func Read() ([]Entry, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Parse(f)
}

// At returns the topmost mount at the absolute path dir.
func At(dir string) (Entry, bool) {
	mounts, _ := Read()
	var found Entry
	ok := false
	for _, m := range mounts {
		if m.Mountpoint == dir {
			found, ok = m, true
		}
	}
	return found, ok
}

// Unescape undoes the kernel's octal escapes (\040 for a space).
func Unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
