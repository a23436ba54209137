#!/usr/bin/env bash
# Times how a FULL refresh reads only the committed rows of its source,
# both ways, side by side: a summary (COUNT, SUM by category) of a
# 10,000,000-row source whose rows belong to 1,000, 100,000 or 1,000,000
# loads. Before 2026-12-06 the read named every commit registered up to
# the refresh's version (_lp_commit IN a set of every load the table ever
# had); now it names those that are not committed: the commits registered
# after it and the loads under way (lakepipe.open_commits; package
# changes, open.go). Prints ClickHouse's own median duration of 8 runs of
# each (system.query_log). Needs the local stack's ClickHouse
# (deploy/local/start.sh clickhouse); works in a scratch database it
# drops. Run: ./task bench:committed-rows
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
. deploy/local/env.sh
C=(clickhouse-client --port "$LAKEPIPE_CLICKHOUSE_PORT" --log_queries=1)
db=lp_committed_rows
rows=10000000
"${C[@]}" -q "DROP DATABASE IF EXISTS $db"
"${C[@]}" -q "CREATE DATABASE $db"
trap '"${C[@]}" -q "DROP DATABASE IF EXISTS $db"' EXIT
# The shapes of lakepipe.table_commits and lakepipe.open_commits.
"${C[@]}" -q "CREATE TABLE $db.commits (db String, table String, version UInt64, commit_id UInt64, kind String, rows UInt64, committed_at DateTime) ENGINE = MergeTree ORDER BY (db, table, version)"
"${C[@]}" -q "CREATE TABLE $db.open (db String, table String, commit_id UInt64, sign Int8) ENGINE = CollapsingMergeTree(sign) ORDER BY (db, table, commit_id)"
hi=5000000000
printf '%-10s %-34s %s\n' "loads" "committed rows read by" "median ms"
for loads in 1000 100000 1000000; do
  "${C[@]}" -q "DROP TABLE IF EXISTS $db.src"
  "${C[@]}" -q "TRUNCATE TABLE $db.commits"
  "${C[@]}" -q "TRUNCATE TABLE $db.open"
  "${C[@]}" -q "CREATE TABLE $db.src (category String, amount Int64, _lp_commit UInt64) ENGINE = MergeTree ORDER BY _lp_commit"
  # Each load's rows under its commit id (hashes, as lakepipe's are); the
  # last 3 loads are under way (opened, not registered), 2 more were
  # registered after the refresh's version.
  "${C[@]}" -q "INSERT INTO $db.src SELECT concat('c', toString(number % 20)), number % 1000, cityHash64(number % $loads) FROM numbers($rows)"
  "${C[@]}" -q "INSERT INTO $db.commits SELECT 'db', 't', if(number < $((loads - 5)), number + 1, $hi + number), cityHash64(number), 'INSERT', 10, now() FROM numbers($((loads - 3)))"
  "${C[@]}" -q "INSERT INTO $db.open SELECT 'db', 't', cityHash64(number), 1 FROM numbers($((loads - 3)), 3)"
  "${C[@]}" -q "OPTIMIZE TABLE $db.src FINAL"
  t="db = 'db' AND table = 't'"
  before="SELECT category, count(), sum(amount) FROM $db.src PREWHERE _lp_commit IN (SELECT commit_id FROM $db.commits WHERE $t AND version <= $hi) GROUP BY category FORMAT Null"
  m="bitXor(_lp_commit, 0)"
  now="SELECT category, count(), sum(amount) FROM $db.src PREWHERE $m NOT IN (SELECT commit_id FROM $db.commits WHERE $t AND version > $hi UNION ALL SELECT commit_id FROM $db.open WHERE $t AND commit_id NOT IN (SELECT commit_id FROM $db.commits WHERE $t AND version <= $hi AND commit_id IN (SELECT commit_id FROM $db.open WHERE $t)) GROUP BY commit_id HAVING sum(sign) > 0) GROUP BY category FORMAT Null"
  none="SELECT category, count(), sum(amount) FROM $db.src GROUP BY category FORMAT Null"
  # Each a distinct text per size (a leading comment; ClickHouse keeps
  # nothing after FORMAT), so the log tells them apart.
  for i in $(seq 8); do
    "${C[@]}" -q "/* before $loads */ $before" >/dev/null
    "${C[@]}" -q "/* now $loads */ $now" >/dev/null
    "${C[@]}" -q "/* none $loads */ $none" >/dev/null
  done
  counts=$("${C[@]}" -q "SELECT (SELECT count() FROM $db.src PREWHERE _lp_commit IN (SELECT commit_id FROM $db.commits WHERE $t AND version <= $hi)) = (SELECT count() FROM $db.src PREWHERE $m NOT IN (SELECT commit_id FROM $db.commits WHERE $t AND version > $hi) AND $m NOT IN (SELECT commit_id FROM $db.open WHERE $t GROUP BY commit_id HAVING sum(sign) > 0))")
  [ "$counts" = 1 ] || { echo "the two reads disagree at $loads loads" >&2; exit 1; }
  "${C[@]}" -q "SYSTEM FLUSH LOGS"
  "${C[@]}" -q "SELECT multiIf(query LIKE '/* before %', 'every registered commit (before)', query LIKE '/* now %', 'open and later commits (now)', 'no filter (a floor)') AS how, quantileExact(0.5)(query_duration_ms)
    FROM system.query_log WHERE type = 2 AND query LIKE '/* % $loads */ SELECT category%' GROUP BY how ORDER BY how" |
    while IFS=$'\t' read -r how ms; do printf '%-10s %-34s %s\n' "$loads" "$how" "$ms"; done
done
