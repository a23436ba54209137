//go:build integration

package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lakepipe/lakepipe/worker"
)

// TestZombieAttempt: a worker loses Temporal in the middle of a load while
// it still reaches ClickHouse (a zombie). Temporal gives the load to
// another worker after the heartbeat timeout; the zombie, which can no
// longer renew its lease, stops writing before that, so the file's rows
// are in the table exactly once. Without the lease the zombie goes on
// inserting under the file's commit id after the retry's clean-up, and
// its rows are doubled.
//
// The zombie's link to ClickHouse is slowed (1 MB/s) so that its load
// outlasts the heartbeat timeout; the healthy worker's is not.
func TestZombieAttempt(t *testing.T) {
	s := newStack(t)
	queue := "it-zombie-" + s.ID
	toTemporal := newTCPProxy(t, temporalAddr, 0)
	toClickHouse := newTCPProxy(t, chAddr, 1<<20)
	zcfg := temporalConfig(queue)
	zcfg.Address = toTemporal.Addr()
	// Registered before the workers' cleanups, so it runs after them: a
	// worker stops only when it reaches Temporal.
	t.Cleanup(toTemporal.Restore)
	startInProcessWorkerWith(t, zcfg, func(c *worker.Config) { c.ClickHouse.Addr = toClickHouse.Addr() })
	orch := s.useQueue(queue)
	t.Cleanup(func() {
		toTemporal.Restore()
		cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		terminateSchemaWorkflows(cctx, orch, s.Eng, s.Schema)
	})

	// 800,000 rows of ~65 bytes each on the wire: ~52 s at 1 MB/s, so
	// that an unfenced zombie still sends after the retry's clean-up
	// (ClickHouse writes the rows of an INSERT this size as one part at
	// its end).
	const rows = 800_000
	var b strings.Builder
	pad := strings.Repeat("x", 40)
	for i := 1; i <= rows; i++ {
		fmt.Fprintf(&b, "%d,%s%08d\n", i, pad, i)
	}
	s.pipeTable("zombie_t")
	vol := s.volume("zombie_vol", "in", false)
	s.put("in/big.csv", []byte(b.String()))
	s.run(fmt.Sprintf(`CREATE PIPE zombie_pipe POLL_INTERVAL_IN_SECONDS = '1' AS COPY INTO zombie_t FROM VOLUME %s USING CSV`, vol))

	inserting := func() bool {
		// Into the table, or into its staging table (package staging).
		n, err := s.Store.Strings(s.Ctx, "SELECT count() FROM system.processes WHERE query LIKE 'INSERT INTO %zombie_t%' OR query LIKE 'INSERT INTO `lakepipe_tmp`.`stage_%'")
		return err == nil && len(n) == 1 && n[0] != "0"
	}
	took := pipeWait(t, 2*time.Minute, "the zombie-to-be starts loading", inserting)
	time.Sleep(3 * time.Second) // a few MB into the file
	toTemporal.Cut()
	cut := time.Now()
	t.Logf("Temporal cut off from the first worker %s after CREATE PIPE, in the middle of its INSERT", (took + 3*time.Second).Round(time.Second))
	startInProcessWorker(t, queue)

	loaded := func() bool {
		return s.pipeScalar(`SELECT COUNT(*) FROM load_history('zombie_t') WHERE status = 'LOADED'`) != "0"
	}
	pipeWait(t, 3*time.Minute, "the file is recorded LOADED", loaded)
	t.Logf("LOADED %s after the cut", time.Since(cut).Round(time.Second))
	// An unfenced zombie would still be sending: let it finish (its whole
	// file takes ~52 s at 1 MB/s from its start) before counting.
	if wait := 55*time.Second - time.Since(cut); wait > 0 {
		time.Sleep(wait)
	}
	wantRows(t, "rows and distinct ids", s.run(`SELECT COUNT(*), COUNT(DISTINCT id) FROM zombie_t`), fmt.Sprintf("%d|%d", rows, rows))
}
