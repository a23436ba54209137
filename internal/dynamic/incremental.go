package dynamic

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"

	"github.com/lakepipe/lakepipe/internal/catalog"
	"github.com/lakepipe/lakepipe/internal/changes"
	"github.com/lakepipe/lakepipe/internal/chsql"
	"github.com/lakepipe/lakepipe/internal/chstore"
	"github.com/lakepipe/lakepipe/internal/core"
	"github.com/lakepipe/lakepipe/internal/jobs"
	"github.com/lakepipe/lakepipe/schemas"
)

func stateTable(schema, name string) string { return "dt__" + schema + "__" + name }

// stateColumns are the state table's columns, in stateSelect's order.
func (p *incPlan) stateColumns() string {
	cols := make([]string, 0, len(p.keys)+2*len(p.aggs)+1)
	for i := range p.keys {
		cols = append(cols, chsql.QuoteIdent(fmt.Sprintf("k%d", i)))
	}
	for i := range p.aggs {
		cols = append(cols, chsql.QuoteIdent(fmt.Sprintf("a%d", i)))
	}
	for j := range p.guards() {
		cols = append(cols, chsql.QuoteIdent(fmt.Sprintf("n%d", j)))
	}
	return strings.Join(append(cols, "_lp_rows", "_lp_upto", "_lp_marker"), ", ")
}

// stateFn is the aggregate function whose state an aggregate keeps
// (state).
func (a incAgg) stateFn() string {
	if a.fn == "count" || a.signed() {
		return "sum"
	}
	return a.fn
}

// markerRow is a summary state's marker row bringing it to version upto
// (stateColumns' order): empty states of every aggregate (-MergeState of
// no rows), the version, _lp_marker = 1. It comes only if the checks
// hold: the HAVING of an aggregate over no rows, which gives one row.
// Written in the same INSERT as the groups, it makes the version appear
// with them; AggregatingMergeTree folds the marker rows into one (their
// key is the same), so reading the version (stateVersion) reads one row,
// not every group.
func (p *incPlan) markerRow(state string, upto uint64, checks []string) string {
	cols := make([]string, 0, len(p.keys)+len(p.aggs)+4)
	for i := range p.keys {
		cols = append(cols, "any("+chsql.QuoteIdent(fmt.Sprintf("k%d", i))+")")
	}
	for i, a := range p.aggs {
		cols = append(cols, a.stateFn()+"MergeState("+chsql.QuoteIdent(fmt.Sprintf("a%d", i))+")")
	}
	for j := range p.guards() {
		cols = append(cols, "sumMergeState("+chsql.QuoteIdent(fmt.Sprintf("n%d", j))+")")
	}
	// A constant, not maxState(): an aggregate of no rows is empty.
	cols = append(cols, "sumMergeState(_lp_rows)", "arrayReduce('maxState', [toUInt64("+strconv.FormatUint(upto, 10)+")])", "toUInt8(1)")
	q := "SELECT " + strings.Join(cols, ", ") + " FROM " + state + " WHERE 0"
	if len(checks) > 0 {
		q += " HAVING " + strings.Join(checks, " AND ")
	}
	return q
}

// markState writes the marker row of a state no one reads yet (a state
// being built): its version is upto.
func markState(table string, upto uint64) string {
	return "INSERT INTO " + table + " (_lp_marker, _lp_upto) SELECT toUInt8(1), arrayReduce('maxState', [toUInt64(" + strconv.FormatUint(upto, 10) + ")])"
}

// guards are the distinct arguments of the guarded aggregates: the state
// keeps a count of the values of each, n<j>.
func (p *incPlan) guards() []string {
	var out []string
	for _, a := range p.aggs {
		if a.guarded() && !slices.Contains(out, a.arg) {
			out = append(out, a.arg)
		}
	}
	return out
}

// guarded reports whether an aggregate is NULL for a group with no value
// (SUM, MIN, MAX, AVG of only NULLs): its state then comes with a count
// of the values of its argument (see guards), because ClickHouse's -State
// drops the NULL case (and avgMerge of no values fails for Decimals).
func (a incAgg) guarded() bool { return a.fn != "count" && a.fn != "uniqExact" }

// signed reports whether an aggregate can take rows back: its state is a
// sum of the rows' contributions times their sign (COUNT, SUM, AVG). MIN,
// MAX and COUNT(DISTINCT) cannot: removing a value needs the others.
func (a incAgg) signed() bool { return a.fn == "count" || a.fn == "sum" || a.fn == "avg" }

// state is the state an aggregate keeps of the signed rows: a signed
// sum (AVG keeps the sum, divided by the count of values when read), or
// the aggregate's own state.
func (a incAgg) state() string {
	switch {
	case a.fn == "count" && a.arg == "":
		return "sumState(toInt64(_lp_sign))"
	case a.fn == "count":
		return signedCount(a.arg)
	case a.signed():
		return "sumState((" + a.arg + ") * _lp_sign)"
	}
	return a.fn + "State(" + a.arg + ")"
}

// signedCount is the state of the signed count of the rows where x is not
// NULL.
func signedCount(x string) string {
	return "sumState(if(isNull(" + x + "), toInt64(0), toInt64(_lp_sign)))"
}

// merged reads aggregate i from the state.
func (p *incPlan) merged(i int) string {
	a := p.aggs[i]
	st := chsql.QuoteIdent(fmt.Sprintf("a%d", i))
	if !a.guarded() {
		if a.fn == "count" {
			return "toUInt64(sumMerge(" + st + "))"
		}
		return a.fn + "Merge(" + st + ")"
	}
	n := "sumMerge(" + chsql.QuoteIdent(fmt.Sprintf("n%d", slices.Index(p.guards(), a.arg))) + ")"
	var v string
	switch a.fn {
	case "avg":
		v = "sumMerge(" + st + ") / greatest(" + n + ", 1)"
	case "sum":
		v = "sumMerge(" + st + ")"
	default:
		v = a.fn + "Merge(" + st + ")"
	}
	return "if(" + n + " <= 0, NULL, " + v + ")"
}

// stateSelect aggregates the signed rows of the changing table that rows
// renders (see signedRows) into state rows that bring the state to
// version upto; checks are conditions the statement must pass to read
// anything.
func (p *incPlan) stateSelect(rows func(incSource) string, upto uint64, checks []string) string {
	cols := make([]string, 0, len(p.keys)+len(p.aggs)+2)
	for i, k := range p.keys {
		cols = append(cols, k+" AS "+chsql.QuoteIdent(fmt.Sprintf("k%d", i)))
	}
	for i, a := range p.aggs {
		cols = append(cols, a.state()+" AS "+chsql.QuoteIdent(fmt.Sprintf("a%d", i)))
	}
	for j, arg := range p.guards() {
		cols = append(cols, signedCount(arg)+" AS "+chsql.QuoteIdent(fmt.Sprintf("n%d", j)))
	}
	cols = append(cols, "sumState(toInt64(_lp_sign)) AS _lp_rows", "maxState(toUInt64("+strconv.FormatUint(upto, 10)+")) AS _lp_upto", "toUInt8(0) AS _lp_marker")
	q := "SELECT " + strings.Join(cols, ", ") + " FROM " + p.renderRows(p.from, rows)
	where := checks
	if p.where != "" {
		where = append([]string{"(" + p.where + ")"}, checks...)
	}
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	return q + " GROUP BY " + strings.Join(p.keys, ", ")
}

// groupsIn is SQL counting the groups the signed rows that rows renders
// give (passing the WHERE): the rows stateSelect writes, counted from the
// delta rather than from the state, so that the count follows the delta,
// not the summary's number of groups.
func (p *incPlan) groupsIn(rows func(incSource) string) string {
	q := "SELECT 1 FROM " + p.renderRows(p.from, rows)
	if p.where != "" {
		q += " WHERE (" + p.where + ")"
	}
	return "(SELECT count() FROM (" + q + " GROUP BY " + strings.Join(p.keys, ", ") + "))"
}

// stateOrderBy is the state table's sorting key: the group keys, so that
// ClickHouse's background merges fold each group's partial aggregates
// into one row, after _lp_marker, so that the marker row (markerRow) is
// found by the index. isNull/assumeNotNull admit NULL keys (18.16 refuses
// Nullable sorting columns) and keep them apart from the type's default.
func (p *incPlan) stateOrderBy() string {
	return "(_lp_marker, " + keyList(p.stateKeys()) + ")"
}

// stateKeys are the state's group key columns, quoted.
func (p *incPlan) stateKeys() []string {
	keys := make([]string, len(p.keys))
	for i := range p.keys {
		keys[i] = chsql.QuoteIdent(fmt.Sprintf("k%d", i))
	}
	return keys
}

// viewSelect is the dynamic table as a view of its state: each group's
// partial aggregates merged (or the rows kept), with the outer queries of
// the dynamic tables it reads through applied over them.
func (p *incPlan) viewSelect(state string) string {
	v := p.baseView(state)
	for _, o := range p.outers {
		v = strings.ReplaceAll(o, viewToken, "("+v+")")
	}
	return v
}

// baseView is the view of the state itself.
func (p *incPlan) baseView(state string) string {
	if p.appendRows {
		cols := make([]string, len(p.cols))
		for i, c := range p.cols {
			cols[i] = chsql.QuoteIdent(c)
		}
		// Rows taken back are left out by the (source commit, source
		// row, version written) of the _lp_marker = 2 rows (appendDelta).
		return "SELECT " + strings.Join(cols, ", ") + " FROM " + state + " WHERE _lp_marker = 0 AND " + retractedRows(state, "NOT IN")
	}
	cols := make([]string, len(p.order))
	for i, o := range p.order {
		if o >= 0 {
			cols[i] = chsql.QuoteIdent(fmt.Sprintf("k%d", o)) + " AS " + chsql.QuoteIdent(p.names[i])
		} else {
			cols[i] = p.merged(-o-1) + " AS " + chsql.QuoteIdent(p.names[i])
		}
	}
	groups := p.stateKeys()
	// A group whose rows were all taken back is gone.
	return "SELECT " + strings.Join(cols, ", ") + " FROM " + state + " WHERE _lp_marker = 0 GROUP BY " + strings.Join(groups, ", ") + " HAVING sumMerge(_lp_rows) > 0"
}

// committedUpTo is the condition on _lp_commit selecting the rows of a
// source's commits registered at or below version hi (baseline included).
// It names the commits that are not (changes.CommittedBy): those
// registered later and the loads under way, a few, where the commits
// registered up to hi are every load the table ever had.
func (p *incPlan) committedUpTo(hi uint64) func(incSource) string {
	return func(src incSource) string {
		return changes.CommittedBy(chsql.QuoteIdent(core.CommitColumn), p.notIn(), src.schema, src.table, hi)
	}
}

// notIn is p.in negated.
func (p *incPlan) notIn() string {
	if strings.Contains(p.in, "GLOBAL") {
		return " GLOBAL NOT IN "
	}
	return " NOT IN "
}

// signedRows renders, as a subquery, the rows of a changing table a
// summary's state is built from, each with _lp_sign 1: the rows present at
// version hi, those of commits up to hi and those removed by a commit
// after hi (kept in the change table). Refreshes from a state take the
// signed rows of their window (windowRows): -1 for rows to take back.
func (p *incPlan) signedRows(src incSource, hi uint64) string {
	cols := strings.Join(p.usedColumns(src), ", ")
	commit, orig := chsql.QuoteIdent(core.CommitColumn), chsql.QuoteIdent(changes.OrigCommitColumn)
	part := func(from, filter, where string) string {
		return "SELECT " + cols + ", " + signColumn("1") + " FROM " + from + filter + where
	}
	removedLater := commitSet(src, fmt.Sprintf("version > %d", hi), changes.CommitDelete, changes.CommitUpdate)
	table, filter := src.rows()
	// The change table is on this server: never GLOBAL.
	return "(" + part(table, filter, p.committedUpTo(hi)(src)) + " UNION ALL " +
		part(changesTableOf(src), " PREWHERE ", commit+" IN "+removedLater+" AND "+changes.CommittedBy(orig, " NOT IN ", src.schema, src.table, hi)) + ")"
}

// usedColumns lists, quoted, the columns of src that the summary's
// translated SQL names: the signed rows carry only those, as ClickHouse
// 18.16 reads every column a UNION ALL subquery selects. A name found
// where it is not a column of src only costs its read.
func (p *incPlan) usedColumns(src incSource) []string {
	text := strings.ToLower(strings.Join(append([]string{p.from, p.where}, p.keys...), " "))
	for _, a := range p.aggs {
		text += " " + strings.ToLower(a.arg)
	}
	var out []string
	for _, c := range src.cols {
		if q := chsql.QuoteIdent(c); strings.Contains(text, strings.ToLower(q)) {
			out = append(out, q)
		}
	}
	if len(out) == 0 && len(src.cols) > 0 {
		out = append(out, chsql.QuoteIdent(src.cols[0])) // COUNT(*) alone still needs a column
	}
	return out
}

// commitSet is a subquery of the ids of a table's commits whose versions
// cond picks, of one of kinds (any kind when none).
func commitSet(src incSource, cond string, kinds ...string) string {
	return "(SELECT commit_id FROM lakepipe.table_commits WHERE " + commitWhere(src, cond, kinds...) + ")"
}

// commitWhere is the condition on lakepipe.table_commits of commitSet.
func commitWhere(src incSource, cond string, kinds ...string) string {
	q := changes.TableWhere(src.schema, src.table) + " AND " + cond
	if len(kinds) > 0 {
		q += " AND kind IN (" + chsql.StringList(kinds) + ")"
	}
	return q
}

// stateVersion is SQL reading the version a state brings its dynamic table
// to. An append plan's state keeps a marker row per refresh (plain
// MergeTree: nothing folds them), ordered by version after constant key
// columns: lo, a version the state is known to have reached (0: none),
// makes the read take only the markers from it on, a few granules, where
// reading them all cost ~7 ms at 525,000 markers (a year of refreshes a
// minute apart) against ~2.4 ms from a bound (measured on ClickHouse
// 18.16). A state's version never goes back, so a bound too high can only
// come from another process's clock: the read gives 0 then (readWindow
// reads again without it).
func (p *incPlan) stateVersion(state string, lo uint64) string {
	if p.appendRows {
		bound := ""
		if lo > 0 {
			bound = " AND _lp_upto >= " + strconv.FormatUint(lo, 10)
		}
		return "(SELECT max(_lp_upto) FROM " + state + " PREWHERE _lp_marker = 1" + bound + ")"
	}
	return "(SELECT maxMerge(_lp_upto) FROM " + state + " PREWHERE _lp_marker = 1)"
}

// touched counts the rows of the state that the refresh to version hi
// wrote: groups (new or changed), or rows appended (appendDelta counts
// those of an incremental refresh by their commits).
func (p *incPlan) touched(state string, hi uint64) string {
	if p.appendRows {
		return fmt.Sprintf("(SELECT count() FROM %s PREWHERE _lp_marker = 0 AND _lp_upto = %d)", state, hi)
	}
	return fmt.Sprintf("(SELECT count() FROM %s PREWHERE _lp_marker = 0 WHERE finalizeAggregation(_lp_upto) = %d)", state, hi)
}

// rows is SQL counting the rows a refresh to hi wrote.
func (d deltaDone) rows(p *incPlan, state string, hi uint64) string {
	if d.touched != "" {
		return d.touched
	}
	return p.touched(state, hi)
}

// maxRetractShare: an incremental refresh of a table of rows that would
// take back at least 1/maxRetractShare of its state's rows (hidden ones
// included) rebuilds it instead.
const maxRetractShare = 2

// deltaDone is what an incremental refresh did: regrouped, a summary's
// groups that removed rows touched were recomputed; touched, when not "",
// is SQL counting the rows it wrote (else incPlan.touched); deleted, the
// rows it took back from an append plan's state.
type deltaDone struct {
	regrouped bool
	rejoined  bool // an append plan's rows of source rows joining changed rows of a joined table were written again
	touched   string
	deleted   int64
}

// incrementalDelta adds to the state what the rows committed after its
// version, up to hi, bring: one INSERT writing one part, so the new rows
// (or partial aggregates) and the version they bring the state to appear
// together, to the dynamic table's readers too (a view of the state). It
// reads its starting version in the same statement, so running it twice
// adds nothing the second time. checks must hold for it to run.
func (e *Refresher) incrementalDelta(ctx context.Context, schema, name string, p *incPlan, hi uint64, checks []string) (d deltaDone, err error) {
	if !p.appendRows {
		state := chsql.Table(schemas.ChangesDB, stateTable(schema, name))
		for try := 0; ; try++ {
			w, err := e.readWindow(ctx, p, state, checks)
			if err != nil {
				return d, err
			}
			fresh := stateTable(schema, name) + "__new_" + core.NewLoadID()
			st, err := p.summaryDelta(state, fresh, w, hi, nil)
			if err != nil || st == nil {
				return d, err
			}
			// A failed check: a DELETE or UPDATE of the window's rows
			// under way (removalsUnderWay) registers within moments;
			// the state moved (another refresh) shows in the next read
			// of the window.
			if st.insert != "" {
				d.touched, err = e.insertCounting(ctx, st.insert, st.touched)
			} else {
				err = e.regroup(ctx, schema, name, st)
			}
			if err == nil || !chstore.IsCode(err, chstore.CodeThrowIf) || try == removalWaits {
				d.regrouped = err == nil && st.fresh != ""
				return d, err
			}
			select {
			case <-ctx.Done():
				return d, ctx.Err()
			case <-time.After(removalWait):
			}
		}
	}
	state := chsql.Table(schemas.ChangesDB, stateTable(schema, name))
	w, err := e.readWindow(ctx, p, state, checks)
	if err != nil {
		return d, err
	}
	st, err := p.appendDelta(state, w, hi, nil)
	if err != nil {
		return d, err
	}
	if st.deleted != "" {
		res, err := e.St.Query(ctx, "SELECT toInt64(("+st.deleted+")), toInt64((SELECT count() FROM "+state+" PREWHERE _lp_marker = 0))")
		if err != nil {
			return d, err
		}
		if len(res.Rows) != 1 || len(res.Rows[0]) != 2 {
			return d, fmt.Errorf("counting the rows to take back from %s gave no row", state)
		}
		d.deleted, _ = res.Rows[0][0].(int64)
		rows, _ := res.Rows[0][1].(int64)
		if d.deleted > 0 && d.deleted*maxRetractShare >= rows {
			// Taking back and writing again that many rows costs what
			// a rebuild does, and the rebuild leaves nothing hidden.
			return d, &fullNeeded{fmt.Sprintf("the rows deleted or updated in %s since the last refresh, or joining the changed rows of a joined table, gave %d of the %d rows of the state, too many to be taken back: the dynamic table is recomputed", p.sourceNames(), d.deleted, rows)}
		}
	}
	d.touched, d.rejoined = st.touched, st.rejoined
	return d, e.St.Exec(chstore.OneBlock(ctx), st.insert)
}

// insertCounting runs a summary's INSERT and, beside it on another
// connection, count: SQL counting the groups it writes from the delta, not
// from the state, so it need not wait for the INSERT. It returns the count
// as a literal for the refresh history's row, whose INSERT then reads
// nothing (counting there after the INSERT was ~10 ms of a ~40 ms refresh
// here); if the count failed, count itself, for the history to try again.
func (e *Refresher) insertCounting(ctx context.Context, insert, count string) (string, error) {
	n := make(chan string, 1)
	go func() {
		res, err := e.St.Query(ctx, "SELECT toInt64("+count+")")
		if err != nil || len(res.Rows) != 1 || len(res.Rows[0]) != 1 {
			n <- count
			return
		}
		v, _ := res.Rows[0][0].(int64)
		n <- strconv.FormatInt(v, 10)
	}()
	err := e.St.Exec(chstore.WithSettings(chstore.OneBlock(ctx), smallPartWrites), insert)
	return <-n, err
}

// smallPartWrites are the settings of a summary's state INSERT, which
// writes one row per group the delta touched: compression blocks of 64 KiB
// rather than 1 MiB, as ClickHouse allocates a buffer of that size for
// each column file of the part it writes (12 here) whatever the rows; ~1 ms
// of an INSERT of ~11 ms on ClickHouse 18.16 (p50 of 41, three runs).
var smallPartWrites = clickhouse.Settings{"max_compress_block_size": 64 << 10, "min_compress_block_size": 4 << 10}

// regroup builds a summary's state afresh from its state, with the groups
// that removed rows touched recomputed, and swaps it in.
func (e *Refresher) regroup(ctx context.Context, schema, name string, st *summaryStmts) error {
	for _, q := range st.regroup {
		if err := e.St.Exec(ctx, q); err != nil {
			_ = e.St.Exec(context.WithoutCancel(ctx), "DROP TABLE IF EXISTS "+chsql.Table(schemas.ChangesDB, st.fresh))
			return err
		}
	}
	return e.swapNames(ctx, schemas.ChangesDB, stateTable(schema, name), st.fresh)
}

// How long a summary's refresh waits for a DELETE or UPDATE of its
// window's rows to register: removalWaits times removalWait (the
// statement's mutation, then its commit), before it gives up on the
// incremental refresh.
const (
	removalWait  = 200 * time.Millisecond
	removalWaits = 50
)

// incrementalFull rebuilds a summary's state from the rows of commits up
// to hi, and makes the dynamic table the view of it. rows counts its
// groups now, deleted those it had.
func (e *Refresher) incrementalFull(ctx context.Context, schema, name string, p *incPlan, hi uint64) (rows, deleted int64, err error) {
	if err := e.St.Exec(ctx, "CREATE DATABASE IF NOT EXISTS "+chsql.QuoteIdent(schemas.ChangesDB)); err != nil {
		return 0, 0, err
	}
	deleted = e.rowCount(ctx, chsql.Table(schema, name))
	fresh := stateTable(schema, name) + "__new_" + core.NewLoadID()
	freshTable := chsql.Table(schemas.ChangesDB, fresh)
	if err := e.buildState(ctx, p, freshTable, hi); err != nil {
		_ = e.St.Exec(context.Background(), "DROP TABLE IF EXISTS "+freshTable)
		return 0, 0, core.QueryError(err)
	}
	rows = e.rowCount(ctx, freshTable) - 1 // the marker
	if err := e.swapNames(ctx, schemas.ChangesDB, stateTable(schema, name), fresh); err != nil {
		return 0, 0, err
	}
	// The view reads the state by name, so it goes on showing the state
	// the next refreshes add to; it is made again here in case the query
	// (or an older release's table) had the name.
	view := name + "__new_" + core.NewLoadID()
	if err := e.St.Exec(ctx, "CREATE VIEW "+chsql.Table(schema, view)+" AS "+p.viewSelect(chsql.Table(schemas.ChangesDB, stateTable(schema, name)))); err != nil {
		return 0, 0, core.QueryError(err)
	}
	return rows, deleted, e.swapNames(ctx, schema, name, view)
}

// buildState creates table as a summary's state holding the rows of
// commits up to hi.
func (e *Refresher) buildState(ctx context.Context, p *incPlan, table string, hi uint64) error {
	for _, q := range p.stateDDL(table, hi) {
		if err := e.St.Exec(ctx, q); err != nil {
			return err
		}
	}
	if !p.appendRows {
		return nil
	}
	return e.appendColumns(ctx, p, table)
}

// stateDDL are the statements of buildState, to run in order.
func (p *incPlan) stateDDL(table string, hi uint64) []string {
	if !p.appendRows {
		return []string{"CREATE TABLE " + table + " ENGINE = AggregatingMergeTree ORDER BY " + p.stateOrderBy() + " AS " + p.stateSelect(func(src incSource) string {
			return p.signedRows(src, hi)
		}, hi, nil), markState(table, hi)}
	}
	upto := strconv.FormatUint(hi, 10)
	return []string{
		"CREATE TABLE " + table + " ENGINE = MergeTree ORDER BY (_lp_marker, " + srcColumn + ", " + rowColumn + ", _lp_upto) AS SELECT *, toUInt8(0) AS _lp_marker, toUInt64(" + upto + ") AS _lp_upto FROM (" +
			p.render(p.body, p.committedUpTo(hi)) + ")",
		"INSERT INTO " + table + " (_lp_marker, _lp_upto) SELECT toUInt8(1), toUInt64(" + upto + ")",
	}
}

// appendColumns learns the columns of an append plan's state.
func (e *Refresher) appendColumns(ctx context.Context, p *incPlan, table string) error {
	res, err := e.St.Query(ctx, "SELECT * FROM "+table+" LIMIT 0")
	if err != nil {
		return err
	}
	p.cols = nil
	for _, c := range res.Columns {
		if c != "_lp_marker" && c != "_lp_upto" && c != srcColumn && c != rowColumn {
			p.cols = append(p.cols, c)
		}
	}
	return nil
}

// rowCount counts a table's rows; 0 when it cannot (no such table yet).
func (e *Refresher) rowCount(ctx context.Context, table string) int64 {
	n, err := e.St.Strings(ctx, "SELECT count() FROM "+table)
	if err != nil || len(n) != 1 {
		return 0
	}
	v, _ := strconv.ParseInt(n[0], 10, 64)
	return v
}

// swapNames gives table fresh of db the name name at once, dropping what
// had it: one RENAME statement swaps both names, so readers never find the
// name missing. fresh is dropped if the swap fails.
func (e *Refresher) swapNames(ctx context.Context, db, name, fresh string) error {
	old := name + "__old_" + core.NewLoadID()
	err := e.St.Exec(ctx, "RENAME TABLE "+chsql.Table(db, name)+" TO "+chsql.Table(db, old)+", "+chsql.Table(db, fresh)+" TO "+chsql.Table(db, name))
	if chstore.IsCode(err, chstore.CodeUnknownTable) {
		// Nothing has the name yet: a first refresh.
		err = e.St.Exec(ctx, "RENAME TABLE "+chsql.Table(db, fresh)+" TO "+chsql.Table(db, name))
	}
	if err != nil {
		_ = e.St.Exec(context.Background(), "DROP TABLE IF EXISTS "+chsql.Table(db, fresh))
		return err
	}
	_ = e.St.Exec(ctx, "DROP TABLE IF EXISTS "+chsql.Table(db, old))
	return nil
}

// swapIn makes a dynamic table's contents the result of a query, at once.
func (e *Refresher) swapIn(ctx context.Context, schema, name, query string) (rows, deleted int64, err error) {
	fresh := name + "__new_" + core.NewLoadID()
	if err := e.St.Exec(ctx, "CREATE TABLE "+chsql.Table(schema, fresh)+" ENGINE = MergeTree ORDER BY tuple() AS "+query); err != nil {
		_ = e.St.Exec(context.Background(), "DROP TABLE IF EXISTS "+chsql.Table(schema, fresh))
		return 0, 0, core.QueryError(err)
	}
	// One read of ClickHouse's own tables counts the new rows and the old.
	// 18.16 lists system.parts table by table and fails when one of the
	// schema's tables is renamed meanwhile (another dynamic table's swap):
	// that is worth another try.
	var res *chstore.Result
	for try := 0; ; try++ {
		res, err = e.St.Query(ctx, "SELECT table, sum(rows) FROM system.parts WHERE active AND database = "+chsql.QuoteString(schema)+
			" AND table IN ("+chsql.QuoteString(name)+", "+chsql.QuoteString(fresh)+") GROUP BY table")
		if err == nil || try == 4 || !chstore.IsCode(err, chstore.CodeUnknownTable) {
			break
		}
	}
	if err != nil {
		_ = e.St.Exec(context.Background(), "DROP TABLE IF EXISTS "+chsql.Table(schema, fresh))
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
func (e *Refresher) refreshIncremental(ctx context.Context, schema, name string, spec catalog.DynamicTableSpec, p *incPlan, forceFull bool) (rowsExpr string, deleted int64, mode jobs.RefreshMode, reason string, err error) {
	hi := changes.ChangeReadHorizon()
	switch {
	case spec.ChangeVersion == 0:
		reason = "first refresh: the state of the summary is built"
	case spec.StateOf != p.stateOf():
		reason = p.rebuildReason(spec.StateOf)
	case forceFull:
		reason = "a full refresh was asked for"
	default:
		var done deltaDone
		var err error
		if p.appendRows && len(p.cols) == 0 {
			err = e.appendColumns(ctx, p, chsql.Table(schemas.ChangesDB, stateTable(schema, name)))
		}
		if err == nil {
			done, err = e.incrementalDelta(ctx, schema, name, p, hi, nil)
		}
		if err == nil {
			return done.rows(p, chsql.Table(schemas.ChangesDB, stateTable(schema, name)), hi), done.deleted, jobs.RefreshIncremental, p.deltaReason(done), nil
		}
		var fn *fullNeeded
		switch {
		case errors.As(err, &fn):
			reason = fn.reason
		case chstore.IsCode(err, chstore.CodeThrowIf):
			reason = e.fullReason(ctx, p, chsql.Table(schemas.ChangesDB, stateTable(schema, name)), hi)
		case chstore.IsCode(err, chstore.CodeUnknownTable):
			reason = "the summary's state was missing, so it was rebuilt"
		default:
			reason = "the incremental refresh failed (" + err.Error() + "), so the summary was recomputed"
		}
	}
	rows, deleted, err := e.incrementalFull(ctx, schema, name, p, hi)
	return strconv.FormatInt(rows, 10), deleted, jobs.RefreshFull, reason, err
}

// summaryLayout marks, in DynamicTableSpec.StateOf, a summary's state of
// signed rows (_lp_sign, _lp_rows) whose version is in a marker row
// (_lp_marker = 1, 2026-12-07). States of earlier releases ("signed;",
// whose version was read from every group) are rebuilt once.
const summaryLayout = "marked;"

// sourcedLayout marks, in DynamicTableSpec.StateOf, an append plan's
// state whose rows carry their source commit and row (_lp_src, _lp_row).
// States of release 2026-12-05 ("sourced;", the commit alone) are rebuilt
// once.
const sourcedLayout = "rowed;"

// rebuildReason says why a state must be rebuilt when the spec's StateOf
// is not the plan's.
func (p *incPlan) rebuildReason(stateOf string) string {
	layout := summaryLayout
	if p.appendRows {
		layout = sourcedLayout
	}
	if !strings.HasPrefix(stateOf, layout) {
		return "the state was built by an earlier release of lakepipe, in a layout this release does not keep: it is rebuilt once"
	}
	return recreatedSource
}

// fullReason says why an incremental refresh to hi failed its checks
// (throwIf), looking at the change log after the state's version.
func (e *Refresher) fullReason(ctx context.Context, p *incPlan, state string, hi uint64) string {
	generic := "rows of " + p.sourceNames() + " were deleted or updated since the last refresh"
	if len(p.dims) > 0 {
		generic += ", or a table joined to them changed"
	}
	generic += ": the dynamic table is recomputed"
	v, err := e.St.Strings(ctx, "SELECT toString("+p.stateVersion(state, 0)+")")
	if err != nil || len(v) != 1 {
		return generic
	}
	from, _ := strconv.ParseUint(v[0], 10, 64)
	changed := func(s incSource, kinds ...string) bool {
		n, err := e.St.Strings(ctx, "SELECT toString(count()) FROM lakepipe.table_commits WHERE "+commitWhere(s, fmt.Sprintf("version > %d AND version <= %d", from, hi), kinds...))
		return err == nil && len(n) == 1 && n[0] != "0"
	}
	for _, s := range p.read() {
		if s.retained > from {
			return "the change log of " + core.Display(s.schema, s.table) + " was trimmed (data_retention_days) past the last refresh, so what it removed since is not known: the dynamic table is recomputed"
		}
	}
	for _, d := range p.dims {
		if changed(d) {
			return "table " + core.Display(d.schema, d.table) + ", joined to " + p.sourceNames() + ", changed since the last refresh: the dynamic table is recomputed"
		}
	}
	if !p.appendRows {
		// A summary's refresh fails its checks when the state moved or
		// a removal stayed under way (removalsUnderWay) past its waits.
		return "a DELETE or UPDATE of rows of " + p.sourceNames() + " was still under way (its rows copied to the change log, its commit not registered) after 10 s of waiting: the dynamic table is recomputed"
	}
	return generic
}

// unsigned lists the aggregates of a summary that cannot take rows back.
func (p *incPlan) unsigned() string {
	var names []string
	for _, a := range p.aggs {
		n := strings.ToUpper(a.fn)
		if a.fn == "uniqExact" {
			n = "COUNT(DISTINCT)"
		}
		if !a.signed() && !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	return strings.Join(names, ", ")
}

// recreatedSource is the reason to rebuild a state built from a table
// that was dropped and created again since, or whose columns changed (a
// table of rows: its rows' identities hash them), or built before
// lakepipe recorded what it was built from.
const recreatedSource = "a table it reads was created again, or its columns changed, since its state was built: the state is rebuilt"

// viaNote names the dynamic tables a plan reads through, for reasons.
func (p *incPlan) viaNote() string {
	if len(p.via) == 0 {
		return ""
	}
	names := make([]string, len(p.via))
	for i, s := range p.via {
		names[len(p.via)-1-i] = core.Display(s.schema, s.table)
	}
	return "over dynamic table " + strings.Join(names, " over ") + ", kept from " + p.sourceNames() + " (the queries between applied when it is read): "
}

// deltaReason is the history's reason for an incremental refresh.
func (p *incPlan) deltaReason(d deltaDone) string {
	if p.appendRows && (d.deleted > 0 || d.rejoined) {
		r := p.viaNote() + p.ownDeltaReason()
		if d.deleted > 0 {
			r += "; the rows that source rows deleted or updated since, or joining changed rows of a joined table, gave were taken back"
		}
		if d.rejoined {
			r += "; the rows of source rows joining changed rows of a joined table were written again"
		}
		return r
	}
	if d.regrouped {
		return p.viaNote() + p.ownDeltaReason() + "; the groups that rows deleted or updated since were in (when an aggregate cannot take rows back), or that changed rows of a joined table join, were recomputed"
	}
	return p.viaNote() + p.ownDeltaReason()
}

func (p *incPlan) ownDeltaReason() string {
	if p.appendRows {
		return "the rows committed to " + p.sourceNames() + " since the last refresh were added"
	}
	if p.retract {
		return "rows committed to " + p.sourceNames() + " since the last refresh were aggregated into the groups they touch, and rows deleted or updated taken back from theirs"
	}
	return "rows committed to " + p.sourceNames() + " since the last refresh were aggregated into the groups they touch"
}

// stateOf names the tables a state is built from, each with its creation
// time: a state built from a table dropped and created again since is of
// another table (see DynamicTableSpec.StateOf).
func (p *incPlan) stateOf() string {
	var b strings.Builder
	if !p.appendRows {
		// Summaries' states of signed rows with a marker row
		// (2026-12-07): a state built by an earlier release has other
		// columns and is rebuilt once.
		b.WriteString(summaryLayout)
	} else {
		// States of rows with their source rows (2026-12-06): likewise.
		b.WriteString(sourcedLayout)
	}
	for _, s := range p.read() {
		fmt.Fprintf(&b, "%s@%d;", core.Display(s.schema, s.table), s.created.UnixNano())
	}
	if p.appendRows {
		// The rows' identities hash the sources' columns: other columns
		// are other identities, and the state is rebuilt.
		for _, s := range p.sources {
			h := fnv.New64a()
			h.Write([]byte(s.rowHash()))
			fmt.Fprintf(&b, "rows %s/%x;", core.Display(s.schema, s.table), h.Sum64())
		}
	}
	// Read through dynamic tables: another query of one is another
	// state (and another view).
	for _, s := range p.via {
		h := fnv.New64a()
		h.Write([]byte(s.query))
		fmt.Fprintf(&b, "via %s@%d/%x;", core.Display(s.schema, s.table), s.created.UnixNano(), h.Sum64())
	}
	return b.String()
}

// sourceNames lists the changing tables.
func (p *incPlan) sourceNames() string {
	names := make([]string, len(p.sources))
	for i, s := range p.sources {
		names[i] = core.Display(s.schema, s.table)
	}
	return strings.Join(names, ", ")
}

// versionChecks are the catalog version checks of everything a cached
// plan was made from, besides the dynamic table's own spec.
func (p *incPlan) versionChecks() []string {
	var out []string
	for _, s := range p.read() {
		out = append(out, catalog.VersionCheck(catalog.KindTable, s.schema, s.table, s.version))
	}
	for _, s := range p.via {
		out = append(out, catalog.VersionCheck(catalog.KindDynamicTable, s.schema, s.table, s.version))
	}
	return out
}

// read lists every table a plan reads: the changing ones and the
// dimensions.
func (p *incPlan) read() []incSource { return slices.Concat(p.sources, p.dims) }
