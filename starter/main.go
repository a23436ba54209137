// Command lakepipe is the command-line program of lakepipe: it runs SQL
// statements (`lakepipe sql`), lints pipeline scripts (`lakepipe sql
// --check`), runs workers (`lakepipe worker`), the write service for
// streaming writes (`lakepipe serve`), the end-to-end demo (`lakepipe demo`),
// the re-sealing of the catalog's secrets (`lakepipe secrets`) and the codec
// server that decrypts payloads for the Temporal UI (`lakepipe codec-server`).
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/lakepipe/lakepipe/internal/orchestrator"
	"github.com/lakepipe/lakepipe/internal/payloadcodec"
)

const usage = `lakepipe — continuous data ingestion for ClickHouse

Usage:
  lakepipe sql [flags] [-e 'STMT; STMT' | -f FILE]   run SQL (stdin when neither is given)
  lakepipe sql --check -f FILE                      parse and validate only; needs no server
  lakepipe worker [flags]                           run a worker (pipes); several share the work
  lakepipe serve [flags]                            run the write service (streaming writes, HTTP API)
  lakepipe demo                                     run the end-to-end demo on the local stack
  lakepipe codec-server [flags]                     decrypt payloads for the Temporal UI (LAKEPIPE_CODEC_KEY)
  lakepipe secrets status|rotate [flags]            count or re-seal the catalog's secrets (LAKEPIPE_SECRET_KEY)
  lakepipe tokens create|list|revoke [flags]        scoped write-service tokens (lakepipe tokens -h)
  lakepipe version

Run 'lakepipe sql -h' for the flags. Every flag has a LAKEPIPE_* environment
variable; the defaults match deploy/local.
`

var version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "sql":
		return runSQL(ctx, args[1:], stdin, stdout, stderr)
	case "worker":
		return runWorker(ctx, args[1:], stderr)
	case "serve":
		return runServe(ctx, args[1:], stderr)
	case "demo":
		return runDemo(ctx, args[1:], stdout, stderr)
	case "codec-server":
		return runCodecServer(ctx, args[1:], stderr)
	case "secrets":
		return runSecrets(ctx, args[1:], stdout, stderr)
	case "tokens":
		return runTokens(ctx, args[1:], stdout, stderr)
	case "version", "--version":
		fmt.Fprintln(stdout, "lakepipe", version)
		return 0
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "lakepipe: unknown command %q\n\n%s", args[0], usage)
	return 2
}

// connFlags are the connection settings every command shares.
type connFlags struct {
	clickhouse         string
	clickhouseUser     string
	clickhousePassword string
	workspace          string
	schema             string
	temporal           string
	namespace          string
	taskQueue          string
	ch                 clickhouseFlags
	temporalTLS        orchestrator.TLS
	// temporalAPIKey (LAKEPIPE_TEMPORAL_API_KEY) and the payload keys
	// (LAKEPIPE_CODEC_KEY or _FILE, read by temporalConfig) have no flags
	// on purpose, like the password.
	temporalAPIKey string
}

func env(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func (c *connFlags) register(fs *flag.FlagSet) {
	defAddr := "127.0.0.1:" + env("LAKEPIPE_CLICKHOUSE_PORT", "19000")
	fs.StringVar(&c.clickhouse, "clickhouse", env("LAKEPIPE_CLICKHOUSE_ADDR", defAddr), "ClickHouse native address host:port (LAKEPIPE_CLICKHOUSE_ADDR)")
	fs.StringVar(&c.clickhouseUser, "clickhouse-user", env("LAKEPIPE_CLICKHOUSE_USER", "default"), "ClickHouse user (LAKEPIPE_CLICKHOUSE_USER)")
	// The password has no flag on purpose: flags show up in process lists.
	c.clickhousePassword = os.Getenv("LAKEPIPE_CLICKHOUSE_PASSWORD")
	c.ch.register(fs)
	fs.StringVar(&c.workspace, "workspace", env("LAKEPIPE_WORKSPACE", "default"), "workspace of unqualified names (LAKEPIPE_WORKSPACE)")
	fs.StringVar(&c.schema, "schema", env("LAKEPIPE_SCHEMA", "public"), "schema of unqualified names (LAKEPIPE_SCHEMA)")
	fs.StringVar(&c.temporal, "temporal", env("LAKEPIPE_TEMPORAL_ADDR", "127.0.0.1:"+env("LAKEPIPE_TEMPORAL_PORT", "7233")), "Temporal frontend host:port (LAKEPIPE_TEMPORAL_ADDR)")
	fs.StringVar(&c.namespace, "namespace", env("LAKEPIPE_TEMPORAL_NAMESPACE", "default"), "Temporal namespace (LAKEPIPE_TEMPORAL_NAMESPACE)")
	fs.StringVar(&c.taskQueue, "task-queue", env("LAKEPIPE_TASK_QUEUE", "lakepipe"), "Temporal task queue of lakepipe's workers (LAKEPIPE_TASK_QUEUE)")
	fs.BoolVar(&c.temporalTLS.Enabled, "temporal-tls", env("LAKEPIPE_TEMPORAL_TLS", "") == "true", "connect to Temporal over TLS; implied by the other -temporal-tls-* settings and LAKEPIPE_TEMPORAL_API_KEY (LAKEPIPE_TEMPORAL_TLS)")
	fs.StringVar(&c.temporalTLS.CAFile, "temporal-tls-ca", env("LAKEPIPE_TEMPORAL_TLS_CA", ""), "PEM file of the CAs of Temporal's server certificate; default the system's (LAKEPIPE_TEMPORAL_TLS_CA)")
	fs.StringVar(&c.temporalTLS.CertFile, "temporal-tls-cert", env("LAKEPIPE_TEMPORAL_TLS_CERT", ""), "PEM client certificate for mutual TLS with Temporal (LAKEPIPE_TEMPORAL_TLS_CERT)")
	fs.StringVar(&c.temporalTLS.KeyFile, "temporal-tls-key", env("LAKEPIPE_TEMPORAL_TLS_KEY", ""), "PEM private key of -temporal-tls-cert (LAKEPIPE_TEMPORAL_TLS_KEY)")
	fs.StringVar(&c.temporalTLS.ServerName, "temporal-tls-server-name", env("LAKEPIPE_TEMPORAL_TLS_SERVER_NAME", ""), "name Temporal's certificate is checked against; default the host of -temporal (LAKEPIPE_TEMPORAL_TLS_SERVER_NAME)")
	c.temporalAPIKey = os.Getenv("LAKEPIPE_TEMPORAL_API_KEY")
}

// temporalConfig is the orchestrator configuration of the flags: with
// LAKEPIPE_CODEC_KEY or LAKEPIPE_CODEC_KEY_FILE set, every payload
// lakepipe writes to Temporal is encrypted. Its errors name settings,
// never a key.
func (c *connFlags) temporalConfig() (orchestrator.Config, error) {
	cfg := orchestrator.Config{Address: c.temporal, Namespace: c.namespace, TaskQueue: c.taskQueue, TLS: c.temporalTLS, APIKey: c.temporalAPIKey}
	codec, err := payloadcodec.FromEnv()
	if err != nil {
		return orchestrator.Config{}, err
	}
	if codec != nil {
		cfg.Codec = codec
	}
	return cfg, cfg.Validate()
}
