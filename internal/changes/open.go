package changes

import (
	"context"
	"fmt"
	"strconv"

	"github.com/lakepipe/lakepipe/internal/chsql"
	"github.com/lakepipe/lakepipe/internal/core"
	"github.com/lakepipe/lakepipe/internal/writerlease"
	"github.com/lakepipe/lakepipe/schemas"
)

// Open commits: the commits of a change-tracked table whose rows may be in
// the table before the commit is registered (lakepipe.open_commits, a
// CollapsingMergeTree ordered by db, table, commit_id). A writer opens its
// commits (+1) before the first of their rows can show in the table, and
// registering a commit closes it (-1). A reader that wants only committed
// rows then names the few commits that are not, where it would otherwise
// name every commit ever registered: its cost follows the loads under way,
// not the table's history of loads.
//
// What a reader takes as not committed at version hi (uncommitted, CommittedBy):
//
//   - the commits registered after hi (a range of table_commits' key), and
//   - the open ones (sum of signs > 0) not registered at or below hi.
//
// Merges of the CollapsingMergeTree may fold two +1 marks of a commit into
// one (it keeps the last), so a sum says "opened", not how many times.
// That is enough because the attempts of one commit never write at once
// (leases; a streaming write's attempts have commits of their own), and an
// attempt closes a commit it does not register (AbandonLoads) only once its
// rows are gone: a fold can only leave a registered or emptied commit
// closed.
//
// The second rule makes extra opens harmless: a retry or a zombie attempt
// that opens a commit again, or a process that dies between registering a
// commit and closing it, leaves a sum above 0 for a registered commit,
// which is still read. Those leftovers are removed by maintenance
// (closeRegistered). What bounds the table: the loads under way, plus
// leftovers until the next maintenance, plus one row per load abandoned
// between opening and registering and never retried. A retry that
// loads nothing under its commit (its file replaced or failing, a flush's
// earlier attempts) closes what the attempt before it opened
// (CloseAbandoned). Maintenance removes, a day after their last
// attempt, those of pipes (Kafka or volume) dropped while a load of
// theirs failed and was being retried, and those of statements whose
// process died in the middle (their marks name its writer lease, package
// writerlease): SweepAbandoned. Marks of earlier releases name no one
// and stay, with their rows, hidden.
const (
	openTable = "open_commits"
	openRel   = schemas.SystemDB + "." + openTable
)

var openColumns = []string{"db", "table", "commit_id", "sign", "owner"}

// TableWhere is the condition picking the rows of schema.name in the
// change log's tables (table_commits, removal_origins, open_commits), all
// of which begin their key with db, table.
func TableWhere(schema, name string) string {
	return "db = " + chsql.QuoteString(schema) + " AND table = " + chsql.QuoteString(name)
}

// OpenCommits marks commits of schema.name as under way. Writers call it
// before inserting the commits' rows into a change-tracked table, and
// register the commits once those rows are all there.
func (e *Log) OpenCommits(ctx context.Context, schema, name string, ids []uint64) error {
	return e.markOpen(ctx, schema, name, ids, 1, "")
}

// OpenLoads is OpenCommits for the loads of a target, if it tracks changes.
func (e *Log) OpenLoads(ctx context.Context, t core.LoadTarget, ids []uint64) error {
	if !t.Tracked {
		return nil
	}
	return e.markOpen(ctx, t.DB, t.Table, ids, 1, t.Owner)
}

// AbandonLoads closes the loads of a target that register nothing: their
// rows were removed (DropCommit), or never went in. Closing before the
// rows are gone would show them.
func (e *Log) AbandonLoads(ctx context.Context, t core.LoadTarget, ids []uint64) error {
	if !t.Tracked {
		return nil
	}
	return e.closeCommits(ctx, t.DB, t.Table, ids)
}

// closeCommits marks commits registered (a failure leaves the commits to
// maintenance, which finds them registered).
func (e *Log) closeCommits(ctx context.Context, schema, name string, ids []uint64) error {
	return e.markOpen(ctx, schema, name, ids, -1, "")
}

// markOpen writes a mark of sign for each id (an id given twice gets
// two); owner names who opens them.
func (e *Log) markOpen(ctx context.Context, schema, name string, ids []uint64, sign int8, owner string) error {
	if len(ids) == 0 {
		return nil
	}
	if owner == "" && sign > 0 {
		// A write outside pipes, if it holds the lease.
		var err error
		if owner, err = writerlease.Owner(ctx); err != nil {
			return fmt.Errorf("table %s: open %d commits in its change log: %w", core.Display(schema, name), len(ids), err)
		}
	}
	rows := make([][]any, len(ids))
	for i, id := range ids {
		rows[i] = []any{schema, name, id, sign, owner}
	}
	if err := e.St.InsertRows(ctx, schemas.SystemDB, openTable, openColumns, rows); err != nil {
		verb := "open"
		if sign < 0 {
			verb = "close"
		}
		return fmt.Errorf("table %s: %s %d commits in its change log: %w", core.Display(schema, name), verb, len(ids), err)
	}
	return nil
}

// addsRows reports whether commits of kind add rows to the table, and so
// were opened before them.
func addsRows(kind string) bool { return kind == CommitInsert || kind == CommitUpdate }

// uncommitted is a subquery of the commits of schema.name whose rows a
// reader of the table's committed rows at version hi must not read (see
// the rules above): "_lp_commit NOT IN" it reads the committed rows,
// baseline included. One set, not two: a second lookup per row costs a
// FULL read of 10 M rows ~30 % more on ClickHouse 18.16 (measured).
func uncommitted(schema, name string, hi uint64) string {
	table := TableWhere(schema, name)
	h := strconv.FormatUint(hi, 10)
	return "(SELECT commit_id FROM lakepipe.table_commits WHERE " + table + " AND version > " + h +
		" UNION ALL SELECT commit_id FROM " + openRel + " WHERE " + table +
		" AND commit_id NOT IN (SELECT commit_id FROM lakepipe.table_commits WHERE " + table + " AND version <= " + h +
		" AND commit_id IN (SELECT commit_id FROM " + openRel + " WHERE " + table + "))" +
		" GROUP BY commit_id HAVING sum(sign) > 0)"
}

// CommittedBy is the condition on column col (_lp_commit, or the original
// commit of removed rows) that keeps the rows of schema.name's commits
// registered at or below hi. notIn is " NOT IN ", or " GLOBAL NOT IN "
// when the table is read on the shards of a cluster (the change log is on
// this server only).
//
// The column is wrapped in bitXor(col, 0), which ClickHouse cannot match
// to the table's key. ClickHouse 18.16 builds a set it may use with the
// key before it picks the parts it reads, so a load that opened its
// commit and inserted rows in between would show (measured: rows
// inserted while the set's subquery ran were read); a set it cannot use
// with the key is built once the parts are picked. Current releases take
// the parts first either way. The sets are a few ids: nothing is lost by
// reading every granule, which a FULL read does anyway.
func CommittedBy(col, notIn, schema, name string, hi uint64) string {
	return "bitXor(" + col + ", 0)" + notIn + uncommitted(schema, name, hi)
}

// closeRegistered removes the open marks of schema.name's registered
// commits: the leftovers of retried, zombie and interrupted writes (see
// above). A registered commit is never read as open again, whatever its
// marks, so removing them all is safe against a writer opening it once
// more meanwhile. One count, and a mutation only when there are some.
func (e *Log) closeRegistered(ctx context.Context, schema, name string) error {
	table := TableWhere(schema, name)
	registered := "commit_id IN (SELECT commit_id FROM lakepipe.table_commits WHERE " + table +
		" AND commit_id IN (SELECT commit_id FROM " + openRel + " WHERE " + table + "))"
	n, err := e.St.Strings(ctx, "SELECT toString(count()) FROM "+openRel+" WHERE "+table+" AND "+registered)
	if err != nil {
		return fmt.Errorf("table %s: read its open commits: %w", core.Display(schema, name), err)
	}
	if len(n) != 1 || n[0] == "0" {
		return nil
	}
	if _, err := e.Mutate(ctx, schemas.SystemDB, openTable, "DELETE WHERE "+table+" AND "+registered); err != nil {
		return fmt.Errorf("table %s: forget its closed commits: %w", core.Display(schema, name), err)
	}
	return nil
}

// CloseAbandoned closes those of ids that are open on t: loads an attempt
// that died had opened (and perhaps written rows under, which the caller
// has removed), and that nothing will register: the attempt after it
// found its file replaced or failing, or the ids are an earlier release's.
// Left open, each would be a name in every committed-rows read of the
// table for good. Only open ones get their -1: a lone -1 never collapses.
// Closing is safe once the rows are gone, as no other attempt of the load
// writes at once (leases).
func (e *Log) CloseAbandoned(ctx context.Context, t core.LoadTarget, ids []uint64) error {
	if len(ids) == 0 || !t.Tracked {
		return nil
	}
	open, err := e.St.Strings(ctx, "SELECT toString(commit_id) FROM "+openRel+" WHERE "+TableWhere(t.DB, t.Table)+
		" AND commit_id IN ("+IDList(ids)+") GROUP BY commit_id HAVING sum(sign) > 0")
	if err != nil {
		return fmt.Errorf("table %s: read the marks of %d abandoned loads: %w", core.Display(t.DB, t.Table), len(ids), err)
	}
	closing := make([]uint64, 0, len(open))
	for _, o := range open {
		id, err := strconv.ParseUint(o, 10, 64)
		if err != nil {
			return fmt.Errorf("table %s: abandoned load: commit id %q: %w", core.Display(t.DB, t.Table), o, err)
		}
		closing = append(closing, id)
	}
	return e.AbandonLoads(ctx, t, closing)
}
