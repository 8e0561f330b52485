package metrics

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/nczarrfs/nczarrfs/internal/stats"
)

// StuckAfter is how long the store may be asked without answering
// before /readyz says the mount is not ready.
const StuckAfter = time.Minute

// Listen checks addr, HOST:PORT, and listens on it. An address without a
// host (":9100") listens on 127.0.0.1: the counters name the dataset and
// its keys, so they stay on the machine unless the address says
// otherwise (0.0.0.0:9100, [::]:9100, or an interface's address). Port 0
// picks a free port; the listener's Addr says which. unix:PATH listens on
// a Unix socket, readable by the user only (the CSI plugin reads each
// volume's metrics there); a socket file left there is replaced.
func Listen(addr string) (net.Listener, error) {
	if path, ok := strings.CutPrefix(addr, "unix:"); ok {
		return listenUnix(path)
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("%q is not HOST:PORT (try 127.0.0.1:9100)", addr)
	}
	if n, err := strconv.ParseUint(port, 10, 16); err != nil || strconv.FormatUint(n, 10) != port {
		return nil, fmt.Errorf("%q: port %q is not a number from 0 to 65535 (try 127.0.0.1:9100)", addr, port)
	}
	if host == "" {
		host = "127.0.0.1"
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(host, port))
	if err != nil {
		return nil, fmt.Errorf("listening on %s: %w", addr, err)
	}
	return ln, nil
}

func listenUnix(path string) (net.Listener, error) {
	if path == "" {
		return nil, errors.New("unix: needs a socket path (unix:/run/nczarrfs/metrics.sock)")
	}
	if fi, err := os.Lstat(path); err == nil && fi.Mode()&os.ModeSocket != 0 {
		os.Remove(path)
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("listening on unix:%s: %w", path, err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("listening on unix:%s: %w", path, err)
	}
	return ln, nil
}

// URL is where ln serves /metrics: http://HOST:PORT/metrics, or
// unix:PATH for a Unix socket.
func URL(ln net.Listener) string {
	if ln.Addr().Network() == "unix" {
		return "unix:" + ln.Addr().String()
	}
	return "http://" + ln.Addr().String() + "/metrics"
}

// Handler serves m's metrics on /metrics (with the Go runtime's and the
// process's), 200 on /healthz while the process answers, and on /readyz
// 200 once mounted() and while the store answers (Ready), else 503 and
// the reason.
func Handler(m *stats.Mount, mounted func() bool) http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(NewCollector(m),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{Namespace: Namespace}))
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		if err := Ready(m, mounted(), time.Now()); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	return mux
}

// Ready returns why a mount is not ready at now, or nil: it is ready once
// mounted, unless its store has been asked something for longer than
// StuckAfter with no good answer since (a store never asked, or idle
// since its last answer, is ready).
func Ready(m *stats.Mount, mounted bool, now time.Time) error {
	if !mounted {
		return errors.New("not mounted")
	}
	if m.Store == nil {
		return nil
	}
	if h := m.Store.Health(); h.Stuck(now, StuckAfter) {
		last := "never"
		if !h.Answered.IsZero() {
			last = h.Answered.UTC().Format(time.RFC3339)
		}
		return fmt.Errorf("the store has not answered since %s (asked at %s)", last, h.Waiting.UTC().Format(time.RFC3339))
	}
	return nil
}

// Serve serves h on ln until ctx is done, then shuts the server down.
// Errors after the start are logged.
func Serve(ctx context.Context, ln net.Listener, h http.Handler, log *slog.Logger) {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		shut, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		srv.Shutdown(shut)
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) && ctx.Err() == nil {
		log.Error("metrics server stopped", "addr", ln.Addr().String(), "err", err)
	}
}
