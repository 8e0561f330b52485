package test

// Signals under load: SIGTERM while readers are busy ends the daemon
// cleanly and never makes a read return wrong bytes (the short form of the
// soak in soak_test.go), and a daemon killed with SIGKILL leaves a dead
// mount that fusermount3 -u clears for a new mount on the same mountpoint.

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestSIGTERMUnderLoad runs 8 readers over MinIO for 10 seconds, every
// byte checked, then sends SIGTERM while they still read: exit status 0,
// nothing left mounted, no wrong byte (see runLoad).
func TestSIGTERMUnderLoad(t *testing.T) {
	sd := setupSoak(t)
	runLoad(t, sd, loadConfig{duration: 10 * time.Second, readers: 8, cache: "8MiB"})
}

// TestSIGKILLRemount kills a daemon with SIGKILL under a mount: the dead
// mount fails with ENOTCONN, fusermount3 -u removes it, and a new daemon
// mounts on the same mountpoint and serves the dataset.
func TestSIGKILLRemount(t *testing.T) {
	set, ds := genArray(t, 10_000, 1000, "<f8", 3)
	want, err := os.ReadFile(filepath.Join(set.Dir, "expected", "v.bin"))
	if err != nil {
		t.Fatal(err)
	}
	first := startDaemon(t, ds.TreePath(set))
	mnt := first.mnt
	f, err := os.Open(filepath.Join(mnt, "v", "data"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Read(make([]byte, 4096)); err != nil {
		t.Fatal(err)
	}
	if err := first.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	if !first.wait(mountWait) {
		t.Fatalf("nczarrfs still running %v after SIGKILL", mountWait)
	}
	first.mounted = false // its exit status is the kill's; the cleanup must not call it a failure

	// What the kernel has cached may still read; anything that asks the
	// daemon fails.
	if _, err := os.ReadDir(filepath.Join(mnt, "v")); !errors.Is(err, syscall.ENOTCONN) {
		t.Errorf("listing the dead mount: %v, want ENOTCONN", err)
	}
	if _, err := os.OpenFile(filepath.Join(mnt, "v", "data"), os.O_RDONLY|syscall.O_DIRECT, 0); !errors.Is(err, syscall.ENOTCONN) {
		t.Errorf("opening a file of the dead mount: %v, want ENOTCONN", err)
	}
	f.Close() // an open file would keep the mountpoint busy
	if _, ok := mountedAt(mnt); !ok {
		t.Fatal("the mount vanished with the daemon; expected a dead mount until fusermount3 -u")
	}
	if err := unmount(t, mnt); err != nil {
		t.Fatalf("on the dead mount: %v", err)
	}
	if _, ok := mountedAt(mnt); ok {
		t.Fatal("still mounted after fusermount3 -u")
	}

	second := startDaemonWith(t, nczarrfsBinary(t), mnt, ds.TreePath(set))
	got, err := os.ReadFile(filepath.Join(second.mnt, "v", "data"))
	if err != nil || !bytes.Equal(got, want) {
		t.Errorf("v/data through the new mount: %d bytes, %v; want zarr-python's %d bytes%s", len(got), err, len(want), firstDiff(got, want, 8))
	}
}

// TestSIGKILLWhileMounting kills daemons as soon as their mount appears in
// the mount table, before they are done mounting: each must die (go-fuse's
// poll hack, an open file of the daemon's own mount at that moment, used
// to leave it stuck in exit for ever, 2 times in 6), and fusermount3 -u
// must clear its dead mount.
func TestSIGKILLWhileMounting(t *testing.T) {
	set, ds := genArray(t, 1000, 100, "<f8", 3)
	for i := range 8 {
		d := startDaemon(t, ds.TreePath(set))
		if err := d.cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		d.mounted = false // its exit status is the kill's
		if !d.wait(mountWait) {
			// Stuck in the kernel: abort the connection so that the
			// test process can go on.
			_ = exec.Command("umount", "-f", d.mnt).Run()
			t.Fatalf("kill %d: the daemon did not die within %v of SIGKILL right after mounting", i, mountWait)
		}
		if err := unmount(t, d.mnt); err != nil {
			t.Fatalf("kill %d: on the dead mount: %v", i, err)
		}
	}
}

// startDaemonBinary is startDaemon with another build of nczarrfs.
func startDaemonBinary(t *testing.T, bin, source string, extraArgs ...string) *daemon {
	t.Helper()
	mnt := filepath.Join(t.TempDir(), "mnt")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	return startDaemonWith(t, bin, mnt, source, extraArgs...)
}

// startDaemonWith is startDaemon with the binary bin on the existing
// mountpoint mnt.
func startDaemonWith(t *testing.T, bin, mnt, source string, extraArgs ...string) *daemon {
	t.Helper()
	d, _ := launch(t, bin, mnt, append(append([]string{"mount"}, extraArgs...), source, mnt))
	return d
}
