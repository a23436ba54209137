//go:build integration

package integration

import (
	"context"
	"fmt"
	"math/rand"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/lakepipe/lakepipe/internal/chsql"
)

// TestKafkaPipeFaults proves exactly-once loading from Kafka under worker
// crashes: N records (LAKEPIPE_KAFKA_FAULT_RECORDS, default 100,000) are
// produced to a 6-partition topic throughout the run while the pipe's only
// worker, a `lakepipe worker` child process, is SIGKILLed and restarted K
// times (LAKEPIPE_KAFKA_FAULT_KILLS, default 2). Each kill waits until the
// pipe has loaded more rows since the last restart, then lands at a random
// moment up to 400 ms later (batches of up to 20,000 records take about
// that long, so kills land inside inserts as well as between batches).
// Afterwards count() = count(DISTINCT id) = count(DISTINCT partition,
// offset) = N and the consumer group's lag is 0. `./task test:faults`
// runs it with 1,000,000 records and 10 kills.
func TestKafkaPipeFaults(t *testing.T) { runKafkaFaults(t, false) }

// TestKafkaPipeFaultsKeyed is TestKafkaPipeFaults into a keyed table that
// tracks changes (PRIMARY KEY id): half of the records write a key again,
// most of them in a later batch than the first write, so loads replace
// rows while the worker dies. Afterwards the table holds every key once,
// and a summary over it, refreshed while the worker dies and once at the
// end, is INCREMENTAL and equals its query: a replaced row kept twice in
// the change log (a retried batch copying it again) would be taken back
// twice.
func TestKafkaPipeFaultsKeyed(t *testing.T) { runKafkaFaults(t, true) }

func runKafkaFaults(t *testing.T, keyed bool) {
	nRecords := faultEnvInt(t, "LAKEPIPE_KAFKA_FAULT_RECORDS", 100_000)
	nKills := faultEnvInt(t, "LAKEPIPE_KAFKA_FAULT_KILLS", 2)
	rng := rand.New(rand.NewSource(testSeed(t, "LAKEPIPE_FAULT_SEED")))
	t.Logf("kafka fault test: %d records on 6 partitions, %d kills", nRecords, nKills)

	s := newStack(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute+2*time.Minute*time.Duration(nKills))
	defer cancel()
	s.Ctx = ctx
	queue := "it-kfaults-" + s.ID
	orch := s.useQueue(queue)
	w := &workerProc{t: t, bin: lakepipeBin(t), queue: queue, logPath: t.TempDir() + "/worker.log"}
	t.Cleanup(func() {
		cctx, ccancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer ccancel()
		terminateSchemaWorkflows(cctx, orch, s.Eng, s.Schema)
		w.kill()
		orch.Close()
		if t.Failed() {
			t.Logf("worker log (end):\n%s", w.tail(80))
		}
	})
	w.start()

	topic, group := "kfault_"+s.ID, "kfault_"+s.ID
	prod := kafkaTopic(t, topic, 6)
	const chunk = 2000
	// key is the id record j (0-based) writes: in a keyed run the first
	// half of each chunk of records writes new keys and the second half
	// the keys of the previous chunk's first half again.
	key := func(j int) int {
		if !keyed {
			return j + 1
		}
		c, r := j/chunk, j%chunk
		if r < chunk/2 {
			return c*chunk/2 + r + 1
		}
		return max(c-1, 0)*chunk/2 + r - chunk/2 + 1
	}
	nKeys := nRecords
	if keyed {
		nKeys = (nRecords + chunk - 1) / chunk * chunk / 2
		s.run(`CREATE TABLE kfault (id BIGINT PRIMARY KEY, payload STRING, p INT, o BIGINT) PROPERTIES ('change_tracking' = 'true')`)
		s.run(`CREATE DYNAMIC TABLE kfault_sum REFRESH INTERVAL 1 HOUR AS SELECT p, COUNT(*) AS n, SUM(o) AS so FROM kfault GROUP BY p`)
	} else {
		s.run(`CREATE TABLE kfault (id BIGINT, payload STRING, p INT, o BIGINT)`)
	}
	s.run(fmt.Sprintf(`CREATE PIPE kfault_pipe BATCH_INTERVAL_IN_SECONDS = '1' AS COPY INTO kfault FROM (
		SELECT CAST(KEY AS STRING)::BIGINT AS id, VALUE::STRING AS payload, partition AS p, offset AS o
		FROM TABLE(READ_KAFKA('%s', '%s', '', '%s', '', '', '', '', 'raw', 'raw', 0, map('max.poll.records', '20000'))))`,
		kafkaAddr, topic, group))
	tbl := chsql.Table(s.Schema, "kfault")
	final := ""
	if keyed {
		final = " FINAL"
	}
	count := func() int64 {
		n, err := s.Store.Strings(ctx, "SELECT count() FROM "+tbl+final)
		if err != nil || len(n) != 1 {
			t.Fatalf("count: %v", err)
		}
		v, _ := strconv.ParseInt(n[0], 10, 64)
		return v
	}

	// The producer: records arrive throughout the run; before kill k it
	// produces no further than (k+1)/(K+1) of them, so every kill finds
	// records to load.
	var kills atomic.Int32
	chunkEnd := func(k int) int { return k * nRecords / (nKills + 1) }
	prodErr := make(chan error, 1)
	go func() {
		for i := 0; i < nRecords; i += chunk {
			for i >= chunkEnd(int(kills.Load())+1) && int(kills.Load()) < nKills {
				select {
				case <-ctx.Done():
					prodErr <- ctx.Err()
					return
				case <-time.After(50 * time.Millisecond):
				}
			}
			recs := make([]*kgo.Record, 0, chunk)
			for j := i; j < i+chunk && j < nRecords; j++ {
				recs = append(recs, &kgo.Record{Key: []byte(strconv.Itoa(key(j))), Value: []byte(fmt.Sprintf("record %d", key(j)))})
			}
			if err := prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
				prodErr <- err
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
		prodErr <- nil
	}()

	// inBatch reports whether a batch is running (the pipe's status query,
	// answered by the worker).
	wfID := s.Eng.PipeWorkflowID("kfault_pipe")
	inBatch := func() bool {
		st, _, _, err := orch.PipeStatus(ctx, wfID)
		return err == nil && st != nil && st.Running
	}
	start := time.Now()
	for k := 1; k <= nKills; k++ {
		base := count()
		pipeWait(t, 5*time.Minute, fmt.Sprintf("kill %d: the pipe loads rows after the restart", k), func() bool { return count() > base })
		aim := "at a random moment"
		if k%2 == 0 {
			// Even kills land inside a batch: rows may be inserted and
			// the offsets not yet recorded.
			// A pipe that has caught up with what the producer let out
			// (it waits for this kill) runs no batch: then the kill lands
			// at a random moment instead. Exactness is checked either way.
			aim = "inside a batch"
			deadline := time.Now().Add(20 * time.Second)
			for !inBatch() && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
			}
			if !inBatch() {
				aim = "at a random moment (no batch ran in 20 s: the pipe had caught up)"
			}
			time.Sleep(time.Duration(rng.Intn(150)) * time.Millisecond)
		} else {
			time.Sleep(time.Duration(rng.Intn(400)) * time.Millisecond)
		}
		if keyed {
			// A refresh beside the loads (it may fail with the worker).
			_ = s.runErr(`REFRESH DYNAMIC TABLE kfault_sum`)
		}
		pid, up := w.kill()
		kills.Add(1)
		t.Logf("%6.1fs kill %d (%s): worker %d SIGKILLed after %v; %d rows in the table", time.Since(start).Seconds(), k, aim, pid, up.Round(time.Millisecond), count())
		time.Sleep(time.Duration(rng.Intn(1000)) * time.Millisecond)
		w.start()
	}
	if err := <-prodErr; err != nil {
		t.Fatalf("produce: %v", err)
	}
	pipeWait(t, 8*time.Minute, fmt.Sprintf("all %d keys loaded", nKeys), func() bool { return count() >= int64(nKeys) })
	// Give a doubled batch, if there were one, the time to show.
	time.Sleep(3 * time.Second)
	res := s.run(fmt.Sprintf("SELECT COUNT(*), COUNT(DISTINCT id), MIN(id), MAX(id) FROM %s.kfault", s.Schema))
	wantRows(t, "rows", res, fmt.Sprintf("%d|%d|1|%d", nKeys, nKeys, nKeys))
	if !keyed {
		pairs, err := s.Store.Strings(ctx, "SELECT uniqExact(p, o) FROM "+tbl)
		if err != nil || len(pairs) != 1 || pairs[0] != strconv.Itoa(nRecords) {
			t.Fatalf("distinct (partition, offset) pairs: %v %v, want %d", pairs, err, nRecords)
		}
	}
	// The group mirrors the pipe: lag 0 once everything is loaded.
	pipeWait(t, 30*time.Second, "the group's lag is 0", func() bool {
		lags, err := kadm.NewClient(prod).Lag(ctx, group)
		if err != nil {
			return false
		}
		l := lags[group]
		return l.Error() == nil && l.Lag.Total() == 0
	})
	if keyed {
		// Every record's batch is in (lag 0): the summary, refreshed from
		// its last state, equals its query.
		time.Sleep(2100 * time.Millisecond) // changes are readable 2 s after their commit
		checkMessage(t, s.run(`REFRESH DYNAMIC TABLE kfault_sum`).Message, "INCREMENTAL")
		q := `SELECT p, COUNT(*) AS n, SUM(o) AS so FROM kfault GROUP BY p`
		if got, want := rowsText(s.run(`SELECT p, n, so FROM kfault_sum ORDER BY p`)), rowsText(s.run(`SELECT p, n, so FROM (`+q+`) ORDER BY p`)); got != want {
			t.Fatalf("kfault_sum after the kills:\n%s\nwant\n%s", indent(got), indent(want))
		}
		h := s.run(`SHOW DYNAMIC TABLE REFRESH HISTORY WHERE name = 'kfault_sum'`)
		t.Logf("kfault_sum refreshes:\n%s", rowsText(h))
	}
	// Clean-ups of dead attempts that had inserted rows (mutations).
	muts, _ := s.Store.Strings(ctx, "SELECT count() FROM system.mutations WHERE database = "+chsql.QuoteString(s.Schema)+" AND table = 'kfault'")
	t.Logf("%6.1fs done: %d records exactly once after %d kills; %v clean-ups of rows a killed batch had inserted", time.Since(start).Seconds(), nRecords, nKills, muts)
}
