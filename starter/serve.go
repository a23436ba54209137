package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/lakepipe/lakepipe/internal/engine"
	"github.com/lakepipe/lakepipe/internal/tunnelserver"
)

// runServe runs the write service (streaming writes, Tunnel Stream). It
// needs ClickHouse only: flushes write directly, no workflow is involved,
// which is what makes a flush visible the moment it returns.
func runServe(ctx context.Context, args []string, stderr io.Writer) int {
	var c connFlags
	fs := flag.NewFlagSet("lakepipe serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	c.register(fs)
	listen := fs.String("listen", env("LAKEPIPE_TUNNEL_ADDR", "127.0.0.1:8090"), "address of the write service's HTTP API (LAKEPIPE_TUNNEL_ADDR)")
	maxFlush := fs.Int64("max-flush-bytes", 256<<20, "largest flush body accepted; larger ones get 413")
	slots := fs.Int("slots", 0, "flushes of one session run at once when the session asks for 0 slots (0: 2 × CPUs)")
	logFormat := fs.String("log-format", env("LAKEPIPE_LOG_FORMAT", "json"), "log format: json or text (LAKEPIPE_LOG_FORMAT)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	log := newLogger(*logFormat, stderr)
	// The token has no flag on purpose: flags show up in process lists.
	err := serve(ctx, *listen, c, tunnelserver.Config{Token: os.Getenv("LAKEPIPE_TUNNEL_TOKEN"), MaxFlushBytes: *maxFlush, Slots: *slots, Logger: log}, log)
	if err != nil {
		fmt.Fprintln(stderr, "lakepipe serve:", err)
		return 1
	}
	return 0
}

func serve(ctx context.Context, listen string, c connFlags, cfg tunnelserver.Config, log *slog.Logger) error {
	cat, closeStore, err := openCatalog(ctx, &c)
	if err != nil {
		return err
	}
	defer closeStore()
	srv, err := tunnelserver.New(engine.New(cat, engine.Config{Workspace: c.workspace, Schema: c.schema}), cfg)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return fmt.Errorf("listen %s: %w", listen, err)
	}
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ln) }()
	log.Info("lakepipe write service running", "addr", ln.Addr().String(), "max_flush_bytes", cfg.MaxFlushBytes)
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	// Flushes in flight finish: a flush either writes whole or not at all,
	// but its client should get the answer.
	sctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	log.Info("lakepipe write service stopped")
	return nil
}
