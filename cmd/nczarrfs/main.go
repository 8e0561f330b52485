// Command nczarrfs mounts an NCZarr or Zarr v2 dataset, stored in an S3
// bucket, a zip file or a directory tree, as a read-only FUSE filesystem.
//
//	nczarrfs mount [options] SOURCE MOUNTPOINT
//
// It runs in the foreground until the mountpoint is unmounted
// (fusermount3 -u MOUNTPOINT) or it receives SIGINT or SIGTERM, which
// unmount cleanly. See README.md and docs/ for the tree it shows.
package main

import (
	"fmt"
	"os"

	"github.com/urfave/cli/v2"

	// Every codec of the engine registers itself.
	_ "github.com/nczarrfs/nczarrfs/nczarr/codec/all"
)

func main() {
	app := &cli.App{
		Name:                 "nczarrfs",
		Usage:                "mount an NCZarr or Zarr v2 dataset as a read-only filesystem",
		HideHelpCommand:      true,
		EnableBashCompletion: false,
		Commands:             []*cli.Command{mountCommand()},
	}
	if err := app.Run(os.Args); err != nil {
		fmt.Fprintf(os.Stderr, "nczarrfs: %v\n", err)
		os.Exit(1)
	}
}
