package engine

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/lakepipe/lakepipe/internal/catalog"
	"github.com/lakepipe/lakepipe/internal/changes"
	"github.com/lakepipe/lakepipe/internal/core"
	"github.com/lakepipe/lakepipe/internal/query"
	"github.com/lakepipe/lakepipe/internal/sqlast"
)

func (e *Engine) createTableStream(ctx context.Context, s *sqlast.CreateTableStream) (*core.Result, error) {
	schema, name, _, exists, err := e.StreamSpec(ctx, s.Name)
	if err != nil {
		return nil, err
	}
	if exists && !s.OrReplace {
		if s.IfNotExists {
			return core.Message("table stream %s already exists", core.Display(schema, name)), nil
		}
		return nil, fmt.Errorf("table stream %s already exists (use IF NOT EXISTS or CREATE OR REPLACE)", core.Display(schema, name))
	}
	tschema, tname, tspec, err := e.Table(ctx, s.Table)
	if err != nil {
		return nil, fmt.Errorf("table stream %s: %w", name, err)
	}
	spec := catalog.StreamSpec{Table: core.Display(tschema, tname), Mode: query.StreamStandard, CreatedAt: time.Now().UTC(), TableCreatedAt: tspec.CreatedAt}
	for _, p := range s.Props {
		v := strings.ToUpper(strings.TrimSpace(p.Value))
		switch strings.ToUpper(p.Key) {
		case "TABLE_STREAM_MODE":
			if v != query.StreamStandard && v != query.StreamAppendOnly {
				return nil, fmt.Errorf("table stream %s: TABLE_STREAM_MODE = %q: expected 'STANDARD' or 'APPEND_ONLY'", name, p.Value)
			}
			spec.Mode = v
		case "SHOW_INITIAL_ROWS":
			b, err := core.ParseBool("SHOW_INITIAL_ROWS", v)
			if err != nil {
				return nil, fmt.Errorf("table stream %s: %w", name, err)
			}
			spec.ShowInitialRows = b
		default:
			return nil, fmt.Errorf("table stream %s: unknown property %q (known: TABLE_STREAM_MODE, SHOW_INITIAL_ROWS)", name, p.Key)
		}
	}
	if s.Comment != nil {
		spec.Comment = *s.Comment
	}
	note := ""
	if !changes.Tracked(tspec) {
		// As Snowflake does: a stream turns change tracking on.
		if err := e.EnableTracking(ctx, tschema, tname, tspec); err != nil {
			return nil, err
		}
		if tspec.Properties == nil {
			tspec.Properties = map[string]string{}
		}
		tspec.Properties["change_tracking"] = "true"
		if err := e.Cat.Put(ctx, catalog.KindTable, tschema, tname, tspec, ""); err != nil {
			return nil, err
		}
		note = fmt.Sprintf(" (change tracking is now on for %s)", spec.Table)
	}
	// The stream starts now: commits until this moment are before it.
	spec.Offset = changes.NextCommitVersion()
	if spec.ShowInitialRows {
		spec.Offset = 0
	}
	if err := e.Cat.Put(ctx, catalog.KindStream, schema, name, spec, ""); err != nil {
		return nil, err
	}
	return core.Message("table stream %s created on %s%s", core.Display(schema, name), spec.Table, note), nil
}

func (e *Engine) dropTableStream(ctx context.Context, s *sqlast.DropTableStream) (*core.Result, error) {
	schema, name, _, ok, err := e.StreamSpec(ctx, s.Name)
	if err != nil {
		return nil, err
	}
	if !ok {
		if s.IfExists {
			return core.Message("table stream %s does not exist", core.Display(schema, name)), nil
		}
		return nil, fmt.Errorf("table stream %s does not exist (SHOW TABLE STREAMS lists them)", core.Display(schema, name))
	}
	if err := e.Cat.Delete(ctx, catalog.KindStream, schema, name); err != nil {
		return nil, err
	}
	return core.Message("table stream %s dropped", core.Display(schema, name)), nil
}

func (e *Engine) showTableStreams(ctx context.Context, s *sqlast.ShowTableStreams) (*core.Result, error) {
	objs, err := e.Cat.List(ctx, catalog.KindStream, e.Cfg.Schema)
	if err != nil {
		return nil, err
	}
	res := &core.Result{Columns: []string{"name", "schema", "table_name", "mode", "show_initial_rows", "stale", "offset_version", "offset_time", "comment", "created_time"}}
	for _, o := range objs {
		if !core.LikeMatch(s.Like, o.Name) {
			continue
		}
		var spec catalog.StreamSpec
		if err := o.Decode(&spec); err != nil {
			return nil, err
		}
		_, _, _, stale, err := e.StreamState(ctx, o.Name, spec)
		res.Rows = append(res.Rows, []any{o.Name, o.Schema, spec.Table, spec.Mode, spec.ShowInitialRows, stale != "" || err != nil,
			spec.Offset, query.VersionTime(spec.Offset), spec.Comment, spec.CreatedAt})
	}
	sort.Slice(res.Rows, func(i, j int) bool { return res.Rows[i][0].(string) < res.Rows[j][0].(string) })
	return res, nil
}

func (e *Engine) descTableStream(ctx context.Context, s *sqlast.DescTableStream) (*core.Result, error) {
	schema, name, spec, ok, err := e.StreamSpec(ctx, s.Name)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("table stream %s does not exist (SHOW TABLE STREAMS lists them)", core.Display(schema, name))
	}
	_, _, _, stale, serr := e.StreamState(ctx, name, spec)
	if serr != nil {
		stale = serr.Error()
	}
	var consumed any
	if !spec.ConsumedAt.IsZero() {
		consumed = spec.ConsumedAt
	}
	return core.PropertyRows([][2]any{
		{"name", name}, {"schema", schema}, {"table_name", spec.Table}, {"mode", spec.Mode},
		{"show_initial_rows", spec.ShowInitialRows}, {"offset_version", spec.Offset}, {"offset_time", query.VersionTime(spec.Offset)},
		{"last_consumed_time", consumed}, {"stale", stale != ""}, {"stale_reason", stale},
		{"comment", spec.Comment}, {"created_time", spec.CreatedAt},
	}), nil
}
