package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/urfave/cli/v2"

	"github.com/nczarrfs/nczarrfs/cache"
	"github.com/nczarrfs/nczarrfs/nczarr"
	"github.com/nczarrfs/nczarrfs/zmap"
	"github.com/nczarrfs/nczarrfs/zmap/listcache"
	"github.com/nczarrfs/nczarrfs/zmap/source"
)

// sourceFlags are the flags of the commands that read a SOURCE without
// mounting it (ls, info, header, cat): how to reach the store, and the
// chunk cache. They mean what mount's flags of the same names mean.
func sourceFlags() []cli.Flag {
	return append([]cli.Flag{
		&cli.StringFlag{Name: "cache-size", Value: "256MiB", Usage: "memory for decoded chunks (bytes, or with a KiB/MiB/GiB suffix)"},
		&cli.BoolFlag{Name: "debug", Usage: "log debug messages"},
		metadataTTLFlag(),
		boundFlags()[0], boundFlags()[1],
	}, append(remoteFlags(), diskCacheFlags()...)...)
}

// openDataset opens the store src names and reads its dataset's metadata,
// as a mount does, with the store and cache options of c's flags (absent
// flags take their defaults). The caller closes the store.
func openDataset(ctx context.Context, c *cli.Context, src string) (*nczarr.Dataset, zmap.Store, error) {
	level := slog.LevelWarn
	if c.Bool("debug") {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))

	cacheSize := int64(256 << 20)
	if s := c.String("cache-size"); s != "" {
		var err error
		if cacheSize, err = parseSize(s); err != nil {
			return nil, nil, fmt.Errorf("--cache-size: %w", err)
		}
		if cacheSize == 0 {
			return nil, nil, errors.New("--cache-size: must be more than 0 (try 256MiB)")
		}
	}
	timeout, err := parseTimeout(c)
	if err != nil {
		return nil, nil, err
	}
	ttl := listcache.DefaultTTL
	if c.IsSet("metadata-ttl") {
		if ttl, err = parseTTL(c.String("metadata-ttl")); err != nil {
			return nil, nil, fmt.Errorf("--metadata-ttl: %w", err)
		}
	}
	b, err := parseBounds(c)
	if err != nil {
		return nil, nil, err
	}
	parsed, err := source.Parse(src)
	if err != nil {
		return nil, nil, err
	}
	opts, err := storeOptions(c, log, timeout)
	if err != nil {
		return nil, nil, err
	}
	raw, err := source.Open(zmap.WithMaxSize(ctx, b.metadata), parsed, opts)
	if err != nil {
		return nil, nil, err
	}
	store := zmap.Store(keepListings(raw, ttl, log))
	ds, err := nczarr.Open(ctx, store, nczarr.Options{Cache: cache.New(cacheSize), Logger: log,
		MaxObjectSize: b.object, MaxMetadataSize: b.metadata})
	if err != nil {
		store.Close()
		if errors.Is(err, nczarr.ErrNoDataset) {
			return nil, nil, fmt.Errorf("%s holds no dataset: %w", source.Redact(src), err)
		}
		if errors.Is(err, nczarr.ErrReferenceSet) {
			return nil, nil, fmt.Errorf("%s is %w: add #mode=kerchunk to the source", source.Redact(src), nczarr.ErrReferenceSet)
		}
		return nil, nil, fmt.Errorf("reading %s: %w", source.Redact(src), err)
	}
	// Counting the arrays reads those of a lazily read dataset: only
	// when the count is logged.
	if log.Enabled(ctx, slog.LevelDebug) {
		log.Debug("opened dataset", "source", source.Redact(src), "generation", ds.Generation,
			"groups", len(ds.Groups()), "arrays", len(ds.Arrays()))
	}
	return ds, store, nil
}

// signalContext is a context cancelled by SIGINT or SIGTERM, for the
// commands that read without mounting.
func signalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

// openArray opens the dataset of the first argument and returns it, its
// store (for the caller to close) and its array named by the second.
func openArray(ctx context.Context, c *cli.Context) (*nczarr.Dataset, zmap.Store, *nczarr.Array, error) {
	ds, store, err := openDataset(ctx, c, c.Args().Get(0))
	if err != nil {
		return nil, nil, nil, err
	}
	name := c.Args().Get(1)
	a := ds.Array(arrayPath(name))
	if a == nil {
		store.Close()
		return nil, nil, nil, fmt.Errorf("%s: no such array (nczarrfs ls lists them)", name)
	}
	return ds, store, a, nil
}

// arrayPath turns a user's ARRAY or PATH argument ("/g1/v", "g1/v/",
// "") into a dataset key prefix ("g1/v").
func arrayPath(p string) string {
	for len(p) > 0 && p[0] == '/' {
		p = p[1:]
	}
	for len(p) > 0 && p[len(p)-1] == '/' {
		p = p[:len(p)-1]
	}
	return p
}
