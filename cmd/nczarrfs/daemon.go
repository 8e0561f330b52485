package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"syscall"
)

// --daemon: the command starts itself again in the background, in a new
// session, with readyEnv naming a pipe. The child mounts; once the mount
// is up it points its stderr away from the parent's, moves to / (so as not
// to keep the folder it was started in busy) and writes one byte to the
// pipe. The parent relays the child's stderr until then, and exits
// 0 when the byte comes, or 1 when the pipe closes without it (the child
// failed and has said why).

// readyEnv holds the child's end of the readiness pipe (a descriptor).
const readyEnv = "NCZARRFS_DAEMON_READY_FD"

// startDaemon runs "exe args..." as the background child and waits until
// its mount is up or it has failed.
func startDaemon(exe string, args []string) error {
	if self, err := os.Executable(); err == nil {
		exe = self
	}
	readyR, readyW, err := os.Pipe()
	if err != nil {
		return err
	}
	defer readyR.Close()
	errR, errW, err := os.Pipe()
	if err != nil {
		readyW.Close()
		return err
	}
	cmd := exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), readyEnv+"=3") // ExtraFiles[0] is 3
	cmd.ExtraFiles = []*os.File{readyW}
	cmd.Stderr = errW
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	// Stop the child, not only this process, if the user gives up.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)
	err = cmd.Start()
	readyW.Close()
	errW.Close()
	if err != nil {
		errR.Close()
		return fmt.Errorf("starting the daemon: %w", err)
	}
	relayed := make(chan struct{})
	var said int64 // bytes of the child's stderr relayed
	go func() {
		said, _ = io.Copy(os.Stderr, errR)
		errR.Close()
		close(relayed)
	}()
	go func() {
		for sig := range sigs {
			cmd.Process.Signal(sig)
		}
	}()

	var b [1]byte
	n, _ := readyR.Read(b[:])
	<-relayed // the child has let go of its stderr: ready or exited
	if n == 1 {
		return cmd.Process.Release()
	}
	err = cmd.Wait()
	switch {
	case err == nil:
		return nil // stopped by a signal before mounting: not a failure
	case said == 0:
		return fmt.Errorf("the daemon exited before the mount was up: %w", err)
	}
	return errExit // the child printed why
}

// readyNotifier returns, in the daemon's child, the function that reports
// the mount is up; nil in any other process.
func readyNotifier() func(*logging) error {
	fd, err := strconv.Atoi(os.Getenv(readyEnv))
	if err != nil || fd < 3 {
		return nil
	}
	os.Unsetenv(readyEnv)
	syscall.CloseOnExec(fd) // not for fusermount3 and other children
	pipe := os.NewFile(uintptr(fd), "ready")
	return func(logs *logging) error {
		defer pipe.Close()
		if err := detachStdio(logs); err != nil {
			return err
		}
		if err := os.Chdir("/"); err != nil {
			return err
		}
		_, err := pipe.Write([]byte{1})
		return err
	}
}

// detachStdio points stdin, stdout and stderr away from the parent:
// to /dev/null, except stderr to the log file when there is one (so a
// crash leaves its trace there).
func detachStdio(logs *logging) error {
	logs.detachStderr()
	null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer null.Close()
	errTo := null
	if logs.file != nil {
		errTo = logs.file
	}
	for fd, f := range []*os.File{null, null, errTo} {
		if err := syscall.Dup3(int(f.Fd()), fd, 0); err != nil {
			return fmt.Errorf("redirecting descriptor %d: %w", fd, err)
		}
	}
	return nil
}

// daemonArgs is the command line the daemon's child runs: the parent's,
// as normalized (the helper form turned into "mount --daemon").
func daemonArgs(app map[string]any) ([]string, error) {
	args, ok := app["args"].([]string)
	if !ok || len(args) < 2 {
		return nil, errors.New("internal error: no command line to start the daemon with")
	}
	return args[1:], nil
}
