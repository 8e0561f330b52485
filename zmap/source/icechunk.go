package source

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"

	"github.com/nczarrfs/nczarrfs/zmap"
	"github.com/nczarrfs/nczarrfs/zmap/icechunk"
)

// Icechunk is the format word of an Icechunk repository (mode=icechunk).
const Icechunk = "icechunk"

// IcechunkOptions say which version of an Icechunk repository a source
// shows, and how its virtual chunks are read.
type IcechunkOptions struct {
	// At most one of Branch, Tag and Snapshot is set; none means the tip
	// of branch main.
	Branch, Tag, Snapshot string
	// Virtual lists the URL prefixes virtual chunks may be read from
	// (--virtual-chunks), and Endpoints the endpoints some of them are
	// read from (PREFIX=ENDPOINT_URL). Their stores come from an Opener
	// (opener.go) with the source's options, closed with the source.
	Virtual   []string
	Endpoints []Endpoint
	Logger    *slog.Logger
}

// IcechunkRoot is the store of an Icechunk source: the version it shows,
// the repository, and the storage it closes.
type IcechunkRoot struct {
	*icechunk.Store
	Repo *icechunk.Repository
	// Version says which version the store shows ("branch main",
	// "tag v1", "snapshot ID"), and ID is its snapshot.
	Version string
	ID      icechunk.ID
	storage io.Closer
	opener  io.Closer // of the virtual chunks' stores, or nil
}

// Unwrap gives the version's store.
func (r *IcechunkRoot) Unwrap() zmap.Store { return r.Store }

// Close closes the repository's storage, and the stores of its virtual
// chunks.
func (r *IcechunkRoot) Close() error {
	if r.opener != nil {
		r.opener.Close()
	}
	return r.storage.Close()
}

// isIcechunk reports whether st is the folder of an Icechunk repository:
// it has a `repo` file (spec 2) or refs/branch.main/ref.json (spec 1).
// An answer other than "not found" fails the detection.
func isIcechunk(ctx context.Context, st zmap.Store) (bool, error) {
	for _, key := range []string{"repo", "refs/branch.main/ref.json"} {
		_, err := st.Stat(ctx, key)
		if err == nil {
			return true, nil
		}
		if !errors.Is(err, zmap.ErrNotFound) {
			return false, err
		}
	}
	return false, nil
}

// openIcechunk opens the version of the repository in st that opts
// names. st is closed when the returned store is, or on failure.
func openIcechunk(ctx context.Context, s Source, st zmap.Store, all Options) (zmap.Store, error) {
	opts := all.Icechunk
	var op *Opener
	if len(opts.Virtual) > 0 {
		// Local virtual chunks are allowed as any other: only the
		// prefixes --virtual-chunks names are ever opened
		// (icechunk.Allowed gates every location).
		base := all
		base.Icechunk = IcechunkOptions{}
		op = NewOpener(base, Policy{AllowLocal: true, Endpoints: opts.Endpoints})
	}
	fail := func(err error) (zmap.Store, error) {
		if op != nil {
			op.Close()
		}
		st.Close()
		return nil, fmt.Errorf("icechunk repository %s: %w", Redact(s.Raw), err)
	}
	icOpts := icechunk.Options{Virtual: opts.Virtual, Logger: opts.Logger}
	if op != nil {
		icOpts.Opener = op
	}
	repo, err := icechunk.Open(ctx, st, icOpts)
	if err != nil {
		return fail(err)
	}
	n := 0
	for _, v := range []string{opts.Branch, opts.Tag, opts.Snapshot} {
		if v != "" {
			n++
		}
	}
	if n > 1 {
		return fail(errors.New("name at most one of branch, tag and snapshot"))
	}
	var id icechunk.ID
	var version string
	switch {
	case opts.Tag != "":
		version = "tag " + opts.Tag
		id, err = repo.Tag(ctx, opts.Tag)
	case opts.Snapshot != "":
		version = "snapshot " + opts.Snapshot
		id, err = icechunk.ParseID(opts.Snapshot)
	default:
		b := opts.Branch
		if b == "" {
			b = "main"
		}
		version = "branch " + b
		id, err = repo.Branch(ctx, b)
	}
	if err != nil {
		return fail(err)
	}
	v, err := repo.Version(ctx, id)
	if err != nil {
		return fail(err)
	}
	root := &IcechunkRoot{Store: v, Repo: repo, Version: version, ID: id, storage: st}
	if op != nil {
		root.opener = op
	}
	return root, nil
}

// maybeIcechunk opens the Icechunk repository in st when the source names
// the format, or when st holds one; otherwise it returns st.
func maybeIcechunk(ctx context.Context, s Source, st zmap.Store, opts Options) (zmap.Store, error) {
	if s.Format == "" && s.Storage != HTTP {
		before, counts := requestKinds(st)
		is, err := isIcechunk(ctx, st)
		if counts {
			// The probe is the price of not naming the format, not
			// the dataset's: .nczarrfs/stats leaves it out.
			after, _ := requestKinds(st)
			st = &probed{Store: st, probes: after - before}
		}
		if err != nil || !is {
			return st, nil // the dataset's own reading reports any failure
		}
	} else if s.Format != Icechunk {
		return st, nil
	}
	return openIcechunk(ctx, s, st, opts)
}

type requestCounter interface {
	RequestKinds() (get, rangedGET, head, list int64)
}

// requestKinds is the count of HEAD requests of a store that counts its
// own requests.
func requestKinds(st zmap.Store) (head int64, ok bool) {
	rc, ok := zmap.As[requestCounter](st)
	if !ok {
		return 0, false
	}
	_, _, head, _ = rc.RequestKinds()
	return head, true
}

// probed is a store whose request counts leave out the HEAD requests of
// the Icechunk probe.
type probed struct {
	zmap.Store
	probes int64
}

// Unwrap gives the store, for what it offers beyond zmap.Store.
func (p *probed) Unwrap() zmap.Store { return p.Store }

// RequestKinds counts the store's requests but the probe's.
func (p *probed) RequestKinds() (get, rangedGET, head, list int64) {
	rc, _ := zmap.As[requestCounter](p.Store)
	get, rangedGET, head, list = rc.RequestKinds()
	return get, rangedGET, head - p.probes, list
}
