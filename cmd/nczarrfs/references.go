package main

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/nczarrfs/nczarrfs/zmap/source"
)

// referenceFlags are the flags of kerchunk reference sets (zmap/kerchunk):
// which URLs a remote reference set may reach, and where.
func referenceFlags() []cli.Flag {
	return []cli.Flag{
		&cli.BoolFlag{Name: "allow-local-references", Usage: "let a kerchunk reference set read from a bucket or web server point at local files (file:// URLs and paths); a local reference set may always"},
		&cli.StringSliceFlag{Name: "references-endpoint", Usage: "read the references whose URLs start with PREFIX from ENDPOINT_URL (PREFIX=ENDPOINT_URL, e.g. s3://bucket/=http://127.0.0.1:9000; may be repeated)"},
	}
}

// referencePolicy is the source.Policy of remote reference sets that c's
// flags give.
func referencePolicy(c *cli.Context) (source.Policy, error) {
	p := source.Policy{AllowLocal: c.Bool("allow-local-references")}
	for _, v := range c.StringSlice("references-endpoint") {
		e, err := source.ParseEndpoint(v)
		if err != nil {
			return p, fmt.Errorf("--references-endpoint: %w", err)
		}
		p.Endpoints = append(p.Endpoints, e)
	}
	return p, nil
}
