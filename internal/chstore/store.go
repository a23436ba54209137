// Package chstore is lakepipe's one connection to ClickHouse (native
// protocol): statements, queries with generic results, and column-oriented
// batch inserts. It works with ClickHouse 18.16 and current releases.
package chstore

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"maps"
	"net"
	"reflect"
	"strings"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/lakepipe/lakepipe/internal/chsql"
)

// Config says where ClickHouse is. Password is never printed.
type Config struct {
	Addr     string // host:port of the native protocol
	User     string
	Password string
	Database string
	// TLS, when set, encrypts every connection (the server's secure native
	// port, 9440 by default).
	TLS *tls.Config
	// Cluster, when set, names a cluster of the server's remote_servers:
	// lakepipe then keeps each table as a MergeTree table on every node
	// behind a Distributed table (see cluster.go). Addr is the node lakepipe
	// talks to; its catalog lives there.
	Cluster string
	// Replicated says the cluster's servers share a Keeper/ZooKeeper:
	// tables are then ReplicatedMergeTree, DDL goes ON CLUSTER, and the
	// catalog is replicated to every node (see cluster.go).
	Replicated bool
	// MaxPartitionsPerInsert is how many partitions one INSERT block may
	// write, on servers that bound it (max_partitions_per_insert_block,
	// ClickHouse 19.5 and later, 100 by default; 18.16 has no such bound).
	// 0: DefaultMaxPartitionsPerInsert.
	MaxPartitionsPerInsert int
}

// DefaultMaxPartitionsPerInsert lets a file of a year of daily partitions
// load in one INSERT, where ClickHouse's own 100 fails it; ClickHouse
// advises fewer than 1,000 to 10,000 partitions in a whole table.
const DefaultMaxPartitionsPerInsert = 10_000

// Store is a pool of native connections; safe for concurrent use.
type Store struct {
	conn  driver.Conn
	cfg   Config
	nodes []node // cluster mode: every node of the cluster
	// nodeSettings are the settings of the nodes' connections.
	nodeSettings clickhouse.Settings
}

// laterSettings are the settings lakepipe needs on ClickHouse releases
// after 18.16, which does not have them:
//   - max_partitions_per_insert_block: current releases refuse an INSERT
//     block whose rows fall in more than 100 partitions, failing a whole
//     file of a year of daily partitions;
//   - allow_nondeterministic_mutations: they refuse a mutation of a
//     replicated table whose condition holds a subquery (a keyed table's
//     delete of replaced keys, a DELETE … WHERE id IN (SELECT …)).
func laterSettings(cfg Config) clickhouse.Settings {
	return clickhouse.Settings{
		"max_partitions_per_insert_block":  cmp.Or(cfg.MaxPartitionsPerInsert, DefaultMaxPartitionsPerInsert),
		"allow_nondeterministic_mutations": 1,
	}
}

// knownSettings returns those of want that the server has.
func knownSettings(ctx context.Context, conn driver.Conn, want clickhouse.Settings) (clickhouse.Settings, error) {
	names := make([]string, 0, len(want))
	for n := range want {
		names = append(names, "'"+n+"'")
	}
	out := clickhouse.Settings{}
	err := each(ctx, conn, "SELECT name FROM system.settings WHERE name IN ("+strings.Join(names, ", ")+")", func(_, _ []string) error { return nil }, func(row []any) error {
		n := row[0].(string)
		out[n] = want[n]
		return nil
	})
	return out, err
}

// Open connects and checks that the server answers.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	if cfg.User == "" {
		cfg.User = "default"
	}
	if cfg.Database == "" {
		cfg.Database = "default"
	}
	if cfg.Replicated && cfg.Cluster == "" {
		return nil, errors.New("replicated mode needs a cluster (LAKEPIPE_CLICKHOUSE_CLUSTER)")
	}
	// In cluster mode an insert into a Distributed table returns once every
	// shard has its rows, so a load is visible, and countable, when it
	// returns. With replicas, each shard's rows go to one replica and reach
	// the others by replication: reads through the entry server's own
	// replica (prefer_localhost_replica, ClickHouse's default) see them at
	// once; see docs/scaling.md. (insert_quorum would wait for all
	// replicas, but 18.16 does not mutate a shard's last quorum-inserted
	// part, which stalls the clean-up of a dead load.)
	var settings clickhouse.Settings
	if cfg.Cluster != "" {
		settings = clickhouse.Settings{"insert_distributed_sync": 1}
	}
	if cfg.Replicated {
		// A retried load deletes the rows of the attempt it replaces and
		// inserts the same blocks again: ReplicatedMergeTree would take
		// them for the earlier ones (it keeps block hashes after the
		// delete) and drop them without a word. Loads are made exactly
		// once by their commit ids, never by this deduplication.
		settings["insert_deduplicate"] = 0
	}
	conn, err := dial(ctx, cfg, cfg.Addr, settings)
	if err != nil {
		return nil, err
	}
	// Settings of releases after 18.16, set only where the server has
	// them: 18.16 refuses a setting it does not know.
	node, err := knownSettings(ctx, conn, laterSettings(cfg))
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("clickhouse %s: read its settings: %w", cfg.Addr, scrub(err, cfg.Password))
	}
	if len(node) > 0 {
		conn.Close()
		settings = maps.Clone(settings)
		if settings == nil {
			settings = clickhouse.Settings{}
		}
		maps.Copy(settings, node)
		if conn, err = dial(ctx, cfg, cfg.Addr, settings); err != nil {
			return nil, err
		}
	}
	s := &Store{conn: conn, cfg: cfg, nodeSettings: node}
	if cfg.Cluster != "" {
		if err := s.openNodes(ctx); err != nil {
			s.Close()
			return nil, err
		}
	}
	return s, nil
}

// SessionSettings are set on every connection, whatever the server's
// profiles say, because lakepipe's SQL depends on their defaults: an
// aggregate without GROUP BY over no rows gives one row. A summary's state
// INSERT writes the version it brings the state to as such a row (its
// marker), and the checks of a refresh's window read are columns of one;
// a profile with empty_result_for_aggregation_by_empty_set = 1 would let
// a refresh write its groups without their version, and the next refresh
// add the same rows again.
//
// max_query_size: lookups name the keys they read (a pipe's listing page
// of 1,000 object keys in load_history, a COPY's files), and S3 keys go up
// to 1,024 bytes: ClickHouse's default of 256 KiB refused a page of
// 1,000 keys of 300 bytes, and the pipe failed every turn.
// MaxQuerySize holds a page of the longest keys, each quoted.
var SessionSettings = clickhouse.Settings{"empty_result_for_aggregation_by_empty_set": 0, "max_query_size": MaxQuerySize}

// MaxQuerySize is the longest query text lakepipe sends (see
// SessionSettings): 1,000 keys of 1,024 bytes, each escaped to at most
// twice its length, fit four times over.
const MaxQuerySize = 8 << 20

// dial opens a pool to one server and checks that it answers.
func dial(ctx context.Context, cfg Config, addr string, settings clickhouse.Settings) (driver.Conn, error) {
	all := maps.Clone(SessionSettings)
	maps.Copy(all, settings)
	conn, err := clickhouse.Open(&clickhouse.Options{
		Addr:        []string{addr},
		Auth:        clickhouse.Auth{Database: cfg.Database, Username: cfg.User, Password: cfg.Password},
		DialContext: dialer(cfg.TLS),
		Settings:    all,
		// Inserts of big files are streamed as many blocks; a generous
		// timeout keeps slow disks from failing a load.
		ReadTimeout:     10 * time.Minute,
		DialTimeout:     5 * time.Second,
		MaxOpenConns:    16,
		MaxIdleConns:    4,
		ConnMaxLifetime: time.Hour,
		// A connection keeps its buffers at the largest block it sent
		// (16 MiB and more for a file's INSERT, the whole block of a
		// large InsertRows): freed when it goes back to the pool, idle
		// connections hold none, however large the loads before them.
		FreeBufOnConnRelease: true,
	})
	if err != nil {
		return nil, fmt.Errorf("clickhouse %s: %w", addr, scrub(err, cfg.Password))
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := conn.Ping(pctx); err != nil {
		conn.Close()
		return nil, fmt.Errorf("clickhouse at %s does not answer (is it running? `./task up` starts the local stack): %w", addr, scrub(err, cfg.Password))
	}
	return conn, nil
}

// dialer opens the driver's connections with SO_LINGER 0: closing one
// resets it. A connection closed in the middle of an INSERT (an attempt
// that lost its lease walking away: ErrFenced) then makes ClickHouse drop
// the rows it had not written yet; after an orderly close (FIN) it writes
// them as if the INSERT had ended (both measured on 18.16). Connections
// are only closed when idle or failed otherwise, where a reset loses
// nothing.
func dialer(tlsCfg *tls.Config) func(ctx context.Context, addr string) (net.Conn, error) {
	return func(ctx context.Context, addr string) (net.Conn, error) {
		d := net.Dialer{Timeout: 5 * time.Second}
		c, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return nil, err
		}
		_ = c.(*net.TCPConn).SetLinger(0)
		if tlsCfg == nil {
			return c, nil
		}
		cfg := tlsCfg.Clone()
		if cfg.ServerName == "" {
			if host, _, err := net.SplitHostPort(addr); err == nil {
				cfg.ServerName = host
			}
		}
		tc := tls.Client(c, cfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			c.Close()
			return nil, err
		}
		return tc, nil
	}
}

// Close closes all connections.
func (s *Store) Close() error {
	for _, n := range s.nodes {
		n.conn.Close()
	}
	return s.conn.Close()
}

// Conn exposes the driver for batch inserts.
func (s *Store) Conn() driver.Conn { return s.conn }

// Exec runs a statement that returns no rows.
func (s *Store) Exec(ctx context.Context, query string, args ...any) error {
	if err := s.conn.Exec(ctx, query, args...); err != nil {
		return Error(err)
	}
	return nil
}

// Result is a whole query result with column names and ClickHouse types;
// Rows hold the values clickhouse-go scans (pointers dereferenced, nil for
// NULL).
type Result struct {
	Columns []string
	Types   []string
	Rows    [][]any
}

// Query runs a query and collects its whole result.
func (s *Store) Query(ctx context.Context, query string, args ...any) (*Result, error) {
	res := &Result{}
	err := s.Each(ctx, query, func(cols, types []string) error {
		res.Columns, res.Types = cols, types
		return nil
	}, func(row []any) error {
		res.Rows = append(res.Rows, append([]any(nil), row...))
		return nil
	}, args...)
	return res, err
}

// Each runs a query and streams its rows: header is called once with the
// column names and types, then row for each row (the slice is reused).
func (s *Store) Each(ctx context.Context, query string, header func(cols, types []string) error, row func([]any) error, args ...any) error {
	return each(ctx, s.conn, query, header, row, args...)
}

func each(ctx context.Context, conn driver.Conn, query string, header func(cols, types []string) error, row func([]any) error, args ...any) error {
	rows, err := conn.Query(ctx, query, args...)
	if err != nil {
		return Error(err)
	}
	defer rows.Close()
	cts := rows.ColumnTypes()
	cols := make([]string, len(cts))
	types := make([]string, len(cts))
	dest := make([]any, len(cts))
	for i, ct := range cts {
		cols[i] = ct.Name()
		types[i] = ct.DatabaseTypeName()
		dest[i] = reflect.New(ct.ScanType()).Interface()
	}
	if err := header(cols, types); err != nil {
		return err
	}
	vals := make([]any, len(cts))
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return Error(err)
		}
		for i, d := range dest {
			vals[i] = deref(reflect.ValueOf(d).Elem())
		}
		if err := row(vals); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return Error(err)
	}
	return nil
}

func deref(v reflect.Value) any {
	for v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return nil
		}
		v = v.Elem()
	}
	return v.Interface()
}

// Strings runs a query and returns its first column as strings.
func (s *Store) Strings(ctx context.Context, query string, args ...any) ([]string, error) {
	var out []string
	err := s.Each(ctx, query, func([]string, []string) error { return nil }, func(r []any) error {
		out = append(out, fmt.Sprint(r[0]))
		return nil
	}, args...)
	return out, err
}

// Exception is an error ClickHouse reported, reduced to its message.
type Exception struct {
	Code int32
	Msg  string
}

func (e *Exception) Error() string { return fmt.Sprintf("ClickHouse error %d: %s", e.Code, e.Msg) }

// Error turns a driver error into an Exception without the server's stack
// trace, or returns it unchanged.
func Error(err error) error {
	var ex *clickhouse.Exception
	if errors.As(err, &ex) {
		msg := ex.Message
		if i := strings.Index(msg, ", Stack trace"); i >= 0 {
			msg = msg[:i]
		}
		if i := strings.Index(msg, "\nStack trace"); i >= 0 {
			msg = msg[:i]
		}
		return &Exception{Code: ex.Code, Msg: strings.TrimSpace(msg)}
	}
	return err
}

// IsCode reports whether err is a ClickHouse exception with that code.
func IsCode(err error, code int32) bool {
	var ex *Exception
	return errors.As(err, &ex) && ex.Code == code
}

// Codes used by lakepipe.
const (
	CodeUnknownTable    = 60
	CodeIllegalColumn   = 44
	CodeTableExists     = 57
	CodeUnknownDatabase = 81
	// CodeThrowIf is throwIf's exception: lakepipe's catalog version
	// checks (catalog.VersionCheck) raise it.
	CodeThrowIf = 395
)

func scrub(err error, secret string) error {
	if secret == "" || err == nil || !strings.Contains(err.Error(), secret) {
		return err
	}
	return errors.New(strings.ReplaceAll(err.Error(), secret, "***"))
}

// InsertRows inserts a few rows given as Go values, one block. It is meant
// for bookkeeping (catalog, histories); files go through an Inserter.
func (s *Store) InsertRows(ctx context.Context, db, table string, cols []string, rows [][]any) error {
	if len(rows) == 0 {
		return nil
	}
	quoted := make([]string, len(cols))
	for i, c := range cols {
		quoted[i] = chsql.QuoteIdent(c)
	}
	batch, err := s.conn.PrepareBatch(ctx, "INSERT INTO "+chsql.Table(db, table)+" ("+strings.Join(quoted, ", ")+")")
	if err != nil {
		return Error(err)
	}
	for _, r := range rows {
		if err := batch.Append(r...); err != nil {
			_ = batch.Abort()
			return Error(err)
		}
	}
	if err := batch.Send(); err != nil {
		return Error(err)
	}
	return nil
}
