package changes

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/lakepipe/lakepipe/internal/catalog"
	"github.com/lakepipe/lakepipe/internal/chsql"
	"github.com/lakepipe/lakepipe/internal/core"
	"github.com/lakepipe/lakepipe/schemas"
)

// issuedTable records the statements of change-tracked tables whose
// mutation ClickHouse accepted (see schemas, catalog version 10).
const issuedTable = "issued_mutations"

// MutationIssued records that the mutation of the statement writing
// commit on schema.name was accepted: the statement can no longer be
// taken back, and maintenance registers its commit should its process
// die before it does (SweepAbandoned). Statements pass it to
// core.MutateIssued.
func (e *Log) MutationIssued(ctx context.Context, schema, name string, commit uint64) error {
	if err := e.St.InsertRows(ctx, schemas.SystemDB, issuedTable, []string{"db", "table", "commit_id", "written_at"},
		[][]any{{schema, name, commit, time.Now().UTC()}}); err != nil {
		return fmt.Errorf("record that the mutation of commit %016x was issued: %w", commit, err)
	}
	return nil
}

// irreversible returns those of ids (abandoned loads of schema.name) that
// cannot be taken back, because they changed rows other than their own,
// and, of them, those whose mutation was issued. A statement's mutation
// removes rows whatever becomes of the statement once ClickHouse accepted
// it: recorded in issued_mutations, or, if the process died before it
// could record it, named in a mutation of the table as UPDATE, DELETE and
// MERGE INTO name their commit ("_lp_commit != id"; ClickHouse keeps the
// last 100 done). A load into a keyed table whose rows went in cannot be
// taken back either, mutation or not: its rows replaced older ones by
// key, which merges may have removed since (one that died before, a
// staged load before its publish, replaced nothing).
func (e *Log) irreversible(ctx context.Context, schema, name string, spec catalog.TableSpec, ids []uint64) (forward, issued map[uint64]bool, err error) {
	forward, issued = map[uint64]bool{}, map[uint64]bool{}
	if len(ids) == 0 {
		return forward, issued, nil
	}
	recorded, err := e.St.Strings(ctx, "SELECT DISTINCT toString(commit_id) FROM "+schemas.SystemDB+"."+issuedTable+" WHERE "+TableWhere(schema, name)+
		" AND commit_id IN ("+IDList(ids)+")")
	if err != nil {
		return nil, nil, fmt.Errorf("table %s: read its issued mutations: %w", core.Display(schema, name), err)
	}
	if err := addIDs(issued, recorded, schema, name); err != nil {
		return nil, nil, err
	}
	commands, err := e.St.Strings(ctx, "SELECT command FROM system.mutations WHERE database = "+chsql.QuoteString(schema)+
		" AND table IN ("+chsql.QuoteString(name)+", "+chsql.QuoteString(name+core.ShardSuffix)+")")
	if err != nil {
		return nil, nil, fmt.Errorf("table %s: read its mutations: %w", core.Display(schema, name), err)
	}
	for _, id := range ids {
		// Not the removals of dead loads (DropCommits: "_lp_commit IN (…)").
		named := core.CommitColumn + " != " + strconv.FormatUint(id, 10)
		for _, c := range commands {
			if names(c, named) {
				issued[id] = true
			}
		}
	}
	for id := range issued {
		forward[id] = true
	}
	if spec.Keyed() {
		in, err := e.St.Strings(ctx, "SELECT DISTINCT toString("+chsql.QuoteIdent(core.CommitColumn)+") FROM "+chsql.Table(schema, name)+
			" WHERE "+chsql.QuoteIdent(core.CommitColumn)+" IN ("+IDList(ids)+")")
		if err != nil {
			return nil, nil, fmt.Errorf("table %s: read the rows of its abandoned loads: %w", core.Display(schema, name), err)
		}
		if err := addIDs(forward, in, schema, name); err != nil {
			return nil, nil, err
		}
	}
	return forward, issued, nil
}

// registerIrreversible registers abandoned loads that cannot be taken
// back, by what they left: rows in the table and removed rows in its
// change table are an UPDATE, removed rows alone a DELETE, rows alone an
// INSERT. Their marks are closed. Of a load whose mutation was never
// issued (a MERGE INTO whose rows went in, stopped before its delete),
// the deletions its change log claims did not happen: they are taken out
// of it first, so that streams do not show keys gone that are there.
func (e *Log) registerIrreversible(ctx context.Context, schema, name string, ids []uint64, issued map[uint64]bool) error {
	var unissued []uint64
	for _, id := range ids {
		if !issued[id] {
			unissued = append(unissued, id)
		}
	}
	if err := e.unclaimDeletes(ctx, schema, name, unissued); err != nil {
		return err
	}
	commits := make([]Commit, 0, len(ids))
	for _, id := range ids {
		added, err := e.CommitRows(ctx, schema, name, id)
		if err != nil {
			return err
		}
		removed, err := e.CommitRows(ctx, schemas.ChangesDB, ChangesTable(schema, name), id)
		if err != nil {
			return err
		}
		c := Commit{ID: id, Kind: CommitInsert, Rows: added, Opened: true}
		switch {
		case removed > 0 && added > 0:
			c.Kind = CommitUpdate
		case removed > 0:
			c.Kind, c.Rows = CommitDelete, removed
		}
		commits = append(commits, c)
	}
	if err := e.RegisterCommits(ctx, schema, name, commits); err != nil {
		return fmt.Errorf("table %s: register %d loads its dead writers left: %w", core.Display(schema, name), len(commits), err)
	}
	return nil
}

// unclaimDeletes takes the DELETE rows of commits ids out of schema.name's
// change table: deletions that did not happen. The mutation waits, so
// that the counts read after it are right; none runs when there are no
// such rows (the change table is ordered by commit: a small read).
func (e *Log) unclaimDeletes(ctx context.Context, schema, name string, ids []uint64) error {
	if len(ids) == 0 {
		return nil
	}
	where := chsql.QuoteIdent(core.CommitColumn) + " IN (" + IDList(ids) + ") AND " + chsql.QuoteIdent(ChangeTypeColumn) + " = " + chsql.QuoteString(CommitDelete)
	changes := ChangesTable(schema, name)
	n, err := e.St.Strings(ctx, "SELECT toString(count()) FROM "+chsql.Table(schemas.ChangesDB, changes)+" WHERE "+where)
	if err != nil {
		return fmt.Errorf("table %s: read the deletions of %d stopped writes: %w", core.Display(schema, name), len(ids), err)
	}
	if len(n) == 1 && n[0] == "0" {
		return nil
	}
	if _, err := e.Mutate(ctx, schemas.ChangesDB, changes, "DELETE WHERE "+where); err != nil {
		return fmt.Errorf("table %s: take the deletions of %d stopped writes out of its change log: %w", core.Display(schema, name), len(ids), err)
	}
	return nil
}

// addIDs adds the commit ids a query read as text to set.
func addIDs(set map[uint64]bool, ids []string, schema, name string) error {
	for _, s := range ids {
		id, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return fmt.Errorf("table %s: commit id %q: %w", core.Display(schema, name), s, err)
		}
		set[id] = true
	}
	return nil
}

// names reports whether command holds text not followed by a digit (a
// commit id is not a prefix of another's).
func names(command, text string) bool {
	for {
		i := strings.Index(command, text)
		if i < 0 {
			return false
		}
		command = command[i+len(text):]
		if command == "" || command[0] < '0' || command[0] > '9' {
			return true
		}
	}
}
