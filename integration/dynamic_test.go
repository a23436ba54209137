//go:build integration

package integration

import (
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/lakepipe/lakepipe/internal/chsql"
	"github.com/lakepipe/lakepipe/schemas"
)

// TestDynamicTableChain: a chain of three dynamic tables (a summary, a
// table over it, a table over that) refreshes in dependency order on one
// REFRESH of the last, each upstream refreshed by its own workflow; every
// refresh says why it is FULL, in DESC and in the history.
func TestDynamicTableChain(t *testing.T) {
	s := newStack(t)
	s.withWorker()
	s.run(`CREATE TABLE sales (category STRING, amount DECIMAL(10,2))`)
	s.run(`INSERT INTO sales VALUES ('books', 10.00), ('books', 5.00), ('games', 20.00)`)
	s.run(`CREATE DYNAMIC TABLE by_cat REFRESH INTERVAL 1 HOUR AS SELECT category, SUM(amount) AS total FROM sales GROUP BY category`)
	s.run(`CREATE DYNAMIC TABLE doubled REFRESH INTERVAL 1 HOUR AS SELECT category, total * 2 AS twice FROM by_cat`)
	s.run(`CREATE DYNAMIC TABLE grand REFRESH INTERVAL 1 HOUR COMMENT 'end of the chain' AS SELECT COUNT(*) AS cats, SUM(twice) AS all_twice FROM doubled`)
	for _, d := range []string{"by_cat", "doubled", "grand"} {
		s.dropAtEnd("DYNAMIC TABLE", d)
	}
	wantRows(t, "grand at creation", s.run(`SELECT cats, all_twice FROM grand`), "2|70.00")

	s.run(`INSERT INTO sales VALUES ('music', 1.50), ('games', 4.00)`)
	res := s.run(`REFRESH DYNAMIC TABLE grand`)
	checkMessage(t, res.Message, "grand refreshed", "after its upstream", "by_cat, doubled")
	wantRows(t, "grand after one refresh of it", s.run(`SELECT cats, all_twice FROM grand`), "3|81.00")
	wantRows(t, "doubled", s.run(`SELECT category, twice FROM doubled ORDER BY category`), "books|30.00", "games|48.00", "music|3.00")

	// The history: the two upstream refreshes (CHAIN) before grand's
	// (MANUAL), each after the one it reads.
	h := s.run(`SHOW DYNAMIC TABLE REFRESH HISTORY`)
	var got []string
	for _, r := range table(h) {
		if trig := r[column(t, h, "trigger")]; trig == "CHAIN" || trig == "MANUAL" {
			got = append(got, r[column(t, h, "name")]+":"+trig+":"+r[column(t, h, "state")])
		}
	}
	// Newest first.
	if strings.Join(got, ",") != "grand:MANUAL:SUCCEED,doubled:CHAIN:SUCCEED,by_cat:CHAIN:SUCCEED" {
		t.Fatalf("refresh history (newest first): %v\n%s", got, rowsText(h))
	}
	for _, r := range table(h) {
		if r[column(t, h, "refresh_mode")] != "FULL" || r[column(t, h, "mode_reason")] == "" {
			t.Fatalf("every refresh is FULL with its reason:\n%s", rowsText(h))
		}
	}
	d := map[string]string{}
	for _, r := range table(s.run(`DESC DYNAMIC TABLE grand`)) {
		d[r[0]] = r[1]
	}
	if d["refresh_mode"] != "FULL" || d["refresh_mode_reason"] == "" || d["comment"] != "end of the chain" || !strings.HasSuffix(d["source_tables"], ".doubled") {
		t.Fatalf("DESC DYNAMIC TABLE grand: %v", d)
	}
	// A scheduled refresh runs the chain too: every second here.
	s.run(`CREATE DYNAMIC TABLE fast REFRESH INTERVAL 1 SECOND AS SELECT COUNT(*) AS n FROM doubled`)
	s.dropAtEnd("DYNAMIC TABLE", "fast")
	s.run(`INSERT INTO sales VALUES ('toys', 2.00)`)
	pipeWait(t, 30*time.Second, "a scheduled refresh of fast sees the new category through the chain", func() bool {
		return s.pipeScalar(`SELECT n FROM fast`) == "4"
	})
	s.run(`ALTER DYNAMIC TABLE fast SUSPEND`)

	// Every refresh ran in its table's own workflow: no refresh workflow
	// of the earlier design exists.
	for _, d := range []string{"by_cat", "doubled", "grand", "fast"} {
		id := s.Eng.DynamicTableWorkflowID(d) + ".refresh"
		if st, err := s.Orch.Query(s.Ctx, id, "status", new(any)); err != nil || st != "NOT_FOUND" {
			t.Fatalf("workflow %s: %s, %v; want none", id, st, err)
		}
	}
	if dir := os.Getenv("LAKEPIPE_RECORD_HISTORY"); dir != "" {
		// The "refresh-owned" version: a REFRESH as an update running a
		// chain (grand), requests served (by_cat), scheduled chains (fast).
		recordHistory(t, s, s.Eng.DynamicTableWorkflowID("grand"), filepath.Join(dir, "dynamic_table_owned_manual.json"))
		recordHistory(t, s, s.Eng.DynamicTableWorkflowID("by_cat"), filepath.Join(dir, "dynamic_table_owned_served.json"))
		recordHistory(t, s, s.Eng.DynamicTableWorkflowID("fast"), filepath.Join(dir, "dynamic_table_owned_scheduled.json"))
	}

	d = map[string]string{}
	for _, r := range table(s.run(`DESC DYNAMIC TABLE by_cat`)) {
		d[r[0]] = r[1]
	}
	if !strings.Contains(d["refresh_mode_reason"], "does not track changes") {
		t.Fatalf("DESC DYNAMIC TABLE by_cat: %v", d)
	}
}

// TestDynamicTableIncrementalSeed runs step 6 of the ClickZetta documentation's example verbatim over sales_ods
// fed by a volume pipe: the first refresh builds the summary (FULL), the
// refresh after new files is INCREMENTAL and equal to the query's answer.
func TestDynamicTableIncrementalSeed(t *testing.T) {
	s := newStack(t)
	s.withWorker()
	s.run(`CREATE TABLE IF NOT EXISTS sales_ods ( id BIGINT COMMENT '订单ID', product STRING COMMENT '商品名', category STRING COMMENT '品类', amount DECIMAL(10,2) COMMENT '金额', dt STRING COMMENT '日期' ) COMMENT 'ODS 层——Pipe 导入目标表';`)
	vol := s.volume("pipe_vol", "incoming", false)
	s.run(`CREATE PIPE sales_pipe INGEST_MODE = 'LIST_PURGE' POLL_INTERVAL_IN_SECONDS = '1' AS COPY INTO sales_ods FROM VOLUME ` + vol + ` USING CSV PURGE = TRUE`)
	s.dropAtEnd("PIPE", "sales_pipe")
	s.put("incoming/part00001.csv", []byte("1,手机,电子,3999.00,2026-06-01\n2,耳机,电子,299.00,2026-06-01\n3,T恤,服装,99.00,2026-06-01\n4,牛仔裤,服装,199.00,2026-06-01\n5,咖啡,食品,45.50,2026-06-01\n"))
	pipeWait(t, 30*time.Second, "the first file loads", func() bool { return s.pipeCount("sales_ods") == 5 })

	for _, q := range []string{
		`ALTER TABLE sales_ods SET PROPERTIES ('change_tracking' = 'true');`,
		`CREATE OR REPLACE DYNAMIC TABLE sales_summary REFRESH INTERVAL 1 HOUR vcluster DEFAULT COMMENT '按品类汇总——增量刷新' AS SELECT category, COUNT(*) AS order_cnt, SUM(amount) AS total_amount, AVG(amount) AS avg_amount, MIN(dt) AS min_date, MAX(dt) AS max_date FROM sales_ods GROUP BY category;`,
		`REFRESH DYNAMIC TABLE sales_summary;`,
	} {
		s.run(q)
	}
	s.dropAtEnd("DYNAMIC TABLE", "sales_summary")
	direct := `SELECT category, COUNT(*) AS order_cnt, SUM(amount) AS total_amount, AVG(amount) AS avg_amount, MIN(dt) AS min_date, MAX(dt) AS max_date FROM sales_ods GROUP BY category ORDER BY category`
	same := func(what string) {
		t.Helper()
		got, want := rowsText(s.run(`SELECT * FROM sales_summary ORDER BY category;`)), rowsText(s.run(direct))
		if got != want {
			t.Fatalf("%s: sales_summary\n%s\nwant (the query now)\n%s", what, indent(got), indent(want))
		}
	}
	same("after the first refresh")

	s.put("incoming/part00002.csv", []byte("6,平板,电子,2599.00,2026-06-02\n7,茶叶,食品,128.00,2026-06-02\n8,台灯,家居,89.90,2026-06-02\n"))
	pipeWait(t, 30*time.Second, "the second file loads", func() bool { return s.pipeCount("sales_ods") == 8 })
	time.Sleep(2500 * time.Millisecond) // changes are readable 2 s after their commit
	res := s.run(`REFRESH DYNAMIC TABLE sales_summary;`)
	checkMessage(t, res.Message, "INCREMENTAL")
	same("after the incremental refresh")

	h := s.run(`SHOW DYNAMIC TABLE REFRESH HISTORY WHERE name = 'sales_summary';`)
	rows := table(h)
	if len(rows) < 2 || rows[0][column(t, h, "refresh_mode")] != "INCREMENTAL" || rows[0][column(t, h, "state")] != "SUCCEED" ||
		!strings.HasSuffix(rows[0][column(t, h, "source_tables")], ".sales_ods") || rows[len(rows)-1][column(t, h, "refresh_mode")] != "FULL" {
		t.Fatalf("refresh history:\n%s", rowsText(h))
	}
	d := map[string]string{}
	for _, r := range table(s.run(`DESC DYNAMIC TABLE sales_summary`)) {
		d[r[0]] = r[1]
	}
	if d["refresh_mode"] != "INCREMENTAL" {
		t.Fatalf("DESC DYNAMIC TABLE: %v", d)
	}
	res = s.run(`SELECT 'Source' AS stage, COUNT(*) AS rows FROM sales_ods UNION ALL SELECT 'Summary' AS stage, SUM(order_cnt) AS rows FROM sales_summary`)
	if got := sortedText(table(res)); got != "Source|8\nSummary|8" {
		t.Fatalf("consistency: %s", got)
	}

	// A state table dropped by hand: the next refresh rebuilds it (FULL,
	// saying why) and the summary stays right.
	must(t, s.Store.Exec(s.Ctx, "DROP TABLE "+chsql.Table(schemas.ChangesDB, "dt__"+s.Schema+"__sales_summary")))
	s.run(`INSERT INTO sales_ods VALUES (9, '围巾', '服饰', 59.00, '2026-06-03')`)
	time.Sleep(2500 * time.Millisecond)
	checkMessage(t, s.run(`REFRESH DYNAMIC TABLE sales_summary;`).Message, "FULL")
	same("after the state was rebuilt")
	h = s.run(`SHOW DYNAMIC TABLE REFRESH HISTORY WHERE name = 'sales_summary';`)
	if r := table(h)[0]; !strings.Contains(strings.Join(r, "|"), "state was missing") {
		t.Fatalf("refresh after the state was dropped: %v", r)
	}
}

// randomFacts is an INSERT of n random rows into a table (k STRING, g INT,
// x DECIMAL(10,2), d STRING): six keys and NULLs, g from -2 to 9, some x
// NULL.
func randomFacts(rng *rand.Rand, table string, n int) string {
	vals := make([]string, n)
	for i := range vals {
		k := fmt.Sprintf("'k%d'", rng.Intn(6))
		if rng.Intn(10) == 0 {
			k = "NULL"
		}
		x := fmt.Sprintf("%d.%02d", rng.Intn(1000), rng.Intn(100))
		if rng.Intn(8) == 0 {
			x = "NULL"
		}
		vals[i] = fmt.Sprintf("(%s, %d, %s, '2026-06-%02d')", k, rng.Intn(12)-2, x, 1+rng.Intn(28))
	}
	return `INSERT INTO ` + table + ` VALUES ` + strings.Join(vals, ", ")
}

// TestDynamicTableIncrementalProperty: random inserts (with NULLs, rows the
// WHERE drops, new and old groups) and deletes on a tracked table; after
// each round the dynamic table equals its query computed afresh, whether
// the refresh was INCREMENTAL (inserts only) or FULL (after deletes).
func TestDynamicTableIncrementalProperty(t *testing.T) {
	s := newStack(t)
	s.withWorker()
	rng := rand.New(rand.NewSource(testSeed(t, "LAKEPIPE_TEST_SEED")))
	s.run(`CREATE TABLE facts (k STRING, g INT, x DECIMAL(10,2), d STRING)`)
	s.run(`ALTER TABLE facts SET PROPERTIES ('change_tracking' = 'true')`)
	query := `SELECT k, COUNT(*) AS n, COUNT(x) AS cx, SUM(x) AS sx, MIN(x) AS mn, MAX(d) AS mx, AVG(x) AS ax, COUNT(DISTINCT g) AS dg FROM facts WHERE g >= 0 GROUP BY k`
	insert := func(n int) { s.run(randomFacts(rng, "facts", n)) }
	insert(40)
	// A group whose values are all NULL: its SUM, MIN and AVG are NULL.
	s.run(`INSERT INTO facts VALUES ('kz', 1, NULL, '2026-06-01')`)
	s.run(`CREATE DYNAMIC TABLE facts_sum REFRESH INTERVAL 1 HOUR AS ` + query)
	s.dropAtEnd("DYNAMIC TABLE", "facts_sum")
	modes := map[string]int{}
	for round := 0; round < 10; round++ {
		if round == 0 {
			// Such a group again, new at an incremental refresh.
			s.run(`INSERT INTO facts VALUES ('ky', 2, NULL, '2026-06-02')`)
		}
		if rng.Intn(3) == 0 {
			s.run(fmt.Sprintf(`DELETE FROM facts WHERE g = %d`, rng.Intn(10)))
		}
		insert(1 + rng.Intn(30))
		if rng.Intn(2) == 0 {
			insert(5) // two commits in one refresh
		}
		time.Sleep(2100 * time.Millisecond) // changes are readable 2 s after their commit
		res := s.run(`REFRESH DYNAMIC TABLE facts_sum`)
		mode := "FULL"
		if strings.Contains(res.Message, "INCREMENTAL") {
			mode = "INCREMENTAL"
		}
		modes[mode]++
		got := rowsText(s.run(`SELECT k, n, cx, sx, mn, mx, ax, dg FROM facts_sum ORDER BY k`))
		want := rowsText(s.run(query + ` ORDER BY k`))
		if got != want {
			t.Fatalf("round %d (%s): the dynamic table\n%s\nwant (the query afresh)\n%s", round, mode, indent(got), indent(want))
		}
	}
	t.Logf("refreshes: %v", modes)
	if modes["INCREMENTAL"] == 0 {
		t.Fatalf("no refresh was incremental: %v", modes)
	}

	// A query that cannot be maintained falls back to FULL and says why,
	// in DESC and in the history.
	s.run(`CREATE DYNAMIC TABLE facts_ratio REFRESH INTERVAL 1 HOUR AS SELECT k, SUM(x) / COUNT(*) AS ratio FROM facts GROUP BY k`)
	s.dropAtEnd("DYNAMIC TABLE", "facts_ratio")
	insert(3)
	s.run(`REFRESH DYNAMIC TABLE facts_ratio`)
	d := map[string]string{}
	for _, r := range table(s.run(`DESC DYNAMIC TABLE facts_ratio`)) {
		d[r[0]] = r[1]
	}
	if d["refresh_mode"] != "FULL" || !strings.Contains(d["refresh_mode_reason"], "expression over aggregates") {
		t.Fatalf("DESC DYNAMIC TABLE facts_ratio: %v", d)
	}
	h := s.run(`SHOW DYNAMIC TABLE REFRESH HISTORY WHERE name = 'facts_ratio'`)
	if r := table(h); len(r) == 0 || r[0][column(t, h, "refresh_mode")] != "FULL" || !strings.Contains(r[0][column(t, h, "mode_reason")], "expression over aggregates") {
		t.Fatalf("history of facts_ratio:\n%s", rowsText(h))
	}
}

// TestDynamicTableConcurrentRefresh: refreshes of one incremental summary
// that overlap (REFRESH statements at once, and the chains of two dynamic
// tables over it) run one after another, so that no new rows are counted
// twice: after every round the summary equals its query afresh.
func TestDynamicTableConcurrentRefresh(t *testing.T) {
	s := newStack(t)
	s.withWorker()
	s.run(`CREATE TABLE hits (page STRING, ms INT)`)
	s.run(`ALTER TABLE hits SET PROPERTIES ('change_tracking' = 'true')`)
	s.run(`INSERT INTO hits VALUES ('a', 1), ('b', 2)`)
	query := `SELECT page, COUNT(*) AS n, SUM(ms) AS total FROM hits GROUP BY page`
	s.run(`CREATE DYNAMIC TABLE per_page REFRESH INTERVAL 1 HOUR AS ` + query)
	s.run(`CREATE DYNAMIC TABLE pages_a REFRESH INTERVAL 1 HOUR AS SELECT SUM(n) AS n FROM per_page`)
	s.run(`CREATE DYNAMIC TABLE pages_b REFRESH INTERVAL 1 HOUR AS SELECT MAX(total) AS m FROM per_page`)
	for _, d := range []string{"pages_a", "pages_b", "per_page"} {
		s.dropAtEnd("DYNAMIC TABLE", d)
	}
	for round := 0; round < 4; round++ {
		s.run(fmt.Sprintf(`INSERT INTO hits VALUES ('a', %d), ('c', %d), ('b', 1)`, round, round*2))
		time.Sleep(2100 * time.Millisecond) // changes are readable 2 s after their commit
		stmts := []string{`REFRESH DYNAMIC TABLE per_page`, `REFRESH DYNAMIC TABLE per_page`, `REFRESH DYNAMIC TABLE pages_a`, `REFRESH DYNAMIC TABLE pages_b`}
		errs := make(chan error, len(stmts))
		for _, q := range stmts {
			go func() {
				_, err := s.exec(q)
				errs <- err
			}()
		}
		for range stmts {
			if err := <-errs; err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
		}
		got := rowsText(s.run(`SELECT page, n, total FROM per_page ORDER BY page`))
		want := rowsText(s.run(query + ` ORDER BY page`))
		if got != want {
			t.Fatalf("round %d: after overlapping refreshes the dynamic table is\n%s\nwant (the query afresh)\n%s", round, indent(got), indent(want))
		}
	}
}

// TestDynamicTableAfterTrim: maintenance trims a tracked table's change log
// past its retention; a FULL refresh of an incremental summary afterwards
// still counts every row of the table, old ones included, and refreshes
// after it go on incrementally.
func TestDynamicTableAfterTrim(t *testing.T) {
	s := newStack(t)
	s.withWorker()
	s.run(`CREATE TABLE orders (shop STRING, qty INT)`)
	s.run(`INSERT INTO orders VALUES ('x', 1), ('y', 2)`) // the baseline
	s.run(`ALTER TABLE orders SET PROPERTIES ('change_tracking' = 'true')`)
	s.run(`INSERT INTO orders VALUES ('x', 3)`)
	query := `SELECT shop, COUNT(*) AS n, SUM(qty) AS total FROM orders GROUP BY shop`
	s.run(`CREATE DYNAMIC TABLE per_shop REFRESH INTERVAL 1 HOUR AS ` + query)
	s.dropAtEnd("DYNAMIC TABLE", "per_shop")
	s.run(`DELETE FROM orders WHERE qty = 2`)
	time.Sleep(2100 * time.Millisecond) // changes are readable 2 s after their commit
	// The DELETE is forgotten: the next refresh is FULL. (A trim that
	// forgets no removal leaves readers as they are.)
	if err := s.Eng.TrimChangeLog(s.Ctx, s.Schema, "orders", time.Now()); err != nil {
		t.Fatal(err)
	}
	// The index of what removals took goes with them.
	if n, err := s.Store.Strings(s.Ctx, "SELECT toString(count()) FROM lakepipe.removal_origins WHERE db = "+chsql.QuoteString(s.Schema)); err != nil || len(n) != 1 || n[0] != "0" {
		t.Fatalf("removal_origins after the trim: %v %v, want no pair", n, err)
	}
	// The refresh reads up to 2 s ago: past the cut (now), as it always is
	// past data_retention_days.
	time.Sleep(2100 * time.Millisecond)
	checkMessage(t, s.run(`REFRESH DYNAMIC TABLE per_shop`).Message, "FULL")
	wantRows(t, "per_shop after a FULL refresh over a trimmed change log", s.run(`SELECT shop, n, total FROM per_shop ORDER BY shop`), "x|2|4")
	s.run(`INSERT INTO orders VALUES ('y', 5)`)
	time.Sleep(2100 * time.Millisecond)
	checkMessage(t, s.run(`REFRESH DYNAMIC TABLE per_shop`).Message, "INCREMENTAL")
	wantRows(t, "per_shop after an incremental refresh", s.run(`SELECT shop, n, total FROM per_shop ORDER BY shop`), "x|2|4", "y|1|5")
}

// refreshPerSite refreshes the dynamic table per_site once its source's
// changes are readable, checks the refresh said mode, and that the table
// equals its query (site, n) run afresh.
func (s *Stack) refreshPerSite(query, mode string) {
	s.T.Helper()
	s.refreshEquals("per_site", "site, n", query, mode)
}

// refreshEquals refreshes the dynamic table name once its sources'
// changes are readable, checks the refresh said mode, and that its columns
// cols (the first one a key) equal query run afresh.
func (s *Stack) refreshEquals(name, cols, query, mode string) {
	s.T.Helper()
	time.Sleep(2100 * time.Millisecond) // changes are readable 2 s after their commit
	checkMessage(s.T, s.run(`REFRESH DYNAMIC TABLE `+name).Message, mode)
	order := strings.SplitN(cols, ",", 2)[0]
	if got, want := rowsText(s.run(`SELECT `+cols+` FROM `+name+` ORDER BY `+order)), rowsText(s.run(query+` ORDER BY `+order)); got != want {
		s.T.Fatalf("after a %s refresh %s is\n%s\nwant\n%s", mode, name, indent(got), indent(want))
	}
}

// TestDynamicTableTrackingOffAndOn: a summary whose source stops tracking
// changes is refreshed FULL and gives up its state; when tracking is on
// again, the rows written meanwhile are counted (a FULL refresh builds the
// state afresh) and refreshes go on incrementally.
func TestDynamicTableTrackingOffAndOn(t *testing.T) {
	s := newStack(t)
	s.withWorker()
	s.run(`CREATE TABLE visits (site STRING)`)
	s.run(`ALTER TABLE visits SET PROPERTIES ('change_tracking' = 'true')`)
	s.run(`INSERT INTO visits VALUES ('a'), ('b')`)
	query := `SELECT site, COUNT(*) AS n FROM visits GROUP BY site`
	s.run(`CREATE DYNAMIC TABLE per_site REFRESH INTERVAL 1 HOUR AS ` + query)
	s.dropAtEnd("DYNAMIC TABLE", "per_site")
	refresh := func(mode string) { t.Helper(); s.refreshPerSite(query, mode) }
	s.run(`INSERT INTO visits VALUES ('a')`)
	refresh("INCREMENTAL")
	s.run(`ALTER TABLE visits SET PROPERTIES ('change_tracking' = 'false')`)
	s.run(`INSERT INTO visits VALUES ('c'), ('a')`)
	refresh("FULL")
	s.run(`ALTER TABLE visits SET PROPERTIES ('change_tracking' = 'true')`)
	s.run(`INSERT INTO visits VALUES ('d')`)
	refresh("FULL")
	s.run(`INSERT INTO visits VALUES ('d'), ('b')`)
	refresh("INCREMENTAL")
	// The history counts the groups each incremental refresh wrote, and
	// says so when there was nothing new.
	refresh("INCREMENTAL")
	h := s.run(`SHOW DYNAMIC TABLE REFRESH HISTORY WHERE name = 'per_site'`)
	rows := table(h)
	if got := rows[0][column(t, h, "mode_reason")] + "|" + rows[0][column(t, h, "rows_inserted")]; got != "no new rows since the last refresh|0" {
		t.Fatalf("the last refresh's history: %s\n%s", got, rowsText(h))
	}
	if got := rows[1][column(t, h, "rows_inserted")]; got != "2" {
		t.Fatalf("the refresh adding rows of two groups wrote %s groups:\n%s", got, rowsText(h))
	}
}

// TestDynamicTableIncrementalRowsProperty: the queries besides GROUP BY
// summaries that are refreshed incrementally — projections and filters,
// UNION ALL of them, joins of a changing table with a dimension table, and
// a summary over such a join — under random inserts, deletes and changes to
// the dimension: after each round every dynamic table equals its query
// computed afresh, and some refreshes were INCREMENTAL.
func TestDynamicTableIncrementalRowsProperty(t *testing.T) {
	s := newStack(t)
	s.withWorker()
	rng := rand.New(rand.NewSource(testSeed(t, "LAKEPIPE_TEST_SEED")))
	s.run(`CREATE TABLE ev (k STRING, g INT, x DECIMAL(10,2), d STRING)`)
	s.run(`CREATE TABLE dim (k STRING, label STRING)`)
	s.run(`INSERT INTO dim VALUES ('k0', 'zero'), ('k1', 'one'), ('k2', 'two'), ('k3', 'three')`)
	s.run(`ALTER TABLE ev SET PROPERTIES ('change_tracking' = 'true')`)
	s.run(`ALTER TABLE dim SET PROPERTIES ('change_tracking' = 'true')`)
	insert := func(n int) { s.run(randomFacts(rng, "ev", n)) }
	insert(30)
	tables := map[string]string{
		"ev_rows":   `SELECT k, x, upper(d) AS ud, g * 2 AS g2 FROM ev WHERE g >= 0 AND x IS NOT NULL`,
		"ev_union":  `SELECT k, g FROM ev WHERE g > 5 UNION ALL SELECT k, g FROM ev WHERE g < 0`,
		"ev_joined": `SELECT e.k, m.label, e.x FROM ev e JOIN dim m ON e.k = m.k WHERE e.g <> 3`,
		"ev_left":   `SELECT e.k, m.label, e.g FROM ev e LEFT JOIN dim m ON e.k = m.k`,
		"ev_labels": `SELECT m.label, COUNT(*) AS n, SUM(e.x) AS sx, MAX(e.d) AS md FROM ev e JOIN dim m ON e.k = m.k GROUP BY m.label`,
	}
	names := make([]string, 0, len(tables))
	for name, q := range tables {
		s.run(fmt.Sprintf(`CREATE DYNAMIC TABLE %s REFRESH INTERVAL 1 HOUR AS %s`, name, q))
		s.dropAtEnd("DYNAMIC TABLE", name)
		names = append(names, name)
	}
	sort.Strings(names)
	// Rows compared as multisets: every column in the ORDER BY.
	sorted := func(q, cols string) string { return rowsText(s.run(`SELECT * FROM (` + q + `) ORDER BY ` + cols)) }
	orderBy := map[string]string{"ev_rows": "k, x, ud, g2", "ev_union": "k, g", "ev_joined": "k, label, x", "ev_left": "k, label, g", "ev_labels": "label"}
	modes := map[string]int{}
	for round := 0; round < 8; round++ {
		switch rng.Intn(5) {
		case 0:
			s.run(fmt.Sprintf(`DELETE FROM ev WHERE g = %d`, rng.Intn(10)))
		case 1:
			s.run(fmt.Sprintf(`INSERT INTO dim VALUES ('k%d', 'new %d')`, 4+rng.Intn(2), round))
		}
		insert(1 + rng.Intn(20))
		if rng.Intn(2) == 0 {
			insert(3) // two commits in one refresh
		}
		time.Sleep(2100 * time.Millisecond) // changes are readable 2 s after their commit
		for _, name := range names {
			res := s.run(`REFRESH DYNAMIC TABLE ` + name)
			mode := "FULL"
			if strings.Contains(res.Message, "INCREMENTAL") {
				mode = "INCREMENTAL"
			}
			modes[name+":"+mode]++
			if got, want := sorted(`SELECT * FROM `+name, orderBy[name]), sorted(tables[name], orderBy[name]); got != want {
				t.Fatalf("round %d, %s (%s): the dynamic table\n%s\nwant (the query afresh)\n%s", round, name, mode, indent(got), indent(want))
			}
		}
	}
	t.Logf("refreshes: %v", modes)
	for _, name := range names {
		if modes[name+":INCREMENTAL"] == 0 {
			t.Fatalf("no refresh of %s was incremental: %v", name, modes)
		}
	}
	d := map[string]string{}
	for _, r := range table(s.run(`DESC DYNAMIC TABLE ev_joined`)) {
		d[r[0]] = r[1]
	}
	if d["refresh_mode"] != "INCREMENTAL" || !strings.Contains(d["refresh_mode_reason"], "joined with dimension tables") {
		t.Fatalf("DESC DYNAMIC TABLE ev_joined: %v", d)
	}
	// What stays FULL says why.
	for q, why := range map[string]string{
		`SELECT k, now() AS t FROM ev`:                       "NOW",
		`SELECT DISTINCT k FROM ev`:                          "DISTINCT",
		`SELECT e.k FROM ev e JOIN ev f ON e.k = f.k`:        "twice",
		`SELECT k FROM ev UNION ALL SELECT k FROM dim`:       "",
		`SELECT m.k FROM dim m RIGHT JOIN ev e ON e.k = m.k`: "RIGHT JOIN",
	} {
		s.run(`CREATE OR REPLACE DYNAMIC TABLE ev_other REFRESH INTERVAL 1 HOUR AS ` + q)
		d := map[string]string{}
		for _, r := range table(s.run(`DESC DYNAMIC TABLE ev_other`)) {
			d[r[0]] = r[1]
		}
		if why == "" {
			// Built at CREATE: incremental from the next refresh on.
			if d["refresh_mode"] != "INCREMENTAL" {
				t.Fatalf("%s: DESC says %v, want INCREMENTAL", q, d)
			}
			continue
		}
		if d["refresh_mode"] != "FULL" || !strings.Contains(d["refresh_mode_reason"], why) {
			t.Fatalf("%s: DESC says %v, want FULL because of %s", q, d, why)
		}
	}
	s.dropAtEnd("DYNAMIC TABLE", "ev_other")
}

// TestDynamicTableStateBehindBound: a table of rows reads its state's
// version from the version it last saw on (its state keeps a marker row per
// refresh); a state found behind that bound (rebuilt by a process whose
// clock runs behind, simulated here by taking the last refresh out of the
// state) is read again in full, and the refreshes after it stay exact and
// incremental.
func TestDynamicTableStateBehindBound(t *testing.T) {
	s := newStack(t)
	s.withWorker()
	s.run(`CREATE TABLE ev (k STRING, g INT)`)
	s.run(`ALTER TABLE ev SET PROPERTIES ('change_tracking' = 'true')`)
	s.run(`INSERT INTO ev VALUES ('a', 1), ('b', 2)`)
	query := `SELECT k, g * 10 AS g10 FROM ev WHERE g > 0`
	s.run(`CREATE DYNAMIC TABLE ev_rows REFRESH INTERVAL 1 HOUR AS ` + query)
	s.dropAtEnd("DYNAMIC TABLE", "ev_rows")
	state := chsql.Table(schemas.ChangesDB, "dt__"+s.Schema+"__ev_rows")
	check := func(step string) {
		t.Helper()
		res := s.run(`REFRESH DYNAMIC TABLE ev_rows`)
		if !strings.Contains(res.Message, "INCREMENTAL") {
			t.Fatalf("%s: the refresh was not incremental: %s", step, res.Message)
		}
		got := rowsText(s.run(`SELECT k, g10 FROM ev_rows ORDER BY k, g10`))
		if want := rowsText(s.run(`SELECT * FROM (` + query + `) ORDER BY k, g10`)); got != want {
			t.Fatalf("%s: the dynamic table\n%s\nwant (the query afresh)\n%s", step, indent(got), indent(want))
		}
	}
	for i := 0; i < 3; i++ {
		s.run(fmt.Sprintf(`INSERT INTO ev VALUES ('c%d', %d), ('n%d', -1)`, i, 3+i, i))
		time.Sleep(2100 * time.Millisecond) // changes are readable 2 s after their commit
		check(fmt.Sprintf("refresh %d", i))
	}
	// Take the last refresh out of the state: its rows and its marker.
	v, err := s.Store.Strings(s.Ctx, `SELECT toString(max(_lp_upto)) FROM `+state+` PREWHERE _lp_marker = 1`)
	if err != nil || len(v) != 1 {
		t.Fatalf("the state's version: %v %v", v, err)
	}
	last := v[0]
	s.run(`INSERT INTO ev VALUES ('d', 9)`)
	if err := s.Store.Exec(s.Ctx, `ALTER TABLE `+state+` DELETE WHERE _lp_upto = `+last); err != nil {
		t.Fatal(err)
	}
	waitStrings(t, s.Ctx, s.Store, "SELECT toString(count()) FROM "+state+" WHERE _lp_upto = "+last, "0")
	time.Sleep(2100 * time.Millisecond)
	check("a state behind the bound")
	s.run(`INSERT INTO ev VALUES ('e', 4)`)
	time.Sleep(2100 * time.Millisecond)
	check("the refresh after it")
}

// TestDynamicTableReplaceAndDrop: CREATE OR REPLACE moves a dynamic table
// between a summary, a table of rows and a query refreshed FULL, each right
// from its first refresh on; DROP leaves nothing of it in ClickHouse.
func TestDynamicTableReplaceAndDrop(t *testing.T) {
	s := newStack(t)
	s.withWorker()
	s.run(`CREATE TABLE clicks (page STRING, ms INT)`)
	s.run(`ALTER TABLE clicks SET PROPERTIES ('change_tracking' = 'true')`)
	s.run(`INSERT INTO clicks VALUES ('a', 5), ('b', 7)`)
	for i, c := range []struct{ query, mode string }{
		{`SELECT page, SUM(ms) AS total FROM clicks GROUP BY page`, "INCREMENTAL"},
		{`SELECT page, ms FROM clicks WHERE ms > 4`, "INCREMENTAL"},
		{`SELECT page, ms FROM clicks ORDER BY ms LIMIT 2`, "FULL"},
		{`SELECT page, COUNT(*) AS n FROM clicks GROUP BY page`, "INCREMENTAL"},
	} {
		s.run(`CREATE OR REPLACE DYNAMIC TABLE dt REFRESH INTERVAL 1 HOUR AS ` + c.query)
		s.run(fmt.Sprintf(`INSERT INTO clicks VALUES ('c', %d)`, 10+i))
		time.Sleep(2100 * time.Millisecond) // changes are readable 2 s after their commit
		checkMessage(t, s.run(`REFRESH DYNAMIC TABLE dt`).Message, c.mode)
		if got, want := rowsText(s.run(`SELECT * FROM dt ORDER BY 1, 2`)), rowsText(s.run(`SELECT * FROM (`+c.query+`) ORDER BY 1, 2`)); got != want {
			t.Fatalf("%s: the dynamic table\n%s\nwant\n%s", c.query, indent(got), indent(want))
		}
		state, err := s.Store.Strings(s.Ctx, "SELECT count() FROM system.tables WHERE database = "+chsql.QuoteString(schemas.ChangesDB)+" AND name = "+chsql.QuoteString("dt__"+s.Schema+"__dt"))
		must(t, err)
		if want := map[string]string{"INCREMENTAL": "1", "FULL": "0"}[c.mode]; state[0] != want {
			t.Fatalf("%s: %s state tables, want %s", c.query, state[0], want)
		}
		// The history is this table's: the replaced ones' rows are not.
		h := s.run(`SHOW DYNAMIC TABLE REFRESH HISTORY WHERE name = 'dt'`)
		var triggers []string
		for _, r := range table(h) {
			triggers = append(triggers, r[column(t, h, "trigger")]+"/"+r[column(t, h, "refresh_mode")])
		}
		if want := []string{"MANUAL/" + c.mode, "CREATE/FULL"}; !slices.Equal(triggers, want) {
			t.Fatalf("%s: refresh history %v, want %v", c.query, triggers, want)
		}
	}
	s.run(`DROP DYNAMIC TABLE dt`)
	// With no table of the name, the history of every one that had it.
	if h := table(s.run(`SHOW DYNAMIC TABLE REFRESH HISTORY WHERE name = 'dt'`)); len(h) != 8 {
		t.Fatalf("after DROP DYNAMIC TABLE, %d history rows, want the 8 of the four tables", len(h))
	}
	left, err := s.Store.Strings(s.Ctx, "SELECT concat(database, '.', name) FROM system.tables WHERE (database = "+chsql.QuoteString(s.Schema)+" AND name LIKE 'dt%') OR (database = "+
		chsql.QuoteString(schemas.ChangesDB)+" AND name LIKE "+chsql.QuoteString("dt\\_\\_"+s.Schema+"\\_\\_dt%")+")")
	must(t, err)
	if len(left) != 0 {
		t.Fatalf("after DROP DYNAMIC TABLE these remain: %v", left)
	}
}

// TestDynamicTableSourceRecreated: a summary whose source table was
// dropped and created again sums the new table only: the state built from
// the old one is rebuilt.
func TestDynamicTableSourceRecreated(t *testing.T) {
	s := newStack(t)
	s.withWorker()
	query := `SELECT site, COUNT(*) AS n FROM visits GROUP BY site`
	check := func(mode string) { t.Helper(); s.refreshPerSite(query, mode) }
	s.run(`CREATE TABLE visits (site STRING)`)
	s.run(`ALTER TABLE visits SET PROPERTIES ('change_tracking' = 'true')`)
	s.run(`INSERT INTO visits VALUES ('a'), ('b')`)
	s.run(`CREATE DYNAMIC TABLE per_site REFRESH INTERVAL 1 HOUR AS ` + query)
	s.dropAtEnd("DYNAMIC TABLE", "per_site")
	s.run(`INSERT INTO visits VALUES ('a')`)
	check("INCREMENTAL")
	s.run(`DROP TABLE visits`)
	s.run(`CREATE TABLE visits (site STRING)`)
	s.run(`ALTER TABLE visits SET PROPERTIES ('change_tracking' = 'true')`)
	s.run(`INSERT INTO visits VALUES ('z')`)
	check("FULL")
	s.run(`INSERT INTO visits VALUES ('z'), ('a')`)
	check("INCREMENTAL")
}
