package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/nczarrfs/nczarrfs/describe"
	"github.com/nczarrfs/nczarrfs/describe/netcdf3"
)

func exportCommand() *cli.Command {
	return &cli.Command{
		Name:      "export",
		Usage:     "write a group as a netCDF classic file (its dataset.nc) without mounting",
		ArgsUsage: "SOURCE [GROUP] -o FILE.nc",
		Description: `Writes the group GROUP (the root when left out) of the dataset as a netCDF
classic file: the bytes <group>/dataset.nc holds in a mount, read through the
same decoder, chunk cache and read-ahead. The file is CDF-2 (64-bit offset),
or CDF-5 when the group needs it (unsigned or 64-bit integer types, or a
variable over 4 GiB); arrays netCDF classic cannot hold are named, with the
reason, in the global attribute nczarrfs_omitted. One line on stderr says
which format was chosen and what was left out.

When stderr is a terminal, files of 64 MiB or more show a progress bar with
the throughput on stderr. A failed export leaves no file.

Examples:
   nczarrfs export /data/run42.zip -o run42.nc
   nczarrfs export s3://bucket/run42 g1 -o g1.nc`,
		Flags: append(sourceFlags(),
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "write to `FILE`", Required: true},
		),
		Action: runExport,
	}
}

func runExport(c *cli.Context) error {
	if c.NArg() < 1 || c.NArg() > 2 {
		return fmt.Errorf("export needs SOURCE and at most one GROUP (got %d arguments); see nczarrfs export --help", c.NArg())
	}
	ctx, cancel := signalContext()
	defer cancel()
	ds, store, err := openDataset(ctx, c, c.Args().Get(0))
	if err != nil {
		return err
	}
	defer store.Close()
	group := arrayPath(c.Args().Get(1))
	if ds.Group(group) == nil {
		return fmt.Errorf("%q: no such group (nczarrfs ls lists them)", "/"+group)
	}
	cl, err := describe.NewClassic(ctx, ds, group)
	if err != nil {
		return err
	}
	out := c.String("output")
	f, err := createOutput(out)
	if err != nil {
		return err
	}
	err = writeClassic(ctx, f, cl.File, newProgress(os.Stderr, f.File, cl.Size()))
	if err != nil {
		f.Abort() // out keeps what it held
	} else {
		err = f.Commit()
	}
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("%s: interrupted", out)
		}
		return err
	}
	fmt.Fprintf(c.App.ErrWriter, "nczarrfs: wrote %s: group /%s as netCDF %s, %d bytes%s\n", out, group, formatName(cl), cl.Size(), omittedNote(cl))
	return nil
}

// formatName names the file's format, and why it is CDF-5.
func formatName(cl *describe.Classic) string {
	if cl.Why5 != "" {
		return fmt.Sprintf("CDF-5 (%s: %s)", cl.Format(), cl.Why5)
	}
	return fmt.Sprintf("CDF-2 (%s)", cl.Format())
}

func omittedNote(cl *describe.Classic) string {
	if len(cl.Omitted) == 0 {
		return ""
	}
	s := "; left out (nczarrfs_omitted):"
	for _, o := range cl.Omitted {
		s += " " + o + ";"
	}
	return s[:len(s)-1]
}

// writeClassic writes the whole file through one reader, catBlock bytes
// at a time, as a program reading dataset.nc from start to end would.
func writeClassic(ctx context.Context, w io.Writer, f *netcdf3.File, p *progress) error {
	defer p.done()
	r := f.NewReader()
	buf := make([]byte, min(catBlock, max(f.Size(), 1)))
	for off := int64(0); off < f.Size(); {
		n, err := r.ReadAt(ctx, buf, off)
		if err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("reading byte %d: %w", off, err)
		}
		if n == 0 {
			return fmt.Errorf("reading byte %d: %w", off, io.ErrUnexpectedEOF)
		}
		if _, err := w.Write(buf[:n]); err != nil {
			return err
		}
		off += int64(n)
		p.update(off)
	}
	return nil
}
