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
// cannot be taken back, because they changed rows other than their own:
// the statements whose mutation ClickHouse accepted (it removes rows
// whatever becomes of the statement), recorded in issued_mutations, or,
// if the process died before it could record it, named in a mutation of
// the table as UPDATE and DELETE name their commit ("_lp_commit != id";
// ClickHouse keeps the last 100 done); and a load into a keyed table
// whose rows went in (they replaced older ones by key, which merges may
// have removed since; one that died before, a staged load before its
// publish, replaced nothing).
func (e *Log) irreversible(ctx context.Context, schema, name string, spec catalog.TableSpec, ids []uint64) (map[uint64]bool, error) {
	out := map[uint64]bool{}
	if len(ids) == 0 {
		return out, nil
	}
	issued, err := e.St.Strings(ctx, "SELECT DISTINCT toString(commit_id) FROM "+schemas.SystemDB+"."+issuedTable+" WHERE "+TableWhere(schema, name)+
		" AND commit_id IN ("+IDList(ids)+")")
	if err != nil {
		return nil, fmt.Errorf("table %s: read its issued mutations: %w", core.Display(schema, name), err)
	}
	if err := addIDs(out, issued, schema, name); err != nil {
		return nil, err
	}
	if spec.Keyed() {
		in, err := e.St.Strings(ctx, "SELECT DISTINCT toString("+chsql.QuoteIdent(core.CommitColumn)+") FROM "+chsql.Table(schema, name)+
			" WHERE "+chsql.QuoteIdent(core.CommitColumn)+" IN ("+IDList(ids)+")")
		if err != nil {
			return nil, fmt.Errorf("table %s: read the rows of its abandoned loads: %w", core.Display(schema, name), err)
		}
		return out, addIDs(out, in, schema, name)
	}
	commands, err := e.St.Strings(ctx, "SELECT command FROM system.mutations WHERE database = "+chsql.QuoteString(schema)+
		" AND table IN ("+chsql.QuoteString(name)+", "+chsql.QuoteString(name+core.ShardSuffix)+")")
	if err != nil {
		return nil, fmt.Errorf("table %s: read its mutations: %w", core.Display(schema, name), err)
	}
	for _, id := range ids {
		// Not the removals of dead loads (DropCommits: "_lp_commit IN (…)").
		named := core.CommitColumn + " != " + strconv.FormatUint(id, 10)
		for _, c := range commands {
			if names(c, named) {
				out[id] = true
			}
		}
	}
	return out, nil
}

// registerIrreversible registers abandoned loads that cannot be taken
// back, by what they left: rows in the table and removed rows in its
// change table are an UPDATE, removed rows alone a DELETE, rows alone an
// INSERT. Their marks are closed.
func (e *Log) registerIrreversible(ctx context.Context, schema, name string, ids []uint64) error {
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
