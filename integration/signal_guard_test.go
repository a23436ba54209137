//go:build integration

package integration

import (
	"encoding/base64"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/lakepipe/lakepipe/internal/jobs"
	"github.com/lakepipe/lakepipe/internal/orchestrator"
	"github.com/lakepipe/lakepipe/internal/payloadcodec"
	"github.com/lakepipe/lakepipe/internal/signalguard"
)

// TestRequireEncryptedSignals: a worker that requires encrypted payloads
// (LAKEPIPE_CODEC_REQUIRE=true) drops the signals the Temporal CLI sends
// without the keys (pause without input, drop and files with clear JSON
// input), counts them on /metrics, and its pipe goes on loading as if
// they never came; the same pause sent by a lakepipe client (encrypted)
// pauses it. With LAKEPIPE_RECORD_HISTORY=dir, the pipe's history is
// written there for internal/orchestrator's replay tests.
func TestRequireEncryptedSignals(t *testing.T) {
	s := newStack(t)
	// A fixed key, so that a recorded history replays in the unit tests.
	codec, err := payloadcodec.Parse("k1:" + base64.StdEncoding.EncodeToString(make([]byte, payloadcodec.KeySize)))
	if err != nil {
		t.Fatal(err)
	}
	queue := "it-" + s.ID
	var httpAddr string
	s.Eng, s.Orch, httpAddr = pipeWorkerWith(t, s.Eng, s.Schema, orchestrator.Config{Address: temporalAddr, TaskQueue: queue, Codec: codec.Requiring()})

	tbl := "guarded_" + s.ID
	s.volume("guard_vol", "guard-landing", false)
	s.pipeTable(tbl)
	s.run("CREATE PIPE guard_pipe POLL_INTERVAL_IN_SECONDS = '1' AS COPY INTO " + tbl + " FROM VOLUME guard_vol USING CSV")
	s.put("guard-landing/a.csv", csvRows(1, 3))
	pipeWait(t, time.Minute, "the pipe did not load a.csv", func() bool { return s.pipeCount(tbl) == 3 })

	wfID := s.Eng.PipeWorkflowID("guard_pipe")
	temporalBin := stackBin("temporal")
	signal := func(args ...string) {
		t.Helper()
		cmd := exec.CommandContext(s.Ctx, temporalBin, append([]string{"workflow", "signal", "--address", temporalAddr, "-w", wfID}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("temporal workflow signal %v: %v\n%s", args, err, out)
		}
	}
	signal("--name", jobs.SignalPause)
	signal("--name", jobs.SignalDrop, "--input", "null")
	signal("--name", jobs.SignalFiles, "--input", `{"Paths":["guard-landing/../../etc/passwd"]}`)

	// The signals are in the history; the pipe goes on: more turns, a new
	// file loaded, not paused, not dropped.
	s.pipeWaitTurns("guard_pipe", 3, time.Minute)
	s.put("guard-landing/b.csv", csvRows(4, 2))
	pipeWait(t, time.Minute, "the pipe did not load b.csv after the clear signals", func() bool { return s.pipeCount(tbl) == 5 })
	if d := s.pipeDesc("guard_pipe"); d["pipe_status"] != "RUNNING" {
		t.Fatalf("after clear signals DESC PIPE says %q, want RUNNING (%v)", d["pipe_status"], d)
	}
	if n := countSignaled(t, s, wfID); n != 3 {
		t.Fatalf("the history holds %d signals, want the 3 sent", n)
	}
	metricsBody := httpGet(t, "http://"+httpAddr+"/metrics")
	if !strings.Contains(metricsBody, signalguard.MetricRefused+"_total") {
		t.Fatalf("/metrics has no %s_total", signalguard.MetricRefused)
	}
	for _, line := range strings.Split(metricsBody, "\n") {
		if strings.HasPrefix(line, signalguard.MetricRefused+"_total") && !strings.HasSuffix(line, " 3") {
			t.Errorf("refused signals counted as %q, want 3", line)
		}
	}

	// The same pause from a lakepipe client, encrypted, is obeyed: the
	// check above could fail.
	s.run("ALTER PIPE guard_pipe SET PIPE_EXECUTION_PAUSED = true")
	pipeWait(t, 30*time.Second, "an encrypted pause did not pause the pipe", func() bool { return s.pipeStatus("guard_pipe") == "PAUSED" })
	s.run("ALTER PIPE guard_pipe SET PIPE_EXECUTION_PAUSED = false")
	pipeWait(t, 30*time.Second, "an encrypted resume did not resume the pipe", func() bool { return s.pipeStatus("guard_pipe") == "RUNNING" })
	s.pipeWaitTurns("guard_pipe", 1, 30*time.Second)

	if dir := os.Getenv("LAKEPIPE_RECORD_HISTORY"); dir != "" {
		recordHistory(t, s, wfID, filepath.Join(dir, "pipe_signal_refused.json"))
	}
}

// countSignaled counts the WorkflowExecutionSignaled events of a run.
func countSignaled(t *testing.T, s *Stack, wfID string) int {
	t.Helper()
	n := 0
	for _, ev := range historyOf(t, s, wfID) {
		if ev.GetEventType() == enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED {
			n++
		}
	}
	return n
}

// recordDroppedPipe drops a pipe, waits until its workflow has ended and
// writes its history to dir/file (LAKEPIPE_RECORD_HISTORY runs).
func recordDroppedPipe(t *testing.T, s *Stack, pipe, dir, file string) {
	t.Helper()
	s.run("DROP PIPE " + pipe)
	wfID := s.Eng.PipeWorkflowID(pipe)
	pipeWait(t, 30*time.Second, "the dropped pipe's workflow did not end", func() bool {
		st, _, _, _ := s.Orch.PipeStatus(s.Ctx, wfID)
		return st == nil
	})
	recordHistory(t, s, wfID, filepath.Join(dir, file))
}

// recordHistory writes a workflow's history as `temporal workflow show -o
// json` does.
func recordHistory(t *testing.T, s *Stack, wfID, path string) {
	t.Helper()
	h := historypb.History{Events: historyOf(t, s, wfID)}
	b, err := protojson.MarshalOptions{Indent: "  "}.Marshal(&h)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("history of %s (%d events) written to %s", wfID, len(h.Events), path)
}

// historyOf is the history of the workflow's current run.
func historyOf(t *testing.T, s *Stack, wfID string) []*historypb.HistoryEvent {
	t.Helper()
	cl, err := s.Orch.Client()
	if err != nil {
		t.Fatal(err)
	}
	var events []*historypb.HistoryEvent
	it := cl.GetWorkflowHistory(s.Ctx, wfID, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			t.Fatalf("history of %s: %v", wfID, err)
		}
		events = append(events, ev)
	}
	return events
}

func httpGet(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}
