//go:build integration

package integration

import (
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/lakepipe/lakepipe/internal/chsql"
	"github.com/lakepipe/lakepipe/internal/engine"
)

// BenchmarkDynamicRefresh measures an INCREMENTAL refresh of a GROUP BY
// summary against a FULL refresh of the same dynamic table, in the same
// run: the source holds N rows (LAKEPIPE_BENCH_DT_ROWS, default
// 10,000,000) in 20 categories; each round inserts 10,000 new rows
// (LAKEPIPE_BENCH_DT_CHANGES), refreshes incrementally, then refreshes
// FULL; 5 rounds, medians (target: incremental ≤ 1/50 of full). Each
// round waits for ClickHouse's background merges of the new rows first.
// Run: ./task bench:dynamic
func BenchmarkDynamicRefresh(b *testing.B) {
	n := benchInt(b, "LAKEPIPE_BENCH_DT_ROWS", 10_000_000)
	changes := benchInt(b, "LAKEPIPE_BENCH_DT_CHANGES", 10_000)
	p := newPipeBench(b)
	p.worker()
	p.run(`CREATE TABLE src (id BIGINT, category STRING, amount DECIMAL(10,2), dt STRING)`)
	start := time.Now()
	if err := p.st.Exec(p.ctx, fmt.Sprintf("INSERT INTO %s (id, category, amount, dt, %s) SELECT number, concat('category ', toString(number %% 20)), toDecimal64(number %% 1000, 2) / 10, concat('2026-06-', toString(10 + number %% 20)), toUInt64(1) FROM system.numbers LIMIT %d",
		chsql.Table(p.schema, "src"), chsql.QuoteIdent(engine.CommitColumn), n)); err != nil {
		b.Fatal(err)
	}
	b.Logf("%d source rows in %v", n, time.Since(start).Round(time.Millisecond))
	p.run(`ALTER TABLE src SET PROPERTIES ('change_tracking' = 'true')`)
	p.run(`CREATE DYNAMIC TABLE summary REFRESH INTERVAL 1 HOUR AS SELECT category, COUNT(*) AS cnt, SUM(amount) AS total, AVG(amount) AS avg_amount, MIN(dt) AS first_dt, MAX(dt) AS last_dt FROM src GROUP BY category`)
	eng := p.eng.WithSchema(p.schema)
	var inc, full []time.Duration
	b.ResetTimer()
	for round := 0; round < 5; round++ {
		p.run(fmt.Sprintf(`INSERT INTO src SELECT id + %d, category, amount, dt FROM src WHERE id < %d`, n+round*changes, changes))
		time.Sleep(2100 * time.Millisecond) // changes are readable 2 s after their commit
		waitMerges(p)                       // the steady state, as in bench:stream
		t0 := time.Now()
		res, err := eng.RefreshDynamicTable(p.ctx, "summary", "BENCH")
		if err != nil || res.State != "SUCCEED" || res.Mode != "INCREMENTAL" {
			b.Fatalf("incremental refresh: %+v %v", res, err)
		}
		inc = append(inc, time.Since(t0))
		want := fmt.Sprint(n + (round+1)*changes)
		if got := p.run(`SELECT SUM(cnt) FROM summary`).Rows[0][0]; fmt.Sprint(got) != want {
			b.Fatalf("summary counts %v rows after the incremental refresh, want %s", got, want)
		}
		t0 = time.Now()
		res, err = eng.RefreshDynamicTableFull(p.ctx, "summary", "BENCH")
		if err != nil || res.State != "SUCCEED" || res.Mode != "FULL" {
			b.Fatalf("full refresh: %+v %v", res, err)
		}
		full = append(full, time.Since(t0))
	}
	b.StopTimer()
	med := func(d []time.Duration) time.Duration {
		sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
		return d[len(d)/2]
	}
	mi, mf := med(inc), med(full)
	b.ReportMetric(benchMS(mi), "incremental_ms")
	b.ReportMetric(benchMS(mf), "full_ms")
	b.ReportMetric(mi.Seconds()/mf.Seconds(), "ratio")
	fmt.Printf("\nDynamic table refresh, GROUP BY summary (20 groups, COUNT/SUM/AVG/MIN/MAX) over %d rows, %d new rows per refresh, median of 5:\n", n, changes)
	fmt.Printf("  INCREMENTAL %8.1f ms\n  FULL        %8.1f ms\n  ratio       1/%.0f (target ≤ 1/50)\n", benchMS(mi), benchMS(mf), mf.Seconds()/mi.Seconds())
}
