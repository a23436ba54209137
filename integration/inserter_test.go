//go:build integration

package integration

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"

	"github.com/lakepipe/lakepipe/internal/chsql"
	"github.com/lakepipe/lakepipe/internal/chstore"
	"github.com/lakepipe/lakepipe/internal/rowio"
)

// inserterTable makes a table (id Int64, c UInt64) in a database of its
// own, dropped at the end, and a batch of 100,000 ids for it.
func inserterTable(t *testing.T) (*chstore.Store, context.Context, string, string, *rowio.Batch) {
	t.Helper()
	st, _, err := openCatalog()
	if err != nil {
		t.Skipf("ClickHouse is not reachable: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	db := "inserter_" + randID(5)
	must(t, st.Exec(ctx, "CREATE DATABASE "+chsql.QuoteIdent(db)))
	t.Cleanup(func() { st.Exec(context.Background(), "DROP DATABASE IF EXISTS "+chsql.QuoteIdent(db)) })
	table := chsql.Table(db, "t")
	must(t, st.Exec(ctx, "CREATE TABLE "+table+" (id Int64, c UInt64) ENGINE = MergeTree ORDER BY c"))
	const rows = 100_000
	b := &rowio.Batch{Rows: rows, Cols: []rowio.Vector{{Text: make([][]byte, rows)}}}
	for i := range b.Cols[0].Text {
		b.Cols[0].Text[i] = []byte(strconv.Itoa(i))
	}
	return st, ctx, db, table, b
}

// TestInserterAbortThenDelete: blocks an aborted Inserter had already sent
// are all written by the time Abort returns, even when the caller's context
// ended first, so that deleting its commit right after leaves nothing
// (before, the server could write the last block after the delete, and a
// refused flush showed up later).
func TestInserterAbortThenDelete(t *testing.T) {
	st, ctx, db, table, b := inserterTable(t)
	for round := 1; round <= 8; round++ {
		// Even rounds abort the way a caller whose context ended does.
		ictx, icancel := context.WithCancel(ctx)
		in, err := st.NewInserter(ictx, db, "t", []rowio.Column{{Name: "id", Type: "Int64"}}, "c", uint64(round))
		must(t, err)
		in.BlockRows = 50_000
		for i := 0; i < 3; i++ {
			if _, err := in.Add(b, []int{0}); err != nil {
				t.Fatal(err)
			}
		}
		if round%2 == 0 {
			icancel()
		}
		in.Abort()
		icancel()
		must(t, st.Exec(ctx, fmt.Sprintf("ALTER TABLE %s DELETE WHERE c = %d", table, round)))
		for {
			n, err := st.Strings(ctx, "SELECT count() FROM system.mutations WHERE database = "+chsql.QuoteString(db)+" AND NOT is_done")
			must(t, err)
			if n[0] == "0" {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		time.Sleep(100 * time.Millisecond) // a straggling block would land by now
		if n, err := st.Strings(ctx, fmt.Sprintf("SELECT count() FROM %s WHERE c = %d", table, round)); err != nil || n[0] != "0" {
			t.Fatalf("round %d: %v rows of the aborted insert after deleting its commit (%v)", round, n, err)
		}
	}
}

// TestOneBlock: an INSERT … SELECT under chstore.OneBlock writes all its
// rows as one part, however many blocks the SELECT gives (incremental
// refreshes rely on it: their INSERT is their commit); without it, the same
// INSERT writes several parts, which readers could see one by one. Its
// settings add to those already on the context.
func TestOneBlock(t *testing.T) {
	st, _, err := openCatalog()
	if err != nil {
		t.Skipf("ClickHouse is not reachable: %v", err)
	}
	ctx := context.Background()
	db := "oneblock_" + randID(5)
	must(t, st.Exec(ctx, "CREATE DATABASE "+chsql.QuoteIdent(db)))
	defer st.Exec(context.Background(), "DROP DATABASE IF EXISTS "+chsql.QuoteIdent(db))
	parts := func(table string) string {
		n, err := st.Strings(ctx, "SELECT count() FROM system.parts WHERE active AND database = "+chsql.QuoteString(db)+" AND table = "+chsql.QuoteString(table))
		must(t, err)
		return n[0]
	}
	const rows = 3_000_000 // > min_insert_block_size_rows (1,048,576)
	for _, c := range []struct {
		table string
		ctx   context.Context
		one   bool
	}{
		{"plain", ctx, false},
		{"one", chstore.OneBlock(chstore.WithSettings(ctx, clickhouse.Settings{"log_queries": 1})), true},
	} {
		table := chsql.Table(db, c.table)
		must(t, st.Exec(ctx, "CREATE TABLE "+table+" (k UInt64) ENGINE = MergeTree ORDER BY k"))
		must(t, st.Exec(ctx, "SYSTEM STOP MERGES "+table))
		must(t, st.Exec(c.ctx, fmt.Sprintf("INSERT INTO %s (k) SELECT number FROM numbers(%d)", table, rows)))
		if got := parts(c.table); (got == "1") != c.one {
			t.Fatalf("%s: %s parts", c.table, got)
		}
	}
	// log_queries, set before OneBlock, held for its INSERT.
	must(t, st.Exec(ctx, "SYSTEM FLUSH LOGS"))
	n, err := st.Strings(ctx, "SELECT count() FROM system.query_log WHERE type = 2 AND query LIKE "+chsql.QuoteString("INSERT INTO "+chsql.Table(db, "one")+"%"))
	must(t, err)
	if n[0] != "1" {
		t.Fatalf("the INSERT under OneBlock(WithSettings(log_queries)) is logged %s times, want 1", n[0])
	}
}

// TestInserterFencedWalksAway: an Inserter whose context ends with
// chstore.ErrFenced (its attempt lost its lease) abandons its INSERT, and
// ClickHouse drops the rows it had received but not written: nothing of
// the fenced attempt lands after it stopped. (Ending the INSERT, as a plain
// abort does, writes them.)
func TestInserterFencedWalksAway(t *testing.T) {
	st, ctx, db, table, b := inserterTable(t)
	for _, c := range []struct {
		commit uint64
		cause  error
		want   string
	}{{1, chstore.ErrFenced, "0"}, {2, context.Canceled, "300000"}} {
		ictx, icancel := context.WithCancelCause(ctx)
		in, err := st.NewInserter(ictx, db, "t", []rowio.Column{{Name: "id", Type: "Int64"}}, "c", c.commit)
		must(t, err)
		in.BlockRows = 50_000
		for i := 0; i < 3; i++ {
			if _, err := in.Add(b, []int{0}); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(500 * time.Millisecond) // the blocks reach the server
		icancel(c.cause)
		in.Abort()
		time.Sleep(time.Second) // a straggling block would land by now
		if n, err := st.Strings(ctx, fmt.Sprintf("SELECT count() FROM %s WHERE c = %d", table, c.commit)); err != nil || n[0] != c.want {
			t.Fatalf("ended with %v: %v rows of the aborted insert (%v), want %s", c.cause, n, err, c.want)
		}
	}
}

// TestInserterStringsReserved: the String and Nullable(String) columns an
// INSERT sizes from its first block (reserveStrings) hold exactly the rows
// sent, over blocks larger and smaller than the first, with NULLs in the
// first block and a later one.
func TestInserterStringsReserved(t *testing.T) {
	st, ctx, db, _, _ := inserterTable(t)
	table := chsql.Table(db, "s")
	must(t, st.Exec(ctx, "CREATE TABLE "+table+" (s String, n Nullable(String), c UInt64) ENGINE = MergeTree ORDER BY c"))
	in, err := st.NewInserter(ctx, db, "s", []rowio.Column{{Name: "s", Type: "String"}, {Name: "n", Type: "Nullable(String)"}}, "c", 1)
	must(t, err)
	in.BlockRows = 20_000
	want, wantLen := 0, 0
	for _, rows := range []int{20_000, 20_000, 5_000} {
		b := &rowio.Batch{Rows: rows, Cols: []rowio.Vector{{Text: make([][]byte, rows)}, {Text: make([][]byte, rows), Null: make([]bool, rows)}}}
		for i := range rows {
			v := []byte(fmt.Sprintf("value %d of %d, long enough to pass the reservation's floor", want+i, rows))
			b.Cols[0].Text[i], b.Cols[1].Text[i] = v, v
			wantLen += len(v)
			// NULLs in the first block too: its Nullable column is reserved
			// from pointers.
			b.Cols[1].Null[i] = (rows == 5_000 || want == 0) && i%2 == 0
		}
		want += rows
		if errs, err := in.Add(b, []int{0, 1}); err != nil || len(errs) > 0 {
			t.Fatal(err, errs)
		}
	}
	if n, err := in.Close(); err != nil || n != int64(want) {
		t.Fatalf("Close: %d rows, %v", n, err)
	}
	got, err := st.Strings(ctx, "SELECT toString(count()) || ' ' || toString(countIf(s = n)) || ' ' || toString(countIf(isNull(n))) || ' ' || toString(sum(length(s))) || ' ' || toString(countIf(s LIKE 'value % long enough to pass the reservation''s floor')) FROM "+table)
	must(t, err)
	if w := fmt.Sprintf("45000 32500 12500 %d 45000", wantLen); got[0] != w {
		t.Fatalf("got %q, want %q", got[0], w)
	}
}
