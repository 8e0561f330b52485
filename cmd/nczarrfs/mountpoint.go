package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/nczarrfs/nczarrfs/internal/mountinfo"
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
	if m, ok := mountinfo.At(abs); ok {
		return fmt.Errorf("mountpoint %s is a mount already (%s from %s); unmount it, or use --allow-non-empty to mount over it", path, m.FSType, m.Source)
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

func isMounted(abs string) bool {
	_, ok := mountinfo.At(abs)
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
