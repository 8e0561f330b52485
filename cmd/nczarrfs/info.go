package main

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/nczarrfs/nczarrfs/describe"
)

func infoCommand() *cli.Command {
	return &cli.Command{
		Name:      "info",
		Usage:     "print an array's info.json, or the whole dataset's, without mounting",
		ArgsUsage: "SOURCE [ARRAY]",
		Description: `Prints JSON for jq: for ARRAY what <array>/info.json holds in a mount (name,
path, dimensions, shape, chunks, the dtype of data and the stored dtype, fill
value, typed attributes, codecs with their HDF5 filter ids, the metadata
representation, and why the array cannot be read, if it cannot); without ARRAY
every group and array of the dataset.

Examples:
   nczarrfs info /data/run42.zip temperature | jq .shape
   nczarrfs info s3://bucket/run42 | jq -r '.arrays[].path'`,
		Flags:  sourceFlags(),
		Action: runInfo,
	}
}

func runInfo(c *cli.Context) error {
	if c.NArg() < 1 || c.NArg() > 2 {
		return fmt.Errorf("info needs SOURCE and at most one ARRAY (got %d arguments); see nczarrfs info --help", c.NArg())
	}
	ctx, cancel := signalContext()
	defer cancel()
	ds, store, err := openDataset(ctx, c, c.Args().Get(0))
	if err != nil {
		return err
	}
	defer store.Close()
	icechunkNote(ctx, c.App.ErrWriter, store, true)
	var out []byte
	if c.NArg() == 1 {
		out, err = describe.Dataset(ctx, ds)
	} else {
		p := arrayPath(c.Args().Get(1))
		if ds.Array(p) == nil {
			return fmt.Errorf("%s: no such array (nczarrfs ls lists them)", c.Args().Get(1))
		}
		var c *describe.Classic
		if ds.Group(describe.ParentGroup(p)) != nil {
			c, _ = describe.NewClassic(ctx, ds, describe.ParentGroup(p))
		}
		out, err = describe.InfoIn(ctx, ds, p, c)
	}
	if err != nil {
		return err
	}
	_, err = c.App.Writer.Write(out)
	return err
}
