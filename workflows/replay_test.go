package workflows_test

import (
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/lakepipe/lakepipe/internal/signalguard"
	"github.com/lakepipe/lakepipe/workflows"
)

// TestReplay replays the pipe histories in testdata, recorded from real runs on
// the local stack (`temporal workflow show --workflow-id … --output json`),
// against today's workflow code: a change that would break running
// workflows fails here. Long histories are kept gzipped (name.json.gz).
//
// What they cover:
//   - pipe_volume.json: loads, pause, resume, refresh, drop (recorded
//     before the "signals-during-turn" version: replays its old branch);
//   - pipe_long_first_run.json.gz: 2000 events, a files signal, pause and
//     resume, then continue-as-new; pipe_long_continued.json: the run it
//     started, refresh, pause, drop while paused;
//   - pipe_volume_v1.json: the "signals-during-turn" version, with pause,
//     resume, pause in quick succession (the last during a turn), files,
//     refresh, drop;
//   - pipe_kafka_seed.json: a Kafka pipe (KafkaOffsets, batches on the
//     interval timer, EXECUTE, drop); pipe_kafka_poison.json: a batch over
//     max_errors pauses the pipe, resume, paused again, drop;
//     pipe_kafka_tolerant.json: bad records within max_errors;
//     pipe_kafka_faults.json: batches while the worker was SIGKILLed
//     (workflow tasks timed out, batches retried), then terminated;
//   - pipe_volume_invalid.json: the "pause-on-invalid" version: the
//     target table dropped pauses the pipe (a PipeInvalid activity
//     failure), resume after the fix loads, the volume dropped pauses it
//     again, terminated (TestPipePausesOnPermanentError);
//   - pipe_local_listing.json: the "local-listing" version (and the
//     signal guard's record): a LIST pipe whose turns list in the local
//     ListNewFiles once its listing is incremental, full listings every
//     15 s, a file out of key order, drop (TestPipeIncrementalListing).
//   - pipe_kafka_fixed_end.json: the "kafka-fixed-end" version: each
//     batch's end offsets read by the local KafkaEnd before it and passed
//     to it, records of aborted transactions skipped, drop
//     (TestKafkaPipeSkipsAbortedTransactions).
//   - pipe_control_updates.json: a KafkaPipeWorkflow started with lakepipe's
//     search attributes: pause as an update, a refresh refused by the
//     validator, resume, LakepipeStatus upserts, drop (TestControlPlane);
//   - pipe_volume_figures.json: a VolumePipeWorkflow; the "load-queue"
//     version (CopyFiles on the
//     load queue), the memo's figures upserted after the loading turn,
//     pause as an update, drop (TestControlPlane);
//   - pipe_alter_set.json: ALTER PIPE … SET as the set update, twice, each
//     restarting the wait under the new interval (TestAlterPipeSet);
//   - pipe_kafka_reset.json: RESET_KAFKA_GROUP_OFFSETS to earliest, latest
//     and a time, each a KafkaOffsets activity before the next batch
//     (TestKafkaPipeResetOffsets).
//   - pipe_kafka_skip_idle.json: the "kafka-skip-idle" version: turns
//     whose end offsets show nothing new run no batch (three here, after a
//     reset to 'latest'), between resets and batches
//     (TestKafkaPipeResetOffsets, recorded in clear).
//   - the "await-listing" version, idle pipes waiting in AwaitFiles on the
//     await queue: pipe_await_alter_set.json (waits cancelled by the set
//     update and started again under the new interval, files found by a
//     wait and copied; TestAlterPipeSet), pipe_await_listing.json.gz (600
//     files, incremental and full listings, waits between;
//     TestPipeIncrementalListing), pipe_await_figures.json (a wait
//     cancelled by pause as an update, drop; TestControlPlane).
//   - the "await-records" version, idle Kafka pipes waiting in
//     AwaitRecords: pipe_kafka_await.json (records found by waits and
//     loaded up to the ends they read, a wait restarted by ALTER PIPE …
//     SET, ended by a pause, resume; TestKafkaPipeIdleWaits),
//     pipe_kafka_await_reset.json (RESET_KAFKA_GROUP_OFFSETS leaving the
//     wait for the timer; TestKafkaPipeResetOffsets). Both in clear.
//   - pipe_kafka_next_end.json: the "batch-next-end" version: batches of
//     3 records, each that left a backlog handing the next its end (one
//     KafkaEnd for three batches), pause, a new batch size, resume, drop
//     (TestKafkaPipeSetBatchSize). In clear.
//   - pipe_kafka_reset_epoch.json: the "kafka-reset-epoch" version: a reset
//     to 'earliest' starts offset epoch 1, the batch after it carries it
//     (TestKafkaResetLoadsAnew). In clear.
func TestReplay(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "pipe_*.json*"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no histories in testdata")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			r, err := worker.NewWorkflowReplayerWithOptions(worker.WorkflowReplayerOptions{Interceptors: signalguard.Replaying()})
			if err != nil {
				t.Fatal(err)
			}
			workflows.Register(r)
			if err := r.ReplayWorkflowHistory(nil, readHistory(t, f)); err != nil {
				t.Fatalf("replay %s: %v", f, err)
			}
		})
	}
}

func readHistory(t *testing.T, path string) *historypb.History {
	t.Helper()
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	var r io.Reader = fh
	if strings.HasSuffix(path, ".gz") {
		zr, err := gzip.NewReader(fh)
		if err != nil {
			t.Fatal(err)
		}
		defer zr.Close()
		r = zr
	}
	h, err := client.HistoryFromJSON(r, client.HistoryJSONOptions{})
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if len(h.GetEvents()) == 0 {
		t.Fatalf("%s: no events", path)
	}
	return h
}
