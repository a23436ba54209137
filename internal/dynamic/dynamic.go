package dynamic

import (
	"context"
	"fmt"
	"maps"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/lakepipe/lakepipe/internal/sqlast"

	"github.com/lakepipe/lakepipe/internal/catalog"
	"github.com/lakepipe/lakepipe/internal/changes"
	"github.com/lakepipe/lakepipe/internal/chsql"
	"github.com/lakepipe/lakepipe/internal/core"
	"github.com/lakepipe/lakepipe/internal/jobs"
	"github.com/lakepipe/lakepipe/internal/query"
	"github.com/lakepipe/lakepipe/internal/sqlparse"
	"github.com/lakepipe/lakepipe/schemas"
)

var intervalSeconds = map[string]int{"SECOND": 1, "MINUTE": 60, "HOUR": 3600, "DAY": 86400}

func (e *Refresher) dynamicSpec(ctx context.Context, n sqlast.ObjectName) (string, string, catalog.DynamicTableSpec, error) {
	var spec catalog.DynamicTableSpec
	schema, name, err := e.Qualify(n)
	if err != nil {
		return "", "", spec, err
	}
	ok, err := e.Cat.Get(ctx, catalog.KindDynamicTable, schema, name, &spec)
	if err != nil {
		return schema, name, spec, err
	}
	if !ok {
		return schema, name, spec, fmt.Errorf("dynamic table %s does not exist (SHOW DYNAMIC TABLES lists them)", core.Display(schema, name))
	}
	return schema, name, spec, nil
}

// sourceTables lists the tables a query reads, qualified. The name of a
// WITH query is not a table where it is in scope (in the query's body and
// the WITH queries after it); the tables the WITH query reads are listed.
func (e *Refresher) sourceTables(q *sqlast.Query) []string {
	seen := map[string]bool{}
	var out []string
	var visit func(node any, ctes map[string]bool)
	visit = func(node any, ctes map[string]bool) {
		sqlast.Inspect(node, func(n any) bool {
			switch n := n.(type) {
			case *sqlast.Query:
				if len(n.With) == 0 {
					return true
				}
				inner := maps.Clone(ctes)
				for _, c := range n.With {
					visit(c.Query, inner)
					inner[c.Name] = true
				}
				rest := *n
				rest.With = nil
				visit(&rest, inner)
				return false
			case *sqlast.TableName:
				if len(n.Name.Parts) == 1 && ctes[n.Name.Parts[0]] {
					return true
				}
				schema, name, err := e.Qualify(n.Name)
				if err == nil && !seen[core.Display(schema, name)] {
					seen[core.Display(schema, name)] = true
					out = append(out, core.Display(schema, name))
				}
			}
			return true
		})
	}
	visit(q, map[string]bool{})
	sort.Strings(out)
	return out
}

func (e *Refresher) CreateDynamicTable(ctx context.Context, s *sqlast.CreateDynamicTable) (*core.Result, error) {
	orch, err := e.Orchestrator()
	if err != nil {
		return nil, err
	}
	schema, name, err := e.Qualify(s.Name)
	if err != nil {
		return nil, err
	}
	var existing catalog.DynamicTableSpec
	ok, err := e.Cat.Get(ctx, catalog.KindDynamicTable, schema, name, &existing)
	if err != nil {
		return nil, err
	}
	if ok && !s.OrReplace {
		if s.IfNotExists {
			return core.Message("dynamic table %s already exists", core.Display(schema, name)), nil
		}
		return nil, fmt.Errorf("dynamic table %s already exists (use CREATE OR REPLACE, or DROP DYNAMIC TABLE first)", core.Display(schema, name))
	}
	var plain catalog.TableSpec
	if ok, err := e.Cat.Get(ctx, catalog.KindTable, schema, name, &plain); err != nil {
		return nil, err
	} else if ok {
		return nil, fmt.Errorf("%s is a table; a dynamic table needs a name of its own", core.Display(schema, name))
	}
	unit, ok := intervalSeconds[strings.TrimSuffix(strings.ToUpper(s.IntervalUnit), "S")]
	if s.IntervalN <= 0 || !ok {
		return nil, fmt.Errorf("dynamic table %s: REFRESH INTERVAL n SECOND|MINUTE|HOUR|DAY is required", core.Display(schema, name))
	}
	sess := e.Session(ctx)
	defer sess.Close()
	if _, err := sess.Translate(s.Query); err != nil {
		return nil, fmt.Errorf("dynamic table %s: %w", core.Display(schema, name), err)
	}
	spec := catalog.DynamicTableSpec{
		Query: sqlast.FormatQuery(s.Query), IntervalSeconds: s.IntervalN * unit,
		Interval: fmt.Sprintf("%d %s", s.IntervalN, strings.TrimSuffix(strings.ToUpper(s.IntervalUnit), "S")),
		VCluster: s.VCluster, Sources: e.sourceTables(s.Query), CreatedAt: time.Now().UTC(),
	}
	if s.Comment != nil {
		spec.Comment = *s.Comment
	}
	if err := e.Cat.Put(ctx, catalog.KindDynamicTable, schema, name, spec, ""); err != nil {
		return nil, err
	}
	// The first contents: readers can use the table at once.
	if res, err := e.WithSchema(schema).RefreshDynamicTable(ctx, name, "CREATE"); err != nil {
		_ = e.Cat.Delete(ctx, catalog.KindDynamicTable, schema, name)
		return nil, err
	} else if res.State != jobs.RefreshSucceeded {
		_ = e.Cat.Delete(ctx, catalog.KindDynamicTable, schema, name)
		return nil, fmt.Errorf("dynamic table %s: %s", core.Display(schema, name), res.Error)
	}
	id := e.WithSchema(schema).DynamicTableWorkflowID(name)
	in := jobs.DynamicTableInput{Params: jobs.DynamicTableParams{Workspace: e.Cfg.Workspace, Schema: schema, Name: name, IntervalSeconds: spec.IntervalSeconds}}
	vis := &jobs.Visibility{Kind: jobs.VisibleDynamicTable, Workspace: e.Cfg.Workspace, Schema: schema, Table: schema + "." + name, Statement: core.Redact(s)}
	if err := orch.Start(ctx, id, jobs.DynamicTableWorkflowName, in, vis); err != nil {
		return nil, fmt.Errorf("dynamic table %s: start its workflow: %w", core.Display(schema, name), err)
	}
	return core.Message("dynamic table %s created; it refreshes every %s as Temporal workflow %s", core.Display(schema, name), strings.ToLower(spec.Interval), id), nil
}

// RefreshDynamicTable recomputes a dynamic table and swaps the new
// contents in at once: readers see the old rows or the new, never a half
// refresh, and a failed refresh leaves the old rows. The outcome is
// recorded in the refresh history. It is the refresh activity's body too.
// Refreshes of one table must not overlap (the table's workflow runs them
// one at a time).
func (e *Refresher) RefreshDynamicTable(ctx context.Context, name, trigger string) (jobs.RefreshResult, error) {
	if res, ok, err := e.refreshCached(ctx, name, trigger); ok {
		return res, err
	}
	return e.refreshFresh(ctx, name, trigger, false)
}

// RefreshDynamicTableFull recomputes a dynamic table from all of its
// source, even where an incremental refresh would do (state included).
func (e *Refresher) RefreshDynamicTableFull(ctx context.Context, name, trigger string) (jobs.RefreshResult, error) {
	return e.refreshFresh(ctx, name, trigger, true)
}

// refreshCached is an incremental refresh by the plan this process made of
// the table at an earlier refresh: one INSERT, which checks in ClickHouse
// that the dynamic table's and its source's specs are still those the plan
// was made from, then the history. ok is false when there is no such plan
// or the INSERT did not run (a spec changed, or the refresh must be FULL):
// refreshFresh then reads everything afresh and decides.
func (e *Refresher) refreshCached(ctx context.Context, name, trigger string) (_ jobs.RefreshResult, ok bool, _ error) {
	schema := e.Cfg.Schema
	start := time.Now().UTC()
	var spec catalog.DynamicTableSpec
	v, found, err := e.Cat.GetCached(ctx, catalog.KindDynamicTable, schema, name, &spec)
	if err != nil || !found || spec.ChangeVersion == 0 {
		return jobs.RefreshResult{}, false, nil
	}
	p := e.Plans.get(schema, name, v)
	if p == nil {
		return jobs.RefreshResult{}, false, nil
	}
	hi := changes.ChangeReadHorizon()
	checks := append([]string{catalog.VersionCheck(catalog.KindDynamicTable, schema, name, v)}, p.versionChecks()...)
	done, err := e.incrementalDelta(ctx, schema, name, p, hi, checks)
	if err != nil {
		e.Cat.Forget(catalog.KindDynamicTable, schema, name)
		for _, src := range p.read() {
			e.Cat.Forget(catalog.KindTable, src.schema, src.table)
		}
		return jobs.RefreshResult{}, false, nil
	}
	res := jobs.RefreshResult{State: jobs.RefreshSucceeded, Mode: jobs.RefreshIncremental}
	return res, true, e.recordRefresh(ctx, refreshRecord{schema: schema, name: name, trigger: trigger, start: start, result: res, reason: p.deltaReason(done),
		idle: noNewRows, sources: spec.Sources, rows: done.rows(p, chsql.Table(schemas.ChangesDB, stateTable(schema, name)), hi), deleted: done.deleted})
}

// refreshFresh refreshes from the catalog as it is now: incrementally when
// it can (forceFull: it rebuilds even so), and records the refresh.
func (e *Refresher) refreshFresh(ctx context.Context, name, trigger string, forceFull bool) (jobs.RefreshResult, error) {
	schema := e.Cfg.Schema
	start := time.Now().UTC()
	var spec catalog.DynamicTableSpec
	e.Cat.Forget(catalog.KindDynamicTable, schema, name)
	version, ok, err := e.Cat.GetCached(ctx, catalog.KindDynamicTable, schema, name, &spec)
	switch {
	case err != nil:
		return jobs.RefreshResult{}, err
	case !ok:
		return jobs.RefreshResult{}, fmt.Errorf("%s: %w", core.Display(schema, name), core.ErrDynamicTableGone)
	}
	var (
		rows      = "0"
		deleted   int64
		mode      jobs.RefreshMode
		reason    string
		state     = chsql.Table(schemas.ChangesDB, stateTable(schema, name))
		plan, why = e.incrementalPlan(ctx, spec)
	)
	if plan != nil {
		e.Plans.put(schema, name, version, plan)
		rows, deleted, mode, reason, err = e.refreshIncremental(ctx, schema, name, spec, plan, forceFull)
		if of := plan.stateOf(); err == nil && (spec.ChangeVersion == 0 || spec.StateOf != of) {
			// The state is built: refreshes from now on can be incremental.
			spec.ChangeVersion, spec.StateOf = changes.ChangeReadHorizon(), of
			err = e.Cat.Put(ctx, catalog.KindDynamicTable, schema, name, spec, "")
		}
	} else {
		mode, reason = jobs.RefreshFull, why
		var n int64
		n, deleted, err = e.fullRefresh(ctx, schema, name, spec)
		rows = strconv.FormatInt(n, 10)
		if err == nil {
			// Not incremental (any more: its source stopped tracking
			// changes, or CREATE OR REPLACE changed the query): a state
			// would miss changes from now on, so it goes, and an
			// incremental refresh later starts by building it.
			_ = e.St.Exec(ctx, "DROP TABLE IF EXISTS "+state)
			if spec.ChangeVersion != 0 {
				spec.ChangeVersion = 0
				err = e.Cat.Put(ctx, catalog.KindDynamicTable, schema, name, spec, "")
			}
		}
	}
	res := jobs.RefreshResult{Mode: mode}
	if err != nil {
		res.State, res.Error, rows, deleted = jobs.RefreshFailed, err.Error(), "0", 0
	} else {
		res.State = jobs.RefreshSucceeded
		res.Rows, _ = strconv.ParseInt(rows, 10, 64)
	}
	idle := ""
	if mode == jobs.RefreshIncremental {
		idle = noNewRows
	}
	return res, e.recordRefresh(ctx, refreshRecord{schema: schema, name: name, trigger: trigger, start: start, result: res, reason: reason,
		idle: idle, sources: spec.Sources, rows: rows, deleted: deleted})
}

// noNewRows is the history's reason for an incremental refresh that had
// nothing to add.
const noNewRows = "no new rows since the last refresh"

// refreshRecord is a row of the refresh history.
type refreshRecord struct {
	schema, name, trigger string
	start                 time.Time
	result                jobs.RefreshResult
	reason                string
	sources               []string
	rows                  string // SQL counting the rows written: a number or a subquery
	deleted               int64
	idle                  string // the reason when no row was written nor deleted, if another than reason
}

// recordRefresh adds a refresh to the history, as one native block (~0.7 ms
// less than an INSERT … SELECT of literals on ClickHouse 18.16). The rows
// written are a number (a summary's are counted beside its INSERT) or SQL
// counting them (an append plan's), run first.
func (e *Refresher) recordRefresh(ctx context.Context, r refreshRecord) error {
	n, err := strconv.ParseUint(r.rows, 10, 64)
	if err != nil {
		var v []string
		if v, err = e.St.Strings(ctx, "SELECT toString(toUInt64("+r.rows+"))"); err == nil && len(v) == 1 {
			n, err = strconv.ParseUint(v[0], 10, 64)
		} else if err == nil {
			err = fmt.Errorf("counting the rows written gave %d rows", len(v))
		}
		if err != nil {
			return fmt.Errorf("record refresh of %s: %w", core.Display(r.schema, r.name), err)
		}
	}
	end := time.Now().UTC()
	reason := r.reason
	if r.idle != "" && r.deleted == 0 && n == 0 {
		reason = r.idle // nothing written and nothing taken back
	}
	cols := []string{"schema", "name", "refresh_id", "trigger", "state", "refresh_mode", "mode_reason", "start_time", "end_time", "duration_ms", "source_tables", "rows_inserted", "rows_deleted", "error_message"}
	if err := e.St.InsertRows(ctx, "lakepipe", "refresh_history", cols, [][]any{{r.schema, r.name, refreshID(r.start), r.trigger,
		string(r.result.State), string(r.result.Mode), reason, r.start.Truncate(time.Second), end.Truncate(time.Second), uint64(end.Sub(r.start).Milliseconds()),
		strings.Join(r.sources, ","), n, uint64(r.deleted), r.result.Error}}); err != nil {
		return fmt.Errorf("record refresh of %s: %w", core.Display(r.schema, r.name), err)
	}
	return nil
}

// refreshID names a refresh; its first 16 hex digits are its start in
// nanoseconds, so that it orders refreshes that started within a second
// (start_time has whole seconds).
func refreshID(start time.Time) string {
	return fmt.Sprintf("%016x", start.UnixNano()) + core.NewLoadID()[:4]
}

// incrementalPlan is the plan of an incrementally refreshable dynamic
// table, or nil and why its refreshes are FULL.
func (e *Refresher) incrementalPlan(ctx context.Context, spec catalog.DynamicTableSpec) (*incPlan, string) {
	q, err := sqlparse.ParseQuery(spec.Query)
	if err != nil {
		return nil, err.Error()
	}
	// A plan has checked its one source's tracking already; without one,
	// a source that does not track changes is the reason users can fix.
	plan, why := e.planIncremental(ctx, q)
	if plan != nil {
		return plan, ""
	}
	for _, src := range spec.Sources {
		var t catalog.TableSpec
		parts := strings.SplitN(src, ".", 2)
		if ok, _ := e.Cat.Get(ctx, catalog.KindTable, parts[0], parts[1], &t); ok && !changes.Tracked(t) {
			return nil, "source " + src + " does not track changes (ALTER TABLE " + parts[1] + " SET PROPERTIES ('change_tracking' = 'true'))"
		}
	}
	return nil, why
}

// refreshModeOf says which mode the next refresh will use and why.
func (e *Refresher) refreshModeOf(ctx context.Context, spec catalog.DynamicTableSpec) (jobs.RefreshMode, string) {
	plan, why := e.incrementalPlan(ctx, spec)
	switch {
	case plan == nil:
		return jobs.RefreshFull, why
	case spec.ChangeVersion == 0:
		return jobs.RefreshFull, "first refresh: the state of the dynamic table is built"
	case spec.StateOf != plan.stateOf():
		return jobs.RefreshFull, plan.rebuildReason(spec.StateOf)
	}
	return jobs.RefreshIncremental, plan.viaNote() + plan.modeReason()
}

// modeReason says how an incremental plan refreshes, for DESC.
func (p *incPlan) modeReason() string {
	switch {
	case p.appendRows:
		return "rows of change-tracked tables (projected, filtered, joined with dimension tables, UNION ALL): the rows new source rows give are added; the rows of source rows deleted or updated are taken back, row by row; a change of a joined table takes back and writes again the rows of the source rows that join its changed rows"
	case p.retract:
		return "a GROUP BY summary of a change-tracked table: new rows are aggregated and merged into the groups they touch; rows deleted or updated are taken back from theirs (COUNT, SUM and AVG subtract them)"
	}
	return "a GROUP BY summary of a change-tracked table: new rows are aggregated and merged into the groups they touch; after a DELETE or UPDATE of its rows, the groups they were in are recomputed (" + p.unsigned() + " cannot take rows back)"
}

func (e *Refresher) fullRefresh(ctx context.Context, schema, name string, spec catalog.DynamicTableSpec) (rows, deleted int64, err error) {
	q, err := sqlparse.ParseQuery(spec.Query)
	if err != nil {
		return 0, 0, err
	}
	sess := e.WithSchema(schema).Session(ctx)
	defer sess.Close()
	text, err := sess.Translate(q)
	if err != nil {
		return 0, 0, err
	}
	if err := e.St.Exec(ctx, "CREATE DATABASE IF NOT EXISTS "+chsql.QuoteIdent(schema)); err != nil {
		return 0, 0, err
	}
	return e.swapIn(ctx, schema, name, text)
}

func (e *Refresher) RefreshDynamic(ctx context.Context, s *sqlast.RefreshDynamicTable) (*core.Result, error) {
	schema, name, spec, err := e.dynamicSpec(ctx, s.Name)
	if err != nil {
		return nil, err
	}
	orch, err := e.Orchestrator()
	if err != nil {
		return nil, err
	}
	// Writes made before this statement count: wait until the change log
	// lets readers take them (at most its 2 s fence, only after a recent
	// write to a source).
	if err := e.AwaitFence(ctx, spec.Sources); err != nil {
		return nil, fmt.Errorf("refresh of dynamic table %s: %w", core.Display(schema, name), err)
	}
	// The table's workflow runs the refresh, one at a time with its other
	// refreshes, after asking the workflows of its upstream dynamic
	// tables for theirs; the interval counts from it, as the ClickZetta
	// Lakehouse documentation says.
	var out jobs.RefreshChainResult
	if err := orch.RefreshDynamicTable(ctx, e.WithSchema(schema).DynamicTableWorkflowID(name), &out); err != nil {
		return nil, fmt.Errorf("refresh of dynamic table %s failed (its previous contents stay): %w", core.Display(schema, name), err)
	}
	n := len(out.Refreshes)
	if n == 0 || out.Refreshes[n-1].Name != name {
		return nil, fmt.Errorf("refresh of dynamic table %s did not run", core.Display(schema, name))
	}
	res := out.Refreshes[n-1].Result
	if res.State != jobs.RefreshSucceeded {
		return nil, fmt.Errorf("refresh of dynamic table %s failed (its previous contents stay): %s", core.Display(schema, name), res.Error)
	}
	msg := fmt.Sprintf("dynamic table %s refreshed (%s): %d rows", core.Display(schema, name), res.Mode, res.Rows)
	if res.Mode == jobs.RefreshIncremental {
		// The history counts the groups it wrote.
		msg = fmt.Sprintf("dynamic table %s refreshed (INCREMENTAL): the new rows were merged into the groups they touch", core.Display(schema, name))
	}
	if n > 1 {
		up := make([]string, n-1)
		for i, st := range out.Refreshes[:n-1] {
			up[i] = st.Name
		}
		msg += " after its upstream " + strings.Join(up, ", ")
	}
	return core.Message("%s", msg), nil
}

// WaitRefresh waits for the refresh of a dynamic table running under the
// workflow id and returns its result.
func (e *Refresher) WaitRefresh(ctx context.Context, id string) (jobs.RefreshChainResult, error) {
	var out jobs.RefreshChainResult
	orch, err := e.Orchestrator()
	if err != nil {
		return out, err
	}
	return out, orch.Wait(ctx, id, &out)
}

// PlanRefresh lists the upstream dynamic tables of a dynamic table, every
// one after those it reads; the table itself is not in the list.
func (e *Refresher) PlanRefresh(ctx context.Context, name string) ([]jobs.DynamicTableParams, error) {
	var order []jobs.DynamicTableParams
	state := map[string]int{} // 1 visiting, 2 done
	var visit func(schema, name string, root bool) error
	visit = func(schema, name string, root bool) error {
		key := core.Display(schema, name)
		switch state[key] {
		case 1:
			return fmt.Errorf("dynamic table %s depends on itself through its sources", key)
		case 2:
			return nil
		}
		var spec catalog.DynamicTableSpec
		ok, err := e.Cat.Get(ctx, catalog.KindDynamicTable, schema, name, &spec)
		if err != nil {
			return err
		}
		if !ok {
			if root {
				return fmt.Errorf("%s: %w", key, core.ErrDynamicTableGone)
			}
			return nil // a plain table
		}
		state[key] = 1
		for _, src := range spec.Sources {
			if parts := strings.SplitN(src, ".", 2); len(parts) == 2 {
				if err := visit(parts[0], parts[1], false); err != nil {
					return err
				}
			}
		}
		state[key] = 2
		if !root {
			order = append(order, jobs.DynamicTableParams{Workspace: e.Cfg.Workspace, Schema: schema, Name: name, IntervalSeconds: spec.IntervalSeconds})
		}
		return nil
	}
	if err := visit(e.Cfg.Schema, name, true); err != nil {
		return nil, err
	}
	return order, nil
}

func (e *Refresher) ShowRefreshHistory(ctx context.Context, s *sqlast.ShowRefreshHistory) (*core.Result, error) {
	where := "schema = " + chsql.QuoteString(e.Cfg.Schema)
	// A dynamic table's history starts at its creation: a table of the
	// same name dropped or replaced before it keeps its rows (they show
	// while no table has the name), but they are not this table's. A
	// refresh id starts with its start in nanoseconds (see refreshID).
	objs, err := e.Cat.List(ctx, catalog.KindDynamicTable, e.Cfg.Schema)
	if err != nil {
		return nil, err
	}
	var names, since []string
	for _, o := range objs {
		var spec catalog.DynamicTableSpec
		if o.Decode(&spec) == nil && !spec.CreatedAt.IsZero() {
			names = append(names, chsql.QuoteString(o.Name))
			since = append(since, chsql.QuoteString(refreshID(spec.CreatedAt)[:16]))
		}
	}
	if len(names) > 0 {
		where += " AND refresh_id >= transform(name, [" + strings.Join(names, ", ") + "], [" + strings.Join(since, ", ") + "], '')"
	}
	if s.Where != nil {
		tr := &chsql.Translator{}
		cond, err := tr.Expr(s.Where)
		if err != nil {
			return nil, err
		}
		where += " AND (" + cond + ")"
	}
	limit := ""
	if s.Limit != nil {
		limit = fmt.Sprintf(" LIMIT %d", *s.Limit)
	}
	r, err := e.St.Query(ctx, "SELECT name, state, refresh_mode, mode_reason, trigger, start_time, end_time, duration_ms / 1000 AS duration, "+
		"source_tables, rows_inserted, rows_deleted, error_message FROM lakepipe.refresh_history WHERE "+where+" ORDER BY start_time DESC, refresh_id DESC"+limit)
	if err != nil {
		return nil, fmt.Errorf("SHOW DYNAMIC TABLE REFRESH HISTORY: %w (columns: name, state, refresh_mode, start_time, end_time, duration, source_tables, rows_inserted, rows_deleted, error_message)", err)
	}
	return &core.Result{Columns: r.Columns, Types: r.Types, Rows: r.Rows}, nil
}

func (e *Refresher) ShowDynamicTables(ctx context.Context, s *sqlast.ShowDynamicTables) (*core.Result, error) {
	objs, err := e.Cat.List(ctx, catalog.KindDynamicTable, e.Cfg.Schema)
	if err != nil {
		return nil, err
	}
	res := &core.Result{Columns: []string{"schema_name", "name", "refresh_interval", "state", "last_refresh_time", "comment", "query"}}
	vis := e.Visible(ctx, jobs.VisibleDynamicTable)
	for _, o := range objs {
		if !core.LikeMatch(s.Like, o.Name) {
			continue
		}
		var spec catalog.DynamicTableSpec
		if err := o.Decode(&spec); err != nil {
			return nil, err
		}
		var state string
		var last any
		if l, ok := vis.Get(ctx, e.DynamicTableWorkflowID(o.Name)); ok {
			// From visibility: no worker needed.
			state = string(l.Status)
			if l.Status == jobs.StatusRunning {
				state = "ACTIVE"
			}
			if l.Refreshed != nil && !l.Refreshed.LastRefresh.IsZero() {
				last = l.Refreshed.LastRefresh
			}
		} else {
			var st *jobs.DynamicTableStatus
			st, state = e.dynamicStatus(ctx, o.Name)
			if st != nil && !st.Counters.LastRefresh.IsZero() {
				last = st.Counters.LastRefresh
			}
		}
		res.Rows = append(res.Rows, []any{o.Schema, o.Name, spec.Interval, state, last, spec.Comment, spec.Query})
	}
	return res, nil
}

func (e *Refresher) dynamicStatus(ctx context.Context, name string) (*jobs.DynamicTableStatus, string) {
	orch, err := e.Orchestrator()
	if err != nil {
		return nil, "UNKNOWN"
	}
	var st jobs.DynamicTableStatus
	state, err := orch.Query(ctx, e.DynamicTableWorkflowID(name), jobs.QueryStatus, &st)
	switch {
	case err != nil:
		return nil, "UNKNOWN"
	case state != "RUNNING":
		return nil, "FAILED"
	case st.Suspended:
		return &st, "SUSPENDED"
	}
	return &st, "ACTIVE"
}

func (e *Refresher) DescDynamicTable(ctx context.Context, s *sqlast.DescDynamicTable) (*core.Result, error) {
	schema, name, spec, err := e.dynamicSpec(ctx, s.Name)
	if err != nil {
		return nil, err
	}
	eng := e.WithSchema(schema)
	st, state := eng.dynamicStatus(ctx, name)
	mode, why := eng.refreshModeOf(ctx, spec)
	kv := [][2]any{{"name", name}, {"schema", schema}, {"state", state}, {"refresh_interval", spec.Interval},
		{"refresh_mode", mode}, {"refresh_mode_reason", why}, {"source_tables", strings.Join(spec.Sources, ", ")},
		{"query", spec.Query}, {"vcluster", spec.VCluster}, {"comment", spec.Comment}, {"created_time", spec.CreatedAt},
		{"workflow_id", eng.DynamicTableWorkflowID(name)}}
	if st != nil {
		var last any
		if !st.Counters.LastRefresh.IsZero() {
			last = st.Counters.LastRefresh
		}
		kv = append(kv, [2]any{"last_refresh_time", last}, [2]any{"next_refresh_time", st.NextAt}, [2]any{"refreshes", st.Counters.Refreshes},
			[2]any{"failures", st.Counters.Failures}, [2]any{"last_error", st.Counters.LastError})
	}
	return core.PropertyRows(kv), nil
}

func (e *Refresher) DropDynamicTable(ctx context.Context, s *sqlast.DropDynamicTable) (*core.Result, error) {
	schema, name, _, err := e.dynamicSpec(ctx, s.Name)
	if err != nil {
		if s.IfExists && schema != "" {
			return core.Message("dynamic table %s does not exist", core.Display(schema, name)), nil
		}
		return nil, err
	}
	if err := e.Cat.Delete(ctx, catalog.KindDynamicTable, schema, name); err != nil {
		return nil, err
	}
	if orch, err := e.Orchestrator(); err == nil {
		_ = orch.Stop(ctx, e.WithSchema(schema).DynamicTableWorkflowID(name))
	}
	_ = e.St.Exec(ctx, "DROP TABLE IF EXISTS "+chsql.Table(schemas.ChangesDB, stateTable(schema, name)))
	if err := e.St.Exec(ctx, "DROP TABLE IF EXISTS "+chsql.Table(schema, name)); err != nil {
		return nil, err
	}
	return core.Message("dynamic table %s dropped", core.Display(schema, name)), nil
}

func (e *Refresher) AlterDynamicTable(ctx context.Context, s *sqlast.AlterDynamicTable) (*core.Result, error) {
	schema, name, _, err := e.dynamicSpec(ctx, s.Name)
	if err != nil {
		return nil, err
	}
	orch, err := e.Orchestrator()
	if err != nil {
		return nil, err
	}
	upd := map[string]string{"SUSPEND": jobs.UpdateSuspend, "RESUME": jobs.UpdateResume}[strings.ToUpper(s.Action)]
	if upd == "" {
		return nil, fmt.Errorf("ALTER DYNAMIC TABLE … %s: expected SUSPEND or RESUME", s.Action)
	}
	var r jobs.ControlReply
	if err := orch.Update(ctx, e.WithSchema(schema).DynamicTableWorkflowID(name), upd, nil, &r); err != nil {
		return nil, fmt.Errorf("dynamic table %s: %w", core.Display(schema, name), err)
	}
	return core.ControlMessage("dynamic table "+core.Display(schema, name), r), nil
}

// Refresher refreshes dynamic tables.
type Refresher struct {
	query.Runner
	// plans caches incremental refresh plans (see refreshCached); copies
	// share it.
	Plans *PlanCache
}

// WithSchema returns a copy whose unqualified names live in schema.
func (c *Refresher) WithSchema(schema string) *Refresher {
	cp := *c
	cp.Cfg.Schema = schema
	return &cp
}
