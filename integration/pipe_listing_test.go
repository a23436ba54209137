//go:build integration

package integration

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/lakepipe/lakepipe/internal/core"
	"github.com/lakepipe/lakepipe/internal/jobs"
	"github.com/lakepipe/lakepipe/internal/loading"
	"github.com/lakepipe/lakepipe/internal/runcache"
	"github.com/lakepipe/lakepipe/worker"
)

// TestPipeIncrementalListing: a LIST pipe whose files arrive in key order
// lists only what follows its cursor (DESC PIPE EXTENDED's listing says
// so, and the cursor stays 256 handled keys behind the newest, for
// uploads that land out of order); a file uploaded in that window loads
// at the next turn; a file whose key sorts before the cursor is found by
// the next full listing (here every 15 s), which also still says the
// order holds. Every file loads once.
func TestPipeIncrementalListing(t *testing.T) {
	s := newStack(t)
	cfg := temporalConfig("it-" + s.ID)
	record := os.Getenv("LAKEPIPE_RECORD_HISTORY")
	if record != "" {
		cfg.Codec = nil // for workflows/testdata, which replays without keys
	}
	s.Eng, s.Orch, _ = pipeWorkerWith(t, s.Eng, s.Schema, cfg, func(c *worker.Config) { c.FullListingInterval = 15 * time.Second })
	s.volume("inc_vol", "inc", false)
	s.pipeTable("t")
	s.run(`CREATE PIPE inc_pipe INGEST_MODE = 'LIST' POLL_INTERVAL_IN_SECONDS = '1' AS COPY INTO t FROM VOLUME inc_vol USING CSV`)

	const files = 600
	c := rawS3(t)
	put := func(rel string, id int) {
		t.Helper()
		data := csvRows(id, 1)
		if _, err := c.PutObject(s.Ctx, s3Bucket, s.key(rel), strings.NewReader(string(data)), int64(len(data)), minio.PutObjectOptions{}); err != nil {
			t.Fatalf("upload %s: %v", rel, err)
		}
	}
	s.putMany(files, func(i int) string { return fmt.Sprintf("inc/b%05d.csv", i) }, func(i int) []byte { return csvRows(i, 1) })
	pipeWait(t, 2*time.Minute, "the 600 files did not load", func() bool { return s.pipeCount("t") == files })

	// Turns list from the cursor, 256 handled keys behind the newest.
	var d map[string]string
	pipeWait(t, time.Minute, "the listing did not become incremental", func() bool {
		d = s.pipeDesc("inc_pipe")
		return strings.Contains(d["listing"], `incremental: after "b00343.csv"`)
	})
	t.Logf("listing: %s", d["listing"])
	fullBefore := d["listing"][strings.Index(d["listing"], "last full listing"):]

	// Into the window after the cursor, and before it.
	put("inc/b00400x.csv", 1000)
	put("inc/a_late.csv", 1001)
	pipeWait(t, 30*time.Second, "a file after the cursor did not load", func() bool {
		return s.pipeScalar("SELECT count() FROM t WHERE id = 1000") == "1"
	})
	d = s.pipeDesc("inc_pipe")
	if s.pipeScalar("SELECT count() FROM t WHERE id = 1001") == "1" && strings.Contains(d["listing"], fullBefore) {
		t.Fatalf("a file before the cursor loaded without a full listing: %s", d["listing"])
	}
	pipeWait(t, time.Minute, "a file before the cursor was not found by the full listing", func() bool {
		return s.pipeScalar("SELECT count() FROM t WHERE id = 1001") == "1"
	})
	s.pipeWaitTurns("inc_pipe", 2, 30*time.Second)
	if n := s.pipeCount("t"); n != files+2 {
		t.Fatalf("t has %d rows, want %d (each file once)", n, files+2)
	}
	if got := s.pipeScalar("SELECT count() FROM load_history('t') WHERE status = 'LOADED'"); got != fmt.Sprint(files+2) {
		t.Fatalf("load_history shows %s LOADED files, want %d", got, files+2)
	}
	if d = s.pipeDesc("inc_pipe"); !strings.Contains(d["listing"], "incremental") {
		t.Fatalf("after the full listing: %s, want still incremental (the late file was the only one out of order… and it is now handled)", d["listing"])
	}
	if record != "" {
		recordDroppedPipe(t, s, "inc_pipe", record, "pipe_local_listing.json")
	}
}

// TestPipeListingFilters: a pipe with SUBDIRECTORY and REGEXP loads only
// the files both select, on its full and on its incremental turns.
func TestPipeListingFilters(t *testing.T) {
	s := newStack(t)
	s.withWorker()
	s.volume("flt_vol", "flt", false)
	s.pipeTable("t")
	s.run(`CREATE PIPE flt_pipe INGEST_MODE = 'LIST' POLL_INTERVAL_IN_SECONDS = '1' AS COPY INTO t FROM VOLUME flt_vol USING CSV SUBDIRECTORY 'in/' REGEXP '.*[.]csv$'`)
	c := rawS3(t)
	put := func(rel string, id int) {
		t.Helper()
		data := csvRows(id, 1)
		if _, err := c.PutObject(s.Ctx, s3Bucket, s.key("flt/"+rel), strings.NewReader(string(data)), int64(len(data)), minio.PutObjectOptions{}); err != nil {
			t.Fatalf("upload %s: %v", rel, err)
		}
	}
	put("in/a1.csv", 1)
	put("in/a2.txt", 2)  // not selected by REGEXP
	put("out/a3.csv", 3) // not in SUBDIRECTORY
	pipeWait(t, time.Minute, "in/a1.csv did not load", func() bool { return s.pipeScalar("SELECT count() FROM t WHERE id = 1") == "1" })
	pipeWait(t, time.Minute, "the listing did not become incremental", func() bool {
		return strings.HasPrefix(s.pipeDesc("flt_pipe")["listing"], "incremental")
	})
	put("in/b1.csv", 4)
	put("in/b2.txt", 5)
	put("out/b3.csv", 6)
	pipeWait(t, time.Minute, "in/b1.csv did not load on an incremental turn", func() bool { return s.pipeScalar("SELECT count() FROM t WHERE id = 4") == "1" })
	s.pipeWaitTurns("flt_pipe", 2, 30*time.Second)
	if n, sum := s.pipeScalar("SELECT count(*) FROM t"), s.pipeScalar("SELECT sum(id) FROM t"); n != "2" || sum != "5" {
		t.Fatalf("%s rows with ids summing to %s, want ids 1 and 4 (only in/*.csv)", n, sum)
	}
}

// TestOpenPipeSeesCatalogChanges: a worker keeps a pipe it opened between
// turns, checking with one query that the pipe, its table, volume and
// connection are unchanged; a change to any of them gives the next turn a
// newly built one, and a dropped pipe is gone at once.
func TestOpenPipeSeesCatalogChanges(t *testing.T) {
	s := newStack(t)
	s.withWorker()
	s.volume("oc_vol", "oc", false)
	s.pipeTable("t")
	s.run(`CREATE PIPE oc_pipe INGEST_MODE = 'LIST' POLL_INTERVAL_IN_SECONDS = '3600' AS COPY INTO t FROM VOLUME oc_vol USING CSV`)
	params := jobs.PipeParams{Workspace: "default", Schema: s.Schema, Name: "oc_pipe", Kind: "VOLUME"}
	open := func() *loading.PipeRun {
		t.Helper()
		r, err := s.Eng.OpenPipe(s.Ctx, params)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	a, b := open(), open()
	c := open()
	if b != c {
		t.Fatal("an unchanged pipe was built again")
	}
	_ = a // the first turn builds twice (see OpenPipe)
	s.run(`DROP TABLE t`)
	s.run(`CREATE TABLE t (id BIGINT, name STRING, note STRING)`)
	d := open()
	if d == c {
		t.Fatal("the pipe's table was made again and the worker kept the run built for the old one")
	}
	if e := open(); e != d {
		t.Fatal("the rebuilt run was not kept")
	}
	// A pipe dropped and created again under the same name: an activity
	// of the old one (its generation in its parameters) finds it gone,
	// whatever its runs were, and the new one opens.
	old, err := s.Eng.PipeParams(s.Ctx, "oc_pipe")
	if err != nil || old.Generation == 0 {
		t.Fatalf("pipe parameters %+v, %v: want a generation", old, err)
	}
	if _, err := s.Eng.OpenPipe(s.Ctx, old); err != nil {
		t.Fatal(err)
	}
	s.run(`DROP PIPE oc_pipe`)
	if _, err := s.Eng.OpenPipe(s.Ctx, params); !errors.Is(err, core.ErrPipeGone) {
		t.Fatalf("a dropped pipe opened: %v", err)
	}
	s.run(`CREATE TABLE t2 (id BIGINT, name STRING)`)
	s.run(`CREATE PIPE oc_pipe INGEST_MODE = 'LIST' POLL_INTERVAL_IN_SECONDS = '3600' AS COPY INTO t2 FROM VOLUME oc_vol USING CSV`)
	if _, err := s.Eng.OpenPipe(s.Ctx, old); !errors.Is(err, core.ErrPipeGone) {
		t.Fatalf("an activity of the dropped pipe opened the new one of the same name: %v", err)
	}
	cur, err := s.Eng.PipeParams(s.Ctx, "oc_pipe")
	if err != nil {
		t.Fatal(err)
	}
	if r, err := s.Eng.OpenPipe(s.Ctx, cur); err != nil || r.Spec.CreatedAt.UnixNano() != cur.Generation {
		t.Fatalf("the new pipe did not open: %v", err)
	}
}

// The listings of idle pipes check the catalog in batches
// (runcache.Unhurried): asks made together are answered by one query, and
// each still sees a change made before it asked, its own and no other's.
func TestUnhurriedOpenPipeBatchesChecks(t *testing.T) {
	s := newStack(t)
	s.withWorker()
	s.volume("ub_vol1", "ub1", false)
	s.volume("ub_vol2", "ub2", false)
	s.run(`CREATE TABLE ub_t1 (id BIGINT, name STRING)`)
	s.run(`CREATE TABLE ub_t2 (id BIGINT, name STRING)`)
	s.run(`CREATE PIPE ub_p1 INGEST_MODE = 'LIST' POLL_INTERVAL_IN_SECONDS = '3600' AS COPY INTO ub_t1 FROM VOLUME ub_vol1 USING CSV`)
	s.run(`CREATE PIPE ub_p2 INGEST_MODE = 'LIST' POLL_INTERVAL_IN_SECONDS = '3600' AS COPY INTO ub_t2 FROM VOLUME ub_vol2 USING CSV`)
	params := func(name string) jobs.PipeParams {
		return jobs.PipeParams{Workspace: "default", Schema: s.Schema, Name: name, Kind: "VOLUME"}
	}
	// Both opened at once, unhurried; want[i] is the run each must get
	// (nil: a new one).
	both := func(want ...*loading.PipeRun) [2]*loading.PipeRun {
		t.Helper()
		var got [2]*loading.PipeRun
		var errs [2]error
		var wg sync.WaitGroup
		for i, name := range []string{"ub_p1", "ub_p2"} {
			wg.Go(func() { got[i], errs[i] = s.Eng.OpenPipe(runcache.Unhurried(s.Ctx), params(name)) })
		}
		wg.Wait()
		for i := range got {
			if errs[i] != nil {
				t.Fatal(errs[i])
			}
			if want != nil && (want[i] == nil) != (got[i] != want[i]) {
				t.Fatalf("pipe %d: kept %v, want kept %v", i+1, got[i] == want[i], want[i] != nil)
			}
		}
		return got
	}
	both()
	first := both()
	kept := both(first[0], first[1])
	s.run(`DROP TABLE ub_t2`)
	s.run(`CREATE TABLE ub_t2 (id BIGINT, name STRING, note STRING)`)
	after := both(kept[0], nil)
	both(kept[0], after[1])
}

// TestListingCursorAfterBatch: a listing that hands over a batch says
// where the cursor goes once the batch is loaded (256 keys behind its
// last file), so that the next turn lists from there and not again
// through the batch; a file it could not take (the backlog) ends that
// run. Only a listing that shows the order says so: one with no handled
// key before its batch (the pipe's first), or with a handled key after one
// to load (writers into several folders), leaves the cursor where it is.
// Called on the pipe's own ListFiles and LoadBatch, the pipe's turns an
// hour apart.
func TestListingCursorAfterBatch(t *testing.T) {
	s := newStack(t)
	s.withWorker()
	s.volume("ca_vol", "ca", false)
	s.pipeTable("ca_t")
	s.run(`CREATE PIPE ca_pipe INGEST_MODE = 'LIST' POLL_INTERVAL_IN_SECONDS = '3600' AS COPY INTO ca_t FROM VOLUME ca_vol USING CSV`)
	pipeWait(t, time.Minute, "the pipe's first turn", func() bool { return s.pipeTurns("ca_pipe") >= 1 })
	// Its first turn found nothing; the next is an hour away.
	s.putMany(400, func(i int) string { return fmt.Sprintf("ca/f%03d.csv", i) }, func(i int) []byte { return csvRows(i, 1) })
	params, err := s.Eng.PipeParams(s.Ctx, "ca_pipe")
	must(t, err)
	run, err := s.Eng.OpenPipe(s.Ctx, params)
	must(t, err)
	ordered := jobs.ListState{Ordered: true, FullAt: time.Now()}
	list := func(limit int, cursor string) jobs.ListResult {
		t.Helper()
		st := ordered
		st.Cursor = cursor
		res, err := run.ListFiles(s.Ctx, nil, limit, st)
		must(t, err)
		return res
	}

	first := list(300, "")
	if len(first.Files) != 300 || first.Backlog != 100 || first.State.Cursor != "" || first.CursorAfter != "" {
		t.Fatalf("first listing: %d files, backlog %d, cursor %q, after the batch %q; want 300, 100, and the cursor staying: nothing handled shows the order",
			len(first.Files), first.Backlog, first.State.Cursor, first.CursorAfter)
	}
	if _, err := run.LoadBatch(s.Ctx, first.Files, 4); err != nil {
		t.Fatal(err)
	}
	// 300 handled, then a batch of 50 of the 100 left: the cursor 256
	// keys behind f299.csv, after the batch 256 behind f349.csv.
	second := list(50, "")
	if len(second.Files) != 50 || second.Backlog != 50 || second.State.Cursor != "f043.csv" || second.CursorAfter != "f093.csv" {
		t.Fatalf("second listing: %d files, backlog %d, cursor %q, after the batch %q; want 50, 50, f043.csv, f093.csv",
			len(second.Files), second.Backlog, second.State.Cursor, second.CursorAfter)
	}
	// From the cursor: the 256 handled keys after it, then all 100.
	third := list(300, "f043.csv")
	if len(third.Files) != 100 || third.Files[0].Path != "f300.csv" || third.State.Cursor != "f043.csv" || third.CursorAfter != "f143.csv" {
		t.Fatalf("listing from the cursor: %d files from %v, cursor %q, after the batch %q; want 100 from f300.csv, f043.csv, f143.csv",
			len(third.Files), third.Files, third.State.Cursor, third.CursorAfter)
	}

	// A file among handled ones: the order does not hold.
	s.put("ca/f100x.csv", csvRows(1000, 1))
	mixed := list(300, "")
	if len(mixed.Files) != 101 || mixed.CursorAfter != "" {
		t.Fatalf("a file among handled ones: %d files, after the batch %q; want 101, and the cursor staying", len(mixed.Files), mixed.CursorAfter)
	}
}
