//go:build integration

package integration

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/lakepipe/lakepipe/worker"
)

// TestPipeEventQueueKafka: S3 event notifications reach an
// EVENT_NOTIFICATION pipe through a Kafka topic, as versitygw publishes
// them (--event-kafka-url): an upload loads within seconds, long before the
// pipe's 300 s listing; the same notification again loads nothing twice;
// a message that is not a notification is skipped and the queue goes on.
func TestPipeEventQueueKafka(t *testing.T) {
	s := newStack(t)
	topic := "s3events_" + s.ID
	prod := kafkaTopic(t, topic, 2)
	queue := "it-evq-" + s.ID
	startInProcessWorkerWith(t, temporalConfig(queue), func(c *worker.Config) {
		c.EventQueue = worker.EventQueueConfig{Brokers: []string{kafkaAddr}, Topic: topic, Group: "evq_" + s.ID}
	})
	orch := s.useQueue(queue)
	t.Cleanup(func() {
		cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		terminateSchemaWorkflows(cctx, orch, s.Eng, s.Schema)
	})
	gw := startEventS3With(t, "--event-kafka-url", kafkaAddr, "--event-kafka-topic", topic)

	conn := "it_evqconn_" + s.ID
	s.run(fmt.Sprintf(`CREATE STORAGE CONNECTION %s TYPE S3 ENDPOINT = '%s' ACCESS_ID = '%s' ACCESS_KEY = '%s' REGION = '%s'`,
		conn, gw.Endpoint, s3AccessKey, s3SecretKey, s3Region))
	s.dropAtEnd("STORAGE CONNECTION", conn)
	s.run(fmt.Sprintf(`CREATE EXTERNAL VOLUME evq_vol LOCATION 's3://%s/incoming/' USING CONNECTION %s DIRECTORY = (ENABLE = TRUE, AUTO_REFRESH = TRUE) RECURSIVE = TRUE`,
		gw.Bucket, conn))
	s.dropAtEnd("VOLUME", "evq_vol")
	s.pipeTable("t")
	s.run(`CREATE PIPE evq_pipe INGEST_MODE = 'EVENT_NOTIFICATION' AS COPY INTO t FROM VOLUME evq_vol USING CSV`)
	pipeWait(t, 20*time.Second, "the pipe's first turn did not finish", func() bool { return s.pipeTurns("evq_pipe") >= 1 })

	put := func(key string, data []byte) {
		t.Helper()
		if _, err := gw.Client.PutObject(s.Ctx, gw.Bucket, key, bytes.NewReader(data), int64(len(data)), minio.PutObjectOptions{}); err != nil {
			t.Fatalf("put %s: %v", key, err)
		}
	}
	put("incoming/a.csv", csvRows(0, 3))
	took := pipeWait(t, 30*time.Second, "a.csv was not loaded through the topic", func() bool { return s.pipeCount("t") == 3 })
	t.Logf("upload to rows visible through versitygw → Kafka → worker: %v", took.Round(time.Millisecond))
	if took > 5*time.Second {
		t.Errorf("a.csv took %v, want a few seconds (the event drives the pipe, not its 300 s listing)", took)
	}

	// A message that is no notification is skipped; the next still works.
	produce(t, prod, "not an event", `{"Records": 7}`)
	put("incoming/b.csv", csvRows(10, 2))
	pipeWait(t, 30*time.Second, "b.csv was not loaded after bad messages", func() bool { return s.pipeCount("t") == 5 })

	// The same notification again (a redelivery) starts a turn that loads
	// nothing.
	turns := s.pipeTurns("evq_pipe")
	again := fmt.Sprintf(`{"Records":[{"eventName":"s3:ObjectCreated:Put","s3":{"bucket":{"name":%q},"object":{"key":"incoming/a.csv"}}}]}`, gw.Bucket)
	produce(t, prod, again, again)
	pipeWait(t, 20*time.Second, "the redelivered notification started no turn", func() bool { return s.pipeTurns("evq_pipe") > turns })
	pipeSteady(t, 2*time.Second, "a redelivered notification loaded a file again", func() bool { return s.pipeCount("t") == 5 })
	if h := s.pipeHistory("t"); h["a.csv"]["status"] != "LOADED" || h["b.csv"]["status"] != "LOADED" || len(h) != 2 {
		t.Errorf("load_history %v: want a.csv and b.csv LOADED once", h)
	}
}
