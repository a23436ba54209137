package engine

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/lakepipe/lakepipe/internal/catalog"
	"github.com/lakepipe/lakepipe/internal/changes"
	"github.com/lakepipe/lakepipe/internal/chsql"
	"github.com/lakepipe/lakepipe/internal/core"
	"github.com/lakepipe/lakepipe/internal/query"
	"github.com/lakepipe/lakepipe/schemas"
)

// Keyed tables (CREATE TABLE … PRIMARY KEY) keep one row per key, the
// latest write winning: a ReplacingMergeTree ordered by the key, without a
// version column, so that of a key's rows the one of the part written last
// wins (a part attached from a staging table counts as written when it is
// attached, and within one insert the last row wins). Reads use FINAL
// (changes.Rows), so a key's replaced rows never show, merged or not.
//
// Loads need nothing special: a retried load deletes its commit's rows and
// writes them again, the same rows. Statements that change rows (UPDATE,
// DELETE, MERGE INTO, INSERT into a table that tracks changes) compute
// what they write into a temporary table first (keyedRows) and apply it
// with applyKeyed: the new versions of keys are inserted, never mutated in
// place, and a tracked table's change log keeps the rows they replace.

// Kinds of the rows of a keyed write (the __lp_kind column).
const (
	keyNew     = 1 // a key the table does not have
	keyUpdated = 2 // a new version of a key the table has
	keyDeleted = 3 // a key to delete
)

const kindColumn = "__lp_kind"

// keyTuple is the key columns as the tuple an IN compares.
func keyTuple(spec catalog.TableSpec) string { return "(" + changes.KeyList(spec) + ")" }

func isKeyColumn(spec catalog.TableSpec, col string) bool {
	for _, k := range spec.PrimaryKey {
		if strings.EqualFold(k, col) {
			return true
		}
	}
	return false
}

// keyedDelete deletes every row (every version) of the keys whose present
// row matches cond. The keys are read into a temporary table first: a
// mutation evaluates its IN subquery again for each part, and a subquery
// of the table itself would see an older version of a key come back once
// the part of the newer one is done.
func (e *Engine) keyedDelete(ctx context.Context, sess *query.Session, schema, name string, spec catalog.TableSpec, cond string) (_ *core.Result, err error) {
	keys, tuple := changes.KeyList(spec), keyTuple(spec)
	if !changes.Tracked(spec) {
		matching := tuple + " IN (SELECT " + keys + " FROM " + changes.Rows(schema, name, spec) + " WHERE " + onlyTrue(cond) + ")"
		if !e.Sharded(schema) {
			tmp, _, err := sess.Materialize("SELECT " + keys + " FROM " + changes.Rows(schema, name, spec) + " WHERE " + onlyTrue(cond))
			if err != nil {
				return nil, fmt.Errorf("DELETE %s: %w", core.Display(schema, name), err)
			}
			matching = tuple + " IN (SELECT " + keys + " FROM " + tmp + ")"
		}
		return e.Mutate(ctx, schema, name, "DELETE WHERE "+matching)
	}
	// Opened, and its mutation recorded once issued, as deleteWhere's.
	commit := core.RandomCommit()
	g, err := e.openDML(ctx, schema, name, commit)
	if err != nil {
		return nil, err
	}
	defer g.undo(ctx, &err)
	if err := e.SaveRemoved(ctx, schema, name, spec, changes.CommitDelete, commit, onlyTrue(cond)); err != nil {
		return nil, err
	}
	rows, err := e.CommitRows(ctx, schemas.ChangesDB, changes.ChangesTable(schema, name), commit)
	if err != nil {
		return nil, err
	}
	res := core.Message("DELETE on %s done", core.Display(schema, name))
	if rows > 0 {
		// The keys kept in the change log, and only they: a key a load
		// writes meanwhile stays.
		// The commit named as deleteWhere names it (no row carries it),
		// for maintenance should the process die before recording it.
		matching := tuple + " IN (SELECT " + keys + " FROM " + chsql.Table(schemas.ChangesDB, changes.ChangesTable(schema, name)) +
			" WHERE " + chsql.QuoteIdent(core.CommitColumn) + " = " + strconv.FormatUint(commit, 10) + ") AND " +
			chsql.QuoteIdent(core.CommitColumn) + " != " + strconv.FormatUint(commit, 10)
		if res, err = e.MutateIssued(ctx, schema, name, "DELETE WHERE "+matching, g.issuedHook); err != nil {
			return nil, err
		}
	}
	if err := e.RegisterCommits(ctx, schema, name, []changes.Commit{{ID: commit, Kind: changes.CommitDelete, Rows: rows, Opened: true}}); err != nil {
		return nil, err
	}
	return res, nil
}

// keyedCounts are the rows a keyed write inserted, replaced and deleted.
type keyedCounts struct{ inserted, updated, deleted int64 }

func (c keyedCounts) String() string {
	return fmt.Sprintf("%d rows inserted, %d updated, %d deleted", c.inserted, c.updated, c.deleted)
}

// applyKeyed writes rows, a temporary table with the columns cols of the
// keyed table schema.name (its key among them) and __lp_kind, into it.
//
// On a table that tracks changes the present rows of every key written go
// to the change log first, under an UPDATE commit (DELETE for deleted
// keys, UPDATE_BEFORE for the others): a row said to be new (an INSERT, a
// MERGE's NOT MATCHED on an ON that is not the key) may replace one all
// the same. Rows of keys that replaced nothing are an INSERT commit, the
// others the UPDATE commit; both are registered in one insert at the end.
//
// Its commits are opened before the first row goes in, under the writer
// lease. A write that fails (or whose process dies) before ClickHouse
// accepted its delete is settled as maintenance settles abandoned loads
// (changes.Log.SettleFailed): the rows that went in stay, registered, and
// the deletions that did not happen are taken out of the change log.
func (e *Engine) applyKeyed(ctx context.Context, schema, name string, spec catalog.TableSpec, rows string, cols []catalog.ColumnSpec) (n keyedCounts, err error) {
	keys, tuple := changes.KeyList(spec), keyTuple(spec)
	tracked := changes.Tracked(spec)
	insertCommit := core.RandomCommit()
	updateCommit := insertCommit
	if tracked {
		updateCommit = core.RandomCommit()
	}
	kindIn := func(kinds ...int) string {
		s := make([]string, len(kinds))
		for i, k := range kinds {
			s[i] = strconv.Itoa(k)
		}
		return "(SELECT " + keys + " FROM " + rows + " WHERE " + kindColumn + " IN (" + strings.Join(s, ", ") + "))"
	}
	if !tracked || e.Sharded(schema) {
		// A tracked table's rows are counted once, after the save below
		// (which tells updates from inserts); a sharded one's deletes
		// are refused before anything is written.
		if n, err = e.keyedCounts(ctx, schema, name, rows, "0"); err != nil {
			return n, err
		}
	}
	if n.deleted > 0 && e.Sharded(schema) {
		// The mutation runs on every shard, which cannot read this
		// server's temporary table.
		return n, fmt.Errorf("%s: deleting keys with MERGE INTO on a sharded cluster: %w (use DELETE FROM … WHERE)", core.Display(schema, name), core.ErrNotSupportedYet)
	}
	saved := "(SELECT " + keys + " FROM " + chsql.Table(schemas.ChangesDB, changes.ChangesTable(schema, name)) +
		" WHERE " + chsql.QuoteIdent(core.CommitColumn) + " = " + strconv.FormatUint(updateCommit, 10) + ")"
	if tracked {
		colList := core.ColumnList(spec.Columns)
		// GLOBAL: on a cluster the shards read this server's temporary table.
		q := "INSERT INTO " + chsql.Table(schemas.ChangesDB, changes.ChangesTable(schema, name)) + " (" + colList + ", " +
			chsql.QuoteIdent(changes.ChangeTypeColumn) + ", " + chsql.QuoteIdent(core.CommitColumn) + ", " + chsql.QuoteIdent(changes.OrigCommitColumn) + ") SELECT " +
			colList + ", if(" + tuple + " GLOBAL IN " + kindIn(keyDeleted) + ", 'DELETE', 'UPDATE_BEFORE'), toUInt64(" + strconv.FormatUint(updateCommit, 10) + "), " +
			chsql.QuoteIdent(core.CommitColumn) + " FROM " + changes.Rows(schema, name, spec) + " WHERE " + tuple + " GLOBAL IN " + kindIn(keyNew, keyUpdated, keyDeleted)
		if err := e.St.Exec(ctx, q); err != nil {
			return n, fmt.Errorf("table %s: keep the replaced rows in its change log: %w", core.Display(schema, name), err)
		}
		if err := e.IndexRemoved(ctx, schema, name, updateCommit); err != nil {
			return n, err
		}
		if n, err = e.keyedCounts(ctx, schema, name, rows, tuple+" IN "+saved); err != nil {
			return n, err
		}
	}
	var opened []uint64
	// The update commit's mutation (a deletion of keys), recorded as a
	// DELETE's is once accepted.
	del := &dmlCommit{e: e, schema: schema, name: name, id: updateCommit}
	if tracked {
		// Registered (and closed) together below, each if it wrote rows.
		if n.inserted > 0 {
			opened = append(opened, insertCommit)
		}
		if n.updated+n.deleted > 0 {
			opened = append(opened, updateCommit)
		}
		if len(opened) > 0 {
			if err := e.OpenCommits(ctx, schema, name, opened); err != nil {
				return n, err
			}
			defer func() {
				if err != nil && !del.issued {
					cctx, cancel := cleanupContext(ctx)
					defer cancel()
					_ = e.SettleFailed(cctx, schema, name, opened)
				}
			}()
		}
	}
	if n.inserted+n.updated > 0 {
		commit := "toUInt64(" + strconv.FormatUint(updateCommit, 10) + ")"
		if tracked {
			commit = fmt.Sprintf("if(%s = %d AND %s NOT IN %s, toUInt64(%d), toUInt64(%d))", kindColumn, keyNew, tuple, saved, insertCommit, updateCommit)
		}
		q := "INSERT INTO " + chsql.Table(schema, name) + " (" + core.ColumnList(cols) + ", " + chsql.QuoteIdent(core.CommitColumn) + ") SELECT " + core.ColumnList(cols) +
			", " + commit + fmt.Sprintf(" FROM %s WHERE %s IN (%d, %d)", rows, kindColumn, keyNew, keyUpdated)
		if err := e.St.Exec(ctx, q); err != nil {
			return n, fmt.Errorf("write %s: %w", core.Display(schema, name), core.QueryError(err))
		}
	}
	if n.deleted > 0 {
		mutation := "DELETE WHERE " + tuple + " IN " + kindIn(keyDeleted)
		if !tracked {
			if _, err := e.Mutate(ctx, schema, name, mutation); err != nil {
				return n, err
			}
		} else {
			// Named as deleteWhere names its commit (no row of a deleted
			// key carries it), and recorded once accepted.
			mutation += fmt.Sprintf(" AND %s != %d", chsql.QuoteIdent(core.CommitColumn), updateCommit)
			if _, err := e.MutateIssued(ctx, schema, name, mutation, del.issuedHook); err != nil {
				return n, err
			}
		}
	}
	if !tracked {
		return n, nil
	}
	var commits []changes.Commit
	switch {
	case n.updated > 0:
		commits = append(commits, changes.Commit{ID: updateCommit, Kind: changes.CommitUpdate, Rows: n.updated + n.deleted})
	case n.deleted > 0:
		commits = append(commits, changes.Commit{ID: updateCommit, Kind: changes.CommitDelete, Rows: n.deleted, Opened: true})
	}
	if n.inserted > 0 {
		commits = append(commits, changes.Commit{ID: insertCommit, Kind: changes.CommitInsert, Rows: n.inserted})
	}
	if len(commits) == 0 {
		return n, nil
	}
	return n, e.RegisterCommits(ctx, schema, name, commits)
}

// keyedCounts counts the rows of a keyed write by kind; a new key's row
// for which replaced holds counts as an update.
func (e *Engine) keyedCounts(ctx context.Context, schema, name, rows, replaced string) (keyedCounts, error) {
	var n keyedCounts
	r, err := e.St.Query(ctx, fmt.Sprintf("SELECT toInt64(countIf(%[1]s = %[2]d AND NOT (%[6]s))), toInt64(countIf(%[1]s = %[3]d OR %[1]s = %[2]d AND (%[6]s))), toInt64(countIf(%[1]s = %[4]d)) FROM %[5]s",
		kindColumn, keyNew, keyUpdated, keyDeleted, rows, replaced))
	if err != nil {
		return n, fmt.Errorf("%s: %w", core.Display(schema, name), core.QueryError(err))
	}
	if len(r.Rows) == 1 && len(r.Rows[0]) == 3 {
		n.inserted, _ = r.Rows[0][0].(int64)
		n.updated, _ = r.Rows[0][1].(int64)
		n.deleted, _ = r.Rows[0][2].(int64)
	}
	return n, nil
}

// keyedUpdate runs UPDATE on a keyed table: the matching rows' new versions
// are inserted (a key column cannot be set).
func (e *Engine) keyedUpdate(ctx context.Context, sess *query.Session, schema, name string, spec catalog.TableSpec, setOf map[string]string, cond string) (*core.Result, error) {
	exprs := make([]string, len(spec.Columns))
	for i, c := range spec.Columns {
		v, ok := setOf[c.Name]
		if !ok {
			v = chsql.QuoteIdent(c.Name)
		} else if isKeyColumn(spec, c.Name) {
			return nil, fmt.Errorf("UPDATE %s: %s is a PRIMARY KEY column and cannot be changed (DELETE the row and INSERT it under its new key)", core.Display(schema, name), c.Name)
		}
		exprs[i] = v + " AS " + chsql.QuoteIdent(c.Name)
	}
	rows, _, err := sess.Materialize(fmt.Sprintf("SELECT %s, toUInt8(%d) AS %s FROM %s WHERE %s", strings.Join(exprs, ", "), keyUpdated, kindColumn, changes.Rows(schema, name, spec), onlyTrue(cond)))
	if err != nil {
		return nil, fmt.Errorf("UPDATE %s: %w", core.Display(schema, name), err)
	}
	n, err := e.applyKeyed(ctx, schema, name, spec, rows, spec.Columns)
	if err != nil {
		return nil, fmt.Errorf("UPDATE %s: %w", core.Display(schema, name), err)
	}
	return core.Message("UPDATE on %s done: %d rows updated", core.Display(schema, name), n.updated), nil
}

// keyedInsert runs INSERT into a keyed table that tracks changes: a row
// whose key the table has replaces that key's row, which the change log
// keeps (UPDATE_BEFORE), and shows as UPDATE_AFTER (applyKeyed finds
// which). body's columns are cols, by position.
func (e *Engine) keyedInsert(ctx context.Context, sess *query.Session, schema, name string, spec catalog.TableSpec, cols []catalog.ColumnSpec, body string) (keyedCounts, error) {
	in, names, err := sess.Materialize(body)
	if err != nil {
		return keyedCounts{}, err
	}
	if len(names) != len(cols) {
		return keyedCounts{}, fmt.Errorf("%d values for %d columns", len(names), len(cols))
	}
	named := make([]string, len(cols))
	for i, c := range cols {
		named[i] = "CAST(" + chsql.QuoteIdent(names[i]) + " AS " + c.CHType + ") AS " + chsql.QuoteIdent(c.Name)
	}
	for _, k := range spec.PrimaryKey {
		if !slices.ContainsFunc(cols, func(c catalog.ColumnSpec) bool { return c.Name == k }) {
			return keyedCounts{}, fmt.Errorf("the PRIMARY KEY column %s must be given", k)
		}
	}
	rows, _, err := sess.Materialize(fmt.Sprintf("SELECT %s, toUInt8(%d) AS %s FROM %s", strings.Join(named, ", "), keyNew, kindColumn, in))
	if err != nil {
		return keyedCounts{}, err
	}
	return e.applyKeyed(ctx, schema, name, spec, rows, cols)
}
