package metrics

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/nczarrfs/nczarrfs/cache"
	"github.com/nczarrfs/nczarrfs/internal/stats"
	"github.com/nczarrfs/nczarrfs/zmap"
	"github.com/nczarrfs/nczarrfs/zmap/diskcache"
	"github.com/nczarrfs/nczarrfs/zmap/file"
)

// busyMount is a mount whose store, cache and error log have all counted
// something: requests of every kind, a failure, hits and misses.
func busyMount(t *testing.T) *stats.Mount {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "v"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string]string{"v/.zarray": "{}", "v/0": "0123456789", "v/1": "abc"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	fs, err := file.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	dc, err := diskcache.New(fs, t.TempDir(), "test", diskcache.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dc.Close() })
	s := stats.CountStore(dc)
	c := cache.New(1 << 20)
	ctx := context.Background()
	for _, key := range []string{"v/0", "v/1", "v/0", "v/missing"} {
		c.Get(ctx, key, func(ctx context.Context) ([]byte, error) { return s.Get(ctx, key) })
	}
	buf := make([]byte, 4)
	s.ReadAt(ctx, "v/0", buf, 2)
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	s.ReadAt(cancelled, "v/.zarray", buf, 0) // an error: not in the disk cache, and the context is done
	s.Size(ctx, "v/1")
	s.Stat(ctx, "v/1")
	s.Search(ctx, "v")
	s.Get(ctx, "v/0") // from the disk cache
	m := &stats.Mount{Source: "file:///x", Store: s, Cache: c, Disk: dc}
	m.Errors().Add(stats.Error{Kind: "corrupt"})
	m.Errors().Count("interrupted")
	m.Errors().Count("interrupted")
	return m
}

// gather scrapes c and returns each sample as "name{label=value,...}"
// (labels sorted) -> value; histograms as their _count and _sum.
func gather(t *testing.T, c prometheus.Collector) map[string]float64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			sort.Strings(labels)
			name := f.GetName() + "{" + strings.Join(labels, ",") + "}"
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				got[name] = m.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				got[name] = m.GetGauge().GetValue()
			case dto.MetricType_HISTOGRAM:
				base := strings.TrimSuffix(name, "{"+strings.Join(labels, ",")+"}")
				got[base+"_count{"+strings.Join(labels, ",")+"}"] = float64(m.GetHistogram().GetSampleCount())
				got[base+"_sum{"+strings.Join(labels, ",")+"}"] = m.GetHistogram().GetSampleSum()
			}
		}
	}
	return got
}

// fromStats is what the metrics must say, derived from the JSON of
// .nczarrfs/stats alone: every number in it, by the naming rules of
// the package doc.
func fromStats(t *testing.T, js []byte) map[string]float64 {
	t.Helper()
	var snap map[string]any
	if err := json.Unmarshal(js, &snap); err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{}
	name := func(part, field string) string {
		if gauges[part+"_"+field] {
			return "nczarrfs_" + part + "_" + field
		}
		return "nczarrfs_" + part + "_" + field + "_total"
	}
	for _, part := range []string{"store", "cache", "disk_cache", "kernel"} {
		fields, _ := snap[part].(map[string]any)
		for field, v := range fields {
			switch v := v.(type) {
			case float64:
				want[name(part, field)+"{}"] = v
			case map[string]any:
				if _, op := v["requests"]; !op { // a struct of another kind: see TestNestedFields
					for k, x := range v {
						want[name(part+"_"+field, k)+"{}"] = x.(float64)
					}
					continue
				}
				// One kind of request.
				n := func(k string) float64 { x, _ := v[k].(float64); return x }
				want["nczarrfs_store_requests_total{op="+field+",outcome=ok}"] = n("requests") - n("errors")
				want["nczarrfs_store_requests_total{op="+field+",outcome=error}"] = n("errors")
				want["nczarrfs_store_request_bytes_total{op="+field+"}"] = n("bytes")
				want["nczarrfs_store_request_entries_total{op="+field+"}"] = n("entries")
				if field != "list_flat" { // pages listed at once: no one latency
					want["nczarrfs_store_request_duration_seconds_count{op="+field+"}"] = n("requests")
				}
			default:
				t.Fatalf("stats field %s.%s is a %T", part, field, v)
			}
		}
	}
	for kind, n := range snap["errors"].(map[string]any) {
		want["nczarrfs_errors_total{kind="+kind+"}"] = n.(float64)
	}
	return want
}

// TestMetricsAreTheStats checks that every number of .nczarrfs/stats is
// a metric of the same value, and that the metrics have nothing more
// than the stats but the latency sums and the last answer's time.
func TestMetricsAreTheStats(t *testing.T) {
	m := busyMount(t)
	got := gather(t, NewCollector(m))
	want := fromStats(t, m.JSON())
	if len(want) < 30 {
		t.Fatalf("only %d numbers in the stats:\n%s", len(want), m.JSON())
	}
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("%s = %v (present %v), want %v as in .nczarrfs/stats", k, g, ok, v)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok && !strings.HasPrefix(k, "nczarrfs_store_request_duration_seconds_sum{") &&
			!strings.HasPrefix(k, "nczarrfs_store_last_answer_timestamp_seconds{") {
			t.Errorf("metric %s is not in .nczarrfs/stats", k)
		}
	}
	if got["nczarrfs_store_last_answer_timestamp_seconds{}"] < float64(time.Now().Add(-time.Minute).Unix()) {
		t.Errorf("last answer at %v, want within the last minute", got["nczarrfs_store_last_answer_timestamp_seconds{}"])
	}
	// The figures the tests above rely on are not all zero.
	for _, k := range []string{"nczarrfs_cache_hits_total{}", "nczarrfs_cache_misses_total{}", "nczarrfs_store_objects_total{}",
		"nczarrfs_store_requests_total{op=read_at,outcome=error}", "nczarrfs_store_request_entries_total{op=search}", "nczarrfs_disk_cache_hits_total{}", "nczarrfs_disk_cache_misses_total{}", "nczarrfs_errors_total{kind=interrupted}"} {
		if got[k] == 0 {
			t.Errorf("%s = 0", k)
		}
	}
}

// blockingStore is a store whose Get waits for release.
type blockingStore struct {
	zmap.Store
	release chan struct{}
}

func (b blockingStore) Get(ctx context.Context, key string) ([]byte, error) {
	<-b.release
	return nil, zmap.ErrNotFound
}

func TestReady(t *testing.T) {
	release := make(chan struct{})
	s := stats.CountStore(blockingStore{release: release})
	m := &stats.Mount{Store: s}
	now := time.Now()
	if err := Ready(m, false, now); err == nil || err.Error() != "not mounted" {
		t.Errorf("Ready before mounting: %v", err)
	}
	if err := Ready(m, true, now.Add(time.Hour)); err != nil {
		t.Errorf("Ready of a store never asked: %v", err)
	}
	done := make(chan struct{})
	go func() {
		s.Get(context.Background(), "k")
		close(done)
	}()
	for s.Snapshot().InFlight == 0 {
		time.Sleep(time.Millisecond)
	}
	if err := Ready(m, true, time.Now()); err != nil {
		t.Errorf("Ready while the store was asked a moment ago: %v", err)
	}
	if err := Ready(m, true, time.Now().Add(StuckAfter+time.Second)); err == nil || !strings.Contains(err.Error(), "has not answered since never") {
		t.Errorf("Ready with the store asked over a minute ago: %v", err)
	}
	close(release)
	<-done
	if err := Ready(m, true, time.Now().Add(time.Hour)); err != nil {
		t.Errorf("Ready with the store answered and idle since: %v", err)
	}
}

func TestListen(t *testing.T) {
	tests := []struct {
		addr, wantHost, wantErr string
	}{
		{":0", "127.0.0.1", ""},
		{"127.0.0.1:0", "127.0.0.1", ""},
		{"localhost:0", "127.0.0.1", ""},
		{"9100", "", `"9100" is not HOST:PORT`},
		{"", "", `"" is not HOST:PORT`},
		{"127.0.0.1:http", "", `port "http" is not a number`},
		{"127.0.0.1:70000", "", `port "70000" is not a number`},
		{"127.0.0.1:-1", "", `port "-1" is not a number`},
		{"no-such-host.invalid:0", "", "listening on no-such-host.invalid:0"},
	}
	for _, tt := range tests {
		ln, err := Listen(tt.addr)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("Listen(%q): %v, want an error with %q", tt.addr, err, tt.wantErr)
			}
			if ln != nil {
				ln.Close()
			}
			continue
		}
		if err != nil {
			t.Errorf("Listen(%q): %v", tt.addr, err)
			continue
		}
		host, _, _ := net.SplitHostPort(ln.Addr().String())
		if host != tt.wantHost {
			t.Errorf("Listen(%q) listens on %s, want host %s", tt.addr, ln.Addr(), tt.wantHost)
		}
		ln.Close()
	}
}

// TestListenUnix listens on a Unix socket (the CSI plugin reads each
// volume's metrics there): served, readable by the user only, and a
// socket file left by a killed daemon is replaced.
func TestListenUnix(t *testing.T) {
	dir, err := os.MkdirTemp("", "metrics-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "m.sock")
	for i := 0; i < 2; i++ {
		ln, err := Listen("unix:" + path)
		if err != nil {
			t.Fatalf("Listen(unix:%s), time %d: %v", path, i+1, err)
		}
		if got, want := URL(ln), "unix:"+path; got != want {
			t.Errorf("URL = %q, want %q", got, want)
		}
		if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("socket mode %v (%v), want 0600", fi.Mode(), err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		go Serve(ctx, ln, Handler(busyMount(t), func() bool { return true }), slog.New(slog.DiscardHandler))
		client := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", path)
		}}}
		resp, err := client.Get("http://volume/metrics")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(body), "nczarrfs_store_objects_total") {
			t.Errorf("GET /metrics on the socket: %d %.200q", resp.StatusCode, body)
		}
		client.CloseIdleConnections()
		cancel()
		// The first time round, leave the socket file as a killed daemon
		// does; Listen replaces it the second time.
		ln.(*net.UnixListener).SetUnlinkOnClose(false)
		ln.Close()
	}
	if _, err := Listen("unix:"); err == nil {
		t.Errorf("Listen(unix:) with no path: no error")
	}
}

func TestHandler(t *testing.T) {
	m := busyMount(t)
	mounted := false
	srv := httptest.NewServer(Handler(m, func() bool { return mounted }))
	defer srv.Close()
	get := func(path string) (int, string) {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get("/healthz"); code != 200 || body != "ok\n" {
		t.Errorf("/healthz: %d %q", code, body)
	}
	if code, body := get("/readyz"); code != 503 || body != "not mounted\n" {
		t.Errorf("/readyz before mounting: %d %q", code, body)
	}
	mounted = true
	if code, body := get("/readyz"); code != 200 {
		t.Errorf("/readyz once mounted: %d %q", code, body)
	}
	code, body := get("/metrics")
	if code != 200 {
		t.Fatalf("/metrics: %d", code)
	}
	for _, want := range []string{"\nnczarrfs_cache_hits_total 1\n", "\nnczarrfs_store_objects_total ", "\ngo_goroutines ", "\nnczarrfs_process_resident_memory_bytes ",
		`nczarrfs_store_request_duration_seconds_bucket{op="get",le="0.001"} `} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics has no %q", want)
		}
	}
	if code, _ := get("/other"); code != 404 {
		t.Errorf("/other: %d, want 404", code)
	}
}

// TestNestedFields checks the rule for what internal/stats may add later:
// numbers, maps of numbers and nested structs, in any part, flow through.
func TestNestedFields(t *testing.T) {
	type throttle struct {
		SlowDowns int64            `json:"slow_downs"`
		ByCode    map[string]int64 `json:"by_code"`
		Waiting   int              `json:"-"`
	}
	v := struct {
		Requests int64     `json:"requests"`
		Throttle *throttle `json:"throttle"`
		Nil      *throttle `json:"nil_one"`
		Name     string    `json:"name"`
		Op       stats.OpSnapshot
	}{Requests: 3, Throttle: &throttle{SlowDowns: 2, ByCode: map[string]int64{"503": 2}}}
	ch := make(chan prometheus.Metric, 10)
	collectFields(ch, "store", reflect.ValueOf(v))
	close(ch)
	got := map[string]bool{}
	for m := range ch {
		got[m.Desc().String()] = true
	}
	for _, want := range []string{`fqName: "nczarrfs_store_requests_total"`, `fqName: "nczarrfs_store_throttle_slow_downs_total"`,
		`fqName: "nczarrfs_store_throttle_by_code_total"`} {
		found := false
		for d := range got {
			found = found || strings.Contains(d, want)
		}
		if !found {
			t.Errorf("no metric %s in %v", want, got)
		}
	}
	if len(got) != 3 {
		t.Errorf("%d metrics, want 3: %v", len(got), got)
	}
}
