//go:build integration

package integration

import (
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lakepipe/lakepipe/internal/chsql"
	"github.com/lakepipe/lakepipe/internal/core"
)

// BenchmarkDynamicRefresh measures an INCREMENTAL refresh of a GROUP BY
// summary against a FULL refresh of the same dynamic table, over sources of
// two sizes in the same run, to show that an incremental refresh costs the
// delta and not the table: each source holds N rows (LAKEPIPE_BENCH_DT_ROWS,
// a comma-separated list, default 10,000,000,50,000,000) in 20 categories;
// each round inserts the same 10,000 new rows (LAKEPIPE_BENCH_DT_CHANGES),
// refreshes incrementally, then refreshes FULL; 5 rounds, medians. Targets:
// INCREMENTAL at the largest size within 1.3× of INCREMENTAL at the
// smallest, and ≤ 1/100 of FULL at the largest. Each round waits for
// ClickHouse's background merges of the new rows first.
// Run: ./task bench:dynamic
func BenchmarkDynamicRefresh(b *testing.B) {
	var sizes []int
	for _, f := range strings.Split(os.Getenv("LAKEPIPE_BENCH_DT_ROWS"), ",") {
		if f = strings.TrimSpace(f); f != "" {
			n, err := strconv.Atoi(f)
			if err != nil || n <= 0 {
				b.Fatalf("LAKEPIPE_BENCH_DT_ROWS: %q is not a row count", f)
			}
			sizes = append(sizes, n)
		}
	}
	if len(sizes) == 0 {
		sizes = []int{10_000_000, 50_000_000}
	}
	changes := benchInt(b, "LAKEPIPE_BENCH_DT_CHANGES", 10_000)
	p := newPipeBench(b)
	p.worker()
	med := func(d []time.Duration) time.Duration {
		sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
		return d[len(d)/2]
	}
	inc := make([]time.Duration, len(sizes))
	full := make([]time.Duration, len(sizes))
	floor := make([]time.Duration, len(sizes))
	var retractInc, retractFull, rowsInc, rowsFull time.Duration
	groups := benchInt(b, "LAKEPIPE_BENCH_DT_GROUPS", 1_000_000)
	groupsInc, groupsFull := benchManyGroups(b, p, groups, changes, med)
	b.ResetTimer()
	for si, n := range sizes {
		src, summary := fmt.Sprintf("src_%d", si), fmt.Sprintf("summary_%d", si)
		p.run(fmt.Sprintf(`CREATE TABLE %s (id BIGINT, category STRING, amount DECIMAL(10,2), dt STRING)`, src))
		start := time.Now()
		if err := p.st.Exec(p.ctx, fmt.Sprintf("INSERT INTO %s (id, category, amount, dt, %s) SELECT number, concat('category ', toString(number %% 20)), toDecimal64(number %% 1000, 2) / 10, concat('2026-06-', toString(10 + number %% 20)), toUInt64(1) FROM system.numbers LIMIT %d",
			chsql.Table(p.schema, src), chsql.QuoteIdent(core.CommitColumn), n)); err != nil {
			b.Fatal(err)
		}
		b.Logf("%d source rows in %v", n, time.Since(start).Round(time.Millisecond))
		p.run(fmt.Sprintf(`ALTER TABLE %s SET PROPERTIES ('change_tracking' = 'true')`, src))
		p.run(fmt.Sprintf(`CREATE DYNAMIC TABLE %s REFRESH INTERVAL 1 HOUR AS SELECT category, COUNT(*) AS cnt, SUM(amount) AS total, AVG(amount) AS avg_amount, MIN(dt) AS first_dt, MAX(dt) AS last_dt FROM %s GROUP BY category`, summary, src))
		delta := newDeltaFloor(b, p, src)
		var incs, fulls, floors []time.Duration
		for round := 0; round < 5; round++ {
			p.run(fmt.Sprintf(`INSERT INTO %s SELECT id + %d, category, amount, dt FROM %s WHERE id < %d`, src, n+round*changes, src, changes))
			time.Sleep(2100 * time.Millisecond) // changes are readable 2 s after their commit
			waitMerges(p)                       // the steady state, as in bench:stream
			// Which of the two reads the new rows first alternates.
			if round%2 == 0 {
				floors = append(floors, delta.timed())
			}
			incs = append(incs, timedRefresh(b, p, summary, false))
			if round%2 == 1 {
				floors = append(floors, delta.timed())
			}
			want := fmt.Sprint(n + (round+1)*changes)
			if got := p.run(`SELECT SUM(cnt) FROM ` + summary).Rows[0][0]; fmt.Sprint(got) != want {
				b.Fatalf("%s counts %v rows after the incremental refresh, want %s", summary, got, want)
			}
			fulls = append(fulls, timedRefresh(b, p, summary, true))
		}
		inc[si], full[si], floor[si] = med(incs), med(fulls), med(floors)
		if si == 0 {
			// A summary whose aggregates take rows back (COUNT, SUM, AVG).
			retractInc, retractFull = benchRetract(b, p, src, "retract_"+src,
				`SELECT category, COUNT(*) AS cnt, SUM(amount) AS total, AVG(amount) AS avg_amount FROM `+src+` GROUP BY category`, 1_000_000, changes,
				func(from string) string {
					return `SELECT category, cnt, total, avg_amount FROM ` + from + ` ORDER BY category`
				}, med)
			// A table of rows, taking back the removed rows one by one.
			rowsInc, rowsFull = benchRetract(b, p, src, "rows_"+src,
				`SELECT id, category, amount * 2 AS doubled FROM `+src+` WHERE amount >= 10`, 5_000_000, changes,
				func(from string) string { return `SELECT COUNT(*), SUM(doubled) FROM ` + from }, med)
		}
		// The next size is measured without this one's merges beside it.
		delta.drop()
		p.run(`DROP DYNAMIC TABLE ` + summary)
		p.run(`DROP TABLE ` + src)
	}
	b.StopTimer()
	last := len(sizes) - 1
	b.ReportMetric(benchMS(inc[0]), "incremental_ms")
	b.ReportMetric(benchMS(full[0]), "full_ms")
	b.ReportMetric(benchMS(inc[last]), "incremental_largest_ms")
	b.ReportMetric(benchMS(full[last]), "full_largest_ms")
	b.ReportMetric(inc[last].Seconds()/full[last].Seconds(), "ratio_largest")
	b.ReportMetric(inc[last].Seconds()/inc[0].Seconds(), "incremental_growth")
	b.ReportMetric(benchMS(retractInc), "retract_incremental_ms")
	b.ReportMetric(retractInc.Seconds()/retractFull.Seconds(), "retract_ratio")
	b.ReportMetric(rowsInc.Seconds()/rowsFull.Seconds(), "retract_rows_ratio")
	b.ReportMetric(benchMS(groupsInc), "many_groups_incremental_ms")
	b.ReportMetric(benchMS(floor[last]), "floor_largest_ms")
	b.ReportMetric(floor[last].Seconds()/full[last].Seconds(), "floor_ratio_largest")
	fmt.Printf("\nDynamic table refresh, GROUP BY summary (20 groups, COUNT/SUM/AVG/MIN/MAX), %d new rows per refresh, median of 5:\n", changes)
	for i, n := range sizes {
		fmt.Printf("  %11d source rows: INCREMENTAL %8.1f ms  FULL %9.1f ms  ratio 1/%.0f;  floor %6.1f ms (1/%.0f)\n", n, benchMS(inc[i]), benchMS(full[i]), full[i].Seconds()/inc[i].Seconds(),
			benchMS(floor[i]), full[i].Seconds()/floor[i].Seconds())
	}
	fmt.Printf("  (floor: the delta's partial aggregates inserted into a table of the state's shape, its commit named, in one statement: no window read, no checks, no history row)\n")
	if last > 0 {
		fmt.Printf("  INCREMENTAL at %d rows is %.2f× INCREMENTAL at %d (target ≤ 1.3×); 1/%.0f of FULL (target ≤ 1/100)\n",
			sizes[last], inc[last].Seconds()/inc[0].Seconds(), sizes[0], full[last].Seconds()/inc[last].Seconds())
	}
	fmt.Printf("A summary of %d groups (one per source row), the same %d new rows (new groups) per refresh, median of 3:\n", groups, changes)
	fmt.Printf("  INCREMENTAL %8.1f ms (%.2f× the 20-group summary's at %d rows)  FULL %9.1f ms  ratio 1/%.0f\n",
		benchMS(groupsInc), groupsInc.Seconds()/inc[0].Seconds(), sizes[0], benchMS(groupsFull), groupsFull.Seconds()/groupsInc.Seconds())
	fmt.Printf("Deletes and updates, %d source rows, COUNT/SUM/AVG summary, %d rows deleted and %d updated per refresh, median of 3:\n", sizes[0], changes, changes)
	fmt.Printf("  INCREMENTAL %8.1f ms  FULL %9.1f ms  ratio 1/%.0f (target ≤ 1/20)\n", benchMS(retractInc), benchMS(retractFull), retractFull.Seconds()/retractInc.Seconds())
	fmt.Printf("The same over a table of rows (a projection and filter keeping about 9 in 10 rows), median of 3:\n")
	fmt.Printf("  INCREMENTAL %8.1f ms  FULL %9.1f ms  ratio 1/%.0f\n", benchMS(rowsInc), benchMS(rowsFull), rowsFull.Seconds()/rowsInc.Seconds())
}

// deltaFloor times the least an incremental refresh of the benchmark's
// summary can send ClickHouse: one INSERT … SELECT of the new commit's
// partial aggregates into a table of the state's shape, the commit named
// (looked up before the clock starts). No window read, no exactly-once
// checks, no marker, no history row: what the refresh adds to it is theirs.
type deltaFloor struct {
	b                *testing.B
	p                *pipeBench
	name, src, state string
}

// deltaAggregates are the summary's partial aggregates of the source.
const deltaAggregates = "category, countState() AS c, sumState(amount) AS s, avgState(amount) AS a, minState(dt) AS lo, maxState(dt) AS hi"

func newDeltaFloor(b *testing.B, p *pipeBench, src string) *deltaFloor {
	d := &deltaFloor{b: b, p: p, name: src, src: chsql.Table(p.schema, src), state: chsql.Table(p.schema, "floor_"+src)}
	if err := p.st.Exec(p.ctx, "CREATE TABLE "+d.state+" ENGINE = AggregatingMergeTree ORDER BY (isNull(category), assumeNotNull(category)) AS SELECT "+deltaAggregates+" FROM "+d.src+" WHERE 0 GROUP BY category"); err != nil {
		b.Fatal(err)
	}
	return d
}

func (d *deltaFloor) timed() time.Duration {
	ids, err := d.p.st.Strings(d.p.ctx, "SELECT toString(commit_id) FROM lakepipe.table_commits WHERE db = "+chsql.QuoteString(d.p.schema)+
		" AND table = "+chsql.QuoteString(d.name)+" ORDER BY version DESC LIMIT 1")
	if err != nil || len(ids) != 1 {
		d.b.Fatalf("the last commit of %s: %v %v", d.src, ids, err)
	}
	t0 := time.Now()
	if err := d.p.st.Exec(d.p.ctx, "INSERT INTO "+d.state+" SELECT "+deltaAggregates+" FROM "+d.src+" PREWHERE "+chsql.QuoteIdent(core.CommitColumn)+" IN ("+ids[0]+") GROUP BY category"); err != nil {
		d.b.Fatal(err)
	}
	return time.Since(t0)
}

func (d *deltaFloor) drop() {
	if err := d.p.st.Exec(d.p.ctx, "DROP TABLE "+d.state); err != nil {
		d.b.Fatal(err)
	}
}

// benchManyGroups measures an INCREMENTAL refresh of a summary with as many
// groups as its source has rows (n, GROUP BY the row's id), each of 3
// rounds adding `changes` rows of new ids, against a FULL refresh: what an
// incremental refresh reads of its state (the version it is at, the groups
// it wrote) must follow the delta, not the number of groups.
func benchManyGroups(b *testing.B, p *pipeBench, n, changes int, med func([]time.Duration) time.Duration) (inc, full time.Duration) {
	if n < changes {
		// Each round copies `changes` existing rows under new ids.
		b.Fatalf("LAKEPIPE_BENCH_DT_GROUPS (%d) must be at least LAKEPIPE_BENCH_DT_CHANGES (%d)", n, changes)
	}
	p.run(`CREATE TABLE groups_src (id BIGINT, amount DECIMAL(10,2))`)
	defer p.run(`DROP TABLE groups_src`)
	if err := p.st.Exec(p.ctx, fmt.Sprintf("INSERT INTO %s (id, amount, %s) SELECT number, toDecimal64(number %% 1000, 2) / 10, toUInt64(1) FROM system.numbers LIMIT %d",
		chsql.Table(p.schema, "groups_src"), chsql.QuoteIdent(core.CommitColumn), n)); err != nil {
		b.Fatal(err)
	}
	p.run(`ALTER TABLE groups_src SET PROPERTIES ('change_tracking' = 'true')`)
	p.run(`CREATE DYNAMIC TABLE by_id REFRESH INTERVAL 1 HOUR AS SELECT id, COUNT(*) AS cnt, SUM(amount) AS total FROM groups_src GROUP BY id`)
	defer p.run(`DROP DYNAMIC TABLE by_id`)
	var incs, fulls []time.Duration
	for round := 0; round < 3; round++ {
		p.run(fmt.Sprintf(`INSERT INTO groups_src SELECT id + %d, amount FROM groups_src WHERE id < %d`, n+round*changes, changes))
		time.Sleep(2100 * time.Millisecond) // changes are readable 2 s after their commit
		waitMerges(p)
		incs = append(incs, timedRefresh(b, p, "by_id", false))
		want := fmt.Sprint(n + (round+1)*changes)
		if got := p.run(`SELECT COUNT(*) FROM by_id`).Rows[0][0]; fmt.Sprint(got) != want {
			b.Fatalf("by_id has %v groups after the incremental refresh, want %s", got, want)
		}
		fulls = append(fulls, timedRefresh(b, p, "by_id", true))
	}
	return med(incs), med(fulls)
}

// benchRetract measures, over the source src, the dynamic table name of
// query query through deletes and updates: each of 3 rounds deletes
// `changes` rows from id lo on and updates as many after them, refreshes
// INCREMENTAL (checked: check over the table equals check over the query
// run afresh), then FULL; medians.
func benchRetract(b *testing.B, p *pipeBench, src, name, query string, lo, changes int, check func(from string) string, med func([]time.Duration) time.Duration) (inc, full time.Duration) {
	p.run(`CREATE DYNAMIC TABLE ` + name + ` REFRESH INTERVAL 1 HOUR AS ` + query)
	defer p.run(`DROP DYNAMIC TABLE ` + name)
	var incs, fulls []time.Duration
	for round := 0; round < 3; round++ {
		from := lo + round*3*changes
		p.run(fmt.Sprintf(`DELETE FROM %s WHERE id >= %d AND id < %d`, src, from, from+changes))
		p.run(fmt.Sprintf(`UPDATE %s SET amount = amount + 1 WHERE id >= %d AND id < %d`, src, from+changes, from+2*changes))
		time.Sleep(2100 * time.Millisecond) // changes are readable 2 s after their commit
		waitMerges(p)
		incs = append(incs, timedRefresh(b, p, name, false))
		got := rowsText(p.run(check(name)))
		if want := rowsText(p.run(check("(" + query + ")"))); got != want {
			b.Fatalf("%s after deletes and updates:\n%s\nwant\n%s", name, got, want)
		}
		fulls = append(fulls, timedRefresh(b, p, name, true))
	}
	return med(incs), med(fulls)
}

// timedRefresh times one refresh of a dynamic table, INCREMENTAL (which it
// must be) or FULL.
func timedRefresh(b *testing.B, p *pipeBench, name string, full bool) time.Duration {
	eng := p.eng.WithSchema(p.schema)
	refresh, mode := eng.RefreshDynamicTable, "INCREMENTAL"
	if full {
		refresh, mode = eng.RefreshDynamicTableFull, "FULL"
	}
	t0 := time.Now()
	res, err := refresh(p.ctx, name, "BENCH")
	if err != nil || res.State != "SUCCEED" || string(res.Mode) != mode {
		b.Fatalf("%s refresh of %s: %+v %v", mode, name, res, err)
	}
	return time.Since(t0)
}
