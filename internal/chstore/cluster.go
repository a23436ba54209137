package chstore

import (
	"context"
	"fmt"
	"strconv"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/lakepipe/lakepipe/internal/chsql"
)

// node is one server of the cluster, reached directly: DDL and mutations
// run on every node themselves, because ON CLUSTER needs a Keeper, which a
// cluster of plain MergeTree shards does not have.
type node struct {
	addr  string
	shard int
	conn  driver.Conn
}

// openNodes connects to every server of the configured cluster, as the
// entry server's system.clusters lists them.
func (s *Store) openNodes(ctx context.Context) error {
	res, err := s.Query(ctx, "SELECT shard_num, host_address, port, is_local FROM system.clusters WHERE cluster = "+chsql.QuoteString(s.cfg.Cluster)+" ORDER BY shard_num, replica_num")
	if err != nil {
		return fmt.Errorf("cluster %s: %w", s.cfg.Cluster, err)
	}
	if len(res.Rows) == 0 {
		return fmt.Errorf("cluster %s is not defined on the ClickHouse server at %s (see remote_servers in its configuration; deploy/local defines lakepipe_local)", s.cfg.Cluster, s.cfg.Addr)
	}
	local := false
	for _, r := range res.Rows {
		local = local || fmt.Sprint(r[3]) == "1"
	}
	if s.cfg.Replicated && !local {
		// Then a Distributed table sends every insert and read to a
		// replica picked at random, and a read right after a write may
		// miss it: lakepipe counts a load's rows once it is written.
		return fmt.Errorf("cluster %s: the ClickHouse server at %s does not see itself among its replicas (system.clusters.is_local is 0 on every row): name it in remote_servers by an address of its own and the tcp_port of its configuration files (a --tcp_port on the command line does not count); see docs/scaling.md", s.cfg.Cluster, s.cfg.Addr)
	}
	for _, r := range res.Rows {
		shard, _ := strconv.Atoi(fmt.Sprint(r[0]))
		addr := fmt.Sprintf("%v:%v", r[1], r[2])
		conn, err := dial(ctx, s.cfg, addr, s.nodeSettings)
		if err != nil {
			return fmt.Errorf("cluster %s, shard %d: %w", s.cfg.Cluster, shard, err)
		}
		s.nodes = append(s.nodes, node{addr: addr, shard: shard, conn: conn})
	}
	return nil
}

// LockNode is the store on the server every lakepipe process agrees on for
// locks (DDL that succeeds once): the server itself, or in cluster mode the
// first node of the cluster as system.clusters orders them, whatever node
// each process entered through.
func (s *Store) LockNode() *Store {
	if len(s.nodes) == 0 {
		return s
	}
	return &Store{conn: s.nodes[0].conn, cfg: s.cfg}
}

// Cluster is the configured cluster's name, "" on a single server.
func (s *Store) Cluster() string { return s.cfg.Cluster }

// Replicated reports whether the cluster's servers share a Keeper.
func (s *Store) Replicated() bool { return s.cfg.Replicated }

// ExecEverywhere runs a statement on every node of the cluster, in shard
// order, stopping at the first failure; on a single server it is Exec. The
// statements lakepipe sends this way are idempotent (IF NOT EXISTS, IF
// EXISTS), so a failed run can simply be repeated.
func (s *Store) ExecEverywhere(ctx context.Context, query string) error {
	if len(s.nodes) == 0 {
		return s.Exec(ctx, query)
	}
	for _, n := range s.nodes {
		if err := n.conn.Exec(ctx, query); err != nil {
			return fmt.Errorf("on %s (shard %d): %w", n.addr, n.shard, Error(err))
		}
	}
	return nil
}

// StringsEverywhere runs a query on every node and returns the first
// column of all their rows; on a single server it is Strings.
func (s *Store) StringsEverywhere(ctx context.Context, query string) ([]string, error) {
	if len(s.nodes) == 0 {
		return s.Strings(ctx, query)
	}
	var out []string
	for _, n := range s.nodes {
		err := each(ctx, n.conn, query, func([]string, []string) error { return nil }, func(r []any) error {
			out = append(out, fmt.Sprint(r[0]))
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("on %s (shard %d): %w", n.addr, n.shard, err)
		}
	}
	return out, nil
}
