package metrics

import (
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.temporal.io/sdk/client"
)

// SDKHandler is a client.MetricsHandler that keeps the Temporal SDK's
// metrics for Prometheus: counters get a _total suffix, timers become
// histograms in seconds (<name>_seconds). The SDK tags a metric with
// different key sets in different places (namespace, task_queue,
// workflow_type, activity_type, …); every series of one name is served with
// the union of its keys, the missing ones empty, as Prometheus wants one
// label set per name.
type SDKHandler struct {
	tags map[string]string
	s    *sdkSeries
}

type sdkSeries struct {
	mu     sync.Mutex
	byKey  map[string]*sdkValue
	labels map[string]map[string]bool // metric name → every tag key seen
}

type sdkKind int

const (
	sdkCounter sdkKind = iota
	sdkGauge
	sdkTimer
)

// sdkBuckets are the timers' histogram buckets, in seconds: 1 ms to ~65 s.
var sdkBuckets = prometheus.ExponentialBuckets(0.001, 2, 17)

type sdkValue struct {
	name    string
	kind    sdkKind
	tags    map[string]string
	value   float64 // counter total or gauge value
	count   uint64
	sum     float64
	buckets []uint64 // timers: observations ≤ sdkBuckets[i]
}

// NewSDKHandler returns an empty handler; Worker.SDK is the one served.
func NewSDKHandler() *SDKHandler {
	return &SDKHandler{tags: map[string]string{}, s: &sdkSeries{byKey: map[string]*sdkValue{}, labels: map[string]map[string]bool{}}}
}

// WithTags implements client.MetricsHandler.
func (h *SDKHandler) WithTags(tags map[string]string) client.MetricsHandler {
	m := maps.Clone(h.tags)
	maps.Copy(m, tags)
	return &SDKHandler{tags: m, s: h.s}
}

func (h *SDKHandler) value(name string, kind sdkKind) *sdkValue {
	switch kind {
	case sdkCounter:
		if !strings.HasSuffix(name, "_total") {
			name += "_total"
		}
	case sdkTimer:
		name += "_seconds"
	}
	name = strings.ReplaceAll(name, ".", "_")
	var key strings.Builder
	key.WriteString(name)
	for _, k := range slices.Sorted(maps.Keys(h.tags)) {
		key.WriteString("\x00" + k + "=" + h.tags[k])
	}
	h.s.mu.Lock()
	defer h.s.mu.Unlock()
	v := h.s.byKey[key.String()]
	if v == nil {
		v = &sdkValue{name: name, kind: kind, tags: h.tags}
		if kind == sdkTimer {
			v.buckets = make([]uint64, len(sdkBuckets))
		}
		h.s.byKey[key.String()] = v
		seen := h.s.labels[name]
		if seen == nil {
			seen = map[string]bool{}
			h.s.labels[name] = seen
		}
		for k := range h.tags {
			seen[k] = true
		}
	}
	return v
}

// Counter implements client.MetricsHandler.
func (h *SDKHandler) Counter(name string) client.MetricsCounter {
	v := h.value(name, sdkCounter)
	return counterFunc(func(d int64) {
		h.s.mu.Lock()
		v.value += float64(d)
		h.s.mu.Unlock()
	})
}

// Gauge implements client.MetricsHandler.
func (h *SDKHandler) Gauge(name string) client.MetricsGauge {
	v := h.value(name, sdkGauge)
	return gaugeFunc(func(f float64) {
		h.s.mu.Lock()
		v.value = f
		h.s.mu.Unlock()
	})
}

// Timer implements client.MetricsHandler.
func (h *SDKHandler) Timer(name string) client.MetricsTimer {
	v := h.value(name, sdkTimer)
	return timerFunc(func(d time.Duration) {
		sec := d.Seconds()
		h.s.mu.Lock()
		v.count++
		v.sum += sec
		for i, b := range sdkBuckets {
			if sec <= b {
				v.buckets[i]++
			}
		}
		h.s.mu.Unlock()
	})
}

// Describe implements prometheus.Collector: the series are not known in
// advance, so the collector is unchecked.
func (h *SDKHandler) Describe(chan<- *prometheus.Desc) {}

// Collect implements prometheus.Collector.
func (h *SDKHandler) Collect(ch chan<- prometheus.Metric) {
	h.s.mu.Lock()
	defer h.s.mu.Unlock()
	for _, v := range h.s.byKey {
		keys := slices.Sorted(maps.Keys(h.s.labels[v.name]))
		vals := make([]string, len(keys))
		for i, k := range keys {
			vals[i] = v.tags[k]
		}
		desc := prometheus.NewDesc(v.name, "Temporal SDK metric "+v.name+".", keys, nil)
		var m prometheus.Metric
		var err error
		switch v.kind {
		case sdkCounter:
			m, err = prometheus.NewConstMetric(desc, prometheus.CounterValue, v.value, vals...)
		case sdkGauge:
			m, err = prometheus.NewConstMetric(desc, prometheus.GaugeValue, v.value, vals...)
		case sdkTimer:
			b := make(map[float64]uint64, len(sdkBuckets))
			for i, ub := range sdkBuckets {
				b[ub] = v.buckets[i]
			}
			m, err = prometheus.NewConstHistogram(desc, v.count, v.sum, b, vals...)
		}
		if err == nil {
			ch <- m
		}
	}
}

type (
	counterFunc func(int64)
	gaugeFunc   func(float64)
	timerFunc   func(time.Duration)
)

func (f counterFunc) Inc(d int64)          { f(d) }
func (f gaugeFunc) Update(v float64)       { f(v) }
func (f timerFunc) Record(d time.Duration) { f(d) }
