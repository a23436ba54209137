package dynamic

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lakepipe/lakepipe/internal/golden"
	"github.com/lakepipe/lakepipe/internal/sqlast"

	"github.com/lakepipe/lakepipe/internal/catalog"
	"github.com/lakepipe/lakepipe/internal/catalog/catalogtest"
	"github.com/lakepipe/lakepipe/internal/changes"
	"github.com/lakepipe/lakepipe/internal/chsql"
	"github.com/lakepipe/lakepipe/internal/chstore"
	"github.com/lakepipe/lakepipe/internal/core"
	"github.com/lakepipe/lakepipe/internal/sqlparse"
	"github.com/lakepipe/lakepipe/schemas"
)

// With -update (package golden) the test rewrites the golden files instead
// of comparing with them:
//
//	go test ./internal/dynamic -run Golden -update
//
// Review the diff it makes: the files are claims about what a refresh
// sends ClickHouse, and a wrong statement enshrined there hides a bug.

// The fixed values the rendered SQL depends on.
const (
	goldenSchema = "public"
	goldenName   = "dyn" // the dynamic table of every case
	// goldenHi is the read horizon of the refresh rendered (what
	// changes.ChangeReadHorizon would give).
	goldenHi uint64 = 1750000000000000000
	// goldenUpto is the version the state brings the table to before
	// that refresh (DynamicTableSpec.ChangeVersion).
	goldenUpto uint64 = 1749990000000000000
	// goldenSpecVersion is the catalog version of the dynamic table's spec.
	goldenSpecVersion uint64 = 500
	// goldenLoadID stands for the random suffixes (core.NewLoadID) of the
	// tables a FULL refresh builds before swapping them in.
	goldenLoadID = "LOADID"
)

// goldenObjects are the catalog the cases are planned against: tables that
// track changes (sales, returns, other.events), dimension tables that do
// (customers, products) or do not (rates), a table that does not track
// changes (legacy), and a dynamic table (daily).
func goldenObjects(t *testing.T) []catalog.Object {
	tracked := map[string]string{"change_tracking": "true"}
	day := 0
	table := func(schema, name string, version uint64, props map[string]string, cols ...string) catalog.Object {
		day++
		spec := catalog.TableSpec{Properties: props, CreatedAt: time.Date(2025, 3, day, 0, 0, 0, 0, time.UTC), SchemaVersion: 1}
		for _, c := range cols {
			n, typ, _ := strings.Cut(c, " ")
			spec.Columns = append(spec.Columns, catalog.ColumnSpec{Name: n, Type: typ, CHType: typ})
		}
		return catalogtest.Object(t, catalog.KindTable, schema, name, version, spec)
	}
	return []catalog.Object{
		table("public", "sales", 101, tracked, "id Int64", "region Nullable(String)", "customer_id Int64", "product_id Int64",
			"amount Nullable(Decimal(10, 2))", "qty Int32", "ts DateTime"),
		table("public", "returns", 102, tracked, "id Int64", "region Nullable(String)", "customer_id Int64", "amount Nullable(Decimal(10, 2))", "ts DateTime"),
		table("public", "customers", 103, tracked, "id Int64", "name String", "country Nullable(String)"),
		table("public", "products", 104, tracked, "id Int64", "category String"),
		table("public", "legacy", 105, nil, "id Int64", "region Nullable(String)", "amount Nullable(Decimal(10, 2))"),
		table("public", "rates", 106, map[string]string{"change_tracking": "false"}, "country String", "rate Float64"),
		table("other", "events", 107, tracked, "id Int64", "kind String", "value Float64"),
		catalogtest.Object(t, catalog.KindDynamicTable, "public", "daily", 108, catalog.DynamicTableSpec{
			Query: "SELECT region, SUM(amount) AS total FROM sales GROUP BY region", Interval: "1 HOUR", IntervalSeconds: 3600,
			Sources: []string{"public.sales"}, CreatedAt: time.Date(2025, 3, 20, 0, 0, 0, 0, time.UTC)}),
	}
}

// planCase is one dynamic table of TestPlanGolden. The part of its name
// before the slash names its golden file (testdata/<part>.golden).
type planCase struct {
	name, sql string
	// cols are an append plan's state columns: a refresh asks ClickHouse
	// for them (appendColumns) once the state is built; here they are
	// what ClickHouse would name the query's columns.
	cols []string
	// cluster renders the plan as made in cluster mode, where
	// Core.GlobalIn gives GLOBAL IN (a store cannot be in cluster mode
	// without a server, so the test sets the plan's in itself).
	cluster bool
}

var planCases = []planCase{
	// GROUP BY summaries of one change-tracked table.
	{name: "aggregate/count-star", sql: "SELECT region, COUNT(*) AS n FROM sales GROUP BY region"},
	{name: "aggregate/count-column", sql: "SELECT region, COUNT(amount) AS priced FROM sales GROUP BY region"},
	{name: "aggregate/sum-and-avg-share-a-guard", sql: "SELECT region, SUM(amount) AS total, AVG(amount) AS mean FROM sales GROUP BY region"},
	{name: "aggregate/min-max", sql: "SELECT region, MIN(amount) AS lo, MAX(ts) AS latest FROM sales GROUP BY region"},
	{name: "aggregate/avg-integer", sql: "SELECT region, AVG(qty) AS mean_qty FROM sales GROUP BY region"},
	{name: "aggregate/count-distinct", sql: "SELECT region, COUNT(DISTINCT customer_id) AS buyers FROM sales GROUP BY region"},
	{name: "aggregate/all-aggregates", sql: "SELECT region, COUNT(*) AS n, COUNT(amount) AS priced, SUM(amount) AS total, AVG(amount) AS mean, " +
		"MIN(amount) AS lo, MAX(amount) AS hi, COUNT(DISTINCT customer_id) AS buyers, SUM(qty) AS units FROM sales GROUP BY region"},
	{name: "aggregate/expression-argument", sql: "SELECT region, SUM(amount * qty) AS revenue FROM sales GROUP BY region"},
	{name: "aggregate/keys-reordered-and-aliased", sql: "SELECT SUM(amount) AS total, customer_id AS buyer, region FROM sales GROUP BY region, customer_id"},
	{name: "aggregate/key-selected-twice", sql: "SELECT region, region AS r2, COUNT(*) AS n FROM sales GROUP BY region"},
	{name: "aggregate/group-by-only", sql: "SELECT region FROM sales GROUP BY region"},
	{name: "aggregate/where", sql: "SELECT region, SUM(amount) AS total FROM sales WHERE amount > 0 AND region <> 'test' GROUP BY region"},
	{name: "aggregate/table-alias", sql: "SELECT s.region, COUNT(*) AS n FROM sales s WHERE s.amount > 0 GROUP BY s.region"},
	{name: "aggregate/table-name-qualified", sql: "SELECT sales.region, COUNT(*) AS n FROM sales WHERE sales.qty > 0 GROUP BY sales.region"},
	{name: "aggregate/other-schema", sql: "SELECT kind, SUM(value) AS total FROM other.events GROUP BY kind"},
	{name: "aggregate/three-part-name", sql: "SELECT kind, COUNT(*) AS n FROM ws.other.events GROUP BY kind"},
	{name: "aggregate/inner-join-dimension", sql: "SELECT c.country, SUM(s.amount) AS total FROM sales s JOIN customers c ON s.customer_id = c.id GROUP BY c.country"},
	{name: "aggregate/left-join-dimension-where", sql: "SELECT c.country, COUNT(*) AS n, MAX(s.amount) AS top FROM sales s LEFT JOIN customers c ON s.customer_id = c.id " +
		"WHERE s.qty > 1 GROUP BY c.country"},
	{name: "aggregate/two-dimensions", sql: "SELECT c.country, p.category, SUM(s.amount) AS total FROM sales s JOIN customers c ON s.customer_id = c.id " +
		"JOIN products p ON s.product_id = p.id GROUP BY c.country, p.category"},
	{name: "aggregate/cluster-mode", sql: "SELECT c.country, SUM(s.amount) AS total FROM sales s JOIN customers c ON s.customer_id = c.id GROUP BY c.country", cluster: true},

	// Rows of change-tracked tables: projections, filters, joins with
	// dimension tables, UNION ALL.
	{name: "append/projection", sql: "SELECT id, amount FROM sales", cols: []string{"id", "amount"}},
	{name: "append/star", sql: "SELECT * FROM sales", cols: []string{"id", "region", "customer_id", "product_id", "amount", "qty", "ts"}},
	{name: "append/filter-and-functions", sql: "SELECT id, UPPER(region) AS region, ROUND(amount) AS amt, toDate(ts) AS day FROM sales WHERE amount > 100 AND region IS NOT NULL",
		cols: []string{"id", "region", "amt", "day"}},
	{name: "append/in-list", sql: "SELECT id, region FROM sales WHERE region IN ('eu', 'us')", cols: []string{"id", "region"}},
	{name: "append/table-alias", sql: "SELECT s.id, s.amount FROM sales AS s WHERE s.qty > 0", cols: []string{"id", "amount"}},
	{name: "append/qualified-star-join", sql: "SELECT s.*, c.name FROM sales s JOIN customers c ON s.customer_id = c.id",
		cols: []string{"id", "region", "customer_id", "product_id", "amount", "qty", "ts", "name"}},
	{name: "append/inner-join-dimension", sql: "SELECT s.id, s.amount, c.name FROM sales s JOIN customers c ON s.customer_id = c.id",
		cols: []string{"id", "amount", "name"}},
	{name: "append/left-join-dimension", sql: "SELECT s.id, c.country FROM sales s LEFT JOIN customers c ON s.customer_id = c.id WHERE s.amount > 0",
		cols: []string{"id", "country"}},
	{name: "append/two-dimensions", sql: "SELECT s.id, c.name, p.category FROM sales s JOIN customers c ON s.customer_id = c.id LEFT JOIN products p ON s.product_id = p.id",
		cols: []string{"id", "name", "category"}},
	{name: "append/union-all", sql: "SELECT id, amount FROM sales UNION ALL SELECT id, -amount FROM returns", cols: []string{"id", "amount"}},
	{name: "append/union-all-same-table", sql: "SELECT id, 'big' AS size FROM sales WHERE amount >= 100 UNION ALL SELECT id, 'small' AS size FROM sales WHERE amount < 100",
		cols: []string{"id", "size"}},
	{name: "append/union-all-with-joins", sql: "SELECT s.id, c.name FROM sales s JOIN customers c ON s.customer_id = c.id " +
		"UNION ALL SELECT r.id, c.name FROM returns r JOIN customers c ON r.customer_id = c.id", cols: []string{"id", "name"}},
	{name: "append/cluster-mode", sql: "SELECT s.id, c.name FROM sales s JOIN customers c ON s.customer_id = c.id", cols: []string{"id", "name"}, cluster: true},

	// Queries refreshed FULL, with the planner's reason.
	{name: "refused/order-by", sql: "SELECT id, amount FROM sales ORDER BY id"},
	{name: "refused/limit", sql: "SELECT id, amount FROM sales LIMIT 10"},
	{name: "refused/with", sql: "WITH big AS (SELECT id FROM sales WHERE amount > 100) SELECT id FROM big"},
	{name: "refused/with-shadowing-a-table", sql: "WITH sales AS (SELECT id FROM returns WHERE amount > 100) SELECT id FROM sales"},
	{name: "refused/window-function", sql: "SELECT id, ROW_NUMBER() OVER (PARTITION BY region ORDER BY ts) AS rn FROM sales"},
	{name: "refused/window-aggregate", sql: "SELECT id, SUM(amount) OVER (PARTITION BY region) AS running FROM sales"},
	{name: "refused/window-aggregate-grouped", sql: "SELECT region, SUM(amount) OVER (PARTITION BY region) AS w FROM sales GROUP BY region"},
	{name: "refused/time-function", sql: "SELECT id, NOW() AS seen FROM sales"},
	{name: "refused/unknown-function", sql: "SELECT id, rand() AS r FROM sales"},
	{name: "refused/distinct", sql: "SELECT DISTINCT region FROM sales"},
	{name: "refused/having", sql: "SELECT region, COUNT(*) AS n FROM sales GROUP BY region HAVING COUNT(*) > 1"},
	{name: "refused/aggregate-without-group-by", sql: "SELECT COUNT(*) AS n FROM sales"},
	{name: "refused/group-by-expression", sql: "SELECT toDate(ts) AS day, COUNT(*) AS n FROM sales GROUP BY toDate(ts)"},
	{name: "refused/expression-over-aggregates", sql: "SELECT region, SUM(amount) / COUNT(*) AS mean FROM sales GROUP BY region"},
	{name: "refused/unnamed-aggregate", sql: "SELECT region, COUNT(*) FROM sales GROUP BY region"},
	{name: "refused/unsupported-aggregate", sql: "SELECT region, MEDIAN(amount) AS m FROM sales GROUP BY region"},
	{name: "refused/ungrouped-column", sql: "SELECT region, customer_id, COUNT(*) AS n FROM sales GROUP BY region"},
	{name: "refused/group-column-not-selected", sql: "SELECT COUNT(*) AS n FROM sales GROUP BY region"},
	{name: "refused/qualified-key-unqualified-group", sql: "SELECT s.region, COUNT(*) AS n FROM sales s GROUP BY region"},
	// Over another dynamic table (daily, a summary of sales): planned as
	// daily's query, the outer query applied in the view.
	{name: "chain/filter-over-summary", sql: "SELECT region, total FROM daily WHERE total > 100"},
	{name: "chain/summary-over-summary", sql: "SELECT region, SUM(total) AS total FROM daily GROUP BY region"},
	{name: "chain/aggregate-over-summary", sql: "SELECT COUNT(*) AS regions, MAX(total) AS top FROM daily"},
	{name: "refused/star-in-summary", sql: "SELECT *, COUNT(*) AS n FROM sales GROUP BY region"},
	{name: "refused/where-subquery", sql: "SELECT region, COUNT(*) AS n FROM sales WHERE customer_id IN (SELECT id FROM customers) GROUP BY region"},
	{name: "refused/append-where-subquery", sql: "SELECT id FROM sales WHERE customer_id IN (SELECT id FROM customers)"},
	{name: "refused/untracked-source", sql: "SELECT region, SUM(amount) AS total FROM legacy GROUP BY region"},
	{name: "refused/untracked-source-append", sql: "SELECT id, amount FROM legacy"},
	{name: "refused/untracked-source-and-order-by", sql: "SELECT id, amount FROM legacy ORDER BY id"},
	{name: "refused/untracked-dimension", sql: "SELECT s.id, r.rate FROM sales s JOIN customers c ON s.customer_id = c.id JOIN rates r ON c.country = r.country"},
	{name: "refused/dynamic-table-dimension", sql: "SELECT s.id, d.total FROM sales s JOIN daily d ON s.region = d.region"},
	{name: "refused/right-join", sql: "SELECT s.id, c.name FROM sales s RIGHT JOIN customers c ON s.customer_id = c.id"},
	{name: "refused/full-join", sql: "SELECT c.country, COUNT(*) AS n FROM sales s FULL JOIN customers c ON s.customer_id = c.id GROUP BY c.country"},
	{name: "refused/comma-join", sql: "SELECT s.id, c.name FROM sales s, customers c WHERE s.customer_id = c.id"},
	{name: "refused/subquery-in-from", sql: "SELECT id FROM (SELECT id, amount FROM sales) x WHERE amount > 0"},
	{name: "refused/join-subquery", sql: "SELECT s.id, c.name FROM sales s JOIN (SELECT id, name FROM customers) c ON s.customer_id = c.id"},
	{name: "refused/same-table-twice", sql: "SELECT a.id, b.id AS other FROM sales a JOIN sales b ON a.customer_id = b.customer_id"},
	{name: "refused/source-and-dimension-across-union", sql: "SELECT id, region FROM customers c2 JOIN sales s ON c2.id = s.customer_id " +
		"UNION ALL SELECT id, region FROM sales"},
	{name: "refused/union", sql: "SELECT id FROM sales UNION SELECT id FROM returns"},
	{name: "refused/except", sql: "SELECT id FROM sales EXCEPT SELECT id FROM returns"},
}

// knownWrong marks the cases whose output is today's and wrong, with
// why: the golden files keep them (a fix shows as a diff there) but say so.
var knownWrong = map[string]string{}

// goldenRefresher is a Refresher over an in-memory catalog holding
// goldenObjects and a store that is not connected: planning and rendering
// must not send ClickHouse anything (a statement would panic).
func goldenRefresher(t *testing.T) *Refresher {
	r := &Refresher{Plans: &PlanCache{}}
	r.Cfg = core.Config{Workspace: "ws", Schema: goldenSchema}
	r.Cat = catalogtest.New(t, goldenObjects(t)...)
	r.St = &chstore.Store{}
	return r
}

// renderPlan is what TestPlanGolden records of a case: the plan or the
// reason there is none, and the SQL of its refreshes.
func renderPlan(t *testing.T, r *Refresher, c planCase) string {
	t.Helper()
	ctx := context.Background()
	var b strings.Builder
	line := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	sql := func(label string, stmts ...string) {
		line("%s:", label)
		for _, s := range stmts {
			checkSQL(t, c.name, s)
			line("  %s", s)
		}
	}

	// As CREATE DYNAMIC TABLE stores it, and refreshes read it.
	q, err := sqlparse.ParseQuery(c.sql)
	if err != nil {
		t.Fatalf("%s: parse: %v", c.name, err)
	}
	spec := catalog.DynamicTableSpec{Query: sqlast.FormatQuery(q), Interval: "1 MINUTE", IntervalSeconds: 60,
		Sources: r.sourceTables(q), CreatedAt: time.Date(2025, 4, 1, 0, 0, 0, 0, time.UTC)}
	if spec.Query != c.sql {
		line("stored as: %s", spec.Query)
	}
	line("sources: %s", strings.Join(spec.Sources, ", "))

	plan, why := r.incrementalPlan(ctx, spec)
	if plan == nil {
		if len(c.cols) > 0 || c.cluster {
			t.Fatalf("%s: cols or cluster given for a query that is not planned", c.name)
		}
		line("plan: none, every refresh is FULL: %s", why)
		stored, err := sqlparse.ParseQuery(spec.Query)
		if err != nil {
			t.Fatalf("%s: parse the stored query: %v", c.name, err)
		}
		if _, planner := r.planIncremental(ctx, stored); planner != why {
			line("planner's reason: %s", planner)
		}
		// fullRefresh: the query translated, swapped in (swapIn).
		sess := r.WithSchema(goldenSchema).Session(ctx)
		defer sess.Close()
		text, err := sess.Translate(stored)
		if err != nil {
			line("FULL refresh fails: %v", err)
			return b.String()
		}
		sql("FULL refresh (fullRefresh's query, swapIn's CREATE TABLE … ENGINE = MergeTree ORDER BY tuple() AS it)", text)
		return b.String()
	}

	kind := "aggregate (GROUP BY summary)"
	if plan.appendRows {
		kind = "append (rows of changing tables)"
		if len(c.cols) == 0 {
			t.Fatalf("%s: an append plan needs the state's columns (cols)", c.name)
		}
		plan.cols = c.cols
	} else if len(c.cols) > 0 {
		t.Fatalf("%s: cols given for an aggregate plan", c.name)
	}
	if c.cluster {
		plan.in = " GLOBAL IN "
		line("cluster mode: the test makes the plan's IN a GLOBAL IN, as Core.GlobalIn does on a cluster")
	}
	line("plan: INCREMENTAL, %s", kind)
	names := func(srcs []incSource) string {
		var out []string
		for _, s := range srcs {
			out = append(out, fmt.Sprintf("%s (catalog version %d)", core.Display(s.schema, s.table), s.version))
		}
		if len(out) == 0 {
			return "none"
		}
		return strings.Join(out, ", ")
	}
	line("changing tables: %s", names(plan.sources))
	line("dimension tables: %s", names(plan.dims))
	line("state of: %s", plan.stateOf())
	mode, reason := r.refreshModeOf(ctx, spec)
	line("first refresh: %s: %s", mode, reason)
	later := spec
	later.ChangeVersion, later.StateOf = goldenUpto, plan.stateOf()
	mode, reason = r.refreshModeOf(ctx, later)
	line("later refreshes: %s: %s", mode, reason)

	state := chsql.Table(schemas.ChangesDB, stateTable(goldenSchema, goldenName))
	fresh := chsql.Table(schemas.ChangesDB, stateTable(goldenSchema, goldenName)+"__new_"+goldenLoadID)
	sql(fmt.Sprintf("FULL refresh up to %d (incrementalFull: the state built afresh, then renamed %s)", goldenHi, state),
		plan.stateDDL(fresh, goldenHi)...)
	sql(fmt.Sprintf("the dynamic table %s (incrementalFull's CREATE VIEW … AS)", chsql.Table(goldenSchema, goldenName)), plan.viewSelect(state))
	// The change log after the state's version (goldenUpto): an INSERT
	// and an UPDATE up to the horizon, a DELETE after it.
	w := &changeWindow{from: goldenUpto, commits: make([][]changes.CommitRef, len(plan.read()))}
	w.commits[0] = []changes.CommitRef{{Version: goldenUpto + 1, ID: 11, Kind: changes.CommitInsert},
		{Version: goldenUpto + 2, ID: 12, Kind: changes.CommitUpdate}, {Version: goldenHi + 1, ID: 13, Kind: changes.CommitDelete}}
	done := deltaDone{}
	if plan.appendRows {
		var fn *fullNeeded
		plan.cols = []string{"c1", "c2"} // what appendColumns reads from the state
		if len(plan.dims) > 0 {
			// And an UPDATE (21) of the first dimension table.
			w.commits[len(plan.sources)] = []changes.CommitRef{{Version: goldenUpto + 3, ID: 21, Kind: changes.CommitUpdate}}
		}
		st, err := plan.appendDelta(state, w, goldenHi, nil)
		switch {
		case errors.As(err, &fn):
			line("INCREMENTAL refresh after an INSERT, an UPDATE and a later DELETE: FULL: %s", fn.reason)
		case err != nil:
			t.Fatalf("%s: %v", c.name, err)
		default:
			sql(fmt.Sprintf("INCREMENTAL refresh up to %d after an INSERT (commit 11), an UPDATE (12) and, after %d, a DELETE (13), and an UPDATE of the first dimension table (21) if any (appendDelta; the state's columns taken as c1, c2)", goldenHi, goldenHi), st.insert)
			sql("rows it takes back, counted before it runs", st.deleted)
			done.touched, done.deleted = st.touched, 1
		}
	} else {
		st, err := plan.summaryDelta(state, stateTable(goldenSchema, goldenName)+"__new_"+goldenLoadID, w, goldenHi, nil)
		var fn *fullNeeded
		what := fmt.Sprintf("INCREMENTAL refresh up to %d after an INSERT (commit 11), an UPDATE (12) and, after %d, a DELETE (13) (summaryDelta)", goldenHi, goldenHi)
		switch {
		case errors.As(err, &fn):
			line("INCREMENTAL refresh after an INSERT, an UPDATE and a later DELETE: FULL: %s", fn.reason)
		case err != nil:
			t.Fatalf("%s: %v", c.name, err)
		case st.insert != "":
			sql(what, st.insert)
			done.touched = st.touched
		default:
			sql(what+": the groups the UPDATE touched recomputed (regroup, then the state renamed)", st.regroup...)
		}
	}
	line("its reason: %s", plan.deltaReason(done))
	sql("rows it wrote (touched)", done.rows(plan, state, goldenHi))
	checks := append([]string{catalog.VersionCheck(catalog.KindDynamicTable, goldenSchema, goldenName, goldenSpecVersion)}, plan.versionChecks()...)
	sql(fmt.Sprintf("a refresh by the cached plan (refreshCached, dynamic table's spec at version %d) adds to its conditions", goldenSpecVersion), checks...)
	return b.String()
}

// checkSQL fails a case whose statement still holds a delta token or has
// unbalanced parentheses outside string literals: text no server would run.
func checkSQL(t *testing.T, name, s string) {
	t.Helper()
	if strings.Contains(s, "\x00") {
		t.Errorf("%s: a delta token was left in: %q", name, s)
	}
	depth, quoted := 0, false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case quoted && c == '\\':
			i++
		case c == '\'':
			quoted = !quoted
		case quoted:
		case c == '(':
			depth++
		case c == ')':
			depth--
		}
		if depth < 0 {
			break
		}
	}
	if depth != 0 || quoted {
		t.Errorf("%s: unbalanced parentheses or quotes: %s", name, s)
	}
}

const planGoldenHeader = `# Golden SQL of the refreshes of dynamic tables, written by
# TestPlanGolden (internal/dynamic/golden_test.go) from the planner's plans
# over the catalog of goldenObjects. Regenerate with
#   go test ./internal/dynamic -run Golden -update
# and review the diff by eye: every block claims what a refresh of the
# query sends ClickHouse (or why the query is refreshed FULL). Versions are
# fixed: the refresh reads up to %d, random table suffixes are %s.
# Blocks marked KNOWN WRONG record today's output of a bug still to fix.
`

// planGoldenBlock renders one case of a golden file.
func planGoldenBlock(c planCase, out string) string {
	sep := "---"
	if why := knownWrong[c.name]; why != "" {
		sep += " KNOWN WRONG: " + why
	}
	return "\n=== " + c.name + "\n" + c.sql + "\n" + sep + "\n" + out
}

// parsePlanGolden splits a golden file into its cases' outputs by name;
// it is only used to point at the cases that differ.
func parsePlanGolden(text string) map[string]string {
	out := map[string]string{}
	for _, block := range strings.Split(text, "\n=== ")[1:] {
		name, rest, _ := strings.Cut(block, "\n")
		_, res, _ := strings.Cut(rest, "\n---")
		_, res, _ = strings.Cut(res, "\n") // past a KNOWN WRONG note
		out[name] = res
	}
	return out
}

func TestPlanGolden(t *testing.T) {
	r := goldenRefresher(t)
	files := map[string]*strings.Builder{}
	var order []string
	got := map[string]string{}
	for _, c := range planCases {
		file, _, ok := strings.Cut(c.name, "/")
		if !ok || strings.ContainsAny(c.name, "\n ") || strings.Contains(c.sql, "\n") {
			t.Fatalf("case %q: its name must be file/case, without spaces, and its SQL one line", c.name)
		}
		if _, dup := got[c.name]; dup {
			t.Fatalf("case %s is listed twice", c.name)
		}
		if files[file] == nil {
			files[file] = &strings.Builder{}
			fmt.Fprintf(files[file], planGoldenHeader, goldenHi, goldenLoadID)
			order = append(order, file)
		}
		got[c.name] = renderPlan(t, r, c)
		files[file].WriteString(planGoldenBlock(c, got[c.name]))
	}
	for name := range knownWrong {
		if _, ok := got[name]; !ok {
			t.Fatalf("knownWrong lists %s, which is not a case", name)
		}
	}
	for _, file := range order {
		path := filepath.Join("testdata", file+".golden")
		text := files[file].String()
		fileGot := map[string]string{}
		for _, c := range planCases {
			if strings.HasPrefix(c.name, file+"/") {
				fileGot[c.name] = got[c.name]
			}
		}
		golden.Check(t, golden.File{Path: path, Text: text, Got: fileGot, Parse: parsePlanGolden,
			Update: "go test ./internal/dynamic -run Golden -update"})
	}
	// A golden file of no case is left over from cases since removed.
	stale, _ := filepath.Glob(filepath.Join("testdata", "*.golden"))
	for _, path := range stale {
		if !slices.Contains(order, strings.TrimSuffix(filepath.Base(path), ".golden")) {
			t.Errorf("%s holds no case of TestPlanGolden any more: remove it", path)
		}
	}
}
