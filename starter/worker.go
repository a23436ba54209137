package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"

	"github.com/lakepipe/lakepipe/internal/chstore"
	"github.com/lakepipe/lakepipe/internal/orchestrator"
	"github.com/lakepipe/lakepipe/worker"
)

func runWorker(ctx context.Context, args []string, stderr io.Writer) int {
	var c connFlags
	fs := flag.NewFlagSet("lakepipe worker", flag.ContinueOnError)
	fs.SetOutput(stderr)
	c.register(fs)
	httpAddr := fs.String("http", env("LAKEPIPE_WORKER_HTTP", "127.0.0.1:9464"), "address of /metrics, /healthz and /events (S3 event notifications); empty for none (LAKEPIPE_WORKER_HTTP)")
	parallel := fs.Int("parallel", 4, "files loaded at once per pipe batch")
	logFormat := fs.String("log-format", env("LAKEPIPE_LOG_FORMAT", "json"), "log format: json or text (LAKEPIPE_LOG_FORMAT)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	err := worker.Run(ctx, worker.Config{
		ClickHouse: chstore.Config{Addr: c.clickhouse, User: c.clickhouseUser, Password: c.clickhousePassword},
		Temporal:   orchestrator.Config{Address: c.temporal, Namespace: c.namespace, TaskQueue: c.taskQueue},
		Workspace:  c.workspace,
		HTTPAddr:   *httpAddr,
		Parallel:   *parallel,
		Logger:     newLogger(*logFormat, stderr),
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
