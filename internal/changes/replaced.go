package changes

import (
	"context"
	"fmt"

	"github.com/lakepipe/lakepipe/internal/catalog"
	"github.com/lakepipe/lakepipe/internal/chsql"
	"github.com/lakepipe/lakepipe/internal/core"
	"github.com/lakepipe/lakepipe/internal/staging"
	"github.com/lakepipe/lakepipe/schemas"
)

// A keyed table (PRIMARY KEY) that tracks changes keeps in its change log
// the rows its writes replace, as UPDATE_BEFORE rows under the commit of
// the write that replaced them: SQL statements do it themselves (engine's
// applyKeyed); loads stage their rows and keepReplaced copies, before the
// staged parts are attached, the rows of the staged keys that the attach
// will replace. A replaced row may be merged away any time after it is
// replaced, so it is copied before, never after.

// KeepsReplaced reports whether a table's loads must keep the rows they
// replace: a keyed table that tracks changes.
func KeepsReplaced(spec catalog.TableSpec) bool { return spec.Keyed() && Tracked(spec) }

// StageKey is the key a load's staging table of a table with spec takes
// (staging.New): the key columns of a keyed table, quoted; "" for others.
func StageKey(spec catalog.TableSpec) string {
	if !spec.Keyed() {
		return ""
	}
	return KeyList(spec)
}

// LoadColumns is core.TargetColumns for a load (a pipe, COPY, a Kafka
// batch).
func (e *Log) LoadColumns(table string, spec catalog.TableSpec, names []string) ([]catalog.ColumnSpec, error) {
	return core.TargetColumns(table, spec, names)
}

// PublishStaged attaches a staged load to target (staging.Stage.Publish),
// first keeping the rows it replaces when the table needs them.
func (e *Log) PublishStaged(ctx context.Context, stg *staging.Stage, target core.LoadTarget) error {
	if stg == nil {
		return nil
	}
	var spec catalog.TableSpec
	ok, err := e.Cat.Get(ctx, catalog.KindTable, target.DB, target.Table, &spec)
	if err != nil {
		return err
	}
	if ok && KeepsReplaced(spec) {
		// A fenced attempt (its lease ended) must not write the change log.
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := e.keepReplaced(ctx, target.DB, target.Table, spec, stg.Table()); err != nil {
			return err
		}
	}
	return stg.Publish(ctx, target)
}

// keepReplaced copies into the change table the present rows of the keys
// that the staged table stage holds, each under the commit of the staged
// row that will replace it (of a key staged twice, the one FINAL keeps).
// A key the change log already holds for that commit is left out: a
// retried load (same commit ids) copies nothing twice, and its earlier
// attempt's copy stays right even if the replaced row was merged away
// meanwhile. A row of the staged commits themselves (an earlier file of
// the same COPY) is no replacement.
func (e *Log) keepReplaced(ctx context.Context, schema, name string, spec catalog.TableSpec, stage string) error {
	keys, colList := KeyList(spec), core.ColumnList(spec.Columns)
	commit, orig := chsql.QuoteIdent(core.CommitColumn), chsql.QuoteIdent(OrigCommitColumn)
	changes := chsql.Table(schemas.ChangesDB, ChangesTable(schema, name))
	staged := "(SELECT DISTINCT " + commit + " FROM " + stage + ")"
	// GLOBAL on a cluster: the stage is a table of this server.
	in, notIn := e.GlobalIn(), e.GlobalNotIn()
	q := "INSERT INTO " + changes + " (" + colList + ", " + chsql.QuoteIdent(ChangeTypeColumn) + ", " + commit + ", " + orig + ") " +
		"SELECT " + colList + ", 'UPDATE_BEFORE', __lp_by, " + commit + " FROM (SELECT " + colList + ", " + commit + " FROM " + Rows(schema, name, spec) +
		" WHERE (" + keys + ")" + in + "(SELECT " + keys + " FROM " + stage + ") AND " + commit + notIn + staged + ")" +
		" ALL INNER JOIN (SELECT " + keys + ", " + commit + " AS __lp_by FROM " + stage + " FINAL) USING (" + keys + ")" +
		" WHERE (" + keys + ", __lp_by) NOT IN (SELECT " + keys + ", " + commit + " FROM " + changes + " WHERE " + commit + " IN " + staged + ")"
	if err := e.St.Exec(ctx, q); err != nil {
		return fmt.Errorf("table %s: keep the rows a load replaces in its change log: %w", core.Display(schema, name), err)
	}
	return e.indexRemoved(ctx, schema, name, staged)
}

// replacingCommits are those of ids under which the change table of a
// table that keeps replaced rows holds rows: loads that replaced rows,
// which the change log registers as UPDATE commits.
func (e *Log) replacingCommits(ctx context.Context, schema, name string, ids []uint64) (map[uint64]bool, error) {
	got, err := e.St.Strings(ctx, fmt.Sprintf("SELECT DISTINCT toString(%s) FROM %s WHERE %s IN (%s)", chsql.QuoteIdent(core.CommitColumn),
		chsql.Table(schemas.ChangesDB, ChangesTable(schema, name)), chsql.QuoteIdent(core.CommitColumn), IDList(ids)))
	if err != nil {
		return nil, fmt.Errorf("table %s: read its change log: %w", core.Display(schema, name), err)
	}
	out := make(map[uint64]bool, len(got))
	for _, g := range got {
		var id uint64
		if _, err := fmt.Sscan(g, &id); err == nil {
			out[id] = true
		}
	}
	return out, nil
}
