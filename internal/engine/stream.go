package engine

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/lakepipe/lakepipe/internal/changes"

	"github.com/lakepipe/lakepipe/internal/core"

	"github.com/lakepipe/lakepipe/internal/catalog"
	"github.com/lakepipe/lakepipe/internal/sqlparse"
)

// Stream modes.
const (
	streamStandard   = "STANDARD"
	streamAppendOnly = "APPEND_ONLY"
)

// streamColumns are the metadata columns a stream adds to its table's.
var streamColumns = []string{"__change_type", "__commit_version", "__commit_timestamp"}

func (e *Engine) streamSpec(ctx context.Context, n sqlparse.ObjectName) (schema, name string, spec catalog.StreamSpec, ok bool, err error) {
	if schema, name, err = e.Qualify(n); err != nil {
		return
	}
	ok, err = e.Cat.Get(ctx, catalog.KindStream, schema, name, &spec)
	return
}

func (e *Engine) createTableStream(ctx context.Context, s *sqlparse.CreateTableStream) (*core.Result, error) {
	schema, name, _, exists, err := e.streamSpec(ctx, s.Name)
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
	spec := catalog.StreamSpec{Table: core.Display(tschema, tname), Mode: streamStandard, CreatedAt: time.Now().UTC(), TableCreatedAt: tspec.CreatedAt}
	for _, p := range s.Props {
		v := strings.ToUpper(strings.TrimSpace(p.Value))
		switch strings.ToUpper(p.Key) {
		case "TABLE_STREAM_MODE":
			if v != streamStandard && v != streamAppendOnly {
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

func (e *Engine) dropTableStream(ctx context.Context, s *sqlparse.DropTableStream) (*core.Result, error) {
	schema, name, _, ok, err := e.streamSpec(ctx, s.Name)
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

// streamState says whether a stream can be read: its table exists and its
// offset is within the table's change log.
func (e *Engine) streamState(ctx context.Context, name string, spec catalog.StreamSpec) (tschema, tname string, tspec catalog.TableSpec, stale string, err error) {
	return e.streamStateWith(name, spec, func(schema, table string, out *catalog.TableSpec) (bool, error) {
		return e.Cat.Get(ctx, catalog.KindTable, schema, table, out)
	})
}

// streamStateWith is streamState reading the table's spec with get.
func (e *Engine) streamStateWith(name string, spec catalog.StreamSpec, get func(schema, table string, out *catalog.TableSpec) (bool, error)) (tschema, tname string, tspec catalog.TableSpec, stale string, err error) {
	var ok bool
	tschema, tname, ok = strings.Cut(spec.Table, ".")
	if !ok {
		return "", "", tspec, "", fmt.Errorf("table stream %s: bad table name %q", name, spec.Table)
	}
	if ok, err = get(tschema, tname, &tspec); err != nil {
		return "", "", tspec, "", err
	}
	if !ok {
		return "", "", tspec, "", fmt.Errorf("table stream %s: its table %s no longer exists; drop the stream (DROP TABLE STREAM %s)", name, spec.Table, name)
	}
	if !spec.TableCreatedAt.IsZero() && !spec.TableCreatedAt.Equal(tspec.CreatedAt) {
		stale = fmt.Sprintf("table stream %s is stale: its table %s was dropped and created again (at %s) since the stream was made; recreate it: CREATE OR REPLACE TABLE STREAM %s ON TABLE %s",
			name, spec.Table, tspec.CreatedAt.Format("2006-01-02 15:04:05"), name, spec.Table)
		return tschema, tname, tspec, stale, nil
	}
	if since, _ := strconv.ParseUint(tspec.Properties[changes.ChangesRetainedSince], 10, 64); since > 0 && spec.Offset < since && !(spec.Offset == 0 && spec.ShowInitialRows) {
		stale = fmt.Sprintf("table stream %s is stale: its offset (%s) is older than the change log %s keeps (changes since %s, data_retention_days); recreate it: CREATE OR REPLACE TABLE STREAM %s ON TABLE %s",
			name, versionTime(spec.Offset), spec.Table, versionTime(since), name, spec.Table)
	}
	return tschema, tname, tspec, stale, nil
}

// versionTime renders a commit version as the time it stands for.
func versionTime(v uint64) string {
	return time.Unix(0, int64(v)).UTC().Format("2006-01-02 15:04:05.000")
}

func (e *Engine) showTableStreams(ctx context.Context, s *sqlparse.ShowTableStreams) (*core.Result, error) {
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
		_, _, _, stale, err := e.streamState(ctx, o.Name, spec)
		res.Rows = append(res.Rows, []any{o.Name, o.Schema, spec.Table, spec.Mode, spec.ShowInitialRows, stale != "" || err != nil,
			spec.Offset, versionTime(spec.Offset), spec.Comment, spec.CreatedAt})
	}
	sort.Slice(res.Rows, func(i, j int) bool { return res.Rows[i][0].(string) < res.Rows[j][0].(string) })
	return res, nil
}

func (e *Engine) descTableStream(ctx context.Context, s *sqlparse.DescTableStream) (*core.Result, error) {
	schema, name, spec, ok, err := e.streamSpec(ctx, s.Name)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("table stream %s does not exist (SHOW TABLE STREAMS lists them)", core.Display(schema, name))
	}
	_, _, _, stale, serr := e.streamState(ctx, name, spec)
	if serr != nil {
		stale = serr.Error()
	}
	var consumed any
	if !spec.ConsumedAt.IsZero() {
		consumed = spec.ConsumedAt
	}
	return core.PropertyRows([][2]any{
		{"name", name}, {"schema", schema}, {"table_name", spec.Table}, {"mode", spec.Mode},
		{"show_initial_rows", spec.ShowInitialRows}, {"offset_version", spec.Offset}, {"offset_time", versionTime(spec.Offset)},
		{"last_consumed_time", consumed}, {"stale", stale != ""}, {"stale_reason", stale},
		{"comment", spec.Comment}, {"created_time", spec.CreatedAt},
	}), nil
}

// streamRead is a stream a statement reads, and up to which version.
type streamRead struct {
	schema, name string
	hi           uint64
}

// readsChangeColumns reports whether a query may read a stream's metadata
// columns: it names one of them, or selects *.
func readsChangeColumns(q *sqlparse.Query) bool {
	found := false
	sqlparse.Inspect(q, func(n any) bool {
		switch x := n.(type) {
		case *sqlparse.Select:
			found = found || slices.ContainsFunc(x.Items, func(it sqlparse.SelectItem) bool { return it.Star })
		case *sqlparse.ColumnRef:
			last := x.Parts[len(x.Parts)-1]
			found = found || slices.ContainsFunc(streamColumns, func(c string) bool { return strings.EqualFold(c, last) })
		}
		return !found
	})
	return found
}

// streamSource renders a stream as a subquery of its changes since its
// offset, and remembers the version read up to, so that a DML statement
// reading it can consume it.
func (s *session) streamSource(schema, name string, spec catalog.StreamSpec) (string, error) {
	e := s.e
	tschema, tname, tspec, stale, err := e.streamStateWith(name, spec, func(schema, table string, out *catalog.TableSpec) (bool, error) {
		return s.cachedGet(catalog.KindTable, schema, table, out)
	})
	if err != nil {
		return "", err
	}
	if stale != "" {
		return "", fmt.Errorf("%s", stale)
	}
	key := schema + "." + name
	r, ok := s.streams[key]
	if !ok {
		r = streamRead{schema: schema, name: name, hi: changes.ChangeReadHorizon()}
		if r.hi < spec.Offset {
			r.hi = spec.Offset // a stream created in the last moments
		}
		if s.streams == nil {
			s.streams = map[string]streamRead{}
		}
		s.streams[key] = r
	}
	how := changes.ChangeRead{AppendOnly: spec.Mode == streamAppendOnly, Initial: spec.ShowInitialRows, Meta: !s.noMeta}
	q, err := changes.ChangeQuery(tschema, tname, tspec, spec.Offset, r.hi, how, func(from uint64) ([]changes.CommitRef, error) {
		return s.readCommits(tschema, tname, from)
	})
	if err != nil {
		return "", err
	}
	return "(" + q + ")", nil
}

// consumeStreams moves the offsets of the streams the statement read to
// where it read them: called once its write succeeded.
func (s *session) consumeStreams() error {
	keys := make([]string, 0, len(s.streams))
	for k := range s.streams {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		r := s.streams[k]
		var spec catalog.StreamSpec
		ok, err := s.e.Cat.Get(s.ctx, catalog.KindStream, r.schema, r.name, &spec)
		if err != nil {
			return fmt.Errorf("table stream %s: its offset did not move: %w", r.name, err)
		}
		if !ok || spec.Offset >= r.hi {
			continue
		}
		spec.Offset, spec.ConsumedAt = r.hi, time.Now().UTC()
		// From here on the stream starts from a version, not from its
		// table's initial rows.
		spec.ShowInitialRows = false
		if err := s.e.Cat.Put(s.ctx, catalog.KindStream, r.schema, r.name, spec, ""); err != nil {
			return fmt.Errorf("table stream %s: its offset did not move: %w", r.name, err)
		}
	}
	return nil
}
