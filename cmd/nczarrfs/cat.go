package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/urfave/cli/v2"

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
holds in a mount) to stdout or to FILE, reading through the same decoder and
chunk cache as a mount. An array of variable-length objects (dtype "|O",
such as strings) is written as JSON instead (what <array>/data.json holds). --npy writes a NumPy .npy file instead (what
<array>/data.npy holds). On a terminal, long arrays show a progress bar with
the throughput on stderr; there is none when stderr is not a terminal.

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
	ds, store, err := openDataset(ctx, c, c.Args().Get(0))
	if err != nil {
		return err
	}
	defer store.Close()
	name := c.Args().Get(1)
	a := ds.Array(arrayPath(name))
	if a == nil {
		return fmt.Errorf("%s: no such array (nczarrfs ls lists them)", name)
	}
	if a.Err != nil {
		return fmt.Errorf("%s cannot be read: %w", name, a.Err)
	}
	if a.Objects() && c.Bool("npy") {
		return fmt.Errorf("%s holds variable-length objects, which have no .npy form; without --npy cat writes them as JSON", name)
	}

	var w io.Writer = c.App.Writer
	var f *os.File
	if out := c.String("output"); out != "" && out != "-" {
		if f, err = os.Create(out); err != nil {
			return err
		}
		w = f
	}
	if a.Objects() {
		err = writeJSON(ctx, w, a)
	} else {
		err = writeArray(ctx, w, a, c.Bool("npy"), newProgress(os.Stderr, a.Size()))
	}
	if f != nil {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(f.Name()) // no partial file that looks complete
		}
	}
	if err != nil && ctx.Err() != nil {
		return fmt.Errorf("%s: interrupted", name)
	}
	return err
}

// writeArray writes a's decoded bytes, after the .npy header with npy.
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
	buf := make([]byte, min(int64(catBlock), max(a.Size(), 1)))
	defer p.done()
	for off := int64(0); off < a.Size(); {
		n, err := a.ReadAt(ctx, buf, off)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return werr
			}
			off += int64(n)
			p.update(off)
		}
		if errors.Is(err, io.EOF) && off >= a.Size() {
			break
		}
		if err != nil {
			return fmt.Errorf("reading %s at byte %d: %w", a.Path, off, err)
		}
	}
	return nil
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
	out   *os.File
	total int64
	start time.Time
	last  time.Time
}

// newProgress returns a progress bar on out when out is a terminal and
// the array is long, else nil.
func newProgress(out *os.File, total int64) *progress {
	if total < progressMin || !isTerminal(out) {
		return nil
	}
	now := time.Now()
	return &progress{out: out, total: total, start: now}
}

func isTerminal(f *os.File) bool {
	info, err := f.Stat()
	return err == nil && info.Mode()&os.ModeCharDevice != 0 && info.Mode()&os.ModeDevice != 0
}

func (p *progress) update(done int64) {
	if p == nil {
		return
	}
	now := time.Now()
	if now.Sub(p.last) < 200*time.Millisecond && done < p.total {
		return
	}
	p.last = now
	const width = 30
	filled := int(width * done / p.total)
	bar := make([]byte, width)
	for i := range bar {
		bar[i] = ' '
		if i < filled {
			bar[i] = '='
		}
	}
	rate := float64(done) / max(now.Sub(p.start).Seconds(), 1e-3)
	fmt.Fprintf(p.out, "\r[%s] %3d%%  %s / %s  %s/s ", bar, 100*done/p.total, human(float64(done)), human(float64(p.total)), human(rate))
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
