#!/usr/bin/env bash
# Stops the local stack, or the named services:
#   deploy/local/stop.sh [zookeeper] [clickhouse] [clickhouse2] [clickhouse3] [clickhouse4] [kafka] [s3] [temporal]
# Only processes whose pid files start.sh wrote are signalled (TERM, then KILL
# after $LAKEPIPE_STOP_TIMEOUT s), and only if their command line still names
# the service's state folder: other servers on this machine, say a ClickHouse
# someone started by hand, are never touched. Data under $LAKEPIPE_STATE stays;
# remove that folder for a clean slate.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/lib.sh"

case ${1:-} in -h | --help) sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;; esac
parse_services "$@"
lock_stack

rc=0
# Reverse start order: clients of a service go before it.
for ((i = ${#SERVICES[@]} - 1; i >= 0; i--)); do
  svc=${SERVICES[i]}
  f=$(svc_pidfile "$svc")
  if [ ! -f "$f" ]; then
    echo "$svc: not running"
    continue
  fi
  if ! pid=$(svc_pid "$svc"); then
    echo "$svc: not running (removed stale pid file)"
    rm -f "$f"
    continue
  fi
  t0=$SECONDS
  if terminate "$svc" "$pid"; then
    rm -f "$f"
    echo "$svc: stopped (pid $pid) in $((SECONDS - t0))s"
  else
    rc=1
  fi
done
exit $rc
