package source

import (
	"context"
	"strings"

	"github.com/nczarrfs/nczarrfs/nczarr/consolidated"
	"github.com/nczarrfs/nczarrfs/zmap"
	"github.com/nczarrfs/nczarrfs/zmap/diskcache"
	zhttp "github.com/nczarrfs/nczarrfs/zmap/http"
)

func openHTTP(ctx context.Context, s Source, opts Options) (zmap.Store, error) {
	st, err := zhttp.Open(ctx, s.URL, zhttp.Options{Timeout: opts.S3.Timeout, Logger: opts.S3.Logger, Consolidated: consolidated.Parse, Raw: s.Format == Icechunk})
	if err != nil || opts.CacheDir == "" {
		return st, err
	}
	id := strings.Join([]string{"http", st.URL()}, "\x00")
	dc, err := diskcache.New(st, opts.CacheDir, id, diskcache.Options{MaxBytes: opts.CacheDirSize, Logger: opts.S3.Logger})
	if err != nil {
		st.Close()
		return nil, err
	}
	return dc, nil
}
