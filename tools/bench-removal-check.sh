#!/usr/bin/env bash
# Times the check a summary's incremental refresh makes for DELETEs and
# UPDATEs under way (package dynamic, removalsUnderWay) both ways, side by
# side, over change tables retaining 1, 10 and 50 million removed rows
# (1,000-row removals, each row from one of 100,000 commits): before
# 2026-12-05 it scanned the change table's _lp_orig_commit column; now it
# reads lakepipe.removal_origins through its key. Prints ClickHouse's own
# median duration and rows read of 16 runs of each (system.query_log).
# Needs the local stack's ClickHouse (deploy/local/start.sh clickhouse);
# works in a scratch database it drops. Run: ./task bench:removal-check
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
. deploy/local/env.sh
C=(clickhouse-client --port "$LAKEPIPE_CLICKHOUSE_PORT" --log_queries=1)
db=lp_removal_check
"${C[@]}" -q "DROP DATABASE IF EXISTS $db"
"${C[@]}" -q "CREATE DATABASE $db"
trap '"${C[@]}" -q "DROP DATABASE IF EXISTS $db"' EXIT
printf '%-12s %-10s %-28s %s\n' "removed rows" "pairs" "check" "median ms, rows read"
for n in 1000000 10000000 50000000; do
  "${C[@]}" -q "DROP TABLE IF EXISTS $db.changes"
  "${C[@]}" -q "DROP TABLE IF EXISTS $db.origins"
  # The shapes of a change table and of lakepipe.removal_origins.
  "${C[@]}" -q "CREATE TABLE $db.changes (k String, x Int64, _lp_change_type String, _lp_commit UInt64, _lp_orig_commit UInt64) ENGINE = MergeTree ORDER BY _lp_commit"
  "${C[@]}" -q "CREATE TABLE $db.origins (db String, table String, orig_commit UInt64, commit_id UInt64) ENGINE = ReplacingMergeTree ORDER BY (db, table, orig_commit, commit_id)"
  "${C[@]}" -q "INSERT INTO $db.changes SELECT concat('k', toString(number % 20)), number, 'DELETE', intDiv(number, 1000) * 7919 + 1000000, cityHash64(intDiv(number, 100)) % 100000 FROM numbers($n)"
  "${C[@]}" -q "INSERT INTO $db.origins SELECT DISTINCT 'db', 't', _lp_orig_commit, _lp_commit FROM $db.changes"
  "${C[@]}" -q "OPTIMIZE TABLE $db.changes FINAL"
  "${C[@]}" -q "OPTIMIZE TABLE $db.origins FINAL"
  pairs=$("${C[@]}" -q "SELECT count() FROM $db.origins")
  # The window's commits (the last one names the run in the query log)
  # and the removals it knows.
  in="200001, 200002, 200003, $n"
  scan="SELECT count() FROM $db.changes PREWHERE _lp_orig_commit IN ($in) AND _lp_commit NOT IN (5, 6)"
  index="SELECT count() FROM $db.origins WHERE db = 'db' AND table = 't' AND orig_commit IN ($in) AND commit_id NOT IN (5, 6)"
  for i in $(seq 16); do
    "${C[@]}" -q "$scan" >/dev/null
    "${C[@]}" -q "$index" >/dev/null
  done
  "${C[@]}" -q "SYSTEM FLUSH LOGS"
  "${C[@]}" -q "SELECT if(query LIKE '%origins%', 'removal_origins, by its key', 'change table scan (before)') AS how, quantileExact(0.5)(query_duration_ms), max(read_rows)
    FROM system.query_log WHERE type = 2 AND query LIKE 'SELECT count() FROM $db.%' AND query LIKE '%200003, $n)%' GROUP BY how ORDER BY how" |
    while IFS=$'\t' read -r how ms rows; do printf '%-12s %-10s %-28s %s ms, %s rows\n' "$n" "$pairs" "$how" "$ms" "$rows"; done
done
