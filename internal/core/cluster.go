package core

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/lakepipe/lakepipe/internal/chsql"
	"github.com/lakepipe/lakepipe/internal/errtext"
	"github.com/lakepipe/lakepipe/schemas"
)

// In cluster mode (chstore.Config.Cluster) a lakepipe table t is two
// ClickHouse tables on every node: t__lp_shard, holding that node's share
// of the rows, and t, a Distributed table over all shards that every read
// and insert goes through. Inserts spread rows over the shards at random
// (rand() sharding) and return once all shards hold them
// (insert_distributed_sync), so loads stay exactly-once: a retried load
// counts and removes its commit's rows across all shards.
//
// Without a Keeper (the default) the shard tables are MergeTree, and DDL
// and mutations are sent by lakepipe to each node itself, because ON
// CLUSTER needs a Keeper. With one (chstore.Config.Replicated) they are
// ReplicatedMergeTree — each shard's replicas hold the same rows — and DDL
// and mutations go once, ON CLUSTER, for ClickHouse to run on every node.
const ShardSuffix = "__lp_shard"

// clustered reports whether tables are sharded over a cluster.
func (e *Core) clustered() bool { return e.St.Cluster() != "" }

// errClusterTracking is returned for what replicated cluster mode cannot
// do yet.
func (e *Core) ErrClusterTracking(what string) error {
	return fmt.Errorf("%s: change tracking is not available on a replicated cluster yet (cluster %s, LAKEPIPE_CLICKHOUSE_REPLICATED): use it on a single server or a cluster without a Keeper", what, e.St.Cluster())
}

// globalIn is the IN of a condition on a stored table whose subquery reads
// lakepipe's own tables: in cluster mode those are on the entry server
// only, so the subquery runs there and its result goes to the shards.
func (e *Core) GlobalIn() string {
	if e.clustered() {
		return " GLOBAL IN "
	}
	return " IN "
}

// GlobalNotIn is NOT IN as GlobalIn is IN.
func (e *Core) GlobalNotIn() string {
	if e.clustered() {
		return " GLOBAL NOT IN "
	}
	return " NOT IN "
}

// ddl runs a statement on every node: head is the statement up to where
// ON CLUSTER goes, tail the rest. On a single server it just runs.
func (e *Core) DDL(ctx context.Context, head, tail string) error {
	switch {
	case !e.clustered():
		return e.St.Exec(ctx, head+tail)
	case e.St.Replicated():
		return e.St.Exec(ctx, head+" ON CLUSTER "+chsql.QuoteIdent(e.St.Cluster())+tail)
	default:
		return e.St.ExecEverywhere(ctx, head+tail)
	}
}

// shardEngine is the engine clause of a shard table.
func (e *Core) shardEngine(db, table string, keyed bool) string {
	engine := "MergeTree"
	if keyed {
		engine = "ReplacingMergeTree"
	}
	if !e.St.Replicated() {
		return engine
	}
	// A path of its own for each table created: a dropped table's
	// replicas may still be in the trash under its old name.
	var b [6]byte
	_, _ = rand.Read(b[:])
	path := "/clickhouse/tables/{shard}/lakepipe/" + db + "/" + table + "_" + hex.EncodeToString(b[:])
	return "Replicated" + engine + "(" + chsql.QuoteString(path) + ", '{replica}')"
}

// createStoredTable creates table db.name with the given column list and
// MergeTree clauses (PARTITION BY, ORDER BY), sharded in cluster mode. A
// keyed table (key names its primary key columns, quoted) is a
// ReplacingMergeTree, sharded by its key so that every write of a key meets
// the others on one shard.
func (e *Core) CreateStoredTable(ctx context.Context, db, name, columns, clauses string, key []string) error {
	if err := e.DDL(ctx, "CREATE DATABASE IF NOT EXISTS "+chsql.QuoteIdent(db), ""); err != nil {
		return fmt.Errorf("create schema %s: %w", db, err)
	}
	if !e.clustered() {
		return e.St.Exec(ctx, "CREATE TABLE IF NOT EXISTS "+chsql.Table(db, name)+" ("+columns+") ENGINE = "+e.shardEngine(db, name, key != nil)+clauses)
	}
	shard := name + ShardSuffix
	if err := e.DDL(ctx, "CREATE TABLE IF NOT EXISTS "+chsql.Table(db, shard), " ("+columns+") ENGINE = "+e.shardEngine(db, shard, key != nil)+clauses); err != nil {
		return err
	}
	sharding := "rand()"
	if key != nil {
		sharding = "cityHash64(" + strings.Join(key, ", ") + ")"
	}
	return e.DDL(ctx, "CREATE TABLE IF NOT EXISTS "+chsql.Table(db, name), " AS "+chsql.Table(db, shard)+
		" ENGINE = Distributed("+chsql.QuoteString(e.St.Cluster())+", "+chsql.QuoteString(db)+", "+chsql.QuoteString(shard)+", "+sharding+")")
}

// alterColumns runs ALTER TABLE … ADD/DROP COLUMN on a stored table (its
// shards first, then the Distributed table over them).
func (e *Core) AlterColumns(ctx context.Context, db, name, clause string) error {
	if !e.clustered() {
		return e.St.Exec(ctx, "ALTER TABLE "+chsql.Table(db, name)+" "+clause)
	}
	if err := e.DDL(ctx, "ALTER TABLE "+chsql.Table(db, name+ShardSuffix), " "+clause); err != nil {
		return err
	}
	// ClickHouse refuses ALTER … ON CLUSTER of a Distributed table over
	// replicated shards: each node's is altered directly.
	return e.St.ExecEverywhere(ctx, "ALTER TABLE "+chsql.Table(db, name)+" "+clause)
}

// renameStoredTable moves a stored table (both its tables in cluster mode).
func (e *Core) RenameStoredTable(ctx context.Context, fromDB, from, toDB, to string) error {
	q := "RENAME TABLE " + chsql.Table(fromDB, from) + " TO " + chsql.Table(toDB, to)
	if !e.clustered() {
		return e.St.Exec(ctx, q)
	}
	// The catalog's databases (the trash) may exist on the entry node only.
	if err := e.DDL(ctx, "CREATE DATABASE IF NOT EXISTS "+chsql.QuoteIdent(toDB), ""); err != nil {
		return err
	}
	return e.DDL(ctx, q+", "+chsql.Table(fromDB, from+ShardSuffix)+" TO "+chsql.Table(toDB, to+ShardSuffix), "")
}

// dropStoredTable drops a stored table if it exists.
func (e *Core) DropStoredTable(ctx context.Context, db, name string) error {
	if err := e.DDL(ctx, "DROP TABLE IF EXISTS "+chsql.Table(db, name), ""); err != nil {
		return err
	}
	if !e.clustered() {
		return nil
	}
	return e.DDL(ctx, "DROP TABLE IF EXISTS "+chsql.Table(db, name+ShardSuffix), "")
}

// truncateStoredTable removes every row of a stored table.
func (e *Core) TruncateStoredTable(ctx context.Context, db, name string) error {
	if !e.clustered() {
		return e.St.Exec(ctx, "TRUNCATE TABLE "+chsql.Table(db, name))
	}
	return e.DDL(ctx, "TRUNCATE TABLE "+chsql.Table(db, name+ShardSuffix), "")
}

// sharded reports whether db.name is a stored table sharded over the
// cluster; lakepipe's own tables (change logs, histories) never are.
func (e *Core) Sharded(db string) bool {
	return e.clustered() && db != schemas.ChangesDB && db != schemas.SystemDB
}

// waitMutations waits until no mutation of db.table is pending on any
// node. 18.16 cannot tell a failing mutation from a slow one (no
// latest_fail_reason); one still not done after the deadline is reported
// instead of waited for forever.
// oldestMutation describes the table's oldest unfinished mutation: the one
// the others wait behind, as ClickHouse applies them in order.
func (e *Core) oldestMutation(ctx context.Context, db, table string) string {
	m, err := e.St.Strings(ctx, "SELECT concat(mutation_id, ': ', command) FROM system.mutations WHERE database = "+chsql.QuoteString(db)+
		" AND table = "+chsql.QuoteString(table)+" AND is_done = 0 ORDER BY create_time LIMIT 1")
	if err != nil || len(m) == 0 {
		return ""
	}
	return fmt.Sprintf("; the oldest unfinished mutation of the table is %s: ClickHouse applies a table's mutations in order, so a mutation that fails (see system.mutations; ClickHouse 19 and later show latest_fail_reason and can KILL MUTATION) holds back every later one, this one included", errtext.Cap(m[0], errtext.MaxValue))
}

func (e *Core) WaitMutations(ctx context.Context, db, table, what, display string) error {
	deadline := time.Now().Add(10 * time.Minute)
	q := "SELECT count() FROM system.mutations WHERE database = " + chsql.QuoteString(db) + " AND table = " + chsql.QuoteString(table) + " AND is_done = 0"
	for {
		if time.Now().After(deadline) {
			return fmt.Errorf("%s %s: ClickHouse has not finished the mutation after 10 minutes%s", what, display, e.oldestMutation(ctx, db, table))
		}
		n, err := e.St.StringsEverywhere(ctx, q)
		if err != nil {
			return err
		}
		pending := false
		for _, v := range n {
			pending = pending || v != "0"
		}
		if !pending {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}
