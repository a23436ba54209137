//go:build integration

package integration

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"

	"github.com/lakepipe/lakepipe/internal/jobs"
)

// TestPipeHistory: pipe_history('p') has one row per turn that loaded,
// and they agree with the pipe's Temporal history: one row per CopyFiles
// (KafkaBatch) activity that completed, under the workflow's run id, with
// the files, rows and bytes the turn loaded (the offsets a batch moved);
// the rows are filterable by the pipe's query_tag, as the ClickZetta
// Lakehouse documentation filters job history.
func TestPipeHistory(t *testing.T) {
	s := newStack(t)
	s.withWorker()
	s.volume("hist_vol", "hist", false)
	s.pipeTable("hist_t")
	s.run(`CREATE PIPE hist_pipe INGEST_MODE = 'LIST' POLL_INTERVAL_IN_SECONDS = '1' AS COPY INTO hist_t FROM VOLUME hist_vol USING CSV`)
	s.put("hist/a.csv", csvRows(1, 3))
	s.put("hist/b.csv", csvRows(4, 2))
	pipeWait(t, time.Minute, "a.csv and b.csv load", func() bool { return s.pipeCount("hist_t") == 5 })
	s.put("hist/c.csv", csvRows(6, 4))
	pipeWait(t, time.Minute, "c.csv loads", func() bool { return s.pipeCount("hist_t") == 9 })
	s.pipeWaitTurns("hist_pipe", 3, time.Minute) // idle turns write no history

	tag := s.Eng.PipeWorkflowID("hist_pipe")
	h := s.run(fmt.Sprintf(`SELECT run_id, job_id, status, files, rows_loaded, bytes FROM pipe_history('hist_pipe') WHERE query_tag = '%s' ORDER BY start_time, job_id`, tag))
	rows := table(h)
	var files, loaded, bytes int
	got := map[string]bool{}
	for _, r := range rows {
		if r[2] != "SUCCEEDED" {
			t.Errorf("turn %v: status %s", r, r[2])
		}
		f, _ := strconv.Atoi(r[3])
		n, _ := strconv.Atoi(r[4])
		b, _ := strconv.Atoi(r[5])
		files, loaded, bytes = files+f, loaded+n, bytes+b
		got[r[0]+"/"+r[1]] = true
	}
	if files != 3 || loaded != 9 || bytes != len(csvRows(1, 3))+len(csvRows(4, 2))+len(csvRows(6, 4)) {
		t.Fatalf("pipe_history: %d files, %d rows, %d bytes; want 3, 9 and the files' bytes:\n%s", files, loaded, bytes, rowsText(h))
	}

	// The Temporal history: the same turns, by run id and activity id.
	cl, err := s.Orch.Client()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	it := cl.GetWorkflowHistory(s.Ctx, tag, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	var runID string
	scheduled := map[int64]string{} // event id → activity id of CopyFiles
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		if a := ev.GetWorkflowExecutionStartedEventAttributes(); a != nil {
			runID = a.GetOriginalExecutionRunId()
		}
		if a := ev.GetActivityTaskScheduledEventAttributes(); a != nil && a.GetActivityType().GetName() == "CopyFiles" {
			scheduled[ev.GetEventId()] = a.GetActivityId()
		}
		if a := ev.GetActivityTaskCompletedEventAttributes(); a != nil {
			if id, ok := scheduled[a.GetScheduledEventId()]; ok {
				want[runID+"/"+id] = true
			}
		}
	}
	if len(want) == 0 || fmt.Sprint(sortedKeys(got)) != fmt.Sprint(sortedKeys(want)) {
		t.Fatalf("pipe_history turns %v, Temporal's completed CopyFiles %v", sortedKeys(got), sortedKeys(want))
	}

	// A Kafka pipe's turns carry the offsets they moved.
	topic := "hist_" + s.ID
	prod := kafkaTopic(t, topic, 1)
	produce(t, prod, logLine(s.ID, 0, "INFO"), logLine(s.ID, 1, "INFO"))
	s.run(`CREATE TABLE hist_logs (log_time TIMESTAMP, level STRING, message STRING)`)
	s.run(kafkaPipeSQL("hist_kafka", "hist_logs", topic, "hist_group_"+s.ID, 0, ""))
	s.dropAtEnd("PIPE", "hist_kafka")
	pipeWait(t, time.Minute, "the records load", func() bool { return s.pipeScalar(`SELECT COUNT(*) FROM hist_logs`) == "2" })
	pipeWait(t, 30*time.Second, "the batch's history", func() bool {
		return rowsText(s.run(`SELECT offsets_before, offsets_after, rows_loaded FROM pipe_history('hist_kafka')`)) == "0:0|0:2|2"
	})
	if n := len(table(s.run(`SELECT * FROM pipe_history()`))); n < len(rows)+1 {
		t.Fatalf("pipe_history() lists %d turns of the schema's pipes, want at least %d", n, len(rows)+1)
	}
	s.mustFail(`SELECT * FROM pipe_history('no_such_pipe')`, "no_such_pipe")
}

func sortedKeys(m map[string]bool) []string { return slices.Sorted(maps.Keys(m)) }

// TestKafkaPipeSetBatchSize: BATCH_SIZE_PER_KAFKA_PARTITION changes on a
// running Kafka pipe: batches of at most 3 records, then, once set to 100,
// one batch takes the 20 records that wait (pipe_history shows each).
func TestKafkaPipeSetBatchSize(t *testing.T) {
	s := newStack(t)
	s.withWorker()
	topic := "bsz_" + s.ID
	prod := kafkaTopic(t, topic, 1)
	var first []string
	for i := 0; i < 9; i++ {
		first = append(first, logLine(s.ID, i, "INFO"))
	}
	produce(t, prod, first...)
	s.run(`CREATE TABLE bsz_logs (log_time TIMESTAMP, level STRING, message STRING)`)
	s.run(kafkaPipeSQL("bsz_pipe", "bsz_logs", topic, "bsz_group_"+s.ID, 0, "BATCH_SIZE_PER_KAFKA_PARTITION = '3'"))
	s.dropAtEnd("PIPE", "bsz_pipe")
	pipeWait(t, time.Minute, "the first 9 records load", func() bool { return s.pipeScalar(`SELECT COUNT(*) FROM bsz_logs`) == "9" })
	if m := s.pipeScalar(`SELECT max(rows_loaded) FROM pipe_history('bsz_pipe')`); m != "3" {
		t.Fatalf("largest batch with BATCH_SIZE_PER_KAFKA_PARTITION = 3: %s rows", m)
	}
	// Each batch that left a backlog handed the next its end (NextEnd):
	// one KafkaEnd, before the first batch, for the three.
	markers, batches := 0, 0
	for _, ev := range historyOf(t, s, s.Eng.PipeWorkflowID("bsz_pipe")) {
		switch {
		case ev.GetEventType() == enumspb.EVENT_TYPE_MARKER_RECORDED && ev.GetMarkerRecordedEventAttributes().GetMarkerName() == "LocalActivity":
			markers++
		case ev.GetEventType() == enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED && ev.GetActivityTaskScheduledEventAttributes().GetActivityType().GetName() == jobs.ActivityKafkaBatch:
			batches++
		}
	}
	if markers != 1 || batches != 3 {
		t.Fatalf("9 records in batches of 3: %d KafkaEnd markers and %d batches, want 1 and 3", markers, batches)
	}
	s.run(`ALTER PIPE bsz_pipe SET PIPE_EXECUTION_PAUSED = true`)
	s.run(`ALTER PIPE bsz_pipe SET BATCH_SIZE_PER_KAFKA_PARTITION = '100'`)
	var more []string
	for i := 9; i < 29; i++ {
		more = append(more, logLine(s.ID, i, "INFO"))
	}
	produce(t, prod, more...)
	s.run(`ALTER PIPE bsz_pipe SET PIPE_EXECUTION_PAUSED = false`)
	pipeWait(t, time.Minute, "the next 20 records load", func() bool { return s.pipeScalar(`SELECT COUNT(*) FROM bsz_logs`) == "29" })
	pipeWait(t, 30*time.Second, "one batch of the 20 records", func() bool {
		return s.pipeScalar(`SELECT max(rows_loaded) FROM pipe_history('bsz_pipe')`) == "20"
	})
	if dir := os.Getenv("LAKEPIPE_RECORD_HISTORY"); dir != "" {
		recordDroppedPipe(t, s, "bsz_pipe", dir, "pipe_kafka_next_end.json")
	}
}
