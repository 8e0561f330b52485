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
	"github.com/nczarrfs/nczarrfs/zmap/diskcache"
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
		&cli.StringFlag{Name: "cache-dir", Usage: "keep the objects fetched from a remote store (S3, Google Cloud Storage, HTTP) in this folder, for later mounts and other mounts of the same dataset (may be shared by several mounts)"},
		&cli.StringFlag{Name: "cache-dir-size", Value: "10GiB", Usage: "the most bytes --cache-dir holds; the least recently used objects go first"},
	}
}

// metadataTTLFlag is --metadata-ttl, of mount and of the commands that
// read without mounting.
func metadataTTLFlag() cli.Flag {
	return &cli.StringFlag{Name: "metadata-ttl", Value: "5m", Usage: "how long listings and metadata are kept before the bucket is asked again (a duration; 0 asks every time; forever for data that never change)"}
}

// boundFlags are --max-object-size and --max-metadata-size, of mount and
// of the commands that read without mounting: the bounds on the objects
// read (docs/codecs.md, "Bounds on stored objects").
func boundFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "max-object-size", Usage: "raise the bound on a stored chunk or shard to at least this many bytes (KiB/MiB/GiB suffixes); it never lowers the bound its codecs give, and a larger object reads as corrupt (EIO)", DefaultText: "the codecs' worst case"},
		&cli.StringFlag{Name: "max-metadata-size", Value: "64MiB", Usage: "the most bytes a metadata document (.zarray, zarr.json, .zmetadata) may hold; a larger one is not read"},
	}
}

// bounds are the bounds boundFlags set.
type bounds struct {
	object   int64 // the least bound of a chunk or shard; 0 for the codecs'
	metadata int64 // the bound of a metadata document
}

// parseBounds reads boundFlags.
func parseBounds(c *cli.Context) (bounds, error) {
	b := bounds{metadata: zmap.DefaultMaxSize}
	if s := c.String("max-object-size"); s != "" {
		n, err := parseSize(s)
		if err != nil {
			return b, fmt.Errorf("--max-object-size: %w", err)
		}
		b.object = n
	}
	if s := c.String("max-metadata-size"); s != "" {
		n, err := parseSize(s)
		if err != nil {
			return b, fmt.Errorf("--max-metadata-size: %w", err)
		}
		if n < 1<<10 {
			return b, fmt.Errorf("--max-metadata-size: %s is too small (try 64MiB)", s)
		}
		b.metadata = n
	}
	return b, nil
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
// sub-folders are listed in the background, unless listing a folder costs
// a request per chunk (a web server that cannot be listed, zmap/http). A
// --cache-dir folder under it takes the identity of objects from those
// listings.
func keepListings(store zmap.Store, ttl time.Duration, log *slog.Logger) *listcache.Store {
	opts := listcache.Options{TTL: ttl, Logger: log}
	if r, ok := zmap.As[interface{ Remote() bool }](store); ok && r.Remote() {
		opts.FlatLimit = listcache.DefaultFlatLimit
		opts.Prefetch = 8
	}
	if p, ok := zmap.As[interface{ ListsByProbing() bool }](store); ok && p.ListsByProbing() {
		opts.Prefetch = 0
	}
	lc := listcache.New(store, opts)
	if dc, ok := zmap.As[*diskcache.Store](store); ok {
		// --cache-dir names objects by the ETags of the kept listings.
		dc.SetListing(lc, ttl)
	}
	return lc
}

// remoteFlags are the flags that say how to reach a remote store, shared
// by mount and the commands that read without mounting.
func remoteFlags() []cli.Flag {
	return append([]cli.Flag{
		&cli.StringFlag{Name: "endpoint-url", Usage: "S3 endpoint, e.g. http://127.0.0.1:9000 (for gs:// sources, Google's; for Azure, the blob service endpoint, e.g. http://127.0.0.1:10000/devstoreaccount1)", EnvVars: []string{"AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"}},
		&cli.StringFlag{Name: "region", Usage: "S3 region (default from the AWS configuration)"},
		&cli.StringFlag{Name: "profile", Usage: "AWS shared-config profile (for gs:// sources, the one holding Google HMAC keys)"},
		&cli.BoolFlag{Name: "no-sign-request", Usage: "read a public bucket or container without credentials"},
		&cli.DurationFlag{Name: "timeout", Aliases: []string{"s3-timeout"}, Usage: "bound on each request to a remote store (S3, Google Cloud Storage, Azure, HTTP), retries and resumed bodies included", DefaultText: "30s, or NCZARRFS_TIMEOUT or NCZARRFS_S3_TIMEOUT"},
	}, append(icechunkFlags(), referenceFlags()...)...)
}

// parseTimeout reads --timeout (or its older name --s3-timeout): 0 when
// not set, for the store to take the environment's or its default.
func parseTimeout(c *cli.Context) (time.Duration, error) {
	if !c.IsSet("timeout") {
		return 0, nil
	}
	d := c.Duration("timeout")
	if d <= 0 {
		return 0, fmt.Errorf("--timeout (--s3-timeout): %v is not a positive duration (try 30s)", d)
	}
	return d, nil
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
	var err error
	if opts.References, err = referencePolicy(c); err != nil {
		return opts, err
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
	return opts, icechunkOptions(c, &opts, log)
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
