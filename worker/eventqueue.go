package worker

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"go.temporal.io/api/serviceerror"

	"github.com/lakepipe/lakepipe/internal/jobs"
	"github.com/lakepipe/lakepipe/internal/loading"
	"github.com/lakepipe/lakepipe/internal/sqs"
)

// EventQueueConfig names a Kafka topic that S3 event notifications arrive
// on: what versitygw (--event-kafka-url), MinIO and Ceph publish to. Each
// message is a notification body, as POSTed to /events. The zero value
// reads no topic.
type EventQueueConfig struct {
	// Brokers are the topic's bootstrap servers (host:port).
	Brokers []string
	Topic   string
	// Group is the consumer group the workers share (default
	// DefaultEventGroup): each message is handled by one worker.
	Group string
}

// DefaultEventGroup is the consumer group of EventQueueConfig.
const DefaultEventGroup = "lakepipe-events"

// ParseEventQueue reads "host:port[,host:port…]/topic".
func ParseEventQueue(s string) (EventQueueConfig, error) {
	brokers, topic, ok := strings.Cut(strings.TrimSpace(s), "/")
	if !ok || brokers == "" || topic == "" || strings.Contains(topic, "/") {
		return EventQueueConfig{}, fmt.Errorf("event queue %q: expected host:port[,host:port…]/topic", s)
	}
	return EventQueueConfig{Brokers: strings.Split(brokers, ","), Topic: topic}, nil
}

// consumeEventQueue signals the pipes that the notifications of the topic
// concern, as /events does. A message's offset is committed only after
// each pipe it concerns took its signal (recorded in the pipe's workflow
// history, so nothing is lost with it); a worker that dies before the
// commit leaves the message to be read again, and a pipe signalled twice
// loads nothing twice (its load history). A message that is not a
// notification, or larger than ev.MaxBytes, is logged and skipped: it
// must not stop the queue. A signal that fails for another reason than
// the pipe being gone is retried, with backoff, until it goes through.
func consumeEventQueue(ctx context.Context, q EventQueueConfig, ev EventsConfig, router eventRouter, sig signaler, log *slog.Logger) error {
	ev = ev.withDefaults()
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(q.Brokers...),
		kgo.ConsumerGroup(cmp.Or(q.Group, DefaultEventGroup)),
		kgo.ConsumeTopics(q.Topic),
		kgo.DisableAutoCommit(),
		// Bounds what one fetch may hold in memory.
		kgo.FetchMaxBytes(int32(min(64<<20, 16*ev.MaxBytes))),
		kgo.FetchMaxPartitionBytes(int32(min(32<<20, 4*ev.MaxBytes))),
		kgo.BrokerMaxReadBytes(int32(min(128<<20, 32*ev.MaxBytes))),
	)
	if err != nil {
		return fmt.Errorf("event queue %s: %w", q.Topic, err)
	}
	defer cl.Close()
	log.Info("reading S3 event notifications from Kafka", "topic", q.Topic, "brokers", strings.Join(q.Brokers, ","), "group", cmp.Or(q.Group, DefaultEventGroup))
	for {
		fs := cl.PollRecords(ctx, 100)
		if ctx.Err() != nil {
			return nil
		}
		fs.EachError(func(topic string, partition int32, err error) {
			log.Warn("event queue fetch", "topic", topic, "partition", partition, "error", err)
		})
		recs := fs.Records()
		for _, r := range recs {
			if int64(len(r.Value)) > ev.MaxBytes {
				log.Warn("event queue message skipped: larger than the events limit", "topic", r.Topic, "partition", r.Partition, "offset", r.Offset, "bytes", len(r.Value), "max_bytes", ev.MaxBytes)
				continue
			}
			records, err := parseEvents(r.Value, ev.MaxRecords)
			if err != nil {
				log.Warn("event queue message skipped", "topic", r.Topic, "partition", r.Partition, "offset", r.Offset, "error", err)
				continue
			}
			for backoff := 500 * time.Millisecond; ; backoff = min(2*backoff, 30*time.Second) {
				err := deliverEvents(ctx, router, sig, records, ev.MaxPathsPerPipe, log)
				if err == nil {
					break
				}
				log.Warn("event queue message not delivered; trying again", "topic", r.Topic, "partition", r.Partition, "offset", r.Offset, "error", err, "in", backoff.String())
				select {
				case <-ctx.Done():
					return nil
				case <-time.After(backoff):
				}
			}
		}
		if len(recs) > 0 {
			if err := cl.CommitRecords(ctx, recs...); err != nil && ctx.Err() == nil {
				// Read again after a restart: signalled twice, loaded once.
				log.Warn("event queue commit", "topic", q.Topic, "error", err)
			}
		}
	}
}

// deliverEvents signals each pipe the records concern with its new paths
// (or only wakes it past maxPaths). It returns the first failure that a
// retry can fix: a pipe gone meanwhile is not one.
func deliverEvents(ctx context.Context, router eventRouter, sig signaler, records []s3Record, maxPaths int, log *slog.Logger) error {
	batches, order, err := routeEvents(ctx, router, records)
	if err != nil {
		return fmt.Errorf("%w: %w", errCatalog, err)
	}
	var first error
	for _, id := range order {
		paths := batches[id]
		var err error
		if len(paths) > maxPaths {
			// Too many to carry: the pipe's listing finds them.
			err = sig.Signal(ctx, id, jobs.SignalRefresh, nil)
		} else {
			err = sig.Signal(ctx, id, jobs.SignalFiles, jobs.FilesSignal{Paths: paths})
		}
		if err == nil {
			continue
		}
		var gone *serviceerror.NotFound
		if errors.As(err, &gone) {
			continue // the pipe was dropped: nothing to wake
		}
		log.Warn("signal pipe with new files", "workflow_id", id, "files", len(paths), "error", err)
		if first == nil {
			first = fmt.Errorf("signal %s: %w", id, err)
		}
	}
	return first
}

// errCatalog marks a failure to read the catalog while routing events.
var errCatalog = errors.New("read the catalog")

// EventSQSConfig names an Amazon SQS queue (or one of a server speaking
// its query protocol) that S3 event notifications arrive on, directly or
// through an SNS topic. The zero value reads no queue.
type EventSQSConfig struct {
	QueueURL string
	// Region signs the requests ("" : from the queue URL's host).
	Region string
	Creds  sqs.Credentials
}

// consumeSQS signals the pipes that the queue's notifications concern. A
// message is deleted only once every pipe it concerns took its signal; one
// that could not be delivered stays, and the queue gives it again after
// its visibility timeout. A message that is no notification is deleted
// with a warning (it would come back forever).
func consumeSQS(ctx context.Context, q EventSQSConfig, ev EventsConfig, router eventRouter, sig signaler, log *slog.Logger) error {
	ev = ev.withDefaults()
	c, err := sqs.New(q.QueueURL, q.Region, q.Creds)
	if err != nil {
		return err
	}
	log.Info("reading S3 event notifications from SQS", "queue", q.QueueURL, "region", c.Region)
	backoff := time.Second
	for ctx.Err() == nil {
		msgs, err := c.Receive(ctx, 10, 20*time.Second)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			log.Warn("event queue receive; trying again", "queue", q.QueueURL, "error", err, "permanent", sqs.Permanent(err), "in", backoff.String())
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, time.Minute)
			continue
		}
		backoff = time.Second
		var done []string
		for _, m := range msgs {
			records, err := sqsEvents(m.Body, ev)
			if err != nil {
				log.Warn("event queue message deleted: not an S3 event notification", "queue", q.QueueURL, "message_id", m.ID, "error", err)
				done = append(done, m.ReceiptHandle)
				continue
			}
			if err := deliverEvents(ctx, router, sig, records, ev.MaxPathsPerPipe, log); err != nil {
				log.Warn("event queue message not delivered; the queue gives it again after its visibility timeout", "queue", q.QueueURL, "message_id", m.ID, "error", err)
				continue
			}
			done = append(done, m.ReceiptHandle)
		}
		if err := c.Delete(ctx, done); err != nil && ctx.Err() == nil {
			// Given again later: signalled twice, loaded once.
			log.Warn("event queue delete", "queue", q.QueueURL, "error", err)
		}
	}
	return nil
}

// sqsEvents reads an SQS message body: an S3 notification, or an SNS
// notification whose Message is one (S3 → SNS → SQS).
func sqsEvents(body string, ev EventsConfig) ([]s3Record, error) {
	if int64(len(body)) > ev.MaxBytes {
		return nil, fmt.Errorf("%d bytes, more than the events limit of %d", len(body), ev.MaxBytes)
	}
	var sns struct {
		Type    string `json:"Type"`
		Message string `json:"Message"`
	}
	if json.Unmarshal([]byte(body), &sns) == nil && sns.Type == "Notification" && sns.Message != "" {
		body = sns.Message
	}
	return parseEvents([]byte(body), ev.MaxRecords)
}

// eventQueueLister reads the queues pipes name: *engine.Engine, or a fake.
type eventQueueLister interface {
	EventQueues(ctx context.Context) ([]loading.EventQueue, error)
}

// DefaultEventQueueRescan is how often a worker looks for queues pipes
// started or stopped naming (Config.EventQueueRescan): a new pipe's queue
// is read within it. Each look is one catalog read of the pipes.
const DefaultEventQueueRescan = 15 * time.Second

// runPipeQueues keeps one reader per queue that EVENT_NOTIFICATION pipes
// name (EVENT_QUEUE), starting and stopping readers as pipes come and go.
// Every worker reads every queue: Kafka's consumer group gives each
// message to one of them, SQS each receive.
func runPipeQueues(ctx context.Context, lister eventQueueLister, every time.Duration, ev EventsConfig, router eventRouter, sig signaler, log *slog.Logger) {
	running := map[string]context.CancelFunc{}
	defer func() {
		for _, cancel := range running {
			cancel()
		}
	}()
	for {
		qs, err := lister.EventQueues(ctx)
		if err != nil && ctx.Err() == nil {
			log.Warn("read the event queues pipes name", "error", err)
		}
		if err == nil {
			want := map[string]loading.EventQueue{}
			for _, q := range qs {
				want[q.URL+"\x00"+q.AccessID+"\x00"+q.AccessKey] = q
			}
			for k, cancel := range running {
				if _, ok := want[k]; !ok {
					cancel()
					delete(running, k)
				}
			}
			for k, q := range want {
				if running[k] != nil {
					continue
				}
				qctx, cancel := context.WithCancel(ctx)
				running[k] = cancel
				go func() {
					var err error
					if q.IsKafka() {
						err = consumeEventQueue(qctx, EventQueueConfig{Brokers: q.Brokers, Topic: q.Topic}, ev, router, sig, log)
					} else {
						err = consumeSQS(qctx, EventSQSConfig{QueueURL: q.URL, Region: q.Region, Creds: sqs.Credentials{AccessKey: q.AccessID, SecretKey: q.AccessKey}}, ev, router, sig, log)
					}
					if err != nil {
						log.Error("event queue", "queue", q.URL, "error", err)
					}
				}()
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(every):
		}
	}
}
