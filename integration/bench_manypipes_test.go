//go:build integration

package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
)

// BenchmarkScaleThousandPipes: 1,000 idle LIST pipes
// (LAKEPIPE_BENCH_MANY_PIPES) polling every 30 s on one in-process worker,
// watched for 120 s (LAKEPIPE_BENCH_MANY_SECONDS) once each has made its
// first turns. Read back from every pipe's Temporal history: the lateness
// of each turn (when its next timer started, against when the previous
// one was due: the turn's whole cost, target p95 < 2 s) and the history
// events a turn adds. From /proc: the CPU of the test process (the worker
// runs in it; target < 10 % of a core) and of the Temporal dev server.
// The baseline, in the same run, is the same pipes' first, full listings,
// made as regular activities. LAKEPIPE_BENCH_MANY_PROFILE=file writes a
// CPU profile of the watched window.
// Run: ./task bench:scale -- -bench BenchmarkScaleThousandPipes
func BenchmarkScaleThousandPipes(b *testing.B) {
	n := benchInt(b, "LAKEPIPE_BENCH_MANY_PIPES", 1000)
	window := time.Duration(benchInt(b, "LAKEPIPE_BENCH_MANY_SECONDS", 120)) * time.Second
	const poll = 30 * time.Second
	p := newPipeBench(b)
	p.connection("many_conn_"+p.id, s3Endpoint)
	p.worker()
	c, err := p.orch.Client()
	if err != nil {
		b.Fatal(err)
	}
	p.run(`CREATE TABLE many_t (id BIGINT)`)
	made := time.Now()
	for i := 0; i < n; i++ {
		vol := fmt.Sprintf("many_v%d_%s", i, p.id)
		p.run(fmt.Sprintf(`CREATE EXTERNAL VOLUME %s LOCATION 'oss://%s/%smany/p%d/' USING CONNECTION many_conn_%s DIRECTORY = (ENABLE = TRUE, AUTO_REFRESH = FALSE) RECURSIVE = TRUE`,
			vol, s3Bucket, p.prefix, i, p.id))
		p.dropAtEnd("VOLUME", vol)
		p.run(fmt.Sprintf(`CREATE PIPE many_p%d INGEST_MODE = 'LIST' POLL_INTERVAL_IN_SECONDS = '30' AS COPY INTO many_t FROM VOLUME %s USING CSV`, i, vol))
	}
	madeIn := time.Since(made)
	// Every pipe has made its first turn (a full listing) and waits.
	time.Sleep(poll + 5*time.Second)

	temporalPid := pidOf(b, "temporal")
	selfCPU0, tempCPU0 := cpuSeconds(os.Getpid()), cpuSeconds(temporalPid)
	b.ResetTimer()
	stopProfile := profilePhase(b, "LAKEPIPE_BENCH_MANY_PROFILE")
	from := time.Now()
	time.Sleep(window)
	to := time.Now()
	stopProfile()
	b.StopTimer()
	selfCPU, tempCPU := cpuSeconds(os.Getpid())-selfCPU0, cpuSeconds(temporalPid)-tempCPU0

	var late []float64
	var turns, events, local, regular int
	for i := 0; i < n; i++ {
		id := p.eng.PipeWorkflowID(fmt.Sprintf("many_p%d", i))
		it := c.GetWorkflowHistory(p.ctx, id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		var due time.Time
		count := 0
		for it.HasNext() {
			ev, err := it.Next()
			if err != nil {
				b.Fatal(err)
			}
			at := ev.GetEventTime().AsTime()
			if at.After(from) && at.Before(to) {
				count++
				switch ev.GetEventType() {
				case enumspb.EVENT_TYPE_MARKER_RECORDED:
					if ev.GetMarkerRecordedEventAttributes().GetMarkerName() == "LocalActivity" {
						local++
					}
				case enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
					regular++
				}
			}
			if ev.GetEventType() == enumspb.EVENT_TYPE_TIMER_STARTED {
				if !due.IsZero() && at.After(from) && at.Before(to) {
					late = append(late, at.Sub(due).Seconds()*1000)
					turns++
				}
				due = at.Add(ev.GetTimerStartedEventAttributes().GetStartToFireTimeout().AsDuration())
			}
		}
		events += count
	}
	if turns == 0 {
		b.Fatal("no turn in the window")
	}
	sort.Float64s(late)
	pct := func(q float64) float64 { return late[min(len(late)-1, int(float64(len(late))*q))] }
	core := func(cpu float64) float64 { return cpu / window.Seconds() * 100 }
	b.ReportMetric(pct(0.95), "lateness_p95_ms")
	b.ReportMetric(float64(events)/float64(turns), "events/turn")
	b.ReportMetric(core(selfCPU), "worker_core_%")
	b.ReportMetric(core(tempCPU), "temporal_core_%")
	fmt.Printf("\n%d idle LIST pipes polling every %v, one worker, watched %v (made in %.0fs)\n", n, poll, window, madeIn.Seconds())
	fmt.Printf("  turns: %d (%.1f/s; %d local listings, %d listing activities)\n", turns, float64(turns)/window.Seconds(), local, regular)
	fmt.Printf("  lateness of a turn (next timer started − previous timer due): p50 %.0f ms, p95 %.0f ms, max %.0f ms (target p95 < 2000 ms)\n", pct(0.5), pct(0.95), late[len(late)-1])
	fmt.Printf("  history events per turn: %.1f\n", float64(events)/float64(turns))
	fmt.Printf("  CPU: the test process, worker in it, %.1f %% of a core (target < 10 %%); the Temporal dev server %.1f %%\n", core(selfCPU), core(tempCPU))
}

// pidOf reads the pid of a local-stack service from .stack/<svc>.pid.
func pidOf(tb testing.TB, svc string) int {
	b, err := os.ReadFile(filepath.Join(stateDir(), svc+".pid"))
	if err != nil {
		tb.Fatalf("pid of %s: %v", svc, err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		tb.Fatalf("pid of %s: %v", svc, err)
	}
	return pid
}

// cpuSeconds is a process's user+system CPU time (0 if it is gone).
func cpuSeconds(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// Fields after the command (which may hold spaces) in parentheses.
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	utime, _ := strconv.ParseFloat(f[11], 64)
	stime, _ := strconv.ParseFloat(f[12], 64)
	return (utime + stime) / 100 // clock ticks: 100 a second on Linux
}
