//go:build integration

package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestKafkaPipeResetOffsets: ALTER PIPE … SET RESET_KAFKA_GROUP_OFFSETS
// moves a running Kafka pipe. 'earliest' reloads the topic into a table
// emptied by DELETE; 'latest' skips what waits; a time in epoch
// milliseconds starts at the first record written at or after it.
func TestKafkaPipeResetOffsets(t *testing.T) {
	s := newStack(t)
	s.withWorker()
	topic, group := "reset_"+s.ID, "reset_group_"+s.ID
	prod := kafkaTopic(t, topic, 2)
	produce(t, prod, logLines(s.ID, 0, 10)...)
	s.run(`CREATE TABLE reset_logs (log_time TIMESTAMP, level STRING, message STRING)`)
	s.run(kafkaPipeSQL("reset_pipe", "reset_logs", topic, group, 0, ""))
	s.dropAtEnd("PIPE", "reset_pipe")
	count := func() string { return s.pipeScalar(`SELECT COUNT(*) FROM reset_logs`) }
	pipeWait(t, time.Minute, "the 10 records load", func() bool { return count() == "10" })

	s.run(`DELETE FROM reset_logs WHERE 1 = 1`)
	res := s.run(`ALTER PIPE reset_pipe SET RESET_KAFKA_GROUP_OFFSETS = 'earliest'`)
	checkMessage(t, res.Message, "reads from earliest")
	pipeWait(t, time.Minute, "the reset to earliest reloads the 10 records", func() bool { return count() == "10" })

	s.run(`ALTER PIPE reset_pipe SET PIPE_EXECUTION_PAUSED = TRUE`)
	produce(t, prod, logLines(s.ID, 10, 5)...)
	s.run(`ALTER PIPE reset_pipe SET RESET_KAFKA_GROUP_OFFSETS = 'latest'`)
	s.run(`ALTER PIPE reset_pipe SET PIPE_EXECUTION_PAUSED = FALSE`)
	s.pipeWaitTurns("reset_pipe", 2, time.Minute)
	if got := count(); got != "10" {
		t.Fatalf("after a reset to latest, %s rows: the 5 records waiting were loaded", got)
	}

	time.Sleep(1100 * time.Millisecond) // a clear millisecond boundary
	mark := time.Now().UnixMilli()
	produce(t, prod, logLines(s.ID, 15, 3)...)
	pipeWait(t, time.Minute, "new records load", func() bool { return count() == "13" })
	s.run(`DELETE FROM reset_logs WHERE 1 = 1`)
	s.run(fmt.Sprintf(`ALTER PIPE reset_pipe SET RESET_KAFKA_GROUP_OFFSETS = '%s'`, strconv.FormatInt(mark, 10)))
	pipeWait(t, time.Minute, "a reset to a time reloads only the records written after it", func() bool { return count() == "3" })
	wantRows(t, "the records after the time", s.run(`SELECT message FROM reset_logs ORDER BY message`),
		s.ID+" line 15", s.ID+" line 16", s.ID+" line 17")
	s.mustFail(`ALTER PIPE reset_pipe SET RESET_KAFKA_GROUP_OFFSETS = 'yesterday'`, "epoch milliseconds")
	if dir := os.Getenv("LAKEPIPE_RECORD_HISTORY"); dir != "" {
		recordHistory(t, s, s.Eng.PipeWorkflowID("reset_pipe"), filepath.Join(dir, "pipe_kafka_reset.json"))
	}
}

// TestKafkaResetLoadsAnew: records loaded again after a
// RESET_KAFKA_GROUP_OFFSETS back to where an earlier batch started are
// new loads of a change-tracked table: a stream consumed before the reset
// shows them again, and a dynamic table's incremental refresh counts them.
// Batches were named by the offsets they start from alone, so the batch
// after the reset took the first batch's commit id: the change log knew
// it, registered nothing, and the stream and the refresh never saw the
// records again (a retry of that batch would have removed the first
// batch's rows too).
func TestKafkaResetLoadsAnew(t *testing.T) {
	s := newStack(t)
	s.withWorker()
	topic, group := "reseta_"+s.ID, "reseta_group_"+s.ID
	prod := kafkaTopic(t, topic, 2)
	var lines, want []string
	for i := range 10 {
		lines, want = append(lines, logLine(s.ID, i, "INFO")), append(want, fmt.Sprintf("%s line %d", s.ID, i))
	}
	produce(t, prod, lines...)
	s.run(`CREATE TABLE reseta_logs (log_time TIMESTAMP, level STRING, message STRING)`)
	s.run(`ALTER TABLE reseta_logs SET PROPERTIES ('change_tracking' = 'true')`)
	s.run(`CREATE TABLE reseta_sink (message STRING)`)
	s.run(`CREATE TABLE STREAM reseta_stream ON TABLE reseta_logs WITH PROPERTIES ('TABLE_STREAM_MODE' = 'APPEND_ONLY')`)
	s.run(`CREATE DYNAMIC TABLE reseta_counts REFRESH INTERVAL 1 HOUR AS SELECT level, COUNT(*) AS n FROM reseta_logs GROUP BY level`)
	s.run(kafkaPipeSQL("reseta_pipe", "reseta_logs", topic, group, 0, ""))
	s.dropAtEnd("PIPE", "reseta_pipe")
	count := func() string { return s.pipeScalar(`SELECT COUNT(*) FROM reseta_logs`) }
	pipeWait(t, time.Minute, "the 10 records load", func() bool { return count() == "10" })
	s.waitStream(`SELECT message FROM reseta_stream ORDER BY message`, want...)
	s.run(`INSERT INTO reseta_sink SELECT message FROM reseta_stream`)
	s.run(`REFRESH DYNAMIC TABLE reseta_counts`)
	wantRows(t, "the summary before the reset", s.run(`SELECT level, n FROM reseta_counts`), "INFO|10")

	s.run(`ALTER PIPE reseta_pipe SET RESET_KAFKA_GROUP_OFFSETS = 'earliest'`)
	pipeWait(t, time.Minute, "the reset to earliest loads the 10 records again", func() bool { return count() == "20" })
	s.waitStream(`SELECT message FROM reseta_stream ORDER BY message`, want...)
	s.run(`INSERT INTO reseta_sink SELECT message FROM reseta_stream`)
	if n := s.pipeCount("reseta_sink"); n != 20 {
		t.Fatalf("the sink has %d rows after consuming the stream twice, want 20", n)
	}
	s.run(`REFRESH DYNAMIC TABLE reseta_counts`)
	wantRows(t, "the summary after the reset", s.run(`SELECT level, n FROM reseta_counts`), "INFO|20")
	if dir := os.Getenv("LAKEPIPE_RECORD_HISTORY"); dir != "" {
		recordHistory(t, s, s.Eng.PipeWorkflowID("reseta_pipe"), filepath.Join(dir, "pipe_kafka_reset_epoch.json"))
	}
}

// TestKafkaPipeDeadLetters: with DEAD_LETTER_TABLE, the bad records of a
// mixed topic land in that table (topic, partition, offset, timestamp,
// key, value, error), exactly those, the good ones load, and the pipe
// (max_errors 0) does not pause; the table is made when missing.
func TestKafkaPipeDeadLetters(t *testing.T) {
	s := newStack(t)
	s.withWorker()
	topic, group := "dlt_"+s.ID, "dlt_group_"+s.ID
	prod := kafkaTopic(t, topic, 2)
	var values []string
	bad := map[string]bool{}
	for i := 0; i < 20; i++ {
		switch i % 5 {
		case 1:
			v := fmt.Sprintf("not json %d", i)
			values, bad[v] = append(values, v), true
		case 3:
			v := fmt.Sprintf(`{"time":"yesterday","level":"INFO","message":"%s line %d"}`, s.ID, i)
			values, bad[v] = append(values, v), true
		default:
			values = append(values, logLine(s.ID, i, "INFO"))
		}
	}
	produce(t, prod, values...)
	s.run(`CREATE TABLE dl_logs (log_time TIMESTAMP, level STRING, message STRING)`)
	s.run(kafkaPipeSQL("dl_pipe", "dl_logs", topic, group, 0, "DEAD_LETTER_TABLE = 'dl_bad'"))
	s.dropAtEnd("PIPE", "dl_pipe")
	pipeWait(t, time.Minute, "the 12 good records load", func() bool { return s.pipeScalar(`SELECT COUNT(*) FROM dl_logs`) == "12" })
	pipeWait(t, 30*time.Second, "the 8 bad records reach the dead-letter table", func() bool { return s.pipeScalar(`SELECT COUNT(*) FROM dl_bad`) == "8" })
	res := s.run(`SELECT topic, partition, offset, timestamp, key, value, error FROM dl_bad ORDER BY partition, offset`)
	for _, r := range table(res) {
		if r[0] != topic || !bad[r[5]] || r[6] == "" || !strings.HasPrefix(r[4], "k") || !strings.HasPrefix(r[3], "20") {
			t.Fatalf("dead letter %v is not one of the bad records with its origin and error:\n%s", r, rowsText(res))
		}
		delete(bad, r[5])
	}
	if len(bad) != 0 {
		t.Fatalf("bad records missing from the dead-letter table: %v", bad)
	}
	if st := s.pipeDesc("dl_pipe")["pipe_status"]; st != "RUNNING" {
		t.Fatalf("pipe_status %s: bad records sent to a dead-letter table must not pause the pipe", st)
	}
	s.mustFail(`ALTER PIPE dl_pipe SET DEAD_LETTER_TABLE = 'no such table'`, "DEAD_LETTER_TABLE", "table name")
}

// TestKafkaPipeSkipPoison: a pipe paused by a poison record (max_errors 0)
// goes past it once given a dead-letter table and resumed: the poison
// record lands there and the records after it load.
func TestKafkaPipeSkipPoison(t *testing.T) {
	s := newStack(t)
	s.withWorker()
	topic, group := "poison_"+s.ID, "poison_group_"+s.ID
	prod := kafkaTopic(t, topic, 1)
	produce(t, prod, logLine(s.ID, 0, "INFO"), "poison", logLine(s.ID, 2, "INFO"))
	s.run(`CREATE TABLE poison_logs (log_time TIMESTAMP, level STRING, message STRING)`)
	s.run(kafkaPipeSQL("poison_pipe", "poison_logs", topic, group, 0, ""))
	s.dropAtEnd("PIPE", "poison_pipe")
	pipeWait(t, time.Minute, "the poison record pauses the pipe", func() bool { return s.pipeDesc("poison_pipe")["pipe_status"] == "PAUSED" })
	if got := s.pipeScalar(`SELECT COUNT(*) FROM poison_logs`); got != "0" {
		t.Fatalf("%s rows loaded from a batch over max_errors", got)
	}
	s.run(`ALTER PIPE poison_pipe SET DEAD_LETTER_TABLE = 'poison_bad'`)
	s.run(`ALTER PIPE poison_pipe SET PIPE_EXECUTION_PAUSED = FALSE`)
	pipeWait(t, time.Minute, "the records around the poison load", func() bool { return s.pipeScalar(`SELECT COUNT(*) FROM poison_logs`) == "2" })
	wantRows(t, "the dead letter", s.run(`SELECT offset, value FROM poison_bad`), "1|poison")
	if st := s.pipeDesc("poison_pipe")["pipe_status"]; st != "RUNNING" {
		t.Fatalf("pipe_status %s after going past the poison record", st)
	}
}
