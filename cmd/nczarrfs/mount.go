package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"os/user"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/nczarrfs/nczarrfs/cache"
	"github.com/nczarrfs/nczarrfs/fusefs"
	"github.com/nczarrfs/nczarrfs/internal/metrics"
	"github.com/nczarrfs/nczarrfs/internal/stats"
	"github.com/nczarrfs/nczarrfs/nczarr"
	"github.com/nczarrfs/nczarrfs/zmap"
	"github.com/nczarrfs/nczarrfs/zmap/diskcache"
	"github.com/nczarrfs/nczarrfs/zmap/listcache"
	"github.com/nczarrfs/nczarrfs/zmap/source"
)

// stopGrace bounds how long a stopping daemon waits for the files still
// open in a lazily detached mount before it exits anyway.
const stopGrace = 5 * time.Second

func mountCommand() *cli.Command {
	return &cli.Command{
		Name:      "mount",
		Usage:     "mount SOURCE read-only at MOUNTPOINT",
		ArgsUsage: "SOURCE MOUNTPOINT",
		Description: `Mounts SOURCE read-only at MOUNTPOINT and serves it until the mountpoint is
unmounted ("nczarrfs unmount MOUNTPOINT", "fusermount3 -u MOUNTPOINT" or
"umount MOUNTPOINT") or the process gets SIGINT, SIGTERM or SIGHUP (its
terminal closed). A signal unmounts; when files are open it detaches the mount
lazily, gives the open files 5s, and exits 0. A second signal exits at once.
Flags may come before or after the arguments.

SOURCE is a directory tree or zip file (a plain path), or an NCZarr URL:
   file:///data/x.zip#mode=nczarr,zip   file:///data/x.file#mode=zarr,file
   s3://bucket/key   https://host[:port]/bucket/key#mode=nczarr,s3

Examples:
   nczarrfs mount /data/run42.zip /mnt/run42
   nczarrfs mount --daemon --log-file /var/log/run42.log s3://bucket/run42 /mnt/run42
   nczarrfs mount 'http://127.0.0.1:9000/bucket/run42#mode=nczarr,s3' /mnt/run42 --no-sign-request
   nczarrfs mount /data/run42.zip /mnt/run42 --allow-other --uid 1000 --umask 027`,
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "cache-size", Value: "256MiB", Usage: "memory for decoded chunks (bytes, or with a KiB/MiB/GiB suffix)"},
			&cli.BoolFlag{Name: "daemon", Usage: "run in the background once the mount is up; the exit status says whether it came up"},
			&cli.BoolFlag{Name: "allow-other", Usage: "let other users read the mount (needs user_allow_other in /etc/fuse.conf unless root)"},
			&cli.BoolFlag{Name: "allow-non-empty", Usage: "mount over a directory that is not empty or is a mount already"},
			&cli.StringFlag{Name: "uid", Usage: "owner of every file (user name or number; default: the user running nczarrfs)"},
			&cli.StringFlag{Name: "gid", Usage: "group of every file (group name or number; default: the group running nczarrfs)"},
			&cli.StringFlag{Name: "umask", Usage: "octal mode bits to clear from files (0444) and directories (0555), e.g. 027"},
			&cli.StringFlag{Name: "log-file", Usage: "append the log to this file instead of stderr"},
			&cli.StringFlag{Name: "log-format", Value: "text", Usage: "log format: text or json"},
			&cli.BoolFlag{Name: "debug", Usage: "log debug messages and every FUSE request"},
			&cli.BoolFlag{Name: "page-cache", Usage: "serve data and data.npy through the kernel's page cache: faster for programs that read a few KiB at a time or read the same bytes again, slower for large reads"},
			&cli.StringFlag{Name: "metrics-addr", Usage: "serve Prometheus metrics on http://HOST:PORT/metrics, and /healthz and /readyz for probes (a port alone, :9100, listens on 127.0.0.1; unix:PATH on a Unix socket)"},
			metadataTTLFlag(),
			boundFlags()[0], boundFlags()[1],
			// Set by the mount helper form: no "mounted" line for mount(8).
			&cli.BoolFlag{Name: "mount-helper", Hidden: true},
		}, append(remoteFlags(), diskCacheFlags()...)...),
		Action: runMount,
	}
}

// mountConfig is the checked mount command line.
type mountConfig struct {
	source, mountpoint string
	cacheSize          int64
	uid, gid           *uint32
	umask              uint32
	timeout            time.Duration
	metadataTTL        time.Duration
	logFile, logFormat string
	debug              bool
	metricsAddr        string
	bounds             bounds
}

func parseMountFlags(c *cli.Context) (*mountConfig, error) {
	if c.NArg() != 2 {
		return nil, fmt.Errorf("mount needs SOURCE and MOUNTPOINT (got %d arguments); see nczarrfs mount --help", c.NArg())
	}
	cfg := &mountConfig{
		source:      c.Args().Get(0),
		mountpoint:  c.Args().Get(1),
		logFile:     c.String("log-file"),
		logFormat:   c.String("log-format"),
		debug:       c.Bool("debug"),
		metricsAddr: c.String("metrics-addr"),
	}
	var err error
	if cfg.cacheSize, err = parseSize(c.String("cache-size")); err != nil {
		return nil, fmt.Errorf("--cache-size: %w", err)
	}
	if cfg.cacheSize == 0 {
		return nil, errors.New("--cache-size: must be more than 0 (try 256MiB)")
	}
	if cfg.timeout, err = parseTimeout(c); err != nil {
		return nil, err
	}
	if cfg.metadataTTL, err = parseTTL(c.String("metadata-ttl")); err != nil {
		return nil, fmt.Errorf("--metadata-ttl: %w", err)
	}
	if cfg.bounds, err = parseBounds(c); err != nil {
		return nil, err
	}
	if c.IsSet("uid") {
		if cfg.uid, err = parseID(c.String("uid"), lookupUser); err != nil {
			return nil, fmt.Errorf("--uid: %w", err)
		}
	}
	if c.IsSet("gid") {
		if cfg.gid, err = parseID(c.String("gid"), lookupGroup); err != nil {
			return nil, fmt.Errorf("--gid: %w", err)
		}
	}
	if c.IsSet("umask") {
		if cfg.umask, err = parseUmask(c.String("umask")); err != nil {
			return nil, fmt.Errorf("--umask: %w", err)
		}
	}
	if cfg.logFormat != "text" && cfg.logFormat != "json" {
		return nil, fmt.Errorf("--log-format: %q is not text or json", cfg.logFormat)
	}
	return cfg, nil
}

func runMount(c *cli.Context) error {
	cfg, err := parseMountFlags(c)
	if err != nil {
		return err
	}
	ready := readyNotifier()
	if c.Bool("daemon") && ready == nil {
		args, err := daemonArgs(c.App.Metadata)
		if err != nil {
			return err
		}
		return startDaemon(os.Args[0], args)
	}
	logs, err := newLogging(cfg.logFile, cfg.logFormat, cfg.debug)
	if err != nil {
		return err
	}
	defer logs.close()
	log := logs.logger
	if err := checkMountpoint(cfg.mountpoint, c.Bool("allow-non-empty")); err != nil {
		return err
	}
	fusermount, err := checkFUSE()
	if err != nil {
		return err
	}
	mountpoint, err := absMountpoint(cfg.mountpoint)
	if err != nil {
		return err
	}
	var metricsLn net.Listener
	if cfg.metricsAddr != "" {
		// Listened on before anything is read, so that a bad or busy
		// address fails the mount at once.
		if metricsLn, err = metrics.Listen(cfg.metricsAddr); err != nil {
			return fmt.Errorf("--metrics-addr: %w", err)
		}
		defer metricsLn.Close()
	}

	// The first SIGINT, SIGTERM or SIGHUP cancels what is under way and, once
	// mounted, stops the mount (see stop); a second one exits at once.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mounted atomic.Bool
	stopping := make(chan struct{})
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	go func() {
		sig := <-sigs
		log.Info("stopping", "signal", sig.String(), "mountpoint", mountpoint)
		cancel()
		close(stopping)
		sig = <-sigs
		log.Warn("second signal: exiting now", "signal", sig.String())
		if mounted.Load() {
			if err := detach(mountpoint); err != nil && isMounted(mountpoint) {
				log.Error("lazy unmount failed", "mountpoint", mountpoint, "err", err)
				os.Exit(1)
			}
		}
		os.Exit(0)
	}()

	parsed, err := source.Parse(cfg.source)
	if err != nil {
		return err
	}
	opts, err := storeOptions(c, log, cfg.timeout)
	if err != nil {
		return err
	}
	if opts.CacheDir != "" {
		// A daemon leaves its working folder once up (readyNotifier).
		if opts.CacheDir, err = filepath.Abs(opts.CacheDir); err != nil {
			return fmt.Errorf("--cache-dir: %w", err)
		}
	}
	// What the store reads as it opens (a web server's .zmetadata) is
	// metadata, under its bound.
	store, err := source.Open(zmap.WithMaxSize(ctx, cfg.bounds.metadata), parsed, opts)
	if err != nil {
		return stoppedOr(ctx, log, err)
	}
	defer store.Close()

	// .nczarrfs/stats counts the store's requests and the cache's work.
	counted, chunks := stats.CountStore(store), cache.New(cfg.cacheSize)
	mountStats := &stats.Mount{Source: source.Redact(cfg.source), Store: counted, Cache: chunks}
	mountStats.Disk, _ = zmap.As[*diskcache.Store](store)
	if metricsLn != nil {
		// Up while the metadata is read: /healthz answers, /readyz says
		// "not mounted" until the mount is up.
		serving, stopServing := context.WithCancel(context.Background())
		defer stopServing()
		go metrics.Serve(serving, metricsLn, metrics.Handler(mountStats, mounted.Load), log)
		url := metrics.URL(metricsLn)
		if logs.file != nil {
			log.Info("serving metrics", "url", url)
		}
		if !c.Bool("mount-helper") {
			fmt.Fprintf(os.Stderr, "nczarrfs: metrics on %s\n", url)
		}
	}
	// Read-ahead decodes on as many processors as Go would use; the
	// daemon runs with twice as many, so that a goroutine answering the
	// kernel finds one free at once instead of waiting for a decode to
	// end (docs/architecture.md, read-ahead).
	decoders := runtime.GOMAXPROCS(0)
	runtime.GOMAXPROCS(2 * decoders)
	// Listings and metadata are kept for --metadata-ttl, and the kernel
	// keeps entries as long (fusefs.Options.CacheTimeout).
	kept := keepListings(counted, cfg.metadataTTL, log)
	kernelTTL := cfg.metadataTTL
	if kernelTTL == 0 {
		kernelTTL = -1
	}
	chunks.SetMaxAge(chunkMaxAge(cfg.metadataTTL))
	ds, err := nczarr.Open(ctx, kept, nczarr.Options{Cache: chunks, Logger: log, Decoders: decoders,
		MaxObjectSize: cfg.bounds.object, MaxMetadataSize: cfg.bounds.metadata})
	if err != nil {
		if errors.Is(err, nczarr.ErrNoDataset) {
			err = fmt.Errorf("%s holds no dataset: %w", cfg.source, err)
		} else if errors.Is(err, nczarr.ErrReferenceSet) {
			err = fmt.Errorf("%s is %w: add #mode=kerchunk to the source", cfg.source, nczarr.ErrReferenceSet)
		} else {
			err = fmt.Errorf("reading %s: %w", cfg.source, err)
		}
		return stoppedOr(ctx, log, err)
	}
	// Counting the arrays reads those of a lazily read dataset: only
	// when the count is logged.
	if log.Enabled(ctx, slog.LevelDebug) {
		log.Debug("opened dataset", "source", source.Redact(cfg.source), "generation", ds.Generation,
			"groups", len(ds.Groups()), "arrays", len(ds.Arrays()))
	}

	srv, err := fusefs.Mount(mountpoint, ds, kept, fusefs.Options{
		Logger:       log,
		CacheTimeout: kernelTTL,
		Listings:     kept,
		FsName:       source.Redact(cfg.source),
		Stats:        mountStats,
		Name:         datasetName(cfg.source),
		Debug:        cfg.debug,
		AllowOther:   c.Bool("allow-other"),
		UID:          cfg.uid,
		GID:          cfg.gid,
		Umask:        cfg.umask,
		PageCache:    c.Bool("page-cache"),
		Versions:     icechunkVersions(store),
		// A store with a timeout (S3) answers every request in time.
		RequestTimeout: requestTimeout(store),
		// The daemon never opens its own files; with the hack, a
		// SIGKILL while mounting could leave it stuck (fusefs.Options).
		NoPollHack: true,
		// Root mounts with mount(2) itself where there is no fusermount3,
		// as in the container image (docs/cluster.md).
		DirectMount: !fusermount && os.Geteuid() == 0,
	})
	if err != nil {
		return fmt.Errorf("mounting at %s: %w", mountpoint, err)
	}
	mounted.Store(true)
	served := make(chan struct{})
	go func() {
		// Wait returns once the kernel has let go: after our unmount,
		// fusermount3 -u, umount, or the last close after a lazy one.
		srv.Wait()
		close(served)
	}()
	if logs.file != nil {
		log.Info("mounted", "source", source.Redact(cfg.source), "mountpoint", mountpoint)
	}
	if !c.Bool("mount-helper") {
		fmt.Fprintf(os.Stderr, "nczarrfs: mounted %s at %s\n", source.Redact(cfg.source), mountpoint)
	}
	if ready != nil {
		if err := ready(logs); err != nil {
			log.Error("telling the parent the mount is up", "err", err)
		}
	}

	select {
	case <-served:
		log.Info("unmounted", "mountpoint", mountpoint)
	case <-stopping:
		stop(mountpoint, served, log)
	}
	return nil
}

// stoppedOr returns nil when err is the cancellation of a signal that
// came before the mount was up (the process was asked to stop), else err.
func stoppedOr(ctx context.Context, log *slog.Logger, err error) error {
	if ctx.Err() != nil && errors.Is(err, context.Canceled) {
		log.Info("stopped before the mount was up")
		return nil
	}
	return err
}

// stop unmounts after a signal. A busy mount is detached lazily, so new
// opens fail at once while open files keep working; those get stopGrace
// to finish before the process exits and the kernel fails what is left
// with ENOTCONN.
func stop(mountpoint string, served <-chan struct{}, log *slog.Logger) {
	if err := unmount(mountpoint); err != nil {
		log.Info("mountpoint busy; detaching it lazily", "mountpoint", mountpoint, "reason", err)
		if err := detach(mountpoint); err != nil {
			log.Error("lazy unmount failed", "mountpoint", mountpoint, "err", err)
		}
	}
	timer := time.NewTimer(stopGrace)
	defer timer.Stop()
	select {
	case <-served:
		log.Info("unmounted", "mountpoint", mountpoint)
	case <-timer.C:
		log.Warn("files still open; exiting, their next reads fail", "mountpoint", mountpoint, "waited", stopGrace)
	}
}

// checkFUSE fails early, with a hint, where FUSE cannot work, and says
// whether fusermount3 is there. Root can do without it: it mounts with
// mount(2) and unmounts with umount2(2).
func checkFUSE() (fusermount bool, err error) {
	if _, err := os.Stat("/dev/fuse"); err != nil {
		return false, fmt.Errorf("FUSE is not available (/dev/fuse: %v); install fuse3 and load the fuse module", err)
	}
	for _, name := range []string{"fusermount3", "fusermount"} {
		if _, err := exec.LookPath(name); err == nil {
			return true, nil
		}
	}
	if os.Geteuid() == 0 {
		return false, nil
	}
	return false, errors.New("fusermount3 not found in PATH; install fuse3 (apt-get install fuse3)")
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

// parseID reads a user or group id: a number, or a name lookup resolves.
func parseID(s string, lookup func(string) (string, error)) (*uint32, error) {
	if s == "" {
		return nil, errors.New("empty")
	}
	id := s
	if s[0] < '0' || s[0] > '9' {
		var err error
		if id, err = lookup(s); err != nil {
			return nil, err
		}
	}
	n, err := strconv.ParseUint(id, 10, 32)
	if err != nil || n == 1<<32-1 {
		return nil, fmt.Errorf("%q is not a name or a number below 4294967295", s)
	}
	v := uint32(n)
	return &v, nil
}

func lookupUser(name string) (string, error) {
	u, err := user.Lookup(name)
	if err != nil {
		return "", fmt.Errorf("no user %q", name)
	}
	return u.Uid, nil
}

func lookupGroup(name string) (string, error) {
	g, err := user.LookupGroup(name)
	if err != nil {
		return "", fmt.Errorf("no group %q", name)
	}
	return g.Gid, nil
}

// parseUmask reads an octal umask such as 022 or 0027.
func parseUmask(s string) (uint32, error) {
	n, err := strconv.ParseUint(s, 8, 32)
	if err != nil || n > 0o777 {
		return 0, fmt.Errorf("%q is not an octal mask from 000 to 777", s)
	}
	return uint32(n), nil
}

// requestTimeout bounds each FUSE request of a mount of store: one store
// operation's timeout (--timeout) and a second more for the rest of
// the work, so that whatever the server does, the kernel gets an answer
// in time (docs/reliability.md). Stores without a timeout get no bound.
func requestTimeout(store zmap.Store) time.Duration {
	if t, ok := zmap.As[interface{ Timeout() time.Duration }](store); ok {
		return t.Timeout() + time.Second
	}
	return 0
}

// chunkMaxAge is how long a decoded chunk serves reads before it is read
// from the store again, so that a chunk replaced in the bucket shows after
// --metadata-ttl, as new names do: the TTL itself, for ever with
// "forever", and a second with 0, so that the reads of one cat still
// share the chunks they decode.
func chunkMaxAge(ttl time.Duration) time.Duration {
	switch ttl {
	case listcache.Forever:
		return 0
	case 0:
		return time.Second
	}
	return ttl
}
