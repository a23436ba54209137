//go:build integration

package integration

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"

	"github.com/lakepipe/lakepipe/internal/core"
	"github.com/lakepipe/lakepipe/internal/jobs"
	"github.com/lakepipe/lakepipe/internal/orchestrator"
	"github.com/lakepipe/lakepipe/worker"
)

// temporalList runs `temporal workflow list --query q` and returns the
// workflow ids it lists.
func temporalList(t *testing.T, ctx context.Context, q string) []string {
	t.Helper()
	out, err := exec.CommandContext(ctx, stackBin("temporal"), "workflow", "list",
		"--address", temporalAddr, "--query", q, "-o", "json").Output()
	if err != nil {
		t.Fatalf("temporal workflow list --query %q: %v", q, err)
	}
	var rows []struct {
		Execution struct {
			WorkflowID string `json:"workflowId"`
		} `json:"execution"`
	}
	// The CLI prints one JSON array (or nothing when none match).
	if s := strings.TrimSpace(string(out)); s != "" {
		if err := json.Unmarshal([]byte(s), &rows); err != nil {
			t.Fatalf("temporal workflow list output: %v\n%s", err, out)
		}
	}
	var ids []string
	for _, r := range rows {
		ids = append(ids, r.Execution.WorkflowID)
	}
	slices.Sort(ids)
	return ids
}

// TestControlPlane: ALTER sends updates and prints the state the workflow
// took; a validator's refusal reaches `lakepipe sql` with its reason; the
// Temporal CLI filters pipes by the search attributes; SHOW PIPES and SHOW
// DYNAMIC TABLES answer from visibility.
func TestControlPlane(t *testing.T) {
	s := newStack(t)
	s.withWorker()
	s.run(`CREATE TABLE logs (log_time TIMESTAMP, level STRING, message STRING)`)
	for _, p := range []string{"k1", "k2"} {
		topic := "cp_" + p + "_" + s.ID
		kafkaTopic(t, topic, 1)
		s.run(kafkaPipeSQL(p, "logs", topic, topic, 0, ""))
		s.dropAtEnd("PIPE", p)
	}
	s.volume("cp_vol", "cp-landing", false)
	s.pipeTable("cp_t")
	s.run("CREATE PIPE v1 POLL_INTERVAL_IN_SECONDS = '1' AS COPY INTO cp_t FROM VOLUME cp_vol USING CSV")
	s.dropAtEnd("PIPE", "v1")
	s.put("cp-landing/a.csv", csvRows(1, 3))
	pipeWait(t, time.Minute, "v1 loads a.csv", func() bool { return s.pipeCount("cp_t") == 3 })

	// Pause k1 and v1: the reply is the state they took.
	for _, p := range []string{"k1", "v1"} {
		res := s.run("ALTER PIPE " + p + " SET PIPE_EXECUTION_PAUSED = TRUE")
		checkMessage(t, res.Message, "pipe "+p+" altered", "PAUSED")
	}
	// A refresh of a paused pipe is refused by the workflow's validator,
	// and `lakepipe sql` prints why.
	out := s.sqlCLI("", "-e", "ALTER PIPE k1 REFRESH")
	if out.Code == 0 || !strings.Contains(out.Stderr, "paused") || !strings.Contains(out.Stderr, "PIPE_EXECUTION_PAUSED = FALSE") {
		t.Fatalf("ALTER PIPE k1 REFRESH on a paused pipe: exit %d, stdout %q, stderr %q; want the validator's reason", out.Code, out.Stdout, out.Stderr)
	}
	// The Temporal CLI lists exactly the paused Kafka pipes.
	q := `LakepipeKind="KAFKA_PIPE" AND LakepipeStatus="PAUSED" AND LakepipeSchema="` + s.Schema + `"`
	want := []string{s.Eng.PipeWorkflowID("k1")}
	var got []string
	pipeWait(t, 30*time.Second, "the Temporal CLI lists the paused Kafka pipe", func() bool {
		got = temporalList(t, s.Ctx, q)
		return slices.Equal(got, want)
	})
	if all := temporalList(t, s.Ctx, `LakepipeSchema="`+s.Schema+`" AND LakepipeStatus="PAUSED"`); len(all) != 2 {
		t.Fatalf("paused pipes of the schema: %v, want k1 and v1", all)
	}

	// SHOW PIPES from visibility: no workflow query at all.
	counting := &countingOrch{Orchestrator: s.Orch}
	eng := s.Eng.WithOrchestrator(counting)
	// counted runs a statement with the counting orchestrator.
	counted := func(sql string) *core.Result {
		prev := s.Eng
		s.Eng = eng
		defer func() { s.Eng = prev }()
		return s.run(sql)
	}
	var show *core.Result
	pipeWait(t, 30*time.Second, "SHOW PIPES shows k1 and v1 SUSPENDED", func() bool {
		show = counted("SHOW PIPES")
		st := map[string]string{}
		for _, r := range table(show) {
			st[r[0]] = r[column(t, show, "status")]
		}
		return st["k1"] == "SUSPENDED" && st["v1"] == "SUSPENDED" && st["k2"] == "RUNNING"
	})
	for _, r := range table(show) {
		if r[0] == "v1" && (r[column(t, show, "files_loaded")] != "1" || r[column(t, show, "rows_loaded")] != "3") {
			t.Errorf("SHOW PIPES v1 figures: files %s rows %s, want 1 and 3", r[column(t, show, "files_loaded")], r[column(t, show, "rows_loaded")])
		}
	}
	if n := counting.queries.Load(); n != 0 {
		t.Fatalf("SHOW PIPES queried %d workflows; it should read visibility only", n)
	}

	// Resume: RUNNING again, everywhere.
	checkMessage(t, s.run("ALTER PIPE k1 SET PIPE_EXECUTION_PAUSED = FALSE").Message, "RUNNING")
	pipeWait(t, 30*time.Second, "no paused Kafka pipe is listed after the resume", func() bool { return len(temporalList(t, s.Ctx, q)) == 0 })

	// Dynamic tables: SUSPEND replies SUSPENDED; SHOW DYNAMIC TABLES says so
	// without querying the workflow.
	s.run(`CREATE DYNAMIC TABLE cp_dt REFRESH INTERVAL 1 HOUR AS SELECT level, COUNT(*) AS n FROM logs GROUP BY level`)
	s.dropAtEnd("DYNAMIC TABLE", "cp_dt")
	checkMessage(t, s.run("ALTER DYNAMIC TABLE cp_dt SUSPEND").Message, "dynamic table", "cp_dt", "SUSPENDED")
	pipeWait(t, 30*time.Second, "SHOW DYNAMIC TABLES says SUSPENDED", func() bool {
		rs := counted("SHOW DYNAMIC TABLES")
		return len(rs.Rows) == 1 && table(rs)[0][column(t, rs, "state")] == "SUSPENDED"
	})
	if n := counting.queries.Load(); n != 0 {
		t.Fatalf("SHOW DYNAMIC TABLES queried %d workflows; it should read visibility only", n)
	}

	// With LAKEPIPE_RECORD_HISTORY=dir, the histories of k1 (updates and
	// search attribute upserts), v1 (loads on the load queue, the memo's
	// figures) and of the dynamic table are the replay tests of runs with
	// lakepipe's search attributes.
	if dir := os.Getenv("LAKEPIPE_RECORD_HISTORY"); dir != "" {
		recordDroppedPipe(t, s, "k1", dir, "pipe_control_updates.json")
		recordDroppedPipe(t, s, "v1", dir, "pipe_volume_figures.json")
		dtID := s.Eng.DynamicTableWorkflowID("cp_dt")
		s.run("DROP DYNAMIC TABLE cp_dt")
		pipeWait(t, 30*time.Second, "the dropped table's workflow ends", func() bool {
			st, err := s.Orch.Query(s.Ctx, dtID, "status", new(any))
			return err != nil || st != "RUNNING"
		})
		recordHistory(t, s, dtID, filepath.Join(dir, "dynamic_table_updates.json"))
	}
}

// TestControlPlaneWithoutWorker: with no worker running, SHOW PIPES still
// answers from visibility, and ALTER PIPE falls back to the signal after
// the update finds no worker, saying so.
func TestControlPlaneWithoutWorker(t *testing.T) {
	s := newStack(t)
	// Pipes on a task queue no worker polls: their workflows exist, with
	// their search attributes, and never run a task.
	orch := orchestrator.New(temporalConfig("it-idle-" + s.ID))
	t.Cleanup(func() {
		cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		terminateSchemaWorkflows(cctx, orch, s.Eng, s.Schema)
		orch.Close()
	})
	counting := &countingOrch{Orchestrator: orch}
	s.Eng = s.Eng.WithOrchestrator(counting)
	s.volume("idle_vol1", "idle-landing1", false)
	s.volume("idle_vol2", "idle-landing2", false)
	s.pipeTable("idle_t")
	s.run("CREATE PIPE idle1 AS COPY INTO idle_t FROM VOLUME idle_vol1 USING CSV")
	s.run("CREATE PIPE idle2 AS COPY INTO idle_t FROM VOLUME idle_vol2 USING CSV")
	res := s.run("SHOW PIPES")
	if got := len(res.Rows); got != 2 {
		t.Fatalf("SHOW PIPES: %d rows, want 2", got)
	}
	for _, r := range table(res) {
		if st := r[column(t, res, "status")]; st != "RUNNING" {
			t.Errorf("SHOW PIPES %s: status %s, want RUNNING", r[0], st)
		}
	}
	if n := counting.queries.Load(); n != 0 {
		t.Fatalf("SHOW PIPES queried %d workflows with no worker running", n)
	}
	checkMessage(t, s.run("ALTER PIPE idle1 SET PIPE_EXECUTION_PAUSED = TRUE").Message, "no worker answered", "signal", "lakepipe worker")

	// A REFRESH runs in the dynamic table's workflow: with no worker it
	// fails, saying why, rather than waiting for ever.
	s.run("CREATE TABLE idle_src (k INT)")
	s.run("CREATE DYNAMIC TABLE idle_dt REFRESH INTERVAL 1 HOUR AS SELECT k FROM idle_src")
	s.dropAtEnd("DYNAMIC TABLE", "idle_dt")
	s.dropAtEnd("TABLE", "idle_src")
	_, err := s.exec("REFRESH DYNAMIC TABLE idle_dt")
	if err == nil || !strings.Contains(err.Error(), "no worker took the refresh") || !strings.Contains(err.Error(), "lakepipe worker") {
		t.Fatalf("REFRESH with no worker: %v", err)
	}
}

// countingOrch counts the workflow queries an engine makes.
type countingOrch struct {
	core.Orchestrator
	queries atomic.Int64
}

func (c *countingOrch) Query(ctx context.Context, id, query string, out any) (string, error) {
	c.queries.Add(1)
	return c.Orchestrator.Query(ctx, id, query, out)
}

func (c *countingOrch) PipeStatus(ctx context.Context, id string) (*jobs.PipeStatus, string, string, error) {
	c.queries.Add(1)
	return c.Orchestrator.PipeStatus(ctx, id)
}

// TestTaskQueues: a worker that serves only the control queue and one
// that serves only the load queue load a pipe between them; the copies
// were scheduled on the load queue.
func TestTaskQueues(t *testing.T) {
	s := newStack(t)
	cfg := temporalConfig("it-" + s.ID)
	s.Eng, s.Orch, _ = pipeWorkerWith(t, s.Eng, s.Schema, cfg, func(c *worker.Config) { c.Queues = []string{"control"} })
	startInProcessWorkerWith(t, cfg, func(c *worker.Config) { c.Queues = []string{"loads"} })
	s.volume("tq_vol", "tq-landing", false)
	s.pipeTable("tq_t")
	s.run("CREATE PIPE tq POLL_INTERVAL_IN_SECONDS = '1' AS COPY INTO tq_t FROM VOLUME tq_vol USING CSV")
	s.dropAtEnd("PIPE", "tq")
	s.put("tq-landing/a.csv", csvRows(1, 3))
	pipeWait(t, time.Minute, "the pipe loads a.csv", func() bool { return s.pipeCount("tq_t") == 3 })

	cl, err := s.Orch.Client()
	if err != nil {
		t.Fatal(err)
	}
	queues := map[string]string{}
	it := cl.GetWorkflowHistory(s.Ctx, s.Eng.PipeWorkflowID("tq"), "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		if a := ev.GetActivityTaskScheduledEventAttributes(); a != nil {
			queues[a.GetActivityType().GetName()] = a.GetTaskQueue().GetName()
		}
	}
	if got, want := queues[jobs.ActivityCopyFiles], jobs.LoadQueue(cfg.TaskQueue); got != want {
		t.Errorf("CopyFiles scheduled on %q, want the load queue %q (all: %v)", got, want, queues)
	}
	if got := queues[jobs.ActivityListFiles]; got != cfg.TaskQueue {
		t.Errorf("ListFiles scheduled on %q, want the control queue %q", got, cfg.TaskQueue)
	}
}
