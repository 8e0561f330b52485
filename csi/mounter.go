package csi

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/nczarrfs/nczarrfs/internal/mountinfo"
)

// Mounter makes the mount of one volume.
type Mounter interface {
	// Mount mounts m.Source read-only at m.Target and returns once the
	// mount is up, or with the mount's own error when it failed. The
	// mount must outlive the plugin: its own process, in its own session.
	Mount(ctx context.Context, m MountRequest) error
}

// MountRequest is one volume's mount.
type MountRequest struct {
	Source, Target string
	Flags          []string // flags of "nczarrfs mount"
	Env            []string // the mount daemon's whole environment (secrets included)
	LogFile        string   // the daemon's --log-file
	MetricsSocket  string   // the daemon's --metrics-addr unix:PATH
}

// DaemonMounter mounts with the nczarrfs binary Exe: "nczarrfs mount
// --daemon", which returns once the mount is up (its exit status says
// whether it came up) and leaves the daemon running in a session of its
// own, so that neither a crash nor a restart of the plugin stops it. The
// mount lets every user in (--allow-other: the pods' users read it). The
// secrets travel in the daemon's environment, never on its command line.
type DaemonMounter struct {
	Exe string
}

// MountError is a mount that failed, with what the mount said.
type MountError struct {
	Msg string
}

func (e *MountError) Error() string { return e.Msg }

// Mount implements Mounter.
func (d DaemonMounter) Mount(ctx context.Context, m MountRequest) error {
	// --allow-other: the pods' users, not root, read the volume.
	args := []string{"mount", "--daemon", "--allow-other", "--log-file", m.LogFile, "--metrics-addr", "unix:" + m.MetricsSocket}
	args = append(args, m.Flags...)
	args = append(args, "--", m.Source, m.Target)
	cmd := exec.CommandContext(ctx, d.Exe, args...)
	cmd.Env = m.Env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.Dir = "/"
	// Its own session: a signal to the plugin's process group does not
	// reach it, nor the daemon it starts (which makes a session of its own).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	// Given up (the request's deadline): SIGTERM, which "mount --daemon"
	// passes on to its child, stops a mount under way.
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = err.Error()
		}
		var lines []string
		for _, l := range strings.Split(msg, "\n") {
			lines = append(lines, strings.TrimPrefix(l, "nczarrfs: "))
		}
		if ctx.Err() != nil {
			lines = append(lines, ctx.Err().Error())
		}
		return &MountError{Msg: strings.Join(lines, "; ")}
	}
	return nil
}

// mountState is what is at a target path.
type mountState int

const (
	notMounted mountState = iota
	mounted               // an nczarrfs mount that answers
	stale                 // an nczarrfs mount whose daemon is gone (ENOTCONN, ECONNABORTED)
	otherMount            // a mount of something else
)

func (s mountState) String() string {
	return [...]string{"not mounted", "mounted", "stale", "another mount"}[s]
}

// stateOf says what is mounted at the absolute path target.
func stateOf(target string) mountState {
	m, ok := mountinfo.At(target)
	switch {
	case !ok:
		return notMounted
	case m.FSType != "fuse.nczarrfs":
		return otherMount
	}
	// statfs always reaches the daemon; a stat may be answered from the
	// kernel's cache of the root's attributes. The kernel answers
	// ENOTCONN, or ECONNABORTED once it has aborted the connection (the
	// daemon was killed).
	var st syscall.Statfs_t
	if err := syscall.Statfs(target, &st); errors.Is(err, syscall.ENOTCONN) || errors.Is(err, syscall.ECONNABORTED) {
		return stale
	}
	return mounted
}

// unmountAll unmounts every nczarrfs mount stacked at target: at once,
// or lazily when files in it are open (the kernel keeps the connection
// until the last one closes, and the daemon then exits).
func unmountAll(target string) error {
	for i := 0; i < 8; i++ {
		switch stateOf(target) {
		case notMounted, otherMount:
			return nil
		}
		if err := syscall.Unmount(target, 0); err != nil {
			if err := syscall.Unmount(target, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) {
				return fmt.Errorf("unmounting %s: %w", target, err)
			}
		}
	}
	return fmt.Errorf("unmounting %s: still mounted", target)
}

// removeTarget removes the target folder, which must be empty once
// unmounted; a missing one is fine.
func removeTarget(target string) error {
	err := os.Remove(target)
	if err == nil || errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return fmt.Errorf("removing %s: %w", target, err)
}
