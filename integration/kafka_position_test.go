//go:build integration

package integration

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"

	"github.com/lakepipe/lakepipe/internal/core"
	"github.com/lakepipe/lakepipe/internal/jobs"
)

// TestKafkaBatchCommittedOnce: a batch the pipe committed is not loaded
// again, whether its retry comes because the answer of the attempt that
// committed it was lost (the worker died just after), or its workflow was
// reset to before it: the retry answers with the committed result, and
// a batch behind the pipe's committed position goes on from it. Before,
// a retry removed the batch's registered rows and loaded them again (a
// refresh or a stream read in between took the commit without them), and
// a batch run again after a reset loaded its records twice.
func TestKafkaBatchCommittedOnce(t *testing.T) {
	s := newStack(t)
	s.withWorker()
	topic := "pos_" + s.ID
	prod := kafkaTopic(t, topic, 2)
	s.run(`CREATE TABLE pos_logs (log_time TIMESTAMP, level STRING, message STRING)`)
	s.run(`ALTER TABLE pos_logs SET PROPERTIES ('change_tracking' = 'true')`)
	s.run(kafkaPipeSQL("pos_pipe", "pos_logs", topic, "pos_group_"+s.ID, 0, ""))
	s.dropAtEnd("PIPE", "pos_pipe")
	// The workflow loads nothing: this test runs the batches itself.
	s.run(`ALTER PIPE pos_pipe SET PIPE_EXECUTION_PAUSED = TRUE`)
	params, err := s.Eng.PipeParams(s.Ctx, "pos_pipe")
	must(t, err)
	run, err := s.Eng.OpenKafkaPipe(s.Ctx, params)
	must(t, err)
	start := []jobs.PartitionOffset{{Partition: 0, Offset: 0}, {Partition: 1, Offset: 0}}
	batch := func(from []jobs.PartitionOffset, retried bool) jobs.KafkaBatchResult {
		t.Helper()
		res, err := run.LoadBatch(s.Ctx, jobs.KafkaBatchInput{Params: params, Offsets: from}, retried)
		must(t, err)
		return res
	}
	count := func() int {
		n, err := strconv.Atoi(s.pipeScalar(`SELECT COUNT(*) FROM pos_logs`))
		must(t, err)
		return n
	}
	chScalar := func(q string) string {
		t.Helper()
		v, err := s.Store.Strings(s.Ctx, q)
		must(t, err)
		return strings.Join(v, ",")
	}
	mutations := func() string {
		return chScalar(fmt.Sprintf(`SELECT toString(count()) FROM system.mutations WHERE database = '%s' AND table = 'pos_logs'`, s.Schema))
	}
	commits := func() string {
		return chScalar(fmt.Sprintf(`SELECT toString(count()) FROM lakepipe.table_commits WHERE db = '%s' AND table = 'pos_logs'`, s.Schema))
	}

	produce(t, prod, logLines(s.ID, 0, 10)...)
	first := batch(start, false)
	if first.Rows != 10 || count() != 10 {
		t.Fatalf("the first batch loaded %d rows, %d in the table, want 10", first.Rows, count())
	}
	// Its answer lost: the retry answers with the committed result.
	again := batch(start, true)
	if !slices.Equal(again.Offsets, first.Offsets) || again.Rows != first.Rows {
		t.Fatalf("the retry of a committed batch answered %+v, want %+v", again, first)
	}
	if n, m := count(), mutations(); n != 10 || m != "0" {
		t.Fatalf("after the retry of a committed batch: %d rows, %s mutations of the table, want 10 and none (its rows were removed and loaded again)", n, m)
	}

	produce(t, prod, logLines(s.ID, 10, 6)...)
	second := batch(first.Offsets, false)
	if second.Rows != 6 || count() != 16 {
		t.Fatalf("the second batch loaded %d rows, %d in the table, want 6 and 16", second.Rows, count())
	}
	// The workflow reset to before the second batch: it runs again, and
	// answers as it did.
	if res := batch(first.Offsets, false); !slices.Equal(res.Offsets, second.Offsets) || res.Rows != second.Rows {
		t.Fatalf("the last batch run again answered %+v, want %+v", res, second)
	}
	// Reset to before the first: it goes on from the end of the second.
	if res := batch(start, false); !slices.Equal(res.Offsets, second.Offsets) || res.Rows != 0 || !res.More {
		t.Fatalf("a batch from %v run again answered %+v, want to go on from %v at once, with no rows", start, res, second.Offsets)
	}
	if n, m := count(), mutations(); n != 16 || m != "0" {
		t.Fatalf("after batches run again: %d rows, %s mutations, want 16 and none", n, m)
	}
	if c := commits(); c != "2" {
		t.Fatalf("the change log has %s commits of the table, want 2", c)
	}

	// A batch that started and did not commit, whose attempt left rows
	// (here written by hand), and whose retry never comes: the workflow
	// was reset. The reset run's first attempt removes them.
	produce(t, prod, logLines(s.ID, 16, 3)...)
	commit := core.KafkaCommit(params.Workspace, params.Schema, params.Name, params.Generation, 0, second.Offsets)
	from, err := json.Marshal(second.Offsets)
	must(t, err)
	owner := core.PipeOwner(params.Schema, params.Name, params.Generation)
	must(t, s.Store.InsertRows(s.Ctx, "lakepipe", "kafka_positions", []string{"owner", "epoch", "commit_id", "committed", "start", "version", "written_at"},
		[][]any{{owner, int64(0), commit, uint8(0), string(from), uint64(1 << 40), time.Now().UTC()}}))
	must(t, s.Store.InsertRows(s.Ctx, s.Schema, "pos_logs", []string{"log_time", "level", "message", core.CommitColumn},
		[][]any{{time.Now().UTC(), "INFO", "left by a dead attempt", commit}, {time.Now().UTC(), "INFO", "left by a dead attempt", commit}}))
	if n := count(); n != 18 {
		t.Fatalf("%d rows with the dead attempt's, want 18", n)
	}
	if third := batch(second.Offsets, false); third.Rows != 3 || count() != 19 {
		t.Fatalf("the batch after them loaded %d rows, %d in the table, want 3 and 19 (the dead attempt's rows removed)", third.Rows, count())
	}
}

// TestKafkaPipeWorkflowReset: a Kafka pipe whose workflow is reset (the
// Temporal UI's Reset, `temporal workflow reset`) to before its last
// batch goes on from where the pipe was: no record loads twice.
func TestKafkaPipeWorkflowReset(t *testing.T) {
	s := newStack(t)
	s.withWorker()
	topic := "wfreset_" + s.ID
	prod := kafkaTopic(t, topic, 2)
	produce(t, prod, logLines(s.ID, 0, 10)...)
	s.run(`CREATE TABLE wfreset_logs (log_time TIMESTAMP, level STRING, message STRING)`)
	s.run(kafkaPipeSQL("wfreset_pipe", "wfreset_logs", topic, "wfreset_group_"+s.ID, 0, ""))
	s.dropAtEnd("PIPE", "wfreset_pipe")
	count := func() string { return s.pipeScalar(`SELECT COUNT(*) FROM wfreset_logs`) }
	pipeWait(t, time.Minute, "the first 10 records load", func() bool { return count() == "10" })
	produce(t, prod, logLines(s.ID, 10, 6)...)
	pipeWait(t, time.Minute, "the next 6 records load", func() bool { return count() == "16" })

	// The workflow task that took the first batch's result: the reset
	// runs the pipe again from there.
	wfID := s.Eng.PipeWorkflowID("wfreset_pipe")
	events := historyOf(t, s, wfID)
	batches := map[int64]bool{} // scheduled event ids of KafkaBatch
	var resetAt int64
	for i, ev := range events {
		if a := ev.GetActivityTaskScheduledEventAttributes(); a != nil && a.GetActivityType().GetName() == jobs.ActivityKafkaBatch {
			batches[ev.GetEventId()] = true
		}
		if a := ev.GetActivityTaskCompletedEventAttributes(); a != nil && batches[a.GetScheduledEventId()] {
			for _, later := range events[i+1:] {
				if later.GetEventType() == enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED {
					resetAt = later.GetEventId()
					break
				}
			}
			break
		}
	}
	if resetAt == 0 {
		t.Fatalf("no workflow task after the first KafkaBatch in the history of %s", wfID)
	}
	cl, err := s.Orch.Client()
	must(t, err)
	desc, err := cl.DescribeWorkflowExecution(s.Ctx, wfID, "")
	must(t, err)
	_, err = cl.WorkflowService().ResetWorkflowExecution(s.Ctx, &workflowservice.ResetWorkflowExecutionRequest{
		Namespace:                 "default",
		WorkflowExecution:         &commonpb.WorkflowExecution{WorkflowId: wfID, RunId: desc.GetWorkflowExecutionInfo().GetExecution().GetRunId()},
		Reason:                    "TestKafkaPipeWorkflowReset",
		WorkflowTaskFinishEventId: resetAt,
		RequestId:                 "reset-" + s.ID,
	})
	must(t, err)
	// The reset run replays the second batch's turn; new records show it
	// has gone on.
	produce(t, prod, logLines(s.ID, 16, 3)...)
	pipeWait(t, time.Minute, "the records after the reset load", func() bool { return count() != "16" })
	time.Sleep(3 * time.Second) // a batch loading the 6 again would have done so by now
	if got := count(); got != "19" {
		t.Fatalf("after the workflow's reset to before its second batch: %s rows, want 19 (each record once)", got)
	}
	wantRows(t, "each record once", s.run(`SELECT COUNT(DISTINCT message) FROM wfreset_logs`), "19")
}
