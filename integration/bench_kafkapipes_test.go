//go:build integration

package integration

import (
	"fmt"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/lakepipe/lakepipe/internal/jobs"
)

// BenchmarkScaleKafkaPipes: 1,000 idle Kafka pipes
// (LAKEPIPE_BENCH_KAFKA_PIPES) with a 30 s batch interval on one
// in-process worker, watched for 120 s (LAKEPIPE_BENCH_KAFKA_SECONDS) once
// each has made its first turn. Idle Kafka pipes wait in AwaitRecords,
// which reads the topic's end offsets every interval: from the worker's
// /metrics, the reads made in the window and how late each finished; from
// every pipe's history, the events the window added (per read; on timers
// an idle interval was 6); from /proc, the CPU of the test process (the
// worker runs in it) and of the Temporal dev server, its RSS and
// goroutines (idle pipes keep no Kafka client of their own: the window
// starts once the clients of their first turns have closed).
// LAKEPIPE_BENCH_KAFKA_PIPES_ALLOCS=file writes the heap profile at the
// window's start and end (file.0, file.1; inuse_space shows what the
// idle pipes hold). Then a record lands in the topic
// three pipes read: each must load it within one interval.
// Run: ./task bench:scale -- -bench BenchmarkScaleKafkaPipes
func BenchmarkScaleKafkaPipes(b *testing.B) {
	n := benchInt(b, "LAKEPIPE_BENCH_KAFKA_PIPES", 1000)
	window := time.Duration(benchInt(b, "LAKEPIPE_BENCH_KAFKA_SECONDS", 120)) * time.Second
	const interval = 30 * time.Second
	p := newPipeBench(b)
	addr := p.worker()
	c, err := p.orch.Client()
	if err != nil {
		b.Fatal(err)
	}
	// Every pipe reads the idle topic but three, which read the probe
	// topic; each pipe has a group of its own.
	idle, probe := "kidle_"+p.id, "kprobe_"+p.id
	kafkaTopic(b, idle, 1)
	prod := kafkaTopic(b, probe, 1)
	probes := []int{0, n / 2, n - 1}
	p.run(`CREATE TABLE kmany_t (message STRING)`)
	made := time.Now()
	var ids []string
	for i := 0; i < n; i++ {
		topic := idle
		for _, j := range probes {
			if i == j {
				topic = probe
			}
		}
		p.run(fmt.Sprintf(`CREATE PIPE kmany_p%d BATCH_INTERVAL_IN_SECONDS = '%d' AS COPY INTO kmany_t FROM (SELECT CAST(VALUE AS STRING) AS message FROM READ_KAFKA('%s', '%s', '', 'kmany_%s_%d', '', '', '', '', 'raw', 'raw', 0, map()))`,
			i, int(interval.Seconds()), kafkaAddr, topic, p.id, i))
		ids = append(ids, p.eng.PipeWorkflowID(fmt.Sprintf("kmany_p%d", i)))
	}
	madeIn := time.Since(made)
	// The steady state: every pipe has made its first turn and waits, and
	// the clients their first turns opened have been idle long enough to
	// close (the engine's kafkaClientIdle, 3 minutes).
	time.Sleep(3*time.Minute + 10*time.Second)
	g0, rss0 := runtime.NumGoroutine(), rssKB(os.Getpid())

	var rss int64
	w := watchIdle(b, addr, c, ids, func() {
		defer allocsPhase(b, "LAKEPIPE_BENCH_KAFKA_PIPES_ALLOCS")()
		for end := time.Now().Add(window); time.Now().Before(end); time.Sleep(time.Second) {
			rss = max(rss, rssKB(os.Getpid()))
		}
	})
	g1 := runtime.NumGoroutine()
	selfCPU, tempCPU, polls := w.selfCPU, w.tempCPU, w.polls
	reads := int(polls.count) + len(w.timerLate)

	put := time.Now()
	produce(b, prod, "probe")
	for p.count("kmany_t") < int64(len(probes)) {
		if time.Since(put) > interval+15*time.Second {
			b.Fatalf("a record not loaded within one interval (%v): %d of %d pipes", interval, p.count("kmany_t"), len(probes))
		}
		time.Sleep(100 * time.Millisecond)
	}
	found := time.Since(put)
	for _, id := range ids {
		_ = p.orch.Terminate(p.ctx, id, "benchmark done")
	}

	core := func(cpu float64) float64 { return cpu / window.Seconds() * 100 }
	p95 := polls.quantile(0.95) * 1000
	b.ReportMetric(p95, "lateness_p95_ms")
	b.ReportMetric(float64(w.events)/float64(reads), "events/read")
	b.ReportMetric(core(selfCPU), "worker_core_%")
	b.ReportMetric(core(tempCPU), "temporal_core_%")
	b.ReportMetric(float64(rss)/1024, "worker_rss_MB")
	fmt.Printf("\n%d idle Kafka pipes, batch interval %v, one worker, watched %v (made in %.0fs)\n", n, interval, window, madeIn.Seconds())
	fmt.Printf("  reads of the end offsets: %d in %s (%.1f/s), %d on timers; history: %d waits started, %d other activities, %d local activities\n",
		int(polls.count), jobs.ActivityAwaitRecords, polls.count/window.Seconds(), len(w.timerLate), w.awaits, w.regular, w.local)
	fmt.Printf("  lateness of a read (done − due): p50 ≤ %.0f ms, p95 ≤ %.0f ms (histogram bucket bounds)\n", polls.quantile(0.5)*1000, p95)
	fmt.Printf("  history events in the window: %d, %.2f per read (on timers: 6 per idle interval)\n", w.events, float64(w.events)/float64(reads))
	fmt.Printf("  CPU: the test process, worker in it, %.1f %% of a core; the Temporal dev server %.1f %%\n", core(selfCPU), core(tempCPU))
	fmt.Printf("  the test process: RSS %.0f MB at the window's start, ≤ %.0f MB in it; goroutines %d at its start, %d at its end\n", float64(rss0)/1024, float64(rss)/1024, g0, g1)
	fmt.Printf("  a record in the topic %d pipes read: all loaded %.1f s after it was produced (interval %v)\n", len(probes), found.Seconds(), interval)
}
