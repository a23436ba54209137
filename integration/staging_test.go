//go:build integration

package integration

import (
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lakepipe/lakepipe/internal/chsql"
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
	var seen, reads atomic.Int64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		q := "SELECT count() FROM " + chsql.Table(s.Schema, "t")
		for {
			select {
			case <-stop:
				return
			default:
			}
			if n, err := s.Store.Strings(s.Ctx, q); err == nil && len(n) == 1 {
				v, _ := strconv.ParseInt(n[0], 10, 64)
				reads.Add(1)
				if v > seen.Load() {
					seen.Store(v)
				}
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	s.put("stage/bad.csv", bad)
	s.run(`CREATE PIPE stage_pipe POLL_INTERVAL_IN_SECONDS = '1' AS COPY INTO t FROM VOLUME stage_vol USING CSV`)
	pipeWait(t, 3*time.Minute, "bad.csv is not FAILED", func() bool {
		return s.pipeHistory("t")["bad.csv"]["status"] == "FAILED"
	})
	close(stop)
	<-done
	t.Logf("a reader polled count() %d times while the file loaded and failed; highest: %d", reads.Load(), seen.Load())
	if seen.Load() != 0 {
		t.Fatalf("a reader saw %d rows of a file that failed: rows that were later removed were visible", seen.Load())
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
	var seen, reads atomic.Int64
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		q := "SELECT count() FROM " + chsql.Table(s.Schema, "sk_logs")
		for {
			select {
			case <-stop:
				return
			default:
			}
			if n, err := s.Store.Strings(s.Ctx, q); err == nil && len(n) == 1 {
				v, _ := strconv.ParseInt(n[0], 10, 64)
				reads.Add(1)
				if v > seen.Load() {
					seen.Store(v)
				}
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	s.run(kafkaPipeSQL("sk_pipe", "sk_logs", topic, group, 0, "BATCH_SIZE_PER_KAFKA_PARTITION = 500000"))
	s.dropAtEnd("PIPE", "sk_pipe")
	pipeWait(t, 3*time.Minute, "the pipe does not pause on the bad record", func() bool {
		return strings.Contains(s.pipeDesc("sk_pipe")["invalid_reason"], "max_errors")
	})
	close(stop)
	<-done
	final := s.pipeCount("sk_logs")
	t.Logf("a reader polled count() %d times; highest %d, final %d", reads.Load(), seen.Load(), final)
	if seen.Load() > final {
		t.Fatalf("a reader saw %d rows, above the final %d: rows of the batch that was not kept were visible", seen.Load(), final)
	}
}
