//go:build integration

package integration

import (
	"fmt"
	"testing"
	"time"

	"github.com/lakepipe/lakepipe/internal/chsql"
)

// TestMaintainExpiresHistory checks that old one-shot load records expire
// while a live pipe's old records (its ledger) and recent records stay.
func TestMaintainExpiresHistory(t *testing.T) {
	s := newStack(t)
	s.withWorker()
	vol := s.volume("mvol", "in/", false)
	s.run(fmt.Sprintf(`CREATE TABLE mt (id BIGINT);
		CREATE PIPE mpipe INGEST_MODE = 'LIST' AS COPY INTO mt FROM VOLUME %s USING CSV;`, vol))
	table := s.Schema + ".mt"
	old := time.Now().Add(-30 * 24 * time.Hour).UTC()
	rows := [][]any{
		{table, "", "old-copy.csv", "", uint64(1), old, "LOADED", "", int64(0), uint64(1), uint64(0), "x", uint64(1)},
		{table, "mpipe", "old-pipe.csv", "", uint64(1), old, "LOADED", "", int64(0), uint64(1), uint64(0), "x", uint64(1)},
		{table, "", "new-copy.csv", "", uint64(1), time.Now().UTC(), "LOADED", "", int64(0), uint64(1), uint64(0), "x", uint64(1)},
	}
	if err := s.Store.InsertRows(s.Ctx, "lakepipe", "load_history", []string{"table_name", "pipe_name", "file_path", "etag", "file_size",
		"last_copy_time", "status", "first_error_message", "first_error_line", "rows_loaded", "rows_rejected", "load_id", "version"}, rows); err != nil {
		t.Fatal(err)
	}
	if err := s.Eng.Maintain(s.Ctx); err != nil {
		t.Fatal(err)
	}
	q := "SELECT file_path FROM lakepipe.load_history WHERE table_name = " + chsql.QuoteString(table) + " ORDER BY file_path"
	var got []string
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		got, _ = s.Store.Strings(s.Ctx, q)
		if len(got) == 2 {
			break
		}
	}
	if fmt.Sprint(got) != "[new-copy.csv old-pipe.csv]" {
		t.Fatalf("after maintenance: %v, want [new-copy.csv old-pipe.csv]", got)
	}
}
