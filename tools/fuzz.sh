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
# Targets live in test files without build tags, so the plain test build
# sees them; the integration package has none.
while IFS= read -r file; do
  dir=$(dirname "$file")
  for target in $(grep -oE '^func (Fuzz[A-Za-z0-9_]+)\(' "$file" | sed -E 's/^func (Fuzz[A-Za-z0-9_]+)\(/\1/'); do
    n=$((n + 1))
    log=$(mktemp)
    # Go 1.26's fuzz coordinator can fail a target with a bare "context
    # deadline exceeded" when -fuzztime ends while a worker is mid-call
    # (go.dev/issue/75804, fixed in Go 1.27): no input is at fault and none
    # is written. Such a run is tried once more; a failure that writes an
    # input, or any other failure, fails the suite.
    for try in 1 2; do
      before=$(find "$dir/testdata/fuzz/$target" -type f 2>/dev/null | wc -l || true)
      if go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" "./$dir" >"$log" 2>&1; then
        echo "fuzz ok   ./$dir $target"
        break
      fi
      after=$(find "$dir/testdata/fuzz/$target" -type f 2>/dev/null | wc -l || true)
      if [ "$after" -eq "$before" ] && grep -q '^    context deadline exceeded$' "$log" \
        && ! grep -qE '^(panic:|    --- FAIL|.*Failing input written)' "$log"; then
        if [ "$try" -eq 1 ]; then
          echo "fuzz race ./$dir $target: the coordinator's deadline race (go.dev/issue/75804), no input at fault; trying again"
          continue
        fi
        echo "fuzz ok   ./$dir $target (the deadline race twice, no input at fault)"
        break
      fi
      echo "fuzz FAIL ./$dir $target"
      tail -n 40 "$log"
      failed+=("./$dir $target")
      break
    done
    if [ "${#failed[@]}" -eq 0 ] || [ "${failed[-1]}" != "./$dir $target" ]; then
      bin="$bins/$(echo "$dir" | tr / _).test"
      [ -x "$bin" ] || go test -c -o "$bin" "./$dir"
      before=$(find "$dir/testdata/fuzz/$target" -type f 2>/dev/null | wc -l || true)
      if (cd "$dir" && "$bin" -test.run '^$' -test.fuzz "^${target}\$" -test.fuzztime "$fuzztime" -test.fuzzcachedir "$bins/cache") >"$log" 2>&1; then
        echo "fuzz ok   ./$dir $target (random)"
      else
        after=$(find "$dir/testdata/fuzz/$target" -type f 2>/dev/null | wc -l || true)
        if [ "$after" -eq "$before" ] && grep -q '^    context deadline exceeded$' "$log" \
          && ! grep -qE '^(panic:|    --- FAIL|.*Failing input written)' "$log"; then
          echo "fuzz ok   ./$dir $target (random; the deadline race, no input at fault)"
        else
          echo "fuzz FAIL ./$dir $target (random)"
          tail -n 40 "$log"
          failed+=("./$dir $target (random)")
        fi
      fi
    fi
    rm -f "$log"
  done
done < <(grep -rlE --include='*_test.go' '^func Fuzz[A-Za-z0-9_]+\(' . | grep -v '^./integration/' | sed 's|^\./||' | sort)

echo "fuzz: $n targets, ${fuzztime} each guided and ${fuzztime} random, $((SECONDS - start)) s"
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: ${#failed[@]} failed: ${failed[*]}"
  exit 1
fi
