# shellcheck shell=bash
# Settings of the local stack; every value can be overridden from the environment.
# Sourced by the other scripts in this folder and by .ci/run.
# The checkout is always the one this file is in. A shell that sourced another
# checkout's env.sh carries that checkout's paths; they are not settings of this
# one (a clone would install into, start and test the other's .bin and .stack),
# so they are dropped, while paths a person set to something else are kept.
lakepipe_here=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
if [ -n "${LAKEPIPE_ROOT:-}" ] && [ "$LAKEPIPE_ROOT" != "$lakepipe_here" ]; then
  [ "${LAKEPIPE_BIN:-}" != "$LAKEPIPE_ROOT/.bin" ] || unset LAKEPIPE_BIN
  [ "${LAKEPIPE_STATE:-}" != "$LAKEPIPE_ROOT/.stack" ] || unset LAKEPIPE_STATE
fi
LAKEPIPE_ROOT=$lakepipe_here
unset lakepipe_here
LAKEPIPE_BIN=${LAKEPIPE_BIN:-$LAKEPIPE_ROOT/.bin}
LAKEPIPE_STATE=${LAKEPIPE_STATE:-$LAKEPIPE_ROOT/.stack}
TEMPORAL_CLI_VERSION=${TEMPORAL_CLI_VERSION:-v1.5.1}
VERSITYGW_VERSION=${VERSITYGW_VERSION:-v1.8.0}
GOAWS_VERSION=${GOAWS_VERSION:-v0.4.5}

LAKEPIPE_TEMPORAL_PORT=${LAKEPIPE_TEMPORAL_PORT:-7233}
LAKEPIPE_TEMPORAL_UI_PORT=${LAKEPIPE_TEMPORAL_UI_PORT:-8233}
LAKEPIPE_CLICKHOUSE_PORT=${LAKEPIPE_CLICKHOUSE_PORT:-19000}
LAKEPIPE_CLICKHOUSE_HTTP_PORT=${LAKEPIPE_CLICKHOUSE_HTTP_PORT:-18123}
LAKEPIPE_CLICKHOUSE_INTERSERVER_PORT=${LAKEPIPE_CLICKHOUSE_INTERSERVER_PORT:-19009}
# A second ClickHouse server (service clickhouse2): with the first it makes the
# two-shard cluster LAKEPIPE_CLICKHOUSE_CLUSTER_NAME that both servers know, so
# that cluster mode can be tried and tested here (no Keeper: MergeTree shards
# behind Distributed tables). Single-node use never touches it.
LAKEPIPE_CLICKHOUSE2_PORT=${LAKEPIPE_CLICKHOUSE2_PORT:-19100}
LAKEPIPE_CLICKHOUSE2_HTTP_PORT=${LAKEPIPE_CLICKHOUSE2_HTTP_PORT:-18124}
LAKEPIPE_CLICKHOUSE2_INTERSERVER_PORT=${LAKEPIPE_CLICKHOUSE2_INTERSERVER_PORT:-19109}
LAKEPIPE_CLICKHOUSE_CLUSTER_NAME=${LAKEPIPE_CLICKHOUSE_CLUSTER_NAME:-lakepipe_local}
# Two more ClickHouse servers (clickhouse3, clickhouse4) with a ZooKeeper
# (service zookeeper, Debian's package): the replicated cluster
# LAKEPIPE_CLICKHOUSE_REPLICATED_CLUSTER_NAME, one shard of two replicas, on
# which lakepipe's replicated mode (ReplicatedMergeTree, ON CLUSTER DDL, a
# catalog every node holds) is tested.
LAKEPIPE_ZOOKEEPER_PORT=${LAKEPIPE_ZOOKEEPER_PORT:-19181}
LAKEPIPE_CLICKHOUSE3_PORT=${LAKEPIPE_CLICKHOUSE3_PORT:-19200}
LAKEPIPE_CLICKHOUSE3_HTTP_PORT=${LAKEPIPE_CLICKHOUSE3_HTTP_PORT:-18125}
LAKEPIPE_CLICKHOUSE3_INTERSERVER_PORT=${LAKEPIPE_CLICKHOUSE3_INTERSERVER_PORT:-19209}
LAKEPIPE_CLICKHOUSE4_PORT=${LAKEPIPE_CLICKHOUSE4_PORT:-19300}
LAKEPIPE_CLICKHOUSE4_HTTP_PORT=${LAKEPIPE_CLICKHOUSE4_HTTP_PORT:-18126}
LAKEPIPE_CLICKHOUSE4_INTERSERVER_PORT=${LAKEPIPE_CLICKHOUSE4_INTERSERVER_PORT:-19309}
LAKEPIPE_CLICKHOUSE_REPLICATED_CLUSTER_NAME=${LAKEPIPE_CLICKHOUSE_REPLICATED_CLUSTER_NAME:-lakepipe_replicated}
LAKEPIPE_S3_PORT=${LAKEPIPE_S3_PORT:-7070}
LAKEPIPE_KAFKA_PORT=${LAKEPIPE_KAFKA_PORT:-19092}
# Fixed credentials of the local S3 server; never use them anywhere else.
LAKEPIPE_S3_ACCESS_KEY=${LAKEPIPE_S3_ACCESS_KEY:-lakepipe-test-access}
LAKEPIPE_S3_SECRET_KEY=${LAKEPIPE_S3_SECRET_KEY:-lakepipe-test-secret-9f3c2a}

# The bucket start.sh creates on the local S3 server for tests and the demo.
LAKEPIPE_S3_BUCKET=${LAKEPIPE_S3_BUCKET:-lakepipe}
LAKEPIPE_S3_REGION=${LAKEPIPE_S3_REGION:-us-east-1}
LAKEPIPE_S3_ENDPOINT=${LAKEPIPE_S3_ENDPOINT:-http://127.0.0.1:$LAKEPIPE_S3_PORT}
# S3 event notifications of the local S3 server (versitygw); both empty = off.
# A webhook URL gets a JSON POST per object event; the receiver must already be
# listening when the S3 server starts (versitygw sends it a test event then).
LAKEPIPE_S3_EVENT_WEBHOOK_URL=${LAKEPIPE_S3_EVENT_WEBHOOK_URL:-}
# A topic name sends the events to that topic of the local Kafka instead
# (start.sh creates the topic and starts Kafka first). Webhook and Kafka are
# exclusive in versitygw: set at most one.
LAKEPIPE_S3_EVENT_KAFKA_TOPIC=${LAKEPIPE_S3_EVENT_KAFKA_TOPIC:-}
# Optional versitygw event filter file (JSON map of event type to true/false).
LAKEPIPE_S3_EVENT_FILTER=${LAKEPIPE_S3_EVENT_FILTER:-}
LAKEPIPE_KAFKA_BOOTSTRAP=${LAKEPIPE_KAFKA_BOOTSTRAP:-127.0.0.1:$LAKEPIPE_KAFKA_PORT}
# Partitions of auto-created Kafka topics (Kafka's own default is 1).
LAKEPIPE_KAFKA_PARTITIONS=${LAKEPIPE_KAFKA_PARTITIONS:-1}
LAKEPIPE_TEMPORAL_ADDRESS=${LAKEPIPE_TEMPORAL_ADDRESS:-127.0.0.1:$LAKEPIPE_TEMPORAL_PORT}
# The package's config, with the ports and paths overridden on the command line.
LAKEPIPE_CLICKHOUSE_CONFIG=${LAKEPIPE_CLICKHOUSE_CONFIG:-/etc/clickhouse-server/config.xml}
# Seconds start.sh waits for a service to answer, stop.sh for one to exit after TERM.
LAKEPIPE_START_TIMEOUT=${LAKEPIPE_START_TIMEOUT:-180}
LAKEPIPE_STOP_TIMEOUT=${LAKEPIPE_STOP_TIMEOUT:-60}
# The master key lakepipe seals the catalog's secrets with (docs/security.md,
# "Sealed secrets"): a file start.sh creates on first start. Not set when
# LAKEPIPE_SECRET_KEY or LAKEPIPE_SECRET_PLAINTEXT=true is chosen instead.
if [ -z "${LAKEPIPE_SECRET_KEY:-}" ] && [ "${LAKEPIPE_SECRET_PLAINTEXT:-}" != true ]; then
  LAKEPIPE_SECRET_KEY_FILE=${LAKEPIPE_SECRET_KEY_FILE:-$LAKEPIPE_STATE/secret.key}
  export LAKEPIPE_SECRET_KEY_FILE
fi

# The key Temporal payloads are encrypted with (docs/security.md, "Payload
# encryption"): a file start.sh creates on first start. Not set when
# LAKEPIPE_CODEC_KEY is given instead, or LAKEPIPE_CODEC_PLAINTEXT=true asks for
# clear payloads (then workers warn at start).
if [ -z "${LAKEPIPE_CODEC_KEY:-}" ] && [ "${LAKEPIPE_CODEC_PLAINTEXT:-}" != true ]; then
  LAKEPIPE_CODEC_KEY_FILE=${LAKEPIPE_CODEC_KEY_FILE:-$LAKEPIPE_STATE/codec.key}
  export LAKEPIPE_CODEC_KEY_FILE
fi

export LAKEPIPE_ROOT LAKEPIPE_BIN LAKEPIPE_STATE TEMPORAL_CLI_VERSION VERSITYGW_VERSION GOAWS_VERSION
export LAKEPIPE_TEMPORAL_PORT LAKEPIPE_TEMPORAL_UI_PORT LAKEPIPE_CLICKHOUSE_PORT
export LAKEPIPE_CLICKHOUSE_HTTP_PORT LAKEPIPE_CLICKHOUSE_INTERSERVER_PORT LAKEPIPE_S3_PORT
export LAKEPIPE_CLICKHOUSE2_PORT LAKEPIPE_CLICKHOUSE2_HTTP_PORT LAKEPIPE_CLICKHOUSE2_INTERSERVER_PORT
export LAKEPIPE_CLICKHOUSE_CLUSTER_NAME LAKEPIPE_ZOOKEEPER_PORT
export LAKEPIPE_CLICKHOUSE3_PORT LAKEPIPE_CLICKHOUSE3_HTTP_PORT LAKEPIPE_CLICKHOUSE3_INTERSERVER_PORT
export LAKEPIPE_CLICKHOUSE4_PORT LAKEPIPE_CLICKHOUSE4_HTTP_PORT LAKEPIPE_CLICKHOUSE4_INTERSERVER_PORT
export LAKEPIPE_CLICKHOUSE_REPLICATED_CLUSTER_NAME
export LAKEPIPE_KAFKA_PORT LAKEPIPE_S3_ACCESS_KEY LAKEPIPE_S3_SECRET_KEY
export LAKEPIPE_S3_BUCKET LAKEPIPE_S3_REGION LAKEPIPE_S3_ENDPOINT LAKEPIPE_S3_EVENT_WEBHOOK_URL
export LAKEPIPE_S3_EVENT_KAFKA_TOPIC LAKEPIPE_S3_EVENT_FILTER LAKEPIPE_KAFKA_BOOTSTRAP
export LAKEPIPE_KAFKA_PARTITIONS LAKEPIPE_TEMPORAL_ADDRESS LAKEPIPE_CLICKHOUSE_CONFIG
export LAKEPIPE_START_TIMEOUT LAKEPIPE_STOP_TIMEOUT
