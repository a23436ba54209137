package dynamic

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lakepipe/lakepipe/internal/sqlast"

	"github.com/lakepipe/lakepipe/internal/catalog"
	"github.com/lakepipe/lakepipe/internal/changes"
	"github.com/lakepipe/lakepipe/internal/chsql"
	"github.com/lakepipe/lakepipe/internal/core"
	"github.com/lakepipe/lakepipe/internal/query"
	"github.com/lakepipe/lakepipe/internal/sqlparse"
)

// incAgg is one aggregate of an incremental summary.
type incAgg struct {
	fn  string // ClickHouse aggregate: count, sum, min, max, avg, uniqExact
	arg string // translated argument; "" for COUNT(*)
}

// incPlan is a dynamic table's query reduced to what incremental refresh
// needs. An aggregate plan has one changing table, an append plan one per
// UNION ALL branch.
type incPlan struct {
	sources []incSource // the changing tables: their new rows are what a refresh adds
	dims    []incSource // tables joined to them: any change makes the refresh FULL
	in      string      // " IN " or, in cluster mode, " GLOBAL IN "

	// Aggregate plans (GROUP BY).
	from string // translated FROM, rowsToken(0) where the changing table's signed rows are read
	// fromDims is from with dimToken(j) where dims[j] is read.
	fromDims string
	where    string   // translated, "" for none
	keys     []string // translated group keys
	aggs     []incAgg
	order    []int    // per select item: key index, or -(agg index)-1
	names    []string // per select item: its column in the dynamic table
	// retract: every aggregate can take rows back (COUNT, SUM, AVG), so
	// rows deleted or updated in the source are subtracted from their
	// groups instead of making the refresh FULL.
	retract bool

	// Queries over other dynamic tables: a query reading one dynamic
	// table whose own query has a plan is planned as that query (its
	// state kept from the tables it reads), and the outer query is
	// applied in the view, at read time: outers are the translated
	// outer queries, innermost first, each with viewToken where the
	// inner view goes; via are the dynamic tables read through.
	outers []string
	via    []incSource

	// Append plans (rows of the query appended as their source rows come).
	appendRows bool
	body       string   // the translated query, deltaToken(i) for sources[i]'s rows
	cols       []string // the state's columns before _lp_src, _lp_row, _lp_marker and _lp_upto, once known
	branches   []appendBranch
	// reached is a version the state was seen at (readWindow), a bound
	// for reading its version again (stateVersion); PlanCache.put gives
	// it, as a plan is shared from there on.
	reached *atomic.Uint64
}

// seen is the version the plan's state was last seen at, 0 for none.
func (p *incPlan) seen() uint64 {
	if p.reached == nil {
		return 0
	}
	return p.reached.Load()
}

// saw records that the plan's state was at version v.
func (p *incPlan) saw(v uint64) {
	if p.reached != nil && v > p.reached.Load() {
		p.reached.Store(v)
	}
}

// appendBranch is one SELECT of an append plan that joins dimension
// tables: a change of one recomputes the rows of the source commits whose
// rows join its changed rows.
type appendBranch struct {
	source int    // its changing table, in sources
	alias  string // the changing table's name in the SELECT
	dims   []int  // the dimension tables it joins, in dims
	from   string // its translated FROM: deltaToken for the changing table's rows, dimToken(j) for dims[j]
}

// incSource is a table a plan reads, with the catalog version of its spec
// the plan was made from.
type incSource struct {
	schema, table string
	version       uint64
	created       time.Time // the table's creation: a table made again is another
	cols          []string  // its columns, as its change table has them too
	types         []string  // their ClickHouse types (rowHash)
	query         string    // a dynamic table read through (via): its query
	// retained is the oldest version its change log still has the
	// removed rows of (changes.ChangesRetainedSince; 0: all): a state
	// older than that cannot learn what was removed since.
	retained uint64
	keyed    bool // one row per key (PRIMARY KEY): read with FINAL
}

// rows is the FROM item of src's present rows and the keyword that its
// commit conditions take: a keyed table is read with FINAL, and WHERE,
// since 18.16 applies PREWHERE before FINAL (changes.Rows).
func (s incSource) rows() (from, filter string) {
	if s.keyed {
		return chsql.Table(s.schema, s.table) + " FINAL", " WHERE "
	}
	return chsql.Table(s.schema, s.table), " PREWHERE "
}

// deltaToken stands, in a plan's translated SQL, for the condition that
// picks the rows of sources[i] a refresh reads; a NUL cannot appear in
// translated SQL otherwise (quoting escapes it).
func deltaToken(i int) string { return "\x00lp" + strconv.Itoa(i) + "\x00" }

// dimToken stands, in an aggregate plan's fromDims, for dims[j]'s rows.
func dimToken(j int) string { return "(\x00ld" + strconv.Itoa(j) + "\x00)" }

// rowsToken stands, in an aggregate plan's translated FROM, for the rows
// of sources[i] a refresh reads, with their sign (see signedRows).
// It is parenthesized like the subquery it stands for, so that the
// translator gives it the table's name as its alias.
func rowsToken(i int) string { return "(\x00lr" + strconv.Itoa(i) + "\x00)" }

// render puts the conditions cond gives for each changing table into sql.
func (p *incPlan) render(sql string, cond func(src incSource) string) string {
	for i, src := range p.sources {
		sql = strings.ReplaceAll(sql, deltaToken(i), cond(src))
	}
	return sql
}

// renderRows puts the signed rows rows gives for each changing table into
// an aggregate plan's FROM.
func (p *incPlan) renderRows(sql string, rows func(src incSource) string) string {
	for i, src := range p.sources {
		sql = strings.ReplaceAll(sql, rowsToken(i), rows(src))
	}
	return sql
}

// viewToken stands, in an outer query over a dynamic table (incPlan.outers),
// for the view of the inner query's state; parenthesized like the
// subquery it stands for.
const viewToken = "(\x00lv\x00)"

// maxViaDepth bounds how many dynamic tables a plan reads through.
const maxViaDepth = 8

// planIncremental analyses a dynamic table's query; reason says why it
// cannot be refreshed incrementally when the plan is nil.
func (e *Refresher) planIncremental(ctx context.Context, q *sqlast.Query) (*incPlan, string) {
	return e.planDepth(ctx, q, 0)
}

// planOverDynamic plans a query whose FROM is one dynamic table (ok false
// when it is not such a query): as the dynamic table's own query, when that
// has a plan, with this query applied over its view. The state then follows
// the tables the chain reads, so each layer of a refresh chain refreshes
// INCREMENTAL, and reading the table computes the outer queries over the
// innermost state (a summary's groups, or the rows kept).
func (e *Refresher) planOverDynamic(ctx context.Context, q *sqlast.Query, depth int) (_ *incPlan, why string, ok bool) {
	sel, isSel := q.Body.(*sqlast.Select)
	if !isSel || len(q.With) > 0 || len(sel.From) != 1 {
		return nil, "", false
	}
	t, isName := sel.From[0].(*sqlast.TableName)
	if !isName {
		return nil, "", false
	}
	schema, name, err := e.Qualify(t.Name)
	if err != nil {
		return nil, "", false
	}
	var up catalog.DynamicTableSpec
	e.Cat.Forget(catalog.KindDynamicTable, schema, name)
	v, found, err := e.Cat.GetCached(ctx, catalog.KindDynamicTable, schema, name, &up)
	if err != nil || !found {
		return nil, "", false
	}
	display := core.Display(schema, name)
	if depth >= maxViaDepth {
		return nil, fmt.Sprintf("it reads dynamic tables more than %d deep", maxViaDepth), true
	}
	uq, err := sqlparse.ParseQuery(up.Query)
	if err != nil {
		return nil, "dynamic table " + display + ": " + err.Error(), true
	}
	inner, why := e.WithSchema(schema).planDepth(ctx, uq, depth+1)
	if inner == nil {
		return nil, "it reads dynamic table " + display + ", which is refreshed FULL: " + why, true
	}
	sess := e.Session(ctx)
	defer sess.Close()
	tableRef := sess.Tr.Table
	sess.Tr.Table = func(n sqlast.ObjectName) (string, error) {
		if s, t, err := e.Qualify(n); err == nil && s == schema && t == name {
			return viewToken, nil
		}
		return tableRef(n)
	}
	outer, err := sess.Translate(q)
	if err != nil {
		return nil, err.Error(), true
	}
	p := *inner
	p.reached = nil // another state
	p.outers = append(slices.Clone(inner.outers), outer)
	p.via = append(slices.Clone(inner.via), incSource{schema: schema, table: name, version: v, created: up.CreatedAt, query: up.Query})
	return &p, "", true
}

// planDepth is planIncremental for a query read through depth dynamic
// tables.
func (e *Refresher) planDepth(ctx context.Context, q *sqlast.Query, depth int) (*incPlan, string) {
	if p, why, ok := e.planOverDynamic(ctx, q, depth); ok {
		return p, why
	}
	if len(q.With) > 0 || q.OrderBy != nil || q.Limit != nil {
		return nil, "the query has WITH, ORDER BY or LIMIT, which are not refreshed incrementally"
	}
	if sel, ok := q.Body.(*sqlast.Select); ok && (len(sel.GroupBy) > 0 || hasAggregate(sel)) {
		return e.planAggregate(ctx, sel)
	}
	return e.planAppend(ctx, q)
}

// incFrom analyses the FROM clause of an incremental query: one table
// that tracks changes, its rows the changing ones, with tables joined to it
// (INNER or LEFT JOIN, it on the left) as dimensions, which must track
// changes too. It adds them to p's sources and dims, or says why not.
func (e *Refresher) incFrom(ctx context.Context, p *incPlan, from []sqlast.TableRef) string {
	if len(from) != 1 {
		return "it reads several tables without JOIN … ON"
	}
	var leaves []*sqlast.TableName
	var walk func(r sqlast.TableRef) string
	walk = func(r sqlast.TableRef) string {
		switch r := r.(type) {
		case *sqlast.TableName:
			leaves = append(leaves, r)
			return ""
		case *sqlast.JoinRef:
			if k := strings.ToUpper(r.Kind); k != "" && k != "INNER" && k != "LEFT" {
				return "it has a " + k + " JOIN (INNER and LEFT JOINs of a changing table with dimension tables are refreshed incrementally)"
			}
			if _, ok := r.Right.(*sqlast.TableName); !ok {
				return "it joins a subquery or a nested join"
			}
			if r.On != nil && containsQuery(r.On) {
				return "its JOIN condition has a subquery"
			}
			if why := walk(r.Left); why != "" {
				return why
			}
			return walk(r.Right)
		}
		return "the query reads a subquery or a table function"
	}
	if why := walk(from[0]); why != "" {
		return why
	}
	read := make([]incSource, len(leaves))
	for i, l := range leaves {
		schema, table, err := e.Qualify(l.Name)
		if err != nil {
			return err.Error()
		}
		// Read afresh, with its version: refreshes by a cached plan check it.
		var spec catalog.TableSpec
		e.Cat.Forget(catalog.KindTable, schema, table)
		v, ok, err := e.Cat.GetCached(ctx, catalog.KindTable, schema, table, &spec)
		if err != nil || !ok {
			return "its source " + core.Display(schema, table) + " is not a table lakepipe keeps (a dynamic table or a stream)"
		}
		if !changes.Tracked(spec) {
			return "source " + core.Display(schema, table) + " does not track changes (ALTER TABLE " + table + " SET PROPERTIES ('change_tracking' = 'true'))"
		}
		read[i] = incSource{schema: schema, table: table, version: v, created: spec.CreatedAt, keyed: spec.Keyed()}
		read[i].retained, _ = strconv.ParseUint(spec.Properties[changes.ChangesRetainedSince], 10, 64)
		for _, c := range spec.Columns {
			read[i].cols = append(read[i].cols, c.Name)
			read[i].types = append(read[i].types, c.CHType)
		}
		if slices.ContainsFunc(read[:i], read[i].same) {
			return "it reads " + core.Display(schema, table) + " twice"
		}
	}
	if !slices.ContainsFunc(p.sources, read[0].same) {
		p.sources = append(p.sources, read[0])
	}
	p.dims = append(p.dims, read[1:]...)
	return ""
}

// same reports whether two sources are the same table.
func (s incSource) same(o incSource) bool { return s.schema == o.schema && s.table == o.table }

// deltaTables makes sess translate each changing table of p as the rows
// of it that deltaToken picks, for render to fill in, or, for aggregate
// plans, as rowsToken, for renderRows.
func (e *Refresher) deltaTables(sess *query.Session, p *incPlan) {
	tableRef := sess.Tr.Table
	sess.Tr.Table = func(n sqlast.ObjectName) (string, error) {
		if schema, table, err := e.Qualify(n); err == nil {
			if i := slices.IndexFunc(p.sources, incSource{schema: schema, table: table}.same); i >= 0 {
				if !p.appendRows {
					return rowsToken(i), nil
				}
				// Each row with its identity (rowColumn).
				src := p.sources[i]
				from, filter := src.rows()
				return "(SELECT *, " + src.rowHash() + " AS " + chsql.QuoteIdent(rowColumn) + " FROM " + from + filter + deltaToken(i) + ")", nil
			}
		}
		return tableRef(n)
	}
}

// crossCheck rejects plans whose changing tables are dimensions too.
func (p *incPlan) crossCheck() string {
	for _, d := range p.dims {
		for _, s := range p.sources {
			if d.same(s) {
				return core.Display(d.schema, d.table) + " is both read for its new rows and joined as a dimension"
			}
		}
	}
	return ""
}

// planAggregate plans a GROUP BY summary.
func (e *Refresher) planAggregate(ctx context.Context, sel *sqlast.Select) (*incPlan, string) {
	if sel.Having != nil || sel.Distinct || len(sel.GroupBy) == 0 {
		return nil, "only GROUP BY summaries (no HAVING or DISTINCT, no aggregate without GROUP BY) are refreshed incrementally in this release"
	}
	sess := e.Session(ctx)
	defer sess.Close()
	p := &incPlan{in: e.GlobalIn()}
	if why := e.incFrom(ctx, p, sel.From); why != "" {
		return nil, why
	}
	// The changing table's rows are read through a subquery of its signed
	// rows (signedRows), under the name the query gives the table.
	e.deltaTables(sess, p)
	var err error
	if p.from, err = sess.Tr.From(sel.From); err != nil {
		return nil, err.Error()
	}
	if len(p.dims) > 0 {
		// The FROM again with each dimension table at dimToken: a
		// change of one recomputes the groups its changed rows join.
		tableRef := sess.Tr.Table
		sess.Tr.Table = func(n sqlast.ObjectName) (string, error) {
			if schema, table, err := e.Qualify(n); err == nil {
				if j := slices.IndexFunc(p.dims, incSource{schema: schema, table: table}.same); j >= 0 {
					return dimToken(j), nil
				}
			}
			return tableRef(n)
		}
		if p.fromDims, err = sess.Tr.From(sel.From); err != nil {
			return nil, err.Error()
		}
		sess.Tr.Table = tableRef
	}
	if sel.Where != nil {
		if containsQuery(sel.Where) {
			return nil, "its WHERE has a subquery"
		}
		if p.where, err = sess.Tr.Expr(sel.Where); err != nil {
			return nil, err.Error()
		}
	}
	for _, g := range sel.GroupBy {
		c, ok := g.(*sqlast.ColumnRef)
		if !ok {
			return nil, "it groups by an expression (GROUP BY plain columns is refreshed incrementally)"
		}
		k, err := sess.Tr.Expr(c)
		if err != nil {
			return nil, err.Error()
		}
		p.keys = append(p.keys, k)
	}
	selected := make([]bool, len(p.keys))
	for _, it := range sel.Items {
		if it.Star {
			return nil, "it selects *"
		}
		if c, ok := it.Expr.(*sqlast.ColumnRef); ok {
			k, _ := sess.Tr.Expr(c)
			idx := slices.Index(p.keys, k)
			if idx < 0 {
				return nil, "it selects a column that is not grouped"
			}
			// A key may be selected more than once, each time under
			// its own name.
			name := it.Alias
			if name == "" {
				name = c.Parts[len(c.Parts)-1]
			}
			selected[idx] = true
			p.order = append(p.order, idx)
			p.names = append(p.names, name)
			continue
		}
		f, ok := it.Expr.(*sqlast.FuncCall)
		if !ok || f.Over != nil {
			return nil, "a SELECT item is an expression over aggregates (select the aggregates themselves to refresh incrementally)"
		}
		if it.Alias == "" {
			return nil, "an aggregate has no name (write AS name to refresh incrementally)"
		}
		var a incAgg
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
			if a.arg, err = sess.Tr.Expr(f.Args[0]); err != nil {
				return nil, err.Error()
			}
		}
		p.aggs = append(p.aggs, a)
		p.order = append(p.order, -len(p.aggs))
		p.names = append(p.names, it.Alias)
	}
	if slices.Contains(selected, false) {
		return nil, "a GROUP BY column is not selected"
	}
	p.retract = !slices.ContainsFunc(p.aggs, func(a incAgg) bool { return !a.signed() })
	return p, ""
}

func containsQuery(x sqlast.Expr) bool {
	found := false
	sqlast.Inspect(x, func(n any) bool {
		switch n.(type) {
		case *sqlast.SubqueryExpr, *sqlast.ExistsExpr:
			found = true
		case *sqlast.InExpr:
			if n.(*sqlast.InExpr).Query != nil {
				found = true
			}
		}
		return !found
	})
	return found
}

// PlanCache keeps, per dynamic table, the plan this process made at its
// last refresh from afresh, with the catalog version of the table's spec
// it was made from; copies of the engine share it.
type PlanCache struct {
	mu    sync.Mutex
	plans map[string]cachedPlan
}

type cachedPlan struct {
	version uint64
	plan    *incPlan
}

// get returns the plan made from version of the dynamic table's spec.
func (c *PlanCache) get(schema, name string, version uint64) *incPlan {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cp, ok := c.plans[schema+"."+name]; ok && cp.version == version {
		return cp.plan
	}
	return nil
}

func (c *PlanCache) put(schema, name string, version uint64, p *incPlan) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.plans == nil || len(c.plans) >= 4096 {
		c.plans = map[string]cachedPlan{}
	}
	if p.reached == nil {
		p.reached = new(atomic.Uint64)
	}
	c.plans[schema+"."+name] = cachedPlan{version, p}
}

// aggregateNames are the aggregate functions a dynamic table's query may
// call (lower case): a query calling one is planned as a summary.
var aggregateNames = map[string]bool{
	"count": true, "sum": true, "avg": true, "min": true, "max": true, "stddev": true, "variance": true,
	"any_value": true, "approx_count_distinct": true, "uniq": true, "uniqexact": true, "grouparray": true,
	"any": true, "anylast": true, "argmin": true, "argmax": true, "median": true, "count_if": true,
}

// perRowFuncs are the functions (lower case) known to give, for one row,
// one value that depends on that row only: a query calling only these has
// rows that each come from one source row, and can be appended to as new
// rows come. Others (now(), rand(), aggregates, window functions, any not
// listed) make the refresh FULL.
var perRowFuncs = map[string]bool{
	"upper": true, "lower": true, "length": true, "char_length": true, "substr": true, "substring": true,
	"concat": true, "coalesce": true, "ifnull": true, "nvl": true, "nullif": true, "if": true, "iff": true,
	"abs": true, "round": true, "floor": true, "ceil": true, "to_date": true, "date": true, "to_timestamp": true,
	"year": true, "month": true, "day": true, "dayofmonth": true, "hour": true, "minute": true, "second": true,
	"trim": true, "ltrim": true, "rtrim": true, "replace": true, "split": true, "md5": true,
	"todate": true, "todatetime": true, "tostring": true, "toint64": true, "toyear": true, "tomonth": true,
	"tostartofday": true, "tostartofhour": true, "parse_json": true, "to_json": true, "json": true,
}

// hasAggregate reports whether a SELECT calls an aggregate function.
func hasAggregate(sel *sqlast.Select) bool {
	found := false
	for _, it := range sel.Items {
		sqlast.Inspect(it.Expr, func(n any) bool {
			if f, ok := n.(*sqlast.FuncCall); ok && aggregateNames[strings.ToLower(f.Name)] {
				found = true
			}
			return !found
		})
	}
	return found
}

// perRow says why a SELECT's rows do not each come from one source row
// ("" when they do).
func perRow(sel *sqlast.Select) string {
	if sel.Distinct || sel.Having != nil || len(sel.GroupBy) > 0 {
		return "it has DISTINCT, GROUP BY or HAVING"
	}
	why := ""
	check := func(x sqlast.Expr) {
		sqlast.Inspect(x, func(n any) bool {
			switch n := n.(type) {
			case *sqlast.SubqueryExpr, *sqlast.ExistsExpr:
				why = "it has a subquery"
			case *sqlast.InExpr:
				if n.Query != nil {
					why = "it has a subquery"
				}
			case *sqlast.FuncCall:
				if n.Over != nil || !perRowFuncs[strings.ToLower(n.Name)] {
					why = "function " + strings.ToUpper(n.Name) + " is not known to give one value per row (it may aggregate, or change with time)"
				}
			}
			return why == ""
		})
	}
	for _, it := range sel.Items {
		if !it.Star {
			check(it.Expr)
		}
	}
	if sel.Where != nil {
		check(sel.Where)
	}
	var joins func(r sqlast.TableRef)
	joins = func(r sqlast.TableRef) {
		if j, ok := r.(*sqlast.JoinRef); ok {
			joins(j.Left)
			if j.On != nil {
				check(j.On)
			}
		}
	}
	for _, f := range sel.From {
		joins(f)
	}
	return why
}

// srcColumn is the column of an append plan's state holding the commit of
// the source row each row came from: with the row's identity (rowColumn)
// it finds the rows that a deleted or updated source row gave.
const srcColumn = "_lp_src"

// sourceAlias is the name the changing table of a FROM (its leftmost
// table, incFrom) is known by in the query.
func sourceAlias(r sqlast.TableRef) string {
	for {
		switch x := r.(type) {
		case *sqlast.JoinRef:
			r = x.Left
		case *sqlast.TableName:
			if x.Alias != "" {
				return x.Alias
			}
			return x.Name.Parts[len(x.Name.Parts)-1]
		default:
			return ""
		}
	}
}

// planAppend plans a query whose rows each come from one row of a changing
// table (projections and filters of it, joins of it with dimension tables,
// UNION ALL of those): a refresh appends the rows its new source rows give.
func (e *Refresher) planAppend(ctx context.Context, q *sqlast.Query) (*incPlan, string) {
	var selects []*sqlast.Select
	var walk func(b sqlast.SetExpr) string
	walk = func(b sqlast.SetExpr) string {
		switch x := b.(type) {
		case *sqlast.Select:
			selects = append(selects, x)
			return ""
		case *sqlast.SetOp:
			if x.Op != "UNION" || !x.All {
				return "it has " + x.Op + " (UNION ALL is refreshed incrementally)"
			}
			if why := walk(x.Left); why != "" {
				return why
			}
			return walk(x.Right)
		}
		return "it has a nested query with ORDER BY or LIMIT"
	}
	// A copy: each SELECT gets the source commit and identity of its rows
	// as two more columns, and the caller's query stays as written.
	q, err := sqlparse.ParseQuery(sqlast.FormatQuery(q))
	if err != nil {
		return nil, err.Error()
	}
	if why := walk(q.Body); why != "" {
		return nil, why
	}
	sess := e.Session(ctx)
	defer sess.Close()
	p := &incPlan{appendRows: true, in: e.GlobalIn()}
	for _, sel := range selects {
		if why := perRow(sel); why != "" {
			return nil, why
		}
		if why := e.incFrom(ctx, p, sel.From); why != "" {
			return nil, why
		}
		alias := sourceAlias(sel.From[0])
		sel.Items = append(sel.Items,
			sqlast.SelectItem{Expr: &sqlast.ColumnRef{Parts: []string{alias, core.CommitColumn}}, Alias: srcColumn},
			sqlast.SelectItem{Expr: &sqlast.ColumnRef{Parts: []string{alias, rowColumn}}, Alias: rowColumn})
	}
	if why := p.crossCheck(); why != "" {
		return nil, why
	}
	e.deltaTables(sess, p)
	body, err := sess.Tr.Query(q)
	if err != nil {
		return nil, err.Error()
	}
	p.body = body
	if len(p.dims) > 0 {
		if why := e.appendBranches(sess, p, selects); why != "" {
			return nil, why
		}
	}
	return p, ""
}

// appendBranches records the SELECTs of an append plan that join
// dimension tables, each with its FROM translated with the dimension
// tables at dimToken.
func (e *Refresher) appendBranches(sess *query.Session, p *incPlan, selects []*sqlast.Select) string {
	tableRef := sess.Tr.Table
	defer func() { sess.Tr.Table = tableRef }()
	var b appendBranch
	sess.Tr.Table = func(n sqlast.ObjectName) (string, error) {
		if schema, table, err := e.Qualify(n); err == nil {
			if j := slices.IndexFunc(p.dims, incSource{schema: schema, table: table}.same); j >= 0 {
				b.dims = append(b.dims, j)
				return dimToken(j), nil
			}
			if i := slices.IndexFunc(p.sources, incSource{schema: schema, table: table}.same); i >= 0 {
				b.source = i
			}
		}
		return tableRef(n)
	}
	for _, sel := range selects {
		b = appendBranch{alias: sourceAlias(sel.From[0])}
		from, err := sess.Tr.From(sel.From)
		if err != nil {
			return err.Error()
		}
		if len(b.dims) > 0 {
			b.from = from
			p.branches = append(p.branches, b)
		}
	}
	return ""
}
