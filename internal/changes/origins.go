package changes

import (
	"context"
	"fmt"
	"strconv"

	"github.com/lakepipe/lakepipe/internal/chsql"
	"github.com/lakepipe/lakepipe/internal/core"
	"github.com/lakepipe/lakepipe/schemas"
)

// origins is the index of which commits' rows each removal took out of a
// change-tracked table (lakepipe.removal_origins, ordered by db, table,
// orig_commit): the distinct (_lp_orig_commit, _lp_commit) pairs of the
// change tables. Asking "did a removal take rows of these commits?" then
// reads the pairs of those commits through the key, where the change
// table, ordered by _lp_commit, would be scanned whole: its cost follows
// the commits asked about, not the removed rows retained.
const (
	originsTable = "removal_origins"
	origins      = schemas.SystemDB + "." + originsTable
)

// indexRemoved records in the index the commits whose rows the change
// table holds under the commits of set (an SQL set: "(1, 2)" or a
// subquery). Writers call it after copying removed rows to the change
// table and before those rows leave the table (a mutation, or the rows
// that replace them), so that a reader that finds no pair may read the
// table: what it reads is still there. A retried write indexes its pairs
// again, which the index's ReplacingMergeTree folds.
func (e *Log) indexRemoved(ctx context.Context, schema, name, set string) error {
	commit, orig := chsql.QuoteIdent(core.CommitColumn), chsql.QuoteIdent(OrigCommitColumn)
	q := "INSERT INTO " + origins + " (db, table, orig_commit, commit_id) SELECT DISTINCT " + chsql.QuoteString(schema) + ", " + chsql.QuoteString(name) +
		", " + orig + ", " + commit + " FROM " + chsql.Table(schemas.ChangesDB, ChangesTable(schema, name)) + " PREWHERE " + commit + " IN " + set
	if err := e.St.Exec(ctx, q); err != nil {
		return fmt.Errorf("table %s: index the removed rows in its change log: %w", core.Display(schema, name), err)
	}
	return nil
}

// IndexRemoved is indexRemoved for writers outside this package, of the
// rows saved under one commit.
func (e *Log) IndexRemoved(ctx context.Context, schema, name string, commit uint64) error {
	return e.indexRemoved(ctx, schema, name, "("+strconv.FormatUint(commit, 10)+")")
}

// RemovedFrom is a query counting the removals of schema.name that took
// rows of the commits in, apart from those of known: one read of the
// index through its key.
func RemovedFrom(schema, name string, in, known []uint64) string {
	q := "SELECT count() FROM " + origins + " WHERE db = " + chsql.QuoteString(schema) + " AND table = " + chsql.QuoteString(name) +
		" AND orig_commit IN (" + IDList(in) + ")"
	if len(known) > 0 {
		q += " AND commit_id NOT IN (" + IDList(known) + ")"
	}
	return q
}

// originsWhere is the index's rows of schema.name, and of its commits ids
// when there are any.
func originsWhere(schema, name string, ids []uint64) string {
	w := TableWhere(schema, name)
	if len(ids) > 0 {
		w += " AND commit_id IN (" + IDList(ids) + ")"
	}
	return w
}
