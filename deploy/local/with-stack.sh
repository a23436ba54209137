#!/usr/bin/env bash
# Runs a command with the local stack up, then stops the services this run
# started (a stack that was already up stays up for whoever started it), and
# exits with the command's exit code:
#   deploy/local/with-stack.sh go test -tags integration ./...
# The command sees the stack's settings (LAKEPIPE_* from env.sh) in its
# environment.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/env.sh"

[ $# -gt 0 ] || { echo "usage: $0 command [args…]" >&2; exit 2; }

record=$(mktemp "${TMPDIR:-/tmp}/lakepipe-started.XXXXXX")
# shellcheck disable=SC2317  # run by the EXIT trap
cleanup() {
  local started=()
  if [ -s "$record" ]; then
    mapfile -t started <"$record"
    echo "with-stack: stopping what this run started: ${started[*]}"
    "$here/stop.sh" "${started[@]}" || echo "with-stack: stop.sh failed" >&2
  fi
  rm -f "$record"
}
trap cleanup EXIT
# Turn signals into a normal exit so that the EXIT trap stops the stack.
trap 'exit 130' INT
trap 'exit 143' TERM

"$here/start.sh" --record "$record"
rc=0
"$@" || rc=$?
exit $rc
