package core

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/lakepipe/lakepipe/internal/catalog"
	"github.com/lakepipe/lakepipe/internal/chsql"
	"github.com/lakepipe/lakepipe/internal/rowio"
)

// loadTarget is the table a load writes.
type LoadTarget struct {
	DB, Table string
	Display   string
	Cols      []rowio.Column
	Commit    uint64 // written to CommitColumn; 0 for tables without it
	// Tracked: the table tracks changes ('change_tracking' = 'true'), so a
	// load opens its commits before its rows go in (changes.OpenLoad).
	Tracked bool
	// Owner names the writer in its commits' open marks (PipeOwner), so
	// that maintenance removes its loads once it is gone and they are
	// abandoned (changes.SweepAbandoned). Only writers whose commit ids
	// no other writer can ever use set it (a Kafka pipe's name its
	// generation); "" for the rest.
	Owner string
}

// LoadOwner is the pipe that opened a load (PipeOwner): Generation tells
// it from a pipe dropped and created again under its name.
type LoadOwner struct {
	Schema     string `json:"schema,omitempty"`
	Pipe       string `json:"pipe,omitempty"`
	Generation int64  `json:"generation,omitempty"`
	// Lease names a process's writer lease (package writerlease) for
	// writes outside pipes; Pipe is empty then.
	Lease string `json:"lease,omitempty"`
}

// PipeOwner is the owner of a pipe's loads in the change log's open marks
// (changes.SweepAbandoned): JSON, since names may hold any character.
func PipeOwner(schema, pipe string, generation int64) string {
	b, _ := json.Marshal(LoadOwner{Schema: schema, Pipe: pipe, Generation: generation})
	return string(b)
}

// ParseOwner reads an owner PipeOwner or a writer lease wrote.
func ParseOwner(s string) (LoadOwner, bool) {
	var o LoadOwner
	if json.Unmarshal([]byte(s), &o) != nil || (o.Lease == "") == (o.Pipe == "" || o.Generation == 0) {
		return LoadOwner{}, false
	}
	return o, true
}

// Tracked reports whether a table tracks changes.
func Tracked(spec catalog.TableSpec) bool { return spec.Properties["change_tracking"] == "true" }

// TableTarget is a load into the columns cols of the table spec describes.
func TableTarget(schema, name string, spec catalog.TableSpec, cols []catalog.ColumnSpec) LoadTarget {
	t := LoadTarget{DB: schema, Table: name, Display: Display(schema, name), Tracked: Tracked(spec)}
	for _, c := range cols {
		t.Cols = append(t.Cols, rowio.Column{Name: c.Name, Type: c.CHType})
	}
	return t
}

// dryRun evaluates a DELETE's or UPDATE's condition, and the new values
// where it holds, as a query before the mutation is made: an expression
// that fails on the table's rows fails the statement here. As a mutation
// it would fail in the background for ever, and ClickHouse applies a
// table's mutations in order, so every later one (a pipe's clean-up of a
// dead load included) would wait behind it; 18.16 has no KILL MUTATION.
// (A change-tracked table's DML copies the matching rows first, which
// checks the same.)
func (e *Core) DryRun(ctx context.Context, schema, name, cond string, values []string) error {
	q := "SELECT count() FROM " + chsql.Table(schema, name) + " WHERE (" + cond + ")"
	if len(values) > 0 {
		q += " AND NOT ignore(" + strings.Join(values, ", ") + ")"
	}
	if _, err := e.St.Strings(ctx, q); err != nil {
		return fmt.Errorf("%s: the statement cannot run on its rows: %w", Display(schema, name), QueryError(err))
	}
	return nil
}

// mutate runs an ALTER TABLE … DELETE/UPDATE and waits for it: mutations
// are asynchronous in ClickHouse, and a DML statement should be done when
// it returns.
func (e *Core) Mutate(ctx context.Context, schema, name, what string) (*Result, error) {
	return e.MutateIssued(ctx, schema, name, what, nil)
}

// MutateIssued is Mutate calling issued once ClickHouse has accepted the
// mutation, before waiting for it: from then on it runs to its end
// whatever becomes of this process. An error of issued is ignored.
func (e *Core) MutateIssued(ctx context.Context, schema, name, what string, issued func(context.Context) error) (*Result, error) {
	verb := strings.Fields(what)[0]
	table := name
	if e.Sharded(schema) {
		table = name + ShardSuffix
	}
	// ddl runs it on every node of a cluster; lakepipe's own tables are on
	// this server only.
	run := e.DDL
	if !e.Sharded(schema) {
		run = func(ctx context.Context, head, tail string) error { return e.St.Exec(ctx, head+tail) }
	}
	if err := run(ctx, "ALTER TABLE "+chsql.Table(schema, table), " "+what); err != nil {
		return nil, fmt.Errorf("%s %s: %w", verb, Display(schema, name), err)
	}
	if issued != nil {
		// Not cancelled with the statement: the mutation is not either.
		// Best effort: the record matters only if this process dies before
		// the statement ends, and failing the statement now would leave
		// the mutation running with nothing to register it.
		_ = issued(context.WithoutCancel(ctx))
	}
	if err := e.WaitMutations(ctx, schema, table, verb, Display(schema, name)); err != nil {
		return nil, err
	}
	return Message("%s on %s done", verb, Display(schema, name)), nil
}
