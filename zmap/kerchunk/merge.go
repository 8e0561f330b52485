package kerchunk

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/nczarrfs/nczarrfs/zmap"
)

// merger gathers the ranged reads of one object that arrive within a
// window and reads neighbours (gaps of at most maxGap, at most maxBlock
// bytes in all) with one request, as fsspec's merge_offset_ranges does
// for cat_ranges: a variable whose chunks lie one after the other in a
// netCDF file reads with a request or two, not one per chunk.
type merger struct {
	window   time.Duration
	maxGap   int64
	maxBlock int64

	mu      sync.Mutex
	pending map[string]*batch // GUARDED_BY(mu): by URL
}

// batch is the reads of one object gathered in one window.
type batch struct {
	st   zmap.Store
	key  string
	ctx  context.Context // the first caller's values, not its cancellation
	reqs []*rangeReq
}

type rangeReq struct {
	off, n int64
	done   chan struct{}
	data   []byte
	err    error
}

func newMerger(window time.Duration, maxGap, maxBlock int64) *merger {
	return &merger{window: window, maxGap: maxGap, maxBlock: maxBlock, pending: map[string]*batch{}}
}

// read returns n bytes of key in st at off, read alone or with
// neighbours of the same URL.
func (m *merger) read(ctx context.Context, st zmap.Store, key, url string, off, n int64) ([]byte, error) {
	if n >= m.maxBlock {
		return readRange(ctx, st, key, off, n)
	}
	req := &rangeReq{off: off, n: n, done: make(chan struct{})}
	m.mu.Lock()
	b := m.pending[url]
	if b == nil || b.st != st || b.key != key {
		b = &batch{st: st, key: key, ctx: context.WithoutCancel(ctx)}
		m.pending[url] = b
		time.AfterFunc(m.window, func() { m.flush(url, b) })
	}
	b.reqs = append(b.reqs, req)
	m.mu.Unlock()
	select {
	case <-req.done:
		return req.data, req.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func readRange(ctx context.Context, st zmap.Store, key string, off, n int64) ([]byte, error) {
	data := make([]byte, n)
	if _, err := st.ReadAt(ctx, key, data, off); err != nil {
		return nil, err
	}
	return data, nil
}

// flush reads the batch's ranges, merged.
func (m *merger) flush(url string, b *batch) {
	m.mu.Lock()
	if m.pending[url] == b {
		delete(m.pending, url)
	}
	reqs := b.reqs
	m.mu.Unlock()
	for _, g := range m.groups(reqs) {
		go b.run(g)
	}
}

// groups sorts reqs by offset and cuts them into runs of neighbours.
func (m *merger) groups(reqs []*rangeReq) [][]*rangeReq {
	slices.SortFunc(reqs, func(a, b *rangeReq) int {
		switch {
		case a.off < b.off:
			return -1
		case a.off > b.off:
			return 1
		}
		return 0
	})
	var out [][]*rangeReq
	var start, end int64
	for i, r := range reqs {
		if i > 0 && r.off-end <= m.maxGap && max(end, r.off+r.n)-start <= m.maxBlock {
			out[len(out)-1] = append(out[len(out)-1], r)
			end = max(end, r.off+r.n)
			continue
		}
		out = append(out, []*rangeReq{r})
		start, end = r.off, r.off+r.n
	}
	return out
}

// run reads one run of neighbours with one request and hands each its
// bytes.
func (b *batch) run(g []*rangeReq) {
	start, end := g[0].off, g[0].off
	for _, r := range g {
		end = max(end, r.off+r.n)
	}
	data, err := readRange(b.ctx, b.st, b.key, start, end-start)
	for _, r := range g {
		switch {
		case err != nil && len(g) > 1:
			// One bad range (past the end of the object) fails no
			// neighbour: each is read alone.
			r.data, r.err = readRange(b.ctx, b.st, b.key, r.off, r.n)
		case err != nil:
			r.err = err
		case len(g) == 1:
			r.data = data
		default:
			r.data = slices.Clone(data[r.off-start : r.off-start+r.n])
		}
		close(r.done)
	}
}
