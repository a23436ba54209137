#!/usr/bin/env bash
# Installs, when missing, everything the local stack needs: the Temporal CLI and
# versitygw into .bin/ (built from the Go module proxy), and Debian's ClickHouse.
# Safe to run again: each step checks first.
#   deploy/local/install.sh [--demo]
# --demo installs only what ./task demo uses: not the kfake Kafka server nor
# ZooKeeper with its Java runtime, which only the Kafka and replicated-cluster
# tests need (./task test installs everything).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/env.sh"
demo=false
case ${1:-} in
  --demo) demo=true ;;
  "") ;;
  *) echo "install.sh: unknown argument $1 (known: --demo)" >&2; exit 2 ;;
esac

mkdir -p "$LAKEPIPE_BIN"
if [ ! -x "$LAKEPIPE_BIN/temporal" ]; then
  echo "install: temporal CLI $TEMPORAL_CLI_VERSION (a few minutes the first time)"
  GOBIN="$LAKEPIPE_BIN" go install "github.com/temporalio/cli/cmd/temporal@$TEMPORAL_CLI_VERSION"
fi
if [ ! -x "$LAKEPIPE_BIN/versitygw" ]; then
  echo "install: versitygw $VERSITYGW_VERSION"
  GOBIN="$LAKEPIPE_BIN" go install "github.com/versity/versitygw/cmd/versitygw@$VERSITYGW_VERSION"
fi
# goaws: an SQS server (query protocol) for the event-queue tests.
if ! $demo && [ ! -x "$LAKEPIPE_BIN/goaws" ]; then
  echo "install: goaws $GOAWS_VERSION (SQS)"
  tmp=$(mktemp -d)
  GOBIN="$tmp" go install "github.com/Admiral-Piett/goaws/app/cmd@$GOAWS_VERSION"
  mv "$tmp/cmd" "$LAKEPIPE_BIN/goaws"
  rmdir "$tmp"
fi
if ! $demo && { [ ! -x "$LAKEPIPE_BIN/lakepipe-kafka" ] || [ -n "$(find "$LAKEPIPE_ROOT/deploy/local/kafka" -newer "$LAKEPIPE_BIN/lakepipe-kafka" \( -name '*.go' -o -name 'go.mod' -o -name 'go.sum' \) 2>/dev/null)" ]; }; then
  echo "install: lakepipe-kafka (kfake)"
  (cd "$LAKEPIPE_ROOT/deploy/local/kafka" && go build -o "$LAKEPIPE_BIN/lakepipe-kafka" .)
fi
# start.sh needs the client too (its readiness check), so check for both.
if ! command -v clickhouse-server >/dev/null 2>&1 || ! command -v clickhouse-client >/dev/null 2>&1; then
  echo "install: clickhouse-server (Debian package)"
  sudo_cmd=""
  [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq clickhouse-server clickhouse-client >/dev/null
fi
# ZooKeeper (and a Java runtime) for the replicated ClickHouse cluster.
if ! $demo && { [ ! -r /usr/share/java/zookeeper.jar ] || ! command -v java >/dev/null 2>&1; }; then
  echo "install: zookeeper (Debian package, with a Java runtime)"
  sudo_cmd=""
  [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq zookeeper >/dev/null
fi
