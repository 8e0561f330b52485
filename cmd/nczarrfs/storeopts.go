package main

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/nczarrfs/nczarrfs/zmap"
	"github.com/nczarrfs/nczarrfs/zmap/azure"
	"github.com/nczarrfs/nczarrfs/zmap/listcache"
	"github.com/nczarrfs/nczarrfs/zmap/s3"
	"github.com/nczarrfs/nczarrfs/zmap/source"
)

// diskCacheFlags are the flags of the on-disk cache of fetched objects,
// and --follow-links, shared by mount and the commands that read without
// mounting.
func diskCacheFlags() []cli.Flag {
	return []cli.Flag{
		&cli.BoolFlag{Name: "follow-links", Usage: "follow symbolic links that leave a directory SOURCE (git-annex, DataLad, DVC): whoever can read the mount can read what the links point at"},
		&cli.StringFlag{Name: "cache-dir", Usage: "keep the objects fetched from S3 in this folder, for later mounts and other mounts of the same dataset (may be shared by several mounts)"},
		&cli.StringFlag{Name: "cache-dir-size", Value: "10GiB", Usage: "the most bytes --cache-dir holds; the least recently used objects go first"},
	}
}

// metadataTTLFlag is --metadata-ttl, of mount and of the commands that
// read without mounting.
func metadataTTLFlag() cli.Flag {
	return &cli.StringFlag{Name: "metadata-ttl", Value: "5m", Usage: "how long listings and metadata are kept before the bucket is asked again (a duration; 0 asks every time; forever for data that never change)"}
}

// parseTTL parses --metadata-ttl.
func parseTTL(s string) (time.Duration, error) {
	if s == "forever" {
		return listcache.Forever, nil
	}
	d, err := time.ParseDuration(s)
	if err == nil && d < 0 {
		err = errors.New("negative")
	}
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration (try 5m, 0 or forever): %w", s, err)
	}
	return d, nil
}

// keepListings wraps store in the layer that keeps its listings and
// metadata for ttl (zmap/listcache): a distant store is listed flat when
// it holds at most listcache.DefaultFlatLimit keys, and a listed folder's
// sub-folders are listed in the background.
func keepListings(store zmap.Store, ttl time.Duration, log *slog.Logger) *listcache.Store {
	opts := listcache.Options{TTL: ttl, Logger: log}
	if r, ok := zmap.As[interface{ Remote() bool }](store); ok && r.Remote() {
		opts.FlatLimit = listcache.DefaultFlatLimit
		opts.Prefetch = 8
	}
	return listcache.New(store, opts)
}

// storeOptions are the options of source.Open that c's flags give.
func storeOptions(c *cli.Context, log *slog.Logger, timeout time.Duration) (source.Options, error) {
	opts := source.Options{
		S3: s3.Options{
			EndpointURL:   c.String("endpoint-url"),
			Region:        c.String("region"),
			Profile:       c.String("profile"),
			NoSignRequest: c.Bool("no-sign-request"),
			Timeout:       timeout,
			Logger:        log,
		},
		Azure: azure.Options{
			EndpointURL: azureEndpoint(c.String("endpoint-url")),
			Anonymous:   c.Bool("no-sign-request"),
			Timeout:     timeout,
			Logger:      log,
		},
		CacheDir:    c.String("cache-dir"),
		FollowLinks: c.Bool("follow-links"),
	}
	if opts.CacheDir != "" {
		n, err := parseSize(c.String("cache-dir-size"))
		if err != nil {
			return opts, fmt.Errorf("--cache-dir-size: %w", err)
		}
		if n < 1<<20 {
			return opts, fmt.Errorf("--cache-dir-size: %s is too small (try 10GiB)", c.String("cache-dir-size"))
		}
		opts.CacheDirSize = n
	}
	return opts, nil
}

// azureEndpoint is --endpoint-url for an Azure source: the flag's value
// unless it came from AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL, which name
// an S3 endpoint, not a blob service.
func azureEndpoint(v string) string {
	if v != "" && (v == os.Getenv("AWS_ENDPOINT_URL_S3") || v == os.Getenv("AWS_ENDPOINT_URL")) {
		return ""
	}
	return v
}
