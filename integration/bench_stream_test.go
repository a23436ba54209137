//go:build integration

package integration

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"

	"github.com/lakepipe/lakepipe/internal/chsql"
	"github.com/lakepipe/lakepipe/internal/chstore"
	"github.com/lakepipe/lakepipe/internal/core"
)

// BenchmarkStreamRead measures reading a table stream against a full scan
// of its table, in the same run: a change-tracked table of N rows
// (LAKEPIPE_BENCH_STREAM_ROWS, default 10,000,000) gets 10,000 new rows
// (LAKEPIPE_BENCH_STREAM_CHANGES); then the same aggregate query runs over
// the stream (the 10,000 changes) and over the table, alternately, 11
// times each, after one of each that is not counted. It reports the medians and their
// ratio (target ≤ 1/50).
// Run: ./task bench:stream
func BenchmarkStreamRead(b *testing.B) {
	n := benchInt(b, "LAKEPIPE_BENCH_STREAM_ROWS", 10_000_000)
	changes := benchInt(b, "LAKEPIPE_BENCH_STREAM_CHANGES", 10_000)
	p := newPipeBench(b)
	p.run(`CREATE TABLE big (id BIGINT, payload STRING, amount DOUBLE)`)
	p.run(`ALTER TABLE big SET PROPERTIES ('change_tracking' = 'true')`)
	// The base rows, straight into ClickHouse as one earlier load would
	// leave them (tagged, before the stream).
	start := time.Now()
	if err := p.st.Exec(p.ctx, fmt.Sprintf("INSERT INTO %s (id, payload, amount, %s) SELECT number, concat('payload of row ', toString(number)), number * 0.5, toUInt64(1) FROM system.numbers LIMIT %d",
		chsql.Table(p.schema, "big"), chsql.QuoteIdent(core.CommitColumn), n)); err != nil {
		b.Fatal(err)
	}
	b.Logf("%d base rows in %v", n, time.Since(start).Round(time.Millisecond))
	p.run(`CREATE TABLE STREAM big_stream ON TABLE big`)
	p.run(fmt.Sprintf(`INSERT INTO big SELECT id + %d, payload, amount FROM big WHERE id < %d`, n, changes))
	time.Sleep(2500 * time.Millisecond) // changes become readable 2 s after their commit
	// Measure the steady state, not the background merges of the load.
	waitMerges(p)

	const agg = `SELECT COUNT(*), SUM(amount), MAX(LENGTH(payload)) FROM `
	timeQuery := func(q string) (time.Duration, string) {
		t0 := time.Now()
		res := p.run(q)
		return time.Since(t0), fmt.Sprint(res.Rows)
	}
	var streamT, scanT []time.Duration
	// The server's own timings come from its query log.
	p.ctx = chstore.WithSettings(p.ctx, clickhouse.Settings{"log_queries": 1})
	check := func(what, got string, want int) {
		if !strings.HasPrefix(got, fmt.Sprintf("[[%d ", want)) {
			b.Fatalf("%s: %s, want %d rows", what, got, want)
		}
	}
	// One read of each, not counted: the first read of a stream in a
	// process fills its caches. The query log counts from the next second.
	_, got := timeQuery(agg + "big_stream")
	check("stream", got, changes)
	timeQuery(agg + "big")
	since := time.Now().Truncate(time.Second).Add(time.Second)
	time.Sleep(time.Until(since))
	b.ResetTimer()
	const rounds = 11
	for range rounds {
		d, got := timeQuery(agg + "big_stream")
		check("stream", got, changes)
		streamT = append(streamT, d)
		d, got = timeQuery(agg + "big")
		check("table", got, n+changes)
		scanT = append(scanT, d)
	}
	b.StopTimer()
	med := func(d []time.Duration) time.Duration {
		sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
		return d[len(d)/2]
	}
	ms, mt := med(streamT), med(scanT)
	ratio := ms.Seconds() / mt.Seconds()
	server := func(like string) time.Duration {
		_ = p.st.Exec(p.ctx, "SYSTEM FLUSH LOGS")
		v, err := p.st.Strings(p.ctx, fmt.Sprintf("SELECT quantileExact(0.5)(query_duration_ms) FROM system.query_log WHERE type = 2 AND event_time >= toDateTime(%d) AND query LIKE %s",
			since.Unix(), chsql.QuoteString(like)))
		if err != nil || len(v) != 1 {
			b.Fatalf("query log: %v", err)
		}
		d, _ := time.ParseDuration(v[0] + "ms")
		return d
	}
	ss := server("SELECT count(), sum(`amount`), max(lengthUTF8(`payload`)) FROM (SELECT %")
	st := server("SELECT count(), sum(`amount`), max(lengthUTF8(`payload`)) FROM `" + p.schema + "`.`big`")
	// Reads whose cached values the parts token alone could not vouch
	// for (something was written, or merged, since the last check).
	full, err := p.st.Strings(p.ctx, fmt.Sprintf("SELECT toString(count()) FROM system.query_log WHERE type = 2 AND event_time >= toDateTime(%d) AND query LIKE %s",
		since.Unix(), chsql.QuoteString("%FROM lakepipe.table_commits WHERE %db = "+chsql.QuoteString(p.schema)+"%")))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(benchMS(ms), "stream_ms")
	b.ReportMetric(benchMS(mt), "scan_ms")
	b.ReportMetric(ratio, "ratio")
	b.ReportMetric(benchMS(ss), "server_stream_ms")
	b.ReportMetric(benchMS(st), "server_scan_ms")
	fmt.Printf("\nTable stream read, %d changes on a %d-row table (%s…, median of %d):\n", changes, n, agg, rounds)
	fmt.Printf("  statement through lakepipe: stream %7.1f ms, scan %7.1f ms, ratio 1/%.0f (target ≤ 1/50)\n", benchMS(ms), benchMS(mt), 1/ratio)
	fmt.Printf("  the query in ClickHouse:    stream %7.1f ms, scan %7.1f ms, ratio 1/%.0f\n", benchMS(ss), benchMS(st), st.Seconds()/max(ss.Seconds(), 0.0005))
	fmt.Printf("  stream reads that read the change log again (the rest were checked by the parts token): %s of %d\n", full[0], rounds)
}
