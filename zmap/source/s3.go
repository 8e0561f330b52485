package source

import (
	"context"
	"log/slog"
	"time"

	"github.com/nczarrfs/nczarrfs/zmap"
	"github.com/nczarrfs/nczarrfs/zmap/s3"
)

// Options carry the S3 settings from the command line.
type Options struct {
	EndpointURL   string
	Region        string
	Profile       string
	NoSignRequest bool
	// Timeout bounds each S3 operation, retries included; 0 is the
	// backend's default.
	Timeout time.Duration
	Logger  *slog.Logger
}

func openS3(ctx context.Context, s Source, opts Options) (zmap.Store, error) {
	loc, err := s3.ParseURL(s.URL)
	if err != nil {
		return nil, err
	}
	return s3.Open(ctx, loc, s3.Options{
		EndpointURL:   opts.EndpointURL,
		Region:        opts.Region,
		Profile:       opts.Profile,
		NoSignRequest: opts.NoSignRequest,
		Timeout:       opts.Timeout,
		Logger:        opts.Logger,
	})
}
