package main

import (
	"context"
	"crypto/tls"
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
	maxFlush := fs.Int64("max-flush-bytes", tunnelserver.DefaultMaxFlushBytes, "largest flush body accepted, as sent (compressed); larger ones get 413")
	maxPlain := fs.Int64("max-flush-decompressed-bytes", 0, "largest flush body accepted once decompressed; larger ones get 413 (0: 4 × --max-flush-bytes, 1 GiB by default)")
	maxRecords := fs.Int64("max-flush-records", tunnelserver.DefaultMaxFlushRecords, "most records accepted in one flush; more get 413")
	readTimeout := fs.Duration("read-timeout", tunnelserver.DefaultReadTimeout, "how long a request body may take to arrive; a slower one gets 408 (10m is 256 MiB at 3.5 Mbit/s)")
	stallTimeout := fs.Duration("stall-timeout", tunnelserver.DefaultStallTimeout, "how long the service waits for the next bytes of a request body; a body that stalls longer gets 408")
	writeTimeout := fs.Duration("write-timeout", 0, "how long a request may take from its headers to the end of its answer (0: --read-timeout + 5m)")
	idleTimeout := fs.Duration("idle-timeout", tunnelserver.DefaultIdleTimeout, "how long a kept-alive connection may wait for its next request")
	slots := fs.Int("slots", 0, "flushes of one session run at once when the session asks for 0 slots (0: 2 × CPUs)")
	logFormat := fs.String("log-format", env("LAKEPIPE_LOG_FORMAT", "json"), "log format: json or text (LAKEPIPE_LOG_FORMAT)")
	tlsCert := fs.String("tls-cert", env("LAKEPIPE_TUNNEL_TLS_CERT", ""), "PEM certificate to serve HTTPS with, itself (LAKEPIPE_TUNNEL_TLS_CERT); needs --tls-key")
	tlsKey := fs.String("tls-key", env("LAKEPIPE_TUNNEL_TLS_KEY", ""), "PEM private key of --tls-cert (LAKEPIPE_TUNNEL_TLS_KEY)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if (*tlsCert == "") != (*tlsKey == "") {
		fmt.Fprintln(stderr, "lakepipe serve: --tls-cert and --tls-key go together: set both, or neither")
		return 2
	}
	log := newLogger(*logFormat, stderr)
	// The token has no flag on purpose: flags show up in process lists.
	err := serve(ctx, *listen, c, tunnelserver.Config{
		Token: os.Getenv("LAKEPIPE_TUNNEL_TOKEN"), MaxFlushBytes: *maxFlush, MaxFlushDecompressedBytes: *maxPlain, MaxFlushRecords: *maxRecords,
		ReadTimeout: *readTimeout, StallTimeout: *stallTimeout, WriteTimeout: *writeTimeout, IdleTimeout: *idleTimeout,
		Slots: *slots, Logger: log, MetricsToken: os.Getenv("LAKEPIPE_METRICS_TOKEN"),
	}, serveTLS{cert: *tlsCert, key: *tlsKey}, log)
	if err != nil {
		fmt.Fprintln(stderr, "lakepipe serve:", err)
		return 1
	}
	return 0
}

// serveTLS names the certificate and key the service serves HTTPS with;
// empty: plain HTTP (TLS ends in front of it).
type serveTLS struct{ cert, key string }

func serve(ctx context.Context, listen string, c connFlags, cfg tunnelserver.Config, tl serveTLS, log *slog.Logger) error {
	cat, closeStore, err := openCatalog(ctx, &c)
	if err != nil {
		return err
	}
	defer closeStore()
	ecfg, err := c.engineConfig()
	if err != nil {
		return err
	}
	srv, err := tunnelserver.New(engine.New(cat, ecfg), cfg)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return fmt.Errorf("listen %s: %w", listen, err)
	}
	hs := srv.HTTPServer()
	scheme := "http"
	if tl.cert != "" {
		// Loaded now, so that a bad file stops the start with its name.
		cert, err := tls.LoadX509KeyPair(tl.cert, tl.key)
		if err != nil {
			ln.Close()
			return fmt.Errorf("TLS certificate %s with key %s: %w", tl.cert, tl.key, err)
		}
		hs.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}}
		scheme = "https"
	}
	done := make(chan error, 1)
	go func() {
		if scheme == "https" {
			done <- hs.ServeTLS(ln, "", "")
			return
		}
		done <- hs.Serve(ln)
	}()
	cfg = srv.Config()
	log.Info("lakepipe write service running", "addr", ln.Addr().String(), "scheme", scheme, "metrics_token", cfg.MetricsToken != "", "max_flush_bytes", cfg.MaxFlushBytes,
		"max_flush_decompressed_bytes", cfg.MaxFlushDecompressedBytes, "max_flush_records", cfg.MaxFlushRecords,
		"read_timeout", cfg.ReadTimeout.String(), "stall_timeout", cfg.StallTimeout.String(), "write_timeout", cfg.WriteTimeout.String())
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
