//go:build integration

package integration

import (
	"strings"
	"testing"
	"time"
)

// TestResultBound: a query whose result would take more than
// LAKEPIPE_MAX_RESULT_BYTES in the process that asked fails, naming the
// setting and what to do instead, rather than taking the process's
// memory; a query under it, and the same rows counted or limited, answer.
func TestResultBound(t *testing.T) {
	s := newStack(t)
	s.run(`CREATE TABLE wide (id BIGINT, note STRING)`)
	rows := make([][]any, 20000)
	note := strings.Repeat("n", 100)
	for i := range rows {
		rows[i] = []any{int64(i), note}
	}
	// Written straight into ClickHouse: the rows matter, not how they came.
	must(t, s.Store.InsertRows(s.Ctx, s.Schema, "wide", []string{"id", "note"}, rows))
	env := []string{"LAKEPIPE_SCHEMA=" + s.Schema, "LAKEPIPE_CLICKHOUSE_ADDR=" + chAddr, "LAKEPIPE_MAX_RESULT_BYTES=1MiB"}
	sql := func(stmt string) cliResult { return cli(t, t.TempDir(), env, "", "sql", "--format", "csv", "-e", stmt) }
	start := time.Now()
	res := sql(`SELECT id, note FROM wide`)
	t.Logf("20,000 rows of ~150 bytes under 1 MiB: exit %d in %v, stderr %s", res.Code, time.Since(start).Round(time.Millisecond), strings.TrimSpace(res.Stderr))
	for _, want := range []string{"the query's result", "takes more memory in this process than allowed, over the limit of 1 MiB", "LAKEPIPE_MAX_RESULT_BYTES", "LIMIT", "COPY INTO VOLUME"} {
		if res.Code == 0 || !strings.Contains(res.Stderr, want) {
			t.Fatalf("a result over the bound: exit %d, stderr %q, want an error with %q", res.Code, res.Stderr, want)
		}
	}
	if res := sql(`SELECT id, note FROM wide ORDER BY id LIMIT 1000`); res.Code != 0 || strings.Count(res.Stdout, "\n") < 1000 {
		t.Fatalf("1,000 rows under the bound: exit %d, %d lines, stderr %q", res.Code, strings.Count(res.Stdout, "\n"), res.Stderr)
	}
	if res := sql(`SELECT COUNT(*), SUM(id) FROM wide`); res.Code != 0 || !strings.Contains(res.Stdout, "20000,199990000") {
		t.Fatalf("the rows aggregated: exit %d, stdout %q, stderr %q", res.Code, res.Stdout, res.Stderr)
	}
}
