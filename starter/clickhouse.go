package main

import (
	"crypto/tls"
	"flag"
	"fmt"
	"os"

	"github.com/lakepipe/lakepipe/internal/chstore"
	"github.com/lakepipe/lakepipe/internal/core"
	"github.com/lakepipe/lakepipe/internal/rowio"
	"github.com/lakepipe/lakepipe/internal/tlsfiles"
)

// clickhouseFlags are the ClickHouse settings beyond address and user:
// cluster mode and TLS. Paths to certificates are settings; the password
// (LAKEPIPE_CLICKHOUSE_PASSWORD) stays environment-only.
type clickhouseFlags struct {
	cluster    string
	replicated bool
	tls        bool
	caFile     string
	certFile   string
	keyFile    string
	serverName string
	maxParts   int
}

func (c *clickhouseFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&c.cluster, "clickhouse-cluster", os.Getenv("LAKEPIPE_CLICKHOUSE_CLUSTER"), "ClickHouse cluster (of remote_servers) to shard tables over; empty for a single server (LAKEPIPE_CLICKHOUSE_CLUSTER)")
	fs.BoolVar(&c.replicated, "clickhouse-replicated", env("LAKEPIPE_CLICKHOUSE_REPLICATED", "") == "true", "the cluster's servers share a Keeper/ZooKeeper: ReplicatedMergeTree tables, ON CLUSTER DDL, the catalog on every node (LAKEPIPE_CLICKHOUSE_REPLICATED=true)")
	fs.BoolVar(&c.tls, "clickhouse-tls", env("LAKEPIPE_CLICKHOUSE_TLS", "") == "true", "connect to ClickHouse over TLS (its secure native port) (LAKEPIPE_CLICKHOUSE_TLS=true)")
	fs.StringVar(&c.caFile, "clickhouse-tls-ca", os.Getenv("LAKEPIPE_CLICKHOUSE_TLS_CA"), "PEM file of the CA that signed ClickHouse's certificate; implies TLS (LAKEPIPE_CLICKHOUSE_TLS_CA)")
	fs.StringVar(&c.certFile, "clickhouse-tls-cert", os.Getenv("LAKEPIPE_CLICKHOUSE_TLS_CERT"), "client certificate (PEM) for ClickHouse; implies TLS (LAKEPIPE_CLICKHOUSE_TLS_CERT)")
	fs.StringVar(&c.keyFile, "clickhouse-tls-key", os.Getenv("LAKEPIPE_CLICKHOUSE_TLS_KEY"), "key of the client certificate (LAKEPIPE_CLICKHOUSE_TLS_KEY)")
	fs.IntVar(&c.maxParts, "clickhouse-max-partitions-per-insert", envInt("LAKEPIPE_CLICKHOUSE_MAX_PARTITIONS_PER_INSERT", chstore.DefaultMaxPartitionsPerInsert), "partitions one INSERT block may write, on ClickHouse releases that bound it (max_partitions_per_insert_block; their default is 100) (LAKEPIPE_CLICKHOUSE_MAX_PARTITIONS_PER_INSERT)")
	fs.StringVar(&c.serverName, "clickhouse-tls-server-name", os.Getenv("LAKEPIPE_CLICKHOUSE_TLS_SERVER_NAME"), "name to check ClickHouse's certificate against, if not the host (LAKEPIPE_CLICKHOUSE_TLS_SERVER_NAME)")
}

// clickhouseConfig is the chstore configuration of these flags.
func (c *connFlags) clickhouseConfig() (chstore.Config, error) {
	cfg := chstore.Config{Addr: c.clickhouse, User: c.clickhouseUser, Password: c.clickhousePassword, Cluster: c.ch.cluster, Replicated: c.ch.replicated,
		MaxPartitionsPerInsert: c.ch.maxParts}
	t, err := c.ch.tlsConfig()
	if err != nil {
		return cfg, fmt.Errorf("ClickHouse TLS: %w", err)
	}
	cfg.TLS = t
	return cfg, nil
}

func (c *clickhouseFlags) tlsConfig() (*tls.Config, error) {
	if !c.tls && c.caFile == "" && c.certFile == "" && c.keyFile == "" {
		return nil, nil
	}
	return tlsfiles.Files{CA: c.caFile, Cert: c.certFile, Key: c.keyFile, ServerName: c.serverName}.Config(
		tlsfiles.Names{CA: "LAKEPIPE_CLICKHOUSE_TLS_CA", Cert: "LAKEPIPE_CLICKHOUSE_TLS_CERT", Key: "LAKEPIPE_CLICKHOUSE_TLS_KEY"})
}

// engineConfig is the engine's configuration: names from the flags, the
// reader limits from the environment (LAKEPIPE_MAX_LINE_BYTES, …; see
// docs/security.md).
func (c *connFlags) engineConfig() (core.Config, error) {
	limits, err := rowio.LimitsFromEnv(os.Getenv)
	if err != nil {
		return core.Config{}, err
	}
	return core.Config{Workspace: c.workspace, Schema: c.schema, Limits: limits}, nil
}
