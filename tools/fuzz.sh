#!/usr/bin/env bash
# Runs every fuzz target of the main module for LAKEPIPE_FUZZTIME (default
# 3s) beyond its seed corpus (the f.Add seeds and testdata/fuzz/), one
# target at a time. `./task test` (and so .ci/run) runs it after the tests.
# A crash makes go test write the input under the package's
# testdata/fuzz/<Target>/: commit that file with a regression test, and it
# stays in the corpus every plain `go test` replays.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
fuzztime=${LAKEPIPE_FUZZTIME:-3s}

failed=()
n=0
start=$SECONDS
# Targets live in test files without build tags, so the plain test build
# sees them; the integration package has none.
while IFS= read -r file; do
  dir=$(dirname "$file")
  for target in $(grep -oE '^func (Fuzz[A-Za-z0-9_]+)\(' "$file" | sed -E 's/^func (Fuzz[A-Za-z0-9_]+)\(/\1/'); do
    n=$((n + 1))
    log=$(mktemp)
    if go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" "./$dir" >"$log" 2>&1; then
      echo "fuzz ok   ./$dir $target"
    else
      echo "fuzz FAIL ./$dir $target"
      tail -n 40 "$log"
      failed+=("./$dir $target")
    fi
    rm -f "$log"
  done
done < <(grep -rlE --include='*_test.go' '^func Fuzz[A-Za-z0-9_]+\(' . | grep -v '^./integration/' | sed 's|^\./||' | sort)

echo "fuzz: $n targets, ${fuzztime} each, $((SECONDS - start)) s"
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: ${#failed[@]} failed: ${failed[*]}"
  exit 1
fi
