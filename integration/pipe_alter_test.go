//go:build integration

package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestAlterPipeSet changes every property ALTER PIPE … SET takes on a
// running pipe: the interval and files per turn reach the workflow (a
// pipe polling every 1,000 s loads a new file within seconds once set to
// 1 s), IGNORE_TMP_FILE reaches its next turn, the rest show in DESC PIPE;
// properties fixed at creation, and those of the other kind of pipe, are
// refused with the reason, and nothing of a refused statement applies.
func TestAlterPipeSet(t *testing.T) {
	s := newStack(t)
	s.withWorker()
	s.volume("alt_vol", "alt", false)
	s.pipeTable("alt_t")
	s.run(`CREATE PIPE alt_pipe INGEST_MODE = 'LIST' POLL_INTERVAL_IN_SECONDS = '1000' AS COPY INTO alt_t FROM VOLUME alt_vol USING CSV`)
	s.pipeTurns("alt_pipe") // the first turn, at creation, found nothing

	s.put("alt/a.csv", csvRows(1, 1))
	s.put("alt/b.csv.tmp", csvRows(2, 1))
	res := s.run(`ALTER PIPE alt_pipe SET POLL_INTERVAL_IN_SECONDS = '1', MAX_FILES_PER_BATCH = '50'`)
	checkMessage(t, res.Message, "pipe alt_pipe altered", "RUNNING", "one every 1 s", "at most 50 files")
	pipeWait(t, 30*time.Second, "a.csv loads once the interval is 1 s", func() bool { return s.pipeCount("alt_t") == 1 })

	s.run(`ALTER PIPE alt_pipe SET IGNORE_TMP_FILE = 'false'`)
	pipeWait(t, 30*time.Second, "b.csv.tmp loads once IGNORE_TMP_FILE is FALSE", func() bool { return s.pipeCount("alt_t") == 2 })

	checkMessage(t, s.run(`ALTER PIPE alt_pipe SET BATCH_INTERVAL_IN_SECONDS = '7', POLL_INTERVAL_IN_SECONDS = '3'`).Message, "one every 3 s")
	s.run(`ALTER PIPE alt_pipe SET VIRTUAL_CLUSTER = 'etl_vc', COMMENT = 'nightly'`)
	d := s.pipeDesc("alt_pipe")
	for k, want := range map[string]string{"virtual_cluster": "ETL_VC", "comment": "nightly"} {
		if d[k] != want {
			t.Errorf("DESC PIPE %s = %q, want %q (%v)", k, d[k], want, d)
		}
	}
	for _, want := range []string{"poll_interval_in_seconds=3", "batch_interval_in_seconds=7", "max_files_per_batch=50", "ignore_tmp_file=FALSE"} {
		if !strings.Contains(strings.ReplaceAll(d["properties"], " ", ""), want) {
			t.Errorf("DESC PIPE properties %q lack %s", d["properties"], want)
		}
	}

	// COPY_JOB_HINT: a file over max_file_size is FAILED unread; smaller
	// ones load.
	s.run(`ALTER PIPE alt_pipe SET COPY_JOB_HINT = '{"max_file_size": "1KB", "parallelism": 2}'`)
	s.put("alt/big.csv", csvRows(100, 200))
	s.put("alt/c.csv", csvRows(3, 1))
	pipeWait(t, 30*time.Second, "c.csv loads and big.csv is FAILED over max_file_size", func() bool {
		h := s.pipeHistory("alt_t")
		return h["c.csv"]["status"] == "LOADED" && h["big.csv"]["status"] == "FAILED"
	})
	if msg := s.pipeHistory("alt_t")["big.csv"]["first_error_message"]; !strings.Contains(msg, "max_file_size") {
		t.Errorf("big.csv's error %q does not name max_file_size", msg)
	}
	if n := s.pipeCount("alt_t"); n != 3 {
		t.Errorf("alt_t has %d rows, want 3 (big.csv not read)", n)
	}
	s.mustFail(`ALTER PIPE alt_pipe SET COPY_JOB_HINT = '{"split_size": 5}'`, "split_size", "means nothing")

	s.mustFail(`ALTER PIPE alt_pipe SET INGEST_MODE = 'LIST_PURGE'`, "fixed when the pipe is created")
	s.mustFail(`ALTER PIPE alt_pipe SET BATCH_SIZE_PER_KAFKA_PARTITION = '10'`, "applies to Kafka pipes")
	s.mustFail(`ALTER PIPE alt_pipe SET COMMENT = 'x', POLL_INTERVAL_IN_SECONDS = '0'`, "POLL_INTERVAL_IN_SECONDS", "positive")
	if got := s.pipeDesc("alt_pipe")["comment"]; got != "nightly" {
		t.Fatalf("a refused ALTER changed the comment to %q", got)
	}
	if dir := os.Getenv("LAKEPIPE_RECORD_HISTORY"); dir != "" {
		recordHistory(t, s, s.Eng.PipeWorkflowID("alt_pipe"), filepath.Join(dir, "pipe_alter_set.json"))
	}
}
