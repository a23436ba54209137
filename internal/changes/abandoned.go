package changes

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lakepipe/lakepipe/internal/catalog"
	"github.com/lakepipe/lakepipe/internal/chsql"
	"github.com/lakepipe/lakepipe/internal/core"
	"github.com/lakepipe/lakepipe/internal/writerlease"
	"github.com/lakepipe/lakepipe/schemas"
)

// AbandonedAge is how long a load of a dropped pipe stays open before
// maintenance removes it (SweepAbandoned): longer than any attempt of a
// CopyFiles or a KafkaBatch can write (their start-to-close timeouts are
// 2 hours and 30 minutes, and an attempt past it is fenced within its
// heartbeat timeout), as for staging tables; and, for a statement's
// load, longer than its process writes under a writer lease it has not
// renewed (writerlease.FenceAfter).
const AbandonedAge = 24 * time.Hour

// SweepAbandoned removes the loads of change-tracked tables that pipes
// since dropped (see core.LoadTarget.Owner), or processes since dead,
// opened and never registered: their rows, then their open marks, so that
// they no longer cost every read of the table a name in its set of
// uncommitted loads (and their rows no longer sit, hidden, in the table).
// A load qualifies when its last open mark is older than age and none of
// its owners is alive: a pipe (core.PipeOwner) in the catalog under the
// same generation, or a writer lease (package writerlease) renewed within
// age. A dropped pipe starts no attempt (ErrPipeGone comes before any
// write), and the attempts it had running have stopped writing by then; a
// process stops writing under a lease it has not renewed for
// writerlease.FenceAfter, and nothing else writes under its commits. So
// nothing can add a row to the commit after its rows are removed. A load whose table is gone stays as it is (UNDROP
// brings the table back with its marks). It returns the loads it removed.
//
// A mark names the commit open while the sum of its signs is above 0;
// merges fold a commit's two +1 (a retry's) into one, so the sum counts
// attempts only until a merge: what matters is above 0 or not.
func (e *Log) SweepAbandoned(ctx context.Context, age time.Duration) (int, error) {
	var rows [][4]string
	err := e.St.Each(ctx, "SELECT db, table, toString(commit_id), owners FROM ("+
		"SELECT db, table, commit_id, arrayStringConcat(groupUniqArrayIf(owner, owner != ''), '\\n') AS owners, max(opened_at) AS last, sum(sign) AS n"+
		" FROM "+openRel+" GROUP BY db, table, commit_id"+
		" HAVING n > 0 AND owners != '' AND last < now() - "+strconv.FormatInt(int64(age/time.Second), 10)+")",
		func([]string, []string) error { return nil },
		func(r []any) error {
			var row [4]string
			for i := range row {
				row[i] = fmt.Sprint(r[i])
			}
			rows = append(rows, row)
			return nil
		})
	if err != nil {
		return 0, fmt.Errorf("find abandoned loads: %w", err)
	}
	alive := map[string]bool{}          // by owner
	byTable := map[[2]string][]uint64{} // commit ids by db, table
	for _, r := range rows {
		commit, err := strconv.ParseUint(r[2], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("find abandoned loads: commit id %q: %w", r[2], err)
		}
		live := false
		for _, owner := range strings.Split(r[3], "\n") {
			l, seen := alive[owner]
			if !seen {
				if l, err = e.ownerLive(ctx, owner, age); err != nil {
					return 0, err
				}
				alive[owner] = l
			}
			live = live || l
		}
		if !live {
			k := [2]string{r[0], r[1]}
			byTable[k] = append(byTable[k], commit)
		}
	}
	swept := 0
	for k, ids := range byTable {
		n, err := e.sweepTable(ctx, k[0], k[1], ids)
		swept += n
		if err != nil {
			return swept, err
		}
	}
	return swept, nil
}

// ownerLive reports whether the pipe an owner names is in the catalog
// under the same generation, or the writer lease it names was renewed
// within age (a lease deleted is dead: its row is written before
// its first mark); an owner it cannot read counts as live.
func (e *Log) ownerLive(ctx context.Context, owner string, age time.Duration) (bool, error) {
	o, ok := core.ParseOwner(owner)
	if !ok {
		return true, nil
	}
	if o.Lease != "" {
		v, err := e.St.Strings(ctx, "SELECT toString(count()) FROM "+writerlease.Table+" WHERE owner = "+chsql.QuoteString(owner)+
			" AND renewed_at >= now() - "+strconv.FormatInt(int64(age/time.Second), 10))
		if err != nil {
			return false, fmt.Errorf("find abandoned loads: writer lease %s: %w", o.Lease, err)
		}
		return len(v) != 1 || v[0] != "0", nil
	}
	var spec catalog.PipeSpec
	found, err := e.Cat.Get(ctx, catalog.KindPipe, o.Schema, o.Pipe, &spec)
	if err != nil {
		return false, fmt.Errorf("find abandoned loads: pipe %s: %w", core.Display(o.Schema, o.Pipe), err)
	}
	return found && spec.CreatedAt.UnixNano() == o.Generation, nil
}

// sweepTable removes the abandoned loads (commit ids) of one table: the
// registered ones among them are left to closeRegistered, the rows of the
// rest are deleted (waiting for the mutation) before their marks are, so
// that no reader sees them in between.
func (e *Log) sweepTable(ctx context.Context, schema, name string, ids []uint64) (int, error) {
	var spec catalog.TableSpec
	if ok, err := e.Cat.Get(ctx, catalog.KindTable, schema, name, &spec); err != nil || !ok {
		return 0, err
	}
	drop, err := e.unregistered(ctx, schema, name, ids)
	if err != nil || len(drop) == 0 {
		return 0, err
	}
	// A volume pipe's load is committed once load_history records it,
	// and registered after: one recorded but not registered (the worker
	// died in between, and the pipe was dropped before a retry registered
	// it) is no abandoned load. It is registered, as the retry would have.
	if drop, err = e.registerRecorded(ctx, schema, name, spec, drop); err != nil || len(drop) == 0 {
		return 0, err
	}
	return e.settle(ctx, schema, name, spec, drop)
}

// unregistered returns those of ids (loads of schema.name) that its change
// log has not registered.
func (e *Log) unregistered(ctx context.Context, schema, name string, ids []uint64) ([]uint64, error) {
	registered, err := e.St.Strings(ctx, "SELECT toString(commit_id) FROM lakepipe.table_commits WHERE "+TableWhere(schema, name)+
		" AND commit_id IN ("+IDList(ids)+")")
	if err != nil {
		return nil, fmt.Errorf("table %s: read its abandoned loads: %w", core.Display(schema, name), err)
	}
	skip := map[string]bool{}
	for _, r := range registered {
		skip[r] = true
	}
	var out []uint64
	for _, id := range ids {
		if !skip[strconv.FormatUint(id, 10)] {
			out = append(out, id)
		}
	}
	return out, nil
}

// SettleFailed settles the loads ids of schema.name, opened by a statement
// that failed, as maintenance settles abandoned ones: those that changed
// rows other than their own are registered as what they did, the others
// taken back. For statements that cannot simply take their rows back
// (a MERGE INTO a keyed table).
func (e *Log) SettleFailed(ctx context.Context, schema, name string, ids []uint64) error {
	var spec catalog.TableSpec
	if ok, err := e.Cat.Get(ctx, catalog.KindTable, schema, name, &spec); err != nil || !ok {
		return err
	}
	// Registered ones (it failed closing their marks) are left to
	// maintenance's closeRegistered.
	ids, err := e.unregistered(ctx, schema, name, ids)
	if err != nil || len(ids) == 0 {
		return err
	}
	_, err = e.settle(ctx, schema, name, spec, ids)
	return err
}

// settle registers those of ids (open, unregistered loads of schema.name)
// that changed rows other than their own, since removing their own rows
// would lose the rows they replaced or removed (irreversible), and removes
// the others. It returns how many it settled.
func (e *Log) settle(ctx context.Context, schema, name string, spec catalog.TableSpec, drop []uint64) (int, error) {
	forward, issued, err := e.irreversible(ctx, schema, name, spec, drop)
	if err != nil {
		return 0, err
	}
	kept := 0
	if len(forward) > 0 {
		var keep, rest []uint64
		for _, id := range drop {
			if forward[id] {
				keep = append(keep, id)
			} else {
				rest = append(rest, id)
			}
		}
		if err := e.registerIrreversible(ctx, schema, name, keep, issued); err != nil {
			return 0, err
		}
		if kept, drop = len(keep), rest; len(drop) == 0 {
			return kept, nil
		}
	}
	t := core.LoadTarget{DB: schema, Table: name, Display: core.Display(schema, name), Tracked: true}
	if err := e.DropCommits(ctx, t, drop); err != nil {
		return kept, fmt.Errorf("table %s: remove %d abandoned loads: %w", t.Display, len(drop), err)
	}
	// The marks go, rather than being closed by as many -1: merges of a
	// CollapsingMergeTree fold two +1 of a key into one, so the count of
	// marks read is not the count that will be there.
	if _, err := e.Mutate(ctx, schemas.SystemDB, openTable, "DELETE WHERE "+TableWhere(schema, name)+" AND commit_id IN ("+IDList(drop)+")"); err != nil {
		return kept, fmt.Errorf("table %s: forget %d abandoned loads: %w", t.Display, len(drop), err)
	}
	return kept + len(drop), nil
}

// registerRecorded registers the loads among ids that a pipe recorded in
// load_history for the table (since it was created: load ids do not name
// the table), and returns the others. A record naming a load in any state
// counts: the last record of a path names the load that holds its rows
// (a new version skipped names the version loaded), and a load recorded
// FAILED left no rows. Its marks are left to closeRegistered.
func (e *Log) registerRecorded(ctx context.Context, schema, name string, spec catalog.TableSpec, ids []uint64) ([]uint64, error) {
	recorded, err := e.St.Strings(ctx, "SELECT DISTINCT load_id FROM "+schemas.SystemDB+".load_history WHERE table_name = "+chsql.QuoteString(core.Display(schema, name))+
		" AND last_copy_time >= toDateTime("+strconv.FormatInt(spec.CreatedAt.Unix(), 10)+") AND load_id IN ("+chsql.QuoteList(ids, core.LoadID)+")")
	if err != nil {
		return nil, fmt.Errorf("table %s: read the load history of its abandoned loads: %w", core.Display(schema, name), err)
	}
	if len(recorded) == 0 {
		return ids, nil
	}
	var rest []uint64
	var track []LoadCommit
	for _, id := range ids {
		if slices.Contains(recorded, core.LoadID(id)) {
			track = append(track, LoadCommit{ID: id, Rows: -1})
		} else {
			rest = append(rest, id)
		}
	}
	if err := e.TrackLoads(ctx, schema, name, track); err != nil {
		return nil, fmt.Errorf("table %s: register %d recorded loads: %w", core.Display(schema, name), len(track), err)
	}
	return rest, nil
}
