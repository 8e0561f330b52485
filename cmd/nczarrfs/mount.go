package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/urfave/cli/v2"

	"github.com/nczarrfs/nczarrfs/cache"
	"github.com/nczarrfs/nczarrfs/fusefs"
	"github.com/nczarrfs/nczarrfs/internal/stats"
	"github.com/nczarrfs/nczarrfs/nczarr"
	"github.com/nczarrfs/nczarrfs/zmap/source"
)

func mountCommand() *cli.Command {
	return &cli.Command{
		Name:      "mount",
		Usage:     "mount SOURCE read-only at MOUNTPOINT, in the foreground",
		ArgsUsage: "SOURCE MOUNTPOINT",
		Description: `SOURCE is a directory tree or zip file (a plain path), or an NCZarr URL:
   file:///data/x.zip#mode=nczarr,zip   file:///data/x.file#mode=zarr,file
   s3://bucket/key   https://host[:port]/bucket/key#mode=nczarr,s3

Unmount with "fusermount3 -u MOUNTPOINT", or stop the process with
SIGINT or SIGTERM: either unmounts cleanly and exits 0.`,
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "cache-size", Value: "256MiB", Usage: "memory for decoded chunks (bytes, or with a KiB/MiB/GiB suffix)"},
			&cli.BoolFlag{Name: "debug", Usage: "log debug messages and every FUSE request"},
			&cli.BoolFlag{Name: "allow-other", Usage: "let other users read the mount (needs user_allow_other in /etc/fuse.conf)"},
			&cli.StringFlag{Name: "endpoint-url", Usage: "S3 endpoint, e.g. http://127.0.0.1:9000", EnvVars: []string{"AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"}},
			&cli.StringFlag{Name: "region", Usage: "S3 region (default from the AWS configuration)"},
			&cli.StringFlag{Name: "profile", Usage: "AWS shared-config profile"},
			&cli.BoolFlag{Name: "no-sign-request", Usage: "read a public bucket without credentials"},
			&cli.DurationFlag{Name: "s3-timeout", Usage: "bound on each S3 request, retries included (default 30s, or NCZARRFS_S3_TIMEOUT)"},
		}, diskCacheFlags()...),
		Action: runMount,
	}
}

func runMount(c *cli.Context) error {
	if c.NArg() != 2 {
		return fmt.Errorf("mount needs SOURCE and MOUNTPOINT (got %d arguments); see nczarrfs mount --help", c.NArg())
	}
	src, mountpoint := c.Args().Get(0), c.Args().Get(1)
	level := slog.LevelInfo
	if c.Bool("debug") {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))

	cacheSize, err := parseSize(c.String("cache-size"))
	if err != nil {
		return fmt.Errorf("--cache-size: %w", err)
	}
	if err := checkMountpoint(mountpoint); err != nil {
		return err
	}
	if err := checkFUSE(); err != nil {
		return err
	}

	// SIGINT/SIGTERM cancel whatever is under way; once mounted (even
	// while the mount handshake is still in progress) they unmount.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var server atomic.Pointer[fuse.Server]
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)
	go func() {
		for sig := range sigs {
			log.Info("stopping", "signal", sig.String(), "mountpoint", mountpoint)
			cancel()
			if s := server.Load(); s != nil {
				unmount(s, log)
			}
		}
	}()

	parsed, err := source.Parse(src)
	if err != nil {
		return err
	}
	opts, err := storeOptions(c, log, c.Duration("s3-timeout"))
	if err != nil {
		return err
	}
	store, err := source.Open(ctx, parsed, opts)
	if err != nil {
		return err
	}
	defer store.Close()

	// .nczarrfs/stats counts the store's requests and the cache's work.
	counted, chunks := stats.CountStore(store), cache.New(cacheSize)
	ds, err := nczarr.Open(ctx, counted, nczarr.Options{Cache: chunks, Logger: log})
	if err != nil {
		if errors.Is(err, nczarr.ErrNoDataset) {
			return fmt.Errorf("%s holds no dataset: %w", src, err)
		}
		return fmt.Errorf("reading %s: %w", src, err)
	}
	log.Debug("opened dataset", "source", src, "generation", ds.Generation,
		"groups", len(ds.Groups()), "arrays", len(ds.Arrays()))

	srv, err := fusefs.Mount(mountpoint, ds, counted, fusefs.Options{
		Logger:     log,
		FsName:     source.Redact(src),
		Name:       datasetName(src),
		Stats:      &stats.Mount{Source: source.Redact(src), Store: counted, Cache: chunks},
		Debug:      c.Bool("debug"),
		AllowOther: c.Bool("allow-other"),
	})
	if err != nil {
		return fmt.Errorf("mounting at %s: %w", mountpoint, err)
	}
	server.Store(srv)
	if ctx.Err() != nil {
		// A signal came while the mount was being set up.
		unmount(srv, log)
	}
	// Wait returns once the kernel has let go, whether we or
	// fusermount3 -u unmounted.
	srv.Wait()
	return nil
}

func unmount(s *fuse.Server, log *slog.Logger) {
	if err := s.Unmount(); err != nil {
		log.Error("unmount failed; is the mountpoint busy?", "err", err)
	}
}

// checkMountpoint says clearly what is wrong with a mountpoint.
func checkMountpoint(path string) error {
	info, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("mountpoint %s does not exist (create it with mkdir)", path)
	case err != nil:
		return fmt.Errorf("mountpoint %s: %w", path, err)
	case !info.IsDir():
		return fmt.Errorf("mountpoint %s is not a directory", path)
	}
	return nil
}

// checkFUSE fails early, with a hint, where FUSE cannot work.
func checkFUSE() error {
	if _, err := os.Stat("/dev/fuse"); err != nil {
		return fmt.Errorf("FUSE is not available (/dev/fuse: %v); install fuse3 and load the fuse module", err)
	}
	for _, name := range []string{"fusermount3", "fusermount"} {
		if _, err := exec.LookPath(name); err == nil {
			return nil
		}
	}
	return errors.New("fusermount3 not found in PATH; install fuse3 (apt-get install fuse3)")
}

// parseSize reads a byte count such as 268435456, 256MiB, 256M or 1GiB.
func parseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		m      int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40}, {"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}, {"T", 1 << 40}, {"B", 1}} {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.m
			break
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n < 0 || n > (1<<62)/mult {
		return 0, fmt.Errorf("%q is not a size (try 256MiB)", s)
	}
	return n * mult, nil
}
