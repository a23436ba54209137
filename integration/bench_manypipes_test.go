//go:build integration

package integration

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/lakepipe/lakepipe/internal/jobs"
)

// BenchmarkScaleThousandPipes: 1,000 idle LIST pipes
// (LAKEPIPE_BENCH_MANY_PIPES) polling every 30 s on one in-process worker,
// watched for 120 s (LAKEPIPE_BENCH_MANY_SECONDS) once each has made its
// first turn. Idle pipes wait in AwaitFiles, which lists every poll
// interval: from the worker's /metrics, the polls made in the window and
// how late each finished against when it was due (the idle turn's whole
// cost, target p95 < 2 s); from every pipe's Temporal history, the events
// the window added (per poll). From /proc: the CPU of the test process
// (the worker runs in it; target < 10 % of a core) and of the Temporal
// dev server. Then a file lands in three pipes' volumes: each must be
// loaded within one poll interval. LAKEPIPE_BENCH_MANY_PROFILE=file
// writes a CPU profile of the watched window.
// Run: ./task bench:scale -- -bench BenchmarkScaleThousandPipes
func BenchmarkScaleThousandPipes(b *testing.B) {
	n := benchInt(b, "LAKEPIPE_BENCH_MANY_PIPES", 1000)
	window := time.Duration(benchInt(b, "LAKEPIPE_BENCH_MANY_SECONDS", 120)) * time.Second
	const poll = 30 * time.Second
	p := newPipeBench(b)
	p.connection("many_conn_"+p.id, s3Endpoint)
	addr := p.worker()
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

	var ids []string
	for i := 0; i < n; i++ {
		ids = append(ids, p.eng.PipeWorkflowID(fmt.Sprintf("many_p%d", i)))
	}
	w := watchIdle(b, addr, c, ids, func() {
		defer profilePhase(b, "LAKEPIPE_BENCH_MANY_PROFILE")()
		time.Sleep(window)
	})
	selfCPU, tempCPU, polls := w.selfCPU, w.tempCPU, w.polls
	timerLate, timerTurns, events, local, regular, awaits := w.timerLate, len(w.timerLate), w.events, w.local, w.regular, w.awaits
	turns := int(polls.count) + timerTurns

	// New files are still found within one poll.
	mc := rawS3(b)
	probe := []int{0, n / 2, n - 1}
	put := time.Now()
	for _, i := range probe {
		key := fmt.Sprintf("%smany/p%d/new.csv", p.prefix, i)
		if _, err := mc.PutObject(p.ctx, s3Bucket, key, strings.NewReader(fmt.Sprintf("%d\n", i)), -1, minio.PutObjectOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	for p.count("many_t") < int64(len(probe)) {
		if time.Since(put) > poll+15*time.Second {
			b.Fatalf("new files not loaded within one poll (%v): %d of %d", poll, p.count("many_t"), len(probe))
		}
		time.Sleep(100 * time.Millisecond)
	}
	found := time.Since(put)

	core := func(cpu float64) float64 { return cpu / window.Seconds() * 100 }
	p95 := polls.quantile(0.95) * 1000
	b.ReportMetric(p95, "lateness_p95_ms")
	b.ReportMetric(float64(events)/float64(turns), "events/turn")
	b.ReportMetric(core(selfCPU), "worker_core_%")
	b.ReportMetric(core(tempCPU), "temporal_core_%")
	fmt.Printf("\n%d idle LIST pipes polling every %v, one worker, watched %v (made in %.0fs)\n", n, poll, window, madeIn.Seconds())
	fmt.Printf("  polls: %d in AwaitFiles (%.1f/s), %d on timers; history: %d AwaitFiles started, %d other activities, %d local listings\n",
		int(polls.count), polls.count/window.Seconds(), timerTurns, awaits, regular, local)
	fmt.Printf("  lateness of a poll (listing done − due): p50 ≤ %.0f ms, p95 ≤ %.0f ms (histogram bucket bounds; target p95 < 2000 ms)\n", polls.quantile(0.5)*1000, p95)
	if len(timerLate) > 0 {
		sort.Float64s(timerLate)
		fmt.Printf("  timer turns' lateness: p95 %.0f ms\n", timerLate[min(len(timerLate)-1, int(float64(len(timerLate))*0.95))])
	}
	fmt.Printf("  history events in the window: %d, %.2f per poll\n", events, float64(events)/float64(turns))
	fmt.Printf("  CPU: the test process, worker in it, %.1f %% of a core (target < 10 %%); the Temporal dev server %.1f %%\n", core(selfCPU), core(tempCPU))
	fmt.Printf("  a new file in %d pipes' volumes: all loaded %.1f s after the upload (poll %v)\n", len(probe), found.Seconds(), poll)
}

// idleWindow is what a window watching idle pipes measured.
type idleWindow struct {
	windowCost
	// polls is the worker's poll-lateness histogram over the window.
	polls histogram
	// selfCPU and tempCPU are the CPU seconds of the test process (the
	// worker runs in it) and of the Temporal dev server.
	selfCPU, tempCPU float64
}

// watchIdle runs during, the benchmark's timed window, and measures it:
// the worker's polls (its /metrics at addr), the CPU spent, and what the
// window added to the histories of the workflows ids.
func watchIdle(b *testing.B, addr string, c client.Client, ids []string, during func()) idleWindow {
	b.Helper()
	temporalPid := pidOf(b, "temporal")
	selfCPU0, tempCPU0 := cpuSeconds(os.Getpid()), cpuSeconds(temporalPid)
	polls0 := scrapeHistogram(b, addr, "lakepipe_pipe_poll_lateness_seconds")
	b.ResetTimer()
	from := time.Now()
	during()
	to := time.Now()
	b.StopTimer()
	w := idleWindow{
		selfCPU: cpuSeconds(os.Getpid()) - selfCPU0,
		tempCPU: cpuSeconds(temporalPid) - tempCPU0,
		polls:   scrapeHistogram(b, addr, "lakepipe_pipe_poll_lateness_seconds").minus(polls0),
	}
	w.windowCost = historyWindow(b, c, ids, from, to)
	if int(w.polls.count)+len(w.timerLate) == 0 {
		b.Fatal("no poll in the window")
	}
	return w
}

// windowCost is what a window of time added to some pipes' histories.
type windowCost struct {
	events  int
	local   int // local activities (markers)
	awaits  int // waits started (AwaitFiles, AwaitRecords)
	regular int // other activities
	// timerLate is, per turn on a timer, how late its timer started
	// against when the one before was due to fire (ms).
	timerLate []float64
}

// historyWindow reads the pipes' histories for what the window [from, to)
// added.
func historyWindow(tb testing.TB, c client.Client, ids []string, from, to time.Time) windowCost {
	tb.Helper()
	var w windowCost
	for _, id := range ids {
		it := c.GetWorkflowHistory(context.Background(), id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		var due time.Time
		for it.HasNext() {
			ev, err := it.Next()
			if err != nil {
				tb.Fatal(err)
			}
			at := ev.GetEventTime().AsTime()
			in := at.After(from) && at.Before(to)
			if in {
				w.events++
				switch ev.GetEventType() {
				case enumspb.EVENT_TYPE_MARKER_RECORDED:
					if ev.GetMarkerRecordedEventAttributes().GetMarkerName() == "LocalActivity" {
						w.local++
					}
				case enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
					switch ev.GetActivityTaskScheduledEventAttributes().GetActivityType().GetName() {
					case jobs.ActivityAwaitFiles, jobs.ActivityAwaitRecords:
						w.awaits++
					default:
						w.regular++
					}
				}
			}
			// Pipes that wait on timers (a wait that failed).
			if ev.GetEventType() == enumspb.EVENT_TYPE_TIMER_STARTED {
				if !due.IsZero() && in {
					w.timerLate = append(w.timerLate, at.Sub(due).Seconds()*1000)
				}
				due = at.Add(ev.GetTimerStartedEventAttributes().GetStartToFireTimeout().AsDuration())
			}
		}
	}
	return w
}

// scrapeMetrics is a worker's /metrics page.
func scrapeMetrics(tb testing.TB, addr string) string {
	tb.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.Fatal(err)
	}
	return string(body)
}

// histogram is a Prometheus histogram read from /metrics: cumulative
// counts by upper bound.
type histogram struct {
	le    []float64
	cum   []float64
	count float64
}

// scrapeHistogram reads a histogram (no labels) from a worker's /metrics.
func scrapeHistogram(tb testing.TB, addr, name string) histogram {
	tb.Helper()
	var h histogram
	for _, line := range strings.Split(scrapeMetrics(tb, addr), "\n") {
		f := strings.Fields(line)
		if len(f) != 2 {
			continue
		}
		v, _ := strconv.ParseFloat(f[1], 64)
		switch {
		case strings.HasPrefix(f[0], name+`_bucket{le="`):
			bound := strings.TrimSuffix(strings.TrimPrefix(f[0], name+`_bucket{le="`), `"}`)
			le, err := strconv.ParseFloat(bound, 64)
			if bound == "+Inf" {
				le, err = math.Inf(1), nil
			}
			if err == nil {
				h.le, h.cum = append(h.le, le), append(h.cum, v)
			}
		case f[0] == name+"_count":
			h.count = v
		}
	}
	return h
}

func (h histogram) minus(o histogram) histogram {
	out := histogram{le: h.le, count: h.count - o.count}
	for i := range h.cum {
		v := h.cum[i]
		if i < len(o.cum) {
			v -= o.cum[i]
		}
		out.cum = append(out.cum, v)
	}
	return out
}

// quantile is the upper bound of the bucket that holds the q-quantile.
func (h histogram) quantile(q float64) float64 {
	for i, c := range h.cum {
		if c >= q*h.count {
			return h.le[i]
		}
	}
	return math.Inf(1)
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

// machineCPU is what every process of the machine has used so far, in
// CPU seconds: the busy time of /proc/stat (all but idle and iowait).
func machineCPU() float64 {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	var busy float64
	for i, f := range strings.Fields(line)[1:] {
		v, _ := strconv.ParseFloat(f, 64)
		if i != 3 && i != 4 && i < 8 { // idle, iowait; guest times are in user already
			busy += v
		}
	}
	return busy / 100
}

// phaseCPU is the CPU the bench's processes and the whole machine spent
// over one phase, so that a phase's time can be told from the machine
// having had no more to give.
type phaseCPU struct {
	names []string // "worker" (this process), then the stack's services
	pids  []int
	start []float64
	mach  float64
	began time.Time
}

// newPhaseCPU follows this process and the stack's services (pidOf names)
// from now on.
func newPhaseCPU(tb testing.TB, services ...string) *phaseCPU {
	pc := &phaseCPU{names: []string{"worker"}, pids: []int{os.Getpid()}}
	for _, svc := range services {
		pc.names = append(pc.names, svc)
		pc.pids = append(pc.pids, pidOf(tb, svc))
	}
	pc.reset()
	return pc
}

// reset starts a new phase.
func (pc *phaseCPU) reset() {
	pc.start = pc.start[:0]
	for _, pid := range pc.pids {
		pc.start = append(pc.start, cpuSeconds(pid))
	}
	pc.mach, pc.began = machineCPU(), time.Now()
}

// machineSeconds is the CPU the whole machine spent since reset.
func (pc *phaseCPU) machineSeconds() float64 { return machineCPU() - pc.mach }

// String says how many cores the machine and each process used on
// average since reset.
func (pc *phaseCPU) String() string {
	d := time.Since(pc.began).Seconds()
	out := fmt.Sprintf("machine %.2f of %d cores:", pc.machineSeconds()/d, runtime.NumCPU())
	for i, name := range pc.names {
		if i > 0 {
			out += ","
		}
		out += fmt.Sprintf(" %s %.2f", name, (cpuSeconds(pc.pids[i])-pc.start[i])/d)
	}
	return out
}
