// Package metrics exposes lakepipe's Prometheus metrics: per pipe (files,
// rows, bytes, errors, backlog, Kafka lag), per dynamic table (refresh
// duration and mode), the worker's load, and the Temporal SDK's own metrics.
package metrics

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/lakepipe/lakepipe/internal/jobs"
)

// Worker holds a worker's metrics: per pipe, per dynamic table, its own
// load, and the Temporal SDK's (see SDKHandler). A nil *Worker records
// nothing.
type Worker struct {
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
	kReads   *prometheus.CounterVec
	batch    *prometheus.HistogramVec
	arrival  *prometheus.HistogramVec
	refresh  *prometheus.HistogramVec
	refreshN *prometheus.CounterVec
	running  *prometheus.GaugeVec
	polls    prometheus.Histogram
	sdk      *SDKHandler
}

// New registers the metrics on a registry of their own.
func New() *Worker {
	labels := []string{"pipe"}
	p := &Worker{
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
		kReads: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "lakepipe_pipe_kafka_batches_total",
			Help: "Kafka batches by how their read began: continued (where the last batch ended, with what was fetched ahead), reassigned or new (fetching again)."}, []string{"pipe", "read"}),
		batch: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "lakepipe_pipe_kafka_batch_seconds", Help: "Time to load one Kafka batch.", Buckets: prometheus.ExponentialBuckets(0.01, 2, 14)}, labels),
	}
	p.arrival = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "lakepipe_pipe_arrival_to_visible_seconds",
		Help:    "From a file's arrival in its volume (its last-modified time) to its rows being visible in the table.",
		Buckets: prometheus.ExponentialBuckets(0.1, 2, 16)}, labels)
	p.refresh = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "lakepipe_dynamic_refresh_seconds", Help: "Time of one dynamic-table refresh, by mode (INCREMENTAL, FULL).",
		Buckets: prometheus.ExponentialBuckets(0.01, 2, 16)}, []string{"dynamic_table", "mode"})
	p.refreshN = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "lakepipe_dynamic_refresh_total", Help: "Dynamic-table refreshes, by mode and state (SUCCEED, FAILED)."},
		[]string{"dynamic_table", "mode", "state"})
	p.running = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "lakepipe_worker_activities_running", Help: "Activities this worker is running now, by activity type: its load."}, []string{"activity"})
	// Worker-wide, not per pipe: a thousand pipes would make it fourteen
	// thousand series.
	p.polls = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "lakepipe_pipe_poll_lateness_seconds",
		Help:    "Polls of idle pipes (AwaitFiles' listings, AwaitRecords' end-offset reads), by how long after they were due they finished.",
		Buckets: prometheus.ExponentialBuckets(0.005, 2, 12)})
	p.sdk = NewSDKHandler()
	p.reg.MustRegister(p.files, p.rows, p.rejected, p.bytes, p.errors, p.backlog, p.lag, p.seconds, p.records, p.kLag, p.kReads, p.batch,
		p.arrival, p.refresh, p.refreshN, p.running, p.polls, p.sdk,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return p
}

// SDK is the handler to give the Temporal client, so that the SDK's
// metrics (task latencies, slots, polls, …) are served with lakepipe's.
func (p *Worker) SDK() *SDKHandler { return p.sdk }

// Refresh records one dynamic-table refresh.
func (p *Worker) Refresh(schema, name, mode, state string, d time.Duration) {
	if p == nil {
		return
	}
	n := schema + "." + name
	p.refreshN.WithLabelValues(n, mode, state).Inc()
	p.refresh.WithLabelValues(n, mode).Observe(d.Seconds())
}

// ActivityStarted counts an activity in flight until the returned func is
// called.
func (p *Worker) ActivityStarted(activity string) (done func()) {
	if p == nil {
		return func() {}
	}
	g := p.running.WithLabelValues(activity)
	g.Inc()
	return g.Dec
}

func name(p jobs.PipeParams) string { return p.Schema + "." + p.Name }

// File records one handled file: f as listed, d the time its load took.
func (p *Worker) File(pp jobs.PipeParams, r jobs.FileResult, f jobs.FileRef, d time.Duration) {
	if p == nil {
		return
	}
	n := name(pp)
	size := f.Size
	if r.Status.Loaded() && !f.Modified.IsZero() {
		p.arrival.WithLabelValues(n).Observe(max(time.Since(f.Modified), 0).Seconds())
	}
	p.files.WithLabelValues(n, string(r.Status)).Inc()
	p.rows.WithLabelValues(n).Add(float64(r.Rows))
	p.rejected.WithLabelValues(n).Add(float64(r.Rejected))
	if r.Status.Loaded() {
		p.bytes.WithLabelValues(n).Add(float64(size))
	}
	p.seconds.WithLabelValues(n).Observe(d.Seconds())
}

// Poll records one listing of an idle pipe, late by how long after it
// was due it finished.
func (p *Worker) Poll(late time.Duration) {
	if p != nil {
		p.polls.Observe(max(late, 0).Seconds())
	}
}

// Error records a failed attempt.
func (p *Worker) Error(pp jobs.PipeParams) {
	if p != nil {
		p.errors.WithLabelValues(name(pp)).Inc()
	}
}

// Backlog records the files waiting at a listing and the age of the
// oldest (zero time when none waits).
func (p *Worker) Backlog(pp jobs.PipeParams, n int, oldest time.Time) {
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
func (p *Worker) KafkaBatch(pp jobs.PipeParams, r jobs.KafkaBatchResult, d time.Duration) {
	if p == nil {
		return
	}
	n := name(pp)
	p.records.WithLabelValues(n).Add(float64(r.Records))
	if r.Read != "" {
		p.kReads.WithLabelValues(n, r.Read).Inc()
	}
	p.rows.WithLabelValues(n).Add(float64(r.Rows))
	p.rejected.WithLabelValues(n).Add(float64(r.Rejected))
	p.kLag.WithLabelValues(n).Set(float64(r.Lag))
	p.batch.WithLabelValues(n).Observe(d.Seconds())
}

// Handler serves /metrics.
func (p *Worker) Handler() http.Handler {
	return promhttp.HandlerFor(p.reg, promhttp.HandlerOpts{})
}
