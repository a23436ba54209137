//go:build integration

package integration

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// TestDynamicTableSignals drives a dynamic table that refreshes every
// second through SUSPEND, RESUME, REFRESH and DROP, which reach its
// workflow as signals while refreshes run: DESC follows each, and the
// dropped table's workflow ends. With LAKEPIPE_RECORD_HISTORY=dir its
// history is written to dir/dynamic_table_signals.json, the replay test of
// the "signals-during-refresh" version.
func TestDynamicTableSignals(t *testing.T) {
	s := newStack(t)
	s.withWorker()
	s.run(`CREATE TABLE clicks (user_id BIGINT, n INT)`)
	s.dropAtEnd("TABLE", "clicks")
	s.run(`ALTER TABLE clicks SET PROPERTIES ('change_tracking' = 'true')`)
	s.run(`INSERT INTO clicks VALUES (1, 1), (2, 5)`)
	s.run(`CREATE DYNAMIC TABLE clicks_per_user REFRESH INTERVAL 1 SECOND AS SELECT user_id, SUM(n) AS n FROM clicks GROUP BY user_id`)
	wfID := s.Eng.DynamicTableWorkflowID("clicks_per_user")
	desc := func(key string) string {
		for _, r := range table(s.run(`DESC DYNAMIC TABLE clicks_per_user`)) {
			if r[0] == key {
				return r[1]
			}
		}
		return ""
	}
	refreshes := func() int {
		n, _ := strconv.Atoi(desc("refreshes"))
		return n
	}
	pipeWait(t, 30*time.Second, "scheduled refreshes run", func() bool { return refreshes() >= 2 })

	s.run(`ALTER DYNAMIC TABLE clicks_per_user SUSPEND`)
	pipeWait(t, 30*time.Second, "SUSPEND reaches the workflow", func() bool { return desc("state") == "SUSPENDED" })
	before := refreshes()
	time.Sleep(3 * time.Second)
	if n := refreshes(); n != before {
		t.Fatalf("a suspended table refreshed: %d → %d", before, n)
	}
	s.run(`ALTER DYNAMIC TABLE clicks_per_user RESUME`)
	pipeWait(t, 30*time.Second, "RESUME reaches the workflow", func() bool { return desc("state") == "ACTIVE" })
	s.run(`INSERT INTO clicks VALUES (1, 10)`)
	// A REFRESH right after an INSERT sees it: the statement waits out the
	// change log's fence (2 s) for writes made before it.
	s.run(`REFRESH DYNAMIC TABLE clicks_per_user`)
	if got := s.pipeScalar(`SELECT n FROM clicks_per_user WHERE user_id = 1`); got != "11" {
		t.Fatalf("after INSERT then REFRESH, n = %s, want 11", got)
	}
	pipeWait(t, 30*time.Second, "scheduled refreshes go on after RESUME", func() bool { return refreshes() >= before+2 })

	s.run(`DROP DYNAMIC TABLE clicks_per_user`)
	pipeWait(t, 30*time.Second, "the dropped table's workflow did not end", func() bool {
		st, err := s.Orch.Query(s.Ctx, wfID, "status", new(any))
		return err != nil || st != "RUNNING"
	})
	if dir := os.Getenv("LAKEPIPE_RECORD_HISTORY"); dir != "" {
		recordHistory(t, s, wfID, filepath.Join(dir, "dynamic_table_signals.json"))
	}
}
