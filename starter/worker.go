package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/lakepipe/lakepipe/activities"
	"github.com/lakepipe/lakepipe/internal/core"
	"github.com/lakepipe/lakepipe/internal/payloadcodec"
	"github.com/lakepipe/lakepipe/internal/sqs"
	"github.com/lakepipe/lakepipe/worker"
)

func runWorker(ctx context.Context, args []string, stderr io.Writer) int {
	var c connFlags
	fs := flag.NewFlagSet("lakepipe worker", flag.ContinueOnError)
	fs.SetOutput(stderr)
	c.register(fs)
	httpAddr := fs.String("http", env("LAKEPIPE_WORKER_HTTP", "127.0.0.1:9464"), "address of /metrics, /healthz and /events (S3 event notifications, which must carry the token in LAKEPIPE_EVENTS_TOKEN when it is set); empty for none (LAKEPIPE_WORKER_HTTP)")
	parallel := fs.Int("parallel", 4, "files loaded at once per pipe batch")
	maxActivities := fs.Int("max-activities", envInt("LAKEPIPE_WORKER_MAX_ACTIVITIES", 32), "activities (file copies, listings, Kafka batches, refreshes) run at once (LAKEPIPE_WORKER_MAX_ACTIVITIES)")
	maxAwaiting := fs.Int("max-awaiting", envInt("LAKEPIPE_WORKER_MAX_AWAITING", worker.DefaultMaxAwaiting), "idle polling pipes that wait for files on this worker at once, each a sleeping goroutine between listings (LAKEPIPE_WORKER_MAX_AWAITING)")
	maxWorkflowTasks := fs.Int("max-workflow-tasks", envInt("LAKEPIPE_WORKER_MAX_WORKFLOW_TASKS", 64), "workflow tasks run at once (LAKEPIPE_WORKER_MAX_WORKFLOW_TASKS)")
	stopTimeout := fs.Duration("stop-timeout", time.Minute, "on SIGTERM, how long running activities may take to finish before they are cancelled and retried elsewhere")
	queues := fs.String("queues", cmp.Or(os.Getenv("LAKEPIPE_WORKER_QUEUES"), "control,loads"), "task queues this worker serves: control (workflow tasks, listings), loads (copies, Kafka batches, refreshes) or both (LAKEPIPE_WORKER_QUEUES)")
	stall := fs.Duration("stall-timeout", envDuration("LAKEPIPE_STALL_TIMEOUT", activities.DefaultStallTimeout), "a copy or Kafka batch attempt that makes no progress (bytes, files, records) for this long gives up and is retried (LAKEPIPE_STALL_TIMEOUT)")
	pollers := fs.Int("pollers", envInt("LAKEPIPE_WORKER_POLLERS", 2), "pollers of the task queue per task kind (LAKEPIPE_WORKER_POLLERS)")
	logFormat := fs.String("log-format", env("LAKEPIPE_LOG_FORMAT", "json"), "log format: json or text (LAKEPIPE_LOG_FORMAT)")
	fullListing := fs.Duration("full-listing-interval", envDuration("LAKEPIPE_FULL_LISTING_INTERVAL", core.DefaultFullListingInterval), "how often a pipe whose new files arrive in key order lists its whole volume anyway; between, turns list only what is new (LAKEPIPE_FULL_LISTING_INTERVAL)")
	eventsMaxBytes := fs.Int64("events-max-bytes", worker.DefaultEventsMaxBytes, "largest S3 event notification body /events accepts; larger ones get 413")
	eventsMaxRecords := fs.Int("events-max-records", worker.DefaultEventsMaxRecords, "most records in one S3 event notification; more get 413")
	eventsMaxPaths := fs.Int("events-max-paths", worker.DefaultEventsMaxPaths, "most new-file paths one notification signals to a pipe; past it the pipe is only woken, and its listing finds the files")
	eventQueue := fs.String("event-queue", os.Getenv("LAKEPIPE_EVENTS_KAFKA"), "a Kafka topic S3 event notifications arrive on, as host:port[,host:port]/topic (versitygw --event-kafka-url, MinIO, Ceph); read besides /events (LAKEPIPE_EVENTS_KAFKA)")
	eventGroup := fs.String("event-queue-group", env("LAKEPIPE_EVENTS_KAFKA_GROUP", worker.DefaultEventGroup), "consumer group of --event-queue, shared by the workers (LAKEPIPE_EVENTS_KAFKA_GROUP)")
	eventSQS := fs.String("event-sqs-url", os.Getenv("LAKEPIPE_EVENTS_SQS_URL"), "an SQS queue S3 event notifications arrive on (directly or through SNS), read besides /events; credentials from AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, region from AWS_REGION or the URL (LAKEPIPE_EVENTS_SQS_URL)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *eventSQS != "" {
		if _, err := sqs.New(*eventSQS, "", sqs.Credentials{}); err != nil {
			fmt.Fprintln(stderr, "lakepipe worker:", err)
			return 2
		}
	}
	var eq worker.EventQueueConfig
	if *eventQueue != "" {
		var err error
		if eq, err = worker.ParseEventQueue(*eventQueue); err != nil {
			fmt.Fprintln(stderr, "lakepipe worker:", err)
			return 2
		}
		eq.Group = *eventGroup
	}
	chc, err := c.clickhouseConfig()
	if err != nil {
		fmt.Fprintln(stderr, "lakepipe worker:", err)
		return 2
	}
	tc, err := c.temporalConfig()
	if err != nil {
		fmt.Fprintln(stderr, "lakepipe worker:", err)
		return 2
	}
	ecfg, err := c.engineConfig()
	if err != nil {
		fmt.Fprintln(stderr, "lakepipe worker:", err)
		return 2
	}
	require, err := payloadcodec.RequireFromEnv()
	if err != nil {
		fmt.Fprintln(stderr, "lakepipe worker:", err)
		return 2
	}
	if require {
		pc, ok := tc.Codec.(*payloadcodec.Codec)
		if !ok {
			fmt.Fprintf(stderr, "lakepipe worker: %s=true needs the payload keys (%s or %s)\n", payloadcodec.EnvRequire, payloadcodec.EnvKey, payloadcodec.EnvKeyFile)
			return 2
		}
		tc.Codec = pc.Requiring()
	}
	err = worker.Run(ctx, worker.Config{
		ClickHouse:          chc,
		Temporal:            tc,
		RequireEncryption:   require,
		Workspace:           c.workspace,
		MaintenanceSchedule: true,
		Queues:              strings.Split(*queues, ","),
		StallTimeout:        *stall,
		Limits:              ecfg.Limits,
		FullListingInterval: *fullListing,
		MetricsToken:        os.Getenv("LAKEPIPE_METRICS_TOKEN"),
		HTTPAddr:            *httpAddr,
		Parallel:            *parallel,
		MaxActivities:       *maxActivities,
		MaxAwaiting:         *maxAwaiting,
		MaxWorkflowTasks:    *maxWorkflowTasks,
		Pollers:             *pollers,
		StopTimeout:         *stopTimeout,
		// The token has no flag on purpose: flags show up in process lists.
		Events:     worker.EventsConfig{Token: os.Getenv("LAKEPIPE_EVENTS_TOKEN"), MaxBytes: *eventsMaxBytes, MaxRecords: *eventsMaxRecords, MaxPathsPerPipe: *eventsMaxPaths},
		EventQueue: eq,
		// Credentials from the environment only: flags show up in process lists.
		EventSQS: worker.EventSQSConfig{QueueURL: *eventSQS, Region: os.Getenv("AWS_REGION"), Creds: sqs.Credentials{
			AccessKey: os.Getenv("AWS_ACCESS_KEY_ID"), SecretKey: os.Getenv("AWS_SECRET_ACCESS_KEY"), SessionToken: os.Getenv("AWS_SESSION_TOKEN")}},
		Logger: newLogger(*logFormat, stderr),
	})
	if err != nil {
		fmt.Fprintln(stderr, "lakepipe worker:", err)
		return 1
	}
	return 0
}

// newLogger logs to w as JSON lines, or as text when format is "text".
func newLogger(format string, w io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{Level: slog.LevelInfo}
	if format == "text" {
		return slog.New(slog.NewTextHandler(w, opts))
	}
	return slog.New(slog.NewJSONHandler(w, opts))
}

// envInt is env for whole numbers; a value that is not one is ignored.
func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

// envDuration is env for durations ("90s", "1h"); a value that is not one
// is ignored.
func envDuration(name string, def time.Duration) time.Duration {
	if d, err := time.ParseDuration(os.Getenv(name)); err == nil && d > 0 {
		return d
	}
	return def
}
