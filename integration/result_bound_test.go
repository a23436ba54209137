//go:build integration

package integration

import (
	"strings"
	"testing"
	"time"

	"github.com/lakepipe/lakepipe/internal/core"
	"github.com/lakepipe/lakepipe/internal/engine"
	"github.com/lakepipe/lakepipe/internal/rowio"
	"github.com/lakepipe/lakepipe/internal/sqlparse"
)

// TestResultBound: a query whose result would take more than
// LAKEPIPE_MAX_RESULT_BYTES in the process that asked fails, naming the
// setting and what to do instead, rather than taking the process's
// memory; a query under it, and the same rows counted or limited, answer.
// The formats for scripts (csv, tsv, json) write the rows as they arrive,
// and are not bound by it; the table format shows the first --max-rows
// (10,000) and counts the rest.
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
	res := cli(t, t.TempDir(), env, "", "sql", "--max-rows", "0", "-e", `SELECT id, note FROM wide`) // the table format, every row held
	t.Logf("20,000 rows of ~150 bytes under 1 MiB: exit %d in %v, stderr %s", res.Code, time.Since(start).Round(time.Millisecond), strings.TrimSpace(res.Stderr))
	for _, want := range []string{"the query's result", "takes more memory in this process than allowed, over the limit of 1 MiB", "LAKEPIPE_MAX_RESULT_BYTES", "LIMIT", "COPY INTO VOLUME", "--format csv"} {
		if res.Code == 0 || !strings.Contains(res.Stderr, want) {
			t.Fatalf("a result over the bound: exit %d, stderr %q, want an error with %q", res.Code, res.Stderr, want)
		}
	}
	// The table format shows its first 10,000 rows and counts the rest.
	if res := cli(t, t.TempDir(), env, "", "sql", "-e", `SELECT id, note FROM wide ORDER BY id`); res.Code != 0 ||
		!strings.Contains(res.Stdout, "20000 rows (the first 10000 shown") || !strings.Contains(res.Stdout, "| 9999 ") || strings.Contains(res.Stdout, "| 10000 ") {
		t.Fatalf("the table format over the bound: exit %d, stdout ends %q, stderr %q", res.Code, res.Stdout[max(0, len(res.Stdout)-300):], res.Stderr)
	}
	if res := sql(`SELECT id, note FROM wide ORDER BY id LIMIT 1000`); res.Code != 0 || strings.Count(res.Stdout, "\n") < 1000 {
		t.Fatalf("1,000 rows under the bound: exit %d, %d lines, stderr %q", res.Code, strings.Count(res.Stdout, "\n"), res.Stderr)
	}
	if res := sql(`SELECT COUNT(*), SUM(id) FROM wide`); res.Code != 0 || !strings.Contains(res.Stdout, "20000,199990000") {
		t.Fatalf("the rows aggregated: exit %d, stdout %q, stderr %q", res.Code, res.Stdout, res.Stderr)
	}
	// The formats for scripts write rows as they arrive: an export of
	// any size goes through.
	for _, format := range []string{"csv", "tsv", "json"} {
		res := cli(t, t.TempDir(), env, "", "sql", "--format", format, "-e", `SELECT id, note FROM wide ORDER BY id`)
		lines := strings.Split(strings.TrimSuffix(res.Stdout, "\n"), "\n")
		want := 20000
		if format != "json" {
			want++ // the header
		}
		if res.Code != 0 || len(lines) != want || !strings.Contains(lines[len(lines)-1], "19999") {
			t.Fatalf("--format %s over the bound: exit %d, %d lines (want %d), last %q, stderr %q", format, res.Code, len(lines), want, lines[len(lines)-1], res.Stderr)
		}
	}
	// A table stream's read, whose rows are held until its check holds
	// (the second read runs from the process's cache), then written out.
	s.run(`CREATE TABLE wide_t (id BIGINT, note STRING)`)
	s.run(`ALTER TABLE wide_t SET PROPERTIES ('change_tracking' = 'true')`)
	s.run(`CREATE TABLE STREAM wide_s ON TABLE wide_t`)
	s.run(`INSERT INTO wide_t SELECT id, note FROM wide`)
	pipeWait(t, 30*time.Second, "the INSERT readable in the stream", func() bool { return scalar(t, s.run(`SELECT COUNT(*) FROM wide_s`)) == "20000" })
	eng := engine.New(s.Eng.Cat, core.Config{Workspace: "default", Schema: s.Schema, Limits: rowio.Limits{MaxResultBytes: 4 << 10}}) // held past it: the read waits for its check
	stmt, err := sqlparse.Parse(`SELECT id, note FROM wide_s`)
	must(t, err)
	for i := 1; i <= 2; i++ {
		sink := &countSink{}
		res, err := eng.Exec(core.WithRowSink(s.Ctx, sink), stmt)
		if err != nil || !res.Streamed || sink.rows != 20000 || len(sink.cols) != 2 {
			t.Fatalf("stream read %d over the bound: err %v, %d rows streamed, columns %v", i, err, sink.rows, sink.cols)
		}
	}
	if _, err := eng.Exec(s.Ctx, stmt); err == nil || !strings.Contains(err.Error(), "LAKEPIPE_MAX_RESULT_BYTES") {
		t.Fatalf("the stream read held whole: %v, want the bound's error", err)
	}
}

// countSink counts the rows written to it.
type countSink struct {
	cols []string
	rows int
}

func (c *countSink) Columns(names, _ []string) error { c.cols = names; return nil }
func (c *countSink) Row([]any) error                 { c.rows++; return nil }
