package changes

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/lakepipe/lakepipe/internal/catalog"
	"github.com/lakepipe/lakepipe/internal/chsql"
	"github.com/lakepipe/lakepipe/internal/chstore"
	"github.com/lakepipe/lakepipe/internal/core"
	"github.com/lakepipe/lakepipe/internal/writerlease"
	"github.com/lakepipe/lakepipe/schemas"
)

// Commit kinds. BASELINE commits are the rows a table had when change
// tracking was turned on: not changes, but part of what incremental
// refreshes start from.
const (
	commitBaseline = "BASELINE"
	CommitInsert   = "INSERT"
	CommitDelete   = "DELETE"
	CommitUpdate   = "UPDATE"
)

// ChangesRetainedSince is the table property holding the oldest commit
// version its change log still has (set when maintenance trims it).
const ChangesRetainedSince = "changes_retained_since"

// changeFence is how old a commit must be before readers take it.
const changeFence = 2 * time.Second

// Columns of a change table besides the table's own.
const (
	ChangeTypeColumn = "_lp_change_type"
	OrigCommitColumn = "_lp_orig_commit"
)

// KeyList is a keyed table's key columns, quoted, as a select list; in
// parentheses, the tuple an IN compares (a select list in parentheses
// would be one tuple column where selected).
func KeyList(spec catalog.TableSpec) string {
	cols := make([]string, len(spec.PrimaryKey))
	for i, k := range spec.PrimaryKey {
		cols[i] = chsql.QuoteIdent(k)
	}
	return strings.Join(cols, ", ")
}

func Tracked(spec catalog.TableSpec) bool { return core.Tracked(spec) }

// ChangesTable names the change table of schema.name in schemas.ChangesDB.
func ChangesTable(schema, name string) string { return schema + "__" + name }

var lastCommitVersion atomic.Uint64

// NextCommitVersion is the current time in nanoseconds, strictly
// increasing within the process.
func NextCommitVersion() uint64 {
	for {
		now := uint64(time.Now().UnixNano())
		last := lastCommitVersion.Load()
		if now <= last {
			now = last + 1
		}
		if lastCommitVersion.CompareAndSwap(last, now) {
			return now
		}
	}
}

// EnableTracking creates the change table of a table (idempotent).
func (e *Log) EnableTracking(ctx context.Context, schema, name string, spec catalog.TableSpec) error {
	if e.St.Replicated() {
		// The change log would live on one server while the catalog is on
		// every node: not built yet.
		return e.ErrClusterTracking("table " + core.Display(schema, name))
	}
	cols := make([]string, 0, len(spec.Columns)+3)
	for _, c := range spec.Columns {
		cols = append(cols, core.ColumnDDL(c))
	}
	cols = append(cols, chsql.QuoteIdent(ChangeTypeColumn)+" String", chsql.QuoteIdent(core.CommitColumn)+" UInt64",
		chsql.QuoteIdent(OrigCommitColumn)+" UInt64")
	ddl := "CREATE TABLE IF NOT EXISTS " + chsql.Table(schemas.ChangesDB, ChangesTable(schema, name)) +
		" (" + strings.Join(cols, ", ") + ") ENGINE = MergeTree ORDER BY " + chsql.QuoteIdent(core.CommitColumn)
	if err := e.St.Exec(ctx, "CREATE DATABASE IF NOT EXISTS "+chsql.QuoteIdent(schemas.ChangesDB)); err != nil {
		return err
	}
	if err := e.St.Exec(ctx, ddl); err != nil {
		return fmt.Errorf("table %s: create its change log: %w", core.Display(schema, name), err)
	}
	// The rows already there form the BASELINE: commits that are not
	// changes (version 0, below every reader's range), but that
	// incremental refreshes count as the table's start.
	q := fmt.Sprintf("INSERT INTO lakepipe.table_commits (db, table, version, commit_id, kind, rows, committed_at) SELECT %s, %s, toUInt64(0), %s, 'BASELINE', count(), now() FROM %s GROUP BY %s",
		chsql.QuoteString(schema), chsql.QuoteString(name), chsql.QuoteIdent(core.CommitColumn), chsql.Table(schema, name), chsql.QuoteIdent(core.CommitColumn))
	if err := e.St.Exec(ctx, q); err != nil {
		return fmt.Errorf("table %s: record its baseline in its change log: %w", core.Display(schema, name), err)
	}
	return nil
}

// RegisterCommit records a committed write of a change-tracked table. A
// commit id is registered once: a retried load registers nothing new.
func (e *Log) RegisterCommit(ctx context.Context, schema, name string, commit uint64, kind string, rows int64) error {
	n, err := e.St.Strings(ctx, fmt.Sprintf("SELECT count() FROM lakepipe.table_commits WHERE db = %s AND table = %s AND commit_id = %d",
		chsql.QuoteString(schema), chsql.QuoteString(name), commit))
	if err != nil {
		return fmt.Errorf("table %s: read its change log: %w", core.Display(schema, name), err)
	}
	if len(n) == 1 && n[0] != "0" {
		if addsRows(kind) {
			// A retry after a crash between registering and closing.
			return e.closeCommits(ctx, schema, name, []uint64{commit})
		}
		return nil
	}
	return e.RegisterCommits(ctx, schema, name, []Commit{{ID: commit, Kind: kind, Rows: rows}})
}

// Commit is one write of a statement that commits several at once.
type Commit struct {
	ID   uint64
	Kind string
	Rows int64
	// Opened says a commit that adds no rows (a DELETE) was opened
	// (OpenCommits) all the same: it is closed too.
	Opened bool
}

// RegisterCommits records the commits of one statement in one insert, so
// that a reader sees all of them or none (a MERGE INTO's new keys are an
// INSERT commit, its updated and deleted keys an UPDATE commit). The ids
// are fresh: nothing is checked.
func (e *Log) RegisterCommits(ctx context.Context, schema, name string, commits []Commit) error {
	if err := writerlease.Check(ctx); err != nil {
		return fmt.Errorf("table %s: %w", core.Display(schema, name), err)
	}
	now := time.Now().UTC()
	rows := make([][]any, len(commits))
	var opened []uint64
	for i, c := range commits {
		rows[i] = []any{schema, name, NextCommitVersion(), c.ID, c.Kind, uint64(max(c.Rows, 0)), now}
		if addsRows(c.Kind) || c.Opened {
			opened = append(opened, c.ID)
		}
	}
	err := e.St.InsertRows(ctx, schemas.SystemDB, "table_commits", []string{"db", "table", "version", "commit_id", "kind", "rows", "committed_at"}, rows)
	if err != nil {
		return fmt.Errorf("table %s: record a commit in its change log: %w", core.Display(schema, name), err)
	}
	return e.closeCommits(ctx, schema, name, opened)
}

// CommitRows counts the rows of db.table tagged with a commit id (0 when
// the count fails: it only informs the change log).
func (e *Log) CommitRows(ctx context.Context, db, table string, commit uint64) (int64, error) {
	n, err := e.St.Strings(ctx, fmt.Sprintf("SELECT count() FROM %s WHERE %s = %d", chsql.Table(db, table), chsql.QuoteIdent(core.CommitColumn), commit))
	if err != nil {
		// Never 0 for "unknown": a flush would take it for "not written"
		// and write a committed pack again.
		return 0, fmt.Errorf("count the rows of commit %016x in %s: %w", commit, core.Display(db, table), err)
	}
	if len(n) != 1 {
		return 0, fmt.Errorf("count the rows of commit %016x in %s: %d answers", commit, core.Display(db, table), len(n))
	}
	return strconv.ParseInt(n[0], 10, 64)
}

// TrackLoad registers the rows a load added, when the table tracks changes
// (rows < 0: a load whose row count is not known here).
func (e *Log) TrackLoad(ctx context.Context, schema, name string, commit uint64, rows int64) error {
	return e.TrackLoads(ctx, schema, name, []LoadCommit{{ID: commit, Rows: rows}})
}

// LoadCommit is one load's commit: its id and the rows it added (< 0:
// not known here, for a load registered again after a crash).
type LoadCommit struct {
	ID   uint64
	Rows int64
}

// TrackLoads is trackLoad for the loads of one batch: one read of the
// change log for all of them and one insert of those it lacks.
//
// Every load of a tracked table was opened (OpenCommits) before its rows
// went in; each is closed here once registered, or at once when it added
// no rows (nothing to register).
func (e *Log) TrackLoads(ctx context.Context, schema, name string, loads []LoadCommit) error {
	if len(loads) == 0 {
		return nil
	}
	var spec catalog.TableSpec
	ok, err := e.Cat.Get(ctx, catalog.KindTable, schema, name, &spec)
	if err != nil || !ok || !Tracked(spec) {
		return err
	}
	var todo []LoadCommit
	var closing []uint64
	for _, l := range loads {
		if l.Rows != 0 {
			todo = append(todo, l)
		}
		closing = append(closing, l.ID)
	}
	if len(todo) == 0 {
		return e.closeCommits(ctx, schema, name, closing)
	}
	ids := make([]uint64, len(todo))
	for i, l := range todo {
		ids[i] = l.ID
	}
	have, err := e.St.Strings(ctx, fmt.Sprintf("SELECT toString(commit_id) FROM lakepipe.table_commits WHERE db = %s AND table = %s AND commit_id IN (%s)",
		chsql.QuoteString(schema), chsql.QuoteString(name), IDList(ids)))
	if err != nil {
		return fmt.Errorf("table %s: read its change log: %w", core.Display(schema, name), err)
	}
	known := make(map[string]bool, len(have))
	for _, h := range have {
		known[h] = true
	}
	var replacing map[uint64]bool
	if KeepsReplaced(spec) {
		if replacing, err = e.replacingCommits(ctx, schema, name, ids); err != nil {
			return err
		}
	}
	var rows [][]any
	now := time.Now().UTC()
	for _, l := range todo {
		if known[strconv.FormatUint(l.ID, 10)] {
			continue
		}
		known[strconv.FormatUint(l.ID, 10)] = true // a batch may name a commit twice
		kind := CommitInsert
		if replacing[l.ID] {
			kind = CommitUpdate
		}
		rows = append(rows, []any{schema, name, NextCommitVersion(), l.ID, kind, uint64(max(l.Rows, 0)), now})
	}
	if len(rows) > 0 {
		if err := writerlease.Check(ctx); err != nil {
			return fmt.Errorf("table %s: %w", core.Display(schema, name), err)
		}
		if err := e.St.InsertRows(ctx, schemas.SystemDB, "table_commits", []string{"db", "table", "version", "commit_id", "kind", "rows", "committed_at"}, rows); err != nil {
			return fmt.Errorf("table %s: record %d commits in its change log: %w", core.Display(schema, name), len(rows), err)
		}
	}
	return e.closeCommits(ctx, schema, name, closing)
}

// CommitRef is one commit of the change log.
type CommitRef struct {
	Version uint64
	ID      uint64
	Kind    string
	At      time.Time
}

// CommitsBetween lists the commits of a table with lo < version <= hi.
func (e *Log) CommitsBetween(ctx context.Context, schema, name string, lo, hi uint64, guard string) ([]CommitRef, error) {
	if guard != "" {
		guard += " AND "
	}
	res, err := e.St.Query(ctx, fmt.Sprintf("SELECT version, commit_id, kind, committed_at FROM lakepipe.table_commits WHERE %sdb = %s AND table = %s AND version > %d AND version <= %d ORDER BY version",
		guard, chsql.QuoteString(schema), chsql.QuoteString(name), lo, hi))
	if err != nil {
		if chstore.IsCode(err, chstore.CodeThrowIf) {
			return nil, err // a failed version check of the guard, not the log
		}
		return nil, fmt.Errorf("table %s: read its change log: %w", core.Display(schema, name), err)
	}
	out := make([]CommitRef, 0, len(res.Rows))
	for _, r := range res.Rows {
		out = append(out, CommitRef{Version: r[0].(uint64), ID: r[1].(uint64), Kind: r[2].(string), At: r[3].(time.Time)})
	}
	return out, nil
}

// ChangeReadHorizon is the highest version a reader may take now.
func ChangeReadHorizon() uint64 { return uint64(time.Now().Add(-changeFence).UnixNano()) }

// IDList renders commit ids for an IN list.
func IDList(ids []uint64) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = strconv.FormatUint(id, 10)
	}
	return strings.Join(parts, ", ")
}

// noChange are the metadata columns of rows that are not changes (the
// initial rows of a stream). Constants are materialized in every part of a
// change query: over a Distributed table ClickHouse 18.16 refuses to union
// a constant column computed locally with the same column read back from a
// remote shard ("non constant in source stream but must be constant").
const noChange = "materialize('INSERT') AS __change_type, materialize(toUInt64(0)) AS __commit_version, materialize(toDateTime(0)) AS __commit_timestamp"

// ChangeRead is how changeQuery reads a table's changes.
type ChangeRead struct {
	AppendOnly bool // inserts only
	Initial    bool // from version 0, every row present at hi as an INSERT
	// meta adds the columns __change_type, __commit_version and
	// __commit_timestamp; a statement that reads none of them is spared
	// computing them (transform over the commit list, on every row).
	Meta bool
	// GlobalIn: the table is Distributed over a cluster's shards, whose
	// conditions must take subqueries of the change table (a table of
	// the entry server) with GLOBAL IN.
	GlobalIn bool
}

// ChangeQuery renders, as one ClickHouse query, the changes of a table
// between two versions: its columns, plus the metadata columns when
// how.meta. read lists the commits of the table above a version (see
// session.readCommits).
func ChangeQuery(schema, name string, spec catalog.TableSpec, lo, hi uint64, how ChangeRead, read func(from uint64) ([]CommitRef, error)) (string, error) {
	cols := make([]string, len(spec.Columns))
	for i, c := range spec.Columns {
		cols[i] = chsql.QuoteIdent(c.Name)
	}
	colList := strings.Join(cols, ", ")
	table := Rows(schema, name, spec)
	commitCol := chsql.QuoteIdent(core.CommitColumn)
	appendOnly := how.AppendOnly
	// withMeta appends the metadata columns, when the statement reads them.
	withMeta := func(m string) string {
		if !how.Meta {
			return ""
		}
		return ", " + m
	}
	if how.Initial && lo == 0 {
		// Every row present, less what was written after hi.
		later, err := read(hi)
		if err != nil {
			return "", err
		}
		q := "SELECT " + colList + withMeta(noChange) + " FROM " + table
		var ids []uint64
		for _, c := range later {
			if c.Kind != CommitDelete {
				ids = append(ids, c.ID)
			}
		}
		if len(ids) > 0 {
			log := commitLog{schema: schema, name: name, listed: len(later) <= maxListedCommits}
			q += " WHERE " + commitCol + " NOT IN " + log.set(ids, fmt.Sprintf("version > %d", hi), commitBaseline, CommitInsert, CommitUpdate)
		}
		return q, nil
	}
	// One read of the change log: the commits in (lo, hi] and those after.
	commits, err := read(lo)
	if err != nil {
		return "", err
	}
	var later []CommitRef
	for i, c := range commits {
		if c.Version > hi {
			commits, later = commits[:i], commits[i:]
			break
		}
	}
	var all, ins, upd, del, versions, stamps []uint64
	for _, c := range commits {
		all = append(all, c.ID)
		versions = append(versions, c.Version)
		stamps = append(stamps, uint64(c.At.Unix()))
		switch c.Kind {
		case CommitInsert:
			ins = append(ins, c.ID)
		case CommitUpdate:
			upd = append(upd, c.ID)
		case CommitDelete:
			del = append(del, c.ID)
		}
	}
	log := commitLog{schema: schema, name: name, listed: len(commits)+len(later) <= maxListedCommits}
	inRange := fmt.Sprintf("version > %d AND version <= %d", lo, hi)
	after := fmt.Sprintf("version > %d", hi)
	// part renders one part of the change query: the rows of from that
	// match where (a PREWHERE), as changes of kind committed by commitCol.
	// The commit conditions are PREWHEREs: the granules at the edges of a
	// commit's range hold other commits' rows, and PREWHERE reads their
	// other columns only where a row matches (half the bytes of a 10,000-row
	// read of a 10 M-row table; ClickHouse does not move conditions on
	// key columns to PREWHERE by itself).
	part := func(kind, commitCol, from, where string) string {
		filter := " PREWHERE "
		if strings.HasSuffix(from, " FINAL") {
			filter = " WHERE " // see Rows
		}
		if !how.Meta {
			return "SELECT " + colList + " FROM " + from + filter + where
		}
		if log.listed {
			return "SELECT " + colList + ", " + kind + " AS __change_type, transform(" + commitCol + ", [" + IDList(all) + "], [" + IDList(versions) + "], toUInt64(0)) AS __commit_version, " +
				"toDateTime(transform(" + commitCol + ", [" + IDList(all) + "], [" + IDList(stamps) + "], toUInt64(0))) AS __commit_timestamp FROM " + from + filter + where
		}
		// Past maxListedCommits the versions come from a join with the
		// change log: transform over arrays that long is slow (15 s for
		// 600,000 commits on ClickHouse 18.16).
		return "SELECT " + colList + ", _lp_kind AS __change_type, __commit_version, __commit_timestamp FROM (SELECT " + colList + ", " + kind + " AS _lp_kind, " +
			commitCol + " AS _lp_c FROM " + from + filter + where + ") ANY LEFT JOIN (SELECT commit_id AS _lp_c, version AS __commit_version, committed_at AS __commit_timestamp " +
			"FROM lakepipe.table_commits WHERE " + log.where(inRange) + ") USING _lp_c"
	}
	changes := chsql.Table(schemas.ChangesDB, ChangesTable(schema, name))
	origCol := chsql.QuoteIdent(OrigCommitColumn)
	var parts []string
	if len(ins) > 0 {
		parts = append(parts, part("materialize('INSERT')", commitCol, table, commitCol+" IN "+log.set(ins, inRange, CommitInsert)))
		// Rows added up to hi but removed since (by a commit after hi) were
		// there at hi: they are read from the change log, as inserts, so
		// that a later read's DELETE has its INSERT. An APPEND_ONLY stream
		// shows every row added since lo, also those removed before hi
		// (a STANDARD one shows no change for them).
		var removed []uint64
		removedCond := after
		if appendOnly {
			removed = append(append(removed, del...), upd...)
			removedCond = fmt.Sprintf("version > %d", lo)
		}
		for _, c := range later {
			if c.Kind != CommitInsert {
				removed = append(removed, c.ID)
			}
		}
		if len(removed) > 0 {
			parts = append(parts, part("materialize('INSERT')", origCol, changes,
				commitCol+" IN "+log.set(removed, removedCond, CommitDelete, CommitUpdate)+" AND "+origCol+" IN "+log.set(ins, inRange, CommitInsert)))
		}
	}
	if !appendOnly {
		if len(upd) > 0 {
			kind := "materialize('UPDATE_AFTER')"
			if spec.Keyed() {
				// A load that replaced some keys is an UPDATE commit; its
				// rows of keys it did not replace are inserts.
				kl := KeyList(spec)
				in := " IN "
				if how.GlobalIn {
					in = " GLOBAL IN "
				}
				kind = "if((" + kl + ")" + in + "(SELECT " + kl + " FROM " + changes + " WHERE " + commitCol + " IN " + log.set(upd, inRange, CommitUpdate) + "), 'UPDATE_AFTER', 'INSERT')"
			}
			parts = append(parts, part(kind, commitCol, table, commitCol+" IN "+log.set(upd, inRange, CommitUpdate)))
		}
		if gone := append(append([]uint64(nil), del...), upd...); len(gone) > 0 {
			// A row both added and removed since lo is no change at all.
			where := commitCol + " IN " + log.set(gone, inRange, CommitDelete, CommitUpdate)
			if added := append(append([]uint64(nil), ins...), upd...); len(added) > 0 {
				where += " AND " + origCol + " NOT IN " + log.set(added, inRange, CommitInsert, CommitUpdate)
			}
			parts = append(parts, part(chsql.QuoteIdent(ChangeTypeColumn), commitCol, changes, where))
		}
	}
	if len(parts) == 0 {
		return "SELECT " + colList + withMeta(noChange) + " FROM " + table + " WHERE 0", nil
	}
	return strings.Join(parts, " UNION ALL "), nil
}

// maxListedCommits is how many commits a change query lists by id. A
// query's text is limited (max_query_size, 256 KiB by default), and a
// stream that many commits went past (a pipe committing every second,
// unconsumed for a day) reads them with subqueries of the change log
// instead: slower (ClickHouse 18.16 takes tens of milliseconds for them),
// but of any size.
const maxListedCommits = 1000

// commitLog renders sets of a table's commits for a change query: as lists
// of ids, or as subqueries of lakepipe.table_commits over the same
// versions and kinds.
type commitLog struct {
	schema, name string
	listed       bool
}

// set is ids in parentheses, or the commits with versions in cond and one
// of kinds, which are the same.
func (l commitLog) set(ids []uint64, cond string, kinds ...string) string {
	if l.listed {
		return "(" + IDList(ids) + ")"
	}
	return "(SELECT commit_id FROM lakepipe.table_commits WHERE " + l.where(cond) + " AND kind IN (" + chsql.StringList(kinds) + "))"
}

func (l commitLog) where(cond string) string {
	return TableWhere(l.schema, l.name) + " AND " + cond
}

// maxSavedCommits bounds the commit list savedCommits returns (~210 KB of
// a query's 256 KiB); past it, the commits are read by a subquery.
const maxSavedCommits = 10000

// SavedCommits narrows the condition of a DELETE or UPDATE whose removed
// rows saveRemoved has kept: to the rows of the commits those rows came
// from. Rows that a load adds while the statement runs match its WHERE
// too, but were not kept; without this the mutation would remove them
// with no trace in the change log, and a stream that had shown them as
// inserts would never show them go. It returns "0" when nothing was kept.
func (e *Log) SavedCommits(ctx context.Context, schema, name string, commit uint64, cond string) (string, error) {
	ids, err := e.St.Strings(ctx, fmt.Sprintf("SELECT DISTINCT toString(%s) FROM %s WHERE %s = %d LIMIT %d",
		chsql.QuoteIdent(OrigCommitColumn), chsql.Table(schemas.ChangesDB, ChangesTable(schema, name)), chsql.QuoteIdent(core.CommitColumn), commit, maxSavedCommits+1))
	if err != nil {
		return "", fmt.Errorf("table %s: read its change log: %w", core.Display(schema, name), err)
	}
	switch {
	case len(ids) == 0:
		return "0", nil
	case len(ids) > maxSavedCommits && e.Sharded(schema):
		// The shards run the mutation, and the change table is on this
		// server only: the statement is not narrowed.
		return cond, nil
	case len(ids) > maxSavedCommits:
		return "(" + cond + ") AND " + chsql.QuoteIdent(core.CommitColumn) + " IN (SELECT " + chsql.QuoteIdent(OrigCommitColumn) + " FROM " +
			chsql.Table(schemas.ChangesDB, ChangesTable(schema, name)) + " WHERE " + chsql.QuoteIdent(core.CommitColumn) + " = " + strconv.FormatUint(commit, 10) + ")", nil
	}
	return "(" + cond + ") AND " + chsql.QuoteIdent(core.CommitColumn) + " IN (" + strings.Join(ids, ", ") + ")", nil
}

// Rows is the FROM item of a table's present rows: a keyed table
// (ReplacingMergeTree) is read with FINAL, which hides the rows a later
// write of their key replaced. Conditions on it must be WHERE, never
// PREWHERE: 18.16 applies PREWHERE before FINAL, so a replaced row whose
// replacement the PREWHERE filters out shows again.
func Rows(schema, name string, spec catalog.TableSpec) string {
	if spec.Keyed() {
		return chsql.Table(schema, name) + " FINAL"
	}
	return chsql.Table(schema, name)
}

// SaveRemoved copies the rows a DELETE or UPDATE is about to remove into the
// change table, tagged with the statement's commit id.
func (e *Log) SaveRemoved(ctx context.Context, schema, name string, spec catalog.TableSpec, kind string, commit uint64, cond string) error {
	colList := core.ColumnList(spec.Columns)
	q := "INSERT INTO " + chsql.Table(schemas.ChangesDB, ChangesTable(schema, name)) + " (" + colList + ", " +
		chsql.QuoteIdent(ChangeTypeColumn) + ", " + chsql.QuoteIdent(core.CommitColumn) + ", " + chsql.QuoteIdent(OrigCommitColumn) + ") SELECT " +
		colList + ", " + chsql.QuoteString(kind) + ", toUInt64(" + strconv.FormatUint(commit, 10) + "), " + chsql.QuoteIdent(core.CommitColumn) +
		" FROM " + Rows(schema, name, spec) + " WHERE " + cond
	if err := e.St.Exec(ctx, q); err != nil {
		return fmt.Errorf("table %s: keep the removed rows in its change log: %w", core.Display(schema, name), err)
	}
	return e.IndexRemoved(ctx, schema, name, commit)
}

// TrimChangeLog forgets the changes of schema.name committed before a
// moment: the DELETE and UPDATE commits and the removed rows kept for them.
// Streams whose offset is older become stale. The INSERT and BASELINE
// commits stay (one small row each): they say which of the table's rows
// are committed, which a FULL refresh of an incremental dynamic table
// needs for every row, however old. Maintenance calls it with each tracked
// table's data_retention_days (default 7).
func (e *Log) TrimChangeLog(ctx context.Context, schema, name string, before time.Time) error {
	cut := uint64(before.UnixNano())
	old, err := e.CommitsBetween(ctx, schema, name, 0, cut-1, "")
	if err != nil {
		return err
	}
	var spec catalog.TableSpec
	if ok, err := e.Cat.Get(ctx, catalog.KindTable, schema, name, &spec); err != nil || !ok {
		return err
	}
	var ids []uint64
	for _, c := range old {
		if c.Kind == CommitDelete || c.Kind == CommitUpdate {
			ids = append(ids, c.ID)
		}
	}
	if len(ids) == 0 {
		// Nothing removed is forgotten: the log is still whole, and
		// readers behind the cut need not start over.
		return nil
	}
	if _, err := e.Mutate(ctx, schemas.ChangesDB, ChangesTable(schema, name), "DELETE WHERE "+chsql.QuoteIdent(core.CommitColumn)+" IN ("+IDList(ids)+")"); err != nil {
		return err
	}
	if _, err := e.Mutate(ctx, schemas.SystemDB, originsTable, "DELETE WHERE "+originsWhere(schema, name, ids)); err != nil {
		return fmt.Errorf("table %s: trim its change log: %w", core.Display(schema, name), err)
	}
	if err := e.St.Exec(ctx, fmt.Sprintf("ALTER TABLE lakepipe.table_commits DELETE WHERE db = %s AND table = %s AND version < %d AND kind IN (%s, %s)",
		chsql.QuoteString(schema), chsql.QuoteString(name), cut, chsql.QuoteString(CommitDelete), chsql.QuoteString(CommitUpdate))); err != nil {
		return fmt.Errorf("table %s: trim its change log: %w", core.Display(schema, name), err)
	}
	if prev, _ := strconv.ParseUint(spec.Properties[ChangesRetainedSince], 10, 64); prev >= cut {
		return nil
	}
	if spec.Properties == nil {
		spec.Properties = map[string]string{}
	}
	spec.Properties[ChangesRetainedSince] = strconv.FormatUint(cut, 10)
	return e.Cat.Put(ctx, catalog.KindTable, schema, name, spec, "")
}

// DropChangeLog removes the change log of a table purged from the trash,
// none of whose name is left there (purgeTrash sees to that): its change
// table and its commits up to the moment it was dropped. The log is named
// after the table, so while a live table has the name, it stays; commits
// after the drop belong to a table created since and are kept in any case.
func (e *Log) DropChangeLog(ctx context.Context, schema, name string, droppedAt time.Time) error {
	var live catalog.TableSpec
	if ok, err := e.Cat.Get(ctx, catalog.KindTable, schema, name, &live); err != nil || ok {
		return err
	}
	if err := e.St.Exec(ctx, "DROP TABLE IF EXISTS "+chsql.Table(schemas.ChangesDB, ChangesTable(schema, name))); err != nil {
		return fmt.Errorf("table %s: drop its change log: %w", core.Display(schema, name), err)
	}
	where := fmt.Sprintf("db = %s AND table = %s AND version <= %d", chsql.QuoteString(schema), chsql.QuoteString(name), droppedAt.UnixNano())
	n, err := e.St.Strings(ctx, "SELECT toString(count()) FROM lakepipe.table_commits WHERE "+where)
	if err != nil || len(n) != 1 || n[0] == "0" {
		return err
	}
	// The index's pairs and open marks of those commits first: once the
	// commits are gone, nothing would name them.
	if err := e.closeRegistered(ctx, schema, name); err != nil {
		return err
	}
	if _, err := e.Mutate(ctx, schemas.SystemDB, originsTable, "DELETE WHERE "+originsWhere(schema, name, nil)+
		" AND commit_id IN (SELECT commit_id FROM lakepipe.table_commits WHERE "+where+")"); err != nil {
		return fmt.Errorf("table %s: forget its commits: %w", core.Display(schema, name), err)
	}
	if _, err := e.Mutate(ctx, schemas.SystemDB, "table_commits", "DELETE WHERE "+where); err != nil {
		return fmt.Errorf("table %s: forget its commits: %w", core.Display(schema, name), err)
	}
	return nil
}

// TrimChangeLogs applies every tracked table's retention.
func (e *Log) TrimChangeLogs(ctx context.Context) error {
	tables, err := e.Cat.ListAll(ctx, catalog.KindTable)
	if err != nil {
		return err
	}
	for _, o := range tables {
		var spec catalog.TableSpec
		if o.Decode(&spec) != nil || !Tracked(spec) {
			continue
		}
		days := 7
		if d, err := strconv.Atoi(spec.Properties["data_retention_days"]); err == nil && d > 0 {
			days = d
		}
		if err := e.TrimChangeLog(ctx, o.Schema, o.Name, time.Now().Add(-time.Duration(days)*24*time.Hour)); err != nil {
			return err
		}
		if err := e.closeRegistered(ctx, o.Schema, o.Name); err != nil {
			return err
		}
	}
	return nil
}

// Engine runs statements; safe for concurrent use.
// Log is the change log of tracked tables and the reading of table
// streams, with their caches.
type Log struct {
	core.Core
	// commits caches change-log reads of table streams (see
	// session.readCommits); copies of the engine share it.
	Commits *CommitCache
	// fresh lets stream reads skip their full check when nothing was
	// written since the last one (see freshness); shared by copies.
	Fresh *Freshness
	// Lease is the process's writer lease, which the open marks of
	// writes outside pipes name (HoldLease); nil: they name no one.
	Lease *writerlease.Lease
}

// HoldLease binds a write outside pipes (COPY INTO, INSERT, UPDATE, MERGE
// INTO, a streaming flush) to the process's writer lease: the loads it
// opens name the lease, so that maintenance removes them if the process
// dies before it registers them, and the write ends, registering
// nothing, if the lease is lost (package writerlease). release ends the
// binding.
func (e *Log) HoldLease(ctx context.Context) (_ context.Context, release func()) {
	if e.Lease == nil {
		return ctx, func() {}
	}
	return e.Lease.Hold(ctx)
}

// DropCommits deletes the rows of unrecorded attempts of the loads of one
// batch, if there are any: one count of their rows, and one removal of
// those that left any. earlier are the ids an earlier release gave the
// same loads (a load retried across an upgrade): their rows go too, and
// since nothing registers those ids any more, their loads are closed
// (AbandonLoads) once their rows are gone, rather than left open, a name
// in every committed-rows read of the table.
func (e *Log) DropCommits(ctx context.Context, t core.LoadTarget, commits []uint64, earlier ...uint64) error {
	all := append(slices.Clip(commits), earlier...)
	if len(all) == 0 {
		return nil
	}
	found, err := e.St.Strings(ctx, fmt.Sprintf("SELECT DISTINCT toString(%s) FROM %s WHERE %s IN (%s)",
		chsql.QuoteIdent(core.CommitColumn), chsql.Table(t.DB, t.Table), chsql.QuoteIdent(core.CommitColumn), IDList(all)))
	if err != nil {
		return err
	}
	if len(found) == 0 {
		return nil
	}
	ids := make([]uint64, 0, len(found))
	var gone []uint64 // of earlier
	for _, f := range found {
		id, err := strconv.ParseUint(f, 10, 64)
		if err != nil {
			return fmt.Errorf("remove unfinished loads: commit id %q: %w", f, err)
		}
		ids = append(ids, id)
		if slices.Contains(earlier, id) {
			gone = append(gone, id)
		}
	}
	if _, err := e.Mutate(ctx, t.DB, t.Table, fmt.Sprintf("DELETE WHERE %s IN (%s)", chsql.QuoteIdent(core.CommitColumn), IDList(ids))); err != nil {
		return fmt.Errorf("remove %d unfinished loads: %w", len(found), err)
	}
	if err := e.CloseAbandoned(ctx, t, gone); err != nil {
		return fmt.Errorf("close loads of an earlier release: %w", err)
	}
	return nil
}

func (e *Log) DropCommit(ctx context.Context, t core.LoadTarget, commit uint64) error {
	n, err := e.St.Strings(ctx, fmt.Sprintf("SELECT count() FROM %s WHERE %s = %d",
		chsql.Table(t.DB, t.Table), chsql.QuoteIdent(core.CommitColumn), commit))
	if err != nil {
		return err
	}
	if len(n) == 1 && n[0] != "0" {
		if _, err := e.Mutate(ctx, t.DB, t.Table, fmt.Sprintf("DELETE WHERE %s = %d", chsql.QuoteIdent(core.CommitColumn), commit)); err != nil {
			return fmt.Errorf("remove an unfinished load: %w", err)
		}
	}
	return nil
}

// AwaitFence waits until the commits the tables registered before now
// are older than the change fence, so that a reader that starts after it
// takes them: a REFRESH DYNAMIC TABLE right after an INSERT must see that
// INSERT. It costs one query on the tables' newest commits, and waits at
// most changeFence, only when one of them committed within it. tables are
// schema.table names.
func (e *Log) AwaitFence(ctx context.Context, tables []string) error {
	if len(tables) == 0 {
		return nil
	}
	now := time.Now()
	conds := make([]string, 0, len(tables))
	for _, t := range tables {
		schema, name, _ := strings.Cut(t, ".")
		conds = append(conds, fmt.Sprintf("(db = %s AND table = %s)", chsql.QuoteString(schema), chsql.QuoteString(name)))
	}
	res, err := e.St.Strings(ctx, fmt.Sprintf("SELECT toString(max(version)) FROM lakepipe.table_commits WHERE version > %d AND version <= %d AND (%s)",
		ChangeReadHorizon(), uint64(now.UnixNano()), strings.Join(conds, " OR ")))
	if err != nil {
		return fmt.Errorf("read the newest commits of %s: %w", strings.Join(tables, ", "), err)
	}
	var newest uint64
	if len(res) == 1 {
		newest, _ = strconv.ParseUint(res[0], 10, 64)
	}
	if newest == 0 {
		return nil
	}
	// One millisecond beyond, as ChangeReadHorizon reads the clock again.
	wait := time.Until(time.Unix(0, int64(newest)).Add(changeFence + time.Millisecond))
	if wait <= 0 {
		return nil
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
