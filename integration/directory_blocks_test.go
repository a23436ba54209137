//go:build integration

package integration

import (
	"fmt"
	"strings"
	"testing"

	"github.com/lakepipe/lakepipe/internal/query"
)

// TestDirectoryRefreshInBlocks: a directory refresh lists the volume page
// by page and inserts its snapshot in blocks (query.DirectoryBlock), so
// that a volume of millions of objects costs a page and a block of
// memory. Blocks of 10 over 25 files: DIRECTORY lists every file once,
// and the next refresh replaces the snapshot whole.
func TestDirectoryRefreshInBlocks(t *testing.T) {
	s := newStack(t)
	defer func(n int) { query.DirectoryBlock = n }(query.DirectoryBlock)
	query.DirectoryBlock = 10
	s.putMany(25, func(i int) string { return fmt.Sprintf("blk/f%02d.csv", i) }, func(i int) []byte { return []byte(fmt.Sprintf("%d\n", i)) })
	s.volume("blk_vol", "blk", false)
	count := `SELECT COUNT(*), COUNT(DISTINCT relative_path) FROM DIRECTORY(VOLUME blk_vol)`
	wantRows(t, "the snapshot taken at CREATE", s.run(count), "25|25")
	s.put("blk/g.csv", []byte("x\n"))
	if res := s.run(`ALTER VOLUME blk_vol REFRESH`); !strings.Contains(res.Message, "26 files") {
		t.Fatalf("ALTER VOLUME REFRESH said %q, want 26 files", res.Message)
	}
	wantRows(t, "the refreshed snapshot", s.run(count), "26|26")
}

// TestStatementFilesBound: a COPY INTO or SELECT … FROM VOLUME keeps the
// files it selects in memory, so it reads at most
// LAKEPIPE_MAX_STATEMENT_FILES of them (10 here, over 25): more fail the
// statement with the setting and what to do named, before anything loads;
// a REGEXP or SUBDIRECTORY under the bound runs. The listing is filtered
// page by page: REGEXP keeps memory to what it selects.
func TestStatementFilesBound(t *testing.T) {
	s := newStack(t)
	s.putMany(25, func(i int) string { return fmt.Sprintf("many/f%02d.csv", i) }, func(i int) []byte { return []byte(fmt.Sprintf("%d\n", i)) })
	s.volume("many_vol", "many", false)
	s.run(`CREATE TABLE many_t (id INT)`)
	env := []string{"LAKEPIPE_SCHEMA=" + s.Schema, "LAKEPIPE_CLICKHOUSE_ADDR=" + chAddr, "LAKEPIPE_MAX_STATEMENT_FILES=10"}
	sql := func(stmt string) cliResult { return cli(t, t.TempDir(), env, "", "sql", "-e", stmt) }
	for _, stmt := range []string{
		`COPY INTO many_t FROM VOLUME many_vol USING CSV`,
		`SELECT COUNT(*) FROM VOLUME many_vol USING CSV`,
	} {
		res := sql(stmt)
		t.Logf("%s: %s", stmt, strings.TrimSpace(res.Stderr))
		if res.Code == 0 || !strings.Contains(res.Stderr, "more files than one statement may read, over the limit of 10") || !strings.Contains(res.Stderr, "LAKEPIPE_MAX_STATEMENT_FILES") || !strings.Contains(res.Stderr, "REGEXP") {
			t.Errorf("%s over 25 files with a bound of 10: exit %d, stderr %q", stmt, res.Code, res.Stderr)
		}
	}
	wantRows(t, "nothing loaded", s.run(`SELECT COUNT(*) FROM many_t`), "0")
	if res := sql(`COPY INTO many_t FROM VOLUME many_vol USING CSV REGEXP '.*f0[0-9][.]csv$'`); res.Code != 0 {
		t.Fatalf("COPY of 10 files by REGEXP: exit %d, stderr %q", res.Code, res.Stderr)
	}
	wantRows(t, "the 10 files REGEXP chose", s.run(`SELECT COUNT(*), SUM(id) FROM many_t`), "10|45")
}
