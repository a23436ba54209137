package query

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"

	"github.com/lakepipe/lakepipe/internal/catalog"
	"github.com/lakepipe/lakepipe/internal/changes"
	"github.com/lakepipe/lakepipe/internal/chsql"
	"github.com/lakepipe/lakepipe/internal/chstore"
	"github.com/lakepipe/lakepipe/internal/core"
	"github.com/lakepipe/lakepipe/internal/fileread"
	"github.com/lakepipe/lakepipe/internal/objstore"
	"github.com/lakepipe/lakepipe/internal/sqlast"
)

// A query reading a table stream is translated from what this process
// cached: the stream's and its table's catalog entries and the table's
// commits. It then runs while they are checked: by the parts token alone
// when an earlier check found these same values current and nothing was
// written since (see freshness), else by reading the commits again with
// the entries' version checks. The result counts only if the check held.
// So a stream read costs one round trip (and a cheap one alongside) when
// nothing changed, and three when something did.
func (e *Runner) Query(ctx context.Context, q *sqlast.Query) (*core.Result, error) {
	return e.QueryTo(ctx, q, nil)
}

// QueryTo is Query writing the rows to sink as they arrive (nil: held in
// the Result). A query that fails after rows went out is not run again.
func (e *Runner) QueryTo(ctx context.Context, q *sqlast.Query, sink core.RowSink) (*core.Result, error) {
	mode := querySpeculative
	for {
		res, again, err := e.queryOnce(ctx, q, mode, sink)
		if again == 0 || again >= mode {
			return res, err
		}
		mode = again
	}
}

// queryMode is how much of a query's translation may come from caches.
type queryMode int

const (
	queryFresh       queryMode = iota + 1 // catalog and change log read afresh
	queryCached                           // catalog entries cached, commits read
	querySpeculative                      // commits cached too, checked alongside
)

// queryOnce runs a query; again, when not zero, says a cache turned out
// outdated and how to run it again.
func (e *Runner) queryOnce(ctx context.Context, q *sqlast.Query, mode queryMode, sink core.RowSink) (_ *core.Result, again queryMode, _ error) {
	sess := e.Session(ctx)
	sess.cached = mode >= queryCached
	sess.speculate = mode == querySpeculative
	sess.noMeta = !ReadsChangeColumns(q)
	defer sess.Close()
	stale := func(err error) queryMode {
		if sess.staleCache(err) {
			return queryFresh
		}
		return 0
	}
	text, err := sess.Translate(q)
	if err != nil {
		return nil, stale(err), err
	}
	if len(sess.streams) > 0 {
		// Changes are read through the primary index, a few granules per
		// commit: small reads, which ClickHouse serves faster from its
		// cache of decompressed blocks (a read of more than
		// merge_tree_max_rows_to_use_cache rows bypasses it).
		ctx = chstore.WithSettings(ctx, clickhouse.Settings{"use_uncompressed_cache": 1})
	}
	col := newCollector(e.Cfg.Limits.WithDefaults().MaxResultBytes, sink)
	if len(sess.unchecked) == 0 {
		col.Release()
		if err := collect(ctx, e.St, text, col); err != nil {
			if col.started {
				return nil, 0, core.QueryError(err) // rows went out: not again
			}
			return nil, stale(err), core.QueryError(err)
		}
		// Every value used was checked after sess.token was read (no
		// commits came from the cache unchecked).
		if sess.token != "" {
			e.Fresh.Record(sess.token, sess.checked)
		}
		res, err := col.result()
		return res, 0, err
	}
	// The rows are held until the check below holds, then written out.
	qctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var qerr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		qerr = collect(qctx, e.St, text, col)
	}()
	// The parts token is read before the full check, so that the values
	// the check finds current are current at that token (see freshness).
	token, terr := "", changes.ErrTokenSkipped
	if e.Fresh.WorthReading() {
		token, terr = e.PartsToken(ctx)
	}
	if terr != nil || !e.Fresh.Holds(token, sess.used) {
		same, err := sess.checkCommits(ctx)
		if err != nil || !same {
			cancel()
			<-done
			if err != nil {
				return nil, stale(err), err
			}
			return nil, queryCached, nil // new commits: translate again
		}
		// The check covered the catalog entries and the cached commits;
		// commits the translation read itself (sess.tokenRead) were
		// checked before the token was read, so nothing is recorded then.
		if terr == nil && !sess.tokenRead {
			e.Fresh.Record(token, sess.used)
		}
	}
	col.Release()
	<-done
	if qerr != nil {
		return nil, 0, core.QueryError(qerr)
	}
	res, err := col.result()
	return res, 0, err
}

// UniqueOutputNames renames the SELECT items of an INSERT's query whose
// output names repeat (SELECT a, a …): the rows are wrapped in a subquery
// to add the commit id, and a subquery keeps one column per name.
func UniqueOutputNames(q *sqlast.Query) {
	var walk func(b sqlast.SetExpr)
	walk = func(b sqlast.SetExpr) {
		switch x := b.(type) {
		case *sqlast.Query:
			walk(x.Body)
		case *sqlast.SetOp:
			walk(x.Left)
			walk(x.Right)
		case *sqlast.Select:
			seen := map[string]int{}
			name := func(it sqlast.SelectItem) string {
				switch {
				case it.Alias != "":
					return strings.ToLower(it.Alias)
				case it.Star:
					return ""
				}
				if c, ok := it.Expr.(*sqlast.ColumnRef); ok {
					return strings.ToLower(c.Parts[len(c.Parts)-1])
				}
				return strings.ToLower(sqlast.FormatExpr(it.Expr))
			}
			for _, it := range x.Items {
				if n := name(it); n != "" {
					seen[n]++
				}
			}
			for i, it := range x.Items {
				if n := name(it); n != "" && seen[n] > 1 {
					x.Items[i].Alias = fmt.Sprintf("__lp_c%d", i)
				}
			}
		}
	}
	walk(q.Body)
}

// DirectoryBlock is how many listed objects a directory refresh inserts
// at a time: the listing and the rows in memory stay a page and a block
// (a few MB) however large the volume. A variable for tests.
var DirectoryBlock = 50_000

// RefreshDirectory lists the volume and stores a new directory snapshot,
// page by page, in blocks of DirectoryBlock. The snapshot shows once the
// caller points the volume's spec at the returned id; a refresh that
// fails half-way leaves rows under an id nothing names, which the next
// refresh removes with the older snapshots.
func (e *Runner) RefreshDirectory(ctx context.Context, schema, name string, vol *objstore.Volume) (uint64, error) {
	id := uint64(time.Now().UnixNano())
	key := e.VolumeKey(schema, name)
	cols := []string{"volume", "refresh_id", "relative_path", "size", "last_modified_time", "etag"}
	rows := make([][]any, 0, objstore.PageSize)
	flush := func() error {
		if err := e.St.InsertRows(ctx, "lakepipe", "directory", cols, rows); err != nil {
			return err
		}
		rows = rows[:0]
		return nil
	}
	err := vol.ListPages(ctx, "", "", func(page []objstore.Object) error {
		for _, o := range page {
			rows = append(rows, []any{key, id, o.Path, uint64(o.Size), o.Modified, o.ETag})
		}
		if len(rows) >= DirectoryBlock {
			return flush()
		}
		return nil
	})
	if err == nil {
		err = flush()
	}
	if err != nil {
		return 0, fmt.Errorf("refresh volume %s: %w", name, err)
	}
	return id, nil
}

// directorySource renders DIRECTORY(VOLUME v) as a subquery over the
// newest snapshot, refreshing first when the volume refreshes by itself.
func (e *Runner) directorySource(ctx context.Context, name string) (string, error) {
	vol, spec, err := e.Volume(ctx, name)
	if err != nil {
		return "", err
	}
	if !spec.DirectoryEnable {
		return "", fmt.Errorf("volume %s has no directory: create it with DIRECTORY = (ENABLE = TRUE)", name)
	}
	if spec.AutoRefresh {
		if spec.RefreshID, err = e.RefreshDirectory(ctx, e.Cfg.Schema, name, vol); err != nil {
			return "", err
		}
		spec.RefreshedAt = time.Now().UTC()
		if err := e.Cat.Put(ctx, catalog.KindVolume, e.Cfg.Schema, name, spec, ""); err != nil {
			return "", err
		}
	}
	return "(SELECT relative_path, size, last_modified_time FROM lakepipe.directory WHERE volume = " +
		chsql.QuoteString(e.VolumeKey(e.Cfg.Schema, name)) + fmt.Sprintf(" AND refresh_id = %d)", spec.RefreshID), nil
}

// Runner translates and runs queries over lakepipe's sources: tables,
// table streams, volumes, directories and load_history.
type Runner struct {
	fileread.Reader
}
