package s3

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/nczarrfs/nczarrfs/zmap"
)

// listPageSize is the MaxKeys of each ListObjectsV2 request (S3's most);
// tests lower it.
var listPageSize int32 = 1000

// listers bounds the parts of one listing that are listed at once.
const listers = 16

// afterDigits sorts after every name that begins with a digit.
var afterDigits = "9" + string(utf8.MaxRune)

// listPart is one part of a listing: the names under the listed prefix
// that begin with within, after after and up to upTo ("" for no bound).
type listPart struct {
	within, after, upTo string
}

// restOfListing splits the names after last, the last name of a
// listing's first page, into parts listed at once: one for each digit
// they may begin with (chunk keys begin with digits, and an array folder
// of 100,000 chunks otherwise takes 100 pages one after the other), one
// for the names between last and the digits and one for those after
// them. Parts are cut by prefix, not only by StartAfter: MinIO walks a
// folder afresh for every StartAfter, and 110 ranges cut that way listed
// 100,000 keys in 19-22 s where one listing took 2.3 s and these parts
// 2.1 s.
func restOfListing(last string) []listPart { return restOfListingUnder("", last) }

// restOfListingUnder is restOfListing for names that share the prefix
// under: the parts cut by digit are those of the names that begin with
// under and a digit. A flat listing's keys share the path of the folder
// they are in ("v/0.0", "v/0.1", ...), and cut there as restOfListing
// cuts a folder's names.
func restOfListingUnder(under, last string) []listPart {
	var parts []listPart
	if last < under+"0" {
		parts = append(parts, listPart{after: last, upTo: under + "0"})
	}
	for d := '0'; d <= '9'; d++ {
		p := under + string(d)
		switch {
		case strings.HasPrefix(last, p):
			parts = append(parts, listPart{within: p, after: last})
		case last < p:
			parts = append(parts, listPart{within: p})
		}
		// Otherwise the first page had every name beginning with d.
	}
	return append(parts, listPart{after: max(last, under+afterDigits)})
}

// Search returns the immediate children of prefix with ListObjectsV2
// (Delimiter "/"), sorted by name. When the first page does not hold
// them all, the names after it are listed in parts (restOfListing) at
// once.
func (s *Store) Search(ctx context.Context, prefix string) ([]zmap.Entry, error) {
	if prefix != "" {
		if err := checkKey(prefix); err != nil {
			return nil, err
		}
	}
	lp := s.listPrefix(prefix)
	l := &listing{seen: map[string]int{}}
	last, more, err := s.listPart(ctx, prefix, lp, listPart{}, true, l, "/")
	if err != nil {
		return nil, err
	}
	if more {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		sem := make(chan struct{}, listers)
		var wg sync.WaitGroup
		var mu sync.Mutex
		var first error
		for _, part := range restOfListing(last) {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer func() { <-sem; wg.Done() }()
				if _, _, err := s.listPart(ctx, prefix, lp, part, false, l, "/"); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
					cancel()
				}
			}()
		}
		wg.Wait()
		if first != nil {
			return nil, first
		}
	}
	entries := l.entries
	slices.SortFunc(entries, func(a, b zmap.Entry) int { return strings.Compare(a.Name, b.Name) })
	if entries == nil {
		entries = []zmap.Entry{}
	}
	return entries, nil
}

// listing collects the entries of one Search from its ranges.
type listing struct {
	mu      sync.Mutex
	entries []zmap.Entry   // GUARDED_BY(mu)
	seen    map[string]int // GUARDED_BY(mu): name -> index in entries
	// flat: names are keys with slashes (ListFlat), and limit, when
	// more than 0, stops the listing once it holds more entries.
	flat  bool
	limit int
	pages atomic.Int64 // requests made
}

// errLimit stops a flat listing's parts once it holds more than its limit.
var errLimit = errors.New("listing limit reached")

// full reports whether a flat listing holds more than its limit.
func (l *listing) full() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.limit > 0 && len(l.entries) > l.limit
}

func (l *listing) add(e zmap.Entry) {
	if (!l.flat && strings.Contains(e.Name, "/")) || !zmap.ValidKey(e.Name) {
		// A "folder" marker object, or an empty, "." or ".." segment:
		// S3 stores such keys, but no key names them (they would leave
		// the dataset's prefix), so they are not listed.
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if i, ok := l.seen[e.Name]; ok {
		if e.Dir {
			l.entries[i] = e
		}
		return
	}
	l.seen[e.Name] = len(l.entries)
	l.entries = append(l.entries, e)
}

// listPart lists the names of part under lp into l. With onePage it stops
// after the first page and returns the last name on it and whether more
// follow.
func (s *Store) listPart(ctx context.Context, prefix, lp string, part listPart, onePage bool, l *listing, delimiter string) (last string, more bool, err error) {
	in := &s3.ListObjectsV2Input{
		Bucket:  aws.String(s.loc.Bucket),
		Prefix:  aws.String(lp + part.within),
		MaxKeys: aws.Int32(listPageSize),
	}
	if delimiter != "" {
		in.Delimiter = aws.String(delimiter)
	}
	if part.after != "" {
		in.StartAfter = aws.String(lp + part.after)
	}
	upTo := part.upTo
	pager := s3.NewListObjectsV2Paginator(s.client, in)
	for pager.HasMorePages() {
		if l.full() {
			return "", false, errLimit
		}
		pctx := withLastAnswer(ctx)
		l.pages.Add(1)
		page, err := s.nextPage(pctx, pager)
		if err != nil {
			return "", false, s.mapErr(pctx, "ListObjectsV2", prefix, err)
		}
		done := false
		take := func(name string) bool {
			last = max(last, name)
			if upTo != "" && name > upTo {
				done = true
				return false
			}
			return true
		}
		for _, cp := range page.CommonPrefixes {
			name := strings.TrimSuffix(strings.TrimPrefix(aws.ToString(cp.Prefix), lp), "/")
			if take(name) {
				l.add(zmap.Entry{Name: name, Dir: true})
			}
		}
		for _, o := range page.Contents {
			name := strings.TrimPrefix(aws.ToString(o.Key), lp)
			if take(name) {
				l.add(zmap.Entry{Name: name, Size: aws.ToInt64(o.Size), ModTime: modTime(o.LastModified), ETag: etag(o.ETag)})
			}
		}
		if onePage {
			return last, pager.HasMorePages(), nil
		}
		if done {
			break
		}
	}
	return last, false, nil
}

// ListFlat lists every object under prefix with ListObjectsV2 without a
// delimiter (zmap.FlatLister), at most limit of them (0: no bound). When
// the first page does not hold them all, the keys after it are listed in
// parts at once, cut by the digit that follows the last key's part before
// its first digit (flatSplit, restOfListingUnder): the chunk keys of a
// folder, or the names of many numbered arrays.
func (s *Store) ListFlat(ctx context.Context, prefix string, limit int) (zmap.FlatListing, error) {
	if prefix != "" {
		if err := checkKey(prefix); err != nil {
			return zmap.FlatListing{}, err
		}
	}
	lp := s.listPrefix(prefix)
	l := &listing{seen: map[string]int{}, flat: true, limit: limit}
	answer := func(err error) (zmap.FlatListing, error) {
		out := zmap.FlatListing{Requests: int(l.pages.Load())}
		if errors.Is(err, errLimit) || l.full() {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out.Entries, out.Complete = l.entries, true
		slices.SortFunc(out.Entries, func(a, b zmap.Entry) int { return strings.Compare(a.Name, b.Name) })
		return out, nil
	}
	last, more, err := s.listPart(ctx, prefix, lp, listPart{}, true, l, "")
	if err != nil || !more {
		return answer(err)
	}
	under := flatSplit(last)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sem := make(chan struct{}, listers)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	for _, part := range restOfListingUnder(under, last) {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			if _, _, err := s.listPart(ctx, prefix, lp, part, false, l, ""); err != nil {
				mu.Lock()
				if firstErr == nil {
					firstErr = err
				}
				mu.Unlock()
				cancel()
			}
		}()
	}
	wg.Wait()
	return answer(firstErr)
}

// flatSplit is where a flat listing's rest is cut by digit: the first
// page's last key up to its first digit. The keys after it are then cut
// where they are numbered: "v0499/.zarray" gives the parts v0 (after it)
// to v9 of 10,000 arrays named v0000 to v9999, and "a/1.7" the parts a/1
// (after it) to a/9 of an array's chunks; a key without a digit is not
// cut but at the digits of the folder (restOfListing).
func flatSplit(last string) string {
	if i := strings.IndexAny(last, "0123456789"); i >= 0 {
		return last[:i]
	}
	return ""
}
