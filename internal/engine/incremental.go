package engine

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/lakepipe/lakepipe/internal/catalog"
	"github.com/lakepipe/lakepipe/internal/chsql"
	"github.com/lakepipe/lakepipe/internal/chstore"
	"github.com/lakepipe/lakepipe/internal/sqlparse"
	"github.com/lakepipe/lakepipe/schemas"
)

// Incremental refresh of GROUP BY summaries.
//
// A dynamic table `SELECT k…, AGG(x) AS a… FROM t [WHERE …] GROUP BY k…`
// over a change-tracked table t is a view of its state table
// (lakepipe_changes.dt__<schema>__<name>): ClickHouse -State values per
// group plus _lp_upto, maxState of the change-log versions the state's
// rows bring it to, in an AggregatingMergeTree keyed by the groups (its
// background merges fold each group's rows into one). The view merges the
// states of each group (-Merge … GROUP BY).
//
// A refresh whose source has only new rows since the last one is one
// INSERT into the state (incrementalDelta): the partial aggregates of the
// rows of the INSERT commits above the state's version (found through t's
// primary index: work follows the changes), up to the read horizon hi,
// tagged hi. It is written as one part, so the aggregates and the version
// appear together, to readers too: the INSERT is the commit, and running
// it again adds nothing. A DELETE or UPDATE commit in that range fails it
// (throwIf) and the refresh rebuilds the state from every committed row
// up to hi (FULL, incrementalFull), as does a first refresh. Either way
// the state holds exactly the rows of commits up to its version: the rows
// present when change tracking was turned on (the BASELINE commits) and
// every INSERT commit registered since.
//
// Refreshes of one table must not overlap (two from the same version
// would both add the same rows): the refresh workflows run them one at a
// time (workflows.RefreshWorkflowID).

// incAgg is one aggregate of an incremental summary.
type incAgg struct {
	fn    string // ClickHouse aggregate: count, sum, min, max, avg, uniqExact
	arg   string // translated argument; "" for COUNT(*)
	alias string
}

// incPlan is a summary query reduced to what incremental refresh needs.
type incPlan struct {
	schema, table string
	srcVersion    uint64   // catalog version of the source's spec it was made from
	in            string   // " IN " or, in cluster mode, " GLOBAL IN "
	where         string   // translated, "" for none
	keys          []string // translated group keys
	keyNames      []string // their column names in the dynamic table
	aggs          []incAgg
	order         []int // per select item: key index, or -(agg index)-1
}

// planIncremental analyses a dynamic table's query; reason says why it
// cannot be refreshed incrementally when the plan is nil.
func (e *Engine) planIncremental(ctx context.Context, q *sqlparse.Query) (*incPlan, string) {
	sel, ok := q.Body.(*sqlparse.Select)
	if !ok || len(q.With) > 0 || q.OrderBy != nil || q.Limit != nil {
		return nil, "only a single SELECT … GROUP BY (no UNION, WITH, ORDER BY or LIMIT) is refreshed incrementally in this release"
	}
	if len(sel.From) != 1 || sel.Having != nil || sel.Distinct || len(sel.GroupBy) == 0 {
		return nil, "only GROUP BY summaries of one table (no JOIN, HAVING or DISTINCT) are refreshed incrementally in this release"
	}
	tn, ok := sel.From[0].(*sqlparse.TableName)
	if !ok {
		return nil, "the query reads a subquery or a table function"
	}
	schema, table, err := e.qualify(tn.Name)
	if err != nil {
		return nil, err.Error()
	}
	// Read afresh, with its version: refreshes by a cached plan check it.
	var tspec catalog.TableSpec
	e.cat.Forget(catalog.KindTable, schema, table)
	srcVersion, ok, err := e.cat.GetCached(ctx, catalog.KindTable, schema, table, &tspec)
	if err != nil || !ok {
		return nil, "its source is not a table lakepipe keeps (a dynamic table or a stream)"
	}
	if !tracked(tspec) {
		return nil, "source " + display(schema, table) + " does not track changes (ALTER TABLE " + table + " SET PROPERTIES ('change_tracking' = 'true'))"
	}
	sess := e.WithSchema(schema).session(ctx)
	defer sess.close()
	p := &incPlan{schema: schema, table: table, srcVersion: srcVersion, in: e.globalIn()}
	if sel.Where != nil {
		if containsQuery(sel.Where) {
			return nil, "its WHERE has a subquery"
		}
		if p.where, err = sess.tr.Expr(sel.Where); err != nil {
			return nil, err.Error()
		}
	}
	for _, g := range sel.GroupBy {
		c, ok := g.(*sqlparse.ColumnRef)
		if !ok {
			return nil, "it groups by an expression (GROUP BY plain columns is refreshed incrementally)"
		}
		k, err := sess.tr.Expr(c)
		if err != nil {
			return nil, err.Error()
		}
		p.keys = append(p.keys, k)
		p.keyNames = append(p.keyNames, "")
	}
	for _, it := range sel.Items {
		if it.Star {
			return nil, "it selects *"
		}
		if c, ok := it.Expr.(*sqlparse.ColumnRef); ok {
			k, _ := sess.tr.Expr(c)
			idx := -1
			for i, key := range p.keys {
				if key == k {
					idx = i
				}
			}
			if idx < 0 {
				return nil, "it selects a column that is not grouped"
			}
			name := it.Alias
			if name == "" {
				name = c.Parts[len(c.Parts)-1]
			}
			p.keyNames[idx] = name
			p.order = append(p.order, idx)
			continue
		}
		f, ok := it.Expr.(*sqlparse.FuncCall)
		if !ok || f.Over != nil {
			return nil, "a SELECT item is an expression over aggregates (select the aggregates themselves to refresh incrementally)"
		}
		if it.Alias == "" {
			return nil, "an aggregate has no name (write AS name to refresh incrementally)"
		}
		a := incAgg{alias: it.Alias}
		switch {
		case f.Name == "count" && f.Star:
			a.fn = "count"
		case f.Name == "count" && f.Distinct && len(f.Args) == 1:
			a.fn = "uniqExact"
		case !f.Distinct && len(f.Args) == 1 && (f.Name == "count" || f.Name == "sum" || f.Name == "min" || f.Name == "max" || f.Name == "avg"):
			a.fn = f.Name
		default:
			return nil, "aggregate " + strings.ToUpper(f.Name) + " is not maintained incrementally (COUNT, SUM, MIN, MAX, AVG and COUNT(DISTINCT) are)"
		}
		if !f.Star {
			if a.arg, err = sess.tr.Expr(f.Args[0]); err != nil {
				return nil, err.Error()
			}
		}
		p.aggs = append(p.aggs, a)
		p.order = append(p.order, -len(p.aggs))
	}
	for i, n := range p.keyNames {
		if n == "" {
			p.keyNames[i] = fmt.Sprintf("__lp_key%d", i)
			return nil, "a GROUP BY column is not selected"
		}
	}
	return p, ""
}

func containsQuery(x sqlparse.Expr) bool {
	found := false
	sqlparse.Inspect(x, func(n any) bool {
		switch n.(type) {
		case *sqlparse.SubqueryExpr, *sqlparse.ExistsExpr:
			found = true
		case *sqlparse.InExpr:
			if n.(*sqlparse.InExpr).Query != nil {
				found = true
			}
		}
		return !found
	})
	return found
}

func stateTable(schema, name string) string { return "dt__" + schema + "__" + name }

// stateColumns are the state table's columns, in stateSelect's order.
func (p *incPlan) stateColumns() string {
	cols := make([]string, 0, len(p.keys)+len(p.aggs)+1)
	for i := range p.keys {
		cols = append(cols, chsql.QuoteIdent(fmt.Sprintf("k%d", i)))
	}
	for i := range p.aggs {
		cols = append(cols, chsql.QuoteIdent(fmt.Sprintf("a%d", i)))
	}
	return strings.Join(append(cols, "_lp_upto"), ", ")
}

// stateSelect aggregates the source rows cond picks (a PREWHERE, as in
// change queries) into state rows that bring the state to version upto;
// checks are conditions the statement must pass to read anything.
func (p *incPlan) stateSelect(cond string, upto uint64, checks []string) string {
	cols := make([]string, 0, len(p.keys)+len(p.aggs)+1)
	for i, k := range p.keys {
		cols = append(cols, k+" AS "+chsql.QuoteIdent(fmt.Sprintf("k%d", i)))
	}
	for i, a := range p.aggs {
		cols = append(cols, a.fn+"State("+a.arg+") AS "+chsql.QuoteIdent(fmt.Sprintf("a%d", i)))
	}
	cols = append(cols, "maxState(toUInt64("+strconv.FormatUint(upto, 10)+")) AS _lp_upto")
	q := "SELECT " + strings.Join(cols, ", ") + " FROM " + chsql.Table(p.schema, p.table) + " PREWHERE " + cond
	where := checks
	if p.where != "" {
		where = append([]string{"(" + p.where + ")"}, checks...)
	}
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	return q + " GROUP BY " + strings.Join(p.keys, ", ")
}

// stateOrderBy is the state table's sorting key: the group keys, so that
// ClickHouse's background merges fold each group's partial aggregates
// into one row. isNull/assumeNotNull admit NULL keys (18.16 refuses
// Nullable sorting columns) and keep them apart from the type's default.
func (p *incPlan) stateOrderBy() string {
	parts := make([]string, 0, 2*len(p.keys))
	for i := range p.keys {
		k := chsql.QuoteIdent(fmt.Sprintf("k%d", i))
		parts = append(parts, "isNull("+k+")", "assumeNotNull("+k+")")
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

// viewSelect is the dynamic table as a view of its state: each group's
// partial aggregates merged.
func (p *incPlan) viewSelect(state string) string {
	cols := make([]string, 0, len(p.order))
	for _, o := range p.order {
		if o >= 0 {
			cols = append(cols, chsql.QuoteIdent(fmt.Sprintf("k%d", o))+" AS "+chsql.QuoteIdent(p.keyNames[o]))
		} else {
			a := p.aggs[-o-1]
			cols = append(cols, a.fn+"Merge("+chsql.QuoteIdent(fmt.Sprintf("a%d", -o-1))+") AS "+chsql.QuoteIdent(a.alias))
		}
	}
	groups := make([]string, len(p.keys))
	for i := range p.keys {
		groups[i] = chsql.QuoteIdent(fmt.Sprintf("k%d", i))
	}
	return "SELECT " + strings.Join(cols, ", ") + " FROM " + state + " GROUP BY " + strings.Join(groups, ", ")
}

// committedUpTo is the condition on _lp_commit selecting the rows of
// commits registered at or below version hi (baseline included).
func (p *incPlan) committedUpTo(hi uint64) string {
	return chsql.QuoteIdent(CommitColumn) + p.in + fmt.Sprintf("(SELECT commit_id FROM lakepipe.table_commits WHERE db = %s AND table = %s AND version <= %d)",
		chsql.QuoteString(p.schema), chsql.QuoteString(p.table), hi)
}

// newCommits is the condition on _lp_commit selecting the rows of the
// commits after the state's version, up to hi. A commit in that range that
// deleted or updated rows fails the statement (throwIf): only a FULL
// refresh can take it.
func (p *incPlan) newCommits(state string, hi uint64) string {
	return chsql.QuoteIdent(CommitColumn) + p.in + fmt.Sprintf("(SELECT commit_id FROM (SELECT commit_id, kind FROM lakepipe.table_commits WHERE db = %s AND table = %s "+
		"AND version > (SELECT maxMerge(_lp_upto) FROM %s) AND version <= %d) WHERE throwIf(kind != %s) = 0)",
		chsql.QuoteString(p.schema), chsql.QuoteString(p.table), state, hi, chsql.QuoteString(commitInsert))
}

// touched counts the groups of the state that the refresh to version hi
// wrote (new or changed).
func touched(state string, hi uint64) string {
	return fmt.Sprintf("(SELECT count() FROM %s WHERE finalizeAggregation(_lp_upto) = %d)", state, hi)
}

// incrementalDelta aggregates the rows committed after the state's version,
// up to hi, into the state: one INSERT writing one part, so the new partial
// aggregates and the version they bring the state to appear together, to
// the dynamic table's readers too (a view of the state). It reads its
// starting version in the same statement, so running it twice adds
// nothing the second time. checks must hold for it to run.
func (e *Engine) incrementalDelta(ctx context.Context, schema, name string, p *incPlan, hi uint64, checks []string) error {
	state := chsql.Table(schemas.ChangesDB, stateTable(schema, name))
	return e.st.Exec(chstore.OneBlock(ctx), "INSERT INTO "+state+" ("+p.stateColumns()+") "+p.stateSelect(p.newCommits(state, hi), hi, checks))
}

// incrementalFull rebuilds a summary's state from the rows of commits up
// to hi, and makes the dynamic table the view of it. rows counts its
// groups now, deleted those it had.
func (e *Engine) incrementalFull(ctx context.Context, schema, name string, p *incPlan, hi uint64) (rows, deleted int64, err error) {
	if err := e.st.Exec(ctx, "CREATE DATABASE IF NOT EXISTS "+chsql.QuoteIdent(schemas.ChangesDB)); err != nil {
		return 0, 0, err
	}
	deleted = e.rowCount(ctx, chsql.Table(schema, name))
	fresh := stateTable(schema, name) + "__new_" + newLoadID()
	if err := e.st.Exec(ctx, "CREATE TABLE "+chsql.Table(schemas.ChangesDB, fresh)+" ENGINE = AggregatingMergeTree ORDER BY "+p.stateOrderBy()+
		" AS "+p.stateSelect(p.committedUpTo(hi), hi, nil)); err != nil {
		_ = e.st.Exec(context.Background(), "DROP TABLE IF EXISTS "+chsql.Table(schemas.ChangesDB, fresh))
		return 0, 0, queryError(err)
	}
	rows = e.rowCount(ctx, chsql.Table(schemas.ChangesDB, fresh))
	if err := e.swapNames(ctx, schemas.ChangesDB, stateTable(schema, name), fresh); err != nil {
		return 0, 0, err
	}
	// The view reads the state by name, so it goes on showing the state
	// the next refreshes add to; it is made again here in case the query
	// (or an older release's table) had the name.
	view := name + "__new_" + newLoadID()
	if err := e.st.Exec(ctx, "CREATE VIEW "+chsql.Table(schema, view)+" AS "+p.viewSelect(chsql.Table(schemas.ChangesDB, stateTable(schema, name)))); err != nil {
		return 0, 0, queryError(err)
	}
	return rows, deleted, e.swapNames(ctx, schema, name, view)
}

// rowCount counts a table's rows; 0 when it cannot (no such table yet).
func (e *Engine) rowCount(ctx context.Context, table string) int64 {
	n, err := e.st.Strings(ctx, "SELECT count() FROM "+table)
	if err != nil || len(n) != 1 {
		return 0
	}
	v, _ := strconv.ParseInt(n[0], 10, 64)
	return v
}

// swapNames gives table fresh of db the name name at once, dropping what
// had it: one RENAME statement swaps both names, so readers never find the
// name missing. fresh is dropped if the swap fails.
func (e *Engine) swapNames(ctx context.Context, db, name, fresh string) error {
	old := name + "__old_" + newLoadID()
	err := e.st.Exec(ctx, "RENAME TABLE "+chsql.Table(db, name)+" TO "+chsql.Table(db, old)+", "+chsql.Table(db, fresh)+" TO "+chsql.Table(db, name))
	if chstore.IsCode(err, chstore.CodeUnknownTable) {
		// Nothing has the name yet: a first refresh.
		err = e.st.Exec(ctx, "RENAME TABLE "+chsql.Table(db, fresh)+" TO "+chsql.Table(db, name))
	}
	if err != nil {
		_ = e.st.Exec(context.Background(), "DROP TABLE IF EXISTS "+chsql.Table(db, fresh))
		return err
	}
	_ = e.st.Exec(ctx, "DROP TABLE IF EXISTS "+chsql.Table(db, old))
	return nil
}

// swapIn makes a dynamic table's contents the result of a query, at once.
func (e *Engine) swapIn(ctx context.Context, schema, name, query string) (rows, deleted int64, err error) {
	fresh := name + "__new_" + newLoadID()
	if err := e.st.Exec(ctx, "CREATE TABLE "+chsql.Table(schema, fresh)+" ENGINE = MergeTree ORDER BY tuple() AS "+query); err != nil {
		_ = e.st.Exec(context.Background(), "DROP TABLE IF EXISTS "+chsql.Table(schema, fresh))
		return 0, 0, queryError(err)
	}
	// One read of ClickHouse's own tables counts the new rows and the old.
	// 18.16 lists system.parts table by table and fails when one of the
	// schema's tables is renamed meanwhile (another dynamic table's swap):
	// that is worth another try.
	var res *chstore.Result
	for try := 0; ; try++ {
		res, err = e.st.Query(ctx, "SELECT table, sum(rows) FROM system.parts WHERE active AND database = "+chsql.QuoteString(schema)+
			" AND table IN ("+chsql.QuoteString(name)+", "+chsql.QuoteString(fresh)+") GROUP BY table")
		if err == nil || try == 4 || !chstore.IsCode(err, chstore.CodeUnknownTable) {
			break
		}
	}
	if err != nil {
		_ = e.st.Exec(context.Background(), "DROP TABLE IF EXISTS "+chsql.Table(schema, fresh))
		return 0, 0, err
	}
	for _, r := range res.Rows {
		n := int64(r[1].(uint64))
		switch r[0].(string) {
		case fresh:
			rows = n
		case name:
			deleted = n
		}
	}
	return rows, deleted, e.swapNames(ctx, schema, name, fresh)
}

// refreshIncremental refreshes a summary the incremental way: the rows
// committed since its state's version are added to the state, or, for a
// first refresh, when asked, or when the source had rows deleted or
// updated since, the state is rebuilt (FULL). mode and reason say which it
// was; rowsExpr counts the rows written, as SQL.
func (e *Engine) refreshIncremental(ctx context.Context, schema, name string, spec catalog.DynamicTableSpec, p *incPlan, forceFull bool) (rowsExpr string, deleted int64, mode, reason string, err error) {
	hi := changeReadHorizon()
	switch {
	case spec.ChangeVersion == 0:
		reason = "first refresh: the state of the summary is built"
	case forceFull:
		reason = "a full refresh was asked for"
	default:
		err := e.incrementalDelta(ctx, schema, name, p, hi, nil)
		if err == nil {
			return touched(chsql.Table(schemas.ChangesDB, stateTable(schema, name)), hi), 0, "INCREMENTAL", p.deltaReason(), nil
		}
		switch {
		case chstore.IsCode(err, chstore.CodeThrowIf):
			reason = "rows of " + display(p.schema, p.table) + " were deleted or updated since the last refresh: the summary is recomputed"
		case chstore.IsCode(err, chstore.CodeUnknownTable):
			reason = "the summary's state was missing, so it was rebuilt"
		default:
			reason = "the incremental refresh failed (" + err.Error() + "), so the summary was recomputed"
		}
	}
	rows, deleted, err := e.incrementalFull(ctx, schema, name, p, hi)
	return strconv.FormatInt(rows, 10), deleted, "FULL", reason, err
}

// deltaReason is the history's reason for an incremental refresh.
func (p *incPlan) deltaReason() string {
	return "rows committed to " + display(p.schema, p.table) + " since the last refresh were aggregated into the groups they touch"
}

// planCache keeps, per dynamic table, the plan this process made at its
// last refresh from afresh, with the catalog version of the table's spec
// it was made from; copies of the engine share it.
type planCache struct {
	mu    sync.Mutex
	plans map[string]cachedPlan
}

type cachedPlan struct {
	version uint64
	plan    *incPlan
}

// get returns the plan made from version of the dynamic table's spec.
func (c *planCache) get(schema, name string, version uint64) *incPlan {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cp, ok := c.plans[schema+"."+name]; ok && cp.version == version {
		return cp.plan
	}
	return nil
}

func (c *planCache) put(schema, name string, version uint64, p *incPlan) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.plans == nil || len(c.plans) >= 4096 {
		c.plans = map[string]cachedPlan{}
	}
	c.plans[schema+"."+name] = cachedPlan{version, p}
}
