package main

import (
	"fmt"
	"net/url"
	"path"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/nczarrfs/nczarrfs/describe"
)

func headerCommand() *cli.Command {
	return &cli.Command{
		Name:      "header",
		Usage:     "print the dataset's header as ncdump -h does, without mounting",
		ArgsUsage: "SOURCE",
		Description: `Prints the CDL header of the dataset (what header.cdl holds in a mount):
groups, dimensions, variables with their netCDF types, and typed attributes,
as netcdf-c's "ncdump -h" prints it. For pure Zarr, dimensions come from
_ARRAY_DIMENSIONS or are anonymous (_zdim_<size>), as netcdf-c 4.9.0 names them.

Example:
   nczarrfs header /data/run42.zip`,
		Flags:  sourceFlags(),
		Action: runHeader,
	}
}

func runHeader(c *cli.Context) error {
	if c.NArg() != 1 {
		return fmt.Errorf("header needs SOURCE (got %d arguments); see nczarrfs header --help", c.NArg())
	}
	ctx, cancel := signalContext()
	defer cancel()
	src := c.Args().Get(0)
	ds, store, err := openDataset(ctx, c, src)
	if err != nil {
		return err
	}
	defer store.Close()
	out, err := describe.CDL(ctx, ds, datasetName(src))
	if err != nil {
		return err
	}
	_, err = c.App.Writer.Write(out)
	return err
}

// datasetName is the name ncdump gives a dataset: the last element of
// its path without the extension ("run42" for file:///d/run42.zip#mode=...),
// the bucket for a whole bucket.
func datasetName(src string) string {
	p := src
	if strings.Contains(src, "://") {
		if u, err := url.Parse(src); err == nil {
			p = u.Path
			if strings.Trim(p, "/") == "" {
				p = u.Hostname() // s3://bucket: the bucket
			}
		}
	}
	name := path.Base(strings.TrimRight(p, "/"))
	if ext := path.Ext(name); ext != "" && ext != name {
		name = strings.TrimSuffix(name, ext)
	}
	if name == "" || name == "." || name == "/" {
		return "dataset"
	}
	return name
}
