//go:build integration

package integration

import (
	"strconv"
	"testing"

	"github.com/lakepipe/lakepipe/internal/chsql"
	"github.com/lakepipe/lakepipe/internal/core"
	"github.com/lakepipe/lakepipe/internal/jobs"
)

// Before it writes, a load looks for rows an earlier, unfinished attempt of
// its file left (its commit id in _lp_commit): tables are ordered by that
// column, so the lookup reads the granules of the batch's ids, not the
// table. Loading a small file into a table of 4,000,000 rows reads a few
// granules (ClickHouse's SelectedMarks; the whole column is ~490). An
// attempt whose rows are in the table but not in the load history (it
// died between the two) is found and its rows removed, so the file's rows
// are there once.
func TestLoadLooksUpOnlyItsCommits(t *testing.T) {
	s := newStack(t)
	s.withWorker()
	s.volume("la_vol", "la", false)
	s.pipeTable("la_t")
	s.run(`CREATE PIPE la_pipe INGEST_MODE = 'LIST' POLL_INTERVAL_IN_SECONDS = '3600' AS COPY INTO la_t FROM VOLUME la_vol USING CSV`)
	s.pipeFirstTurn("la_pipe") // it found nothing; the next turn is an hour away
	tbl := chsql.Table(s.Schema, "la_t")
	must(t, s.Store.Exec(s.Ctx, "INSERT INTO "+tbl+" (id, name) SELECT number + 1000, 'old' FROM system.numbers LIMIT 4000000"))
	s.put("la/a.csv", csvRows(1, 3))

	params, err := s.Eng.PipeParams(s.Ctx, "la_pipe")
	must(t, err)
	run, err := s.Eng.OpenPipe(s.Ctx, params)
	must(t, err)
	list, err := run.ListFiles(s.Ctx, nil, 100, jobs.ListState{})
	must(t, err)
	files := list.Files
	if len(files) != 1 {
		t.Fatalf("listed %v, want a.csv", files)
	}
	marks := func() int64 {
		v, err := s.Store.Strings(s.Ctx, "SELECT toString(value) FROM system.events WHERE event = 'SelectedMarks'")
		must(t, err)
		n, _ := strconv.ParseInt(v[0], 10, 64)
		return n
	}
	before := marks()
	res, err := run.LoadBatch(s.Ctx, files, 4)
	must(t, err)
	read := marks() - before
	if len(res) != 1 || res[0].Status != jobs.FileLoaded {
		t.Fatalf("load: %+v", res)
	}
	// A whole read of the commit column is ~490 granules of 8,192 rows.
	if read > 100 {
		t.Errorf("loading a 3-row file read %d granules: more than the file's own", read)
	}
	t.Logf("a 3-row file into 4,000,000 rows: %d granules read", read)

	// The attempt dies between its rows and its load history: take the
	// history away, keep the rows and the recorded attempt.
	must(t, s.Store.Exec(s.Ctx, "ALTER TABLE lakepipe.load_history DELETE WHERE table_name = "+chsql.QuoteString(core.Display(s.Schema, "la_t"))+" AND file_path = 'a.csv'"))
	pipeWait(t, 30e9, "the load history's mutation", func() bool { return len(s.pipeHistory("la_t")) == 0 })
	res, err = run.LoadBatch(s.Ctx, files, 4)
	must(t, err)
	if len(res) != 1 || res[0].Status != jobs.FileLoaded {
		t.Fatalf("second load: %+v", res)
	}
	n, err := s.Store.Strings(s.Ctx, "SELECT toString(count()) FROM "+tbl+" WHERE name != 'old'")
	must(t, err)
	if n[0] != "3" {
		t.Fatalf("a.csv's 3 rows: %s in the table, want each once", n[0])
	}
}
