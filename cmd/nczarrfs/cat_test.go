package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// openPTY opens a pseudo-terminal and returns its terminal side; the
// controlling side is drained (so that writes never block) and both are
// closed when t ends.
func openPTY(t *testing.T) *os.File {
	t.Helper()
	ptmx, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("opening a pseudo-terminal: %v", err)
	}
	fd := int(ptmx.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		t.Fatalf("unlocking the pseudo-terminal: %v", err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		t.Fatalf("numbering the pseudo-terminal: %v", err)
	}
	tty, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	drained := make(chan struct{})
	go func() {
		io.Copy(io.Discard, ptmx) // ends with EIO once tty is closed
		close(drained)
	}()
	t.Cleanup(func() {
		tty.Close()
		<-drained
		ptmx.Close()
	})
	return tty
}

// TestNewProgress checks when cat draws a progress bar: only when stderr
// is a terminal, the output is not one, and the array is long.
func TestNewProgress(t *testing.T) {
	tty := openPTY(t)
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	defer pw.Close()
	file, err := os.Create(t.TempDir() + "/out")
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	devNull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer devNull.Close()

	tests := []struct {
		name   string
		stderr *os.File
		out    io.Writer
		total  int64
		want   bool
	}{
		{"stderr a terminal, output a file", tty, file, progressMin, true},
		{"stderr a terminal, output a pipe", tty, pw, progressMin, true},
		{"stderr a terminal, output /dev/null", tty, devNull, progressMin, true},
		{"stderr a terminal, output not a file", tty, &bytes.Buffer{}, progressMin, true},
		{"short array", tty, file, progressMin - 1, false},
		{"output the same terminal", tty, tty, progressMin, false},
		{"stderr a pipe", pw, file, progressMin, false},
		{"stderr a file", file, pw, progressMin, false},
		{"stderr /dev/null", devNull, file, progressMin, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := newProgress(tt.stderr, tt.out, tt.total) != nil; got != tt.want {
				t.Errorf("progress bar: %v, want %v", got, tt.want)
			}
		})
	}
}

func TestBarLine(t *testing.T) {
	tests := []struct {
		done, total int64
		elapsed     time.Duration
		want        string
	}{
		{0, 100 << 20, 0, "[                              ]   0%  0 B / 100.0 MiB  0 B/s"},
		{25 << 20, 100 << 20, time.Second, "[=======                       ]  25%  25.0 MiB / 100.0 MiB  25.0 MiB/s"},
		{100 << 20, 100 << 20, 4 * time.Second, "[==============================] 100%  100.0 MiB / 100.0 MiB  25.0 MiB/s"},
		{3 << 30, 4 << 30, 2 * time.Second, "[======================        ]  75%  3.0 GiB / 4.0 GiB  1.5 GiB/s"},
	}
	for _, tt := range tests {
		if got := barLine(tt.done, tt.total, tt.elapsed); got != tt.want {
			t.Errorf("barLine(%d, %d, %v)\n got %q\nwant %q", tt.done, tt.total, tt.elapsed, got, tt.want)
		}
	}
}

// TestProgressRedraw checks that each redraw returns to the start of the
// line and covers all of a longer line drawn before, and that done ends
// the line.
func TestProgressRedraw(t *testing.T) {
	var out bytes.Buffer
	p := &progress{out: &out, total: 1 << 30, start: time.Now().Add(-time.Second)}
	p.update(1 << 29)
	first := out.String()
	p.last = time.Time{} // let the next update draw at once
	p.update(1 << 20)
	p.done()
	lines := strings.Split(out.String(), "\r")
	if len(lines) != 3 || lines[0] != "" || lines[1] != first[1:] {
		t.Fatalf("output %q, want two lines each after a \\r", out.String())
	}
	second := strings.TrimSuffix(lines[2], "\n")
	if len(second) < len(lines[1]) || !strings.HasSuffix(lines[2], "\n") {
		t.Errorf("second line %q does not cover the first %q, or no newline at the end", lines[2], lines[1])
	}
	var none *progress
	none.update(1) // a nil progress draws nothing, and does not panic
	none.done()
}

func TestHuman(t *testing.T) {
	for n, want := range map[float64]string{
		0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 1536: "1.5 KiB",
		5 << 20: "5.0 MiB", 1 << 40: "1.0 TiB", 1 << 50: "1024.0 TiB",
	} {
		if got := human(n); got != want {
			t.Errorf("human(%v) = %q, want %q", n, got, want)
		}
	}
}
