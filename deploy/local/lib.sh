# shellcheck shell=bash disable=SC2016,SC2154
# Shared by start.sh, stop.sh and status.sh (sourced, not run): the services of
# the local stack, where their state lives, and how to tell whether one is ours
# and answering. Expects $here (this folder) to be set by the caller.
. "$here/env.sh"

# Start order; stop goes the other way. Kafka comes before S3 because
# versitygw's Kafka event sender connects to it while starting.
ALL_SERVICES=(zookeeper clickhouse clickhouse2 clickhouse3 clickhouse4 kafka s3 temporal)

die() { echo "$*" >&2; exit 1; }

# parse_services NAME… sets SERVICES to the named services in start order, or
# to all of them when no name is given; unknown names are an error.
parse_services() {
  local s a ok
  for a in "$@"; do
    ok=
    for s in "${ALL_SERVICES[@]}"; do
      if [ "$a" = "$s" ]; then ok=1; fi
    done
    [ -n "$ok" ] || die "unknown service '$a' (known: ${ALL_SERVICES[*]})"
  done
  SERVICES=()
  for s in "${ALL_SERVICES[@]}"; do
    if [ $# -eq 0 ]; then SERVICES+=("$s"); continue; fi
    for a in "$@"; do
      if [ "$a" = "$s" ]; then SERVICES+=("$s"); break; fi
    done
  done
}

svc_dir() { echo "$LAKEPIPE_STATE/$1"; }
svc_pidfile() { echo "$LAKEPIPE_STATE/$1.pid"; }

# svc_log SVC: the file its stdout/stderr go to.
svc_log() { echo "$LAKEPIPE_STATE/$1/$1.log"; }

# svc_ports SVC: every TCP port it listens on (the first is the main one).
svc_ports() {
  case $1 in
    clickhouse) echo "$LAKEPIPE_CLICKHOUSE_PORT $LAKEPIPE_CLICKHOUSE_HTTP_PORT $LAKEPIPE_CLICKHOUSE_INTERSERVER_PORT" ;;
    clickhouse2) echo "$LAKEPIPE_CLICKHOUSE2_PORT $LAKEPIPE_CLICKHOUSE2_HTTP_PORT $LAKEPIPE_CLICKHOUSE2_INTERSERVER_PORT" ;;
    clickhouse3) echo "$LAKEPIPE_CLICKHOUSE3_PORT $LAKEPIPE_CLICKHOUSE3_HTTP_PORT $LAKEPIPE_CLICKHOUSE3_INTERSERVER_PORT" ;;
    clickhouse4) echo "$LAKEPIPE_CLICKHOUSE4_PORT $LAKEPIPE_CLICKHOUSE4_HTTP_PORT $LAKEPIPE_CLICKHOUSE4_INTERSERVER_PORT" ;;
    zookeeper) echo "$LAKEPIPE_ZOOKEEPER_PORT" ;;
    kafka) echo "$LAKEPIPE_KAFKA_PORT" ;;
    s3) echo "$LAKEPIPE_S3_PORT" ;;
    temporal) echo "$LAKEPIPE_TEMPORAL_PORT $LAKEPIPE_TEMPORAL_UI_PORT" ;;
  esac
}

# svc_address SVC: one line telling a user how to reach it (never a secret).
svc_address() {
  case $1 in
    clickhouse) echo "native 127.0.0.1:$LAKEPIPE_CLICKHOUSE_PORT, http 127.0.0.1:$LAKEPIPE_CLICKHOUSE_HTTP_PORT" ;;
    clickhouse2) echo "native 127.0.0.1:$LAKEPIPE_CLICKHOUSE2_PORT (shard 2 of cluster $LAKEPIPE_CLICKHOUSE_CLUSTER_NAME)" ;;
    clickhouse3) echo "native 127.0.0.1:$LAKEPIPE_CLICKHOUSE3_PORT (replica 1 of cluster $LAKEPIPE_CLICKHOUSE_REPLICATED_CLUSTER_NAME)" ;;
    clickhouse4) echo "native 127.0.0.1:$LAKEPIPE_CLICKHOUSE4_PORT (replica 2 of cluster $LAKEPIPE_CLICKHOUSE_REPLICATED_CLUSTER_NAME)" ;;
    zookeeper) echo "127.0.0.1:$LAKEPIPE_ZOOKEEPER_PORT" ;;
    kafka) echo "bootstrap $LAKEPIPE_KAFKA_BOOTSTRAP" ;;
    s3) echo "endpoint $LAKEPIPE_S3_ENDPOINT, bucket $LAKEPIPE_S3_BUCKET, access key $LAKEPIPE_S3_ACCESS_KEY" ;;
    temporal) echo "grpc $LAKEPIPE_TEMPORAL_ADDRESS, web UI http://127.0.0.1:$LAKEPIPE_TEMPORAL_UI_PORT" ;;
  esac
}

# alive PID: the process exists and is not a zombie (in containers whose init
# does not reap, an ended process can linger as a zombie that kill -0 accepts).
alive() {
  kill -0 "$1" 2>/dev/null || return 1
  if [ -r "/proc/$1/stat" ]; then
    local st
    st=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1) || true
    [ "$st" != Z ] || return 1
  fi
  return 0
}

# cmdline PID: the process's command line, for telling our processes apart.
cmdline() {
  if [ -r "/proc/$1/cmdline" ]; then
    tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null
  else
    ps -o args= -p "$1" 2>/dev/null
  fi
}

# svc_pid SVC prints the pid from SVC's pid file if that process is alive and
# is ours: its command line names SVC's state folder. A pid file whose number
# the kernel has since given to another process is thus never acted on.
svc_pid() {
  local f pid
  f=$(svc_pidfile "$1")
  [ -f "$f" ] || return 1
  read -r pid <"$f" 2>/dev/null || return 1
  [[ $pid =~ ^[0-9]+$ ]] || return 1
  alive "$pid" || return 1
  case "$(cmdline "$pid")" in
    *"$(svc_dir "$1")/"*) echo "$pid" ;;
    *) return 1 ;;
  esac
}

# tcp_answers PORT: something accepts TCP connections on 127.0.0.1:PORT.
tcp_answers() {
  timeout 3 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$0"' "$1" 2>/dev/null
}

# http_answers URL: an HTTP server answers (any status).
http_answers() {
  if command -v curl >/dev/null 2>&1; then
    curl -s -o /dev/null --max-time 3 "$1"
  else
    # No curl on minimal images: speak just enough HTTP/1.0 over bash's /dev/tcp.
    local hostport=${1#http://} path
    path=/${hostport#*/}; hostport=${hostport%%/*}
    timeout 3 bash -c 'exec 3<>"/dev/tcp/${0%:*}/${0##*:}" &&
      printf "GET %s HTTP/1.0\r\nHost: %s\r\n\r\n" "$1" "$0" >&3 &&
      head -c 12 <&3 | grep -q "^HTTP/"' "$hostport" "$path" 2>/dev/null
  fi
}

# svc_answers SVC: the service does its job, not just holds its port.
svc_answers() {
  case $1 in
    clickhouse)
      clickhouse-client --host 127.0.0.1 --port "$LAKEPIPE_CLICKHOUSE_PORT" -q 'SELECT 1' >/dev/null 2>&1 ;;
    clickhouse2 | clickhouse3 | clickhouse4)
      local port
      port=$(svc_ports "$1")
      clickhouse-client --host 127.0.0.1 --port "${port%% *}" -q 'SELECT 1' >/dev/null 2>&1 ;;
    zookeeper)
      # ZooKeeper's four-letter "ruok" (whitelisted in its zoo.cfg).
      timeout 3 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$0" && printf ruok >&3 && head -c 4 <&3 | grep -q imok' "$LAKEPIPE_ZOOKEEPER_PORT" 2>/dev/null ;;
    kafka)
      tcp_answers "$LAKEPIPE_KAFKA_PORT" ;;
    s3)
      # /health is the unauthenticated endpoint start.sh enables with --health.
      http_answers "http://127.0.0.1:$LAKEPIPE_S3_PORT/health" ;;
    temporal)
      # Serving frontend and a registered default namespace: what workers and
      # the starter need before their first call.
      local t=(--address "$LAKEPIPE_TEMPORAL_ADDRESS" --command-timeout 5s)
      "$LAKEPIPE_BIN/temporal" operator cluster health "${t[@]}" >/dev/null 2>&1 &&
        "$LAKEPIPE_BIN/temporal" operator namespace describe --namespace default "${t[@]}" >/dev/null 2>&1 ;;
  esac
}

# port_taken SVC prints the first of SVC's ports that something already listens on.
port_taken() {
  local p
  for p in $(svc_ports "$1"); do
    if tcp_answers "$p"; then echo "$p"; return 0; fi
  done
  return 1
}

# log_tail SVC: the end of the service's logs, for a failed start.
log_tail() {
  local d f
  d=$(svc_dir "$1")
  f=$(svc_log "$1")
  if [ -s "$f" ]; then
    echo "--- end of $f" >&2
    # Only this start's lines: the log is appended to across starts.
    awk '/^=== .* start\.sh starting /{n=0} {l[n++]=$0} END{for(i=(n>40?n-40:0);i<n;i++)print l[i]}' "$f" >&2
  fi
  f=$d/err.log # ClickHouse's error log
  if [ -s "$f" ]; then
    echo "--- end of $f" >&2
    tail -n 20 "$f" >&2
  fi
}

# terminate SVC PID: TERM, wait up to LAKEPIPE_STOP_TIMEOUT s, then KILL.
terminate() {
  local svc=$1 pid=$2 i
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < LAKEPIPE_STOP_TIMEOUT * 5; i++)); do
    alive "$pid" || return 0
    sleep 0.2
  done
  echo "$svc: pid $pid still running ${LAKEPIPE_STOP_TIMEOUT}s after TERM, sending KILL" >&2
  kill -KILL "$pid" 2>/dev/null || true
  for ((i = 0; i < 50; i++)); do
    alive "$pid" || return 0
    sleep 0.2
  done
  echo "$svc: pid $pid survived KILL" >&2
  return 1
}

# lock_stack: one start/stop at a time (parallel test runs, a start racing a
# stop), for as long as the calling script runs.
lock_stack() {
  mkdir -p "$LAKEPIPE_STATE"
  command -v flock >/dev/null 2>&1 || return 0
  exec 9>"$LAKEPIPE_STATE/.lock"
  if ! flock -w 600 9; then die "another start.sh/stop.sh holds $LAKEPIPE_STATE/.lock"; fi
}
