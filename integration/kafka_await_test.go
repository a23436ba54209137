//go:build integration

package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"

	"github.com/lakepipe/lakepipe/internal/jobs"
)

// TestKafkaPipeIdleWaits: an idle Kafka pipe waits in AwaitRecords on the
// await queue. Fifteen idle seconds at a one-second batch interval add no
// event to its history (on timers they were 6 events an interval), DESC
// PIPE counts the wait's reads as turns, and records produced meanwhile
// load within a few intervals. ALTER PIPE … SET restarts the wait, a pause
// ends it, and the pipe waits again after its resume.
func TestKafkaPipeIdleWaits(t *testing.T) {
	s := newStack(t)
	s.withWorker()
	topic := "idle_" + s.ID
	prod := kafkaTopic(t, topic, 2)
	line := func(i int) string { return logLine(s.ID, i, "INFO") }
	produce(t, prod, line(0), line(1), line(2))
	s.run(`CREATE TABLE idle_logs (log_time TIMESTAMP, level STRING, message STRING)`)
	s.run(kafkaPipeSQL("idle_pipe", "idle_logs", topic, "idle_"+s.ID, 0, ""))
	s.dropAtEnd("PIPE", "idle_pipe")
	count := func() string { return s.pipeScalar(`SELECT COUNT(*) FROM idle_logs`) }
	pipeWait(t, time.Minute, "the 3 records load", func() bool { return count() == "3" })

	cl, err := s.Orch.Client()
	must(t, err)
	id := s.Eng.PipeWorkflowID("idle_pipe")
	// history is the run's length and whether AwaitRecords is pending.
	history := func() (int64, bool) {
		d, err := cl.DescribeWorkflowExecution(s.Ctx, id, "")
		must(t, err)
		waiting := false
		for _, pa := range d.GetPendingActivities() {
			waiting = waiting || pa.GetActivityType().GetName() == jobs.ActivityAwaitRecords
		}
		return d.GetWorkflowExecutionInfo().GetHistoryLength(), waiting
	}
	waits := func(what string) {
		pipeWait(t, 30*time.Second, what, func() bool { _, w := history(); return w })
	}
	waits("the idle pipe waits in AwaitRecords")

	events, _ := history()
	turns := s.pipeTurns("idle_pipe")
	time.Sleep(15 * time.Second)
	after, waiting := history()
	if after != events || !waiting {
		t.Fatalf("15 idle seconds: %d history events (want 0), still waiting %v", after-events, waiting)
	}
	// The wait's heartbeats (every 12 s at this interval) carry its reads.
	pipeWait(t, 30*time.Second, "DESC PIPE counts the wait's reads", func() bool { return s.pipeTurns("idle_pipe") >= turns+5 })

	start := time.Now()
	produce(t, prod, line(3), line(4))
	pipeWait(t, 30*time.Second, "records produced while idle load", func() bool { return count() == "5" })
	t.Logf("records produced while the pipe waited loaded in %v", time.Since(start).Round(time.Millisecond))
	waits("the pipe waits again after the batch")

	// A new interval restarts the wait under it; a pause ends it; a resume
	// turns and waits again.
	s.run(`ALTER PIPE idle_pipe SET BATCH_INTERVAL_IN_SECONDS = '2'`)
	produce(t, prod, line(5))
	pipeWait(t, 30*time.Second, "a record after ALTER PIPE … SET loads", func() bool { return count() == "6" })
	s.run(`ALTER PIPE idle_pipe SET PIPE_EXECUTION_PAUSED = TRUE`)
	pipeWait(t, 30*time.Second, "the paused pipe stops waiting", func() bool { _, w := history(); return !w })
	produce(t, prod, line(6))
	time.Sleep(3 * time.Second)
	if got := count(); got != "6" {
		t.Fatalf("a paused pipe loaded: %s rows", got)
	}
	s.run(`ALTER PIPE idle_pipe SET PIPE_EXECUTION_PAUSED = FALSE`)
	pipeWait(t, 30*time.Second, "the record produced while paused loads after the resume", func() bool { return count() == "7" })
	waits("the resumed pipe waits again")
	wantRows(t, "every record once", s.run(`SELECT COUNT(DISTINCT message), COUNT(*) FROM idle_logs`), "7|7")
	// The waits the workflow cancelled (the SET replaced one, the pause
	// ended one) end as cancelled in the history, not as failed: the SET's
	// newer wait ends the older on this worker, which then waits for
	// Temporal to tell it of the cancellation.
	// A wait learns of its cancellation from the answer to a heartbeat,
	// which the SDK sends once per throttle interval (just under the
	// wait's heartbeat timeout, 15 s here); one that stopped heartbeating
	// ends timed out after that timeout.
	var ended map[int64]enumspb.EventType // by the event that scheduled it
	deadline := time.Now().Add(90 * time.Second)
	for {
		ended = map[int64]enumspb.EventType{}
		how := map[int64]enumspb.EventType{}
		for _, ev := range historyOf(t, s, id) {
			switch ev.GetEventType() {
			case enumspb.EVENT_TYPE_ACTIVITY_TASK_CANCEL_REQUESTED:
				ended[ev.GetActivityTaskCancelRequestedEventAttributes().GetScheduledEventId()] = enumspb.EVENT_TYPE_UNSPECIFIED
			case enumspb.EVENT_TYPE_ACTIVITY_TASK_CANCELED:
				how[ev.GetActivityTaskCanceledEventAttributes().GetScheduledEventId()] = ev.GetEventType()
			case enumspb.EVENT_TYPE_ACTIVITY_TASK_FAILED:
				how[ev.GetActivityTaskFailedEventAttributes().GetScheduledEventId()] = ev.GetEventType()
			case enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
				how[ev.GetActivityTaskCompletedEventAttributes().GetScheduledEventId()] = ev.GetEventType()
			case enumspb.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT:
				how[ev.GetActivityTaskTimedOutEventAttributes().GetScheduledEventId()] = ev.GetEventType()
			}
		}
		all := len(ended) >= 2
		for id := range ended {
			if ended[id] = how[id]; ended[id] == enumspb.EVENT_TYPE_UNSPECIFIED {
				all = false
			}
		}
		if all {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 90 s, the waits asked to cancel and how they ended (by the event that scheduled them; Unspecified: not yet): %v; want 2 at least, all ended. The history:\n%s", ended, eventList(historyOf(t, s, id)))
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("the waits asked to cancel, and how they ended: %v", ended)
	for id, how := range ended {
		if how == enumspb.EVENT_TYPE_ACTIVITY_TASK_FAILED || how == enumspb.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT {
			t.Errorf("the wait scheduled at event %d ended %v: a wait its workflow cancelled must end cancelled", id, how)
		}
	}
	if dir := os.Getenv("LAKEPIPE_RECORD_HISTORY"); dir != "" {
		recordHistory(t, s, id, filepath.Join(dir, "pipe_kafka_await.json"))
	}
}

// eventList is a workflow history one event a line: its id, its type, and
// for an activity its type or the event that scheduled it; for a signal,
// its name.
func eventList(events []*historypb.HistoryEvent) string {
	var b strings.Builder
	for _, ev := range events {
		fmt.Fprintf(&b, "%4d %v", ev.GetEventId(), ev.GetEventType())
		switch {
		case ev.GetActivityTaskScheduledEventAttributes() != nil:
			fmt.Fprintf(&b, " %s", ev.GetActivityTaskScheduledEventAttributes().GetActivityType().GetName())
		case ev.GetWorkflowExecutionSignaledEventAttributes() != nil:
			fmt.Fprintf(&b, " %s", ev.GetWorkflowExecutionSignaledEventAttributes().GetSignalName())
		case ev.GetActivityTaskCancelRequestedEventAttributes() != nil:
			fmt.Fprintf(&b, " of %d", ev.GetActivityTaskCancelRequestedEventAttributes().GetScheduledEventId())
		case ev.GetActivityTaskStartedEventAttributes() != nil:
			fmt.Fprintf(&b, " of %d", ev.GetActivityTaskStartedEventAttributes().GetScheduledEventId())
		case ev.GetActivityTaskCompletedEventAttributes() != nil:
			fmt.Fprintf(&b, " of %d", ev.GetActivityTaskCompletedEventAttributes().GetScheduledEventId())
		case ev.GetActivityTaskFailedEventAttributes() != nil:
			fmt.Fprintf(&b, " of %d", ev.GetActivityTaskFailedEventAttributes().GetScheduledEventId())
		case ev.GetActivityTaskCanceledEventAttributes() != nil:
			fmt.Fprintf(&b, " of %d", ev.GetActivityTaskCanceledEventAttributes().GetScheduledEventId())
		case ev.GetActivityTaskTimedOutEventAttributes() != nil:
			fmt.Fprintf(&b, " of %d", ev.GetActivityTaskTimedOutEventAttributes().GetScheduledEventId())
		}
		fmt.Fprintf(&b, " %s\n", ev.GetEventTime().AsTime().Format("15:04:05.000"))
	}
	return b.String()
}
