package engine

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/lakepipe/lakepipe/internal/catalog"
	"github.com/lakepipe/lakepipe/internal/changes"
	"github.com/lakepipe/lakepipe/internal/chsql"
	"github.com/lakepipe/lakepipe/internal/staging"
)

// Maintain expires what lakepipe keeps for a limited time; workers run it
// periodically, and running it twice is harmless.
//
//   - load_history() shows LoadHistoryDays of records. Past that, records of
//     one-shot COPY and of dropped pipes are deleted. A live pipe keeps its
//     records: they are its ledger of loaded paths, without which a LIST pipe
//     would load its kept files again once they age out.
//   - refresh history, pipes' job history (pipe_history()) and Kafka pipes'
//     committed positions are kept for the same period.
//   - the change logs of change-tracked tables keep data_retention_days
//     (default 7) of changes; table streams older than that become stale.
//   - the loads of change-tracked tables that a dropped Kafka pipe opened and
//     never finished are removed a day after their last attempt
//     (changes.SweepAbandoned), or registered when they cannot be taken
//     back (keyed tables, statements whose mutation was issued).
//   - the rows that refreshes of dynamic tables of rows took back are
//     removed from their states.
//   - dropped tables past their retention are purged.
//   - streaming-write sessions unused for StreamSessionIdleDays are closed.
func (e *Engine) Maintain(ctx context.Context) error {
	days := e.Cfg.LoadHistoryDays
	pipes, err := e.Cat.ListAll(ctx, catalog.KindPipe)
	if err != nil {
		return err
	}
	live := []string{chsql.QuoteString("")}
	for _, p := range pipes {
		live = append(live, chsql.QuoteString(p.Name))
	}
	// Records of a pipe name that is live in another schema survive too:
	// erring on keeping is safe.
	cond := fmt.Sprintf("last_copy_time < now() - %d AND (pipe_name = '' OR pipe_name NOT IN (%s))", days*86400, strings.Join(live[1:], ", "))
	if len(live) == 1 {
		cond = fmt.Sprintf("last_copy_time < now() - %d", days*86400)
	}
	if err := e.expire(ctx, "load_history", cond); err != nil {
		return err
	}
	if err := e.expire(ctx, "refresh_history", fmt.Sprintf("end_time < now() - %d", days*86400)); err != nil {
		return err
	}
	if err := e.expire(ctx, "pipe_history", fmt.Sprintf("end_time < now() - %d", days*86400)); err != nil {
		return err
	}
	// A Kafka pipe's committed position, once nothing has moved it for as
	// long: a retry comes within hours, and a workflow reset further back
	// than the load history is not guarded against.
	if err := e.expire(ctx, "kafka_positions", fmt.Sprintf("written_at < now() - %d", days*86400)); err != nil {
		return err
	}
	if err := e.TrimChangeLogs(ctx); err != nil {
		return err
	}
	if _, err := e.SweepAbandoned(ctx, changes.AbandonedAge); err != nil {
		return err
	}
	// Writer leases not renewed for twice that: the sweep has removed
	// their loads, and a lease that is gone reads as dead.
	if err := e.expire(ctx, "writer_leases", fmt.Sprintf("renewed_at < now() - %d", 2*int64(changes.AbandonedAge/time.Second))); err != nil {
		return err
	}
	// Issued mutations are read by the sweep of loads a day old: twice
	// that is past any it will look at.
	if err := e.expire(ctx, "issued_mutations", fmt.Sprintf("written_at < now() - %d", 2*int64(changes.AbandonedAge/time.Second))); err != nil {
		return err
	}
	if err := e.CompactStates(ctx); err != nil {
		return err
	}
	e.purgeTrash(ctx)
	if err := staging.DropStale(ctx, e.St); err != nil {
		return err
	}
	if err := e.SweepFlushRetries(ctx); err != nil {
		return err
	}
	return e.ExpireStreamSessions(ctx)
}

// expire deletes matching rows of a system table when there are any (a
// mutation rewrites parts, so it is not issued for nothing).
func (e *Engine) expire(ctx context.Context, table, cond string) error {
	n, err := e.St.Strings(ctx, "SELECT count() FROM lakepipe."+chsql.QuoteIdent(table)+" WHERE "+cond)
	if err != nil {
		return fmt.Errorf("expire %s: %w", table, err)
	}
	if len(n) == 1 && n[0] != "0" {
		if err := e.St.Exec(ctx, "ALTER TABLE lakepipe."+chsql.QuoteIdent(table)+" DELETE WHERE "+cond); err != nil {
			return fmt.Errorf("expire %s: %w", table, err)
		}
	}
	return nil
}
