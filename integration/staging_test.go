//go:build integration

package integration

import (
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lakepipe/lakepipe/internal/chsql"
	"github.com/lakepipe/lakepipe/worker"
)

// TestPipeFailedLargeFileNeverVisible: a large file streams into its table
// in blocks; one that fails at its last line must never have shown its
// first blocks. A reader polls count() all through the load and sees 0,
// then a good large file shows whole.
func TestPipeFailedLargeFileNeverVisible(t *testing.T) {
	s := newStack(t)
	s.withWorker()
	s.volume("stage_vol", "stage", true)
	s.pipeTable("t")
	const rows = 2_500_000 // above one insert block (1,048,576 rows), ~40 MB
	bad := append(csvRows(0, rows), "oops\n"...)
	highest := s.pollCount("t")
	s.put("stage/bad.csv", bad)
	s.run(`CREATE PIPE stage_pipe POLL_INTERVAL_IN_SECONDS = '1' AS COPY INTO t FROM VOLUME stage_vol USING CSV`)
	pipeWait(t, 3*time.Minute, "bad.csv is not FAILED", func() bool {
		return s.pipeHistory("t")["bad.csv"]["status"] == "FAILED"
	})
	seen, reads := highest()
	t.Logf("a reader polled count() %d times while the file loaded and failed; highest: %d", reads, seen)
	if seen != 0 {
		t.Fatalf("a reader saw %d rows of a file that failed: rows that were later removed were visible", seen)
	}
	s.put("stage/good.csv", csvRows(0, rows))
	pipeWait(t, 3*time.Minute, "good.csv is not LOADED", func() bool {
		return s.pipeHistory("t")["good.csv"]["status"] == "LOADED"
	})
	if n := s.pipeCount("t"); n != rows {
		t.Fatalf("t has %d rows after good.csv, want %d", n, rows)
	}
}

// TestKafkaBatchOverMaxErrorsNeverVisible: a Kafka batch of several insert
// blocks whose last record is bad (max_errors 0) is not kept, and a reader
// polling count() all through it never sees its first blocks.
func TestKafkaBatchOverMaxErrorsNeverVisible(t *testing.T) {
	s := newStack(t)
	s.withWorker()
	topic, group := "stagek_"+s.ID, "stagek_group_"+s.ID
	prod := kafkaTopic(t, topic, 1)
	const good = 300_000 // above two insert blocks (131,072 rows)
	values := make([]string, 0, good+1)
	for i := 0; i < good; i++ {
		values = append(values, logLine(s.ID, i, "INFO"))
	}
	produce(t, prod, append(values, "not json")...)
	s.run(`CREATE TABLE sk_logs (log_time TIMESTAMP, level STRING, message STRING)`)
	highest := s.pollCount("sk_logs")
	s.run(kafkaPipeSQL("sk_pipe", "sk_logs", topic, group, 0, "BATCH_SIZE_PER_KAFKA_PARTITION = 500000"))
	s.dropAtEnd("PIPE", "sk_pipe")
	pipeWait(t, 3*time.Minute, "the pipe does not pause on the bad record", func() bool {
		return strings.Contains(s.pipeDesc("sk_pipe")["invalid_reason"], "max_errors")
	})
	seen, reads := highest()
	final := s.pipeCount("sk_logs")
	t.Logf("a reader polled count() %d times; highest %d, final %d", reads, seen, final)
	if seen > final {
		t.Fatalf("a reader saw %d rows, above the final %d: rows of the batch that was not kept were visible", seen, final)
	}
}

// TestPipeRecreatedWhileLoading: a pipe dropped and created again under the
// same name, onto another table, while an activity of the old one is in
// the middle of a large file: the new pipe's table holds its own load of
// the file once, and the old activity, fenced, leaves nothing behind.
//
// The worker's link to ClickHouse is slowed (2 MB/s) so that the file
// takes ~8 s, and the drop lands in the middle of it.
func TestPipeRecreatedWhileLoading(t *testing.T) {
	s := newStack(t)
	queue := "it-recreate-" + s.ID
	slow := newTCPProxy(t, chAddr, 2<<20)
	s.withWorkerOn(queue, func(c *worker.Config) { c.ClickHouse.Addr = slow.Addr() })
	s.volume("rc_vol", "rc", false)
	s.pipeTable("rc_old")
	s.pipeTable("rc_new")
	const rows = 1_000_000
	s.put("rc/big.csv", csvRows(0, rows))
	s.run(`CREATE PIPE rc_pipe POLL_INTERVAL_IN_SECONDS = '1' AS COPY INTO rc_old FROM VOLUME rc_vol USING CSV`)
	pipeWait(t, 2*time.Minute, "the old pipe starts loading big.csv", func() bool {
		n, err := s.Store.Strings(s.Ctx, "SELECT count() FROM system.processes WHERE query LIKE 'INSERT INTO `lakepipe_tmp`.`stage_%'")
		return err == nil && len(n) == 1 && n[0] != "0"
	})
	s.run(`DROP PIPE rc_pipe`)
	s.run(`CREATE PIPE rc_pipe POLL_INTERVAL_IN_SECONDS = '1' AS COPY INTO rc_new FROM VOLUME rc_vol USING CSV`)
	pipeWait(t, 3*time.Minute, "the new pipe loads big.csv", func() bool { return s.pipeHistory("rc_new")["big.csv"]["status"] == "LOADED" })
	// The old attempt's lease ends within ~20 s of its workflow's end.
	time.Sleep(25 * time.Second)
	if n := s.pipeCount("rc_new"); n != rows {
		t.Fatalf("rc_new has %d rows, want %d (big.csv once)", n, rows)
	}
	if n := s.pipeCount("rc_old"); n != 0 {
		t.Fatalf("rc_old has %d rows: the dropped pipe's attempt went on loading after the drop", n)
	}
}

// pollCount reads count() of table every 20 ms until the returned
// function is called, which returns the highest count read and how many
// reads there were.
func (s *Stack) pollCount(table string) func() (highest, reads int64) {
	var seen, n atomic.Int64
	stop, done := make(chan struct{}), make(chan struct{})
	q := "SELECT count() FROM " + chsql.Table(s.Schema, table)
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			if r, err := s.Store.Strings(s.Ctx, q); err == nil && len(r) == 1 {
				v, _ := strconv.ParseInt(r[0], 10, 64)
				n.Add(1)
				if v > seen.Load() {
					seen.Store(v)
				}
			}
		}
	}()
	return func() (int64, int64) {
		close(stop)
		<-done
		return seen.Load(), n.Load()
	}
}
