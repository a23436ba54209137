//go:build integration

package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/lakepipe/lakepipe/internal/sqs"
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
	s.withWorkerOn(queue, func(c *worker.Config) {
		c.EventQueue = worker.EventQueueConfig{Brokers: []string{kafkaAddr}, Topic: topic, Group: "evq_" + s.ID}
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

// startGoaws runs goaws (an SQS server of the query protocol, installed
// by deploy/local/install.sh) with one queue whose messages come back 2 s
// after a receive that did not delete them, and returns the queue's URL.
func startGoaws(t testing.TB) string {
	t.Helper()
	bin := stackBin("goaws")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("goaws is needed (deploy/local/install.sh): %v", err)
	}
	port := freePort(t)
	cfg := filepath.Join(t.TempDir(), "goaws.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`Local:
  Host: 127.0.0.1
  Port: %d
  Region: us-east-1
  AccountId: "100010001000"
  LogToFile: false
  QueueAttributeDefaults:
    VisibilityTimeout: 2
    ReceiveMessageWaitTimeSeconds: 0
  Queues:
    - Name: s3events
`, port)), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-config", cfg, "Local")
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	queue := fmt.Sprintf("http://127.0.0.1:%d/100010001000/s3events", port)
	c, err := sqs.New(queue, "us-east-1", sqs.Credentials{AccessKey: "x", SecretKey: "y"})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, err := c.Receive(ctx, 1, 0)
		cancel()
		if err == nil {
			return queue
		}
		if time.Now().After(deadline) {
			t.Fatalf("goaws did not answer on %s: %v\n%s", queue, err, out.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestPipeEventQueueSQS: S3 event notifications reach an
// EVENT_NOTIFICATION pipe through the SQS queue the pipe names
// (EVENT_QUEUE), as S3 sends them (directly
// or wrapped by SNS): a file loads within seconds; the same notification
// twice loads it once; a message that is no notification is deleted and
// the queue goes on; a notification that comes before its object is not
// dropped; every handled message is deleted.
func TestPipeEventQueueSQS(t *testing.T) {
	s := newStack(t)
	queueURL := startGoaws(t)
	queue := "it-evsqs-" + s.ID
	// The queue is named on the pipe (EVENT_QUEUE): the worker finds it in
	// the catalog and reads it with the volume's connection's keys.
	s.withWorkerOn(queue, func(c *worker.Config) { c.EventQueueRescan = 500 * time.Millisecond })
	q, err := sqs.New(queueURL, "us-east-1", sqs.Credentials{AccessKey: "test", SecretKey: "test"})
	must(t, err)
	s.volume("sqs_vol", "in", false)
	s.pipeTable("t")
	s.run(fmt.Sprintf(`CREATE PIPE sqs_pipe INGEST_MODE = 'EVENT_NOTIFICATION' EVENT_QUEUE = '%s' AS COPY INTO t FROM VOLUME sqs_vol USING CSV`, queueURL))
	pipeWait(t, 20*time.Second, "the pipe's first turn did not finish", func() bool { return s.pipeTurns("sqs_pipe") >= 1 })
	time.Sleep(time.Second) // the worker's next look at the catalog starts reading the queue
	event := func(rel string) string {
		return fmt.Sprintf(`{"Records":[{"eventName":"ObjectCreated:Put","s3":{"bucket":{"name":%q},"object":{"key":%q}}}]}`, s3Bucket, url.QueryEscape(s.key(rel)))
	}

	s.put("in/a.csv", csvRows(0, 3))
	start := time.Now()
	must(t, q.Send(s.Ctx, event("in/a.csv")))
	pipeWait(t, 30*time.Second, "a.csv was not loaded through SQS", func() bool { return s.pipeCount("t") == 3 })
	took := time.Since(start)
	t.Logf("notification sent to rows visible through SQS: %v", took.Round(time.Millisecond))
	if took > 5*time.Second {
		t.Errorf("a.csv took %v, want a few seconds (the event drives the pipe, not its 300 s listing)", took)
	}

	// Garbage is deleted; an SNS-wrapped notification and the same
	// notification twice load b.csv once.
	must(t, q.Send(s.Ctx, "not an event"))
	s.put("in/b.csv", csvRows(10, 2))
	sns, _ := json.Marshal(map[string]string{"Type": "Notification", "Message": event("in/b.csv")})
	must(t, q.Send(s.Ctx, string(sns)))
	must(t, q.Send(s.Ctx, event("in/b.csv")))
	pipeWait(t, 30*time.Second, "b.csv was not loaded through SQS", func() bool { return s.pipeCount("t") == 5 })
	pipeSteady(t, 3*time.Second, "a repeated notification loaded b.csv again", func() bool { return s.pipeCount("t") == 5 })
	// A notification that comes before its object: the file is looked for
	// again for a few seconds, not left to the 300 s listing.
	must(t, q.Send(s.Ctx, event("in/late.csv")))
	time.Sleep(time.Second)
	s.put("in/late.csv", csvRows(20, 4))
	pipeWait(t, 15*time.Second, "late.csv, notified before it was uploaded, was not loaded", func() bool { return s.pipeCount("t") == 9 })

	// Every message was handled and deleted: none comes back after the
	// 2 s visibility timeout.
	time.Sleep(3 * time.Second)
	ctx, cancel := context.WithTimeout(s.Ctx, 5*time.Second)
	defer cancel()
	if left, err := q.Receive(ctx, 10, 0); err != nil || len(left) != 0 {
		t.Fatalf("messages left in the queue: %v %v", left, err)
	}
}
