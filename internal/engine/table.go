package engine

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/lakepipe/lakepipe/internal/catalog"
	"github.com/lakepipe/lakepipe/internal/changes"
	"github.com/lakepipe/lakepipe/internal/chsql"
	"github.com/lakepipe/lakepipe/internal/core"
	"github.com/lakepipe/lakepipe/internal/query"
	"github.com/lakepipe/lakepipe/internal/sqlast"
	"github.com/lakepipe/lakepipe/schemas"
)

func (e *Engine) createTable(ctx context.Context, s *sqlast.CreateTable) (*core.Result, error) {
	schema, name, err := e.Qualify(s.Name)
	if err != nil {
		return nil, err
	}
	var existing catalog.TableSpec
	ok, err := e.Cat.Get(ctx, catalog.KindTable, schema, name, &existing)
	if err != nil {
		return nil, err
	}
	if ok {
		if s.IfNotExists {
			return core.Message("table %s already exists", core.Display(schema, name)), nil
		}
		return nil, fmt.Errorf("table %s already exists (use IF NOT EXISTS, or DROP TABLE first)", core.Display(schema, name))
	}
	if s.AsQuery != nil {
		return nil, fmt.Errorf("CREATE TABLE … AS SELECT: %w (create the table, then INSERT INTO … SELECT)", core.ErrNotSupportedYet)
	}
	if len(s.Columns) == 0 {
		return nil, fmt.Errorf("table %s: at least one column is needed", core.Display(schema, name))
	}
	// Properties are set as ALTER TABLE … SET PROPERTIES sets them, once the
	// table exists (change_tracking creates its change log); their names
	// are checked first.
	if err := checkTableProps(core.Display(schema, name), core.Props(s.Props)); err != nil {
		return nil, err
	}
	spec := catalog.TableSpec{PartitionBy: s.PartitionBy, CreatedAt: time.Now().UTC()}
	if s.Comment != nil {
		spec.Comment = *s.Comment
	}
	// Partition and key columns cannot be Nullable in ClickHouse.
	partition := map[string]bool{}
	for _, p := range s.PartitionBy {
		partition[strings.ToLower(p)] = true
	}
	for _, k := range s.PrimaryKey {
		partition[strings.ToLower(k)] = true
	}
	seen := map[string]bool{}
	for _, c := range s.Columns {
		if seen[strings.ToLower(c.Name)] {
			return nil, fmt.Errorf("table %s: column %s is declared twice", core.Display(schema, name), c.Name)
		}
		seen[strings.ToLower(c.Name)] = true
		ch, err := schemas.ClickHouseType(c.Type, c.NotNull || partition[strings.ToLower(c.Name)])
		if err != nil {
			return nil, fmt.Errorf("table %s column %s: %w", core.Display(schema, name), c.Name, err)
		}
		cs := catalog.ColumnSpec{Name: c.Name, Type: sqlast.FormatType(c.Type), CHType: ch}
		if c.Comment != nil {
			cs.Comment = *c.Comment
		}
		spec.Columns = append(spec.Columns, cs)
	}
	for _, p := range s.PartitionBy {
		if !seen[strings.ToLower(p)] {
			return nil, fmt.Errorf("table %s: PARTITIONED BY names %s, which is not a column", core.Display(schema, name), p)
		}
	}
	if spec.PrimaryKey, err = primaryKey(core.Display(schema, name), s); err != nil {
		return nil, err
	}
	if err := e.createClickHouseTable(ctx, schema, name, spec); err != nil {
		return nil, err
	}
	if err := e.Cat.Put(ctx, catalog.KindTable, schema, name, spec, ""); err != nil {
		return nil, err
	}
	if len(s.Props) > 0 {
		if _, err := e.alterTable(ctx, &sqlast.AlterTable{Name: s.Name, Action: "SET_PROPERTIES", Props: s.Props}); err != nil {
			return nil, fmt.Errorf("table %s created, but its properties were not set: %w", core.Display(schema, name), err)
		}
	}
	return core.Message("table %s created", core.Display(schema, name)), nil
}

// primaryKey checks the PRIMARY KEY of CREATE TABLE: columns of the table,
// each once, and the partition columns among them (a key's rows must meet
// in one partition for ReplacingMergeTree to keep one of them).
func primaryKey(table string, s *sqlast.CreateTable) ([]string, error) {
	if s.PrimaryKey == nil {
		return nil, nil
	}
	columns := map[string]string{}
	for _, c := range s.Columns {
		columns[strings.ToLower(c.Name)] = c.Name
	}
	inKey := map[string]bool{}
	var key []string
	for _, k := range s.PrimaryKey {
		c, ok := columns[strings.ToLower(k)]
		if !ok {
			return nil, fmt.Errorf("table %s: PRIMARY KEY names %s, which is not a column", table, k)
		}
		if inKey[strings.ToLower(k)] {
			return nil, fmt.Errorf("table %s: PRIMARY KEY names %s twice", table, k)
		}
		inKey[strings.ToLower(k)] = true
		key = append(key, c)
	}
	for _, p := range s.PartitionBy {
		if !inKey[strings.ToLower(p)] {
			return nil, fmt.Errorf("table %s: the partition column %s must be part of the PRIMARY KEY (one row per key is kept within a partition)", table, p)
		}
	}
	return key, nil
}

func (e *Engine) createClickHouseTable(ctx context.Context, schema, name string, spec catalog.TableSpec) error {
	cols := make([]string, len(spec.Columns))
	for i, c := range spec.Columns {
		cols[i] = core.ColumnDDL(c)
	}
	// _lp_commit tags the rows of each load, which is what makes loads
	// exactly-once (see docs/exactly-once.md); queries never show it.
	cols = append(cols, chsql.QuoteIdent(core.CommitColumn)+" UInt64 DEFAULT 0")
	clauses := ""
	if len(spec.PartitionBy) > 0 {
		parts := make([]string, len(spec.PartitionBy))
		for i, p := range spec.PartitionBy {
			parts[i] = chsql.QuoteIdent(p)
		}
		clauses += " PARTITION BY (" + strings.Join(parts, ", ") + ")"
	}
	// Ordered by commit id: the rows of one load (or one write of a
	// change-tracked table) sit together, so a table stream reads only them.
	// A keyed table is ordered by its key, which ReplacingMergeTree
	// deduplicates by (a stream of it reads its commits with a scan).
	var key []string
	for _, k := range spec.PrimaryKey {
		key = append(key, chsql.QuoteIdent(k))
	}
	if key != nil {
		clauses += " ORDER BY (" + strings.Join(key, ", ") + ")"
	} else {
		clauses += " ORDER BY " + chsql.QuoteIdent(core.CommitColumn)
	}
	if err := e.CreateStoredTable(ctx, schema, name, strings.Join(cols, ", "), clauses, key); err != nil {
		return fmt.Errorf("create table %s: %w", core.Display(schema, name), err)
	}
	return nil
}

func (e *Engine) dropTable(ctx context.Context, s *sqlast.DropTable) (*core.Result, error) {
	schema, name, spec, err := e.Table(ctx, s.Name)
	if err != nil {
		if s.IfExists && schema != "" {
			return core.Message("table %s does not exist", core.Display(schema, name)), nil
		}
		return nil, err
	}
	now := time.Now().UTC()
	trash := fmt.Sprintf("%s__%s__%d", schema, name, now.UnixNano())
	if err := e.RenameStoredTable(ctx, schema, name, schemas.TrashDB, trash); err != nil {
		return nil, fmt.Errorf("drop table %s: %w", core.Display(schema, name), err)
	}
	if err := e.Cat.Put(ctx, catalog.KindDroppedTable, schemas.TrashDB, trash, catalog.DroppedTableSpec{Table: spec, Schema: schema, Name: name, DroppedAt: now}, ""); err != nil {
		return nil, err
	}
	if err := e.Cat.Delete(ctx, catalog.KindTable, schema, name); err != nil {
		return nil, err
	}
	e.purgeTrash(ctx)
	return core.Message("table %s dropped (UNDROP TABLE %s restores it within %d days)", core.Display(schema, name), name, e.Cfg.TrashRetentionDays), nil
}

// purgeTrash removes dropped tables past their retention. Failures are
// left for the next drop to retry.
func (e *Engine) purgeTrash(ctx context.Context) {
	objs, err := e.Cat.List(ctx, catalog.KindDroppedTable, schemas.TrashDB)
	if err != nil {
		return
	}
	cutoff := time.Now().Add(-time.Duration(e.Cfg.TrashRetentionDays) * 24 * time.Hour)
	// A change log is named after its table: it goes once no table of
	// that name is left in the trash (nor live, see dropChangeLog).
	type tableName struct{ schema, name string }
	purged := map[tableName]time.Time{} // the latest drop purged
	kept := map[tableName]bool{}
	for _, o := range objs {
		var d catalog.DroppedTableSpec
		if o.Decode(&d) != nil {
			continue
		}
		n := tableName{d.Schema, d.Name}
		if d.DroppedAt.After(cutoff) || e.DropStoredTable(ctx, schemas.TrashDB, o.Name) != nil || e.Cat.Delete(ctx, catalog.KindDroppedTable, schemas.TrashDB, o.Name) != nil {
			kept[n] = true
		} else if d.DroppedAt.After(purged[n]) {
			purged[n] = d.DroppedAt
		}
	}
	for n, at := range purged {
		if !kept[n] {
			_ = e.DropChangeLog(ctx, n.schema, n.name, at)
		}
	}
}

func (e *Engine) undropTable(ctx context.Context, s *sqlast.UndropTable) (*core.Result, error) {
	schema, name, err := e.Qualify(s.Name)
	if err != nil {
		return nil, err
	}
	var live catalog.TableSpec
	if ok, err := e.Cat.Get(ctx, catalog.KindTable, schema, name, &live); err != nil {
		return nil, err
	} else if ok {
		return nil, fmt.Errorf("table %s exists: drop or rename it before UNDROP", core.Display(schema, name))
	}
	objs, err := e.Cat.List(ctx, catalog.KindDroppedTable, schemas.TrashDB)
	if err != nil {
		return nil, err
	}
	var best *catalog.DroppedTableSpec
	var bestName string
	cutoff := time.Now().Add(-time.Duration(e.Cfg.TrashRetentionDays) * 24 * time.Hour)
	for _, o := range objs {
		var d catalog.DroppedTableSpec
		if o.Decode(&d) != nil || d.Schema != schema || d.Name != name || d.DroppedAt.Before(cutoff) {
			continue
		}
		if best == nil || d.DroppedAt.After(best.DroppedAt) {
			dd := d
			best, bestName = &dd, o.Name
		}
	}
	if best == nil {
		return nil, fmt.Errorf("no dropped table %s within the last %d days", core.Display(schema, name), e.Cfg.TrashRetentionDays)
	}
	if err := e.RenameStoredTable(ctx, schemas.TrashDB, bestName, schema, name); err != nil {
		return nil, fmt.Errorf("undrop table %s: %w", core.Display(schema, name), err)
	}
	if err := e.Cat.Put(ctx, catalog.KindTable, schema, name, best.Table, ""); err != nil {
		return nil, err
	}
	if err := e.Cat.Delete(ctx, catalog.KindDroppedTable, schemas.TrashDB, bestName); err != nil {
		return nil, err
	}
	return core.Message("table %s restored", core.Display(schema, name)), nil
}

// tableProperties are the properties ALTER TABLE … SET PROPERTIES knows.
var tableProperties = map[string]bool{"change_tracking": true, "data_retention_days": true, "data_lifecycle": true, "comment": true}

func (e *Engine) alterTable(ctx context.Context, s *sqlast.AlterTable) (*core.Result, error) {
	schema, name, spec, err := e.Table(ctx, s.Name)
	if err != nil {
		return nil, err
	}
	switch s.Action {
	case "SET_PROPERTIES":
		if spec.Properties == nil {
			spec.Properties = map[string]string{}
		}
		for k, v := range core.Props(s.Props) {
			if err := checkTableProps(core.Display(schema, name), map[string]string{k: v}); err != nil {
				return nil, err
			}
			if k == "change_tracking" {
				b, err := core.ParseBool(k, v)
				if err != nil {
					return nil, err
				}
				v = fmt.Sprint(b)
				if b && !changes.Tracked(spec) {
					if err := e.EnableTracking(ctx, schema, name, spec); err != nil {
						return nil, err
					}
				}
			}
			if k == "comment" {
				spec.Comment = v
				continue
			}
			spec.Properties[k] = v
		}
	case "ADD_COLUMN":
		c := s.Column
		for _, old := range spec.Columns {
			if strings.EqualFold(old.Name, c.Name) {
				return nil, fmt.Errorf("table %s already has a column %s", core.Display(schema, name), c.Name)
			}
		}
		ch, err := schemas.ClickHouseType(c.Type, c.NotNull)
		if err != nil {
			return nil, err
		}
		cs := catalog.ColumnSpec{Name: c.Name, Type: sqlast.FormatType(c.Type), CHType: ch}
		if c.Comment != nil {
			cs.Comment = *c.Comment
		}
		if err := e.AlterColumns(ctx, schema, name, "ADD COLUMN "+core.ColumnDDL(cs)); err != nil {
			return nil, fmt.Errorf("alter table %s: %w", core.Display(schema, name), err)
		}
		if changes.Tracked(spec) {
			// Its change log gets the column too (18.16 has no ADD COLUMN
			// IF NOT EXISTS: a column already there is left).
			n, err := e.St.Strings(ctx, "SELECT count() FROM system.columns WHERE database = "+chsql.QuoteString(schemas.ChangesDB)+
				" AND table = "+chsql.QuoteString(changes.ChangesTable(schema, name))+" AND name = "+chsql.QuoteString(cs.Name))
			if err != nil {
				return nil, err
			}
			if len(n) == 1 && n[0] == "0" {
				if err := e.St.Exec(ctx, "ALTER TABLE "+chsql.Table(schemas.ChangesDB, changes.ChangesTable(schema, name))+" ADD COLUMN "+core.ColumnDDL(cs)); err != nil {
					return nil, fmt.Errorf("alter table %s: its change log: %w", core.Display(schema, name), err)
				}
			}
		}
		spec.Columns = append(spec.Columns, cs)
		spec.SchemaVersion++
	case "DROP_COLUMN":
		idx := -1
		for i, old := range spec.Columns {
			if strings.EqualFold(old.Name, s.ColumnName) {
				idx = i
			}
		}
		if idx < 0 {
			return nil, fmt.Errorf("table %s has no column %s", core.Display(schema, name), s.ColumnName)
		}
		if err := e.AlterColumns(ctx, schema, name, "DROP COLUMN "+chsql.QuoteIdent(spec.Columns[idx].Name)); err != nil {
			return nil, fmt.Errorf("alter table %s: %w", core.Display(schema, name), err)
		}
		spec.Columns = append(spec.Columns[:idx], spec.Columns[idx+1:]...)
		spec.SchemaVersion++
	default:
		return nil, fmt.Errorf("ALTER TABLE … %s: %w", s.Action, core.ErrNotSupportedYet)
	}
	if err := e.Cat.Put(ctx, catalog.KindTable, schema, name, spec, ""); err != nil {
		return nil, err
	}
	return core.Message("table %s altered", core.Display(schema, name)), nil
}

func (e *Engine) showTables(ctx context.Context, s *sqlast.ShowTables) (*core.Result, error) {
	res := &core.Result{Columns: []string{"schema_name", "table_name", "is_view", "is_materialized_view", "is_external", "is_dynamic"}}
	for _, k := range []catalog.Kind{catalog.KindTable, catalog.KindDynamicTable} {
		objs, err := e.Cat.List(ctx, k, e.Cfg.Schema)
		if err != nil {
			return nil, err
		}
		for _, o := range objs {
			if core.LikeMatch(s.Like, o.Name) {
				res.Rows = append(res.Rows, []any{o.Schema, o.Name, false, false, false, k == catalog.KindDynamicTable})
			}
		}
	}
	sort.Slice(res.Rows, func(i, j int) bool { return res.Rows[i][1].(string) < res.Rows[j][1].(string) })
	return res, nil
}

func (e *Engine) descTable(ctx context.Context, s *sqlast.DescTable) (*core.Result, error) {
	schema, name, spec, err := e.Table(ctx, s.Name)
	if err != nil {
		return nil, err
	}
	res := &core.Result{Columns: []string{"column_name", "data_type", "comment"}}
	for _, c := range spec.Columns {
		res.Rows = append(res.Rows, []any{c.Name, c.Type, c.Comment})
	}
	if !s.Extended {
		return res, nil
	}
	n, err := e.St.Strings(ctx, "SELECT count() FROM "+changes.Rows(schema, name, spec))
	if err != nil {
		return nil, err
	}
	res.Rows = append(res.Rows, []any{"", "", ""}, []any{"# detailed table information", "", ""},
		[]any{"schema", schema, ""}, []any{"name", name, ""}, []any{"comment", spec.Comment, ""},
		[]any{"created_time", spec.CreatedAt, ""}, []any{"rows", n[0], ""})
	if len(spec.PartitionBy) > 0 {
		res.Rows = append(res.Rows, []any{"partitioned_by", strings.Join(spec.PartitionBy, ", "), ""})
	}
	if spec.Keyed() {
		res.Rows = append(res.Rows, []any{"primary_key", strings.Join(spec.PrimaryKey, ", "), "one row per key, the latest write wins"})
	}
	keys := make([]string, 0, len(spec.Properties))
	for k := range spec.Properties {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		res.Rows = append(res.Rows, []any{"properties." + k, spec.Properties[k], ""})
	}
	return res, nil
}

func (e *Engine) insert(ctx context.Context, s *sqlast.Insert) (*core.Result, error) {
	schema, name, spec, err := e.Table(ctx, s.Table)
	if err != nil {
		return nil, err
	}
	cols, err := core.TargetColumns(core.Display(schema, name), spec, s.Columns)
	if err != nil {
		return nil, err
	}
	sess := e.Session(ctx)
	defer sess.Close()
	var body string
	if s.Query != nil {
		query.UniqueOutputNames(s.Query)
		if body, err = sess.Translate(s.Query); err != nil {
			return nil, err
		}
	} else {
		// VALUES become SELECTs with every value cast to its column's type:
		// the native protocol carries no inline VALUES data, and the casts
		// give every branch of the UNION ALL the same types.
		parts := make([]string, len(s.Values))
		for i, row := range s.Values {
			if len(row) != len(cols) {
				return nil, fmt.Errorf("INSERT INTO %s: row %d has %d values for %d columns", core.Display(schema, name), i+1, len(row), len(cols))
			}
			vals := make([]string, len(row))
			for j, v := range row {
				x, err := sess.Tr.Expr(v)
				if err != nil {
					return nil, err
				}
				if lit, ok := v.(*sqlast.Literal); ok && lit.Kind == sqlast.LitNumber {
					// Through text, so that 8999.00 reaches a DECIMAL exactly.
					x = chsql.QuoteString(lit.Value)
				}
				// Named by position: two equal values would otherwise be
				// one column of the subquery the commit id is added to.
				vals[j] = "CAST(" + x + " AS " + cols[j].CHType + ") AS " + chsql.QuoteIdent(fmt.Sprintf("__lp_v%d", j))
			}
			parts[i] = "SELECT " + strings.Join(vals, ", ")
		}
		body = strings.Join(parts, " UNION ALL ")
	}
	if s.Overwrite && s.Query != nil {
		// The query runs before the table is emptied: it may read the
		// table itself (INSERT OVERWRITE t SELECT DISTINCT * FROM t), and
		// one that fails leaves the table as it was.
		if body, err = sess.Stage(body); err != nil {
			return nil, fmt.Errorf("INSERT OVERWRITE %s: %w", core.Display(schema, name), err)
		}
	}
	if s.Overwrite && changes.Tracked(spec) {
		// The rows the overwrite replaces are a DELETE in the change log:
		// streams show them go, and dynamic tables take them back.
		if _, err := e.deleteWhere(ctx, sess, schema, name, spec, "1"); err != nil {
			return nil, fmt.Errorf("INSERT OVERWRITE %s: %w", core.Display(schema, name), err)
		}
	} else if s.Overwrite {
		if err := e.TruncateStoredTable(ctx, schema, name); err != nil {
			return nil, fmt.Errorf("INSERT OVERWRITE %s: %w", core.Display(schema, name), err)
		}
	}
	if spec.Keyed() && changes.Tracked(spec) {
		n, err := e.keyedInsert(ctx, sess, schema, name, spec, cols, body)
		if err != nil {
			return nil, fmt.Errorf("INSERT INTO %s: %w", core.Display(schema, name), err)
		}
		if err := sess.ConsumeStreams(); err != nil {
			return nil, fmt.Errorf("INSERT INTO %s: rows inserted, but %w", core.Display(schema, name), err)
		}
		return core.Message("%d rows inserted into %s (%d of them replaced the row of their key)", n.inserted+n.updated, core.Display(schema, name), n.updated), nil
	}
	// Every INSERT tags its rows with a commit id of its own: a
	// change-tracked table's change log finds them by it.
	commit := core.RandomCommit()
	if changes.Tracked(spec) {
		if err := e.OpenCommits(ctx, schema, name, []uint64{commit}); err != nil {
			return nil, err
		}
	}
	// Its rows are counted by its commit id, not as the table's count
	// before and after, which counted the rows of every other write that
	// ended in between (a pipe loading the same table) and registered them
	// as this INSERT's. A table without a key is ordered by commit id, so
	// the count reads only this commit's granules; a keyed one is counted
	// before and after (its replaced rows go at merges, not here).
	var before []string
	if spec.Keyed() {
		before, _ = e.St.Strings(ctx, "SELECT count() FROM "+chsql.Table(schema, name))
	}
	if err := e.St.Exec(ctx, "INSERT INTO "+chsql.Table(schema, name)+" ("+core.ColumnList(cols)+", "+chsql.QuoteIdent(core.CommitColumn)+") SELECT *, toUInt64("+strconv.FormatUint(commit, 10)+") FROM ("+body+")"); err != nil {
		return nil, fmt.Errorf("INSERT INTO %s: %w", core.Display(schema, name), err)
	}
	var n int64 = -1
	if !spec.Keyed() {
		if c, err := e.CommitRows(ctx, schema, name, commit); err == nil {
			n = c
		}
	} else if after, _ := e.St.Strings(ctx, "SELECT count() FROM "+chsql.Table(schema, name)); len(before) == 1 && len(after) == 1 {
		var b, a int64
		fmt.Sscan(before[0], &b)
		fmt.Sscan(after[0], &a)
		n = a - b
	}
	if changes.Tracked(spec) {
		if err := e.RegisterCommit(ctx, schema, name, commit, changes.CommitInsert, n); err != nil {
			return nil, err
		}
	}
	// The streams this statement read are consumed: their offsets move to
	// what it read, now that its write is done.
	if err := sess.ConsumeStreams(); err != nil {
		return nil, fmt.Errorf("INSERT INTO %s: rows inserted, but %w", core.Display(schema, name), err)
	}
	if n >= 0 {
		return core.Message("%d rows inserted into %s", n, core.Display(schema, name)), nil
	}
	return core.Message("rows inserted into %s", core.Display(schema, name)), nil
}

func (e *Engine) delete(ctx context.Context, s *sqlast.Delete) (*core.Result, error) {
	schema, name, spec, err := e.Table(ctx, s.Table)
	if err != nil {
		return nil, err
	}
	cond := "1"
	sess := e.Session(ctx)
	defer sess.Close()
	if s.Where != nil {
		if cond, err = sess.Tr.Expr(s.Where); err != nil {
			return nil, err
		}
	}
	return e.deleteWhere(ctx, sess, schema, name, spec, cond)
}

// emptyTracked deletes every row of a change-tracked table as a DELETE
// (COPY OVERWRITE; INSERT OVERWRITE does the same in insert).
func (e *Engine) emptyTracked(ctx context.Context, schema, name string, spec catalog.TableSpec) error {
	sess := e.Session(ctx)
	defer sess.Close()
	_, err := e.deleteWhere(ctx, sess, schema, name, spec, "1")
	return err
}

// deleteWhere removes the rows of schema.name for which cond holds; on a
// change-tracked table it records them in the change log as one DELETE
// commit.
func (e *Engine) deleteWhere(ctx context.Context, sess *query.Session, schema, name string, spec catalog.TableSpec, cond string) (_ *core.Result, err error) {
	if spec.Keyed() {
		return e.keyedDelete(ctx, sess, schema, name, spec, cond)
	}
	if !changes.Tracked(spec) {
		if err := e.DryRun(ctx, schema, name, cond, nil); err != nil {
			return nil, err
		}
		return e.Mutate(ctx, schema, name, "DELETE WHERE "+onlyTrue(cond))
	}
	// The rows go to the change log first; the commit is registered last,
	// so a statement that fails midway leaves no change behind. It is
	// opened first, under the process's writer lease, so that maintenance
	// finds it if the process dies: its mutation, once issued, removes
	// the rows whatever becomes of the process, and maintenance then
	// registers it (changes.SweepAbandoned).
	commit := core.RandomCommit()
	g, err := e.openDML(ctx, schema, name, commit)
	if err != nil {
		return nil, err
	}
	defer g.undo(ctx, &err)
	if err := e.SaveRemoved(ctx, schema, name, spec, changes.CommitDelete, commit, cond); err != nil {
		return nil, err
	}
	if cond, err = e.SavedCommits(ctx, schema, name, commit, cond); err != nil {
		return nil, err
	}
	res := core.Message("DELETE on %s done", core.Display(schema, name))
	if cond != "0" { // else no row matched
		// The commit named in the mutation (no row carries it: a no-op)
		// tells maintenance the mutation is this statement's.
		if res, err = e.MutateIssued(ctx, schema, name, fmt.Sprintf("DELETE WHERE %s AND %s != %d", onlyTrue(cond), chsql.QuoteIdent(core.CommitColumn), commit),
			g.issuedHook); err != nil {
			return nil, err
		}
	}
	rows, err := e.CommitRows(ctx, schemas.ChangesDB, changes.ChangesTable(schema, name), commit)
	if err != nil {
		return nil, err
	}
	if err := e.RegisterCommits(ctx, schema, name, []changes.Commit{{ID: commit, Kind: changes.CommitDelete, Rows: rows, Opened: true}}); err != nil {
		return nil, err
	}
	return res, nil
}

func (e *Engine) update(ctx context.Context, s *sqlast.Update) (_ *core.Result, err error) {
	schema, name, spec, err := e.Table(ctx, s.Table)
	if err != nil {
		return nil, err
	}
	sess := e.Session(ctx)
	defer sess.Close()
	sets := make([]string, len(s.Set))
	setOf := map[string]string{} // column → new value, for change-tracked tables
	for i, a := range s.Set {
		cols, err := core.TargetColumns(core.Display(schema, name), spec, []string{a.Column})
		if err != nil {
			return nil, err
		}
		v, err := sess.Tr.Expr(a.Value)
		if err != nil {
			return nil, err
		}
		// materialize: a constant Nullable value makes the mutation fail
		// for ever on ClickHouse 18.16 ("Illegal columns Const(Nullable(String))
		// and String … of function if"), and mutate would wait for ever.
		sets[i] = chsql.QuoteIdent(cols[0].Name) + " = materialize(CAST(" + v + " AS " + cols[0].CHType + "))"
		setOf[cols[0].Name] = "CAST(" + v + " AS " + cols[0].CHType + ")"
	}
	cond := "1"
	if s.Where != nil {
		if cond, err = sess.Tr.Expr(s.Where); err != nil {
			return nil, err
		}
	}
	if spec.Keyed() {
		return e.keyedUpdate(ctx, sess, schema, name, spec, setOf, cond)
	}
	if !changes.Tracked(spec) {
		vals := make([]string, 0, len(setOf))
		for _, v := range setOf {
			vals = append(vals, v)
		}
		if err := e.DryRun(ctx, schema, name, cond, vals); err != nil {
			return nil, err
		}
		return e.Mutate(ctx, schema, name, "UPDATE "+strings.Join(sets, ", ")+" WHERE "+onlyTrue(cond))
	}
	// On a change-tracked table an UPDATE writes the new rows under a
	// commit of its own and removes the old ones (kept in the change log as
	// UPDATE_BEFORE): the change log sees both sides.
	commit := core.RandomCommit()
	if err := e.SaveRemoved(ctx, schema, name, spec, "UPDATE_BEFORE", commit, cond); err != nil {
		return nil, err
	}
	if cond, err = e.SavedCommits(ctx, schema, name, commit, cond); err != nil {
		return nil, err
	}
	exprs := make([]string, len(spec.Columns))
	for i, c := range spec.Columns {
		if v, ok := setOf[c.Name]; ok {
			exprs[i] = v
		} else {
			exprs[i] = chsql.QuoteIdent(c.Name)
		}
	}
	commitCol := chsql.QuoteIdent(core.CommitColumn)
	g, err := e.openDML(ctx, schema, name, commit)
	if err != nil {
		return nil, err
	}
	defer g.undo(ctx, &err)
	if err := e.St.Exec(ctx, "INSERT INTO "+chsql.Table(schema, name)+" ("+core.ColumnList(spec.Columns)+", "+commitCol+") SELECT "+
		strings.Join(exprs, ", ")+", toUInt64("+strconv.FormatUint(commit, 10)+") FROM "+chsql.Table(schema, name)+" WHERE "+cond); err != nil {
		return nil, fmt.Errorf("UPDATE %s: %w", core.Display(schema, name), err)
	}
	res := core.Message("UPDATE on %s done", core.Display(schema, name))
	if cond != "0" { // else no row matched
		// Once ClickHouse has the mutation, the old rows go whatever
		// becomes of this process: the commit is recorded as issued, and
		// registered by maintenance if the process dies before it does.
		if _, err = e.MutateIssued(ctx, schema, name, fmt.Sprintf("DELETE WHERE %s AND %s != %d", onlyTrue(cond), commitCol, commit),
			g.issuedHook); err != nil {
			return nil, err
		}
	}
	rows, err := e.CommitRows(ctx, schema, name, commit)
	if err != nil {
		return nil, err
	}
	if err := e.RegisterCommit(ctx, schema, name, commit, changes.CommitUpdate, rows); err != nil {
		return nil, err
	}
	return res, nil
}

// onlyTrue makes a condition of a mutation hold only where it is TRUE, as
// SQL's WHERE does. ClickHouse 18.16 runs DELETE WHERE c as a filter NOT c,
// so a row where c is NULL (region = 'us' on a NULL region) was deleted
// too, without the change log seeing it go; ifNull is a no-op on newer
// releases, which keep such rows.
func onlyTrue(cond string) string { return "ifNull((" + cond + "), 0)" }

// checkTableProps refuses property names a table does not have.
func checkTableProps(table string, props map[string]string) error {
	for k := range props {
		if !tableProperties[k] {
			return fmt.Errorf("table %s: unknown property %q (known: change_tracking, data_retention_days, data_lifecycle, comment)", table, k)
		}
	}
	return nil
}

// cleanupContext is the context of what a failed statement undoes on its
// way out: it outlives the statement's cancellation (Ctrl-C), not a
// minute, so that a ClickHouse that does not answer cannot hold the
// process; what is not done by then is left to maintenance.
func cleanupContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
}

// dmlCommit is the commit of a DELETE or UPDATE of a tracked table. It
// is opened under the process's writer lease, so that maintenance finds
// it if the process dies, and taken back at once if the statement fails
// before ClickHouse accepted its mutation; once accepted, the mutation
// changes the rows whatever becomes of the statement, and the commit
// stays for maintenance to register (changes.SweepAbandoned).
type dmlCommit struct {
	e            *Engine
	schema, name string
	id           uint64
	issued       bool
}

// openDML opens commit for a DELETE or UPDATE of schema.name.
func (e *Engine) openDML(ctx context.Context, schema, name string, commit uint64) (*dmlCommit, error) {
	if err := e.OpenCommits(ctx, schema, name, []uint64{commit}); err != nil {
		return nil, err
	}
	return &dmlCommit{e: e, schema: schema, name: name, id: commit}, nil
}

// issuedHook is MutateIssued's hook: it records that the mutation was
// accepted (changes.Log.MutationIssued).
func (g *dmlCommit) issuedHook(ctx context.Context) error {
	g.issued = true
	return g.e.MutationIssued(ctx, g.schema, g.name, g.id)
}

// undo, deferred with the statement's error, takes the commit back when
// the statement failed before its mutation was accepted: its rows (an
// UPDATE's new rows, which showed beside the old ones) are removed, then
// its mark closed. What fails here is left to maintenance: the mark names
// the process's lease.
func (g *dmlCommit) undo(ctx context.Context, err *error) {
	if *err == nil || g.issued {
		return
	}
	ctx, cancel := cleanupContext(ctx)
	defer cancel()
	t := core.LoadTarget{DB: g.schema, Table: g.name, Display: core.Display(g.schema, g.name), Tracked: true}
	if g.e.DropCommits(ctx, t, []uint64{g.id}) == nil {
		_ = g.e.CloseAbandoned(ctx, t, []uint64{g.id})
	}
}
