// Package engine executes parsed lakepipe statements: it keeps the catalog,
// creates ClickHouse tables, runs translated queries, and moves files
// between volumes and tables. It is what `lakepipe sql` runs; the pipe and
// refresh workflows call the same pieces through their activities.
package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/lakepipe/lakepipe/internal/catalog"
	"github.com/lakepipe/lakepipe/internal/chsql"
	"github.com/lakepipe/lakepipe/internal/chstore"
	"github.com/lakepipe/lakepipe/internal/formats"
	"github.com/lakepipe/lakepipe/internal/kafka"
	"github.com/lakepipe/lakepipe/internal/sqlparse"
)

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
	Limits formats.Limits
	// FullListingInterval is how often a volume pipe whose new files
	// arrive in key order lists its whole volume anyway (default 1 hour;
	// LAKEPIPE_FULL_LISTING_INTERVAL): between, its turns list only the
	// keys after the last handled one (see workflows.ListState).
	FullListingInterval time.Duration
}

// DefaultFullListingInterval is Config.FullListingInterval's default.
const DefaultFullListingInterval = time.Hour

// Engine runs statements; safe for concurrent use.
type Engine struct {
	cfg  Config
	cat  *catalog.Catalog
	st   *chstore.Store
	orch Orchestrator
	// flushLocks serialise flushes that share a commit id (a client retry
	// that overlaps the attempt it retries); copies of the engine share it.
	flushLocks *[64]sync.Mutex
	// commits caches change-log reads of table streams (see
	// session.readCommits); copies of the engine share it.
	commits *commitCache
	// fresh lets stream reads skip their full check when nothing was
	// written since the last one (see freshness); shared by copies.
	fresh *freshness
	// plans caches incremental refresh plans (see refreshCached); copies
	// of the engine share it.
	plans *planCache
	// kafka keeps each Kafka pipe's client between its batches; shared by
	// copies.
	kafka *kafka.Pool
	// runs keeps opened volume pipes (see OpenPipe); shared by copies.
	runs *runCache
}

// kafkaClientIdle is how long a Kafka pipe's client is kept unused: longer
// than the default BATCH_INTERVAL_IN_SECONDS (60), so that a pipe's
// batches find it.
const kafkaClientIdle = 3 * time.Minute

// New returns an engine over an opened catalog.
func New(cat *catalog.Catalog, cfg Config) *Engine {
	if cfg.Workspace == "" {
		cfg.Workspace = "default"
	}
	if cfg.Schema == "" {
		cfg.Schema = "public"
	}
	if cfg.FullListingInterval <= 0 {
		cfg.FullListingInterval = DefaultFullListingInterval
	}
	if cfg.TrashRetentionDays == 0 {
		cfg.TrashRetentionDays = 7
	}
	if cfg.LoadHistoryDays == 0 {
		cfg.LoadHistoryDays = 7
	}
	if cfg.StreamSessionIdleDays == 0 {
		cfg.StreamSessionIdleDays = 30
	}
	return &Engine{cfg: cfg, cat: cat, st: cat.Store(), flushLocks: new([64]sync.Mutex), commits: new(commitCache), fresh: new(freshness), plans: new(planCache), kafka: kafka.NewPool(kafkaClientIdle), runs: new(runCache)}
}

// Result is what a statement returns: rows with named columns, or just a
// message for statements that change things.
type Result struct {
	Columns []string
	Types   []string // ClickHouse types of the columns, when known
	Rows    [][]any
	Message string
}

func message(format string, args ...any) *Result {
	return &Result{Message: fmt.Sprintf(format, args...)}
}

// CommitColumn is the bookkeeping column of every table lakepipe creates:
// the id of the load (commit) that wrote the row, 0 for plain INSERTs.
const CommitColumn = "_lp_commit"

// ErrNotSupportedYet is returned by statements that parse but whose
// execution a later release brings.
var ErrNotSupportedYet = errors.New("not supported yet")

// Exec runs one statement. A statement that names lakepipe's own or
// ClickHouse's system tables, or calls a function reaching outside the
// user's tables, is refused before anything runs: with a *GuardError, or a
// *chsql.RefusedFunction for a scalar function.
func (e *Engine) Exec(ctx context.Context, stmt sqlparse.Statement) (*Result, error) {
	if err := e.guard(stmt); err != nil {
		return nil, err
	}
	switch s := stmt.(type) {
	case *sqlparse.CreateConnection:
		return e.createConnection(ctx, s)
	case *sqlparse.DropConnection:
		return e.dropConnection(ctx, s)
	case *sqlparse.ShowConnections:
		return e.showConnections(ctx, s)
	case *sqlparse.DescConnection:
		return e.descConnection(ctx, s)
	case *sqlparse.CreateVolume:
		return e.createVolume(ctx, s)
	case *sqlparse.AlterVolume:
		return e.alterVolume(ctx, s)
	case *sqlparse.ShowVolumes:
		return e.showVolumes(ctx, s)
	case *sqlparse.DescVolume:
		return e.descVolume(ctx, s)
	case *sqlparse.DropVolume:
		return e.dropVolume(ctx, s)
	case *sqlparse.CreateTable:
		return e.createTable(ctx, s)
	case *sqlparse.DropTable:
		return e.dropTable(ctx, s)
	case *sqlparse.UndropTable:
		return e.undropTable(ctx, s)
	case *sqlparse.AlterTable:
		return e.alterTable(ctx, s)
	case *sqlparse.ShowTables:
		return e.showTables(ctx, s)
	case *sqlparse.DescTable:
		return e.descTable(ctx, s)
	case *sqlparse.Insert:
		return e.insert(ctx, s)
	case *sqlparse.Delete:
		return e.delete(ctx, s)
	case *sqlparse.Update:
		return e.update(ctx, s)
	case *sqlparse.QueryStmt:
		return e.query(ctx, s.Query)
	case *sqlparse.CopyIntoTable:
		return e.copyIntoTable(ctx, s)
	case *sqlparse.CopyIntoVolume:
		return e.copyIntoVolume(ctx, s)
	case *sqlparse.CreatePipe:
		return e.createPipe(ctx, s)
	case *sqlparse.AlterPipe:
		return e.alterPipe(ctx, s)
	case *sqlparse.DropPipe:
		return e.dropPipe(ctx, s)
	case *sqlparse.ShowPipes:
		return e.showPipes(ctx, s)
	case *sqlparse.DescPipe:
		return e.descPipe(ctx, s)
	case *sqlparse.CreateDynamicTable:
		return e.createDynamicTable(ctx, s)
	case *sqlparse.RefreshDynamicTable:
		return e.refreshDynamic(ctx, s)
	case *sqlparse.ShowRefreshHistory:
		return e.showRefreshHistory(ctx, s)
	case *sqlparse.ShowDynamicTables:
		return e.showDynamicTables(ctx, s)
	case *sqlparse.DescDynamicTable:
		return e.descDynamicTable(ctx, s)
	case *sqlparse.DropDynamicTable:
		return e.dropDynamicTable(ctx, s)
	case *sqlparse.AlterDynamicTable:
		return e.alterDynamicTable(ctx, s)
	case *sqlparse.CreateTableStream:
		return e.createTableStream(ctx, s)
	case *sqlparse.DropTableStream:
		return e.dropTableStream(ctx, s)
	case *sqlparse.ShowTableStreams:
		return e.showTableStreams(ctx, s)
	case *sqlparse.DescTableStream:
		return e.descTableStream(ctx, s)
	}
	_, text := stmt.Span()
	return nil, fmt.Errorf("%s: %w", firstWords(text, 3), ErrNotSupportedYet)
}

func firstWords(s string, n int) string {
	f := strings.Fields(s)
	if len(f) > n {
		f = f[:n]
	}
	return strings.ToUpper(strings.Join(f, " "))
}

// qualify splits an object name into schema and name with the session's
// defaults; a three-part name's workspace must be the session's.
func (e *Engine) qualify(n sqlparse.ObjectName) (schema, name string, err error) {
	switch len(n.Parts) {
	case 1:
		return e.cfg.Schema, n.Parts[0], nil
	case 2:
		return n.Parts[0], n.Parts[1], nil
	case 3:
		if n.Parts[0] != e.cfg.Workspace {
			return "", "", fmt.Errorf("workspace %q is not this one (%q)", n.Parts[0], e.cfg.Workspace)
		}
		return n.Parts[1], n.Parts[2], nil
	}
	return "", "", fmt.Errorf("bad name %q", strings.Join(n.Parts, "."))
}

func display(schema, name string) string { return schema + "." + name }

// tableRef resolves a name used in a query to the ClickHouse table holding it.
func (e *Engine) tableRef(ctx context.Context, n sqlparse.ObjectName) (string, error) {
	schema, name, err := e.qualify(n)
	if err != nil {
		return "", err
	}
	for _, k := range []catalog.Kind{catalog.KindTable, catalog.KindDynamicTable} {
		var spec struct{}
		ok, err := e.cat.Get(ctx, k, schema, name, &spec)
		if err != nil {
			return "", err
		}
		if ok {
			return chsql.Table(schema, name), nil
		}
	}
	// Tables lakepipe did not create (ClickHouse's own, or made with
	// clickhouse-client) can still be read when they exist.
	n2, err := e.st.Strings(ctx, "SELECT count() FROM system.tables WHERE database = "+chsql.QuoteString(schema)+" AND name = "+chsql.QuoteString(name))
	if err == nil && len(n2) == 1 && n2[0] != "0" {
		return chsql.Table(schema, name), nil
	}
	return "", fmt.Errorf("table %s does not exist (SHOW TABLES lists the tables of a schema)", display(schema, name))
}

// likeMatch reports whether s matches a SQL LIKE pattern, case-insensitively.
func likeMatch(pattern *string, s string) bool {
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
func props(ps []sqlparse.Property) map[string]string {
	m := make(map[string]string, len(ps))
	for _, p := range ps {
		m[strings.ToLower(p.Key)] = p.Value
	}
	return m
}

func parseBool(what, v string) (bool, error) {
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
func nameFromString(s string) sqlparse.ObjectName {
	var n sqlparse.ObjectName
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
