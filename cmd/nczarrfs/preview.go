package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/nczarrfs/nczarrfs/describe/preview"
)

func previewCommand() *cli.Command {
	return &cli.Command{
		Name:      "preview",
		Usage:     "draw a PNG of a 2-D slice of an array without mounting",
		ArgsUsage: "SOURCE ARRAY",
		Description: `Draws the slice of the last two dimensions of ARRAY, at index 0 of the others
or at --index, coloured with viridis, as a PNG (what <array>/preview.png holds
in a mount, which is the slice at index 0). Fill values, NaN and values
outside valid_min/valid_max/valid_range are transparent; north is up when the
rows follow a latitude that increases. --size bounds the longer side (nearest
sampling). The PNG's text chunks name the array, the slice, the value range
and how it was sampled.

Examples:
   nczarrfs preview /data/run42.zip temperature -o temperature.png
   nczarrfs preview --index 3,0 --size 512 s3://bucket/run42 g1/level > level.png`,
		Flags: append(sourceFlags(),
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "write to `FILE` instead of stdout"},
			&cli.StringFlag{Name: "index", Usage: "indices of the leading dimensions, comma-separated (`I,J,...`); default 0 each"},
			&cli.IntFlag{Name: "size", Value: preview.MaxSide, Usage: "longest side in `PIXELS` (at most 8192)"},
		),
		Action: runPreview,
	}
}

func runPreview(c *cli.Context) error {
	if c.NArg() != 2 {
		return fmt.Errorf("preview needs SOURCE and ARRAY (got %d arguments); see nczarrfs preview --help", c.NArg())
	}
	opts := preview.Options{Size: c.Int("size")}
	if s := c.String("index"); s != "" {
		for _, part := range strings.Split(s, ",") {
			i, err := strconv.ParseInt(strings.TrimSpace(part), 10, 64)
			if err != nil {
				return fmt.Errorf("--index %s: %q is not an index", s, part)
			}
			opts.Index = append(opts.Index, i)
		}
	}
	out := c.String("output")
	if (out == "" || out == "-") && c.App.Writer == os.Stdout && isTerminal(os.Stdout) {
		return fmt.Errorf("not writing a PNG to a terminal: give -o FILE or redirect stdout")
	}
	ctx, cancel := signalContext()
	defer cancel()
	ds, store, a, err := openArray(ctx, c)
	if err != nil {
		return err
	}
	defer store.Close()
	pic, err := preview.Render(ctx, ds, a.Path, opts)
	if err != nil {
		return err
	}
	if out == "" || out == "-" {
		_, err = c.App.Writer.Write(pic.PNG)
		return err
	}
	return os.WriteFile(out, pic.PNG, 0o644)
}
