// Package worker is lakepipe's worker: it runs the workflows and
// activities on the lakepipe task queue, serves Prometheus metrics and
// accepts S3 event notifications. Several workers on one task queue share
// the work; that is how lakepipe scales out.
package worker

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/interceptor"
	sdkworker "go.temporal.io/sdk/worker"

	"github.com/lakepipe/lakepipe/activities"
	"github.com/lakepipe/lakepipe/internal/catalog"
	"github.com/lakepipe/lakepipe/internal/chstore"
	"github.com/lakepipe/lakepipe/internal/core"
	"github.com/lakepipe/lakepipe/internal/engine"
	"github.com/lakepipe/lakepipe/internal/httpauth"
	"github.com/lakepipe/lakepipe/internal/jobs"
	"github.com/lakepipe/lakepipe/internal/metrics"
	"github.com/lakepipe/lakepipe/internal/orchestrator"
	"github.com/lakepipe/lakepipe/internal/rowio"
	"github.com/lakepipe/lakepipe/internal/signalguard"
	"github.com/lakepipe/lakepipe/workflows"
)

// Config of a worker.
type Config struct {
	ClickHouse chstore.Config
	Temporal   orchestrator.Config
	// RequireEncryption drops signals that do not carry an encrypted
	// payload (internal/signalguard); Temporal.Codec should then refuse
	// clear payloads too (payloadcodec.Codec.Requiring). Needs a codec.
	RequireEncryption bool
	Workspace         string
	// StallTimeout: a copy or Kafka batch attempt that makes no progress
	// for this long gives up and is retried (default
	// activities.DefaultStallTimeout).
	StallTimeout time.Duration
	// Queues says which task queues this worker serves: "control"
	// (workflow tasks, listings, short activities) and "loads" (copies,
	// Kafka batches, refreshes, on jobs.LoadQueue); empty: both.
	Queues []string
	// MaintenanceSchedule creates the task queue's maintenance Schedule
	// when it is missing (orchestrator.EnsureMaintenanceSchedule); this
	// worker runs its workflow like any other. lakepipe worker sets it;
	// tests' workers do not, and call Engine.Maintain themselves.
	MaintenanceSchedule bool
	// Limits bound what reading one file may allocate (zero fields: the
	// defaults of formats.Limits).
	Limits rowio.Limits
	// FullListingInterval: see engine.Config (0: its default).
	FullListingInterval time.Duration
	// MetricsToken, when set, is required of /metrics requests (Bearer).
	MetricsToken string
	// HTTPAddr serves /metrics, /healthz and /events ("" = no server).
	HTTPAddr string
	// Events bounds and authenticates /events (see EventsConfig), and the
	// messages of EventQueue.
	Events EventsConfig
	// EventQueue, when it names a topic, is read for S3 event
	// notifications besides /events (see EventQueueConfig).
	EventQueue EventQueueConfig
	// EventSQS, when it names a queue, is read for them too.
	EventSQS EventSQSConfig
	// EventQueueRescan is how often the queues pipes name (EVENT_QUEUE)
	// are looked up (0: DefaultEventQueueRescan).
	EventQueueRescan time.Duration
	// Parallel files per batch (default 4).
	Parallel int
	// MaxActivities is how many activities (file copies, listings, Kafka
	// batches, refreshes) run at once on this worker (default 32).
	MaxActivities int
	// MaxAwaiting is how many idle polling pipes may wait on this worker
	// at once (AwaitFiles on jobs.AwaitQueue; default DefaultMaxAwaiting).
	// A wait is a sleeping goroutine between listings; a pipe past the
	// limit waits up to a minute for a slot, on this worker or another,
	// then polls on its timer until its next wait.
	MaxAwaiting int
	// MaxWorkflowTasks is how many workflow tasks run at once (default 64).
	MaxWorkflowTasks int
	// Pollers of each task kind (default 2): more pollers take work off
	// the queue faster when many pipes share few workers.
	Pollers int
	// StopTimeout is how long a stopping worker lets its activities run
	// to their end before cancelling them (they are then retried on
	// another worker); default 1 minute.
	StopTimeout time.Duration
	Logger      *slog.Logger
	// Ready, when set, receives the HTTP server's address once the worker
	// polls its task queue.
	Ready chan<- string
}

// Register puts lakepipe's workflows and activities on a worker; the
// replay tests use it too, so that names stay in one place.
func Register(w sdkworker.Registry, acts *activities.Activities) {
	workflows.Register(w)
	if acts != nil {
		// The load activities too: runs recorded before the load queue
		// schedule them on the control queue.
		RegisterLoads(w, acts)
		w.RegisterActivityWithOptions(acts.PlanRefresh, activity.RegisterOptions{Name: jobs.ActivityPlanRefresh})
		w.RegisterActivityWithOptions(acts.WaitRefresh, activity.RegisterOptions{Name: jobs.ActivityWaitRefresh})
		w.RegisterActivityWithOptions(acts.ListFiles, activity.RegisterOptions{Name: jobs.ActivityListFiles})
		w.RegisterActivityWithOptions(acts.ListNewFiles, activity.RegisterOptions{Name: jobs.ActivityListNewFiles})
		w.RegisterActivityWithOptions(acts.KafkaOffsets, activity.RegisterOptions{Name: jobs.ActivityKafkaOffsets})
		w.RegisterActivityWithOptions(acts.KafkaEnd, activity.RegisterOptions{Name: jobs.ActivityKafkaEnd})
		w.RegisterActivityWithOptions(acts.Maintain, activity.RegisterOptions{Name: jobs.ActivityMaintain})
	}
}

// DefaultMaxAwaiting is Config.MaxAwaiting's default.
const DefaultMaxAwaiting = 10000

// awaitHeartbeatThrottle is how often a wait (AwaitFiles, AwaitRecords)
// sends its heartbeat at most: under the 2-minute heartbeat timeout the
// pipe workflow gives it (workflows.awaitHeartbeat), and as rarely as that
// allows, since each is a call to Temporal for every idle pipe.
const awaitHeartbeatThrottle = 90 * time.Second

// RegisterAwait registers AwaitFiles and AwaitRecords, the only
// activities of the await queue (jobs.AwaitQueue).
func RegisterAwait(w sdkworker.Registry, acts *activities.Activities) {
	w.RegisterActivityWithOptions(acts.AwaitFiles, activity.RegisterOptions{Name: jobs.ActivityAwaitFiles})
	w.RegisterActivityWithOptions(acts.AwaitRecords, activity.RegisterOptions{Name: jobs.ActivityAwaitRecords})
}

// RegisterLoads registers the load activities, the only ones of the load
// queue (jobs.LoadQueue).
func RegisterLoads(w sdkworker.Registry, acts *activities.Activities) {
	w.RegisterActivityWithOptions(acts.CopyFiles, activity.RegisterOptions{Name: jobs.ActivityCopyFiles})
	w.RegisterActivityWithOptions(acts.KafkaBatch, activity.RegisterOptions{Name: jobs.ActivityKafkaBatch})
	w.RegisterActivityWithOptions(acts.RefreshDynamicTable, activity.RegisterOptions{Name: jobs.ActivityRefreshDynamicTable})
}

// queuesOf reads Config.Queues.
func queuesOf(qs []string) (control, loads bool, err error) {
	if len(qs) == 0 {
		return true, true, nil
	}
	for _, q := range qs {
		switch strings.TrimSpace(strings.ToLower(q)) {
		case "control":
			control = true
		case "loads":
			loads = true
		default:
			return false, false, fmt.Errorf("worker queues: %q is not a queue (expected control, loads or both)", q)
		}
	}
	return control, loads, nil
}

// Interceptors are the worker interceptors of every lakepipe worker; the
// replayers of tests install the same signal guard. m may be nil.
func Interceptors(requireEncryption bool, m *metrics.Worker) []interceptor.WorkerInterceptor {
	is := []interceptor.WorkerInterceptor{&signalguard.Interceptor{Require: requireEncryption}}
	if m != nil {
		is = append(is, &loadInterceptor{m: m})
	}
	return is
}

// Run runs a worker until ctx ends, then stops gracefully: activities in
// flight finish (or are retried elsewhere), nothing is lost.
func Run(ctx context.Context, cfg Config) error {
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	cfg.MaxActivities = cmp.Or(cfg.MaxActivities, 32)
	cfg.MaxWorkflowTasks = cmp.Or(cfg.MaxWorkflowTasks, 64)
	cfg.Pollers = cmp.Or(cfg.Pollers, 2)
	cfg.StopTimeout = cmp.Or(cfg.StopTimeout, time.Minute)
	if cfg.RequireEncryption && cfg.Temporal.Codec == nil {
		return errors.New("payload encryption is required (LAKEPIPE_CODEC_REQUIRE) but no codec key is set (LAKEPIPE_CODEC_KEY or LAKEPIPE_CODEC_KEY_FILE)")
	}
	if cfg.Temporal.Codec == nil {
		// Histories then hold table names, file paths and the errors of
		// bad files (which quote values) in clear.
		log.Warn("Temporal payloads are not encrypted: set LAKEPIPE_CODEC_KEY on every worker and client (docs/security.md)")
	}
	st, err := chstore.Open(ctx, cfg.ClickHouse)
	if err != nil {
		return err
	}
	defer st.Close()
	cat, err := catalog.Open(ctx, st)
	if err != nil {
		return err
	}
	cfg.Temporal.Logger = log
	m := metrics.New()
	cfg.Temporal.MetricsHandler = m.SDK()
	orch := orchestrator.New(cfg.Temporal)
	defer orch.Close()
	c, err := orch.Client()
	if err != nil {
		return err
	}
	eng := engine.New(cat, core.Config{Workspace: cfg.Workspace, Limits: cfg.Limits, FullListingInterval: cfg.FullListingInterval}).WithOrchestrator(orch)
	queue := cfg.Temporal.TaskQueue
	if queue == "" {
		queue = jobs.TaskQueue
	}
	serveControl, serveLoads, err := queuesOf(cfg.Queues)
	if err != nil {
		return err
	}
	opts := sdkworker.Options{
		// The SDK sends a heartbeat at most every 80% of the heartbeat
		// timeout (24 s of the pipe copies' 30 s), which leaves a slow
		// heartbeat call 6 s before a live worker's attempt is declared
		// dead and retried next to it. Every 5 s leaves 25 s.
		MaxHeartbeatThrottleInterval: 5 * time.Second,
		// Concurrency limits: how much of the task queue's work this
		// worker takes on at once (see docs/scaling.md).
		MaxConcurrentActivityExecutionSize:     cfg.MaxActivities,
		MaxConcurrentWorkflowTaskExecutionSize: cfg.MaxWorkflowTasks,
		MaxConcurrentActivityTaskPollers:       cfg.Pollers,
		MaxConcurrentWorkflowTaskPollers:       cfg.Pollers,
		WorkerStopTimeout:                      cfg.StopTimeout,
		Interceptors:                           Interceptors(cfg.RequireEncryption, m),
	}
	acts := &activities.Activities{Engine: eng, Parallel: cfg.Parallel, Metrics: m, StallTimeout: cfg.StallTimeout}
	// The control queue: workflow tasks, listings and the other short
	// activities, and every activity for runs recorded before the load
	// queue existed. The load queue: copies, Kafka batches, refreshes.
	var ws []sdkworker.Worker
	if serveControl {
		w := sdkworker.New(c, queue, opts)
		Register(w, acts)
		ws = append(ws, w)
		// Idle polling pipes wait here, each holding a slot between its
		// listings (see jobs.AwaitQueue).
		aopts := opts
		aopts.DisableWorkflowWorker = true
		aopts.MaxConcurrentActivityExecutionSize = cmp.Or(cfg.MaxAwaiting, DefaultMaxAwaiting)
		aopts.MaxHeartbeatThrottleInterval = awaitHeartbeatThrottle
		aw := sdkworker.New(c, jobs.AwaitQueue(queue), aopts)
		RegisterAwait(aw, acts)
		ws = append(ws, aw)
	}
	if serveLoads {
		lopts := opts
		// Its slots are the load activities' only: a flood of loads waits
		// here, not in front of the control queue's work.
		lopts.DisableWorkflowWorker = true
		w := sdkworker.New(c, jobs.LoadQueue(queue), lopts)
		RegisterLoads(w, acts)
		ws = append(ws, w)
	}

	var srv *http.Server
	addr := ""
	if cfg.HTTPAddr != "" {
		mux := http.NewServeMux()
		mux.Handle("/metrics", httpauth.Require(cfg.MetricsToken, m.Handler()))
		mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
		mux.Handle("/events", eventHandler(eng, orch, cfg.Events, log))
		ln, err := net.Listen("tcp", cfg.HTTPAddr)
		if err != nil {
			return fmt.Errorf("worker http %s: %w", cfg.HTTPAddr, err)
		}
		addr = ln.Addr().String()
		srv = newHTTPServer(mux)
		go func() {
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				log.Error("worker http server", "error", err)
			}
		}()
	}
	for _, w := range ws {
		if err := w.Start(); err != nil {
			return fmt.Errorf("start worker: %w", err)
		}
	}
	if cfg.EventQueue.Topic != "" {
		go func() {
			if err := consumeEventQueue(ctx, cfg.EventQueue, cfg.Events, eng, orch, log); err != nil {
				log.Error("event queue", "error", err)
			}
		}()
	}
	// Queues pipes name (EVENT_QUEUE), found in the catalog.
	go runPipeQueues(ctx, eng, cmp.Or(cfg.EventQueueRescan, DefaultEventQueueRescan), cfg.Events, eng, orch, log)
	if cfg.EventSQS.QueueURL != "" {
		go func() {
			if err := consumeSQS(ctx, cfg.EventSQS, cfg.Events, eng, orch, log); err != nil {
				log.Error("event queue", "error", err)
			}
		}()
	}
	log.Info("lakepipe worker running", "task_queue", queue, "control", serveControl, "loads", serveLoads, "http", addr)
	if cfg.Ready != nil {
		cfg.Ready <- addr
	}
	if cfg.MaintenanceSchedule {
		if err := orch.EnsureMaintenanceSchedule(ctx); err != nil {
			// Not fatal: loads do not need it; the next start tries again.
			log.Warn("maintenance", "error", err)
		}
	}
	<-ctx.Done()
	log.Info("lakepipe worker stopping")
	for _, w := range ws {
		w.Stop()
	}
	if srv != nil {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}
	return nil
}

// newHTTPServer is the worker's HTTP server: a client gets 10 s for its
// headers (64 KiB at most), a minute for its whole request and a minute
// to read the answer, and an idle connection is closed after 2 minutes.
// /events bounds its body more tightly itself (EventsConfig.BodyTimeout).
func newHTTPServer(h http.Handler) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		MaxHeaderBytes:    64 << 10,
		ReadTimeout:       time.Minute,
		WriteTimeout:      time.Minute,
		IdleTimeout:       2 * time.Minute,
	}
}
