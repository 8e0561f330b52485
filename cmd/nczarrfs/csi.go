package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/nczarrfs/nczarrfs/csi"
	"github.com/nczarrfs/nczarrfs/internal/metrics"
	"github.com/nczarrfs/nczarrfs/zmap/source"
)

// adoptTimeout bounds the mount again of each volume a previous plugin
// published whose daemon is gone.
const adoptTimeout = 2 * time.Minute

func csiCommand() *cli.Command {
	return &cli.Command{
		Name:  "csi",
		Usage: "serve the Kubernetes CSI node plugin " + csi.DriverName,
		Description: `Serves the CSI Identity and Node services on a Unix socket for kubelet (through
node-driver-registrar). NodePublishVolume mounts a volume's dataset read-only at
its target path with a mount daemon of its own ("nczarrfs mount --daemon"),
which outlives the plugin; a restarted plugin adopts the mounts it finds in
--state-dir and /proc/self/mountinfo. Volume attributes: ` + strings.Join(csi.Attributes(), ", ") + `.
Credentials come from the volume's publish secrets (AWS_*, AZURE_STORAGE_*) and
reach the daemon through its environment. Inline (ephemeral) volumes, which
every pod author can write, read remote stores only, with their secrets or
anonymously, never the plugin's credentials, and without cacheDir or the
options of the node; --trust-inline-volumes lifts that. See docs/cluster.md.

SIGINT or SIGTERM stop the plugin; its volumes stay mounted.

Examples:
   nczarrfs csi --endpoint unix:///csi/csi.sock --node-id "$KUBE_NODE_NAME"
   nczarrfs csi --endpoint unix:///csi/csi.sock --node-id node1 --metrics-addr 0.0.0.0:9810`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "endpoint", Usage: "the CSI socket, unix:///PATH/csi.sock", EnvVars: []string{"CSI_ENDPOINT"}, Required: true},
			&cli.StringFlag{Name: "node-id", Usage: "this node's id, the Kubernetes node name", EnvVars: []string{"KUBE_NODE_NAME"}, Required: true},
			&cli.StringFlag{Name: "state-dir", Value: csi.DefaultStateDir, Usage: "the folder of the plugin's records of published volumes (a folder of the node, kept across restarts)"},
			&cli.StringFlag{Name: "metrics-addr", Usage: "serve every volume's metrics, labelled by volume_id, on http://HOST:PORT/metrics, and /healthz for the liveness probe"},
			&cli.StringFlag{Name: "log-format", Value: "text", Usage: "log format: text or json"},
			&cli.BoolFlag{Name: "debug", Usage: "log debug messages and every call"},
			&cli.BoolFlag{Name: "trust-inline-volumes", Usage: "let inline (ephemeral) volumes do what PersistentVolumes do: node paths, cacheDir, every mount option and secret, the plugin's own credentials; only for clusters that trust every pod author"},
			&cli.StringFlag{Name: "cache-dir", Usage: "the node-wide cache: --cache-dir of every volume that names none of its own (a folder of the node; shared by the volumes)"},
			&cli.StringFlag{Name: "cache-dir-size", Usage: "--cache-dir-size of the node-wide cache", DefaultText: "10GiB"},
		},
		Action: runCSI,
	}
}

func runCSI(c *cli.Context) error {
	if c.NArg() != 0 {
		return fmt.Errorf("csi takes no arguments (got %q); see nczarrfs csi --help", c.Args().Slice())
	}
	format := c.String("log-format")
	if format != "text" && format != "json" {
		return fmt.Errorf("--log-format: %q is not text or json", format)
	}
	logs, err := newLogging("", format, c.Bool("debug"))
	if err != nil {
		return err
	}
	defer logs.close()
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding the nczarrfs binary to run mounts with: %w", err)
	}
	var metricsLn net.Listener
	if addr := c.String("metrics-addr"); addr != "" {
		if metricsLn, err = metrics.Listen(addr); err != nil {
			return fmt.Errorf("--metrics-addr: %w", err)
		}
		defer metricsLn.Close()
	}
	var cacheFlags []string
	if dir := c.String("cache-dir"); dir != "" {
		cacheFlags = append(cacheFlags, "--cache-dir="+dir)
		if size := c.String("cache-dir-size"); size != "" {
			cacheFlags = append(cacheFlags, "--cache-dir-size="+size)
		}
		if err := checkMountArgs(append(cacheFlags, "--", "s3://bucket/key", "/")); err != nil {
			return err
		}
	} else if c.IsSet("cache-dir-size") {
		return errors.New("--cache-dir-size needs --cache-dir")
	}
	driver, err := csi.New(csi.Options{
		NodeID:       c.String("node-id"),
		Version:      versionString(),
		StateDir:     c.String("state-dir"),
		Mounter:      csi.DaemonMounter{Exe: exe},
		OptionFlags:  mountOptionFlags,
		Check:        checkMountArgs,
		Logger:       logs.logger,
		TrustInline:  c.Bool("trust-inline-volumes"),
		CacheDir:     c.String("cache-dir"),
		CacheDirSize: c.String("cache-dir-size"),
	})
	if err != nil {
		return err
	}
	// Listened on first: a bad endpoint fails at once, and calls that
	// come while the previous plugin's volumes are adopted wait for it.
	ln, err := csi.Listen(c.String("endpoint"))
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := driver.Adopt(ctx, adoptTimeout); err != nil {
		ln.Close()
		return err
	}
	if metricsLn != nil {
		go metrics.Serve(ctx, metricsLn, driver.MetricsHandler(), logs.logger)
		logs.logger.Info("serving metrics", "url", metrics.URL(metricsLn))
	}
	return driver.Serve(ctx, ln)
}

// checkMountArgs checks a volume's mount command line (flags, "--",
// SOURCE, MOUNTPOINT) as "nczarrfs mount" would, without mounting: its
// flags, their values and the form of SOURCE.
func checkMountArgs(args []string) error {
	cmd := mountCommand()
	cmd.OnUsageError = func(_ *cli.Context, err error, _ bool) error { return err }
	cmd.Action = func(c *cli.Context) error {
		cfg, err := parseMountFlags(c)
		if err != nil {
			return err
		}
		if _, err := source.Parse(cfg.source); err != nil {
			return err
		}
		_, err = storeOptions(c, slog.New(slog.DiscardHandler), cfg.timeout)
		return err
	}
	app := &cli.App{
		Name:           "nczarrfs",
		Commands:       []*cli.Command{cmd},
		Writer:         io.Discard,
		ErrWriter:      io.Discard,
		ExitErrHandler: func(*cli.Context, error) {},
	}
	// Environment variables the mount's flags read (AWS_ENDPOINT_URL) are
	// the daemon's business, not the check's.
	err := app.Run(append([]string{"nczarrfs", "mount"}, args...))
	if err != nil && strings.HasPrefix(err.Error(), "flag provided but not defined: ") {
		return errors.New("unknown option " + strings.TrimPrefix(err.Error(), "flag provided but not defined: "))
	}
	return err
}
