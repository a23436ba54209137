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
# Each target also runs for fuzztime from a test binary built without
# coverage instrumentation: random mutation at thousands of inputs a second
# where the coverage-guided engine may run a few hundred. That pass found
# what the guided one had missed in hours (an Arrow field node of 2^41
# values, a Parquet column chunk longer than its row group, 2026-12-07).
bins=$(mktemp -d)
trap 'rm -rf "$bins"' EXIT

failed=()
n=0
start=$SECONDS

# fuzz_pass LABEL DIR TARGET CMD...: runs CMD (one fuzzing run of TARGET,
# in DIR) and reports it. Go 1.26's fuzz coordinator can fail a target
# with a bare "context deadline exceeded" when -fuzztime ends while a
# worker is mid-call (go.dev/issue/75804, fixed in Go 1.27): no input is
# at fault and none is written. Such a run is tried once more; a failure
# that writes an input, or any other failure, fails the suite.
fuzz_pass() {
  local label=$1 dir=$2 target=$3 log before after try
  shift 3
  log=$(mktemp)
  for try in 1 2; do
    before=$(find "$dir/testdata/fuzz/$target" -type f 2>/dev/null | wc -l || true)
    if (cd "$dir" && "$@") >"$log" 2>&1; then
      echo "fuzz ok   ./$dir $target$label"
      break
    fi
    after=$(find "$dir/testdata/fuzz/$target" -type f 2>/dev/null | wc -l || true)
    if [ "$after" -eq "$before" ] && grep -q '^    context deadline exceeded$' "$log" \
      && ! grep -qE '^(panic:|    --- FAIL|.*Failing input written)' "$log"; then
      if [ "$try" -eq 1 ]; then
        echo "fuzz race ./$dir $target$label: the coordinator's deadline race (go.dev/issue/75804), no input at fault; trying again"
        continue
      fi
      echo "fuzz ok   ./$dir $target$label (the deadline race twice, no input at fault)"
      break
    fi
    echo "fuzz FAIL ./$dir $target$label"
    tail -n 40 "$log"
    failed+=("./$dir $target$label")
    rm -f "$log"
    return 1
  done
  rm -f "$log"
}

# Targets live in test files without build tags, so the plain test build
# sees them; the integration package has none.
while IFS= read -r file; do
  dir=$(dirname "$file")
  for target in $(grep -oE '^func (Fuzz[A-Za-z0-9_]+)\(' "$file" | sed -E 's/^func (Fuzz[A-Za-z0-9_]+)\(/\1/'); do
    n=$((n + 1))
    fuzz_pass "" "$dir" "$target" go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" . || continue
    bin="$bins/$(echo "$dir" | tr / _).test"
    [ -x "$bin" ] || go test -c -o "$bin" "./$dir"
    fuzz_pass " (random)" "$dir" "$target" "$bin" -test.run '^$' -test.fuzz "^${target}\$" -test.fuzztime "$fuzztime" -test.fuzzcachedir "$bins/cache" || true
  done
done < <(grep -rlE --include='*_test.go' '^func Fuzz[A-Za-z0-9_]+\(' . | grep -v '^./integration/' | sed 's|^\./||' | sort)

echo "fuzz: $n targets, ${fuzztime} each guided and ${fuzztime} random, $((SECONDS - start)) s"
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: ${#failed[@]} failed: ${failed[*]}"
  exit 1
fi
