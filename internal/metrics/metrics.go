// Package metrics serves a mount's counters to Prometheus, and its health
// to probes: /metrics, /healthz and /readyz on the address of
// --metrics-addr.
//
// The counters are those of .nczarrfs/stats, read from the same
// stats.Snapshot at each scrape: Collector walks the snapshot's fields by
// their JSON names, so a counter added to internal/stats shows in both
// places without a change here.
package metrics

import (
	"reflect"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/nczarrfs/nczarrfs/internal/stats"
)

// Namespace starts every metric's name.
const Namespace = "nczarrfs"

// gauges are the snapshot fields (part_name, by JSON name) that are
// levels rather than counts: exposed without the _total of a counter.
var gauges = map[string]bool{"store_in_flight": true, "cache_entries": true, "cache_bytes": true, "cache_budget": true}

// help describes the fields a scraper most often reads; the others are
// described by where they come from.
var help = map[string]string{
	"store_objects":          "Objects fetched from the store (get and read_at requests).",
	"store_bytes":            "Bytes fetched from the store (get and read_at requests).",
	"store_in_flight":        "Store requests under way.",
	"cache_hits":             "Chunk cache lookups that found the chunk.",
	"cache_misses":           "Chunk cache lookups that had to load the chunk.",
	"cache_evictions":        "Chunks dropped from the cache to make room.",
	"cache_decoded_bytes":    "Bytes of decoded chunks loaded into the cache.",
	"cache_load_seconds":     "Time chunk loads took: fetching from the store and decoding.",
	"cache_read_ahead_loads": "Chunk loads that read-ahead started.",
	"cache_read_ahead_hits":  "Read-ahead loads that a read then found in the cache.",
	"cache_entries":          "Chunks in the cache.",
	"cache_bytes":            "Bytes the cache's chunks take.",
	"cache_budget":           "The most bytes the cache may take (--cache-size).",
	"disk_cache_hits":        "Store reads that --cache-dir served.",
	"disk_cache_misses":      "Store reads that --cache-dir sent on to the store.",
	"disk_cache_written":     "Objects --cache-dir kept.",
	"kernel_lookups":         "LOOKUP requests of the kernel that the daemon answered.",
	"kernel_opendirs":        "OPENDIR requests of the kernel that the daemon answered.",
	"kernel_readdirs":        "Folder listings the daemon gave the kernel (none when the kernel's cache of the folder answered).",
	"kernel_xattrs":          "GETXATTR and LISTXATTR requests of the kernel that the daemon answered.",
	"disk_cache_checked":     "Objects whose ETag --cache-dir asked of the store (HEAD): no kept listing held it.",
}

// Collector is a prometheus.Collector of one mount's stats.
type Collector struct {
	mount *stats.Mount
}

// NewCollector returns a Collector of m.
func NewCollector(m *stats.Mount) *Collector { return &Collector{mount: m} }

// Describe sends nothing: the metrics follow the snapshot's fields, so
// the collector is unchecked.
func (c *Collector) Describe(chan<- *prometheus.Desc) {}

var (
	requestsDesc = prometheus.NewDesc(Namespace+"_store_requests_total",
		"Store requests by kind (the op of .nczarrfs/stats) and outcome (ok, or error: not-found answers are ok).",
		[]string{"op", "outcome"}, nil)
	requestBytesDesc = prometheus.NewDesc(Namespace+"_store_request_bytes_total",
		"Bytes the store's requests returned, by kind.", []string{"op"}, nil)
	requestEntriesDesc = prometheus.NewDesc(Namespace+"_store_request_entries_total",
		"Entries the store's listings returned, by kind.", []string{"op"}, nil)
	latencyDesc = prometheus.NewDesc(Namespace+"_store_request_duration_seconds",
		"How long store requests took, retries included, by kind.", []string{"op"}, nil)
	answeredDesc = prometheus.NewDesc(Namespace+"_store_last_answer_timestamp_seconds",
		"When a store request last ended without an error (Unix time); 0 if none has.", nil, nil)
	errorsDesc = prometheus.NewDesc(Namespace+"_errors_total",
		"Failures returned to readers of the mount, by kind (the errors of .nczarrfs/stats).", []string{"kind"}, nil)
)

// Collect sends the mount's counters as they are now.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	snap := c.mount.Snapshot()
	if snap.Store != nil {
		c.collectStore(ch, snap.Store)
	}
	if snap.Cache != nil {
		collectFields(ch, "cache", reflect.ValueOf(*snap.Cache))
	}
	if snap.Disk != nil {
		collectFields(ch, "disk_cache", reflect.ValueOf(*snap.Disk))
	}
	collectFields(ch, "kernel", reflect.ValueOf(snap.Kernel))
	for kind, n := range snap.Errors {
		ch <- prometheus.MustNewConstMetric(errorsDesc, prometheus.CounterValue, float64(n), kind)
	}
}

func (c *Collector) collectStore(ch chan<- prometheus.Metric, st *stats.StoreSnapshot) {
	v := reflect.ValueOf(*st)
	opType := reflect.TypeFor[stats.OpSnapshot]()
	for i := range v.NumField() {
		f, name := v.Field(i), jsonName(v.Type().Field(i))
		if name == "" || f.Type() != opType {
			continue
		}
		o := f.Interface().(stats.OpSnapshot)
		ch <- prometheus.MustNewConstMetric(requestsDesc, prometheus.CounterValue, float64(o.Requests-o.Errors), name, "ok")
		ch <- prometheus.MustNewConstMetric(requestsDesc, prometheus.CounterValue, float64(o.Errors), name, "error")
		ch <- prometheus.MustNewConstMetric(requestBytesDesc, prometheus.CounterValue, float64(o.Bytes), name)
		ch <- prometheus.MustNewConstMetric(requestEntriesDesc, prometheus.CounterValue, float64(o.Entries), name)
	}
	collectFields(ch, "store", v)
	if s := c.mount.Store; s != nil {
		for op, h := range s.Latency() {
			buckets := make(map[float64]uint64, len(h.Cumulative))
			for i, n := range h.Cumulative {
				buckets[stats.LatencyBounds[i]] = n
			}
			ch <- prometheus.MustNewConstHistogram(latencyDesc, h.Count, h.Sum.Seconds(), buckets, op)
		}
		var answered float64
		if t := s.Health().Answered; !t.IsZero() {
			answered = float64(t.UnixNano()) / float64(time.Second)
		}
		ch <- prometheus.MustNewConstMetric(answeredDesc, prometheus.GaugeValue, answered)
	}
}

// collectFields sends the numbers among v's fields as nczarrfs_PART_NAME
// (gauges) or nczarrfs_PART_NAME_total (counters), NAME being the field's
// JSON name; a map of numbers becomes one metric with a "kind" label, and
// a struct (or a non-nil pointer to one) is walked as part PART_NAME.
// stats.OpSnapshot fields are left to collectStore; strings are left out.
func collectFields(ch chan<- prometheus.Metric, part string, v reflect.Value) {
	for i := range v.NumField() {
		f, name := v.Field(i), jsonName(v.Type().Field(i))
		if name == "" || f.Type() == reflect.TypeFor[stats.OpSnapshot]() {
			continue
		}
		key := part + "_" + name
		if f.Kind() == reflect.Pointer && !f.IsNil() {
			f = f.Elem()
		}
		if f.Kind() == reflect.Struct {
			collectFields(ch, key, f)
			continue
		}
		valueType, metric := prometheus.CounterValue, Namespace+"_"+key+"_total"
		if gauges[key] {
			valueType, metric = prometheus.GaugeValue, Namespace+"_"+key
		}
		h := help[key]
		if h == "" {
			h = "The " + name + " field of " + part + " in .nczarrfs/stats."
		}
		switch f.Kind() {
		case reflect.Int, reflect.Int64, reflect.Int32, reflect.Uint64, reflect.Float64:
			var x float64
			if f.CanInt() {
				x = float64(f.Int())
			} else if f.CanUint() {
				x = float64(f.Uint())
			} else {
				x = f.Float()
			}
			ch <- prometheus.MustNewConstMetric(prometheus.NewDesc(metric, h, nil, nil), valueType, x)
		case reflect.Map:
			if f.Type().Key().Kind() != reflect.String || !f.Type().Elem().ConvertibleTo(reflect.TypeFor[float64]()) {
				continue
			}
			desc := prometheus.NewDesc(metric, h, []string{"kind"}, nil)
			for it := f.MapRange(); it.Next(); {
				ch <- prometheus.MustNewConstMetric(desc, valueType, it.Value().Convert(reflect.TypeFor[float64]()).Float(), it.Key().String())
			}
		}
	}
}

// jsonName is the name of field f in the snapshot's JSON, "" if it has none.
func jsonName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	if name == "-" || !f.IsExported() {
		return ""
	}
	if name == "" {
		return strings.ToLower(f.Name)
	}
	return name
}
