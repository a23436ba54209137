#!/usr/bin/env bash
# Starts the local stack, or the named services, in the background on 127.0.0.1:
#   deploy/local/start.sh [--record FILE] [zookeeper] [clickhouse] [clickhouse2] [clickhouse3] [clickhouse4] [kafka] [s3] [temporal]
# State, data and logs go under $LAKEPIPE_STATE/<service>/, the pid to
# $LAKEPIPE_STATE/<service>.pid. Returns once every service answers, or fails
# with the end of its log. A service that is already running is left alone, so
# running this again is harmless. --record FILE appends the name of each
# service this run started (not those already running) to FILE, so that a
# caller can later stop exactly those (see with-stack.sh).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/lib.sh"

record=
args=()
while [ $# -gt 0 ]; do
  case $1 in
    --record) [ $# -ge 2 ] || die "--record needs a file"; record=$2; shift 2 ;;
    --record=*) record=${1#--record=}; shift ;;
    -h | --help) sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) die "unknown option $1" ;;
    *) args+=("$1"); shift ;;
  esac
done
parse_services ${args[@]+"${args[@]}"}

need_bin() {
  [ -x "$1" ] || command -v "$1" >/dev/null 2>&1 ||
    die "$2: $1 not found; run deploy/local/install.sh (or ./task install) first"
}

# launch SVC CMD…: runs CMD detached (its own session, so a Ctrl-C meant for
# the shell or for go test does not reach it) with output to SVC's log, and
# writes its pid file. 9>&- keeps the stack lock's descriptor out of the
# service, which would otherwise hold the lock for its whole life.
launch() {
  local svc=$1 log
  shift
  log=$(svc_log "$svc")
  echo "=== $(date -u '+%Y-%m-%dT%H:%M:%SZ') start.sh starting $svc" >>"$log"
  if command -v setsid >/dev/null 2>&1; then
    setsid "$@" </dev/null >>"$log" 2>&1 9>&- &
  else
    nohup "$@" </dev/null >>"$log" 2>&1 9>&- &
  fi
  echo $! >"$(svc_pidfile "$svc")"
}

# clickhouse_config DIR TCP [REPLICA]: a config folder for a private server: the
# package's config and users files, plus config.d/lakepipe.xml defining the
# local clusters — lakepipe_local, two shards (clickhouse, clickhouse2), and
# lakepipe_replicated, one shard of two replicas (clickhouse3, clickhouse4) —
# on every server (a Distributed table can be queried through any of them).
# With REPLICA (r1, r2) the server also gets the local ZooKeeper and the
# macros of its replica. TCP, the server's native port, is written there
# too: ClickHouse tells which replica of a cluster is itself by the
# tcp_port of its configuration files (a --tcp_port on the command line
# does not reach the cluster definitions), and without that every read
# and insert through a Distributed table goes to a replica picked at
# random, so a read right after a write can miss it (replication lags).
clickhouse_config() {
  local etc=$1/etc tcp=$2 src keeper=""
  src=$(dirname "$LAKEPIPE_CLICKHOUSE_CONFIG")
  mkdir -p "$etc/config.d"
  cp "$LAKEPIPE_CLICKHOUSE_CONFIG" "$etc/config.xml"
  [ ! -r "$src/users.xml" ] || cp "$src/users.xml" "$etc/users.xml"
  if [ -n "${3:-}" ]; then
    keeper="<zookeeper><node><host>127.0.0.1</host><port>$LAKEPIPE_ZOOKEEPER_PORT</port></node></zookeeper>
  <macros><shard>01</shard><replica>$3</replica></macros>"
  fi
  cat >"$etc/config.d/lakepipe.xml" <<XML
<yandex>
  <tcp_port>$tcp</tcp_port>
  <remote_servers>
    <$LAKEPIPE_CLICKHOUSE_CLUSTER_NAME>
      <shard><replica><host>127.0.0.1</host><port>$LAKEPIPE_CLICKHOUSE_PORT</port></replica></shard>
      <shard><replica><host>127.0.0.1</host><port>$LAKEPIPE_CLICKHOUSE2_PORT</port></replica></shard>
    </$LAKEPIPE_CLICKHOUSE_CLUSTER_NAME>
    <$LAKEPIPE_CLICKHOUSE_REPLICATED_CLUSTER_NAME>
      <shard>
        <internal_replication>true</internal_replication>
        <replica><host>127.0.0.1</host><port>$LAKEPIPE_CLICKHOUSE3_PORT</port></replica>
        <replica><host>127.0.0.1</host><port>$LAKEPIPE_CLICKHOUSE4_PORT</port></replica>
      </shard>
    </$LAKEPIPE_CLICKHOUSE_REPLICATED_CLUSTER_NAME>
  </remote_servers>
  $keeper
</yandex>
XML
  echo "$etc/config.xml"
}

# launch_clickhouse_server SVC TCP HTTP INTERSERVER [REPLICA]
launch_clickhouse_server() {
  local svc=$1 d conf
  d=$(svc_dir "$svc")
  need_bin clickhouse-server clickhouse
  need_bin clickhouse-client clickhouse
  [ -r "$LAKEPIPE_CLICKHOUSE_CONFIG" ] || die "$svc: config $LAKEPIPE_CLICKHOUSE_CONFIG not readable"
  mkdir -p "$d/data" "$d/tmp" "$d/user_files" "$d/fs"
  conf=$(clickhouse_config "$d" "$2" "${5:-}")
  # The package's config, everything machine-wide overridden: a private server
  # that neither needs nor touches the system service's files and ports.
  # --listen_host=127.0.0.1 replaces the default (::1 and 127.0.0.1).
  launch "$svc" clickhouse-server --config-file="$conf" -- \
    --path="$d/data/" --tmp_path="$d/tmp/" --user_files_path="$d/user_files/" \
    --format_schema_path="$d/fs/" --listen_host=127.0.0.1 \
    --tcp_port="$2" --http_port="$3" --interserver_http_port="$4" \
    --logger.log="$d/server.log" --logger.errorlog="$d/err.log"
}

launch_clickhouse() {
  launch_clickhouse_server clickhouse "$LAKEPIPE_CLICKHOUSE_PORT" "$LAKEPIPE_CLICKHOUSE_HTTP_PORT" "$LAKEPIPE_CLICKHOUSE_INTERSERVER_PORT"
}

launch_clickhouse2() {
  launch_clickhouse_server clickhouse2 "$LAKEPIPE_CLICKHOUSE2_PORT" "$LAKEPIPE_CLICKHOUSE2_HTTP_PORT" "$LAKEPIPE_CLICKHOUSE2_INTERSERVER_PORT"
}

launch_clickhouse3() {
  launch_clickhouse_server clickhouse3 "$LAKEPIPE_CLICKHOUSE3_PORT" "$LAKEPIPE_CLICKHOUSE3_HTTP_PORT" "$LAKEPIPE_CLICKHOUSE3_INTERSERVER_PORT" r1
}

launch_clickhouse4() {
  launch_clickhouse_server clickhouse4 "$LAKEPIPE_CLICKHOUSE4_PORT" "$LAKEPIPE_CLICKHOUSE4_HTTP_PORT" "$LAKEPIPE_CLICKHOUSE4_INTERSERVER_PORT" r2
}

launch_zookeeper() {
  local d
  d=$(svc_dir zookeeper)
  need_bin java zookeeper
  [ -r /usr/share/java/zookeeper.jar ] || die "zookeeper: /usr/share/java/zookeeper.jar not found; run deploy/local/install.sh (or ./task install) first"
  mkdir -p "$d/data"
  cat >"$d/zoo.cfg" <<CFG
tickTime=2000
dataDir=$d/data
clientPort=$LAKEPIPE_ZOOKEEPER_PORT
clientPortAddress=127.0.0.1
admin.enableServer=false
4lw.commands.whitelist=ruok
CFG
  # Debian's jar names its dependencies in its manifest; a small heap is
  # plenty for the few tables of the tests.
  launch zookeeper java -Xmx256m -Dzookeeper.admin.enableServer=false -cp /usr/share/java/zookeeper.jar \
    org.apache.zookeeper.server.ZooKeeperServerMain "$d/zoo.cfg"
}

launch_kafka() {
  local d extra=()
  d=$(svc_dir kafka)
  need_bin "$LAKEPIPE_BIN/lakepipe-kafka" kafka
  mkdir -p "$d/data"
  # versitygw's Kafka event writer does not create its topic: seed it here.
  [ -z "$LAKEPIPE_S3_EVENT_KAFKA_TOPIC" ] || extra+=(--topics "$LAKEPIPE_S3_EVENT_KAFKA_TOPIC")
  launch kafka "$LAKEPIPE_BIN/lakepipe-kafka" --port "$LAKEPIPE_KAFKA_PORT" --data-dir "$d/data" \
    --partitions "$LAKEPIPE_KAFKA_PARTITIONS" ${extra[@]+"${extra[@]}"}
}

launch_s3() {
  local d args=() backend=()
  d=$(svc_dir s3)
  need_bin "$LAKEPIPE_BIN/versitygw" s3
  # In the posix backend every directory under the root is a bucket.
  mkdir -p "$d/root/$LAKEPIPE_S3_BUCKET"
  # --keep-alive: versitygw closes every connection after one request unless
  # told otherwise, where S3 and OSS keep them open; without it each PUT and
  # GET pays a new TCP connection (and leaves a TIME_WAIT socket) on both
  # sides, which skewed bench:smallfiles.
  args=(--port "127.0.0.1:$LAKEPIPE_S3_PORT" --region "$LAKEPIPE_S3_REGION" --health /health --quiet --keep-alive)
  if [ -n "$LAKEPIPE_S3_EVENT_WEBHOOK_URL" ] && [ -n "$LAKEPIPE_S3_EVENT_KAFKA_TOPIC" ]; then
    die "s3: set LAKEPIPE_S3_EVENT_WEBHOOK_URL or LAKEPIPE_S3_EVENT_KAFKA_TOPIC, not both (versitygw sends events to one target)"
  fi
  [ -z "$LAKEPIPE_S3_EVENT_WEBHOOK_URL" ] || args+=(--event-webhook-url "$LAKEPIPE_S3_EVENT_WEBHOOK_URL")
  if [ -n "$LAKEPIPE_S3_EVENT_KAFKA_TOPIC" ]; then
    # versitygw writes a test event to the topic while starting and fails if
    # Kafka or the topic is missing; the topic may be new to a running Kafka.
    svc_answers kafka || die "s3: LAKEPIPE_S3_EVENT_KAFKA_TOPIC is set but Kafka is not running; start it first (start.sh kafka s3)"
    "$LAKEPIPE_BIN/lakepipe-kafka" --create-only --port "$LAKEPIPE_KAFKA_PORT" \
      --partitions "$LAKEPIPE_KAFKA_PARTITIONS" --topics "$LAKEPIPE_S3_EVENT_KAFKA_TOPIC" >>"$(svc_log s3)" 2>&1 ||
      die "s3: could not create Kafka topic $LAKEPIPE_S3_EVENT_KAFKA_TOPIC (see $(svc_log s3))"
    args+=(--event-kafka-url "$LAKEPIPE_KAFKA_BOOTSTRAP" --event-kafka-topic "$LAKEPIPE_S3_EVENT_KAFKA_TOPIC")
  fi
  [ -z "$LAKEPIPE_S3_EVENT_FILTER" ] || args+=(--event-filter "$LAKEPIPE_S3_EVENT_FILTER")
  # Object metadata goes to extended attributes; on a filesystem without user
  # xattrs (some tmpfs, overlay setups) a sidecar folder is used instead, see
  # start_one. Once chosen, the sidecar folder's existence keeps that choice.
  [ ! -d "$d/meta" ] || backend=(--sidecar "$d/meta")
  # Credentials go in through the environment, not the command line, so that
  # they do not show in ps. LOGFILE and WEBHOOK are versitygw's aliases for an
  # access log and an audit-log webhook: a stray one in our environment must
  # not switch those on.
  launch s3 env -u LOGFILE -u WEBHOOK \
    ROOT_ACCESS_KEY_ID="$LAKEPIPE_S3_ACCESS_KEY" ROOT_SECRET_ACCESS_KEY="$LAKEPIPE_S3_SECRET_KEY" \
    "$LAKEPIPE_BIN/versitygw" "${args[@]}" posix ${backend[@]+"${backend[@]}"} "$d/root"
}

launch_temporal() {
  local d
  d=$(svc_dir temporal)
  need_bin "$LAKEPIPE_BIN/temporal" temporal
  # The dev server with a SQLite file, so workflows survive a restart (the
  # fault-injection tests kill and restart it). The default namespace is
  # always created, with lakepipe's search attributes (internal/jobs;
  # docs/operations.md registers them in a production namespace).
  launch temporal "$LAKEPIPE_BIN/temporal" server start-dev --ip 127.0.0.1 \
    --port "$LAKEPIPE_TEMPORAL_PORT" --ui-port "$LAKEPIPE_TEMPORAL_UI_PORT" \
    --db-filename "$d/temporal.db" --log-level warn \
    --search-attribute LakepipeKind=Keyword --search-attribute LakepipeWorkspace=Keyword \
    --search-attribute LakepipeSchema=Keyword --search-attribute LakepipeTable=Keyword \
    --search-attribute LakepipeStatus=Keyword
}

# wait_ready SVC PID: until it answers, it dies, or the timeout passes.
wait_ready() {
  local svc=$1 pid=$2 deadline=$((SECONDS + LAKEPIPE_START_TIMEOUT))
  while :; do
    if svc_answers "$svc"; then return 0; fi
    if ! alive "$pid"; then
      echo "$svc: exited while starting (see $(svc_log "$svc"))" >&2
      return 1
    fi
    if [ "$SECONDS" -ge "$deadline" ]; then
      echo "$svc: not answering after ${LAKEPIPE_START_TIMEOUT}s (LAKEPIPE_START_TIMEOUT)" >&2
      return 1
    fi
    sleep 0.3
  done
}

# fail_start SVC: the start failed; show why and leave nothing behind.
fail_start() {
  local svc=$1 pid
  log_tail "$svc"
  if pid=$(svc_pid "$svc"); then terminate "$svc" "$pid" || true; fi
  rm -f "$(svc_pidfile "$svc")"
  exit 1
}

# elapsed T0: seconds since T0 (an $EPOCHREALTIME value), to one decimal.
elapsed() {
  awk -v a="${1/,/.}" -v b="${EPOCHREALTIME/,/.}" 'BEGIN { printf "%.1f", b - a }'
}

start_one() {
  local svc=$1 pid port t0=$EPOCHREALTIME
  mkdir -p "$(svc_dir "$svc")"
  if pid=$(svc_pid "$svc"); then
    if svc_answers "$svc"; then
      echo "$svc: already running (pid $pid; $(svc_address "$svc"))"
      return 0
    fi
    # Ours but not answering yet: another start is under way or it is busy.
    echo "$svc: running (pid $pid) but not answering yet; waiting"
    wait_ready "$svc" "$pid" || fail_start "$svc"
    echo "$svc: running (pid $pid; $(svc_address "$svc"))"
    return 0
  fi
  rm -f "$(svc_pidfile "$svc")" # stale: its process is gone (or is not ours)
  if port=$(port_taken "$svc"); then
    die "$svc: port $port on 127.0.0.1 is in use by a process this script did not start; stop it or choose other ports (see deploy/local/env.sh)"
  fi

  "launch_$svc"
  pid=$(<"$(svc_pidfile "$svc")")
  if ! wait_ready "$svc" "$pid"; then
    if [ "$svc" = s3 ] && grep -q 'xattr check failed' "$(svc_log s3)" 2>/dev/null && [ ! -d "$(svc_dir s3)/meta" ]; then
      echo "s3: no extended attributes on $(svc_dir s3); using a metadata sidecar folder instead"
      mkdir -p "$(svc_dir s3)/meta"
      launch_s3
      pid=$(<"$(svc_pidfile s3)")
      wait_ready s3 "$pid" || fail_start s3
    else
      fail_start "$svc"
    fi
  fi
  [ -z "$record" ] || echo "$svc" >>"$record"
  echo "$svc: started (pid $pid) in $(elapsed "$t0")s; $(svc_address "$svc")"
}

# ensure_maintenance_schedule creates lakepipe's maintenance Schedule on the
# default task queue when it is missing, as `lakepipe worker` does
# (orchestrator.EnsureMaintenanceSchedule): every hour a MaintenanceWorkflow
# run, skipped while one still runs; a worker on queue lakepipe runs it.
ensure_maintenance_schedule() {
  local t=("$LAKEPIPE_BIN/temporal" --address "127.0.0.1:$LAKEPIPE_TEMPORAL_PORT")
  if "${t[@]}" schedule describe --schedule-id lakepipe-maintenance >/dev/null 2>&1; then
    return 0
  fi
  if "${t[@]}" schedule create --schedule-id lakepipe-maintenance --workflow-id lakepipe-maintenance \
    --type MaintenanceWorkflow --task-queue lakepipe --interval 1h --overlap-policy Skip >/dev/null; then
    echo "temporal: maintenance schedule lakepipe-maintenance created (every hour)"
  else
    echo "temporal: could not create the maintenance schedule; lakepipe worker creates it at its start" >&2
  fi
}

lock_stack
# The master key of the catalog's sealed secrets (LAKEPIPE_SECRET_KEY_FILE, see
# env.sh): 32 random bytes, base64, made on first start, readable by its owner
# only, kept with the stack's data (stop.sh leaves it; losing it makes the
# secrets stored with it unreadable).
if [ -n "${LAKEPIPE_SECRET_KEY_FILE:-}" ] && [ ! -s "$LAKEPIPE_SECRET_KEY_FILE" ]; then
  mkdir -p "$(dirname "$LAKEPIPE_SECRET_KEY_FILE")"
  (umask 077 && head -c 32 /dev/urandom | base64 >"$LAKEPIPE_SECRET_KEY_FILE.tmp" &&
    mv "$LAKEPIPE_SECRET_KEY_FILE.tmp" "$LAKEPIPE_SECRET_KEY_FILE")
  echo "secret key: created $LAKEPIPE_SECRET_KEY_FILE"
fi
# The key Temporal payloads are encrypted with (LAKEPIPE_CODEC_KEY_FILE, see
# env.sh), in the keyid:base64key form of LAKEPIPE_CODEC_KEY; made once, kept
# like the secret key: histories written with it need it to be read.
if [ -n "${LAKEPIPE_CODEC_KEY_FILE:-}" ] && [ ! -s "$LAKEPIPE_CODEC_KEY_FILE" ]; then
  mkdir -p "$(dirname "$LAKEPIPE_CODEC_KEY_FILE")"
  (umask 077 && printf 'local%s:%s\n' "$(date +%Y%m%d)" "$(head -c 32 /dev/urandom | base64)" >"$LAKEPIPE_CODEC_KEY_FILE.tmp" &&
    mv "$LAKEPIPE_CODEC_KEY_FILE.tmp" "$LAKEPIPE_CODEC_KEY_FILE")
  echo "payload key: created $LAKEPIPE_CODEC_KEY_FILE"
fi
for svc in "${SERVICES[@]}"; do
  start_one "$svc"
  if [ "$svc" = temporal ]; then
    ensure_maintenance_schedule
  fi
done
