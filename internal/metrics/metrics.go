// Package metrics exposes the worker's Prometheus metrics: files, rows,
// bytes, errors and backlog per pipe.
package metrics

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/lakepipe/lakepipe/workflows"
)

// Pipes holds the per-pipe metrics. A nil *Pipes records nothing.
type Pipes struct {
	reg      *prometheus.Registry
	files    *prometheus.CounterVec
	rows     *prometheus.CounterVec
	rejected *prometheus.CounterVec
	bytes    *prometheus.CounterVec
	errors   *prometheus.CounterVec
	backlog  *prometheus.GaugeVec
	lag      *prometheus.GaugeVec
	seconds  *prometheus.HistogramVec
	records  *prometheus.CounterVec
	kLag     *prometheus.GaugeVec
	batch    *prometheus.HistogramVec
}

// New registers the metrics on a registry of their own.
func New() *Pipes {
	labels := []string{"pipe"}
	p := &Pipes{
		reg:      prometheus.NewRegistry(),
		files:    prometheus.NewCounterVec(prometheus.CounterOpts{Name: "lakepipe_pipe_files_total", Help: "Files handled by pipes, by status."}, []string{"pipe", "status"}),
		rows:     prometheus.NewCounterVec(prometheus.CounterOpts{Name: "lakepipe_pipe_rows_total", Help: "Rows loaded by pipes."}, labels),
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "lakepipe_pipe_rows_rejected_total", Help: "Rows pipes could not load."}, labels),
		bytes:    prometheus.NewCounterVec(prometheus.CounterOpts{Name: "lakepipe_pipe_bytes_total", Help: "Bytes of the files pipes loaded."}, labels),
		errors:   prometheus.NewCounterVec(prometheus.CounterOpts{Name: "lakepipe_pipe_errors_total", Help: "Load attempts that failed and will be retried."}, labels),
		backlog:  prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "lakepipe_pipe_backlog_files", Help: "Files waiting to be loaded at the last listing."}, labels),
		lag:      prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "lakepipe_pipe_lag_seconds", Help: "Age of the oldest file waiting to be loaded, at the last listing (0 when none waits)."}, labels),
		seconds:  prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "lakepipe_pipe_file_seconds", Help: "Time to load one file.", Buckets: prometheus.ExponentialBuckets(0.01, 2, 14)}, labels),
		records:  prometheus.NewCounterVec(prometheus.CounterOpts{Name: "lakepipe_pipe_kafka_records_total", Help: "Records Kafka pipes read."}, labels),
		kLag:     prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "lakepipe_pipe_kafka_lag_records", Help: "Records waiting in the topic beyond a Kafka pipe's offsets, after its last batch."}, labels),
		batch:    prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "lakepipe_pipe_kafka_batch_seconds", Help: "Time to load one Kafka batch.", Buckets: prometheus.ExponentialBuckets(0.01, 2, 14)}, labels),
	}
	p.reg.MustRegister(p.files, p.rows, p.rejected, p.bytes, p.errors, p.backlog, p.lag, p.seconds, p.records, p.kLag, p.batch,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return p
}

func name(p workflows.PipeParams) string { return p.Schema + "." + p.Name }

// File records one handled file.
func (p *Pipes) File(pp workflows.PipeParams, r workflows.FileResult, size int64, d time.Duration) {
	if p == nil {
		return
	}
	n := name(pp)
	p.files.WithLabelValues(n, r.Status).Inc()
	p.rows.WithLabelValues(n).Add(float64(r.Rows))
	p.rejected.WithLabelValues(n).Add(float64(r.Rejected))
	if r.Status == "LOADED" || r.Status == "PARTIALLY_LOADED" {
		p.bytes.WithLabelValues(n).Add(float64(size))
	}
	p.seconds.WithLabelValues(n).Observe(d.Seconds())
}

// Error records a failed attempt.
func (p *Pipes) Error(pp workflows.PipeParams) {
	if p != nil {
		p.errors.WithLabelValues(name(pp)).Inc()
	}
}

// Backlog records the files waiting at a listing and the age of the
// oldest (zero time when none waits).
func (p *Pipes) Backlog(pp workflows.PipeParams, n int, oldest time.Time) {
	if p == nil {
		return
	}
	p.backlog.WithLabelValues(name(pp)).Set(float64(n))
	lag := 0.0
	if n > 0 && !oldest.IsZero() {
		lag = time.Since(oldest).Seconds()
	}
	p.lag.WithLabelValues(name(pp)).Set(lag)
}

// KafkaBatch records one Kafka batch.
func (p *Pipes) KafkaBatch(pp workflows.PipeParams, r workflows.KafkaBatchResult, d time.Duration) {
	if p == nil {
		return
	}
	n := name(pp)
	p.records.WithLabelValues(n).Add(float64(r.Records))
	p.rows.WithLabelValues(n).Add(float64(r.Rows))
	p.rejected.WithLabelValues(n).Add(float64(r.Rejected))
	p.kLag.WithLabelValues(n).Set(float64(r.Lag))
	p.batch.WithLabelValues(n).Observe(d.Seconds())
}

// Handler serves /metrics.
func (p *Pipes) Handler() http.Handler {
	return promhttp.HandlerFor(p.reg, promhttp.HandlerOpts{})
}
