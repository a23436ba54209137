//go:build integration

package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lakepipe/lakepipe/internal/catalog"
	"github.com/lakepipe/lakepipe/internal/changes"
	"github.com/lakepipe/lakepipe/internal/chsql"
	"github.com/lakepipe/lakepipe/internal/core"
	"github.com/lakepipe/lakepipe/internal/fileread"
	"github.com/lakepipe/lakepipe/internal/jobs"
	"github.com/lakepipe/lakepipe/schemas"
	"github.com/minio/minio-go/v7"
)

// TestSweepAbandonedLoads: a Kafka pipe's loads name the pipe in their
// open marks (lakepipe.open_commits); maintenance removes the loads a
// dropped pipe left open a day after their last attempt, rows first, and
// keeps every other: a live pipe's, a recent one, one without owner, one
// a live pipe opened too, and a registered one. A load of an earlier
// generation of a live pipe's name goes.
func TestSweepAbandonedLoads(t *testing.T) {
	s := newStack(t)
	s.withWorker()
	s.run(`CREATE TABLE ab_logs (log_time TIMESTAMP, level STRING, message STRING)`)
	s.run(`ALTER TABLE ab_logs SET PROPERTIES ('change_tracking' = 'true')`)
	topic := "ab_" + s.ID
	prod := kafkaTopic(t, topic, 1)
	produce(t, prod, logLine(s.ID, 0, "INFO"))

	// A real pipe's load records its owner. The table collapses a +1 mark
	// with its -1 when it merges: merges wait until the mark is read.
	merges := openMarkMerges(s)
	s.run(kafkaPipeSQL("ab_gone", "ab_logs", topic, "ab_gone_"+s.ID, 0, ""))
	pipeWait(t, time.Minute, "the pipe loads its record", func() bool { return s.pipeScalar(`SELECT COUNT(*) FROM ab_logs`) == "1" })
	var spec catalog.PipeSpec
	if ok, err := s.Eng.Cat.Get(s.Ctx, catalog.KindPipe, s.Schema, "ab_gone", &spec); err != nil || !ok {
		t.Fatalf("pipe ab_gone in the catalog: %v %v", ok, err)
	}
	gone := core.PipeOwner(s.Schema, "ab_gone", spec.CreatedAt.UnixNano())
	where := `db = ` + chsql.QuoteString(s.Schema) + ` AND table = 'ab_logs'`
	owners, err := s.Store.Strings(s.Ctx, `SELECT DISTINCT owner FROM lakepipe.open_commits WHERE `+where+` AND sign = 1`)
	if err != nil || len(owners) != 1 || owners[0] != gone {
		t.Fatalf("the load's open mark names %q (%v), want %q", owners, err, gone)
	}
	merges("START") // mutations run as merges
	var o core.LoadOwner
	if err := json.Unmarshal([]byte(owners[0]), &o); err != nil || o.Pipe != "ab_gone" {
		t.Fatalf("owner %q: %+v %v", owners[0], o, err)
	}
	s.run(`DROP PIPE ab_gone`)
	s.run(kafkaPipeSQL("ab_live", "ab_logs", topic, "ab_live_"+s.ID, 0, ""))
	s.dropAtEnd("PIPE", "ab_live")
	if ok, err := s.Eng.Cat.Get(s.Ctx, catalog.KindPipe, s.Schema, "ab_live", &spec); err != nil || !ok {
		t.Fatalf("pipe ab_live in the catalog: %v %v", ok, err)
	}
	live := core.PipeOwner(s.Schema, "ab_live", spec.CreatedAt.UnixNano())
	pipeWait(t, time.Minute, "the second pipe loads the record too", func() bool { return s.pipeScalar(`SELECT COUNT(*) FROM ab_logs`) == "2" })

	// Loads left open: rows in the table, a mark, no registration.
	table := chsql.Table(s.Schema, "ab_logs")
	// mark opens a commit as owner did age ago.
	mark := func(commit uint64, owner string, age time.Duration) { openMark(s, "ab_logs", commit, owner, age) }
	leave := func(commit uint64, owner string, age time.Duration) {
		t.Helper()
		id := strconv.FormatUint(commit, 10)
		if err := s.Store.Exec(s.Ctx, "INSERT INTO "+table+" (level, message, _lp_commit) SELECT 'LEFT', 'row of "+id+"', toUInt64("+id+") FROM system.numbers LIMIT 3"); err != nil {
			t.Fatal(err)
		}
		mark(commit, owner, age)
	}
	leave(901, gone, 25*time.Hour)                                   // swept
	leave(902, gone, 25*time.Hour)                                   // swept, opened twice
	leave(902, gone, 30*time.Hour)                                   //
	leave(903, gone, time.Hour)                                      // recent: an attempt might still write
	leave(904, live, 25*time.Hour)                                   // its pipe is there
	leave(905, "", 25*time.Hour)                                     // no owner (a COPY INTO, a streaming write)
	leave(906, core.PipeOwner(s.Schema, "ab_live", 1), 25*time.Hour) // ab_live of an earlier generation: swept
	// Opened by the dropped pipe and a live one: kept.
	leave(908, gone, 25*time.Hour)
	leave(908, live, 26*time.Hour)
	// Opened by two attempts, registered by the second: committed rows
	// with a mark left, which closeRegistered removes; the sweep must not
	// touch them.
	leave(907, gone, 25*time.Hour)
	mark(907, gone, 25*time.Hour)
	if err := s.Eng.RegisterCommit(s.Ctx, s.Schema, "ab_logs", 907, "INSERT", 3); err != nil {
		t.Fatal(err)
	}
	// list is the query's one string, the ids it lists.
	list := func(what, query string) string {
		t.Helper()
		r, err := s.Store.Strings(s.Ctx, "SELECT arrayStringConcat(groupArray(toString(c)), ',') FROM ("+query+" ORDER BY c)")
		if err != nil || len(r) != 1 {
			t.Fatalf("%s: %v %v", what, r, err)
		}
		return r[0]
	}
	rowsOf := func() string {
		return list("rows left", "SELECT DISTINCT _lp_commit AS c FROM "+table+" WHERE level = 'LEFT'")
	}
	// 907's marks are left out: merges may fold its two +1 into one,
	// which its -1 then closes; either way it is registered.
	openOf := func() string {
		return list("open marks", "SELECT commit_id AS c, sum(sign) AS n FROM lakepipe.open_commits WHERE "+where+" AND commit_id > 900 AND commit_id != 907 GROUP BY commit_id HAVING n > 0")
	}
	if got := rowsOf(); got != "901,902,903,904,905,906,907,908" {
		t.Fatalf("rows left before the sweep: %s", got)
	}

	n, err := s.Eng.SweepAbandoned(s.Ctx, changes.AbandonedAge)
	if err != nil {
		t.Fatal(err)
	}
	if n != 3 {
		t.Errorf("swept %d loads, want 3 (901, 902, 906)", n)
	}
	if got := rowsOf(); got != "903,904,905,907,908" {
		t.Errorf("rows left after the sweep: %s, want those of 903,904,905,907,908", got)
	}
	if got := openOf(); got != "903,904,905,908" {
		t.Errorf("loads open after the sweep: %s, want 903,904,905,908", got)
	}
	if got := s.pipeScalar(`SELECT COUNT(*) FROM ab_logs WHERE level = 'INFO'`); got != "2" {
		t.Errorf("the pipes' rows: %s, want 2", got)
	}
	// Again: nothing more to do.
	if n, err := s.Eng.SweepAbandoned(s.Ctx, changes.AbandonedAge); err != nil || n != 0 {
		t.Errorf("a second sweep removed %d loads (%v), want 0", n, err)
	}
	// Maintenance runs it, with the rest.
	if err := s.Eng.Maintain(s.Ctx); err != nil {
		t.Fatal(err)
	}
	if got := openOf(); got != "903,904,905,908" {
		t.Errorf("loads open after maintenance: %s, want 903,904,905,908", got)
	}
	if n, err := s.Store.Strings(s.Ctx, "SELECT toString(count()) FROM lakepipe.open_commits WHERE "+where+" AND commit_id IN (901, 902, 906, 907)"); err != nil || len(n) != 1 || n[0] != "0" {
		t.Errorf("marks of swept and registered loads left after maintenance: %v %v", n, err)
	}
}

// TestSweepAbandonedVolumePipeLoad: a volume pipe's loads name the pipe
// and its generation in their open marks, and a file's commit id names
// the generation too, so that a pipe created again under the name loads
// a file under another id than the dropped one: the load the dropped pipe
// left open (rows and a mark, as an attempt dying after its INSERT leaves
// them) is its alone, and maintenance removes it without touching the new
// pipe's rows of the same file.
func TestSweepAbandonedVolumePipeLoad(t *testing.T) {
	s := newStack(t)
	s.withWorker()
	trackedVolume(s, "abv_vol", "abv", "abv_t")
	merges := openMarkMerges(s)
	const create = `CREATE PIPE abv_pipe POLL_INTERVAL_IN_SECONDS = '1' AS COPY INTO abv_t FROM VOLUME abv_vol USING CSV`
	generation := func() int64 {
		t.Helper()
		var spec catalog.PipeSpec
		if ok, err := s.Eng.Cat.Get(s.Ctx, catalog.KindPipe, s.Schema, "abv_pipe", &spec); err != nil || !ok {
			t.Fatalf("pipe abv_pipe in the catalog: %v %v", ok, err)
		}
		return spec.CreatedAt.UnixNano()
	}
	s.put("abv/a.csv", csvRows(0, 10))
	s.run(create)
	gone := generation()
	pipeWait(t, time.Minute, "the pipe loads a.csv", func() bool { return s.pipeHistory("abv_t")["a.csv"]["status"] == "LOADED" })
	where := `db = ` + chsql.QuoteString(s.Schema) + ` AND table = 'abv_t'`
	owners, err := s.Store.Strings(s.Ctx, `SELECT DISTINCT owner FROM lakepipe.open_commits WHERE `+where+` AND sign = 1`)
	if want := core.PipeOwner(s.Schema, "abv_pipe", gone); err != nil || len(owners) != 1 || owners[0] != want {
		t.Fatalf("the load's open mark names %q (%v), want %q", owners, err, want)
	}
	merges("START")

	s.run(`DROP PIPE abv_pipe`)
	s.run(create)
	s.dropAtEnd("PIPE", "abv_pipe")
	live := generation()
	s.put("abv/b.csv", csvRows(10, 10))
	pipeWait(t, time.Minute, "the pipe created again loads b.csv", func() bool { return s.pipeHistory("abv_t")["b.csv"]["status"] == "LOADED" })
	rec, err := s.Store.Strings(s.Ctx, `SELECT concat(argMax(etag, version), ' ', argMax(load_id, version)) FROM lakepipe.load_history WHERE pipe_name = 'abv_pipe' AND table_name = `+
		chsql.QuoteString(core.Display(s.Schema, "abv_t"))+` AND file_path = 'b.csv'`)
	if err != nil || len(rec) != 1 {
		t.Fatalf("b.csv's record: %v %v", rec, err)
	}
	etag, loadID, _ := strings.Cut(rec[0], " ")
	b := jobs.FileRef{Path: "b.csv", ETag: etag}
	if want := fmt.Sprintf("%016x", core.FileCommit(s.Eng.Cfg.Workspace, s.Schema, "abv_pipe", live, b)); loadID != want {
		t.Fatalf("b.csv loaded under commit %s, want %s (its pipe's generation's)", loadID, want)
	}
	// What the dropped pipe would have left had it died loading b.csv.
	old := core.FileCommit(s.Eng.Cfg.Workspace, s.Schema, "abv_pipe", gone, b)
	if fmt.Sprintf("%016x", old) == loadID {
		t.Fatal("both generations of the pipe load b.csv under the same commit id")
	}
	goneOwner := core.PipeOwner(s.Schema, "abv_pipe", gone)
	leaveRows(s, "abv_t", old, "LEFT", 0, 3)
	openMark(s, "abv_t", old, goneOwner, 25*time.Hour)
	// And a load the dropped pipe recorded LOADED (its commit point) but
	// did not register: the worker died between the two, and the pipe was
	// dropped before a retry registered it. It is no abandoned load.
	recorded := core.FileCommit(s.Eng.Cfg.Workspace, s.Schema, "abv_pipe", gone, jobs.FileRef{Path: "c.csv", ETag: "e"})
	leaveRows(s, "abv_t", recorded, "RECORDED", 100, 3)
	openMark(s, "abv_t", recorded, goneOwner, 25*time.Hour)
	if err := s.Store.Exec(s.Ctx, "INSERT INTO lakepipe.load_history (table_name, pipe_name, file_path, etag, file_size, last_copy_time, status, rows_loaded, load_id, version) SELECT "+
		chsql.QuoteString(core.Display(s.Schema, "abv_t"))+", 'abv_pipe', 'c.csv', 'e', 30, now(), 'LOADED', 3, "+chsql.QuoteString(fmt.Sprintf("%016x", recorded))+", 1"); err != nil {
		t.Fatal(err)
	}
	if n, err := s.Eng.SweepAbandoned(s.Ctx, changes.AbandonedAge); err != nil || n != 1 {
		t.Fatalf("swept %d loads (%v), want 1: the dropped pipe's unrecorded one", n, err)
	}
	counts, err := s.Store.Strings(s.Ctx, "SELECT concat(toString(countIf(name = 'LEFT')), ' ', toString(countIf(name != 'LEFT')), ' ', toString(uniqExact(id))) FROM "+chsql.Table(s.Schema, "abv_t"))
	if err != nil || len(counts) != 1 || counts[0] != "0 23 23" {
		t.Fatalf("after the sweep the table holds (left, loaded, distinct ids) %v (%v), want 0 23 23: the leftover gone, a.csv, b.csv and the recorded load once", counts, err)
	}
	if reg, err := s.Store.Strings(s.Ctx, "SELECT toString(count()) FROM lakepipe.table_commits WHERE db = "+chsql.QuoteString(s.Schema)+" AND table = 'abv_t' AND commit_id = "+strconv.FormatUint(recorded, 10)); err != nil || len(reg) != 1 || reg[0] != "1" {
		t.Fatalf("the recorded load is registered %v times (%v), want once", reg, err)
	}
}

// TestEarlierReleaseLoadRetried: a load an earlier release opened under
// the id it gave the file (before ids named the pipe's generation), whose
// attempt died after its INSERT, is retried by this release under its own
// id: the earlier attempt's rows go, and so does its open mark, which no
// one would ever close (a name in every committed-rows read of the table).
func TestEarlierReleaseLoadRetried(t *testing.T) {
	s := newStack(t)
	s.withWorker()
	trackedVolume(s, "abe_vol", "abe", "abe_t")
	s.put("abe/p.csv", csvRows(0, 10))
	info, err := rawS3(t).StatObject(s.Ctx, s3Bucket, s.key("abe/p.csv"), minio.StatObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	earlier := core.EarlierFileCommits(s.Eng.Cfg.Workspace, s.Schema, "abe_pipe", jobs.FileRef{Path: "p.csv", ETag: strings.Trim(info.ETag, `"`)})[0]
	openMark(s, "abe_t", earlier, "", 0)
	leaveRows(s, "abe_t", earlier, "LEFT", 0, 3)
	s.run(`CREATE PIPE abe_pipe POLL_INTERVAL_IN_SECONDS = '1' AS COPY INTO abe_t FROM VOLUME abe_vol USING CSV`)
	s.dropAtEnd("PIPE", "abe_pipe")
	pipeWait(t, time.Minute, "the pipe loads p.csv", func() bool { return s.pipeHistory("abe_t")["p.csv"]["status"] == "LOADED" })
	counts, err := s.Store.Strings(s.Ctx, "SELECT concat(toString(countIf(name = 'LEFT')), ' ', toString(countIf(name != 'LEFT')), ' ', toString(uniqExact(id))) FROM "+chsql.Table(s.Schema, "abe_t"))
	if err != nil || len(counts) != 1 || counts[0] != "0 10 10" {
		t.Fatalf("the table holds (left, loaded, distinct ids) %v (%v), want 0 10 10: the earlier attempt's rows gone, p.csv once", counts, err)
	}
	open, err := s.Store.Strings(s.Ctx, "SELECT toString(sum(sign)) FROM lakepipe.open_commits WHERE db = "+chsql.QuoteString(s.Schema)+" AND table = 'abe_t' AND commit_id = "+strconv.FormatUint(earlier, 10))
	if err != nil || len(open) != 1 || open[0] != "0" {
		t.Fatalf("the earlier attempt's load has marks summing to %v (%v), want 0: closed", open, err)
	}
}

// openMarkMerges stops merges of lakepipe.open_commits, so that a test
// sees each +1 and -1 mark, until the returned func starts them again
// (with "START"; at the latest when the test ends).
func openMarkMerges(s *Stack) func(verb string) {
	s.T.Helper()
	merges := func(verb string) {
		if err := s.Store.Exec(s.Ctx, "SYSTEM "+verb+" MERGES lakepipe.open_commits"); err != nil {
			s.T.Fatal(err)
		}
	}
	merges("STOP")
	s.T.Cleanup(func() { merges("START") })
	return merges
}

// openMark opens commit on table as owner did age ago, as a load's
// attempt does before its rows go in (lakepipe.open_commits).
func openMark(s *Stack, table string, commit uint64, owner string, age time.Duration) {
	s.T.Helper()
	if err := s.Store.Exec(s.Ctx, "INSERT INTO lakepipe.open_commits (db, table, commit_id, sign, owner, opened_at) SELECT "+
		chsql.QuoteString(s.Schema)+", "+chsql.QuoteString(table)+", toUInt64("+strconv.FormatUint(commit, 10)+"), toInt8(1), "+chsql.QuoteString(owner)+
		", now() - "+strconv.Itoa(int(age/time.Second))); err != nil {
		s.T.Fatal(err)
	}
}

// leaveRows writes n rows named name into a table of (id, name) under
// commit, ids from first: what an attempt that died after its INSERT
// leaves.
func leaveRows(s *Stack, table string, commit uint64, name string, first, n int) {
	s.T.Helper()
	if err := s.Store.Exec(s.Ctx, fmt.Sprintf("INSERT INTO %s (id, name, _lp_commit) SELECT %d + number, %s, toUInt64(%d) FROM system.numbers LIMIT %d",
		chsql.Table(s.Schema, table), first, chsql.QuoteString(name), commit, n)); err != nil {
		s.T.Fatal(err)
	}
}

// trackedVolume makes a volume over dir and a change-tracked table of
// (id, name) for a volume pipe to load.
func trackedVolume(s *Stack, volume, dir, table string) {
	s.T.Helper()
	s.volume(volume, dir, false)
	s.pipeTable(table)
	s.run(`ALTER TABLE ` + table + ` SET PROPERTIES ('change_tracking' = 'true')`)
}

// TestReplacedFileLoadClosed: an attempt of a volume pipe died after
// opening its file's load and inserting rows, and the file was replaced
// before the retry. The retry (the same file version, as Temporal retries
// an activity with its input) removes the rows, finds the file replaced,
// and closes the load, which nothing will register: left open it would be
// a name in every committed-rows read of the table for good. The same for
// a file of a batch, and for one that fails.
func TestReplacedFileLoadClosed(t *testing.T) {
	s := newStack(t)
	s.withWorker()
	trackedVolume(s, "arf_vol", "arf", "arf_t")
	s.run(`CREATE PIPE arf_pipe INGEST_MODE = 'LIST' POLL_INTERVAL_IN_SECONDS = '3600' AS COPY INTO arf_t FROM VOLUME arf_vol USING CSV`)
	s.dropAtEnd("PIPE", "arf_pipe")
	// Its first turn finds nothing; the next is an hour away, so that the
	// loads below are the test's own.
	s.pipeFirstTurn("arf_pipe")
	var spec catalog.PipeSpec
	if ok, err := s.Eng.Cat.Get(s.Ctx, catalog.KindPipe, s.Schema, "arf_pipe", &spec); err != nil || !ok {
		t.Fatalf("pipe arf_pipe in the catalog: %v %v", ok, err)
	}
	owner := core.PipeOwner(s.Schema, "arf_pipe", spec.CreatedAt.UnixNano())
	s.put("arf/a.csv", csvRows(0, 10))
	s.put("arf/b.csv", csvRows(10, 10))
	s.put("arf/c.csv", csvRows(20, 10))
	params, err := s.Eng.PipeParams(s.Ctx, "arf_pipe")
	must(t, err)
	run, err := s.Eng.OpenPipe(s.Ctx, params)
	must(t, err)
	list, err := run.ListFiles(s.Ctx, nil, 100, jobs.ListState{})
	must(t, err)
	if len(list.Files) != 3 {
		t.Fatalf("listed %v, want a.csv, b.csv, c.csv", list.Files)
	}
	// An attempt died in each file's load: open, rows in.
	commits := map[string]uint64{}
	for i, f := range list.Files {
		c := core.FileCommit(s.Eng.Cfg.Workspace, s.Schema, "arf_pipe", spec.CreatedAt.UnixNano(), f)
		commits[f.Path] = c
		openMark(s, "arf_t", c, owner, 0)
		leaveRows(s, "arf_t", c, "LEFT", i*10, 4)
	}
	// Then a.csv and b.csv were replaced, and c.csv with a file that fails.
	s.put("arf/a.csv", csvRows(100, 10))
	s.put("arf/b.csv", csvRows(110, 10))
	s.put("arf/c.csv", []byte("not a number,x\n"))

	var files []jobs.FileRef
	for _, f := range list.Files {
		if f.Path == "a.csv" {
			res, err := run.LoadFile(s.Ctx, f)
			if err != nil || res.Status != jobs.FileSkipped {
				t.Fatalf("the retry of a.csv's load: %+v %v, want skipped (replaced)", res, err)
			}
		} else {
			files = append(files, f)
		}
	}
	res, err := run.LoadBatch(s.Ctx, files, 2)
	must(t, err)
	if len(res) != 2 || res[0].Status != jobs.FileSkipped || res[1].Status != jobs.FileSkipped {
		t.Fatalf("the retry of b.csv's and c.csv's loads: %+v, want both skipped (replaced)", res)
	}
	where := "db = " + chsql.QuoteString(s.Schema) + " AND table = 'arf_t'"
	open, err := s.Store.Strings(s.Ctx, "SELECT toString(count()) FROM (SELECT commit_id FROM lakepipe.open_commits WHERE "+where+" GROUP BY commit_id HAVING sum(sign) > 0)")
	if err != nil || len(open) != 1 || open[0] != "0" {
		t.Fatalf("%v loads left open (%v), want none: the died attempts' loads are closed", open, err)
	}
	left, err := s.Store.Strings(s.Ctx, "SELECT toString(count()) FROM "+chsql.Table(s.Schema, "arf_t"))
	if err != nil || len(left) != 1 || left[0] != "0" {
		t.Fatalf("the table holds %v rows (%v), want none: the died attempts' rows removed", left, err)
	}

	// The next listing finds the new versions: a.csv and b.csv load, c.csv
	// fails, and nothing is left open.
	list, err = run.ListFiles(s.Ctx, nil, 100, jobs.ListState{})
	must(t, err)
	// An attempt that read c.csv without error (a failure that comes and
	// goes) died in its load too: the failing retry closes it.
	for i, f := range list.Files {
		if f.Path == "c.csv" {
			c := core.FileCommit(s.Eng.Cfg.Workspace, s.Schema, "arf_pipe", spec.CreatedAt.UnixNano(), f)
			openMark(s, "arf_t", c, owner, 0)
			leaveRows(s, "arf_t", c, "LEFT", 200+i, 4)
		}
	}
	res, err = run.LoadBatch(s.Ctx, list.Files, 2)
	must(t, err)
	status := map[string]jobs.FileStatus{}
	for _, r := range res {
		status[r.Path] = r.Status
	}
	if status["a.csv"] != jobs.FileLoaded || status["b.csv"] != jobs.FileLoaded || status["c.csv"] != jobs.FileFailed {
		t.Fatalf("the new versions: %v, want a.csv and b.csv loaded, c.csv failed", status)
	}
	open, err = s.Store.Strings(s.Ctx, "SELECT toString(count()) FROM (SELECT commit_id FROM lakepipe.open_commits WHERE "+where+
		" AND commit_id NOT IN (SELECT commit_id FROM lakepipe.table_commits WHERE "+where+") GROUP BY commit_id HAVING sum(sign) > 0)")
	if err != nil || len(open) != 1 || open[0] != "0" {
		t.Fatalf("%v unregistered loads left open (%v), want none", open, err)
	}
	counts, err := s.Store.Strings(s.Ctx, "SELECT concat(toString(count()), ' ', toString(uniqExact(id)), ' ', toString(min(id))) FROM "+chsql.Table(s.Schema, "arf_t"))
	if err != nil || len(counts) != 1 || counts[0] != "20 20 100" {
		t.Fatalf("the table holds (rows, distinct ids, least id) %v (%v), want 20 20 100: the new a.csv and b.csv once", counts, err)
	}
}

// TestWriterLeaseSweep: the loads a statement opens (INSERT, COPY INTO)
// name the process's writer lease, which the process renews; maintenance
// removes the loads of a lease not renewed for a day (the process died
// mid-statement: its rows sat hidden in the table, a name in every
// committed-rows read, for good), and keeps those of a live one.
func TestWriterLeaseSweep(t *testing.T) {
	s := newStack(t)
	trackedVolume(s, "awl_vol", "awl", "awl_t")
	merges := openMarkMerges(s)
	s.run(`INSERT INTO awl_t VALUES (1, 'a')`)
	s.put("awl/f.csv", csvRows(10, 5))
	s.run(`COPY INTO awl_t FROM VOLUME awl_vol USING CSV`)
	where := `db = ` + chsql.QuoteString(s.Schema) + ` AND table = 'awl_t'`
	owners, err := s.Store.Strings(s.Ctx, `SELECT DISTINCT owner FROM lakepipe.open_commits WHERE `+where+` AND sign = 1`)
	if err != nil || len(owners) != 1 || !strings.HasPrefix(owners[0], `{"lease":"`) {
		t.Fatalf("the statements' open marks name %q (%v), want one writer lease", owners, err)
	}
	merges("START")
	live := owners[0]
	renewed, err := s.Store.Strings(s.Ctx, "SELECT toString(max(renewed_at) >= now() - 120) FROM lakepipe.writer_leases WHERE owner = "+chsql.QuoteString(live))
	if err != nil || len(renewed) != 1 || renewed[0] != "1" {
		t.Fatalf("the process's lease renewed in the last 2 minutes: %v (%v)", renewed, err)
	}

	// What processes that died mid-statement left: one whose lease was
	// last renewed 25 hours ago, one whose lease maintenance deleted.
	dead, gone := `{"lease":"awl-host/1/dead"}`, `{"lease":"awl-host/2/gone"}`
	must(t, s.Store.Exec(s.Ctx, "INSERT INTO lakepipe.writer_leases (owner, renewed_at) SELECT "+chsql.QuoteString(dead)+", now() - 90000"))
	const c1, c2, c3 = 0x51ee01, 0x51ee02, 0x51ee03
	leaveRows(s, "awl_t", c1, "LEFT", 100, 3)
	openMark(s, "awl_t", c1, dead, 25*time.Hour)
	leaveRows(s, "awl_t", c2, "LEFT", 200, 3)
	openMark(s, "awl_t", c2, gone, 25*time.Hour)
	// And a statement of a live process, running for more than a day.
	leaveRows(s, "awl_t", c3, "RUNNING", 300, 3)
	openMark(s, "awl_t", c3, live, 25*time.Hour)
	t.Cleanup(func() {
		ctx := context.WithoutCancel(s.Ctx)
		_ = s.Store.Exec(ctx, "ALTER TABLE lakepipe.writer_leases DELETE WHERE owner = "+chsql.QuoteString(dead))
		_ = s.Store.Exec(ctx, "ALTER TABLE lakepipe.open_commits DELETE WHERE "+where+" AND commit_id = "+strconv.Itoa(c3))
	})
	if n, err := s.Eng.SweepAbandoned(s.Ctx, changes.AbandonedAge); err != nil || n != 2 {
		t.Fatalf("swept %d loads (%v), want 2: the dead processes' ones", n, err)
	}
	counts, err := s.Store.Strings(s.Ctx, "SELECT concat(toString(countIf(name = 'LEFT')), ' ', toString(countIf(name = 'RUNNING')), ' ', toString(count())) FROM "+chsql.Table(s.Schema, "awl_t"))
	if err != nil || len(counts) != 1 || counts[0] != "0 3 9" {
		t.Fatalf("after the sweep the table holds (left, running, all) %v (%v), want 0 3 9: the dead statements' rows gone, the live one's kept", counts, err)
	}
	open, err := s.Store.Strings(s.Ctx, "SELECT toString(commit_id) FROM lakepipe.open_commits WHERE "+where+" GROUP BY commit_id HAVING sum(sign) > 0 ORDER BY commit_id")
	if err != nil || strings.Join(open, ",") != strconv.Itoa(c3) {
		t.Fatalf("loads open after the sweep: %v (%v), want only the live statement's %d", open, err, c3)
	}
}

// TestKilledCopySwept: a COPY INTO a change-tracked table whose process is
// killed in the middle of a file leaves the rows it had written in the
// table (shown to plain reads, hidden from refreshes and streams) and its
// load open. Its open mark names the process's writer lease, which no one
// renews any more: maintenance (here with a sweep age of seconds instead
// of a day) removes the rows, then the mark.
func TestKilledCopySwept(t *testing.T) {
	s := newStack(t)
	trackedVolume(s, "akc_vol", "akc", "akc_t")
	s.put("akc/big.csv", csvRows(0, 3_000_000))
	cmd := exec.Command(lakepipeBin(t), "sql")
	cmd.Env = append(os.Environ(), "LAKEPIPE_SCHEMA="+s.Schema, "LAKEPIPE_CLICKHOUSE_ADDR="+chAddr)
	cmd.Stdin = strings.NewReader("COPY INTO akc_t FROM VOLUME akc_vol USING CSV;\n")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	must(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	tbl := chsql.Table(s.Schema, "akc_t")
	pipeWait(t, time.Minute, "the COPY's first rows", func() bool {
		n, err := s.Store.Strings(s.Ctx, "SELECT toString(count()) FROM "+tbl)
		return err == nil && len(n) == 1 && n[0] != "0"
	})
	must(t, cmd.Process.Kill())
	_ = cmd.Wait()
	written, err := s.Store.Strings(s.Ctx, "SELECT toString(count()) FROM "+tbl)
	if err != nil || len(written) != 1 || written[0] == "3000000" {
		t.Fatalf("the killed COPY wrote %v rows (%v), want part of the file:\n%s", written, err, out.String())
	}
	where := `db = ` + chsql.QuoteString(s.Schema) + ` AND table = 'akc_t'`
	owners, err := s.Store.Strings(s.Ctx, `SELECT owner FROM lakepipe.open_commits WHERE `+where+` GROUP BY commit_id, owner HAVING sum(sign) > 0`)
	if err != nil || len(owners) != 1 || !strings.HasPrefix(owners[0], `{"lease":"`) {
		t.Fatalf("the killed COPY's open load names %q (%v), want its process's writer lease", owners, err)
	}
	t.Logf("the killed COPY left %s rows, its load open under %s", written[0], owners[0])
	time.Sleep(5 * time.Second) // the sweep's age below: the lease is older, not renewed since the kill
	if _, err := s.Eng.SweepAbandoned(s.Ctx, 3*time.Second); err != nil {
		t.Fatal(err)
	}
	left, err := s.Store.Strings(s.Ctx, "SELECT concat(toString((SELECT count() FROM "+tbl+")), ' ', toString((SELECT count() FROM (SELECT commit_id FROM lakepipe.open_commits WHERE "+where+" GROUP BY commit_id HAVING sum(sign) > 0))))")
	if err != nil || len(left) != 1 || left[0] != "0 0" {
		t.Fatalf("after the sweep (rows, open loads) %v (%v), want 0 0: the killed COPY's rows and load removed", left, err)
	}
}

// TestKilledCopyPurgeOnce: a COPY INTO … PURGE = TRUE into a change-tracked
// table whose process dies part way, then the sweep of its dead lease,
// then the same COPY run again: every row is in the table once. The files
// it purged must have their rows committed by then, so that the sweep
// leaves them: with one load for the whole statement, the sweep removed
// the rows of the files already purged, which were then nowhere.
func TestKilledCopyPurgeOnce(t *testing.T) {
	s := newStack(t)
	trackedVolume(s, "akp_vol", "akp", "akp_t")
	const files, per = 30, 40_000
	s.putMany(files, func(i int) string { return fmt.Sprintf("akp/f%02d.csv", i) }, func(i int) []byte { return csvRows(i*per, per) })
	copySQL := "COPY INTO akp_t FROM VOLUME akp_vol USING CSV PURGE = TRUE;\n"
	cmd := exec.Command(lakepipeBin(t), "sql")
	cmd.Env = append(os.Environ(), "LAKEPIPE_SCHEMA="+s.Schema, "LAKEPIPE_CLICKHOUSE_ADDR="+chAddr)
	cmd.Stdin = strings.NewReader(copySQL)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	must(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	pipeWait(t, 2*time.Minute, "the COPY purges its first files", func() bool { return len(s.files("akp")) <= files-3 })
	must(t, cmd.Process.Kill())
	_ = cmd.Wait()
	left := len(s.files("akp"))
	if left == 0 {
		t.Fatalf("the COPY ended before it was killed:\n%s", out.String())
	}
	t.Logf("killed with %d of %d files purged", files-left, files)
	time.Sleep(5 * time.Second) // the sweep's age below: the lease is older, not renewed since the kill
	if _, err := s.Eng.SweepAbandoned(s.Ctx, 3*time.Second); err != nil {
		t.Fatal(err)
	}
	if res := s.sqlCLI(copySQL); res.Code != 0 {
		t.Fatalf("the COPY run again: exit %d:\n%s", res.Code, res.Stderr)
	}
	if n := len(s.files("akp")); n != 0 {
		t.Fatalf("%d files left after the COPY ran again", n)
	}
	wantRows(t, "every row once", s.run(`SELECT COUNT(*), COUNT(DISTINCT id) FROM akp_t`), fmt.Sprintf("%d|%d", files*per, files*per))
}

// TestCopyPurgeLeftOver: a COPY INTO … PURGE = TRUE whose process
// stopped between recording a file (its rows committed) and removing it
// left the file in the volume. The same COPY run again removes such a file
// instead of loading it twice, whether its load was registered or its
// process died before registering it (maintenance registers it then, as
// recorded). A file recorded by a COPY without PURGE, or uploaded again
// since with the same bytes, loads as any file does.
func TestCopyPurgeLeftOver(t *testing.T) {
	s := newStack(t)
	trackedVolume(s, "plo_vol", "plo", "plo_t")
	// a: loaded and registered; b: loaded, its process died before
	// registering; c: loaded by a COPY without PURGE; d: loaded and
	// removed, then the same bytes uploaded again; e: never loaded.
	for i, f := range []string{"a", "b", "c", "d", "e"} {
		s.put("plo/"+f+".csv", csvRows(i*10, 10))
	}
	dead := `{"lease":"plo-host/1/dead"}`
	must(t, s.Store.Exec(s.Ctx, "INSERT INTO lakepipe.writer_leases (owner, renewed_at) SELECT "+chsql.QuoteString(dead)+", now() - 90000"))
	t.Cleanup(func() {
		_ = s.Store.Exec(context.WithoutCancel(s.Ctx), "ALTER TABLE lakepipe.writer_leases DELETE WHERE owner = "+chsql.QuoteString(dead))
	})
	record := func(f string, i int, commit uint64, purge bool, modified time.Time) {
		t.Helper()
		info, err := rawS3(t).StatObject(s.Ctx, s3Bucket, s.key("plo/"+f+".csv"), minio.StatObjectOptions{})
		must(t, err)
		if modified.IsZero() {
			modified = info.LastModified
		}
		leaveRows(s, "plo_t", commit, "EARLIER", i*10, 10)
		must(t, s.Eng.RecordLoads(s.Ctx, core.Display(s.Schema, "plo_t"), "", "", []fileread.FileLoad{{Path: f + ".csv", Size: info.Size,
			ETag: strings.Trim(info.ETag, `"`), Modified: modified, Rows: 10, Status: jobs.FileLoaded, LoadID: core.LoadID(commit), Purge: purge}}))
	}
	const ca, cb, cc, cd = 0x710a, 0x710b, 0x710c, 0x710d
	record("a", 0, ca, true, time.Time{})
	must(t, s.Eng.RegisterCommit(s.Ctx, s.Schema, "plo_t", ca, "INSERT", 10))
	record("b", 1, cb, true, time.Time{})
	openMark(s, "plo_t", cb, dead, 25*time.Hour)
	record("c", 2, cc, false, time.Time{})
	must(t, s.Eng.RegisterCommit(s.Ctx, s.Schema, "plo_t", cc, "INSERT", 10))
	record("d", 3, cd, true, time.Now().Add(-time.Hour))
	must(t, s.Eng.RegisterCommit(s.Ctx, s.Schema, "plo_t", cd, "INSERT", 10))

	res := s.run(`COPY INTO plo_t FROM VOLUME plo_vol USING CSV PURGE = TRUE`)
	status := map[string]string{}
	for _, row := range res.Rows {
		status[fmt.Sprint(row[0])] = fmt.Sprint(row[1])
	}
	want := map[string]string{"a.csv": "SKIPPED", "b.csv": "SKIPPED", "c.csv": "LOADED", "d.csv": "LOADED", "e.csv": "LOADED"}
	if !maps.Equal(status, want) {
		t.Fatalf("the COPY's files %v, want %v:\n%v", status, want, res.Rows)
	}
	if n := len(s.files("plo")); n != 0 {
		t.Fatalf("%d files left in the volume, want none", n)
	}
	if _, err := s.Eng.SweepAbandoned(s.Ctx, 3*time.Second); err != nil {
		t.Fatal(err)
	}
	// a and b once (their earlier loads), c and d twice (loaded again, as
	// asked), e once.
	counts, err := s.Store.Strings(s.Ctx, "SELECT concat(toString(count()), ' ', toString(uniqExact(id))) FROM "+chsql.Table(s.Schema, "plo_t"))
	if err != nil || len(counts) != 1 || counts[0] != "70 50" {
		t.Fatalf("the table holds (rows, distinct ids) %v (%v), want 70 50", counts, err)
	}
	reg, err := s.Store.Strings(s.Ctx, "SELECT toString(count()) FROM lakepipe.table_commits WHERE db = "+chsql.QuoteString(s.Schema)+" AND table = 'plo_t' AND commit_id = "+strconv.Itoa(cb))
	if err != nil || len(reg) != 1 || reg[0] != "1" {
		t.Fatalf("b's load, recorded and left open by its dead process, is registered %v times (%v), want once", reg, err)
	}

	// A real COPY records the version it read as the listing shows it:
	// the store's HEAD and its listing agree on the last-modified time.
	s.volume("plo2_vol", "plo2", false)
	s.put("plo2/g.csv", csvRows(100, 1))
	s.run(`COPY INTO plo_t FROM VOLUME plo2_vol USING CSV`)
	var listed minio.ObjectInfo
	for o := range rawS3(t).ListObjects(s.Ctx, s3Bucket, minio.ListObjectsOptions{Prefix: s.key("plo2/")}) {
		must(t, o.Err)
		listed = o
	}
	rec, err := s.Store.Strings(s.Ctx, "SELECT concat(toString(toUInt32(file_modified)), ' ', etag) FROM lakepipe.load_history WHERE table_name = "+
		chsql.QuoteString(core.Display(s.Schema, "plo_t"))+" AND file_path = 'g.csv'")
	if want := fmt.Sprintf("%d %s", listed.LastModified.Unix(), strings.Trim(listed.ETag, `"`)); err != nil || len(rec) != 1 || rec[0] != want {
		t.Fatalf("g.csv's record (modified, etag) %v (%v), want the listing's %s", rec, err, want)
	}
}

// TestKilledUpdateKept: an UPDATE of a change-tracked table whose process
// dies while ClickHouse runs its mutation (a Ctrl-C, a kill) cannot be
// taken back: the mutation removes the old rows whatever becomes of the
// process. Maintenance registers its commit (the new rows stay, and
// streams and refreshes see the update) instead of removing its rows as
// those of a dead load, which lost the updated rows altogether.
func TestKilledUpdateKept(t *testing.T) {
	s := newStack(t)
	trackedVolume(s, "aku_vol", "aku", "aku_t")
	const n = 2_000_000
	s.put("aku/rows.csv", csvRows(0, n))
	s.run(`COPY INTO aku_t FROM VOLUME aku_vol USING CSV`)
	tbl := chsql.Table(s.Schema, "aku_t")
	cmd := exec.Command(lakepipeBin(t), "sql", "-e", `UPDATE aku_t SET name = 'updated' WHERE id % 2 = 0`)
	cmd.Env = append(os.Environ(), "LAKEPIPE_SCHEMA="+s.Schema, "LAKEPIPE_CLICKHOUSE_ADDR="+chAddr)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	must(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	mutations := func(cond string) int {
		v, err := s.Store.Strings(s.Ctx, "SELECT toString(count()) FROM system.mutations WHERE database = "+chsql.QuoteString(s.Schema)+" AND table = 'aku_t' AND "+cond)
		must(t, err)
		k, _ := strconv.Atoi(v[0])
		return k
	}
	pipeWait(t, 2*time.Minute, "the UPDATE's mutation under way", func() bool { return mutations("1") > 0 })
	must(t, cmd.Process.Kill())
	_ = cmd.Wait()
	if mutations("is_done = 1") > 0 {
		t.Logf("the mutation was done when the process was killed (the test wants it under way; it still checks the sweep)")
	}
	pipeWait(t, 2*time.Minute, "the mutation ends on its own", func() bool { return mutations("is_done = 0") == 0 })
	time.Sleep(5 * time.Second) // the sweep's age below: the lease is older, not renewed since the kill
	if _, err := s.Eng.SweepAbandoned(s.Ctx, 3*time.Second); err != nil {
		t.Fatal(err)
	}
	counts, err := s.Store.Strings(s.Ctx, "SELECT concat(toString(count()), ' ', toString(countIf(name = 'updated'))) FROM "+tbl)
	must(t, err)
	if want := fmt.Sprintf("%d %d", n, n/2); len(counts) != 1 || counts[0] != want {
		t.Fatalf("after the killed UPDATE and the sweep: (rows, updated) %v, want %s:\n%s", counts, want, out.String())
	}
	kinds, err := s.Store.Strings(s.Ctx, "SELECT kind FROM lakepipe.table_commits WHERE db = "+chsql.QuoteString(s.Schema)+" AND table = 'aku_t' ORDER BY version")
	must(t, err)
	if strings.Join(kinds, ",") != "INSERT,UPDATE" {
		t.Fatalf("the change log has commits %v, want the COPY's INSERT and the UPDATE registered by the sweep", kinds)
	}
}

// TestDeadKeyedWriteKept: a load into a keyed table that its dead writer
// left open replaced rows by key, which merges then removed: maintenance
// registers it instead of removing its rows, which left the keys with no
// row at all.
func TestDeadKeyedWriteKept(t *testing.T) {
	s := newStack(t)
	s.run(`CREATE TABLE akk (id INT, name STRING, PRIMARY KEY (id))`)
	s.run(`ALTER TABLE akk SET PROPERTIES ('change_tracking' = 'true')`)
	s.run(`INSERT INTO akk VALUES (1, 'a'), (2, 'b')`)
	// A writer that died after its rows went in, before it registered
	// them: its mark names a lease nobody renews.
	commit := core.RandomCommit()
	must(t, s.Store.InsertRows(s.Ctx, "lakepipe", "open_commits", []string{"db", "table", "commit_id", "sign", "owner", "opened_at"},
		[][]any{{s.Schema, "akk", commit, int8(1), `{"lease":"gone/1/` + s.ID + `"}`, time.Now().Add(-time.Minute).UTC()}}))
	must(t, s.Store.InsertRows(s.Ctx, s.Schema, "akk", []string{"id", "name", core.CommitColumn}, [][]any{{int32(1), "a2", commit}}))
	must(t, s.Store.Exec(s.Ctx, "OPTIMIZE TABLE "+chsql.Table(s.Schema, "akk")+" FINAL"))
	if _, err := s.Eng.SweepAbandoned(s.Ctx, 3*time.Second); err != nil {
		t.Fatal(err)
	}
	wantRows(t, "the dead write's row kept", s.run(`SELECT id, name FROM akk ORDER BY id`), "1|a2", "2|b")
	open, err := s.Store.Strings(s.Ctx, "SELECT toString(count()) FROM (SELECT commit_id FROM lakepipe.open_commits WHERE db = "+chsql.QuoteString(s.Schema)+" AND table = 'akk' GROUP BY commit_id HAVING sum(sign) > 0)")
	must(t, err)
	registered, err := s.Store.Strings(s.Ctx, fmt.Sprintf("SELECT toString(count()) FROM lakepipe.table_commits WHERE db = %s AND table = 'akk' AND commit_id = %d", chsql.QuoteString(s.Schema), commit))
	must(t, err)
	if open[0] != "0" || registered[0] != "1" {
		t.Fatalf("after the sweep: %s loads open, the dead write registered %s times; want 0 and 1", open[0], registered[0])
	}
}

// TestFailedDMLClosed: a DELETE or UPDATE of a change-tracked table that
// fails before ClickHouse accepts its mutation leaves nothing behind: no
// row of its commit (an UPDATE's new rows showed beside the old ones
// until maintenance, a day after the process ended) and no open load.
func TestFailedDMLClosed(t *testing.T) {
	s := newStack(t)
	s.pipeTable("afd_t")
	s.run(`ALTER TABLE afd_t SET PROPERTIES ('change_tracking' = 'true')`)
	s.run(`INSERT INTO afd_t VALUES (1, 'one'), (2, 'two')`)
	for _, stmt := range []string{
		`DELETE FROM afd_t WHERE id % (id - id) = 0`,
		`UPDATE afd_t SET id = id % (id - id) WHERE id = 1`,
	} {
		if err := s.runErr(stmt); err == nil {
			t.Fatalf("%s: no error, want a division by zero", stmt)
		}
	}
	wantRows(t, "the rows as they were", s.run(`SELECT id, name FROM afd_t ORDER BY id`), "1|one", "2|two")
	open, err := s.Store.Strings(s.Ctx, "SELECT toString(count()) FROM (SELECT commit_id FROM lakepipe.open_commits WHERE db = "+chsql.QuoteString(s.Schema)+" AND table = 'afd_t' GROUP BY commit_id HAVING sum(sign) > 0)")
	must(t, err)
	if open[0] != "0" {
		t.Fatalf("%s loads left open by the failed statements, want 0", open[0])
	}
}

// TestStoppedMergeUnclaimed: a MERGE INTO a keyed table whose process died
// after its rows went in and before ClickHouse accepted its delete left
// DELETE rows in the change log for keys still in the table. Maintenance
// registers the write (its rows replaced others by key) without them:
// a stream would otherwise show keys gone that are there.
func TestStoppedMergeUnclaimed(t *testing.T) {
	s := newStack(t)
	s.run(`CREATE TABLE asm (id INT, name STRING, PRIMARY KEY (id))`)
	s.run(`ALTER TABLE asm SET PROPERTIES ('change_tracking' = 'true')`)
	s.run(`INSERT INTO asm VALUES (1, 'a'), (2, 'b'), (3, 'c')`)
	orig, err := s.Store.Strings(s.Ctx, "SELECT toString(any("+core.CommitColumn+")) FROM "+chsql.Table(s.Schema, "asm"))
	must(t, err)
	origID, err := strconv.ParseUint(orig[0], 10, 64)
	must(t, err)
	// What the MERGE (key 1 updated, key 2 deleted) had done when its
	// process died: the replaced and deleted rows saved, the new row in,
	// no delete issued; its mark names a lease nobody renews.
	commit := core.RandomCommit()
	must(t, s.Store.InsertRows(s.Ctx, "lakepipe", "open_commits", []string{"db", "table", "commit_id", "sign", "owner", "opened_at"},
		[][]any{{s.Schema, "asm", commit, int8(1), `{"lease":"gone/1/` + s.ID + `"}`, time.Now().Add(-time.Minute).UTC()}}))
	must(t, s.Store.InsertRows(s.Ctx, schemas.ChangesDB, changes.ChangesTable(s.Schema, "asm"),
		[]string{"id", "name", changes.ChangeTypeColumn, core.CommitColumn, changes.OrigCommitColumn},
		[][]any{{int32(1), "a", "UPDATE_BEFORE", commit, origID}, {int32(2), "b", "DELETE", commit, origID}}))
	must(t, s.Store.InsertRows(s.Ctx, s.Schema, "asm", []string{"id", "name", core.CommitColumn}, [][]any{{int32(1), "a2", commit}}))
	if _, err := s.Eng.SweepAbandoned(s.Ctx, 3*time.Second); err != nil {
		t.Fatal(err)
	}
	wantRows(t, "the dead MERGE's update kept, its delete not done", s.run(`SELECT id, name FROM asm ORDER BY id`), "1|a2", "2|b", "3|c")
	claims, err := s.Store.Strings(s.Ctx, fmt.Sprintf("SELECT toString(id) FROM %s WHERE %s = 'DELETE'",
		chsql.Table(schemas.ChangesDB, changes.ChangesTable(s.Schema, "asm")), changes.ChangeTypeColumn))
	must(t, err)
	if len(claims) != 0 {
		t.Fatalf("the change log claims keys %v deleted, which the table holds", claims)
	}
	kinds, err := s.Store.Strings(s.Ctx, fmt.Sprintf("SELECT concat(kind, ' ', toString(rows)) FROM lakepipe.table_commits WHERE db = %s AND table = 'asm' AND commit_id = %d", chsql.QuoteString(s.Schema), commit))
	must(t, err)
	if strings.Join(kinds, ",") != "UPDATE 1" {
		t.Fatalf("the dead MERGE registered as %v, want one UPDATE of 1 row", kinds)
	}
}

// TestKilledMergeKept: a MERGE INTO a change-tracked keyed table that
// updates 2,000,000 keys and deletes 10, killed while its rows go in.
// Whatever it wrote is kept and registered, and the change log names no
// deletion of a key the table still holds.
func TestKilledMergeKept(t *testing.T) {
	s := newStack(t)
	const n = 2_000_000
	s.volume("akm_vol", "akm", false)
	s.put("akm/rows.csv", csvRows(0, n))
	s.run(`CREATE TABLE akm (id BIGINT, name STRING, PRIMARY KEY (id))`)
	s.run(`ALTER TABLE akm SET PROPERTIES ('change_tracking' = 'true')`)
	s.pipeTable("akm_src")
	s.run(`COPY INTO akm FROM VOLUME akm_vol USING CSV`)
	s.run(`COPY INTO akm_src FROM VOLUME akm_vol USING CSV`)
	cmd := exec.Command(lakepipeBin(t), "sql", "-e", `MERGE INTO akm t USING akm_src s ON t.id = s.id
		WHEN MATCHED AND s.id < 10 THEN DELETE WHEN MATCHED THEN UPDATE SET name = 'merged'`)
	cmd.Env = append(os.Environ(), "LAKEPIPE_SCHEMA="+s.Schema, "LAKEPIPE_CLICKHOUSE_ADDR="+chAddr)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	must(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	into := "INSERT INTO " + chsql.Table(s.Schema, "akm") + " "
	pipeWait(t, 2*time.Minute, "the MERGE's rows going in", func() bool {
		v, err := s.Store.Strings(s.Ctx, "SELECT toString(count()) FROM system.processes WHERE startsWith(query, "+chsql.QuoteString(into)+")")
		must(t, err)
		return v[0] != "0"
	})
	must(t, cmd.Process.Kill())
	_ = cmd.Wait()
	pipeWait(t, 2*time.Minute, "the INSERT ends on the server", func() bool {
		v, err := s.Store.Strings(s.Ctx, "SELECT toString(count()) FROM system.processes WHERE startsWith(query, "+chsql.QuoteString(into)+")")
		must(t, err)
		return v[0] == "0"
	})
	muts, err := s.Store.Strings(s.Ctx, "SELECT toString(count()) FROM system.mutations WHERE database = "+chsql.QuoteString(s.Schema)+" AND table = 'akm'")
	must(t, err)
	if muts[0] != "0" {
		t.Skipf("the MERGE's delete was issued before the kill (the test wants the process dead before it)")
	}
	merged, err := s.Store.Strings(s.Ctx, "SELECT toString(countIf(name = 'merged')) FROM "+chsql.Table(s.Schema, "akm"))
	must(t, err)
	t.Logf("rows of the MERGE in the table when it was killed: %s", merged[0])
	time.Sleep(5 * time.Second) // the sweep's age below: the lease is older, not renewed since the kill
	if _, err := s.Eng.SweepAbandoned(s.Ctx, 3*time.Second); err != nil {
		t.Fatal(err)
	}
	wantRows(t, "the keys the MERGE did not delete", s.run(`SELECT COUNT(*) FROM akm WHERE id < 10`), "10")
	claims, err := s.Store.Strings(s.Ctx, fmt.Sprintf("SELECT toString(id) FROM %s WHERE %s = 'DELETE' AND id < 10",
		chsql.Table(schemas.ChangesDB, changes.ChangesTable(s.Schema, "akm")), changes.ChangeTypeColumn))
	must(t, err)
	if len(claims) != 0 {
		t.Fatalf("the change log claims keys %v deleted, which the table holds:\n%s", claims, out.String())
	}
	open, err := s.Store.Strings(s.Ctx, "SELECT toString(count()) FROM (SELECT commit_id FROM lakepipe.open_commits WHERE db = "+chsql.QuoteString(s.Schema)+" AND table = 'akm' GROUP BY commit_id HAVING sum(sign) > 0)")
	must(t, err)
	if open[0] != "0" {
		t.Fatalf("%s loads left open after the sweep, want 0", open[0])
	}
}
