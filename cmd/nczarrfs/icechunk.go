package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/nczarrfs/nczarrfs/fusefs"
	"github.com/nczarrfs/nczarrfs/zmap"
	"github.com/nczarrfs/nczarrfs/zmap/icechunk"
	"github.com/nczarrfs/nczarrfs/zmap/source"
)

// icechunkFlags choose the version of an Icechunk repository a command
// reads, and where its virtual chunks may come from.
func icechunkFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "branch", Usage: "Icechunk: show the tip of this branch (default main)"},
		&cli.StringFlag{Name: "tag", Usage: "Icechunk: show this tag"},
		&cli.StringFlag{Name: "snapshot", Usage: "Icechunk: show this snapshot (its 20-character id)"},
		&cli.StringSliceFlag{Name: "virtual-chunks", Usage: "Icechunk: read virtual chunks whose URL starts with PREFIX (PREFIX or PREFIX=ENDPOINT_URL, e.g. s3://bucket/=http://127.0.0.1:9000; repeatable)"},
	}
}

// icechunkOptions fills opts.Icechunk from c's flags.
func icechunkOptions(c *cli.Context, opts *source.Options, log *slog.Logger) error {
	ic := &opts.Icechunk
	ic.Branch, ic.Tag, ic.Snapshot, ic.Logger = c.String("branch"), c.String("tag"), c.String("snapshot"), log
	set := 0
	for _, v := range []string{ic.Branch, ic.Tag, ic.Snapshot} {
		if v != "" {
			set++
		}
	}
	if set > 1 {
		return errors.New("--branch, --tag and --snapshot: name at most one")
	}
	if ic.Snapshot != "" {
		if _, err := icechunk.ParseID(ic.Snapshot); err != nil {
			return fmt.Errorf("--snapshot: %w", err)
		}
	}
	for _, v := range c.StringSlice("virtual-chunks") {
		prefix, endpoint, _ := strings.Cut(v, "=")
		if !strings.Contains(prefix, "://") {
			return fmt.Errorf("--virtual-chunks %q: PREFIX is a URL prefix, such as s3://bucket/", v)
		}
		ic.Virtual = append(ic.Virtual, prefix)
		if endpoint != "" {
			ep, err := source.ParseEndpoint(v)
			if err != nil {
				return fmt.Errorf("--virtual-chunks: %w", err)
			}
			ic.Endpoints = append(ic.Endpoints, ep)
		}
	}
	return nil
}

// icechunkVersions is the versions folder of an Icechunk source, nil
// for another.
func icechunkVersions(store zmap.Store) *fusefs.Versions {
	root, ok := zmap.As[*source.IcechunkRoot](store)
	if !ok {
		return nil
	}
	return &fusefs.Versions{Dir: ".icechunk", Source: repoVersions{root.Repo}}
}

// repoVersions shows a repository's branches, tags and snapshots to
// fusefs, which knows nothing of Icechunk.
type repoVersions struct{ r *icechunk.Repository }

func (v repoVersions) Kinds() []string { return []string{"branches", "snapshots", "tags"} }

func (v repoVersions) Names(ctx context.Context, kind string) ([]string, error) {
	switch kind {
	case "branches":
		return v.r.Branches(ctx)
	case "tags":
		return v.r.Tags(ctx)
	case "snapshots":
		all, err := v.r.Snapshots(ctx)
		if err != nil {
			return nil, err
		}
		names := make([]string, len(all))
		for i, s := range all {
			names[i] = s.ID.String()
		}
		slices.Sort(names)
		return names, nil
	}
	return nil, nil
}

func (v repoVersions) Has(ctx context.Context, kind, name string) (bool, error) {
	var err error
	switch kind {
	case "branches":
		_, err = v.r.Branch(ctx, name)
	case "tags":
		_, err = v.r.Tag(ctx, name)
	case "snapshots":
		if v.r.Spec() == 1 {
			// Those reachable from the refs, as snapshots.json lists.
			names, err := v.Names(ctx, kind)
			return slices.Contains(names, name), err
		}
		var id icechunk.ID
		if id, err = icechunk.ParseID(name); err != nil {
			return false, nil
		}
		_, err = v.r.Info(ctx, id)
		if errors.Is(err, zmap.ErrNotFound) {
			return false, nil
		}
	default:
		return false, nil
	}
	if errors.Is(err, icechunk.ErrNoRef) {
		return false, nil
	}
	return err == nil, err
}

func (v repoVersions) Open(ctx context.Context, kind, name string) (zmap.Store, error) {
	var id icechunk.ID
	var err error
	switch kind {
	case "branches":
		id, err = v.r.Branch(ctx, name)
	case "tags":
		id, err = v.r.Tag(ctx, name)
	case "snapshots":
		if id, err = icechunk.ParseID(name); err == nil {
			_, err = v.r.Info(ctx, id)
		}
	default:
		err = zmap.ErrNotFound
	}
	if errors.Is(err, icechunk.ErrNoRef) || err != nil && strings.Contains(err.Error(), "base 32") {
		return nil, fmt.Errorf("%w: %w", zmap.ErrNotFound, err)
	}
	if err != nil {
		return nil, err
	}
	return v.r.Version(ctx, id)
}

func (v repoVersions) Files() []string { return []string{"snapshots.json"} }

func (v repoVersions) File(ctx context.Context, name string) ([]byte, error) {
	if name != "snapshots.json" {
		return nil, zmap.ErrNotFound
	}
	return v.r.SnapshotsJSON(ctx)
}

// icechunkNote writes, for an Icechunk source, which version the command
// reads, and with refs its branches and tags: a line each, for ls and
// info (on stderr, their output staying what it is for any dataset).
func icechunkNote(ctx context.Context, w io.Writer, store zmap.Store, refs bool) {
	root, ok := zmap.As[*source.IcechunkRoot](store)
	if !ok {
		return
	}
	fmt.Fprintf(w, "icechunk: %s, snapshot %s (spec %d)\n", root.Version, root.ID, root.Repo.Spec())
	if !refs {
		return
	}
	if b, err := root.Repo.Branches(ctx); err == nil {
		fmt.Fprintf(w, "icechunk: branches: %s\n", strings.Join(quoteAll(b), ", "))
	}
	if t, err := root.Repo.Tags(ctx); err == nil {
		fmt.Fprintf(w, "icechunk: tags: %s\n", strings.Join(quoteAll(t), ", "))
	}
}

func quoteAll(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = strconv.Quote(n)
	}
	return out
}
