// Package engine executes parsed lakepipe statements: it keeps the catalog,
// creates ClickHouse tables, runs translated queries, and moves files
// between volumes and tables. It is what `lakepipe sql` runs; the pipe and
// refresh workflows call the same pieces through their activities.
package engine

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/lakepipe/lakepipe/internal/catalog"
	"github.com/lakepipe/lakepipe/internal/changes"
	"github.com/lakepipe/lakepipe/internal/core"
	"github.com/lakepipe/lakepipe/internal/dynamic"
	"github.com/lakepipe/lakepipe/internal/kafka"
	"github.com/lakepipe/lakepipe/internal/kafkaload"
	"github.com/lakepipe/lakepipe/internal/loading"
	"github.com/lakepipe/lakepipe/internal/query"
	"github.com/lakepipe/lakepipe/internal/runcache"
	"github.com/lakepipe/lakepipe/internal/sqlast"
	"github.com/lakepipe/lakepipe/internal/streamwrite"
	"github.com/lakepipe/lakepipe/internal/writerlease"
)

// Engine runs statements; safe for concurrent use. Its parts each embed
// the query runner (and through it the change log and core); Engine keeps
// their copies of it in step (see wire).
type Engine struct {
	query.Runner
	streamwrite.Writer
	kafkaload.Consumer
	dynamic.Refresher
	loading.Loader
}

// wire gives every part the engine's query runner (its configuration,
// catalog, store and orchestrator, and the shared caches).
func (e *Engine) wire() {
	e.Writer.Runner = e.Runner
	e.Consumer.Runner = e.Runner
	e.Refresher.Runner = e.Runner
	e.Loader.Runner = e.Runner
	e.Loader.EmptyTracked = e.emptyTracked
}

// kafkaClientIdle is how long a Kafka pipe's client is kept unused: longer
// than the default BATCH_INTERVAL_IN_SECONDS (60), so that a pipe's
// batches find it.
const kafkaClientIdle = 3 * time.Minute

// New returns an engine over an opened catalog.
func New(cat *catalog.Catalog, cfg core.Config) *Engine {
	if cfg.Workspace == "" {
		cfg.Workspace = "default"
	}
	if cfg.Schema == "" {
		cfg.Schema = "public"
	}
	if cfg.FullListingInterval <= 0 {
		cfg.FullListingInterval = core.DefaultFullListingInterval
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
	e := new(Engine)
	e.Core = core.Core{Cfg: cfg, Cat: cat, St: cat.Store()}
	e.Commits = new(changes.CommitCache)
	e.Fresh = new(changes.Freshness)
	e.Lease = writerlease.New(e.St)
	e.FlushLocks = new([64]sync.Mutex)
	e.Plans = new(dynamic.PlanCache)
	e.Kafka = kafka.NewPool(kafkaClientIdle)
	e.Runs = new(runcache.Cache[*loading.PipeRun])
	e.KafkaRuns = new(runcache.Cache[*kafkaload.KafkaPipeRun])
	e.wire()
	return e
}

// Exec runs one statement. A statement that names lakepipe's own or
// ClickHouse's system tables, or calls a function reaching outside the
// user's tables, is refused before anything runs: with a *GuardError, or a
// *chsql.RefusedFunction for a scalar function.
func (e *Engine) Exec(ctx context.Context, stmt sqlast.Statement) (*core.Result, error) {
	if err := e.Guard(stmt); err != nil {
		return nil, err
	}
	switch stmt.(type) {
	case *sqlast.Insert, *sqlast.Update, *sqlast.Delete, *sqlast.MergeInto, *sqlast.CopyIntoTable:
		// Loads they open name the process's lease (writerlease).
		var release func()
		ctx, release = e.HoldLease(ctx)
		defer release()
	}
	switch s := stmt.(type) {
	case *sqlast.CreateConnection:
		return e.createConnection(ctx, s)
	case *sqlast.DropConnection:
		return e.dropConnection(ctx, s)
	case *sqlast.ShowConnections:
		return e.showConnections(ctx, s)
	case *sqlast.DescConnection:
		return e.descConnection(ctx, s)
	case *sqlast.CreateVolume:
		return e.createVolume(ctx, s)
	case *sqlast.AlterVolume:
		return e.alterVolume(ctx, s)
	case *sqlast.ShowVolumes:
		return e.showVolumes(ctx, s)
	case *sqlast.DescVolume:
		return e.descVolume(ctx, s)
	case *sqlast.DropVolume:
		return e.dropVolume(ctx, s)
	case *sqlast.CreateTable:
		return e.createTable(ctx, s)
	case *sqlast.DropTable:
		return e.dropTable(ctx, s)
	case *sqlast.UndropTable:
		return e.undropTable(ctx, s)
	case *sqlast.AlterTable:
		return e.alterTable(ctx, s)
	case *sqlast.ShowTables:
		return e.showTables(ctx, s)
	case *sqlast.DescTable:
		return e.descTable(ctx, s)
	case *sqlast.Insert:
		return e.insert(ctx, s)
	case *sqlast.Delete:
		return e.delete(ctx, s)
	case *sqlast.Update:
		return e.update(ctx, s)
	case *sqlast.MergeInto:
		return e.merge(ctx, s)
	case *sqlast.QueryStmt:
		// The caller's sink, if any, takes the rows of this statement's
		// result only, not those of queries run on its behalf.
		return e.QueryTo(ctx, s.Query, core.RowSinkOf(ctx))
	case *sqlast.CopyIntoTable:
		return e.CopyIntoTable(ctx, s)
	case *sqlast.CopyIntoVolume:
		return e.CopyIntoVolume(ctx, s)
	case *sqlast.CreatePipe:
		return e.createPipe(ctx, s)
	case *sqlast.AlterPipe:
		return e.alterPipe(ctx, s)
	case *sqlast.DropPipe:
		return e.dropPipe(ctx, s)
	case *sqlast.ShowPipes:
		return e.showPipes(ctx, s)
	case *sqlast.DescPipe:
		return e.descPipe(ctx, s)
	case *sqlast.CreateDynamicTable:
		return e.CreateDynamicTable(ctx, s)
	case *sqlast.RefreshDynamicTable:
		return e.RefreshDynamic(ctx, s)
	case *sqlast.ShowRefreshHistory:
		return e.ShowRefreshHistory(ctx, s)
	case *sqlast.ShowDynamicTables:
		return e.ShowDynamicTables(ctx, s)
	case *sqlast.DescDynamicTable:
		return e.DescDynamicTable(ctx, s)
	case *sqlast.DropDynamicTable:
		return e.DropDynamicTable(ctx, s)
	case *sqlast.AlterDynamicTable:
		return e.AlterDynamicTable(ctx, s)
	case *sqlast.CreateTableStream:
		return e.createTableStream(ctx, s)
	case *sqlast.DropTableStream:
		return e.dropTableStream(ctx, s)
	case *sqlast.ShowTableStreams:
		return e.showTableStreams(ctx, s)
	case *sqlast.DescTableStream:
		return e.descTableStream(ctx, s)
	}
	_, text := stmt.Span()
	return nil, fmt.Errorf("%s: %w", firstWords(text, 3), core.ErrNotSupportedYet)
}

func firstWords(s string, n int) string {
	f := strings.Fields(s)
	if len(f) > n {
		f = f[:n]
	}
	return strings.ToUpper(strings.Join(f, " "))
}
