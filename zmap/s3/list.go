package s3

import (
	"context"
	"slices"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/nczarrfs/nczarrfs/zmap"
)

// listPageSize is the MaxKeys of each ListObjectsV2 request (S3's most);
// tests lower it.
var listPageSize int32 = 1000

// listSplits are where a long listing is cut into ranges listed at once:
// the names that sort before and after every one- and two-digit prefix.
// Chunk keys begin with digits, and an array folder of 100,000 chunks
// otherwise takes 100 ListObjectsV2 pages one after the other.
var listSplits = func() []string {
	var s []string
	for a := '0'; a <= '9'; a++ {
		s = append(s, string(a))
		for b := '0'; b <= '9'; b++ {
			s = append(s, string(a)+string(b))
		}
	}
	slices.Sort(s)
	return s
}()

// listers bounds the ranges of one listing that are listed at once.
const listers = 16

// Search returns the immediate children of prefix with ListObjectsV2
// (Delimiter "/"), sorted by name. When the first page does not hold
// them all, the names after it are listed as ranges (listSplits) at once.
func (s *Store) Search(ctx context.Context, prefix string) ([]zmap.Entry, error) {
	if prefix != "" {
		if err := checkKey(prefix); err != nil {
			return nil, err
		}
	}
	lp := s.listPrefix(prefix)
	l := &listing{seen: map[string]int{}}
	last, more, err := s.listRange(ctx, prefix, lp, "", "", true, l)
	if err != nil {
		return nil, err
	}
	if more {
		// Ranges (lo, hi] after the first page, the last one open.
		var bounds []string
		for _, b := range listSplits {
			if b > last {
				bounds = append(bounds, b)
			}
		}
		lo := last
		ranges := make([][2]string, 0, len(bounds)+1)
		for _, b := range bounds {
			ranges = append(ranges, [2]string{lo, b})
			lo = b
		}
		ranges = append(ranges, [2]string{lo, ""})
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		sem := make(chan struct{}, listers)
		var wg sync.WaitGroup
		var mu sync.Mutex
		var first error
		for _, r := range ranges {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer func() { <-sem; wg.Done() }()
				if _, _, err := s.listRange(ctx, prefix, lp, r[0], r[1], false, l); err != nil {
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
}

func (l *listing) add(e zmap.Entry) {
	if strings.Contains(e.Name, "/") || !zmap.ValidKey(e.Name) {
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

// listRange lists the names in (after, upTo] ("" for no bound) under lp
// into l. With onePage it stops after the first page and returns the
// last name on it and whether more follow.
func (s *Store) listRange(ctx context.Context, prefix, lp, after, upTo string, onePage bool, l *listing) (last string, more bool, err error) {
	in := &s3.ListObjectsV2Input{
		Bucket:    aws.String(s.loc.Bucket),
		Prefix:    aws.String(lp),
		Delimiter: aws.String("/"),
		MaxKeys:   aws.Int32(listPageSize),
	}
	if after != "" {
		in.StartAfter = aws.String(lp + after)
	}
	pager := s3.NewListObjectsV2Paginator(s.client, in)
	for pager.HasMorePages() {
		pctx := withLastAnswer(ctx)
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
				l.add(zmap.Entry{Name: name, Size: aws.ToInt64(o.Size), ModTime: modTime(o.LastModified)})
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
