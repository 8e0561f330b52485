package remote

import "sync/atomic"

// Requests counts the requests a store sends, by the kinds
// .nczarrfs/stats and /metrics report (internal/stats.Kinds): GET of a
// whole object, ranged GET, HEAD and LIST. internal/stats counts the
// zmap calls of most stores, each one request; a store whose calls are
// not (a Search of a web server that cannot be listed is a HEAD per
// object it probes) counts its requests here, retries included, and
// offers them with RequestKinds, which stats then reports instead. Safe
// for concurrent use.
type Requests struct {
	get, rangedGET, head, list atomic.Int64
}

// GET, RangedGET, HEAD and LIST count one request of their kind.
func (r *Requests) GET()       { r.get.Add(1) }
func (r *Requests) RangedGET() { r.rangedGET.Add(1) }
func (r *Requests) HEAD()      { r.head.Add(1) }
func (r *Requests) LIST()      { r.list.Add(1) }

// RequestKinds returns the counts.
func (r *Requests) RequestKinds() (get, rangedGET, head, list int64) {
	return r.get.Load(), r.rangedGET.Load(), r.head.Load(), r.list.Load()
}
