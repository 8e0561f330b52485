package csi

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"google.golang.org/protobuf/proto"
)

// Each mount daemon serves its metrics on a Unix socket in its volume's
// state folder (--metrics-addr unix:PATH). The plugin's metrics address
// serves them all on /metrics: at each scrape it reads every published
// volume's page and adds two labels to each of its nczarrfs_ samples,
// volume_id and target (a volume may be published at several targets, one
// per pod), with nczarrfs_csi_volume_up saying which volumes answered. A
// daemon that does not answer in scrapeTimeout is left out of that
// scrape. The daemons' go_ metrics are left out; the plugin's own are
// there, unlabelled.

const scrapeTimeout = 5 * time.Second

// MetricsHandler serves the plugin's metrics and its volumes' on
// /metrics, and 200 on /healthz while the plugin answers (the liveness
// probe's).
func (d *Driver) MetricsHandler() http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{Namespace: "nczarrfs_csi"}))
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(prometheus.Gatherers{reg, prometheus.GathererFunc(d.gatherVolumes)}, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	return mux
}

// gatherVolumes reads every volume's metrics, labelled.
func (d *Driver) gatherVolumes() ([]*dto.MetricFamily, error) {
	recs, _, err := d.state.list()
	if err != nil {
		return nil, err
	}
	type page struct {
		rec      record
		families map[string]*dto.MetricFamily
	}
	pages := make([]page, 0, len(recs))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for key, rec := range recs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fams, err := scrapeSocket(d.state.socket(key, rec))
			if err != nil {
				d.log.Debug("scraping a volume's metrics", "volume", rec.VolumeID, "target", rec.Target, "err", err)
			}
			mu.Lock()
			pages = append(pages, page{rec, fams})
			mu.Unlock()
		}()
	}
	wg.Wait()
	sort.Slice(pages, func(i, j int) bool {
		if pages[i].rec.VolumeID != pages[j].rec.VolumeID {
			return pages[i].rec.VolumeID < pages[j].rec.VolumeID
		}
		return pages[i].rec.Target < pages[j].rec.Target
	})

	merged := map[string]*dto.MetricFamily{}
	up := &dto.MetricFamily{Name: proto.String("nczarrfs_csi_volume_up"), Help: proto.String("1 when the volume's mount daemon answered this scrape, else 0."), Type: dto.MetricType_GAUGE.Enum()}
	for _, p := range pages {
		labels := []*dto.LabelPair{
			{Name: proto.String("target"), Value: proto.String(p.rec.Target)},
			{Name: proto.String("volume_id"), Value: proto.String(p.rec.VolumeID)},
		}
		v := 0.0
		if p.families != nil {
			v = 1
		}
		up.Metric = append(up.Metric, &dto.Metric{Label: labels, Gauge: &dto.Gauge{Value: proto.Float64(v)}})
		for name, fam := range p.families {
			if !strings.HasPrefix(name, "nczarrfs_") || strings.HasPrefix(name, "nczarrfs_csi_") {
				continue
			}
			m := merged[name]
			if m == nil {
				m = &dto.MetricFamily{Name: fam.Name, Help: fam.Help, Type: fam.Type}
				merged[name] = m
			}
			for _, s := range fam.Metric {
				s.Label = append(s.Label, labels...)
				sort.Slice(s.Label, func(i, j int) bool { return s.Label[i].GetName() < s.Label[j].GetName() })
				m.Metric = append(m.Metric, s)
			}
		}
	}
	out := []*dto.MetricFamily{up}
	for _, m := range merged {
		out = append(out, m)
	}
	return out, nil
}

// scrapeSocket reads the metrics page served on the Unix socket path.
func scrapeSocket(path string) (map[string]*dto.MetricFamily, error) {
	client := &http.Client{
		Timeout: scrapeTimeout,
		Transport: &http.Transport{
			DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				var dialer net.Dialer
				return dialer.DialContext(ctx, "unix", path)
			},
		},
	}
	defer client.CloseIdleConnections()
	resp, err := client.Get("http://volume/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s", resp.Status)
	}
	var p expfmt.TextParser
	return p.TextToMetricFamilies(resp.Body)
}
