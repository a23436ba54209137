// Package staging makes a load's rows show all at once: a load writes into a
// staging table shaped like its target, and its partitions are attached to
// the target only when the load is complete and kept.
package staging

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/lakepipe/lakepipe/internal/chsql"
	"github.com/lakepipe/lakepipe/internal/chstore"
	"github.com/lakepipe/lakepipe/internal/core"
	"github.com/lakepipe/lakepipe/schemas"
)

// A load streams into its table block by block, so without more care its
// first rows are visible while the rest is read: a file that then fails
// (too many bad rows), a Kafka batch over max_errors, or an attempt that
// dies, shows rows that are removed later — a dirty read. So such a load
// writes into a staging table shaped like the target (CREATE TABLE … AS),
// and its partitions are attached to the target (ATTACH PARTITION … FROM,
// a hard link of the parts) only when it is complete and kept. A reader
// sees a partition's rows all at once; a load over several partitions
// shows partition by partition, within a moment, and only rows that stay.
//
// Each attempt stages into a table of its own (random suffix): a dead
// attempt's staging table is never attached, and maintenance drops those
// older than maxAge (DropStale).
//
// On a cluster (sharded, or replicated), tables are Distributed over
// per-node tables, and a staging table would have to exist on each node:
// loads there stream straight into the table, and the window stays
// (docs/exactly-once.md). Except into keyed tables: a keyed write cannot
// be taken back (the rows it replaced may be merged away at once), so a
// failed load's rows must never reach one. Their loads stage into a table
// of the entry server (a ReplacingMergeTree ordered by the key) and are
// published by one INSERT … SELECT … FINAL through the Distributed table,
// which returns once every shard holds its rows (insert_distributed_sync).

// prefix starts the name of every staging table in TempDB.
const prefix = "stage_"

// maxAge is the age past which a staging table can only be a dead
// attempt's: above any attempt of CopyFiles or KafkaBatch.
const maxAge = 24 * time.Hour

// Stage is one attempt's staging table; a nil *Stage (on a cluster) loads
// straight into the target.
type Stage struct {
	st   *chstore.Store
	name string
	// local: a table of the entry server staging for a cluster's
	// Distributed table, published by INSERT … SELECT.
	local bool
}

// New makes the staging table of one load of target (target.Commit names
// the load), or returns nil on a cluster for a table without key (key:
// the keyed target's key columns, quoted, comma-separated; "" for none).
func New(ctx context.Context, st *chstore.Store, target core.LoadTarget, key string) (*Stage, error) {
	if st.Cluster() != "" && key == "" {
		return nil, nil
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	s := &Stage{st: st, name: fmt.Sprintf("%s%016x_%s", prefix, target.Commit, hex.EncodeToString(b[:]))}
	// 18.16 and current releases alike: AS copies columns, engine, keys.
	ddl := "CREATE TABLE " + s.table() + " AS " + chsql.Table(target.DB, target.Table)
	if st.Cluster() != "" {
		// The columns of the Distributed table, an engine of this server
		// that keeps, of a key staged twice, the row staged last.
		s.local = true
		ddl += " ENGINE = ReplacingMergeTree ORDER BY (" + key + ")"
	}
	if err := st.Exec(ctx, ddl); err != nil {
		return nil, fmt.Errorf("stage a load of %s: %w", target.Display, err)
	}
	return s, nil
}

func (s *Stage) table() string { return chsql.Table(schemas.TempDB, s.name) }

// Table is the staging table, quoted.
func (s *Stage) Table() string { return s.table() }

// Into is target with the staging table as where the rows go.
func (s *Stage) Into(target core.LoadTarget) core.LoadTarget {
	if s == nil {
		return target
	}
	target.DB, target.Table = schemas.TempDB, s.name
	return target
}

// Publish attaches every partition the staging table holds to target.
func (s *Stage) Publish(ctx context.Context, target core.LoadTarget) error {
	if s == nil {
		return nil
	}
	// A fenced attempt (its lease ended) must not publish.
	if err := ctx.Err(); err != nil {
		return err
	}
	if s.local {
		// FINAL: one row per key, the one a single server's attach
		// would keep. A publish cut short is retried by the load, whose
		// rows are the same.
		if err := s.st.Exec(ctx, "INSERT INTO "+chsql.Table(target.DB, target.Table)+" SELECT * FROM "+s.table()+" FINAL"); err != nil {
			return fmt.Errorf("publish a load of %s: %w", target.Display, err)
		}
		return nil
	}
	ids, err := s.st.Strings(ctx, fmt.Sprintf("SELECT DISTINCT partition_id FROM system.parts WHERE database = %s AND table = %s AND active",
		chsql.QuoteString(schemas.TempDB), chsql.QuoteString(s.name)))
	if err != nil {
		return fmt.Errorf("publish a load of %s: %w", target.Display, err)
	}
	for _, id := range ids {
		if err := s.st.Exec(ctx, fmt.Sprintf("ALTER TABLE %s ATTACH PARTITION ID %s FROM %s",
			chsql.Table(target.DB, target.Table), chsql.QuoteString(id), s.table())); err != nil {
			return fmt.Errorf("publish a load of %s (partition %s): %w", target.Display, id, err)
		}
	}
	return nil
}

// Drop removes the staging table; a failure leaves it to maintenance.
func (s *Stage) Drop(ctx context.Context) {
	if s == nil {
		return
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	_ = s.st.Exec(cctx, "DROP TABLE IF EXISTS "+s.table())
}

// DropStale drops staging tables of attempts that died.
func DropStale(ctx context.Context, st *chstore.Store) error {
	names, err := st.Strings(ctx, fmt.Sprintf("SELECT name FROM system.tables WHERE database = %s AND startsWith(name, %s) AND metadata_modification_time < now() - %d",
		chsql.QuoteString(schemas.TempDB), chsql.QuoteString(prefix), int64(maxAge/time.Second)))
	if err != nil {
		return fmt.Errorf("list staging tables: %w", err)
	}
	for _, n := range names {
		if err := st.Exec(ctx, "DROP TABLE IF EXISTS "+chsql.Table(schemas.TempDB, n)); err != nil {
			return fmt.Errorf("drop staging table %s: %w", n, err)
		}
	}
	return nil
}
