package core

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/lakepipe/lakepipe/internal/catalog"
	"github.com/lakepipe/lakepipe/internal/chsql"
	"github.com/lakepipe/lakepipe/internal/chstore"
	"github.com/lakepipe/lakepipe/internal/jobs"
	"github.com/lakepipe/lakepipe/internal/objstore"
	"github.com/lakepipe/lakepipe/internal/rowio"
	"github.com/lakepipe/lakepipe/internal/sqlast"
)

// ErrDynamicTableGone is returned to the refresh activity of a dropped
// dynamic table.
var ErrDynamicTableGone = errors.New("dynamic table no longer exists")

// DynamicTableWorkflowID is the dynamic table's workflow id.
func (e *Core) DynamicTableWorkflowID(name string) string {
	return jobs.DynamicTableWorkflowID(jobs.DynamicTableParams{Workspace: e.Cfg.Workspace, Schema: e.Cfg.Schema, Name: name})
}

// Config holds the session defaults.
type Config struct {
	// Workspace and Schema qualify unqualified names; Schema is also the
	// ClickHouse database of the schema's tables.
	Workspace string
	Schema    string
	// TrashRetentionDays is how long a dropped table can be UNDROPped
	// (default 7). Below zero, none can: the next purge of the trash
	// (every DROP TABLE, and maintenance) removes every dropped table.
	TrashRetentionDays int
	// LoadHistoryDays is how long load_history() keeps a file's record.
	LoadHistoryDays int
	// StreamSessionIdleDays is how long a streaming-write session may go
	// unused before maintenance forgets it (default 30): sessions are
	// long-lived while used, but a writer that never closes its sessions
	// must not grow the catalog forever.
	StreamSessionIdleDays int
	// Limits bound what reading one file, flush body or record pack may
	// allocate (zero fields: the defaults of formats.Limits); the
	// programs read them from the environment (formats.LimitsFromEnv).
	Limits rowio.Limits
	// FullListingInterval is how often a volume pipe whose new files
	// arrive in key order lists its whole volume anyway (default 1 hour;
	// LAKEPIPE_FULL_LISTING_INTERVAL): between, its turns list only the
	// keys after the last handled one (see workflows.ListState).
	FullListingInterval time.Duration
}

// DefaultFullListingInterval is Config.FullListingInterval's default.
const DefaultFullListingInterval = time.Hour

// Core is what every part of the engine shares: the configuration, the
// catalog, the ClickHouse store and the orchestrator (Temporal).
type Core struct {
	Cfg  Config
	Cat  *catalog.Catalog
	St   *chstore.Store
	Orch Orchestrator
}

// Result is what a statement returns: rows with named columns, or just a
// message for statements that change things.
type Result struct {
	Columns []string
	Types   []string // ClickHouse types of the columns, when known
	Rows    [][]any
	Message string
	// Streamed says the rows went to the statement's RowSink as they
	// arrived (Rows is empty): the caller has written them out already.
	Streamed bool
}

// RowSink takes a query's rows as they arrive, for a caller that writes
// them out as they come (lakepipe sql's csv, tsv and json formats) rather
// than holding them: what a query returns is then not bound by the
// process's memory (rowio.Limits.MaxResultBytes).
type RowSink interface {
	// Columns comes once, before the first row.
	Columns(names, types []string) error
	Row(row []any) error
}

type rowSinkKey struct{}

// WithRowSink makes the SELECT statements run under ctx write their rows
// to sink (Result.Streamed).
func WithRowSink(ctx context.Context, sink RowSink) context.Context {
	return context.WithValue(ctx, rowSinkKey{}, sink)
}

// RowSinkOf is the RowSink of ctx, or nil.
func RowSinkOf(ctx context.Context) RowSink {
	s, _ := ctx.Value(rowSinkKey{}).(RowSink)
	return s
}

func Message(format string, args ...any) *Result {
	return &Result{Message: fmt.Sprintf(format, args...)}
}

// CommitColumn is the bookkeeping column of every table lakepipe creates:
// the id of the load (commit) that wrote the row, 0 for plain INSERTs.
const CommitColumn = "_lp_commit"

// ErrNotSupportedYet is returned by statements that parse but whose
// execution a later release brings.
var ErrNotSupportedYet = errors.New("not supported yet")

// qualify splits an object name into schema and name with the session's
// defaults; a three-part name's workspace must be the session's.
func (e *Core) Qualify(n sqlast.ObjectName) (schema, name string, err error) {
	switch len(n.Parts) {
	case 1:
		return e.Cfg.Schema, n.Parts[0], nil
	case 2:
		return n.Parts[0], n.Parts[1], nil
	case 3:
		if n.Parts[0] != e.Cfg.Workspace {
			return "", "", fmt.Errorf("workspace %q is not this one (%q)", n.Parts[0], e.Cfg.Workspace)
		}
		return n.Parts[1], n.Parts[2], nil
	}
	return "", "", fmt.Errorf("bad name %q", strings.Join(n.Parts, "."))
}

func Display(schema, name string) string { return schema + "." + name }

// tableRef resolves a name used in a query to the ClickHouse table holding it.
func (e *Core) TableRef(ctx context.Context, n sqlast.ObjectName) (string, error) {
	schema, name, err := e.Qualify(n)
	if err != nil {
		return "", err
	}
	for _, k := range []catalog.Kind{catalog.KindTable, catalog.KindDynamicTable} {
		var spec struct{}
		ok, err := e.Cat.Get(ctx, k, schema, name, &spec)
		if err != nil {
			return "", err
		}
		if ok {
			return chsql.Table(schema, name), nil
		}
	}
	// Tables lakepipe did not create (ClickHouse's own, or made with
	// clickhouse-client) can still be read when they exist.
	n2, err := e.St.Strings(ctx, "SELECT count() FROM system.tables WHERE database = "+chsql.QuoteString(schema)+" AND name = "+chsql.QuoteString(name))
	if err == nil && len(n2) == 1 && n2[0] != "0" {
		return chsql.Table(schema, name), nil
	}
	return "", fmt.Errorf("table %s does not exist (SHOW TABLES lists the tables of a schema)", Display(schema, name))
}

// likeMatch reports whether s matches a SQL LIKE pattern, case-insensitively.
func LikeMatch(pattern *string, s string) bool {
	if pattern == nil {
		return true
	}
	return like(strings.ToLower(*pattern), strings.ToLower(s))
}

func like(p, s string) bool {
	for len(p) > 0 {
		switch p[0] {
		case '%':
			for i := 0; i <= len(s); i++ {
				if like(p[1:], s[i:]) {
					return true
				}
			}
			return false
		case '_':
			if s == "" {
				return false
			}
			p, s = p[1:], s[1:]
		case '\\':
			if len(p) > 1 {
				p = p[1:]
			}
			fallthrough
		default:
			if s == "" || s[0] != p[0] {
				return false
			}
			p, s = p[1:], s[1:]
		}
	}
	return s == ""
}

// props turns a property list into a map with lower-cased keys.
func Props(ps []sqlast.Property) map[string]string {
	m := make(map[string]string, len(ps))
	for _, p := range ps {
		m[strings.ToLower(p.Key)] = p.Value
	}
	return m
}

func ParseBool(what, v string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "true", "1", "yes", "on":
		return true, nil
	case "false", "0", "no", "off":
		return false, nil
	}
	return false, fmt.Errorf("%s = %q: expected TRUE or FALSE", what, v)
}

// nameFromString reads a table name given as a string ('t', 's.t',
// '`Odd`.t'): unquoted parts are case-insensitive like identifiers.
func NameFromString(s string) sqlast.ObjectName {
	var n sqlast.ObjectName
	for _, p := range strings.Split(s, ".") {
		p = strings.TrimSpace(p)
		if len(p) >= 2 && p[0] == '`' && p[len(p)-1] == '`' {
			n.Parts = append(n.Parts, p[1:len(p)-1])
		} else {
			n.Parts = append(n.Parts, strings.ToLower(p))
		}
	}
	return n
}

// Orchestrator runs pipe workflows; package orchestrator implements it on
// Temporal. The engine only needs these few verbs.
type Orchestrator interface {
	// Signal sends a signal to any lakepipe workflow.
	Signal(ctx context.Context, id, signal string, arg any) error
	// PipeStatus answers the workflow's status query; state is the
	// workflow's execution status (RUNNING, FAILED, TERMINATED, …) and
	// reason its failure, if any.
	PipeStatus(ctx context.Context, id string) (st *jobs.PipeStatus, state, reason string, err error)
	// Stop asks a workflow to end after its current step (drop signal).
	Stop(ctx context.Context, id string) error
	// Start starts a workflow by its registered name; a leftover run under
	// the same id is terminated first. vis gives its search attributes
	// and memo.
	Start(ctx context.Context, id, workflow string, input any, vis *jobs.Visibility) error
	// Update sends an update (pause, resume, refresh, suspend, set) and waits
	// for the state the workflow took; a validator's refusal is an error
	// with its reason.
	Update(ctx context.Context, id, name string, arg any, out *jobs.ControlReply) error
	// List returns the running workflows of the given kinds in a
	// workspace and schema, from visibility (no worker needed), by
	// workflow id; orchestrator.ErrNoAttributes when the namespace
	// lacks lakepipe's search attributes.
	List(ctx context.Context, kinds []string, workspace, schema string) (map[string]jobs.Listed, error)
	// Describe is List for one workflow, from its execution.
	Describe(ctx context.Context, id string) (l jobs.Listed, found bool, err error)
	// Query runs a workflow's query; state is its execution status.
	Query(ctx context.Context, id, query string, out any) (state string, err error)
	// RefreshDynamicTable runs one refresh of a dynamic table (after its
	// upstream) in the table's workflow and waits for it.
	RefreshDynamicTable(ctx context.Context, id string, out *jobs.RefreshChainResult) error
	// Wait waits for a workflow's latest run to end, for its result.
	Wait(ctx context.Context, id string, out any) error
}

func (e *Core) Orchestrator() (Orchestrator, error) {
	if e.Orch == nil {
		return nil, errors.New("pipes need Temporal: no Temporal connection is configured (set --temporal / LAKEPIPE_TEMPORAL_ADDR)")
	}
	return e.Orch, nil
}

// PipeWorkflowID is the pipe's workflow id, the query_tag of the ClickZetta Lakehouse documentation.
func (e *Core) PipeWorkflowID(name string) string {
	return "pipe." + e.Cfg.Workspace + "." + e.Cfg.Schema + "." + name
}

func (e *Core) PipeSpec(ctx context.Context, name string) (catalog.PipeSpec, error) {
	var spec catalog.PipeSpec
	ok, err := e.Cat.Get(ctx, catalog.KindPipe, e.Cfg.Schema, name, &spec)
	if err != nil {
		return spec, err
	}
	if !ok {
		return spec, fmt.Errorf("pipe %s does not exist (SHOW PIPES lists them)", name)
	}
	return spec, nil
}

// ErrPipeGone is returned to a pipe's activities once the pipe has been
// dropped: retrying cannot help, and the workflow ends.
var ErrPipeGone = errors.New("pipe no longer exists")

// table loads a table's spec.
func (e *Core) Table(ctx context.Context, n sqlast.ObjectName) (schema, name string, spec catalog.TableSpec, err error) {
	schema, name, err = e.Qualify(n)
	if err != nil {
		return
	}
	ok, err := e.Cat.Get(ctx, catalog.KindTable, schema, name, &spec)
	if err != nil {
		return
	}
	if !ok {
		err = Permanent(fmt.Errorf("table %s does not exist (SHOW TABLES lists the tables of a schema)", Display(schema, name)))
	}
	return
}

func ColumnDDL(c catalog.ColumnSpec) string {
	s := chsql.QuoteIdent(c.Name) + " " + c.CHType
	if c.Comment != "" {
		s += " COMMENT " + chsql.QuoteString(c.Comment)
	}
	return s
}

// targetColumns picks the columns an INSERT or COPY names (all when none).
func TargetColumns(table string, spec catalog.TableSpec, names []string) ([]catalog.ColumnSpec, error) {
	if len(names) == 0 {
		return spec.Columns, nil
	}
	var out []catalog.ColumnSpec
	for _, n := range names {
		found := false
		for _, c := range spec.Columns {
			if strings.EqualFold(c.Name, n) {
				out = append(out, c)
				found = true
				break
			}
		}
		if !found {
			return nil, fmt.Errorf("table %s has no column %s", table, n)
		}
	}
	return out, nil
}

func ColumnList(cols []catalog.ColumnSpec) string {
	q := make([]string, len(cols))
	for i, c := range cols {
		q[i] = chsql.QuoteIdent(c.Name)
	}
	return strings.Join(q, ", ")
}

// queryError turns ClickHouse's complaints into lakepipe's words where it
// can; it never adds the server's stack trace.
func QueryError(err error) error {
	if chstore.IsCode(err, chstore.CodeUnknownTable) {
		return fmt.Errorf("%w (SHOW TABLES lists the tables)", err)
	}
	return err
}

// Connections are workspace-wide: they live under the empty schema.
const GlobalSchema = ""

func PropertyRows(kv [][2]any) *Result {
	res := &Result{Columns: []string{"property", "value"}}
	for _, p := range kv {
		res.Rows = append(res.Rows, []any{p[0], p[1]})
	}
	return res
}

// volume loads a volume's spec and opens it.
func (e *Core) Volume(ctx context.Context, name string) (*objstore.Volume, catalog.VolumeSpec, error) {
	var spec catalog.VolumeSpec
	ok, err := e.Cat.Get(ctx, catalog.KindVolume, e.Cfg.Schema, name, &spec)
	if err != nil {
		return nil, spec, err
	}
	if !ok {
		return nil, spec, Permanent(fmt.Errorf("volume %s does not exist (SHOW VOLUMES lists them)", name))
	}
	v, err := e.OpenVolume(ctx, name, spec)
	return v, spec, err
}

func (e *Core) OpenVolume(ctx context.Context, name string, spec catalog.VolumeSpec) (*objstore.Volume, error) {
	var c catalog.ConnectionSpec
	ok, err := e.Cat.Get(ctx, catalog.KindConnection, GlobalSchema, spec.Connection, &c)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, Permanent(fmt.Errorf("volume %s: storage connection %s does not exist", name, spec.Connection))
	}
	secret, err := e.Cat.Secret(ctx, catalog.KindConnection, GlobalSchema, spec.Connection)
	if err != nil {
		return nil, err
	}
	loc, err := objstore.ParseLocation(spec.Location)
	if err != nil {
		return nil, err
	}
	return objstore.Open(objstore.Conn{Name: spec.Connection, Kind: c.Type, Endpoint: c.Endpoint, Region: c.Region, AccessID: c.AccessID, AccessKey: secret,
		RoleARN: c.RoleARN, ExternalID: c.ExternalID, STSEndpoint: c.STSEndpoint}, loc, spec.Recursive)
}

func (e *Core) VolumeKey(schema, name string) string { return schema + "." + name }

// PipeVisibility is what a pipe's workflow is started with for the
// Temporal UI and SHOW PIPES; statement is the redacted CREATE PIPE.
func (e *Core) PipeVisibility(spec catalog.PipeSpec, statement string) *jobs.Visibility {
	kind := jobs.VisibleVolumePipe
	if spec.Kind == jobs.KindKafka {
		kind = jobs.VisibleKafkaPipe
	}
	return &jobs.Visibility{Kind: kind, Workspace: e.Cfg.Workspace, Schema: e.Cfg.Schema,
		Table: strings.TrimPrefix(spec.Output, e.Cfg.Workspace+"."), Statement: statement}
}

// ControlMessage is what ALTER prints of a workflow's reply to an update:
// the state it took and what happens next.
func ControlMessage(what string, r jobs.ControlReply) *Result {
	switch {
	case r.Status == "":
		return Message("%s: %s", what, r.Detail)
	case r.Detail == "":
		return Message("%s: %s", what, r.Status)
	}
	return Message("%s: %s (%s)", what, r.Status, r.Detail)
}
