package source

import (
	"context"
	"strings"

	"github.com/nczarrfs/nczarrfs/zmap"
	"github.com/nczarrfs/nczarrfs/zmap/azure"
	"github.com/nczarrfs/nczarrfs/zmap/diskcache"
	"github.com/nczarrfs/nczarrfs/zmap/s3"
)

// Options carry the settings of remote stores, from the command line.
type Options struct {
	// S3 configures s3:// and http(s):// sources.
	S3 s3.Options
	// Azure configures az://, abfs:// and blob service sources.
	Azure azure.Options
	// CacheDir, when set, keeps the objects fetched from a remote store
	// in this folder (zmap/diskcache), within CacheDirSize bytes (0 means
	// diskcache.DefaultMaxBytes).
	CacheDir     string
	CacheDirSize int64
	// FollowLinks follows symbolic links out of a directory source's root
	// (file.Options.FollowLinks).
	FollowLinks bool
	// Icechunk says which version of an Icechunk repository to show
	// (icechunk.go).
	Icechunk IcechunkOptions
	// References is what the references of a remote kerchunk reference
	// set may reach (a local one's may always reach local files).
	References Policy
}

func openS3(ctx context.Context, s Source, opts Options) (zmap.Store, error) {
	st, err := s3.Open(ctx, s.S3, opts.S3)
	if err != nil || opts.CacheDir == "" {
		return st, err
	}
	endpoint := s.S3.Endpoint
	if opts.S3.EndpointURL != "" {
		endpoint = opts.S3.EndpointURL
	}
	// The dataset's identity: where it is, not how it is reached.
	id := strings.Join([]string{"s3", endpoint, s.S3.Bucket, s.S3.Prefix}, "\x00")
	dc, err := diskcache.New(st, opts.CacheDir, id, diskcache.Options{MaxBytes: opts.CacheDirSize, Logger: opts.S3.Logger})
	if err != nil {
		st.Close()
		return nil, err
	}
	return dc, nil
}
