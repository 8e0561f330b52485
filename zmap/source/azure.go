package source

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"github.com/nczarrfs/nczarrfs/zmap"
	"github.com/nczarrfs/nczarrfs/zmap/azure"
	"github.com/nczarrfs/nczarrfs/zmap/diskcache"
)

// parseAzure reads an Azure Blob Storage SOURCE (azure.IsURL): az://,
// abfs:// or abfss://CONTAINER/PATH, or
// https://ACCOUNT.blob.core.windows.net/CONTAINER/PATH. Its fragment may
// name the format and version, not another storage medium.
func parseAzure(s Source, u *url.URL) (Source, error) {
	if s.Storage != "" && s.Storage != Azure {
		return s, fmt.Errorf("source %q: mode %s does not fit an Azure Blob Storage URL", Redact(s.Raw), s.Storage)
	}
	s.Storage = Azure
	loc, err := azure.LocationOf(u)
	if err != nil {
		return s, fmt.Errorf("source %q: %w", Redact(s.Raw), err)
	}
	s.Azure = loc
	return s, nil
}

func openAzure(ctx context.Context, s Source, opts Options) (zmap.Store, error) {
	o := opts.Azure
	if o.Logger == nil {
		o.Logger = opts.S3.Logger
	}
	st, err := azure.Open(ctx, s.Azure, o)
	if err != nil || opts.CacheDir == "" {
		if err != nil {
			return nil, err
		}
		return st, nil
	}
	// The dataset's identity: where it is, not how it is reached.
	id := strings.Join([]string{"azure", st.Endpoint(), s.Azure.Container, s.Azure.Prefix}, "\x00")
	dc, err := diskcache.New(st, opts.CacheDir, id, diskcache.Options{MaxBytes: opts.CacheDirSize, Logger: o.Logger})
	if err != nil {
		st.Close()
		return nil, err
	}
	return dc, nil
}
