package engine

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/lakepipe/lakepipe/internal/catalog"
	"github.com/lakepipe/lakepipe/internal/chsql"
	"github.com/lakepipe/lakepipe/internal/chstore"
	"github.com/lakepipe/lakepipe/internal/sqlparse"
	"github.com/lakepipe/lakepipe/schemas"
)

// Incremental refresh of GROUP BY summaries.
//
// A dynamic table `SELECT k…, AGG(x) AS a… FROM t [WHERE …] GROUP BY k…`
// over a change-tracked table t keeps, besides its visible table, a state
// table (lakepipe_changes.dt__<schema>__<name>) of partial aggregates:
// ClickHouse -State values per group, one row per group per refresh that
// touched it, each tagged with the change-log version it brings the table
// to (_lp_upto). A refresh whose source changes since the last one are
// inserts only
//
//  1. aggregates just the new commits' rows into new state rows (the rows
//     are found through t's primary index: work follows the changes);
//  2. rebuilds the visible rows of the groups those rows touch by merging
//     their states, keeps the other groups' rows as they are, and swaps
//     the result in at once (RENAME);
//  3. records the version in the catalog: the commit point. State rows
//     of a refresh that died before it carry a version above the recorded
//     one and are ignored (and dropped by the next full refresh).
//
// Deletes or updates since the last refresh, or a first refresh, rebuild
// the state from the whole table (FULL). Either way the state holds exactly
// the rows of commits up to the recorded version: the rows present when
// change tracking was turned on (the BASELINE commits) and every commit
// registered since.

// incAgg is one aggregate of an incremental summary.
type incAgg struct {
	fn    string // ClickHouse aggregate: count, sum, min, max, avg, uniqExact
	arg   string // translated argument; "" for COUNT(*)
	alias string
}

// incPlan is a summary query reduced to what incremental refresh needs.
type incPlan struct {
	schema, table string
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
	schema, table, tspec, err := e.table(ctx, tn.Name)
	if err != nil {
		return nil, "its source is not a table lakepipe keeps (a dynamic table or a stream)"
	}
	if !tracked(tspec) {
		return nil, "source " + display(schema, table) + " does not track changes (ALTER TABLE " + table + " SET PROPERTIES ('change_tracking' = 'true'))"
	}
	sess := e.WithSchema(schema).session(ctx)
	defer sess.close()
	p := &incPlan{schema: schema, table: table, in: e.globalIn()}
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

// stateSelect aggregates source rows into state rows tagged upto.
func (p *incPlan) stateSelect(cond string, upto uint64) string {
	cols := make([]string, 0, len(p.keys)+len(p.aggs)+1)
	for i, k := range p.keys {
		cols = append(cols, k+" AS "+chsql.QuoteIdent(fmt.Sprintf("k%d", i)))
	}
	for i, a := range p.aggs {
		cols = append(cols, a.fn+"State("+a.arg+") AS "+chsql.QuoteIdent(fmt.Sprintf("a%d", i)))
	}
	cols = append(cols, "toUInt64("+strconv.FormatUint(upto, 10)+") AS _lp_upto")
	// cond picks commits: a PREWHERE, as in change queries.
	q := "SELECT " + strings.Join(cols, ", ") + " FROM " + chsql.Table(p.schema, p.table) + " PREWHERE " + cond
	if p.where != "" {
		q += " WHERE " + p.where
	}
	return q + " GROUP BY " + strings.Join(p.keys, ", ")
}

// mergeSelect turns state rows (those of versions ≤ lo, or = hi) into the
// dynamic table's rows, for the groups cond keeps.
func (p *incPlan) mergeSelect(state string, lo, hi uint64, cond string) string {
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
	where := fmt.Sprintf("(_lp_upto <= %d OR _lp_upto = %d)", lo, hi)
	if cond != "" {
		where += " AND " + cond
	}
	return "SELECT " + strings.Join(cols, ", ") + " FROM " + state + " WHERE " + where + " GROUP BY " + strings.Join(groups, ", ")
}

// fingerprint renders a NULL-safe key of a group from column expressions.
func fingerprint(cols []string) string {
	parts := make([]string, len(cols))
	for i, c := range cols {
		parts[i] = "ifNull(toString(" + c + "), '\\0')"
	}
	return "tuple(" + strings.Join(parts, ", ") + ")"
}

// committedUpTo is the condition on _lp_commit selecting the rows of
// commits registered at or below version hi (baseline included).
func (p *incPlan) committedUpTo(hi uint64) string {
	return chsql.QuoteIdent(CommitColumn) + p.in + fmt.Sprintf("(SELECT commit_id FROM lakepipe.table_commits WHERE db = %s AND table = %s AND version <= %d)",
		chsql.QuoteString(p.schema), chsql.QuoteString(p.table), hi)
}

// incrementalFull rebuilds a summary's state and visible table from the
// rows of commits up to hi.
func (e *Engine) incrementalFull(ctx context.Context, schema, name string, p *incPlan, hi uint64) (rows, deleted int64, err error) {
	state := chsql.Table(schemas.ChangesDB, stateTable(schema, name))
	fresh := chsql.Table(schemas.ChangesDB, stateTable(schema, name)+"__new_"+newLoadID())
	if err := e.st.Exec(ctx, "CREATE DATABASE IF NOT EXISTS "+chsql.QuoteIdent(schemas.ChangesDB)); err != nil {
		return 0, 0, err
	}
	if err := e.st.Exec(ctx, "CREATE TABLE "+fresh+" ENGINE = MergeTree ORDER BY tuple() AS "+p.stateSelect(p.committedUpTo(hi), hi)); err != nil {
		_ = e.st.Exec(context.Background(), "DROP TABLE IF EXISTS "+fresh)
		return 0, 0, queryError(err)
	}
	rows, deleted, err = e.swapIn(ctx, schema, name, p.mergeSelect(fresh, hi, hi, ""))
	if err != nil {
		_ = e.st.Exec(context.Background(), "DROP TABLE IF EXISTS "+fresh)
		return 0, 0, err
	}
	_ = e.st.Exec(ctx, "DROP TABLE IF EXISTS "+state)
	if err := e.st.Exec(ctx, "RENAME TABLE "+fresh+" TO "+state); err != nil {
		return 0, 0, err
	}
	return rows, deleted, nil
}

// incrementalDelta brings a summary from version lo to hi with the rows of
// the INSERT commits ids.
func (e *Engine) incrementalDelta(ctx context.Context, schema, name string, p *incPlan, lo, hi uint64, ids []uint64) (rows, deleted int64, err error) {
	state := chsql.Table(schemas.ChangesDB, stateTable(schema, name))
	delta := chsql.QuoteIdent(CommitColumn) + " IN (" + idList(ids) + ")"
	if err := e.st.Exec(ctx, "INSERT INTO "+state+" "+p.stateSelect(delta, hi)); err != nil {
		return 0, 0, queryError(err)
	}
	// The groups the new rows touch: rebuilt from their states; the other
	// groups' rows are kept as they are.
	keysCols := make([]string, len(p.keys))
	for i := range p.keys {
		keysCols[i] = chsql.QuoteIdent(fmt.Sprintf("k%d", i))
	}
	touched := "SELECT DISTINCT " + fingerprint(keysCols) + fmt.Sprintf(" FROM %s WHERE _lp_upto = %d", state, hi)
	visibleKeys := make([]string, len(p.keyNames))
	for i, n := range p.keyNames {
		visibleKeys[i] = chsql.QuoteIdent(n)
	}
	cols := make([]string, len(p.order))
	for i, o := range p.order {
		if o >= 0 {
			cols[i] = chsql.QuoteIdent(p.keyNames[o])
		} else {
			cols[i] = chsql.QuoteIdent(p.aggs[-o-1].alias)
		}
	}
	kept := "SELECT " + strings.Join(cols, ", ") + " FROM " + chsql.Table(schema, name) + " WHERE " + fingerprint(visibleKeys) + " NOT IN (" + touched + ")"
	rebuilt := p.mergeSelect(state, lo, hi, fingerprint(keysCols)+" IN ("+touched+")")
	rows, deleted, err = e.swapIn(ctx, schema, name, kept+" UNION ALL "+rebuilt)
	return rows, deleted, err
}

// swapIn makes a dynamic table's contents the result of a query, at once.
func (e *Engine) swapIn(ctx context.Context, schema, name, query string) (rows, deleted int64, err error) {
	suffix := newLoadID()
	fresh, old := name+"__new_"+suffix, name+"__old_"+suffix
	if err := e.st.Exec(ctx, "CREATE TABLE "+chsql.Table(schema, fresh)+" ENGINE = MergeTree ORDER BY tuple() AS "+query); err != nil {
		_ = e.st.Exec(context.Background(), "DROP TABLE IF EXISTS "+chsql.Table(schema, fresh))
		return 0, 0, queryError(err)
	}
	// One read, of ClickHouse's own tables, counts the new rows and the
	// old and says whether there is an old table (not at a first refresh).
	// ClickHouse 18.16 lists system.parts table by table and fails when
	// one of the schema's tables is renamed meanwhile (another dynamic
	// table's swap): that is worth another try.
	var res *chstore.Result
	for try := 0; ; try++ {
		res, err = e.st.Query(ctx, "SELECT table, sum(rows) FROM system.parts WHERE active AND database = "+chsql.QuoteString(schema)+
			" AND table IN ("+chsql.QuoteString(name)+", "+chsql.QuoteString(fresh)+") GROUP BY table"+
			" UNION ALL SELECT '', count() FROM system.tables WHERE database = "+chsql.QuoteString(schema)+" AND name = "+chsql.QuoteString(name))
		if err == nil || try == 4 || !chstore.IsCode(err, chstore.CodeUnknownTable) {
			break
		}
	}
	if err != nil {
		_ = e.st.Exec(context.Background(), "DROP TABLE IF EXISTS "+chsql.Table(schema, fresh))
		return 0, 0, err
	}
	exists := false
	for _, r := range res.Rows {
		n := int64(r[1].(uint64))
		switch r[0].(string) {
		case fresh:
			rows = n
		case name:
			deleted = n
		case "":
			exists = n > 0
		}
	}
	if exists {
		// One RENAME statement swaps both names, so readers never find
		// the table missing.
		if err := e.st.Exec(ctx, "RENAME TABLE "+chsql.Table(schema, name)+" TO "+chsql.Table(schema, old)+", "+
			chsql.Table(schema, fresh)+" TO "+chsql.Table(schema, name)); err != nil {
			_ = e.st.Exec(context.Background(), "DROP TABLE IF EXISTS "+chsql.Table(schema, fresh))
			return 0, 0, err
		}
		_ = e.st.Exec(ctx, "DROP TABLE IF EXISTS "+chsql.Table(schema, old))
	} else if err := e.st.Exec(ctx, "RENAME TABLE "+chsql.Table(schema, fresh)+" TO "+chsql.Table(schema, name)); err != nil {
		return 0, 0, err
	}
	return rows, deleted, nil
}

// refreshIncremental refreshes a summary the incremental way: from its
// state when the source has only new rows since, else by rebuilding the
// state. mode and reason say which it was.
func (e *Engine) refreshIncremental(ctx context.Context, schema, name string, spec catalog.DynamicTableSpec, p *incPlan, forceFull bool) (rows, deleted int64, mode, reason string, version uint64, err error) {
	hi := changeReadHorizon()
	lo := spec.ChangeVersion
	// A missing state table (dropped by hand) shows as a failed delta,
	// which rebuilds it.
	full := forceFull || lo == 0
	reason = "first refresh: the state of the summary is built"
	if forceFull && lo != 0 {
		reason = "a full refresh was asked for"
	}
	var ids []uint64
	if !full {
		if hi <= lo {
			hi = lo
		}
		commits, err := e.commitsBetween(ctx, p.schema, p.table, lo, hi, "")
		if err != nil {
			return 0, 0, "", "", 0, err
		}
		for _, c := range commits {
			switch c.kind {
			case commitInsert:
				ids = append(ids, c.id)
			case commitDelete, commitUpdate:
				full, reason = true, "rows of "+display(p.schema, p.table)+" were deleted or updated since the last refresh: the summary is recomputed"
			}
		}
	}
	if full {
		rows, deleted, err = e.incrementalFull(ctx, schema, name, p, hi)
		return rows, deleted, "FULL", reason, hi, err
	}
	if len(ids) == 0 {
		n, _ := e.st.Strings(ctx, "SELECT count() FROM "+chsql.Table(schema, name))
		if len(n) == 1 {
			rows, _ = strconv.ParseInt(n[0], 10, 64)
		}
		return rows, 0, "INCREMENTAL", "no changes since the last refresh", hi, nil
	}
	rows, deleted, err = e.incrementalDelta(ctx, schema, name, p, lo, hi, ids)
	if err != nil {
		// The delta failed: the full way still gives the right answer.
		reason := "the incremental refresh failed, so the summary was recomputed"
		if chstore.IsCode(err, chstore.CodeUnknownTable) {
			reason = "the summary's state was missing, so it was rebuilt"
		}
		rows, deleted, err = e.incrementalFull(ctx, schema, name, p, hi)
		return rows, deleted, "FULL", reason, hi, err
	}
	return rows, deleted, "INCREMENTAL", fmt.Sprintf("%d new commits of %s", len(ids), display(p.schema, p.table)), hi, nil
}
