package main

import (
	"errors"
	"fmt"
	"syscall"

	"github.com/urfave/cli/v2"

	"github.com/nczarrfs/nczarrfs/internal/mountinfo"
)

func unmountCommand() *cli.Command {
	return &cli.Command{
		Name:      "unmount",
		Aliases:   []string{"umount"},
		Usage:     "unmount an nczarrfs mount; lazily when files in it are open",
		ArgsUsage: "MOUNTPOINT",
		Description: `Unmounts the nczarrfs mount at MOUNTPOINT; its daemon then exits. When files in
it are open the mount is detached lazily instead: it disappears from MOUNTPOINT
at once, new opens fail, and the daemon exits when the last open file closes.

Examples:
   nczarrfs unmount /mnt/run42`,
		Action: runUnmount,
	}
}

func runUnmount(c *cli.Context) error {
	if c.NArg() != 1 {
		return fmt.Errorf("unmount needs MOUNTPOINT (got %d arguments); see nczarrfs unmount --help", c.NArg())
	}
	path := c.Args().First()
	abs, err := absMountpoint(path)
	if err != nil {
		return err
	}
	m, ok := mountinfo.At(abs)
	if !ok {
		return fmt.Errorf("%s is not mounted", path)
	}
	if m.FSType != "fuse.nczarrfs" {
		return fmt.Errorf("%s is a %s mount, not nczarrfs", path, m.FSType)
	}
	err = unmount(abs)
	if errors.Is(err, syscall.EBUSY) {
		if err := detach(abs); err != nil {
			return err
		}
		fmt.Fprintf(c.App.ErrWriter, "nczarrfs: %s is busy; detached it lazily: new opens fail, and nczarrfs exits when the last open file is closed\n", path)
		return nil
	}
	return err
}
