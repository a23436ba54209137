//go:build integration

package integration

import (
	"bytes"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"

	"github.com/lakepipe/lakepipe/internal/orchestrator"
	"github.com/lakepipe/lakepipe/internal/sqlparse"
)

// BenchmarkScaleWorkers: aggregate rows/s of one `lakepipe worker` against
// three on the same task queue, loading the same files (uploaded twice,
// under two prefixes) through the same number of pipes. Each worker is a
// process of its own, as in a deployment. On a 2-core machine three workers
// cannot be faster than one (they share the cores with ClickHouse, S3 and
// Temporal); the ratio shows what the sharing costs. Sizes:
// LAKEPIPE_BENCH_SCALE_PIPES (6), _FILES per pipe (4), _ROWS per file
// (50,000). Run: ./task bench:scale
func BenchmarkScaleWorkers(b *testing.B) {
	pipes := benchInt(b, "LAKEPIPE_BENCH_SCALE_PIPES", 6)
	files := benchInt(b, "LAKEPIPE_BENCH_SCALE_FILES", 4)
	rows := benchInt(b, "LAKEPIPE_BENCH_SCALE_ROWS", 50_000)
	p := newPipeBench(b)
	p.connection("scale_conn_"+p.id, s3Endpoint)
	bin := lakepipeBin(b)
	c3 := rawS3(b)
	var body bytes.Buffer
	for r := 0; r < rows; r++ {
		fmt.Fprintf(&body, "%d,customer %d,%d.25\n", r, r%1000, r%10000)
	}
	total := int64(pipes * files * rows)

	run := func(label string, nWorkers int) time.Duration {
		queue := "bench-scale-" + label + "-" + p.id
		orch := orchestrator.New(temporalConfig(queue))
		defer orch.Close()
		eng := p.eng.WithOrchestrator(orch)
		workers := make([]*workerProc, nWorkers)
		for i := range workers {
			workers[i] = &workerProc{t: b, bin: bin, queue: queue, logPath: fmt.Sprintf("%s/%s-%d.log", b.TempDir(), label, i)}
			workers[i].start()
		}
		defer func() {
			for _, w := range workers {
				w.kill()
			}
		}()
		table := "scale_" + label
		p.run(`CREATE TABLE ` + table + ` (id BIGINT, name STRING, amount DOUBLE)`)
		for i := 0; i < pipes; i++ {
			for f := 0; f < files; f++ {
				key := fmt.Sprintf("%s%s/p%d/f%d.csv", p.prefix, label, i, f)
				if _, err := c3.PutObject(p.ctx, s3Bucket, key, bytes.NewReader(body.Bytes()), int64(body.Len()), minio.PutObjectOptions{}); err != nil {
					b.Fatal(err)
				}
			}
			vol := fmt.Sprintf("scale_%s_v%d_%s", label, i, p.id)
			p.run(fmt.Sprintf(`CREATE EXTERNAL VOLUME %s LOCATION 'oss://%s/%s%s/p%d/' USING CONNECTION scale_conn_%s DIRECTORY = (ENABLE = TRUE, AUTO_REFRESH = FALSE) RECURSIVE = TRUE`,
				vol, s3Bucket, p.prefix, label, i, p.id))
			p.dropAtEnd("VOLUME", vol)
		}
		start := time.Now()
		for i := 0; i < pipes; i++ {
			stmt := fmt.Sprintf(`CREATE PIPE scale_%s_p%d INGEST_MODE = 'LIST' POLL_INTERVAL_IN_SECONDS = '1' AS COPY INTO %s FROM VOLUME scale_%s_v%d_%s USING CSV`,
				label, i, table, label, i, p.id)
			st, err := sqlparse.Parse(stmt)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := eng.Exec(p.ctx, st); err != nil {
				b.Fatal(err)
			}
		}
		for p.count(table) < total {
			if time.Since(start) > 20*time.Minute {
				b.Fatalf("%s: %d of %d rows after 20 minutes", label, p.count(table), total)
			}
			time.Sleep(100 * time.Millisecond)
		}
		d := time.Since(start)
		for i := 0; i < pipes; i++ {
			_ = orch.Terminate(p.ctx, eng.PipeWorkflowID(fmt.Sprintf("scale_%s_p%d", label, i)), "benchmark done")
		}
		return d
	}
	b.ResetTimer()
	one := run("one", 1)
	three := run("three", 3)
	b.StopTimer()
	b.ReportMetric(float64(total)/one.Seconds(), "rows/s_1worker")
	b.ReportMetric(float64(total)/three.Seconds(), "rows/s_3workers")
	b.ReportMetric(one.Seconds()/three.Seconds(), "ratio_3to1")
	b.Logf("%d rows (%d pipes × %d files × %d rows): 1 worker %v (%.0f rows/s), 3 workers %v (%.0f rows/s); 3-worker/1-worker throughput %.2f",
		total, pipes, files, rows, one.Round(time.Millisecond), float64(total)/one.Seconds(), three.Round(time.Millisecond), float64(total)/three.Seconds(), one.Seconds()/three.Seconds())
}

// BenchmarkScaleIdlePipes: the orchestration cost of a pipe turn (a poll
// that finds nothing: timer, listing activity, workflow tasks) with 1 idle
// pipe against 100 idle pipes on one worker, in the same run. Per turn it
// reports the activities run, the history events written and the time from
// the timer firing to the listing's completion, read back from the pipes'
// Temporal histories. LAKEPIPE_BENCH_IDLE_PIPES (100), _SECONDS of idling
// (30), poll interval 2 s. Run: ./task bench:scale
func BenchmarkScaleIdlePipes(b *testing.B) {
	many := benchInt(b, "LAKEPIPE_BENCH_IDLE_PIPES", 100)
	window := time.Duration(benchInt(b, "LAKEPIPE_BENCH_IDLE_SECONDS", 30)) * time.Second
	p := newPipeBench(b)
	p.connection("idle_conn_"+p.id, s3Endpoint)
	p.worker()
	c, err := p.orch.Client()
	if err != nil {
		b.Fatal(err)
	}
	type turnCost struct {
		turns, activities, events int
		ms                        []float64
	}
	run := func(label string, n int) turnCost {
		for i := 0; i < n; i++ {
			vol := fmt.Sprintf("idle_%s_v%d_%s", label, i, p.id)
			p.run(fmt.Sprintf(`CREATE EXTERNAL VOLUME %s LOCATION 'oss://%s/%s%s/p%d/' USING CONNECTION idle_conn_%s DIRECTORY = (ENABLE = TRUE, AUTO_REFRESH = FALSE) RECURSIVE = TRUE`,
				vol, s3Bucket, p.prefix, label, i, p.id))
			p.dropAtEnd("VOLUME", vol)
		}
		p.run(`CREATE TABLE IF NOT EXISTS idle_t (id BIGINT)`)
		for i := 0; i < n; i++ {
			p.run(fmt.Sprintf(`CREATE PIPE idle_%s_p%d INGEST_MODE = 'LIST' POLL_INTERVAL_IN_SECONDS = '2' AS COPY INTO idle_t FROM VOLUME idle_%s_v%d_%s USING CSV`,
				label, i, label, i, p.id))
		}
		time.Sleep(window)
		var cost turnCost
		for i := 0; i < n; i++ {
			id := p.eng.PipeWorkflowID(fmt.Sprintf("idle_%s_p%d", label, i))
			_ = p.orch.Terminate(p.ctx, id, "benchmark done")
			it := c.GetWorkflowHistory(p.ctx, id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
			var fired time.Time
			var events []*historypb.HistoryEvent
			for it.HasNext() {
				ev, err := it.Next()
				if err != nil {
					b.Fatal(err)
				}
				events = append(events, ev)
			}
			for _, ev := range events {
				switch ev.GetEventType() {
				case enumspb.EVENT_TYPE_TIMER_FIRED:
					fired = ev.GetEventTime().AsTime()
				case enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
					cost.activities++
				case enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
					if !fired.IsZero() {
						cost.turns++
						cost.ms = append(cost.ms, float64(ev.GetEventTime().AsTime().Sub(fired))/float64(time.Millisecond))
						fired = time.Time{}
					}
				}
			}
			cost.events += len(events)
		}
		sort.Float64s(cost.ms)
		return cost
	}
	b.ResetTimer()
	one := run("one", 1)
	lots := run("many", many)
	b.StopTimer()
	med := func(c turnCost) float64 {
		if len(c.ms) == 0 {
			b.Fatalf("no completed turns")
		}
		return c.ms[len(c.ms)/2]
	}
	per := func(n, turns int) float64 { return float64(n) / float64(max(turns, 1)) }
	b.ReportMetric(med(one), "turn_ms_1pipe")
	b.ReportMetric(med(lots), fmt.Sprintf("turn_ms_%dpipes", many))
	b.ReportMetric(per(lots.events, lots.turns), "events/turn")
	b.ReportMetric(per(lots.activities, lots.turns), "activities/turn")
	b.ReportMetric(med(lots)/med(one), "ratio")
	b.Logf("1 idle pipe: %d turns, %.1f activities and %.1f events a turn, median turn %.1f ms (timer fired → listing done)",
		one.turns, per(one.activities, one.turns), per(one.events, one.turns), med(one))
	b.Logf("%d idle pipes: %d turns, %.1f activities and %.1f events a turn, median turn %.1f ms, p90 %.1f ms; %.1f× the single pipe's turn",
		many, lots.turns, per(lots.activities, lots.turns), per(lots.events, lots.turns), med(lots), lots.ms[len(lots.ms)*9/10], med(lots)/med(one))
}
