//go:build integration

package integration

import (
	"context"
	"io"
	"log/slog"
	"time"

	"github.com/lakepipe/lakepipe/internal/catalog"
	"github.com/lakepipe/lakepipe/internal/chstore"
	"github.com/lakepipe/lakepipe/internal/orchestrator"
	"github.com/lakepipe/lakepipe/worker"
)

// temporalAddr is the local Temporal frontend.
var temporalAddr = env("LAKEPIPE_TEMPORAL_ADDR", "127.0.0.1:"+env("LAKEPIPE_TEMPORAL_PORT", "7233"))

// withWorker runs an in-process worker on a task queue of the test's own
// and gives the test's engine an orchestrator on that queue, so pipes made
// by the test run on this worker only. It returns the worker's HTTP
// address (/events, /metrics). Pipes of the test are terminated at the end.
func (s *Stack) withWorker() string {
	s.T.Helper()
	queue := "it-" + s.ID
	orch := orchestrator.New(orchestrator.Config{Address: temporalAddr, TaskQueue: queue})
	if _, err := orch.Client(); err != nil {
		s.T.Fatalf("Temporal is needed (deploy/local/start.sh temporal): %v", err)
	}
	s.Orch = orch
	s.Eng = s.Eng.WithOrchestrator(orch)
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- worker.Run(ctx, worker.Config{
			ClickHouse: chstore.Config{Addr: chAddr},
			Temporal:   orchestrator.Config{Address: temporalAddr, TaskQueue: queue},
			Workspace:  "default",
			HTTPAddr:   "127.0.0.1:0",
			Logger:     slog.New(slog.NewTextHandler(io.Discard, nil)),
			Ready:      ready,
		})
	}()
	var addr string
	select {
	case addr = <-ready:
	case err := <-done:
		cancel()
		s.T.Fatalf("worker did not start: %v", err)
	case <-time.After(30 * time.Second):
		cancel()
		s.T.Fatal("worker did not start within 30 s")
	}
	s.T.Cleanup(func() {
		cctx, ccancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer ccancel()
		if _, c, err := openCatalog(); err == nil {
			pipes, _ := c.List(cctx, catalog.KindPipe, s.Schema)
			for _, p := range pipes {
				_ = orch.Terminate(cctx, s.Eng.PipeWorkflowID(p.Name), "test finished")
			}
		}
		cancel()
		<-done
		orch.Close()
	})
	return addr
}
