//go:build integration

package integration

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/lakepipe/lakepipe/internal/catalog"
	"github.com/lakepipe/lakepipe/internal/chstore"
	"github.com/lakepipe/lakepipe/internal/engine"
	"github.com/lakepipe/lakepipe/internal/jobs"
	"github.com/lakepipe/lakepipe/internal/orchestrator"
	"github.com/lakepipe/lakepipe/internal/payloadcodec"
	"github.com/lakepipe/lakepipe/worker"
)

// temporalAddr is the local Temporal frontend.
var temporalAddr = env("LAKEPIPE_TEMPORAL_ADDR", "127.0.0.1:"+env("LAKEPIPE_TEMPORAL_PORT", "7233"))

// envCodec is the payload codec of the environment (the local stack's
// .stack/codec.key through LAKEPIPE_CODEC_KEY_FILE), the one the lakepipe
// processes tests start use: in-process workers and clients must encrypt
// alike to share task queues with them.
var envCodec = sync.OnceValues(payloadcodec.FromEnv)

// temporalConfig is the Temporal configuration of the test's in-process
// workers and clients on queue ("" = lakepipe's default queue).
func temporalConfig(queue string) orchestrator.Config {
	cfg := orchestrator.Config{Address: temporalAddr, TaskQueue: queue}
	codec, err := envCodec()
	if err != nil {
		panic(fmt.Sprintf("payload codec of the environment: %v", err))
	}
	if codec != nil {
		cfg.Codec = codec
	}
	return cfg
}

// useQueue points the test's engine at a Temporal task queue of its own
// (for workers the test runs as processes) and returns its orchestrator.
func (s *Stack) useQueue(queue string) *orchestrator.Temporal {
	s.T.Helper()
	orch := orchestrator.New(temporalConfig(queue))
	if _, err := orch.Client(); err != nil {
		s.T.Fatalf("Temporal is needed (deploy/local/start.sh temporal): %v", err)
	}
	s.Orch = orch
	s.Eng = s.Eng.WithOrchestrator(orch)
	return orch
}

// withWorkerOn starts an in-process worker on queue with opts, points the
// test's engine at it, and ends the schema's workflows before the worker
// stops at the end of the test.
func (s *Stack) withWorkerOn(queue string, opts ...func(*worker.Config)) {
	s.T.Helper()
	startInProcessWorkerWith(s.T, temporalConfig(queue), opts...)
	orch := s.useQueue(queue)
	s.T.Cleanup(func() {
		cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		terminateSchemaWorkflows(cctx, orch, s.Eng, s.Schema)
	})
}

// withWorker runs an in-process worker on a task queue of the test's own
// and gives the test's engine an orchestrator on that queue, so pipes made
// by the test run on this worker only. It returns the worker's HTTP
// address (/events, /metrics). Pipes of the test are terminated at the end.
func (s *Stack) withWorker() string {
	s.T.Helper()
	var addr string
	s.Eng, s.Orch, addr = pipeWorker(s.T, s.Eng, s.Schema, "it-"+s.ID)
	return addr
}

// pipeWorker starts an in-process worker on queue and returns eng with an
// orchestrator on that queue; the schema's pipes are terminated, then the
// worker stopped, when the test or benchmark ends.
func pipeWorker(tb testing.TB, eng *engine.Engine, schema, queue string) (*engine.Engine, *orchestrator.Temporal, string) {
	tb.Helper()
	return pipeWorkerWith(tb, eng, schema, temporalConfig(queue))
}

// pipeWorkerWith is pipeWorker with the Temporal settings (queue, codec,
// …) of both the worker and the returned orchestrator given.
func pipeWorkerWith(tb testing.TB, eng *engine.Engine, schema string, cfg orchestrator.Config, opts ...func(*worker.Config)) (*engine.Engine, *orchestrator.Temporal, string) {
	tb.Helper()
	orch := orchestrator.New(cfg)
	if _, err := orch.Client(); err != nil {
		tb.Fatalf("Temporal is needed (deploy/local/start.sh temporal): %v", err)
	}
	eng = eng.WithOrchestrator(orch)
	addr := startInProcessWorkerWith(tb, cfg, opts...)
	// Registered after the worker's cleanup, so it runs first.
	tb.Cleanup(func() {
		cctx, ccancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer ccancel()
		terminateSchemaWorkflows(cctx, orch, eng, schema)
		orch.Close()
	})
	return eng, orch, addr
}

// terminateSchemaWorkflows ends the running workflows of a test schema's
// pipes and dynamic tables: those in the catalog, and those Temporal still
// runs for objects already dropped (a drop signal the stopped worker never
// handled).
func terminateSchemaWorkflows(ctx context.Context, orch *orchestrator.Temporal, eng *engine.Engine, schema string) {
	ids := map[string]bool{}
	if _, c, err := openCatalog(); err == nil {
		pipes, _ := c.List(ctx, catalog.KindPipe, schema)
		for _, p := range pipes {
			ids[eng.PipeWorkflowID(p.Name)] = true
		}
	}
	cl, err := orch.Client()
	if err != nil {
		return
	}
	for _, kind := range []string{"pipe", "dt"} {
		addRunning(ctx, cl, fmt.Sprintf("WorkflowId STARTS_WITH '%s.default.%s.'", kind, schema), ids)
	}
	terminateAll(ctx, orch, ids)
}

// addRunning adds to ids the running workflows that match query, from
// every page: a benchmark of 1,000 pipes leaves more than one.
func addRunning(ctx context.Context, cl client.Client, query string, ids map[string]bool) {
	var token []byte
	for {
		resp, err := cl.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{NextPageToken: token,
			Query: query + " AND ExecutionStatus = 'Running'"})
		if err != nil {
			return
		}
		for _, ex := range resp.GetExecutions() {
			ids[ex.GetExecution().GetWorkflowId()] = true
		}
		if token = resp.GetNextPageToken(); len(token) == 0 {
			return
		}
	}
}

// terminateAll terminates the workflows ids, several at a time: one by
// one, 1,000 terminations outlast a cleanup's timeout and leave workflows
// running on a queue no worker polls again.
func terminateAll(ctx context.Context, orch *orchestrator.Temporal, ids map[string]bool) {
	work := make(chan string)
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Go(func() {
			for id := range work {
				_ = orch.Terminate(ctx, id, "test finished")
			}
		})
	}
	for id := range ids {
		work <- id
	}
	close(work)
	wg.Wait()
}

// dropQueueMaintenance deletes the maintenance Schedule that a lakepipe
// worker process made for a test's own task queue, and ends its runs: no
// worker polls that queue after the test, and the Schedule would start a
// run every hour that waits there for ever (two were found on a dev
// server). The stack's own Schedule, of the default queue, stays.
func dropQueueMaintenance(queue string) {
	id := jobs.MaintenanceScheduleID(queue)
	if id == jobs.MaintenanceScheduleID("") {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	orch := orchestrator.New(temporalConfig(queue))
	defer orch.Close()
	cl, err := orch.Client()
	if err != nil {
		return
	}
	_ = cl.ScheduleClient().GetHandle(ctx, id).Delete(ctx)
	runs := map[string]bool{}
	addRunning(ctx, cl, fmt.Sprintf("WorkflowId STARTS_WITH '%s-'", id), runs)
	terminateAll(ctx, orch, runs)
}

// startInProcessWorker runs a worker in this
// process on the given task queue, stopped at the end. Its warnings go to a
// log file whose end is printed when the test or benchmark fails.
func startInProcessWorker(tb testing.TB, queue string) string {
	tb.Helper()
	return startInProcessWorkerWith(tb, temporalConfig(queue))
}

// startInProcessWorkerWith is startInProcessWorker with the worker's
// Temporal settings given; opts change the rest of its configuration.
func startInProcessWorkerWith(tb testing.TB, cfg orchestrator.Config, opts ...func(*worker.Config)) string {
	tb.Helper()
	logPath := filepath.Join(tb.TempDir(), "worker.log")
	logf, err := os.Create(logPath)
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	// A codec that refuses clear payloads makes a worker that requires
	// encryption, as LAKEPIPE_CODEC_REQUIRE=true does for lakepipe worker.
	pc, _ := cfg.Codec.(*payloadcodec.Codec)
	wcfg := worker.Config{
		ClickHouse:        chstore.Config{Addr: chAddr},
		Temporal:          cfg,
		RequireEncryption: pc != nil && pc.RequiresEncryption(),
		Workspace:         "default",
		HTTPAddr:          "127.0.0.1:0",
		Logger:            slog.New(slog.NewTextHandler(logf, &slog.HandlerOptions{Level: slog.LevelWarn})),
		Ready:             ready,
	}
	for _, o := range opts {
		o(&wcfg)
	}
	go func() { done <- worker.Run(ctx, wcfg) }()
	var addr string
	select {
	case addr = <-ready:
	case err := <-done:
		cancel()
		tb.Fatalf("worker did not start: %v", err)
	case <-time.After(30 * time.Second):
		cancel()
		tb.Fatal("worker did not start within 30 s")
	}
	tb.Cleanup(func() {
		cancel()
		<-done
		logf.Close()
		if tb.Failed() {
			b, _ := os.ReadFile(logPath)
			tb.Logf("worker log:\n%s", benchTail(string(b), 40))
		}
	})
	return addr
}
