package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// checkMountpoint says clearly what is wrong with a mountpoint: missing,
// not a directory, a stale FUSE mount whose daemon died, a mount already
// or not empty (the last two allowed by allowNonEmpty).
func checkMountpoint(path string, allowNonEmpty bool) error {
	info, err := os.Stat(path)
	switch {
	case errors.Is(err, syscall.ENOTCONN):
		return fmt.Errorf("mountpoint %s is a stale FUSE mount (its daemon has died); run fusermount3 -u %s", path, path)
	case errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("mountpoint %s does not exist (create it with mkdir)", path)
	case err != nil:
		return fmt.Errorf("mountpoint %s: %w", path, err)
	case !info.IsDir():
		return fmt.Errorf("mountpoint %s is not a directory", path)
	}
	if allowNonEmpty {
		return nil
	}
	abs, err := absMountpoint(path)
	if err != nil {
		return err
	}
	if m, ok := findMount(abs); ok {
		return fmt.Errorf("mountpoint %s is a mount already (%s from %s); unmount it, or use --allow-non-empty to mount over it", path, m.fstype, m.source)
	}
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("mountpoint %s: %w", path, err)
	}
	defer f.Close()
	names, err := f.Readdirnames(1)
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("mountpoint %s: %w", path, err)
	}
	if len(names) > 0 {
		return fmt.Errorf("mountpoint %s is not empty; use --allow-non-empty to mount over its contents", path)
	}
	return nil
}

// absMountpoint is path made absolute with symlinks resolved, the form
// the kernel shows in /proc/self/mountinfo.
func absMountpoint(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", fmt.Errorf("mountpoint %s: %w", path, err)
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	}
	return abs, nil
}

// mountEntry is one line of /proc/self/mountinfo.
type mountEntry struct {
	mountpoint, fstype, source string
}

// parseMountinfo reads the mountinfo format (proc(5)):
//
//	36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue
//
// Lines it cannot read are skipped.
func parseMountinfo(r io.Reader) ([]mountEntry, error) {
	var out []mountEntry
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
		out = append(out, mountEntry{
			mountpoint: unescapeMountinfo(fields[4]),
			fstype:     fields[sep+1],
			source:     unescapeMountinfo(fields[sep+2]),
		})
	}
	return out, sc.Err()
}

// unescapeMountinfo undoes the kernel's octal escapes (\040 for a space).
func unescapeMountinfo(s string) string {
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

// findMount returns the topmost mount at the absolute path abs.
func findMount(abs string) (mountEntry, bool) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return mountEntry{}, false
	}
	defer f.Close()
	mounts, _ := parseMountinfo(f)
	var found mountEntry
	ok := false
	for _, m := range mounts {
		if m.mountpoint == abs {
			found, ok = m, true // later lines are mounted on top
		}
	}
	return found, ok
}

func isMounted(abs string) bool {
	_, ok := findMount(abs)
	return ok
}

// unmount unmounts the FUSE mount at abs; it fails (EBUSY) while files
// in it are open. Root unmounts directly, others through fusermount3.
func unmount(abs string) error {
	if os.Geteuid() == 0 {
		if err := syscall.Unmount(abs, 0); err != nil {
			return fmt.Errorf("unmounting %s: %w", abs, err)
		}
		return nil
	}
	return fusermount(abs, "-u")
}

// detach unmounts the mount at abs lazily (umount -l, fusermount3 -u -z):
// it leaves the namespace at once, and the kernel keeps the connection
// until the last open file is closed.
func detach(abs string) error {
	if os.Geteuid() == 0 {
		if err := syscall.Unmount(abs, syscall.MNT_DETACH); err != nil {
			return fmt.Errorf("detaching %s: %w", abs, err)
		}
		return nil
	}
	return fusermount(abs, "-u", "-z")
}

func fusermount(abs string, args ...string) error {
	name := "fusermount3"
	path, err := exec.LookPath(name)
	if err != nil {
		name = "fusermount"
		if path, err = exec.LookPath(name); err != nil {
			return errors.New("fusermount3 not found in PATH; install fuse3 (apt-get install fuse3)")
		}
	}
	out, err := exec.Command(path, append(args, abs)...).CombinedOutput()
	if err != nil {
		msg := strings.TrimSpace(string(out))
		if strings.Contains(msg, "busy") {
			return fmt.Errorf("%s: %s: %w", name, msg, syscall.EBUSY)
		}
		return fmt.Errorf("%s: %s (%w)", name, msg, err)
	}
	return nil
}
