package dynamic

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/lakepipe/lakepipe/internal/changes"
	"github.com/lakepipe/lakepipe/internal/chsql"
	"github.com/lakepipe/lakepipe/internal/core"
)

// An append plan's state holds the rows of the query, each with the
// commit and identity of the source row it came from (_lp_src, _lp_row:
// rowColumn) and the version of the refresh that wrote it (_lp_upto). A
// DELETE or UPDATE of source rows takes their rows back: a refresh marks
// the triples (commit, identity, version) of those rows as taken back
// (_lp_marker = 2 rows, which the view leaves out), found from the
// removed rows the change log keeps. An UPDATE's new rows come under its
// own commit, so they are new rows like an INSERT's. A change to a joined
// table takes back the rows of the source rows that join its changed rows
// (as they were or as they are) and writes them again from those source
// rows as they are, tagged with the refresh's version.
//
// Its cost follows the rows removed or joined to changed rows, not the
// state: the state is ordered by (_lp_marker, _lp_src, _lp_row,
// _lp_upto), so finding a removed row's rows reads the granules of its
// commit only. A refresh that would take back half the state's rows or
// more rebuilds it instead (maxRetractShare).
//
// State that grows: one _lp_marker = 2 row per source row taken back (and
// refresh), and the rows they hide, until maintenance removes both
// (CompactStates); a FULL refresh builds the state without either.

// retractedRows is the condition, on an append plan's state, that a
// row's (commit, identity, version) is (op "IN") or is not ("NOT IN")
// among those taken back.
func retractedRows(state, op string) string {
	return "(" + retractKey + ") " + op + " (SELECT " + retractKey + " FROM " + state + " PREWHERE _lp_marker = 2)"
}

// retractKey is what a _lp_marker = 2 row names of the rows it hides.
const retractKey = srcColumn + ", " + rowColumn + ", _lp_upto"

// appendStmts are the statements of an append plan's incremental refresh.
type appendStmts struct {
	insert  string // the one INSERT into the state
	touched string // SQL counting the rows it wrote, once it ran
	deleted string // SQL counting the rows it will take back, run before it
	// rejoined: it writes again the rows of source rows that join
	// changed rows of a joined table.
	rejoined bool
}

// sourceRows is a set of source rows: a query of pairs (commit, identity)
// and one of their commits, each for the right of an IN.
type sourceRows struct{ pairs, commits string }

// on is the condition that the commit and identity columns commit, row
// are among the set's, with the commit tested alone first so that a
// table ordered by it reads the granules of the set's commits only.
func (r sourceRows) on(commit, row, in string) string {
	return "(" + commit + in + r.commits + " AND (" + commit + ", " + row + ")" + in + r.pairs + ")"
}

// appendDelta is what brings an append plan's state from the window's
// version to hi: the rows that the window's new source rows give, the
// rows of the source rows it deleted or updated taken back, and for
// source rows that join changed rows of a joined table, their rows taken
// back and written again. A *fullNeeded when only a FULL refresh can: a
// joined table changed too much to say which rows it touched, or a change
// log was trimmed past the state.
func (p *incPlan) appendDelta(state string, w *changeWindow, hi uint64, checks []string) (*appendStmts, error) {
	if len(p.cols) == 0 {
		return nil, fmt.Errorf("the columns of the state %s are not known", state)
	}
	for _, s := range p.read() {
		if s.retained > w.from {
			return nil, &fullNeeded{"the change log of " + core.Display(s.schema, s.table) + " was trimmed (data_retention_days) past the last refresh, so what it removed since is not known: the dynamic table is recomputed"}
		}
	}
	commit, src, row := chsql.QuoteIdent(core.CommitColumn), chsql.QuoteIdent(srcColumn), chsql.QuoteIdent(rowColumn)
	window := fmt.Sprintf("version > %d AND version <= %d", w.from, hi)
	live := "_lp_marker = 0 AND "
	notTaken := " WHERE " + retractedRows(state, "NOT IN")
	// Per changing table: conditions picking the rows read (new, and
	// those joined to changed rows), and the source rows whose rows in
	// the state are taken back.
	read, retract := make([][]string, len(p.sources)), make([][]sourceRows, len(p.sources))
	var written []string // conditions on the state: the rows the refresh writes
	for i, s := range p.sources {
		in, gone := w.upTo(i, hi)
		if len(in) > 0 {
			set, op := "("+changes.IDList(in)+")", " IN "
			if len(in) > maxListedCommits {
				// The change log is on this server only.
				set, op = commitSet(s, window, changes.CommitInsert, changes.CommitUpdate), p.in
			}
			read[i] = append(read[i], commit+op+set)
			written = append(written, src+" IN "+set)
		}
		if len(gone) > 0 {
			set := "(" + changes.IDList(gone) + ")"
			if len(gone) > maxListedCommits {
				set = commitSet(s, window, changes.CommitDelete, changes.CommitUpdate)
			}
			// The rows removed, from the change log: those of them with
			// rows in the state are taken back (a row committed later
			// has none yet, and is read from its commit if still there).
			changed := changesTableOf(s) + " PREWHERE " + commit + " IN " + set
			orig := chsql.QuoteIdent(changes.OrigCommitColumn)
			retract[i] = append(retract[i], sourceRows{
				pairs:   "(SELECT " + orig + ", " + s.rowHash() + " FROM " + changed + ")",
				commits: "(SELECT " + orig + " FROM " + changed + ")",
			})
		}
	}
	rejoined := false
	// Dimension tables that changed: the source rows (in the state's
	// version) that join their changed rows, as they were or as they are,
	// are taken back and read again, whether they gave rows before or
	// not.
	for j, d := range p.dims {
		added, removed := w.upTo(len(p.sources)+j, hi)
		if len(added)+len(removed) == 0 {
			continue
		}
		if len(added) > maxListedCommits || len(removed) > maxListedCommits || len(p.branches) == 0 {
			return nil, &fullNeeded{"table " + core.Display(d.schema, d.table) + ", joined to " + p.sourceNames() + ", changed since the last refresh: the dynamic table is recomputed"}
		}
		for _, b := range p.branches {
			if !slices.Contains(b.dims, j) {
				continue
			}
			joined := "(" + p.dimJoined(b, j, added, removed, w.from) + ")"
			rows := sourceRows{pairs: joined, commits: "(SELECT _lp_c FROM " + joined + ")"}
			s := p.sources[b.source]
			read[b.source] = append(read[b.source], rows.on(commit, s.rowHash(), p.in))
			written = append(written, rows.on(src, row, p.in))
			retract[b.source] = append(retract[b.source], rows)
			rejoined = true
		}
	}
	// The state must still be at the window's version: a refresh that
	// ran meanwhile has taken these rows already.
	checks = append([]string{fmt.Sprintf("throwIf(%s != %d) = 0", p.stateVersion(state, w.from), w.from)}, checks...)
	cols := make([]string, len(p.cols))
	anys := make([]string, len(p.cols))
	for i, c := range p.cols {
		cols[i] = chsql.QuoteIdent(c)
		anys[i] = "any(" + cols[i] + ")"
	}
	upto := strconv.FormatUint(hi, 10)
	where := " WHERE " + strings.Join(checks, " AND ")
	q := "INSERT INTO " + state + " (" + strings.Join(cols, ", ") + ", " + src + ", " + row + ", _lp_marker, _lp_upto) SELECT *, toUInt8(0), toUInt64(" + upto + ") FROM (" +
		p.render(p.body, func(s incSource) string { return anyOf(read[slices.IndexFunc(p.sources, s.same)]) }) + ")" + where
	st := &appendStmts{touched: "0", rejoined: rejoined}
	var taken []string
	for i := range p.sources {
		for _, rows := range retract[i] {
			taken = append(taken, rows.on(src, row, p.in))
		}
	}
	if len(taken) > 0 {
		// The source rows taken back, one row each per version (its
		// other columns any of their rows').
		q += " UNION ALL SELECT " + strings.Join(anys, ", ") + ", " + src + ", " + row + ", toUInt8(2), _lp_upto FROM " + state + " PREWHERE " + live + anyOf(taken) +
			notTaken + " AND " + strings.Join(checks, " AND ") + " GROUP BY " + src + ", " + row + ", _lp_upto"
		st.deleted = "SELECT count() FROM " + state + " PREWHERE " + live + anyOf(taken) + notTaken
	}
	// The marker row: the version, even when no row came; written only if
	// the checks hold (its HAVING, over the one row any() gives). The
	// WHERE above fails the statement only while some row reaches it on
	// releases that do not fold throwIf of a constant at analysis (18.16
	// folds it; those with short-circuit evaluation do not), and a marker
	// must never take the version past what the statement did not write.
	q += " UNION ALL SELECT " + strings.Join(anys, ", ") + ", any(" + src + "), any(" + row + "), toUInt8(1), toUInt64(" + upto + ") FROM " + state + " WHERE 0 HAVING " + strings.Join(checks, " AND ")
	st.insert = q
	if len(written) > 0 {
		st.touched = fmt.Sprintf("(SELECT count() FROM %s PREWHERE _lp_marker = 0 AND %s AND _lp_upto = %d)", state, anyOf(written), hi)
	}
	return st, nil
}

// anyOf joins conditions by OR ("0" for none).
func anyOf(conds []string) string {
	if len(conds) == 0 {
		return "0"
	}
	return "(" + strings.Join(conds, " OR ") + ")"
}

// dimJoined is a query of the rows of branch b's changing table, in the
// state's version from, that join the rows of dims[j] that commits added
// (as they are) and removed (as they were) changed, as pairs (_lp_c
// commit, _lp_r identity): b's FROM with those rows instead of the
// dimension table, each marked _lp_hit, so that a LEFT JOIN's rows that
// join none are left out.
func (p *incPlan) dimJoined(b appendBranch, j int, added, removed []uint64, from uint64) string {
	commit := chsql.QuoteIdent(core.CommitColumn)
	fromSQL := strings.ReplaceAll(b.from, dimToken(j), p.dimChanged(j, added, removed, ", toUInt8(1) AS _lp_hit"))
	for _, k := range b.dims {
		if k != j {
			table, _ := p.dims[k].rows()
			fromSQL = strings.ReplaceAll(fromSQL, dimToken(k), "(SELECT * FROM "+table+")")
		}
	}
	fromSQL = p.render(fromSQL, p.committedUpTo(from))
	alias := chsql.QuoteIdent(b.alias) + "."
	return "SELECT " + alias + commit + " AS _lp_c, " + alias + chsql.QuoteIdent(rowColumn) + " AS _lp_r FROM " + fromSQL + " WHERE _lp_hit = 1"
}
