//go:build integration

package integration

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/lakepipe/lakepipe/internal/chsql"
	"github.com/lakepipe/lakepipe/internal/jobs"
	"github.com/lakepipe/lakepipe/internal/orchestrator"
	"github.com/lakepipe/lakepipe/worker"
)

// TestMaintainExpiresHistory checks that old one-shot load records expire
// while a live pipe's old records (its ledger) and recent records stay.
func TestMaintainExpiresHistory(t *testing.T) {
	s := newStack(t)
	s.withWorker()
	vol := s.volume("mvol", "in/", false)
	s.run(fmt.Sprintf(`CREATE TABLE mt (id BIGINT);
		CREATE PIPE mpipe INGEST_MODE = 'LIST' AS COPY INTO mt FROM VOLUME %s USING CSV;`, vol))
	table := s.Schema + ".mt"
	old := time.Now().Add(-30 * 24 * time.Hour).UTC()
	rows := [][]any{
		{table, "", "old-copy.csv", "", uint64(1), old, "LOADED", "", int64(0), uint64(1), uint64(0), "x", uint64(1)},
		{table, "mpipe", "old-pipe.csv", "", uint64(1), old, "LOADED", "", int64(0), uint64(1), uint64(0), "x", uint64(1)},
		{table, "", "new-copy.csv", "", uint64(1), time.Now().UTC(), "LOADED", "", int64(0), uint64(1), uint64(0), "x", uint64(1)},
	}
	if err := s.Store.InsertRows(s.Ctx, "lakepipe", "load_history", []string{"table_name", "pipe_name", "file_path", "etag", "file_size",
		"last_copy_time", "status", "first_error_message", "first_error_line", "rows_loaded", "rows_rejected", "load_id", "version"}, rows); err != nil {
		t.Fatal(err)
	}
	if err := s.Eng.Maintain(s.Ctx); err != nil {
		t.Fatal(err)
	}
	q := "SELECT file_path FROM lakepipe.load_history WHERE table_name = " + chsql.QuoteString(table) + " ORDER BY file_path"
	var got []string
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		got, _ = s.Store.Strings(s.Ctx, q)
		if len(got) == 2 {
			break
		}
	}
	if fmt.Sprint(got) != "[new-copy.csv old-pipe.csv]" {
		t.Fatalf("after maintenance: %v, want [new-copy.csv old-pipe.csv]", got)
	}
}

// TestMaintenanceSchedule: the local stack's start creates the maintenance
// Schedule of the default task queue, and a worker creates its queue's
// when it is missing; its first run (triggered at creation) runs the
// Maintain activity on the worker and completes.
func TestMaintenanceSchedule(t *testing.T) {
	s := newStack(t)
	queue := "it-" + s.ID
	cfg := temporalConfig(queue)
	orch := orchestrator.New(cfg)
	defer orch.Close()
	cl, err := orch.Client()
	if err != nil {
		t.Fatal(err)
	}
	id := jobs.MaintenanceScheduleID(queue)
	t.Cleanup(func() {
		cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = cl.ScheduleClient().GetHandle(cctx, id).Delete(cctx)
	})
	startInProcessWorkerWith(t, cfg, func(c *worker.Config) { c.MaintenanceSchedule = true })

	// The list comes from Temporal's visibility store, which the server
	// updates a moment after the schedule is created (CI once listed the
	// schedules of earlier tests but not this one's, 0.5 s after creation).
	var out []byte
	listed := func() bool {
		var err error
		out, err = exec.CommandContext(s.Ctx, stackBin("temporal"), "schedule", "list", "--address", temporalAddr).CombinedOutput()
		if err != nil {
			t.Fatalf("temporal schedule list: %v\n%s", err, out)
		}
		for _, want := range []string{jobs.MaintenanceScheduleID(""), id} {
			if !strings.Contains(string(out), want) {
				return false
			}
		}
		return true
	}
	start := time.Now()
	for !listed() {
		if time.Since(start) > 30*time.Second {
			t.Fatalf("temporal schedule list does not list %s and %s after 30 s:\n%s", jobs.MaintenanceScheduleID(""), id, out)
		}
		time.Sleep(500 * time.Millisecond)
	}
	var desc client.ScheduleDescription
	var runID string
	pipeWait(t, time.Minute, "the schedule's first run completes", func() bool {
		d, err := cl.ScheduleClient().GetHandle(s.Ctx, id).Describe(s.Ctx)
		if err != nil {
			t.Fatal(err)
		}
		desc = *d
		for _, a := range d.Info.RecentActions {
			if a.StartWorkflowResult == nil {
				continue
			}
			r, err := cl.DescribeWorkflowExecution(s.Ctx, a.StartWorkflowResult.WorkflowID, a.StartWorkflowResult.FirstExecutionRunID)
			if err == nil && r.GetWorkflowExecutionInfo().GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED {
				runID = a.StartWorkflowResult.WorkflowID
				return true
			}
		}
		return false
	})
	if got := desc.Schedule.Spec.Intervals; len(got) != 1 || got[0].Every != time.Hour {
		t.Errorf("schedule intervals %+v, want every hour", got)
	}
	// A second worker leaves the existing Schedule alone.
	if err := orch.EnsureMaintenanceSchedule(s.Ctx); err != nil {
		t.Fatalf("EnsureMaintenanceSchedule on an existing schedule: %v", err)
	}
	// With LAKEPIPE_RECORD_HISTORY=dir, the run's history is the replay
	// test of MaintenanceWorkflow.
	if dir := os.Getenv("LAKEPIPE_RECORD_HISTORY"); dir != "" {
		s.Orch = orch
		recordHistory(t, s, runID, filepath.Join(dir, "maintenance.json"))
	}
}
