// Command nczarrfs mounts an NCZarr or Zarr v2 dataset, stored in an S3
// bucket, a zip file or a directory tree, as a read-only FUSE filesystem.
//
//	nczarrfs mount [options] SOURCE MOUNTPOINT
//	nczarrfs SOURCE MOUNTPOINT -o opt1,opt2=value   (the form mount(8) uses)
//	nczarrfs unmount MOUNTPOINT
//
// The mount runs in the foreground (or, with --daemon, in the background
// once it is up) until the mountpoint is unmounted or the process receives
// SIGINT, SIGTERM or SIGHUP. See README.md, docs/install.md and docs/tree.md.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"

	// Every codec of the engine registers itself.
	_ "github.com/nczarrfs/nczarrfs/nczarr/codec/all"
)

// commands lists every command, in the order help shows them.
func commands() []*cli.Command {
	return []*cli.Command{
		mountCommand(),
		unmountCommand(),
		lsCommand(),
		infoCommand(),
		headerCommand(),
		catCommand(),
		previewCommand(),
		csiCommand(),
		exportCommand(),
		completionCommand(),
	}
}

// defaultPath is the search path when PATH is unset, as mount(8) runs its
// helpers: fusermount3 must still be found.
const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

func main() {
	if os.Getenv("PATH") == "" {
		os.Setenv("PATH", defaultPath)
	}
	os.Exit(run(os.Args, os.Stdout, os.Stderr))
}

// errExit ends the program with status 1 and nothing more printed: the
// message was printed already (by the background daemon, for one).
var errExit = errors.New("exit status 1")

// run runs the command line args and returns the exit status. Every error
// is one line "nczarrfs: message" on stderr and exit status 1.
func run(args []string, stdout, stderr io.Writer) int {
	app := newApp(stdout, stderr)
	args, err := normalizeArgs(app, args)
	if err == nil {
		app.Metadata = map[string]any{"args": args}
		err = app.Run(args)
	}
	switch {
	case err == nil:
		return 0
	case errors.Is(err, errExit):
		return 1
	case errors.Is(err, errFake):
		return 0
	}
	fmt.Fprintf(stderr, "nczarrfs: %v\n", err)
	return 1
}

func newApp(stdout, stderr io.Writer) *cli.App {
	app := &cli.App{
		Name:  "nczarrfs",
		Usage: "mount an NCZarr or Zarr (v2, v3) dataset as a read-only filesystem",
		UsageText: `nczarrfs mount [options] SOURCE MOUNTPOINT
nczarrfs SOURCE MOUNTPOINT [-o opt1,opt2=value]   (mount helper form, as mount(8) runs it)
nczarrfs unmount MOUNTPOINT
nczarrfs ls|info|header|cat [options] SOURCE ...  (read without mounting)
nczarrfs csi --endpoint unix:///PATH/csi.sock --node-id NAME  (Kubernetes CSI node plugin)
nczarrfs help [COMMAND]`,
		Description: `Examples:
   nczarrfs mount /data/run42.zip /mnt/run42 &
   nczarrfs mount --daemon s3://bucket/run42 /mnt/run42
   nczarrfs unmount /mnt/run42
   nczarrfs header /data/run42.zip
   mount -t fuse.nczarrfs /data/run42.zip /mnt/run42 -o ro,cache_size=1GiB`,
		Version:              versionString(),
		Commands:             commands(),
		EnableBashCompletion: true,
		Writer:               stdout,
		ErrWriter:            stderr,
		// Errors are printed once, by run, in one format.
		ExitErrHandler: func(*cli.Context, error) {},
		OnUsageError: func(_ *cli.Context, err error, _ bool) error {
			return fmt.Errorf("%w; see nczarrfs --help", err)
		},
	}
	for _, c := range app.Commands {
		if c.OnUsageError == nil {
			name := c.Name
			c.OnUsageError = func(_ *cli.Context, err error, _ bool) error {
				return fmt.Errorf("%w; see nczarrfs %s --help", err, name)
			}
		}
	}
	return app
}

// normalizeArgs turns the command line into the form urfave/cli parses:
// the mount helper form becomes a "mount --daemon" command, and a
// command's flags given after its arguments are moved before them (the
// flag package stops at the first argument).
func normalizeArgs(app *cli.App, args []string) ([]string, error) {
	if len(args) == 0 {
		return []string{"nczarrfs"}, nil
	}
	name := filepath.Base(args[0])
	if strings.HasPrefix(name, "mount.") {
		// Run as /sbin/mount.fuse.nczarrfs by mount(8).
		return helperArgs(args[0], args[1:])
	}
	if len(args) < 2 || strings.HasPrefix(args[1], "-") {
		return args, nil
	}
	if args[len(args)-1] == "--generate-bash-completion" {
		return args, nil // completion wants the words as typed
	}
	cmd := app.Command(args[1])
	if cmd == nil {
		if args[1] == "help" {
			return args, nil
		}
		if looksLikeHelper(args[1:]) {
			return helperArgs(args[0], args[1:])
		}
		return nil, fmt.Errorf("unknown command %q; see nczarrfs --help", args[1])
	}
	out := append([]string{args[0], args[1]}, reorderFlags(args[2:], cmd.Flags)...)
	return out, nil
}

// reorderFlags moves the flags in args (with their values) before the
// positional arguments, keeping the order within each. Everything after
// "--" is positional. A flag that is not in flags is kept as a flag
// without a value, for the parser to reject.
func reorderFlags(args []string, flags []cli.Flag) []string {
	takesValue := map[string]bool{}
	for _, f := range flags {
		v := true
		if tv, ok := f.(interface{ TakesValue() bool }); ok {
			v = tv.TakesValue()
		}
		for _, n := range f.Names() {
			takesValue[n] = v
		}
	}
	var flagArgs, positional []string
	dashes := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			positional = append(positional, args[i+1:]...)
			dashes = true
			break
		}
		if len(a) < 2 || a[0] != '-' {
			positional = append(positional, a)
			continue
		}
		flagArgs = append(flagArgs, a)
		name := strings.TrimLeft(a, "-")
		if strings.Contains(name, "=") {
			continue
		}
		if takesValue[name] && i+1 < len(args) {
			flagArgs = append(flagArgs, args[i+1])
			i++
		}
	}
	for _, p := range positional {
		// Keep a positional that looks like a flag positional.
		dashes = dashes || strings.HasPrefix(p, "-")
	}
	if dashes {
		flagArgs = append(flagArgs, "--")
	}
	return append(flagArgs, positional...)
}
