package source

import (
	"context"

	"github.com/nczarrfs/nczarrfs/zmap"
	"github.com/nczarrfs/nczarrfs/zmap/s3"
)

// Options carry the settings of remote stores, from the command line.
type Options struct {
	// S3 configures s3:// and http(s):// sources.
	S3 s3.Options
}

func openS3(ctx context.Context, s Source, opts Options) (zmap.Store, error) {
	return s3.Open(ctx, s.S3, opts.S3)
}
