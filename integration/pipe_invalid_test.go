//go:build integration

package integration

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lakepipe/lakepipe/internal/catalog"
)

// waitInvalid waits until the pipe pauses itself with an invalid_reason
// holding every want, and checks it does not retry meanwhile.
func (s *Stack) waitInvalid(pipe string, want ...string) string {
	s.T.Helper()
	var d map[string]string
	pipeWait(s.T, 90*time.Second, "pipe "+pipe+" did not pause with an invalid_reason", func() bool {
		d = s.pipeDesc(pipe)
		return d["pipe_status"] == "PAUSED" && d["invalid_reason"] != ""
	})
	checkMessage(s.T, d["invalid_reason"], want...)
	return d["invalid_reason"]
}

// TestPipePausesOnPermanentError: a volume pipe whose COPY no longer
// resolves pauses with a clear invalid_reason instead of retrying
// forever, and resuming it after the fix loads what waited. Cases: the
// target table dropped, the volume dropped, the connection's credentials
// refused.
func TestPipePausesOnPermanentError(t *testing.T) {
	s := newStack(t)
	s.withWorker()
	// Made before the subtests: what a subtest makes is dropped at its end.
	s.connection()

	t.Run("table dropped", func(t *testing.T) {
		s.T = t
		s.run(`CREATE TABLE inv_t (id BIGINT, name STRING)`)
		vol := s.volume("inv_vol_t", "inv/t", false)
		s.run(`CREATE PIPE inv_pipe_t INGEST_MODE = 'LIST' POLL_INTERVAL_IN_SECONDS = '1' AS COPY INTO inv_t FROM VOLUME ` + vol + ` USING CSV`)
		s.put("inv/t/a.csv", csvRows(1, 10))
		pipeWait(t, time.Minute, "a.csv did not load", func() bool { return s.pipeCount("inv_t") == 10 })
		s.run(`DROP TABLE inv_t`)
		s.put("inv/t/b.csv", csvRows(11, 10))
		reason := s.waitInvalid("inv_pipe_t", "inv_t", "does not exist")
		t.Logf("invalid_reason: %s", reason)
		// Paused means no more turns.
		turns := s.pipeTurns("inv_pipe_t")
		time.Sleep(3 * time.Second)
		if now := s.pipeTurns("inv_pipe_t"); now != turns {
			t.Errorf("a paused pipe ran %d turns", now-turns)
		}
		s.run(`CREATE TABLE inv_t (id BIGINT, name STRING)`)
		s.run(`ALTER PIPE inv_pipe_t SET PIPE_EXECUTION_PAUSED = FALSE`)
		// The new table is another table: both files load into it.
		pipeWait(t, time.Minute, "after the fix and resume, the files did not load", func() bool { return s.pipeCount("inv_t") == 20 })
		if d := s.pipeDesc("inv_pipe_t"); d["pipe_status"] != "RUNNING" || d["invalid_reason"] != "" {
			t.Errorf("after resume: pipe_status %q, invalid_reason %q", d["pipe_status"], d["invalid_reason"])
		}
	})

	t.Run("volume dropped", func(t *testing.T) {
		s.T = t
		s.run(`CREATE TABLE inv_v (id BIGINT, name STRING)`)
		vol := s.volume("inv_vol_v", "inv/v", false)
		s.run(`CREATE PIPE inv_pipe_v INGEST_MODE = 'LIST' POLL_INTERVAL_IN_SECONDS = '1' AS COPY INTO inv_v FROM VOLUME ` + vol + ` USING CSV`)
		s.put("inv/v/a.csv", csvRows(1, 10))
		pipeWait(t, time.Minute, "a.csv did not load", func() bool { return s.pipeCount("inv_v") == 10 })
		s.run(`DROP VOLUME ` + vol)
		s.put("inv/v/b.csv", csvRows(11, 10))
		s.waitInvalid("inv_pipe_v", vol, "does not exist")
		s.volume(vol, "inv/v", false)
		s.run(`ALTER PIPE inv_pipe_v SET PIPE_EXECUTION_PAUSED = FALSE`)
		pipeWait(t, time.Minute, "after the fix and resume, b.csv did not load", func() bool { return s.pipeCount("inv_v") == 20 })
	})

	t.Run("credentials refused", func(t *testing.T) {
		s.T = t
		conn := "it_revoked_" + s.ID
		mk := func(key string) {
			s.run(fmt.Sprintf(`CREATE STORAGE CONNECTION %s TYPE S3 ENDPOINT = '%s' ACCESS_ID = '%s' ACCESS_KEY = '%s' REGION = '%s'`,
				conn, s3Endpoint, s3AccessKey, key, s3Region))
		}
		mk(s3SecretKey)
		s.dropAtEnd("STORAGE CONNECTION", conn)
		s.run(`CREATE TABLE inv_c (id BIGINT, name STRING)`)
		s.run(fmt.Sprintf(`CREATE EXTERNAL VOLUME inv_vol_c LOCATION '%s' USING CONNECTION %s DIRECTORY = (ENABLE = TRUE, AUTO_REFRESH = FALSE) RECURSIVE = TRUE`, s.location("inv/c"), conn))
		s.dropAtEnd("VOLUME", "inv_vol_c")
		s.run(`CREATE PIPE inv_pipe_c INGEST_MODE = 'LIST' POLL_INTERVAL_IN_SECONDS = '1' AS COPY INTO inv_c FROM VOLUME inv_vol_c USING CSV`)
		s.put("inv/c/a.csv", csvRows(1, 10))
		pipeWait(t, time.Minute, "a.csv did not load", func() bool { return s.pipeCount("inv_c") == 10 })
		// The key is revoked: the catalog now holds one the endpoint
		// refuses (as if the store's owner had rotated it).
		_, c, err := openCatalog()
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Delete(s.Ctx, catalog.KindConnection, "", conn); err != nil {
			t.Fatal(err)
		}
		mk("revoked-key-x")
		s.put("inv/c/b.csv", csvRows(11, 10))
		reason := s.waitInvalid("inv_pipe_c", conn, "refused")
		if strings.Contains(reason, "revoked-key-x") {
			t.Errorf("invalid_reason shows the secret: %s", reason)
		}
		// The fix: the connection with the right key.
		s.run(`DROP VOLUME inv_vol_c`)
		s.run(`DROP STORAGE CONNECTION ` + conn)
		mk(s3SecretKey)
		s.run(fmt.Sprintf(`CREATE EXTERNAL VOLUME inv_vol_c LOCATION '%s' USING CONNECTION %s DIRECTORY = (ENABLE = TRUE, AUTO_REFRESH = FALSE) RECURSIVE = TRUE`, s.location("inv/c"), conn))
		s.run(`ALTER PIPE inv_pipe_c SET PIPE_EXECUTION_PAUSED = FALSE`)
		pipeWait(t, time.Minute, "after the fix and resume, b.csv did not load", func() bool { return s.pipeCount("inv_c") == 20 })
	})
}

// TestPipeRidesOutClickHouseRestart: ClickHouse restarting in the middle
// of a pipe's loads is transient: the pipe never pauses, and every file is
// loaded exactly once.
func TestPipeRidesOutClickHouseRestart(t *testing.T) {
	s := newStack(t)
	s.withWorker()
	const files, rows = 30, 20000
	s.run(`CREATE TABLE rs_t (id BIGINT, name STRING)`)
	vol := s.volume("rs_vol", "rs", false)
	for i := range files {
		s.put(fmt.Sprintf("rs/f%02d.csv", i), csvRows(i*rows+1, rows))
	}
	s.run(`CREATE PIPE rs_pipe INGEST_MODE = 'LIST' POLL_INTERVAL_IN_SECONDS = '1' MAX_FILES_PER_BATCH = '4' AS COPY INTO rs_t FROM VOLUME ` + vol + ` USING CSV`)
	pipeWait(t, time.Minute, "no file loaded", func() bool { return s.pipeCount("rs_t") > 0 })

	script := filepath.Join(repoRoot(), "deploy", "local")
	if out, err := exec.Command(filepath.Join(script, "stop.sh"), "clickhouse").CombinedOutput(); err != nil {
		t.Fatalf("stop ClickHouse: %v\n%s", err, out)
	}
	time.Sleep(3 * time.Second)
	if out, err := exec.Command(filepath.Join(script, "start.sh"), "clickhouse").CombinedOutput(); err != nil {
		t.Fatalf("start ClickHouse: %v\n%s", err, out)
	}
	want := int64(files * rows)
	pipeWait(t, 4*time.Minute, "the files did not all load after the restart", func() bool {
		d := s.pipeDesc("rs_pipe")
		if d["pipe_status"] == "PAUSED" {
			t.Fatalf("the pipe paused over a ClickHouse restart: %s", d["invalid_reason"])
		}
		return s.pipeCount("rs_t") >= want
	})
	time.Sleep(3 * time.Second)
	n := s.pipeScalar("SELECT concat(toString(count()), '/', toString(uniqExact(id))) FROM rs_t")
	if n != fmt.Sprintf("%d/%d", want, want) {
		t.Errorf("rows/distinct ids = %s, want %d once each", n, want)
	}
	h := s.pipeHistory("rs_t")
	for i := range files {
		if st := h[fmt.Sprintf("f%02d.csv", i)]["status"]; st != "LOADED" {
			t.Errorf("f%02d.csv: %s", i, st)
		}
	}
}
