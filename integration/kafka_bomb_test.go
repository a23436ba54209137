//go:build integration

package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lakepipe/lakepipe/worker"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestKafkaPipeBatchTooLarge: a record batch that decompresses past
// LAKEPIPE_MAX_KAFKA_BATCH_BYTES (1 MiB here; 6 MiB of zstd-compressed
// spaces, a few KiB on the wire) pauses its pipe with a reason naming
// partition, offset and the setting, loads nothing of that batch, and
// leaves the worker serving another pipe; a reset to a time after the
// batch goes past it. Without the limit the Kafka client decompresses
// batches of up to 1 GiB, each partition's at once.
func TestKafkaPipeBatchTooLarge(t *testing.T) {
	bomb := `{"time": "2026-12-06 10:00:00", "level": "INFO", "message": "` + strings.Repeat(" ", 6<<20) + `"}`
	kafkaPipePausesAt(t, func(c *worker.Config) { c.Limits.MaxKafkaBatchBytes = 1 << 20 },
		[]*kgo.Record{{Value: []byte(bomb)}}, "LAKEPIPE_MAX_KAFKA_BATCH_BYTES")
}

// TestKafkaPipeFetchMemory: a compressed batch small on the wire and in
// bytes (here 20,000 records of one byte) whose records the client would
// decode into far more memory than LAKEPIPE_MAX_KAFKA_FETCH_MEMORY (1 MiB
// here) pauses its pipe the same way, naming that setting.
func TestKafkaPipeFetchMemory(t *testing.T) {
	recs := make([]*kgo.Record, 20_000)
	for i := range recs {
		recs[i] = &kgo.Record{Value: []byte("x")}
	}
	kafkaPipePausesAt(t, func(c *worker.Config) { c.Limits.MaxKafkaFetchMemory = 1 << 20 }, recs, "LAKEPIPE_MAX_KAFKA_FETCH_MEMORY")
}

// kafkaPipePausesAt runs a pipe, on a worker that limit configures, over a
// topic of three records (a batch each), then bad (one zstd batch), then
// two more records, beside a pipe over a good topic: the pipe pauses at
// offset 3 with a reason naming the partition, the offset, 1 MiB and
// setting, having loaded nothing; the other pipe loads its topic; a reset
// to a time after the bad batch and a resume load the two after it.
func kafkaPipePausesAt(t *testing.T, limit func(*worker.Config), bad []*kgo.Record, setting string) {
	s := newStack(t)
	s.Eng, s.Orch, _ = pipeWorkerWith(t, s.Eng, s.Schema, temporalConfig("it-"+s.ID), limit)
	s.run(`CREATE TABLE logs (log_time TIMESTAMP, level STRING, message STRING)`)
	s.run(`CREATE TABLE good_logs (log_time TIMESTAMP, level STRING, message STRING)`)

	topic := "bomb_" + s.ID
	prod := kafkaTopic(t, topic, 1)
	for i := 0; i < 3; i++ {
		produce(t, prod, logLine("before", i, "INFO")) // offsets 0-2, a batch each
	}
	big := kafkaClient(t, kgo.DefaultProduceTopic(topic), kgo.ProducerBatchCompression(kgo.ZstdCompression()),
		kgo.ProducerBatchMaxBytes(16<<20), kgo.ProducerLinger(time.Second))
	ctx, cancel := context.WithTimeout(s.Ctx, time.Minute)
	defer cancel()
	if err := big.ProduceSync(ctx, bad...).FirstErr(); err != nil {
		t.Fatalf("produce the bad batch: %v", err)
	}
	time.Sleep(1100 * time.Millisecond) // a clear millisecond boundary
	mark := time.Now().UnixMilli()
	for i := 0; i < 2; i++ {
		produce(t, prod, logLine("after", i, "INFO"))
	}

	goodTopic := "bomb_good_" + s.ID
	produce(t, kafkaTopic(t, goodTopic, 2), logLine("good", 0, "INFO"), logLine("good", 1, "INFO"), logLine("good", 2, "INFO"))

	s.run(kafkaPipeSQL("bombed", "logs", topic, "bombed_"+s.ID, 0, ""))
	s.dropAtEnd("PIPE", "bombed")
	s.run(kafkaPipeSQL("good", "good_logs", goodTopic, "good_"+s.ID, 0, ""))
	s.dropAtEnd("PIPE", "good")
	pipeWait(t, time.Minute, "the pipe pauses at the bad batch", func() bool { return s.pipeDesc("bombed")["pipe_status"] == "PAUSED" })
	checkMessage(t, s.pipeDesc("bombed")["invalid_reason"], "topic "+topic, "partition 0", "offset 3", "1 MiB",
		setting, "RESET_KAFKA_GROUP_OFFSETS")
	if n := s.pipeCount("logs"); n != 0 {
		t.Fatalf("%d rows loaded from the batch that paused; want none (a batch is all or nothing)", n)
	}
	pipeWait(t, time.Minute, "the other pipe loads its topic", func() bool { return s.pipeCount("good_logs") == 3 })

	s.run(fmt.Sprintf(`ALTER PIPE bombed SET RESET_KAFKA_GROUP_OFFSETS = '%d'`, mark))
	s.run(`ALTER PIPE bombed SET PIPE_EXECUTION_PAUSED = FALSE`)
	pipeWait(t, time.Minute, "the records after the bad batch load", func() bool { return s.pipeCount("logs") == 2 })
	wantRows(t, "the records after the bad batch", s.run(`SELECT message FROM logs ORDER BY message`), "after line 0", "after line 1")
	if st := s.pipeDesc("bombed")["pipe_status"]; st != "RUNNING" {
		t.Fatalf("pipe status %s after the reset and resume, want RUNNING", st)
	}
}
