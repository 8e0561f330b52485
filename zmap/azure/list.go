package azure

import (
	"context"
	"slices"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/nczarrfs/nczarrfs/zmap"
)

// listPageSize is the MaxResults of each List Blobs request (the service's
// most); tests lower it.
var listPageSize int32 = 5000

// listing collects the entries of one Search or ListFlat.
type listing struct {
	entries []zmap.Entry
	seen    map[string]int // name -> index in entries
	// flat: names are keys with slashes (ListFlat).
	flat  bool
	pages int // requests made
}

func (l *listing) add(e zmap.Entry) {
	if (!l.flat && strings.Contains(e.Name, "/")) || !zmap.ValidKey(e.Name) {
		// A "folder" marker blob (hierarchical-namespace accounts have
		// them), or an empty, "." or ".." segment: no key names them,
		// so they are not listed.
		return
	}
	if i, ok := l.seen[e.Name]; ok {
		// A blob and a prefix of the same name: the prefix wins, as on
		// S3, so that what is below it can be reached.
		if e.Dir {
			l.entries[i] = e
		}
		return
	}
	l.seen[e.Name] = len(l.entries)
	l.entries = append(l.entries, e)
}

func (l *listing) sorted() []zmap.Entry {
	slices.SortFunc(l.entries, func(a, b zmap.Entry) int { return strings.Compare(a.Name, b.Name) })
	if l.entries == nil {
		return []zmap.Entry{}
	}
	return l.entries
}

// Search returns the immediate children of prefix with List Blobs
// (delimiter "/"), sorted by name, one page of 5,000 names after the other,
// each page within the timeout.
func (s *Store) Search(ctx context.Context, prefix string) ([]zmap.Entry, error) {
	if prefix != "" {
		if err := checkKey(prefix); err != nil {
			return nil, err
		}
	}
	lp := s.listPrefix(prefix)
	pager := s.client.NewListBlobsHierarchyPager("/", &container.ListBlobsHierarchyOptions{Prefix: lp, MaxResults: ptr(listPageSize)})
	l := &listing{seen: map[string]int{}}
	for pager.More() {
		var page container.ListBlobsHierarchyResponse
		l.pages++
		err := s.Do(ctx, func(rctx context.Context) (err error) {
			page, err = pager.NextPage(rctx)
			return err
		})
		if err != nil {
			return nil, s.mapErr(ctx, "ListBlobs", prefix, err)
		}
		if page.Segment == nil {
			continue
		}
		for _, p := range page.Segment.BlobPrefixes {
			if p.Name != nil {
				l.add(zmap.Entry{Name: strings.TrimSuffix(trimName(*p.Name, lp), "/"), Dir: true})
			}
		}
		for _, b := range page.Segment.BlobItems {
			if e, ok := entryOf(b, lp); ok {
				l.add(e)
			}
		}
	}
	return l.sorted(), nil
}

// ListFlat lists every blob under prefix with List Blobs without a
// delimiter (zmap.FlatLister), at most limit of them (0: no bound), one
// page of 5,000 names after the other.
func (s *Store) ListFlat(ctx context.Context, prefix string, limit int) (zmap.FlatListing, error) {
	if prefix != "" {
		if err := checkKey(prefix); err != nil {
			return zmap.FlatListing{}, err
		}
	}
	lp := s.listPrefix(prefix)
	pager := s.client.NewListBlobsFlatPager(&container.ListBlobsFlatOptions{Prefix: lp, MaxResults: ptr(listPageSize)})
	l := &listing{seen: map[string]int{}, flat: true}
	for pager.More() {
		if limit > 0 && len(l.entries) > limit {
			return zmap.FlatListing{Requests: l.pages}, nil
		}
		var page container.ListBlobsFlatResponse
		l.pages++
		err := s.Do(ctx, func(rctx context.Context) (err error) {
			page, err = pager.NextPage(rctx)
			return err
		})
		if err != nil {
			return zmap.FlatListing{Requests: l.pages}, s.mapErr(ctx, "ListBlobs", prefix, err)
		}
		if page.Segment == nil {
			continue
		}
		for _, b := range page.Segment.BlobItems {
			if e, ok := entryOf(b, lp); ok {
				l.add(e)
			}
		}
	}
	if limit > 0 && len(l.entries) > limit {
		return zmap.FlatListing{Requests: l.pages}, nil
	}
	return zmap.FlatListing{Entries: l.sorted(), Complete: true, Requests: l.pages}, nil
}

// entryOf is the Entry of a listed blob, named relative to the listed
// prefix lp.
func entryOf(b *container.BlobItem, lp *string) (zmap.Entry, bool) {
	if b == nil || b.Name == nil {
		return zmap.Entry{}, false
	}
	e := zmap.Entry{Name: trimName(*b.Name, lp)}
	if p := b.Properties; p != nil {
		if p.ContentLength != nil {
			e.Size = *p.ContentLength
		}
		e.ModTime = modTime(p.LastModified)
		e.ETag = etagOf(p.ETag)
	}
	return e, e.Name != ""
}
