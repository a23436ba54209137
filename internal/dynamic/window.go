package dynamic

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/lakepipe/lakepipe/internal/changes"
	"github.com/lakepipe/lakepipe/internal/chsql"
	"github.com/lakepipe/lakepipe/internal/core"
	"github.com/lakepipe/lakepipe/schemas"
)

// changeWindow is what the change log holds past a summary's state: the
// state's version and, for each table the plan reads (p.read() order), its
// commits after that version, oldest first. A summary's refresh reads it
// once, before its INSERT, and decides from it: the INSERT then names the
// commits it reads by id (half the cost of the same statement with the
// change-log subqueries inside, on ClickHouse 18.16), reads only the parts
// of the signed rows that have rows, or does not run when nothing is new.
type changeWindow struct {
	from    uint64
	commits [][]changes.CommitRef
}

// upTo splits the window's commits of read table i up to hi: added, those
// whose rows are in the table (INSERT, UPDATE), and removed, those that
// removed rows (DELETE, UPDATE; the rows in its change table).
func (w *changeWindow) upTo(i int, hi uint64) (added, removed []uint64) {
	for _, c := range w.commits[i] {
		if c.Version > hi {
			break // sorted by version
		}
		if c.Kind != changes.CommitDelete {
			added = append(added, c.ID)
		}
		if c.Kind == changes.CommitDelete || c.Kind == changes.CommitUpdate {
			removed = append(removed, c.ID)
		}
	}
	return added, removed
}

// fullNeeded is an incremental refresh that only a FULL one can take, and
// why.
type fullNeeded struct{ reason string }

func (f *fullNeeded) Error() string { return f.reason }

// readWindow reads a summary's state version and the commits after it of
// every table the plan reads, in one query, which also runs checks (the
// catalog version checks of a cached plan): a failed check fails it.
func (e *Refresher) readWindow(ctx context.Context, p *incPlan, state string, checks []string) (*changeWindow, error) {
	lo := uint64(0)
	if p.appendRows {
		lo = p.seen()
	}
	w, err := e.readWindowFrom(ctx, p, state, checks, lo)
	if err == nil && w.from == 0 && lo > 0 {
		w, err = e.readWindowFrom(ctx, p, state, checks, 0)
	}
	if err == nil {
		p.saw(w.from)
	}
	return w, err
}

// readWindowFrom is readWindow reading the state's version from lo on
// (stateVersion).
func (e *Refresher) readWindowFrom(ctx context.Context, p *incPlan, state string, checks []string, lo uint64) (*changeWindow, error) {
	read := p.read()
	tables := make([]string, len(read))
	for i, s := range read {
		tables[i] = "(db = " + chsql.QuoteString(s.schema) + " AND table = " + chsql.QuoteString(s.table) + ")"
	}
	// The checks are columns of the one row an aggregate without GROUP BY
	// always gives, so they run even when no commit matches.
	cols := append([]string{"toString(" + p.stateVersion(state, lo) + ") AS _lp_from",
		"groupArray(db)", "groupArray(table)", "groupArray(commit_id)", "groupArray(version)", "groupArray(kind)"}, checks...)
	missed := ""
	if lo > 0 {
		// No marker from lo on: the caller reads again without the
		// bound; meanwhile, no commit.
		missed = " AND _lp_from != '0'"
	}
	res, err := e.St.Query(ctx, "SELECT "+strings.Join(cols, ", ")+" FROM lakepipe.table_commits WHERE ("+
		strings.Join(tables, " OR ")+") AND version > toUInt64(_lp_from)"+missed)
	if err != nil {
		return nil, err
	}
	if len(res.Rows) != 1 {
		return nil, errors.New("reading the change log after the state's version gave no row")
	}
	r := res.Rows[0]
	w := &changeWindow{commits: make([][]changes.CommitRef, len(read))}
	w.from, err = strconv.ParseUint(r[0].(string), 10, 64)
	if err != nil {
		return nil, fmt.Errorf("the state's version %q: %w", r[0], err)
	}
	dbs, names, ids, versions, kinds := r[1].([]string), r[2].([]string), r[3].([]uint64), r[4].([]uint64), r[5].([]string)
	for j := range ids {
		i := slices.IndexFunc(read, incSource{schema: dbs[j], table: names[j]}.same)
		if i >= 0 {
			w.commits[i] = append(w.commits[i], changes.CommitRef{Version: versions[j], ID: ids[j], Kind: kinds[j]})
		}
	}
	for i := range w.commits {
		slices.SortFunc(w.commits[i], func(a, b changes.CommitRef) int { return cmp.Compare(a.Version, b.Version) })
	}
	return w, nil
}

// summaryStmts are the statements of a summary's incremental refresh:
// one INSERT into the state, or, when rows were removed that an aggregate
// cannot take back (MIN, MAX, COUNT(DISTINCT)), the statements building
// fresh, a copy of the state with the groups those rows touched
// recomputed, to be swapped in.
type summaryStmts struct {
	insert  string
	touched string // with insert, SQL counting the groups it writes
	regroup []string
	fresh   string // the table regroup builds, in schemas.ChangesDB
}

// summaryDelta is what brings a summary's state from the window's version
// to hi (nil when nothing was committed since); a *fullNeeded when only a
// FULL refresh can: a table joined to the changing one changed, or a
// change log was trimmed past the state. fresh names the table a regroup
// would build.
func (p *incPlan) summaryDelta(state, fresh string, w *changeWindow, hi uint64, checks []string) (*summaryStmts, error) {
	read := p.read()
	for _, s := range read {
		if s.retained > w.from {
			return nil, &fullNeeded{"the change log of " + core.Display(s.schema, s.table) + " was trimmed (data_retention_days) past the last refresh, so what it removed since is not known: the dynamic table is recomputed"}
		}
	}
	// Dimension tables that changed: the groups their changed rows (as
	// they were, and as they are) join are recomputed.
	var dimTouched []string
	// The changing table's rows that the window's commits removed: a
	// changed dimension row joins them too (as they were counted).
	_, srcGone := w.upTo(0, hi)
	for i := len(p.sources); i < len(read); i++ {
		added, removed := w.upTo(i, hi)
		if len(added)+len(removed) == 0 {
			continue
		}
		d := read[i]
		if p.fromDims == "" || len(added) > maxListedCommits || len(removed) > maxListedCommits || len(srcGone) > maxListedCommits {
			return nil, &fullNeeded{"table " + core.Display(d.schema, d.table) + ", joined to " + p.sourceNames() + ", changed since the last refresh: the dynamic table is recomputed"}
		}
		dimTouched = append(dimTouched, p.dimTouched(i-len(p.sources), added, removed, srcGone, hi))
	}
	rows := make([]string, len(p.sources))
	var inFlight []string // checks that no removal of the window's rows is under way
	var regroup []uint64  // removals the aggregates cannot take back
	for i, s := range p.sources {
		var in, gone, later, all []uint64
		for _, c := range w.commits[i] {
			all = append(all, c.ID)
			removes := c.Kind == changes.CommitDelete || c.Kind == changes.CommitUpdate
			switch {
			case c.Version > hi:
				if removes {
					later = append(later, c.ID)
				}
				continue
			case removes:
				gone = append(gone, c.ID)
			}
			if c.Kind == changes.CommitInsert || c.Kind == changes.CommitUpdate {
				in = append(in, c.ID)
			}
		}
		if len(in) > 0 && len(in) <= maxListedCommits && len(gone)+len(later) <= maxListedCommits {
			inFlight = append(inFlight, removalsUnderWay(s, in, slices.Concat(gone, later)))
		}
		if len(gone) > 0 && !p.retract {
			// An aggregate plan has one changing table: its groups that
			// removed rows touched are recomputed instead.
			regroup, gone = gone, nil
		}
		rows[i] = p.windowRows(s, w.from, hi, in, gone, later, all)
	}
	hasRows := slices.ContainsFunc(rows, func(r string) bool { return r != "" })
	if regroup == nil && dimTouched == nil && !hasRows {
		return nil, nil
	}
	for i, s := range p.sources {
		if rows[i] == "" {
			rows[i] = "(SELECT " + strings.Join(p.usedColumns(s), ", ") + ", " + signColumn("0") + " FROM " + chsql.Table(s.schema, s.table) + " WHERE 0)"
		}
	}
	// The state must still be at the window's version: a refresh that
	// ran meanwhile has taken these rows already.
	atFrom := fmt.Sprintf("throwIf(%s != %d) = 0", p.stateVersion(state, w.from), w.from)
	checks = append(append([]string{atFrom}, inFlight...), checks...)
	windowRows := func(src incSource) string { return rows[slices.IndexFunc(p.sources, src.same)] }
	if regroup == nil && dimTouched == nil {
		return &summaryStmts{
			insert:  "INSERT INTO " + state + " (" + p.stateColumns() + ") " + p.stateSelect(windowRows, hi, checks) + " UNION ALL " + p.markerRow(state, hi, checks),
			touched: p.groupsIn(windowRows),
		}, nil
	}
	// The groups to recompute: those the removed rows were in (some may
	// not have passed the WHERE: recomputing them changes nothing), and
	// those changed dimension rows join.
	src := p.sources[0]
	keyCols := keyList(p.keys)
	sets := dimTouched
	if regroup != nil {
		sets = append(sets, "SELECT DISTINCT "+keyCols+" FROM "+p.renderRows(p.from, func(incSource) string {
			return "(SELECT " + strings.Join(p.usedColumns(src), ", ") + ", " + signColumn("-1") + " FROM " + changesTableOf(src) +
				" PREWHERE " + chsql.QuoteIdent(core.CommitColumn) + " IN (" + changes.IDList(regroup) + "))"
		}))
	}
	touched := "(" + strings.Join(sets, " UNION ALL ") + ")"
	table := chsql.Table(schemas.ChangesDB, fresh)
	st := &summaryStmts{fresh: fresh, regroup: []string{
		// The untouched groups as they were, tagged hi (the history
		// then counts every group as written: the state was copied),
		// and the marker of version hi: the state's version must reach
		// hi even when no touched group has rows left, or the next
		// refresh would regroup the same commits again.
		"CREATE TABLE " + table + " ENGINE = AggregatingMergeTree ORDER BY " + p.stateOrderBy() + " AS SELECT " +
			strings.TrimSuffix(p.stateColumns(), ", _lp_upto, _lp_marker") + fmt.Sprintf(", materialize(arrayReduce('maxState', [toUInt64(%d)])) AS _lp_upto, _lp_marker FROM ", hi) + state +
			" WHERE _lp_marker = 0 AND " + keyTuple(p.stateKeys()) + " NOT IN " + touched + " AND " + atFrom,
		markState(table, hi),
	}}
	if hasRows {
		// ...with what the window adds to them...
		st.regroup = append(st.regroup, "INSERT INTO "+table+" ("+p.stateColumns()+") "+p.stateSelect(windowRows, hi, append([]string{keyTuple(p.keys) + " NOT IN " + touched}, inFlight...)))
	}
	// ...and the touched groups from every row present at hi.
	st.regroup = append(st.regroup, "INSERT INTO "+table+" ("+p.stateColumns()+") "+p.stateSelect(func(src incSource) string {
		return p.signedRows(src, hi)
	}, hi, append([]string{keyTuple(p.keys) + " IN " + touched}, checks[1:]...)))
	return st, nil
}

// dimTouched renders the group keys (as keyTuple's columns) that the rows
// of dims[j] changed by commits added (rows as they are now) and removed
// (rows as they were, in its change table) join: the FROM with the
// changing table's rows present at hi and the dimension table's changed
// rows instead of it. The changing table's rows are those present at hi
// and those its commits srcGone (the window's, up to hi) removed: a
// dimension row and the rows that joined it may go in one window, and the
// group they were counted in must still be recomputed. In a LEFT JOIN the
// rows they do not join give the group of no match, which is recomputed
// too.
func (p *incPlan) dimTouched(j int, added, removed, srcGone []uint64, hi uint64) string {
	commit := chsql.QuoteIdent(core.CommitColumn)
	from := strings.ReplaceAll(p.fromDims, dimToken(j), p.dimChanged(j, added, removed, ""))
	for k := range p.dims {
		if k != j {
			from = strings.ReplaceAll(from, dimToken(k), chsql.Table(p.dims[k].schema, p.dims[k].table))
		}
	}
	keyCols := keyList(p.keys)
	return "SELECT DISTINCT " + keyCols + " FROM " + p.renderRows(from, func(src incSource) string {
		rows := p.signedRows(src, hi)
		if len(srcGone) == 0 {
			return rows
		}
		return strings.TrimSuffix(rows, ")") + " UNION ALL SELECT " + strings.Join(p.usedColumns(src), ", ") + ", " + signColumn("1") + " FROM " + changesTableOf(src) +
			" PREWHERE " + commit + " IN (" + changes.IDList(srcGone) + "))"
	})
}

// dimChanged is a subquery of the rows of dims[j] that commits added (as
// they are) and removed (as they were, in its change table) changed, each
// with the select items extra (", …" or "") after its columns.
func (p *incPlan) dimChanged(j int, added, removed []uint64, extra string) string {
	d := p.dims[j]
	quoted := make([]string, len(d.cols))
	for i, c := range d.cols {
		quoted[i] = chsql.QuoteIdent(c)
	}
	cols := strings.Join(quoted, ", ") + extra
	commit := chsql.QuoteIdent(core.CommitColumn)
	var parts []string
	if len(added) > 0 {
		from, filter := d.rows()
		parts = append(parts, "SELECT "+cols+" FROM "+from+filter+commit+" IN ("+changes.IDList(added)+")")
	}
	if len(removed) > 0 {
		parts = append(parts, "SELECT "+cols+" FROM "+changesTableOf(d)+" PREWHERE "+commit+" IN ("+changes.IDList(removed)+")")
	}
	return "(" + strings.Join(parts, " UNION ALL ") + ")"
}

// keyTuple is a tuple of group keys that IN compares NULLs in as equal
// (isNull, assumeNotNull: IN never matches a NULL, and 18.16 has no
// transform_null_in).
func keyTuple(keys []string) string { return "(" + keyList(keys) + ")" }

// keyList is keyTuple's elements, as a subquery's select list.
func keyList(keys []string) string {
	parts := make([]string, 0, 2*len(keys))
	for _, k := range keys {
		parts = append(parts, "isNull("+k+")", "assumeNotNull("+k+")")
	}
	return strings.Join(parts, ", ")
}

// windowRows is signedRows for a refresh from version from, with the
// window's commits by id: in added rows up to hi, gone removed rows up to
// hi, later removed rows after hi, all every commit after from. "" when
// no part has rows.
func (p *incPlan) windowRows(src incSource, from, hi uint64, in, gone, later, all []uint64) string {
	cols := strings.Join(p.usedColumns(src), ", ")
	commit, orig := chsql.QuoteIdent(core.CommitColumn), chsql.QuoteIdent(changes.OrigCommitColumn)
	removedTable := changesTableOf(src)
	table, filter := src.rows()
	part := func(sign, from, where string) string {
		if from == table {
			return "SELECT " + cols + ", " + signColumn(sign) + " FROM " + from + filter + where
		}
		return "SELECT " + cols + ", " + signColumn(sign) + " FROM " + from + " PREWHERE " + where
	}
	// Past maxListedCommits a set is read from the change log instead
	// (a query's text is limited).
	set := func(ids []uint64, cond string, kinds ...string) string {
		if len(ids) <= maxListedCommits {
			return "(" + changes.IDList(ids) + ")"
		}
		return commitSet(src, cond, kinds...)
	}
	window := fmt.Sprintf("version > %d AND version <= %d", from, hi)
	var parts []string
	if len(in) > 0 {
		ins := set(in, window, changes.CommitInsert, changes.CommitUpdate)
		op := " IN "
		if len(in) > maxListedCommits {
			op = p.in // the change log is on this server only
		}
		parts = append(parts, part("1", table, commit+op+ins))
		if len(later) > 0 {
			parts = append(parts, part("1", removedTable, commit+" IN "+set(later, fmt.Sprintf("version > %d", hi), changes.CommitDelete, changes.CommitUpdate)+" AND "+orig+" IN "+ins))
		}
	}
	if len(gone) > 0 {
		parts = append(parts, part("-1", removedTable, commit+" IN "+set(gone, window, changes.CommitDelete, changes.CommitUpdate)+
			" AND "+orig+" NOT IN "+set(all, fmt.Sprintf("version > %d", from))))
	}
	if len(parts) == 0 {
		return ""
	}
	return "(" + strings.Join(parts, " UNION ALL ") + ")"
}

// maxListedCommits is how many commits a refresh names by id in one set,
// as change queries do (changes.ChangeQuery).
const maxListedCommits = 1000

// changesTableOf names the change table of a source.
func changesTableOf(src incSource) string {
	return chsql.Table(schemas.ChangesDB, changes.ChangesTable(src.schema, src.table))
}

// signColumn is the _lp_sign column of a part of the signed rows.
// materialize: ClickHouse 18.16 refuses a constant column that a UNION ALL
// of a Distributed table's rows and a local table's carries ("Cannot
// convert column _lp_sign because it is non constant in source stream but
// must be constant in result").
func signColumn(sign string) string { return "materialize(toInt8(" + sign + ")) AS _lp_sign" }

// removalsUnderWay is a check failing (throwIf) while a DELETE or UPDATE
// that the window does not know is removing rows of the window's commits
// in: it has copied them to the change table, and its mutation may take
// them out of the table before it registers its commit. A refresh that read
// the table then would count neither the rows nor their removal, and the
// next refresh would take back rows never counted. ClickHouse runs the
// check before it takes the table's parts to read, and a removal indexes
// the commits it took rows of (lakepipe.removal_origins) before its
// mutation, so a removal the check misses cannot finish before the read.
// The refresh waits and reads the window again (incrementalDelta). The
// check reads the index through its key: its cost follows the window's
// commits, not the removed rows retained. A statement that failed after
// indexing leaves its pairs until the window moves past their commits: at
// most one FULL refresh.
func removalsUnderWay(src incSource, in, known []uint64) string {
	return "throwIf((" + changes.RemovedFrom(src.schema, src.table, in, known) + ") != 0) = 0"
}
