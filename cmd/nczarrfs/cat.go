package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/urfave/cli/v2"
	"golang.org/x/sys/unix"

	"github.com/nczarrfs/nczarrfs/describe"
	"github.com/nczarrfs/nczarrfs/nczarr"
)

// catBlock is the size of one read of cat: big enough to fetch many
// chunks at once, small enough that the first bytes come out soon.
const catBlock = 8 << 20

// progressMin is the size from which cat shows a progress bar on a
// terminal.
const progressMin = 64 << 20

func catCommand() *cli.Command {
	return &cli.Command{
		Name:      "cat",
		Usage:     "write an array's decoded bytes (its data file) without mounting",
		ArgsUsage: "SOURCE ARRAY",
		Description: `Writes every element of ARRAY in C order, little-endian (what <array>/data
holds in a mount) to stdout or to FILE, reading through the same decoder,
chunk cache and read-ahead as a mount. --npy writes a NumPy .npy file instead
(what <array>/data.npy holds). An array of variable-length objects (dtype
"|O", such as strings) is written as JSON (what <array>/data.json holds).

When stderr is a terminal and the output is not, arrays of 64 MiB or more show
a progress bar with the throughput on stderr; through pipes there is none.

Examples:
   nczarrfs cat /data/run42.zip temperature -o temperature.bin
   nczarrfs cat --npy s3://bucket/run42 g1/level > level.npy`,
		Flags: append(sourceFlags(),
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "write to `FILE` instead of stdout"},
			&cli.BoolFlag{Name: "npy", Usage: "write a NumPy .npy file (header, then the data)"},
		),
		Action: runCat,
	}
}

func runCat(c *cli.Context) error {
	if c.NArg() != 2 {
		return fmt.Errorf("cat needs SOURCE and ARRAY (got %d arguments); see nczarrfs cat --help", c.NArg())
	}
	ctx, cancel := signalContext()
	defer cancel()
	_, store, a, err := openArray(ctx, c)
	if err != nil {
		return err
	}
	defer store.Close()
	name := c.Args().Get(1)
	if a.Err != nil {
		return fmt.Errorf("%s cannot be read: %w", name, a.Err)
	}
	if a.Objects() && c.Bool("npy") {
		return fmt.Errorf("%s holds variable-length objects, which have no .npy form; without --npy cat writes them as JSON", name)
	}

	var w io.Writer = c.App.Writer
	var f *output
	if out := c.String("output"); out != "" && out != "-" {
		if f, err = createOutput(out); err != nil {
			return err
		}
		w = f.File
	}
	if a.Objects() {
		err = writeJSON(ctx, w, a)
	} else {
		err = writeArray(ctx, w, a, c.Bool("npy"), newProgress(os.Stderr, w, a.Size()))
	}
	if f != nil {
		if err != nil {
			f.Abort() // the output keeps what it held
		} else {
			err = f.Commit()
		}
	}
	if err != nil && ctx.Err() != nil {
		return fmt.Errorf("%s: interrupted", name)
	}
	return err
}

// writeArray writes a's decoded bytes, after the .npy header with npy.
// It reads through one nczarr.Reader, as an open data file of a mount
// does, so the chunks after each block are loaded ahead of it.
func writeArray(ctx context.Context, w io.Writer, a *nczarr.Array, npy bool, p *progress) error {
	if npy {
		h, err := describe.NPYHeader(a)
		if err != nil {
			return err
		}
		if _, err := w.Write(h); err != nil {
			return err
		}
	}
	defer p.done()
	_, err := io.Copy(w, &arrayReader{ctx: ctx, a: a, r: a.NewReader(), p: p})
	return err
}

// arrayReader is an io.Reader of an array's decoded bytes from the start.
// Its WriteTo, which io.Copy uses, reads catBlock bytes at a time.
type arrayReader struct {
	ctx context.Context
	a   *nczarr.Array
	r   *nczarr.Reader
	off int64
	p   *progress
}

func (r *arrayReader) Read(b []byte) (int, error) {
	if r.off >= r.a.Size() {
		return 0, io.EOF
	}
	off := r.off
	n, err := r.r.ReadAt(r.ctx, b, off)
	r.off += int64(n)
	r.p.update(r.off)
	if errors.Is(err, io.EOF) && r.off >= r.a.Size() {
		err = nil // the next Read says EOF
	}
	if err != nil {
		return n, fmt.Errorf("reading %s at byte %d: %w", r.a.Path, off+int64(n), err)
	}
	return n, nil
}

func (r *arrayReader) WriteTo(w io.Writer) (int64, error) {
	buf := make([]byte, min(catBlock, max(r.a.Size()-r.off, 1)))
	var total int64
	for {
		n, err := r.Read(buf)
		if n > 0 {
			m, werr := w.Write(buf[:n])
			total += int64(m)
			if werr != nil {
				return total, werr
			}
		}
		if err == io.EOF {
			return total, nil
		}
		if err != nil {
			return total, err
		}
	}
}

// writeJSON writes the elements of an object array as JSON, what
// <array>/data.json holds in a mount.
func writeJSON(ctx context.Context, w io.Writer, a *nczarr.Array) error {
	doc, err := a.JSON(ctx)
	if err != nil {
		return err
	}
	_, err = w.Write(doc)
	return err
}

// progress draws a progress bar with throughput on a terminal. A nil
// *progress draws nothing.
type progress struct {
	out   io.Writer
	total int64
	start time.Time
	last  time.Time
	width int // of the longest line drawn, to blank out a longer one's tail
}

// newProgress returns a progress bar drawn on stderr for copying total
// bytes to out, or nil: there is a bar only when stderr is a terminal, out
// is not one (the bar would be mixed into the bytes) and the array is
// long enough for the wait to be noticed.
func newProgress(stderr *os.File, out io.Writer, total int64) *progress {
	if total < progressMin || !isTerminal(stderr) {
		return nil
	}
	if f, ok := out.(*os.File); ok && isTerminal(f) {
		return nil
	}
	now := time.Now()
	return &progress{out: stderr, total: total, start: now}
}

// isTerminal reports whether f is a terminal (and not just any character
// device, such as /dev/null).
func isTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// update redraws the bar after done bytes, at most five times a second
// and once at the end.
func (p *progress) update(done int64) {
	if p == nil {
		return
	}
	now := time.Now()
	if now.Sub(p.last) < 200*time.Millisecond && done < p.total {
		return
	}
	p.last = now
	line := barLine(done, p.total, now.Sub(p.start))
	p.width = max(p.width, len(line))
	fmt.Fprintf(p.out, "\r%-*s", p.width, line)
}

// barLine is the progress bar's text after done of total bytes in
// elapsed time: bar, percentage, bytes and mean throughput.
func barLine(done, total int64, elapsed time.Duration) string {
	const width = 30
	filled := int(width * done / total)
	bar := strings.Repeat("=", filled) + strings.Repeat(" ", width-filled)
	rate := float64(done) / max(elapsed.Seconds(), 1e-3)
	return fmt.Sprintf("[%s] %3d%%  %s / %s  %s/s", bar, 100*done/total, human(float64(done)), human(float64(total)), human(rate))
}

func (p *progress) done() {
	if p != nil {
		fmt.Fprintln(p.out)
	}
}

// human formats a byte count with a binary unit.
func human(n float64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	i := 0
	for n >= 1024 && i < len(units)-1 {
		n /= 1024
		i++
	}
	if i == 0 {
		return fmt.Sprintf("%.0f %s", n, units[i])
	}
	return fmt.Sprintf("%.1f %s", n, units[i])
}
