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
// commit of the source row it came from (_lp_src) and the version of the
// refresh that wrote it (_lp_upto). A DELETE or UPDATE of source rows
// cannot be taken back row by row (two equal rows are one to a
// mutation), so the rows their commits gave are: a refresh marks the
// pairs (commit, version) of those rows as taken back (_lp_marker = 2
// rows, which the view leaves out) and writes the rows that the commits'
// rows still present give, tagged with its own version. Its cost follows
// the commits the removed rows belong to, not the state: the state is
// ordered by (_lp_marker, _lp_src, _lp_upto), so finding a commit's rows
// reads its granules only. An UPDATE's new rows come under its own
// commit, so they are new rows like an INSERT's.
//
// The granule is the commit: a DELETE of one row recomputes every row its
// commit gave, and a DELETE by a condition spread over every load touches
// every commit. A refresh that would take back half the state's rows or
// more rebuilds it instead (maxRetractShare). Taking back one row alone
// needs an identity per source row, which the tables do not keep yet.
//
// State that grows: one _lp_marker = 2 row per (commit, refresh) taken
// back, and the rows they hide, until maintenance removes both
// (CompactStates); a FULL refresh builds the state without either.

// retractedPairs is the condition, on an append plan's state, that a
// row's (commit, version) pair is (op "IN") or is not ("NOT IN") among
// those taken back.
func retractedPairs(state, op string) string {
	return "(" + srcColumn + ", _lp_upto) " + op + " (SELECT " + srcColumn + ", _lp_upto FROM " + state + " PREWHERE _lp_marker = 2)"
}

// appendStmts are the statements of an append plan's incremental refresh.
type appendStmts struct {
	insert  string // the one INSERT into the state
	touched string // SQL counting the rows it wrote, once it ran
	deleted string // SQL counting the rows it will take back, run before it
}

// appendDelta is what brings an append plan's state from the window's
// version to hi: the rows that the window's new source rows give, and
// for the source commits whose rows it deleted or updated, their rows
// taken back and those their present rows give written again. A
// *fullNeeded when only a FULL refresh can: a table joined to the
// changing ones changed, or a change log was trimmed past the state.
func (p *incPlan) appendDelta(state string, w *changeWindow, hi uint64, checks []string) (*appendStmts, error) {
	if len(p.cols) == 0 {
		return nil, fmt.Errorf("the columns of the state %s are not known", state)
	}
	for _, s := range p.read() {
		if s.retained > w.from {
			return nil, &fullNeeded{"the change log of " + core.Display(s.schema, s.table) + " was trimmed (data_retention_days) past the last refresh, so what it removed since is not known: the dynamic table is recomputed"}
		}
	}
	commit, src := chsql.QuoteIdent(core.CommitColumn), chsql.QuoteIdent(srcColumn)
	window := fmt.Sprintf("version > %d AND version <= %d", w.from, hi)
	live := "_lp_marker = 0 AND "
	notTaken := " WHERE " + retractedPairs(state, "NOT IN")
	// Per changing table: conditions on _lp_commit picking the rows read
	// (new, and of the commits recomputed), and subqueries of the source
	// commits whose rows in the state are taken back.
	read, retract := make([][]string, len(p.sources)), make([][]string, len(p.sources))
	var written []string // conditions on _lp_src: the rows the refresh writes
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
			// The source commits whose rows were removed: those of them
			// with rows in the state (a commit registered later has none
			// yet, and is read whole when it comes).
			origins := "(SELECT " + chsql.QuoteIdent(changes.OrigCommitColumn) + " FROM " + changesTableOf(s) + " PREWHERE " + commit + " IN " + set + ")"
			read[i] = append(read[i], commit+p.in+"(SELECT "+src+" FROM "+state+" PREWHERE "+live+src+" IN "+origins+notTaken+")")
			written = append(written, src+" IN "+origins)
			retract[i] = append(retract[i], origins)
		}
	}
	// Dimension tables that changed: the source commits (in the state's
	// version) whose rows join their changed rows, as they were or as they
	// are, are recomputed, whether they gave rows before or not.
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
			origins := "(" + p.dimJoined(b, j, added, removed, w.from) + ")"
			read[b.source] = append(read[b.source], commit+p.in+origins)
			written = append(written, src+p.in+origins)
			retract[b.source] = append(retract[b.source], origins)
		}
	}
	// The state must still be at the window's version: a refresh that
	// ran meanwhile has taken these rows already.
	checks = append([]string{fmt.Sprintf("throwIf(%s != %d) = 0", p.stateVersion(state), w.from)}, checks...)
	cols := make([]string, len(p.cols))
	anys := make([]string, len(p.cols))
	for i, c := range p.cols {
		cols[i] = chsql.QuoteIdent(c)
		anys[i] = "any(" + cols[i] + ")"
	}
	upto := strconv.FormatUint(hi, 10)
	where := " WHERE " + strings.Join(checks, " AND ")
	q := "INSERT INTO " + state + " (" + strings.Join(cols, ", ") + ", " + src + ", _lp_marker, _lp_upto) SELECT *, toUInt8(0), toUInt64(" + upto + ") FROM (" +
		p.render(p.body, func(s incSource) string { return anyOf(read[slices.IndexFunc(p.sources, s.same)]) }) + ")" + where
	st := &appendStmts{touched: "0"}
	var taken []string
	for i := range p.sources {
		for _, origins := range retract[i] {
			taken = append(taken, src+p.in+origins)
		}
	}
	if len(taken) > 0 {
		// The pairs taken back, one row each (its other columns any of
		// the pair's rows).
		q += " UNION ALL SELECT " + strings.Join(anys, ", ") + ", " + src + ", toUInt8(2), _lp_upto FROM " + state + " PREWHERE " + live + anyOf(taken) +
			notTaken + " AND " + strings.Join(checks, " AND ") + " GROUP BY " + src + ", _lp_upto"
		st.deleted = "SELECT count() FROM " + state + " PREWHERE " + live + anyOf(taken) + notTaken
	}
	// The marker row: the version, even when no row came; written only if
	// the checks hold (its HAVING, over the one row any() gives). The
	// WHERE above fails the statement only while some row reaches it on
	// releases that do not fold throwIf of a constant at analysis (18.16
	// folds it; those with short-circuit evaluation do not), and a marker
	// must never take the version past what the statement did not write.
	q += " UNION ALL SELECT " + strings.Join(anys, ", ") + ", any(" + src + "), toUInt8(1), toUInt64(" + upto + ") FROM " + state + " WHERE 0 HAVING " + strings.Join(checks, " AND ")
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

// dimJoined is a query of the commits of branch b's changing table, in
// the state's version from, whose rows join the rows of dims[j] that
// commits added (as they are) and removed (as they were) changed: b's
// FROM with those rows instead of the dimension table, each marked
// _lp_hit, so that a LEFT JOIN's rows that join none are left out.
func (p *incPlan) dimJoined(b appendBranch, j int, added, removed []uint64, from uint64) string {
	commit := chsql.QuoteIdent(core.CommitColumn)
	fromSQL := strings.ReplaceAll(b.from, dimToken(j), p.dimChanged(j, added, removed, ", toUInt8(1) AS _lp_hit"))
	for _, k := range b.dims {
		if k != j {
			table, _ := p.dims[k].rows()
			fromSQL = strings.ReplaceAll(fromSQL, dimToken(k), "(SELECT * FROM "+table+")")
		}
	}
	fromSQL = p.render(fromSQL, func(s incSource) string {
		return commit + p.in + commitSet(s, fmt.Sprintf("version <= %d", from))
	})
	return "SELECT " + chsql.QuoteIdent(b.alias) + "." + commit + " FROM " + fromSQL + " WHERE _lp_hit = 1"
}
