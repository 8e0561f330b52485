package stats

import (
	"sync/atomic"
	"time"
)

// LatencyBounds are the upper bounds, in seconds, of the latency
// histograms' buckets: from a local file's microseconds to an S3
// request's retries under a 30 s timeout.
var LatencyBounds = [...]float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}

// histogram counts durations into LatencyBounds' buckets, lock-free.
type histogram struct {
	// buckets[i] counts the durations in (LatencyBounds[i-1],
	// LatencyBounds[i]]; the last one those above every bound.
	buckets [len(LatencyBounds) + 1]atomic.Uint64
	sumNs   atomic.Int64
}

func (h *histogram) observe(d time.Duration) {
	s := d.Seconds()
	i := 0
	for i < len(LatencyBounds) && s > LatencyBounds[i] {
		i++
	}
	h.buckets[i].Add(1)
	h.sumNs.Add(int64(d))
}

// Histogram is a snapshot of a latency histogram, in the form Prometheus
// takes: cumulative counts by upper bound.
type Histogram struct {
	// Cumulative[i] counts the durations of at most LatencyBounds[i]
	// seconds.
	Cumulative []uint64
	Count      uint64
	Sum        time.Duration
}

func (h *histogram) snapshot() Histogram {
	s := Histogram{Cumulative: make([]uint64, len(LatencyBounds)), Sum: time.Duration(h.sumNs.Load())}
	for i := range h.buckets {
		s.Count += h.buckets[i].Load()
		if i < len(LatencyBounds) {
			s.Cumulative[i] = s.Count
		}
	}
	return s
}
