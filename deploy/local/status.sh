#!/usr/bin/env bash
# Shows the state of the local stack, or of the named services:
#   deploy/local/status.sh [zookeeper] [clickhouse] [clickhouse2] [clickhouse3] [clickhouse4] [kafka] [s3] [temporal]
# Exits 0 when every one of them runs (started by start.sh) and answers, 3
# otherwise (the LSB code for "not running"), so scripts can test it.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/lib.sh"

case ${1:-} in -h | --help) sed -n '2,5p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;; esac
parse_services "$@"

rc=0
for svc in "${SERVICES[@]}"; do
  if pid=$(svc_pid "$svc"); then
    if svc_answers "$svc"; then
      printf '%-10s running      pid %-7s %s\n' "$svc" "$pid" "$(svc_address "$svc")"
    else
      printf '%-10s not answering pid %-7s log: %s\n' "$svc" "$pid" "$(svc_log "$svc")"
      rc=3
    fi
  elif port=$(port_taken "$svc"); then
    printf '%-10s stopped      (port %s is used by a process start.sh did not start)\n' "$svc" "$port"
    rc=3
  else
    printf '%-10s stopped\n' "$svc"
    rc=3
  fi
done
echo "state: $LAKEPIPE_STATE"
exit $rc
