package tunnelserver

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// serviceMetrics are the write service's Prometheus metrics, served on
// GET /metrics without a token (they hold counts and table names, no
// data), so that a scraper needs no secret.
type serviceMetrics struct {
	reg     *prometheus.Registry
	http    http.Handler // serves reg
	seconds *prometheus.HistogramVec
	rows    *prometheus.CounterVec
	bytes   *prometheus.CounterVec
	refused *prometheus.CounterVec
}

func newServiceMetrics() *serviceMetrics {
	m := &serviceMetrics{
		reg: prometheus.NewRegistry(),
		seconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "lakepipe_tunnel_flush_seconds", Help: "Time from a flush request to its answer (rows visible), for flushes that wrote.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 16)}, []string{"table"}),
		rows:    prometheus.NewCounterVec(prometheus.CounterOpts{Name: "lakepipe_tunnel_rows_total", Help: "Rows acknowledged by flushes (a repeated flush id is acknowledged again, without writing)."}, []string{"table"}),
		bytes:   prometheus.NewCounterVec(prometheus.CounterOpts{Name: "lakepipe_tunnel_bytes_total", Help: "Flush bytes received (as sent, before decompression)."}, []string{"table"}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "lakepipe_tunnel_refused_total", Help: "Requests answered with an error, by HTTP status and error code."}, []string{"status", "code"}),
	}
	m.http = promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
	m.reg.MustRegister(m.seconds, m.rows, m.bytes, m.refused,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

func (m *serviceMetrics) flushed(table string, rows, bytes int64, d time.Duration) {
	m.seconds.WithLabelValues(table).Observe(d.Seconds())
	m.rows.WithLabelValues(table).Add(float64(rows))
	m.bytes.WithLabelValues(table).Add(float64(bytes))
}
