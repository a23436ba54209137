//go:build integration

package integration

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/lakepipe/lakepipe/internal/chsql"
	"github.com/lakepipe/lakepipe/internal/formats"
)

// TestInserterAbortThenDelete: blocks an aborted Inserter had already sent
// are all written by the time Abort returns, even when the caller's context
// ended first, so that deleting its commit right after leaves nothing
// (before, the server could write the last block after the delete, and a
// refused flush showed up later).
func TestInserterAbortThenDelete(t *testing.T) {
	st, _, err := openCatalog()
	if err != nil {
		t.Skipf("ClickHouse is not reachable: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	db := "inserter_" + randID(5)
	must(t, st.Exec(ctx, "CREATE DATABASE "+chsql.QuoteIdent(db)))
	defer st.Exec(context.Background(), "DROP DATABASE IF EXISTS "+chsql.QuoteIdent(db))
	table := chsql.Table(db, "t")
	must(t, st.Exec(ctx, "CREATE TABLE "+table+" (id Int64, c UInt64) ENGINE = MergeTree ORDER BY c"))
	const rows = 100_000
	b := &formats.Batch{Rows: rows, Cols: []formats.Vector{{Text: make([][]byte, rows)}}}
	for i := range b.Cols[0].Text {
		b.Cols[0].Text[i] = []byte(strconv.Itoa(i))
	}
	for round := 1; round <= 8; round++ {
		// Even rounds abort the way a caller whose context ended does.
		ictx, icancel := context.WithCancel(ctx)
		in, err := st.NewInserter(ictx, db, "t", []formats.Column{{Name: "id", Type: "Int64"}}, "c", uint64(round))
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
