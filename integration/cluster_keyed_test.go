//go:build integration

package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lakepipe/lakepipe/internal/chsql"
	"github.com/lakepipe/lakepipe/internal/chstore"
)

// keyedRows is "(id, 'v<round>')" for ids from..to.
func keyedRows(from, to, round int) string {
	var b strings.Builder
	for i := from; i <= to; i++ {
		if i > from {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "(%d, 'v%d')", i, round)
	}
	return b.String()
}

// TestClusterKeyedTable: on the sharded cluster a keyed table is sharded by
// its key (every version of a key on one shard), so that FINAL over the
// Distributed table shows one row per key; UPDATE, DELETE and MERGE INTO
// (its deletes refused there) work across shards. On the replicated
// cluster the shards are ReplicatedReplacingMergeTree.
func TestClusterKeyedTable(t *testing.T) {
	t.Run("sharded", func(t *testing.T) {
		s, shard2 := clusterStack(t)
		keyedOnCluster(t, s, []*chstore.Store{s.Store, shard2}, true)
		keyedLoadsOnCluster(t, s)
	})
	t.Run("replicated", func(t *testing.T) {
		s := newStack(t)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		s.Ctx = ctx
		s.useReplicated(ctx)
		keyedOnCluster(t, s, []*chstore.Store{s.Store}, false)
		engine, err := s.Store.Strings(ctx, "SELECT engine FROM system.tables WHERE database = "+chsql.QuoteString(s.Schema)+" AND name = 'users__lp_shard'")
		must(t, err)
		if len(engine) != 1 || engine[0] != "ReplicatedReplacingMergeTree" {
			t.Fatalf("shard engine %v, want ReplicatedReplacingMergeTree", engine)
		}
	})
}

func keyedOnCluster(t *testing.T, s *Stack, nodes []*chstore.Store, sharded bool) {
	s.run(`CREATE TABLE users (id BIGINT PRIMARY KEY, v STRING)`)
	for round := 1; round <= 3; round++ {
		s.run(`INSERT INTO users VALUES ` + keyedRows(1, 1000, round))
	}
	if n := s.pipeCount("users"); n != 1000 {
		t.Fatalf("count() = %d after three writes of 1,000 keys, want 1000", n)
	}
	wantRows(t, "the latest write wins", s.run(`SELECT v, COUNT(*) FROM users GROUP BY v`), "v3|1000")
	if sharded {
		// Every stored row of a key is on one shard.
		var ids []string
		for _, node := range nodes {
			got, err := node.Strings(s.Ctx, "SELECT toString(uniqExact(id)) FROM "+chsql.Table(s.Schema, "users__lp_shard"))
			must(t, err)
			ids = append(ids, got[0])
		}
		if ids[0] == "0" || ids[1] == "0" {
			t.Fatalf("keys per shard %v: want both shards used", ids)
		}
		if sum := atoi(t, ids[0]) + atoi(t, ids[1]); sum != 1000 {
			t.Fatalf("keys per shard %v add up to %d: a key is on two shards", ids, sum)
		}
	}
	s.run(`UPDATE users SET v = 'upd' WHERE id <= 10`)
	s.run(`DELETE FROM users WHERE id > 990`)
	s.run(`CREATE TABLE staging (id BIGINT, v STRING)`)
	s.run(`INSERT INTO staging VALUES (5, 'merged'), (2000, 'new')`)
	merged := s.run(`MERGE INTO users t USING staging s ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT VALUES (s.id, s.v)`)
	wantRows(t, "after UPDATE, DELETE and MERGE INTO ("+merged.Message+")", s.run(`SELECT v, COUNT(*) FROM users GROUP BY v ORDER BY v`), "merged|1", "new|1", "upd|9", "v3|980")
	if sharded {
		s.mustFail(`MERGE INTO users t USING staging s ON t.id = s.id WHEN MATCHED THEN DELETE`, "on a sharded cluster")
	}
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	var n int
	if _, err := fmt.Sscan(s, &n); err != nil {
		t.Fatal(err)
	}
	return n
}

// keyedLoadsOnCluster: loads and streaming writes into a keyed table on
// the sharded cluster are staged on the entry server and published through
// the Distributed table (package staging): a file that fails after
// thousands of rows replaces no key's row, and with change tracking a
// stream shows each overwrite as an update.
func keyedLoadsOnCluster(t *testing.T, s *Stack) {
	s.run(`CREATE TABLE kvc (id BIGINT PRIMARY KEY, v STRING) PROPERTIES ('change_tracking' = 'true')`)
	s.run(`INSERT INTO kvc VALUES (1, 'a'), (2, 'b')`)
	s.run(`CREATE TABLE STREAM kvc_changes ON TABLE kvc`)
	vol := s.volume("kvc_vol", "kvc", false)
	s.put("kvc/a.csv", []byte("1,a2\n3,c\n"))
	s.run(`COPY INTO kvc FROM VOLUME ` + vol + ` USING CSV FILES('a.csv')`)
	s.waitStream(`SELECT id, v, __change_type FROM kvc_changes`, "1|a|UPDATE_BEFORE", "1|a2|UPDATE_AFTER", "3|c|INSERT")
	s.run(`CREATE TABLE kvc_seen (id BIGINT, v STRING, change STRING)`)
	s.run(`INSERT INTO kvc_seen SELECT id, v, __change_type FROM kvc_changes`) // consumed

	// 300,000 rows over every key, then a bad one: the file fails, and no
	// key's row changed (blocks sent before the bad row stayed staged).
	var big strings.Builder
	for i := 1; i <= 300_000; i++ {
		fmt.Fprintf(&big, "%d,big\n", i)
	}
	big.WriteString("not-a-number,x\n")
	s.put("kvc/big.csv", []byte(big.String()))
	s.mustFail(`COPY INTO kvc FROM VOLUME `+vol+` USING CSV FILES('big.csv')`, "big.csv")
	wantRows(t, "after a failed file", s.run(`SELECT id, v FROM kvc ORDER BY id`), "1|a2", "2|b", "3|c")

	s.flushRows("kvc", []any{int64(2), "b2"}, []any{int64(4), "d"})
	s.waitStream(`SELECT id, v, __change_type FROM kvc_changes`, "2|b|UPDATE_BEFORE", "2|b2|UPDATE_AFTER", "4|d|INSERT")
	wantRows(t, "after a streaming write", s.run(`SELECT id, v FROM kvc ORDER BY id`), "1|a2", "2|b2", "3|c", "4|d")
}
