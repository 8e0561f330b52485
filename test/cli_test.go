package test

// End-to-end tests of the command line and the daemon's behaviour: signals
// with files open, --daemon, the unmount command, the mount helper form
// that mount(8) and fstab use, make install, help, errors, completion,
// logging and the mountpoint checks. Each runs the real binary.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// runBinary runs nczarrfs with args to completion (bounded by mountWait)
// and returns its stdout, stderr and exit status.
func runBinary(t *testing.T, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return runCommand(t, env, nczarrfsBinary(t), args...)
}

func runCommand(t *testing.T, env []string, name string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(name, args...)
	if env != nil {
		cmd.Env = env
	}
	var out, errOut syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", name, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(mountWait):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("%s %q still running after %v:\n%s", name, args, mountWait, errOut.String())
	}
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit):
		code = exit.ExitCode()
	default:
		t.Fatalf("%s %q: %v", name, args, err)
	}
	return out.String(), errOut.String(), code
}

// startArgs starts "nczarrfs args..." in the foreground and waits for the
// mount at mnt, like startDaemon but with any command line (flags after
// the arguments, say). Cleanup is stopDaemon's.
func startArgs(t *testing.T, mnt string, args ...string) *daemon {
	t.Helper()
	d, _ := launch(t, nczarrfsBinary(t), mnt, args)
	return d
}

// waitFor polls cond until it holds, failing the test after mountWait (a
// bound on hangs, not a speed assertion).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(mountWait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("no %s after %v", what, mountWait)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// newMountpoint is an empty directory for a mount.
func newMountpoint(t *testing.T) string {
	t.Helper()
	mnt := filepath.Join(t.TempDir(), "mnt")
	mustMkdir(t, mnt)
	return mnt
}

// daemonPIDs lists the processes whose command line has the argument mnt:
// the nczarrfs serving it, when it runs detached from the test.
func daemonPIDs(mnt string) []int {
	var pids []int
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		raw, err := os.ReadFile(filepath.Join("/proc", d.Name(), "cmdline"))
		if err != nil {
			continue
		}
		for _, arg := range strings.Split(string(raw), "\x00") {
			if arg == mnt {
				pids = append(pids, pid)
				break
			}
		}
	}
	return pids
}

// waitDetachedExit waits until no process serves mnt any more.
func waitDetachedExit(t *testing.T, mnt string) {
	t.Helper()
	waitFor(t, "exit of the nczarrfs serving "+mnt, func() bool { return len(daemonPIDs(mnt)) == 0 })
}

// cleanupDetached unmounts mnt and kills its detached daemon if a test
// failed half-way.
func cleanupDetached(t *testing.T, mnt string) {
	t.Cleanup(func() {
		if _, ok := mountedAt(mnt); ok {
			_ = exec.Command("fusermount3", "-u", "-z", mnt).Run()
		}
		for _, pid := range daemonPIDs(mnt) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
}

// someArray returns a dataset's first readable array.
func someArray(t *testing.T, ds dataset) array {
	t.Helper()
	for _, a := range ds.Arrays {
		if !a.Error && elements(a.Shape) > 0 {
			return a
		}
	}
	t.Fatalf("dataset %s has no readable array", ds.Name)
	return array{}
}

// TestSignalWithOpenFile: SIGTERM, SIGINT or SIGHUP while a file in the
// mount is open must still end the daemon with status 0 and leave nothing
// mounted; the busy mount is detached lazily, so new opens fail at once.
func TestSignalWithOpenFile(t *testing.T) {
	set, ds := findDataset(t, "nczarr-4.9.0-basic")
	a := someArray(t, ds)
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP} {
		t.Run(sig.String(), func(t *testing.T) {
			t.Parallel()
			want, err := os.ReadFile(filepath.Join(set.Dir, a.Expected))
			if err != nil {
				t.Fatal(err)
			}
			d := startDaemon(t, ds.TreePath(set))
			// O_DIRECT: every read asks the daemon, none is answered
			// from the kernel's page cache.
			f, err := os.OpenFile(filepath.Join(d.mnt, a.Path, "data"), os.O_RDONLY|syscall.O_DIRECT, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if _, err := f.Read(make([]byte, 1)); err != nil {
				t.Fatal(err)
			}
			if err := d.cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "lazy detach", func() bool { _, ok := mountedAt(d.mnt); return !ok })
			// The mountpoint is the plain directory again: new opens fail.
			if _, err := os.Stat(filepath.Join(d.mnt, a.Path, "data")); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("stat in the detached mountpoint: %v, want not-exist", err)
			}
			// Until the daemon exits, the open file still reads right.
			got := make([]byte, len(want))
			switch n, err := f.ReadAt(got, 0); {
			case errors.Is(err, syscall.ENOTCONN):
				t.Logf("the grace period ended before the read")
			case n != len(want) || !bytes.Equal(got, want):
				t.Errorf("read during the grace period: %d bytes, %v; want the array's %d bytes", n, err, len(want))
			}
			if !d.wait(mountWait) {
				t.Fatalf("nczarrfs still running %v after %v with a file open:\n%s", mountWait, sig, d.output.String())
			}
			if d.err != nil {
				t.Errorf("after %v nczarrfs exited with %v, want status 0", sig, d.err)
			}
			out := d.output.String()
			for _, want := range []string{"msg=stopping", "detaching it lazily", "files still open"} {
				if !strings.Contains(out, want) {
					t.Errorf("log does not say %q:\n%s", want, out)
				}
			}
			// The daemon is gone: the open file fails instead of hanging.
			if _, err := f.ReadAt(make([]byte, 1), 0); !errors.Is(err, syscall.ENOTCONN) {
				t.Errorf("read of a file held open across the exit: %v, want ENOTCONN", err)
			}
		})
	}
}

// TestSecondSignal: a second signal ends the daemon at once, without the
// grace period for open files.
func TestSecondSignal(t *testing.T) {
	set, ds := findDataset(t, "nczarr-4.9.0-basic")
	a := someArray(t, ds)
	d := startDaemon(t, ds.TreePath(set))
	f, err := os.Open(filepath.Join(d.mnt, a.Path, "data"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "lazy detach log line", func() bool { return strings.Contains(d.output.String(), "detaching it lazily") })
	if err := d.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if !d.wait(mountWait) {
		t.Fatalf("nczarrfs still running %v after a second signal", mountWait)
	}
	if d.err != nil {
		t.Errorf("nczarrfs exited with %v, want status 0", d.err)
	}
	out := d.output.String()
	if !strings.Contains(out, "second signal: exiting now") || strings.Contains(out, "files still open") {
		t.Errorf("want an exit on the second signal, before the grace period ended; log:\n%s", out)
	}
	if _, ok := mountedAt(d.mnt); ok {
		t.Errorf("%s still mounted", d.mnt)
	}
}

// TestReadyLine: a foreground mount says once on stderr that it is up.
func TestReadyLine(t *testing.T) {
	set, ds := findDataset(t, "zarr-dtypes")
	d := startDaemon(t, ds.TreePath(set))
	want := fmt.Sprintf("nczarrfs: mounted %s at %s\n", ds.TreePath(set), d.mnt)
	waitFor(t, "ready line", func() bool { return strings.Contains(d.output.String(), want) })
}

// TestFlagsAfterArguments mounts with every kind of flag after SOURCE and
// MOUNTPOINT, and checks that they took effect: ownership and modes from
// --uid/--gid/--umask, the cache size, the JSON log in --log-file with
// go-fuse's request log (--debug) in the same format.
func TestFlagsAfterArguments(t *testing.T) {
	set, ds := findDataset(t, "nczarr-4.9.0-basic")
	a := someArray(t, ds)
	mnt := newMountpoint(t)
	logFile := filepath.Join(t.TempDir(), "nczarrfs.log")
	startArgs(t, mnt, "mount", ds.TreePath(set), mnt,
		"--uid", "4321", "--gid=8765", "--umask", "027", "--cache-size", "1MiB",
		"--log-file", logFile, "--log-format", "json", "--debug")
	checkDataset(t, mnt, set, ds)
	for _, tt := range []struct {
		path string
		mode fs.FileMode
	}{{mnt, fs.ModeDir | 0o550}, {filepath.Join(mnt, a.Path), fs.ModeDir | 0o550},
		{filepath.Join(mnt, ".zgroup"), 0o440}, {filepath.Join(mnt, a.Path, "data"), 0o440}} {
		info, err := os.Stat(tt.path)
		if err != nil {
			t.Fatal(err)
		}
		st := info.Sys().(*syscall.Stat_t)
		if info.Mode() != tt.mode || st.Uid != 4321 || st.Gid != 8765 {
			t.Errorf("%s: mode %v uid %d gid %d; want %v 4321 8765", tt.path, info.Mode(), st.Uid, st.Gid, tt.mode)
		}
	}
	if err := unmount(t, mnt); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "final log line", func() bool {
		raw, _ := os.ReadFile(logFile)
		return bytes.Contains(raw, []byte(`"msg":"unmounted"`))
	})
	raw, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatal(err)
	}
	// go-fuse logs each request as "rx 12: OPEN n2 {...}".
	fuseRequest := regexp.MustCompile(`^rx [0-9]+: [A-Z]+ `)
	var fuseLines int
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var rec struct{ Time, Level, Msg string }
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil || rec.Time == "" || rec.Level == "" {
			t.Fatalf("log line is not a JSON record (%v): %s", err, sc.Bytes())
		}
		if fuseRequest.MatchString(rec.Msg) {
			fuseLines++
		}
	}
	if fuseLines == 0 {
		t.Errorf("--debug: no FUSE request in the log:\n%s", clip(string(raw)))
	}
}

// TestCommandLine runs the binary's non-mount command lines: help,
// version and every kind of mistake. Errors are one line "nczarrfs: ..."
// on stderr, nothing on stdout, exit status 1.
func TestCommandLine(t *testing.T) {
	set, ds := findDataset(t, "zarr-dtypes")
	good := ds.TreePath(set)
	file := filepath.Join(t.TempDir(), "file")
	mustWrite(t, file, []byte("x"))
	tests := []struct {
		name   string
		args   []string // "MNT" is replaced by a fresh mountpoint
		code   int
		stdout []string // substrings
		stderr []string // substrings; for errors the whole stderr is one line
	}{
		{"version", []string{"--version"}, 0, []string{"nczarrfs version ", " go1."}, nil},
		{"help", []string{"help"}, 0, []string{"COMMANDS:", "mount", "unmount", "completion", "Examples:"}, nil},
		{"help mount", []string{"help", "mount"}, 0, []string{"--cache-size", "--daemon", "--uid", "--log-format", "Examples:"}, nil},
		{"mount --help", []string{"mount", "--help"}, 0, []string{"--allow-non-empty", "Examples:"}, nil},
		{"help unmount", []string{"help", "unmount"}, 0, []string{"lazily", "Examples:"}, nil},
		{"help completion", []string{"help", "completion"}, 0, []string{"bash", "Examples:"}, nil},
		{"help preview", []string{"help", "preview"}, 0, []string{"--index", "--size", "viridis", "Examples:"}, nil},
		{"help of nothing", []string{"help", "bogus"}, 1, nil, []string{"bogus"}},
		{"unknown command", []string{"moutn", good, "MNT", "x"}, 1, nil, []string{`unknown command "moutn"`, "see nczarrfs --help"}},
		{"unknown flag", []string{"mount", "--no-such-flag", good, "MNT"}, 1, nil, []string{"no-such-flag", "see nczarrfs mount --help"}},
		{"unknown flag after arguments", []string{"mount", good, "MNT", "--no-such-flag"}, 1, nil, []string{"no-such-flag"}},
		{"bad duration", []string{"mount", good, "MNT", "--s3-timeout", "soon"}, 1, nil, []string{"soon"}},
		{"cache size 0", []string{"mount", good, "MNT", "--cache-size", "0"}, 1, nil, []string{"--cache-size"}},
		{"negative timeout", []string{"mount", good, "MNT", "--s3-timeout=-1s"}, 1, nil, []string{"--s3-timeout", "-1s"}},
		{"zero timeout", []string{"mount", good, "MNT", "--s3-timeout", "0s"}, 1, nil, []string{"--s3-timeout"}},
		{"bad umask", []string{"mount", good, "MNT", "--umask", "999"}, 1, nil, []string{"--umask", "999"}},
		{"unknown user", []string{"mount", good, "MNT", "--uid", "no-such-user-nczarrfs"}, 1, nil, []string{"no-such-user-nczarrfs"}},
		{"bad log format", []string{"mount", good, "MNT", "--log-format", "xml"}, 1, nil, []string{"xml"}},
		{"log file in a missing folder", []string{"mount", good, "MNT", "--log-file", "/nonexistent/nczarrfs/log"}, 1, nil, []string{"/nonexistent/nczarrfs/log"}},
		{"helper form, unknown option", []string{good, "MNT", "-o", "ro,cache_sise=1MiB"}, 1, nil, []string{"cache_sise"}},
		{"unmount of nothing", []string{"unmount", "MNT"}, 1, nil, []string{"is not mounted"}},
		{"unmount of another filesystem", []string{"unmount", "/"}, 1, nil, []string{"not nczarrfs"}},
		{"completion for an unknown shell", []string{"completion", "fish"}, 1, nil, []string{"fish"}},
		{"mountpoint is a file", []string{"mount", good, file}, 1, nil, []string{"not a directory"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			mnt := newMountpoint(t)
			args := make([]string, len(tt.args))
			for i, a := range tt.args {
				args[i] = strings.ReplaceAll(a, "MNT", mnt)
			}
			stdout, stderr, code := runBinary(t, nil, args...)
			if code != tt.code {
				t.Errorf("nczarrfs %q: exit status %d, want %d\nstdout:\n%s\nstderr:\n%s", args, code, tt.code, stdout, stderr)
			}
			if _, ok := mountedAt(mnt); ok {
				t.Errorf("%s is mounted", mnt)
				_ = exec.Command("fusermount3", "-u", "-z", mnt).Run()
			}
			for _, w := range tt.stdout {
				if !strings.Contains(stdout, w) {
					t.Errorf("nczarrfs %q: stdout does not have %q:\n%s", args, w, stdout)
				}
			}
			if tt.code != 0 {
				if stdout != "" {
					t.Errorf("nczarrfs %q: an error printed on stdout:\n%s", args, stdout)
				}
				if !strings.HasPrefix(stderr, "nczarrfs: ") || strings.Count(stderr, "\n") != 1 {
					t.Errorf("nczarrfs %q: stderr is not one line \"nczarrfs: ...\":\n%s", args, stderr)
				}
			}
			for _, w := range tt.stderr {
				if !strings.Contains(stderr, w) {
					t.Errorf("nczarrfs %q: stderr does not have %q: %s", args, w, stderr)
				}
			}
		})
	}
}

// TestMountpointChecks: a mountpoint that is not empty, is a mount already
// or is a stale mount of a killed daemon is refused with a message that
// says what to do; --allow-non-empty mounts over the first two.
func TestMountpointChecks(t *testing.T) {
	set, ds := findDataset(t, "zarr-dtypes")
	src := ds.TreePath(set)

	t.Run("not empty", func(t *testing.T) {
		mnt := newMountpoint(t)
		mustWrite(t, filepath.Join(mnt, "keep"), []byte("x"))
		_, stderr, code := runBinary(t, nil, "mount", src, mnt)
		if code != 1 || !strings.Contains(stderr, "not empty") || !strings.Contains(stderr, "--allow-non-empty") {
			t.Errorf("exit %d, stderr %q; want 1 and a hint about --allow-non-empty", code, stderr)
		}
		startArgs(t, mnt, "mount", src, mnt, "--allow-non-empty")
		checkDataset(t, mnt, set, ds)
	})

	t.Run("mount already", func(t *testing.T) {
		d := startDaemon(t, src)
		_, stderr, code := runBinary(t, nil, "mount", src, d.mnt)
		if code != 1 || !strings.Contains(stderr, "a mount already") {
			t.Errorf("exit %d, stderr %q; want 1 and \"a mount already\"", code, stderr)
		}
		if !strings.Contains(d.output.String(), "nczarrfs: mounted") || d.exited() {
			t.Errorf("the first mount suffered:\n%s", d.output.String())
		}
	})

	t.Run("stale", func(t *testing.T) {
		mnt := newMountpoint(t)
		cmd := exec.Command(nczarrfsBinary(t), "mount", src, mnt)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = exec.Command("fusermount3", "-u", "-z", mnt).Run() })
		waitFor(t, "mount", func() bool { _, ok := mountedAt(mnt); return ok })
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		_, stderr, code := runBinary(t, nil, "mount", src, mnt)
		want := "run fusermount3 -u " + mnt
		if code != 1 || !strings.Contains(stderr, want) {
			t.Errorf("exit %d, stderr %q; want 1 and %q", code, stderr, want)
		}
	})
}

// TestDaemon: --daemon returns once the mount is up with status 0, and
// with status 1 and the child's error when it cannot come up.
func TestDaemon(t *testing.T) {
	set, ds := findDataset(t, "zarr-dtypes")

	t.Run("up", func(t *testing.T) {
		mnt := newMountpoint(t)
		cleanupDetached(t, mnt)
		logFile := filepath.Join(t.TempDir(), "log")
		stdout, stderr, code := runBinary(t, nil, "mount", "--daemon", ds.TreePath(set), mnt, "--log-file", logFile)
		if code != 0 {
			t.Fatalf("mount --daemon: exit %d:\n%s%s", code, stdout, stderr)
		}
		// Up as soon as the command returned: no polling.
		if fstype, ok := mountedAt(mnt); !ok || fstype != "fuse.nczarrfs" {
			t.Fatalf("mount --daemon returned 0 but %s is not an nczarrfs mount (%q)", mnt, fstype)
		}
		if want := "nczarrfs: mounted " + ds.TreePath(set) + " at " + mnt + "\n"; stderr != want {
			t.Errorf("stderr %q, want %q", stderr, want)
		}
		checkDataset(t, mnt, set, ds)
		pids := daemonPIDs(mnt)
		if len(pids) != 1 {
			t.Fatalf("processes serving %s: %v, want one", mnt, pids)
		}
		// The daemon does not keep the folder it was started in busy.
		if cwd, err := os.Readlink(fmt.Sprintf("/proc/%d/cwd", pids[0])); err != nil || cwd != "/" {
			t.Errorf("the daemon's working folder is %q (%v), want /", cwd, err)
		}
		_, stderr, code = runBinary(t, nil, "unmount", mnt)
		if code != 0 || stderr != "" {
			t.Fatalf("unmount: exit %d, stderr %q", code, stderr)
		}
		if _, ok := mountedAt(mnt); ok {
			t.Errorf("%s still mounted after nczarrfs unmount", mnt)
		}
		waitDetachedExit(t, mnt)
		raw, _ := os.ReadFile(logFile)
		for _, want := range []string{"msg=mounted", "msg=unmounted"} {
			if !strings.Contains(string(raw), want) {
				t.Errorf("log file lacks %q:\n%s", want, raw)
			}
		}
	})

	t.Run("killed before it is up", func(t *testing.T) {
		// An S3 server that accepts connections and never answers holds
		// the daemon before its mount; killed there, it has said nothing.
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		var conns []net.Conn
		var mu sync.Mutex
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				mu.Lock()
				conns = append(conns, c)
				mu.Unlock()
			}
		}()
		t.Cleanup(func() {
			ln.Close()
			mu.Lock()
			defer mu.Unlock()
			for _, c := range conns {
				c.Close()
			}
		})
		mnt := newMountpoint(t)
		cleanupDetached(t, mnt)
		src := fmt.Sprintf("http://%s/bucket/ds#mode=nczarr,s3", ln.Addr())
		go func() {
			// Kill the child, the process serving mnt that leads its own
			// session (the parent runs in the test's). runBinary's bound
			// ends the test if this never happens.
			for deadline := time.Now().Add(mountWait); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
				for _, pid := range daemonPIDs(mnt) {
					if sid, _ := unix.Getsid(pid); sid == pid {
						_ = syscall.Kill(pid, syscall.SIGKILL)
						return
					}
				}
			}
		}()
		_, stderr, code := runBinary(t, nil, "mount", "--daemon", "--no-sign-request", "--s3-timeout", "1m", src, mnt)
		if code != 1 || !strings.HasPrefix(stderr, "nczarrfs: the daemon exited before the mount was up: signal: killed") {
			t.Errorf("exit %d, stderr %q; want 1 and why", code, stderr)
		}
	})

	t.Run("fails", func(t *testing.T) {
		mnt := newMountpoint(t)
		cleanupDetached(t, mnt)
		missing := "/nonexistent/nczarrfs/daemon.zip"
		_, stderr, code := runBinary(t, nil, "mount", "--daemon", missing, mnt)
		if code != 1 || !strings.HasPrefix(stderr, "nczarrfs: ") || !strings.Contains(stderr, missing) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("exit %d, stderr %q; want 1 and one line naming %s", code, stderr, missing)
		}
		if _, ok := mountedAt(mnt); ok {
			t.Errorf("%s is mounted", mnt)
		}
		waitDetachedExit(t, mnt)
	})
}

// TestUnmountBusy: nczarrfs unmount of a mount with a file open detaches
// it lazily and says so; the daemon exits 0 once the file is closed.
func TestUnmountBusy(t *testing.T) {
	set, ds := findDataset(t, "nczarr-4.9.0-basic")
	a := someArray(t, ds)
	d := startDaemon(t, ds.TreePath(set))
	f, err := os.Open(filepath.Join(d.mnt, a.Path, "data"))
	if err != nil {
		t.Fatal(err)
	}
	_, stderr, code := runBinary(t, nil, "unmount", d.mnt)
	if code != 0 || !strings.Contains(stderr, "busy") || !strings.Contains(stderr, "lazily") {
		t.Errorf("unmount of a busy mount: exit %d, stderr %q; want 0 and a note that it was detached lazily", code, stderr)
	}
	if _, ok := mountedAt(d.mnt); ok {
		t.Errorf("%s still mounted", d.mnt)
	}
	// The open file still reads, from the detached mount.
	want, err := os.ReadFile(filepath.Join(set.Dir, a.Expected))
	if err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(want))
	if n, err := f.ReadAt(got, 0); n != len(want) || !bytes.Equal(got, want) {
		t.Errorf("read of the open file after the detach: %d bytes, %v; want the array's %d bytes", n, err, len(want))
	}
	if d.exited() {
		t.Errorf("nczarrfs exited while a file was open")
	}
	f.Close()
	if !d.wait(mountWait) {
		t.Fatalf("nczarrfs still running %v after the last file closed", mountWait)
	}
	if d.err != nil {
		t.Errorf("nczarrfs exited with %v, want status 0", d.err)
	}
}

// TestCompletion: the bash script completes commands and flags by asking
// the binary.
func TestCompletion(t *testing.T) {
	bin := nczarrfsBinary(t)
	script, stderr, code := runBinary(t, nil, "completion", "bash")
	if code != 0 || stderr != "" {
		t.Fatalf("completion bash: exit %d, %s", code, stderr)
	}
	tests := []struct {
		words []string
		want  string
	}{
		{[]string{"nczarrfs", "mo"}, "mount"},
		{[]string{"nczarrfs", "un"}, "unmount"},
		{[]string{"nczarrfs", "mount", "--cache-s"}, "--cache-size"},
		{[]string{"nczarrfs", "mount", "--allow-n"}, "--allow-non-empty"},
		{[]string{"nczarrfs", "help", "unm"}, "unmount"},
		// Arguments are files: no candidates, bash completes file names.
		{[]string{"nczarrfs", "mount", "h"}, ""},
		{[]string{"nczarrfs", "mount", "/data/x.zip", "/mn"}, ""},
	}
	for _, tt := range tests {
		prog := script + fmt.Sprintf("\nCOMP_WORDS=(%s); COMP_CWORD=%d; _nczarrfs_complete; echo \"${COMPREPLY[*]}\"\n",
			strings.Join(tt.words, " "), len(tt.words)-1)
		env := append(os.Environ(), "PATH="+filepath.Dir(bin)+":"+os.Getenv("PATH"))
		out, stderr, code := runCommand(t, env, "bash", "-c", prog)
		if code != 0 || strings.TrimSpace(out) != tt.want {
			t.Errorf("completing %q: %q (exit %d, %s), want %q", tt.words, out, code, stderr, tt.want)
		}
	}
	zsh, _, code := runBinary(t, nil, "completion", "zsh")
	if code != 0 || !strings.HasPrefix(zsh, "#compdef nczarrfs\n") {
		t.Errorf("completion zsh: exit %d, script %q", code, zsh)
	}
}

// TestInstallAndMountHelper installs with make install into a scratch
// prefix, then mounts the way mount(8) does: through the installed
// mount.fuse.nczarrfs link, with fstab-style options and no PATH; through
// fuse3's mount.fuse3; with "mount -t fuse.nczarrfs"; and from an fstab
// line. umount ends the daemon each time.
func TestInstallAndMountHelper(t *testing.T) {
	set, ds := findDataset(t, "zarr-dtypes")
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	prefix := filepath.Join(t.TempDir(), "usr")
	sbin := filepath.Join(t.TempDir(), "sbin")
	build := filepath.Join(t.TempDir(), "nczarrfs")
	out, stderr, code := runCommand(t, nil, "make", "-C", root, "install", "PREFIX="+prefix, "SBINDIR="+sbin, "BIN="+build)
	if code != 0 {
		t.Fatalf("make install: exit %d:\n%s%s", code, out, stderr)
	}
	installed := filepath.Join(prefix, "bin", "nczarrfs")
	if info, err := os.Stat(installed); err != nil || info.Mode().Perm() != 0o755 {
		t.Fatalf("installed binary: %v, %v", info, err)
	}
	helper := filepath.Join(sbin, "mount.fuse.nczarrfs")
	if target, err := os.Readlink(helper); err != nil || target != installed {
		t.Fatalf("%s links to %q (%v), want %s", helper, target, err, installed)
	}

	// --version names the commit it was built from: one git knows.
	version, _, code := runCommand(t, nil, installed, "--version")
	m := regexp.MustCompile(`^nczarrfs version \S+ \(commit ([0-9a-f]{12})(, modified)?\) go1\.`).FindStringSubmatch(version)
	if code != 0 || m == nil {
		t.Fatalf("--version: %q (exit %d)", version, code)
	}
	if msg, err := exec.Command("git", "-C", root, "cat-file", "-e", m[1]+"^{commit}").CombinedOutput(); err != nil {
		t.Errorf("--version names commit %s, which git does not know: %s", m[1], msg)
	}

	check := func(t *testing.T, mnt string) {
		if fstype, ok := mountedAt(mnt); !ok || fstype != "fuse.nczarrfs" {
			t.Fatalf("%s: mount %q, %v; want fuse.nczarrfs", mnt, fstype, ok)
		}
		checkDataset(t, mnt, set, ds)
		info, err := os.Stat(filepath.Join(mnt, ".zgroup"))
		if err != nil || info.Sys().(*syscall.Stat_t).Uid != 4242 {
			t.Errorf("uid=4242 not applied: %v, %v", info, err)
		}
		if out, err := exec.Command("umount", mnt).CombinedOutput(); err != nil {
			t.Fatalf("umount %s: %v: %s", mnt, err, out)
		}
		if _, ok := mountedAt(mnt); ok {
			t.Errorf("%s still mounted after umount", mnt)
		}
		waitDetachedExit(t, mnt)
	}
	opts := "rw,noauto,nofail,_netdev,x-systemd.automount,uid=4242,cache_size=4MiB"

	t.Run("mount.fuse.nczarrfs", func(t *testing.T) {
		mnt := newMountpoint(t)
		cleanupDetached(t, mnt)
		// mount(8) runs helpers with no PATH at all.
		env := []string{"HOME=" + os.Getenv("HOME")}
		out, stderr, code := runCommand(t, env, helper, ds.TreePath(set), mnt, "-o", opts)
		if code != 0 || out != "" || stderr != "" {
			t.Fatalf("%s: exit %d, stdout %q, stderr %q; want 0 and silence", helper, code, out, stderr)
		}
		check(t, mnt)
	})

	t.Run("mount.fuse3", func(t *testing.T) {
		// Without the mount.fuse.nczarrfs link, mount(8) runs fuse3's
		// mount.fuse3, which runs "nczarrfs SOURCE MOUNTPOINT -o OPTIONS"
		// from PATH, having dropped some options and added others.
		mountFuse3, err := exec.LookPath("mount.fuse3")
		if err != nil {
			t.Fatalf("mount.fuse3 (package fuse3): %v", err)
		}
		mnt := newMountpoint(t)
		cleanupDetached(t, mnt)
		env := []string{"PATH=" + filepath.Dir(nczarrfsBinary(t)) + ":/usr/sbin:/usr/bin:/sbin:/bin", "HOME=" + os.Getenv("HOME")}
		out, stderr, code := runCommand(t, env, mountFuse3, ds.TreePath(set), mnt, "-t", "fuse.nczarrfs", "-o", opts)
		if code != 0 || out != "" || stderr != "" {
			t.Fatalf("mount.fuse3: exit %d, stdout %q, stderr %q; want 0 and silence", code, out, stderr)
		}
		check(t, mnt)
	})

	t.Run("mount(8)", func(t *testing.T) {
		// mount(8) looks for its helper in /sbin: link the build under
		// test there for the duration of the test.
		link := "/sbin/mount.fuse.nczarrfs"
		if err := os.Symlink(nczarrfsBinary(t), link); err != nil {
			t.Fatalf("linking %s (an installed nczarrfs would be tested instead of this build; remove it with make uninstall): %v", link, err)
		}
		t.Cleanup(func() { os.Remove(link) })

		t.Run("mount -t fuse.nczarrfs", func(t *testing.T) {
			mnt := newMountpoint(t)
			cleanupDetached(t, mnt)
			out, stderr, code := runCommand(t, nil, "mount", "-t", "fuse.nczarrfs", ds.TreePath(set), mnt, "-o", opts)
			if code != 0 {
				t.Fatalf("mount -t fuse.nczarrfs: exit %d: %s%s", code, out, stderr)
			}
			check(t, mnt)
		})

		t.Run("fstab", func(t *testing.T) {
			// An fstab line, mounted by its mountpoint (mount -T reads
			// another file instead of /etc/fstab).
			mnt := newMountpoint(t)
			cleanupDetached(t, mnt)
			fstab := filepath.Join(t.TempDir(), "fstab")
			mustWrite(t, fstab, []byte(fmt.Sprintf("# a comment\n%s %s fuse.nczarrfs ro,%s 0 0\n", ds.TreePath(set), mnt, opts)))
			out, stderr, code := runCommand(t, nil, "mount", "-T", fstab, mnt)
			if code != 0 {
				t.Fatalf("mount -T %s %s: exit %d: %s%s", fstab, mnt, code, out, stderr)
			}
			check(t, mnt)
		})
	})
}
