//go:build integration

package integration

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"

	"github.com/lakepipe/lakepipe/internal/catalog"
	"github.com/lakepipe/lakepipe/internal/chsql"
	"github.com/lakepipe/lakepipe/internal/chstore"
	"github.com/lakepipe/lakepipe/internal/core"
	"github.com/lakepipe/lakepipe/internal/engine"
	"github.com/lakepipe/lakepipe/internal/sqlparse"
	"github.com/lakepipe/lakepipe/schemas"
)

// streamRows reads a stream (or any query) as sorted "a|b|…" lines.
func (s *Stack) streamRows(q string) []string {
	s.T.Helper()
	rows := table(s.run(q))
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = strings.Join(r, "|")
	}
	sort.Strings(out)
	return out
}

// waitStream polls a query until it returns want (sorted lines); changes
// become readable about 2 s after their commit.
func (s *Stack) waitStream(q string, want ...string) {
	s.T.Helper()
	sort.Strings(want)
	var got []string
	pipeWait(s.T, 20*time.Second, fmt.Sprintf("%s returns %q (last: %q)", q, want, &got), func() bool {
		got = s.streamRows(q)
		return strings.Join(got, "\n") == strings.Join(want, "\n")
	})
}

// otherProcess is the stack as another lakepipe process sees it: an
// engine with a catalog (and caches) of its own.
func (s *Stack) otherProcess() *Stack {
	s.T.Helper()
	cat, err := catalog.Open(s.Ctx, s.Store)
	must(s.T, err)
	return &Stack{T: s.T, Ctx: s.Ctx, Store: s.Store, Schema: s.Schema, Eng: engine.New(cat, core.Config{Workspace: "default", Schema: s.Schema})}
}

// execEach runs n statements, the i-th stmt(i), one after the other; for
// writers in goroutines, it returns the first error instead of failing.
func (s *Stack) execEach(n int, stmt func(i int) string) error {
	for i := range n {
		stmts, err := sqlparse.ParseScript(stmt(i))
		if err == nil {
			_, err = s.Eng.Exec(s.Ctx, stmts[0])
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// TestStreamAppendOnlyFromPipe: rows a pipe loads appear in an APPEND_ONLY
// stream; INSERT … SELECT … FROM the stream consumes it (a second consume
// reads nothing); a consume that fails leaves the offset where it was.
func TestStreamAppendOnlyFromPipe(t *testing.T) {
	s := newStack(t)
	s.withWorker()
	s.run(`CREATE TABLE orders (id INT, amount DECIMAL(10,2), status STRING)`)
	s.run(`ALTER TABLE orders SET PROPERTIES ('change_tracking' = 'true')`)
	s.run(`CREATE TABLE order_sink (id INT, amount DECIMAL(10,2), change_type STRING)`)
	s.run(`CREATE TABLE STREAM orders_stream ON TABLE orders WITH PROPERTIES ('TABLE_STREAM_MODE' = 'APPEND_ONLY') COMMENT 'new orders'`)

	vol := s.volume("orders_vol", "incoming", false)
	s.run(`CREATE PIPE orders_pipe INGEST_MODE = 'LIST_PURGE' POLL_INTERVAL_IN_SECONDS = '1' AS COPY INTO orders FROM VOLUME ` + vol +
		` (id INT, amount DECIMAL(10,2), status STRING) USING CSV OPTIONS('header' = 'true') PURGE = TRUE`)
	s.dropAtEnd("PIPE", "orders_pipe")
	s.put("incoming/a.csv", []byte("id,amount,status\n1,10.50,NEW\n2,20.00,NEW\n"))
	s.waitStream(`SELECT id, amount, status, __change_type FROM orders_stream`, "1|10.50|NEW|INSERT", "2|20.00|NEW|INSERT")
	// Reading does not move the offset.
	s.waitStream(`SELECT id FROM orders_stream`, "1", "2")
	if v := s.pipeScalar(`SELECT COUNT(*) FROM orders_stream WHERE __commit_version > 0 AND __commit_timestamp > '2026-01-01 00:00:00'`); v != "2" {
		t.Fatalf("metadata columns: %s rows with a commit version and time, want 2", v)
	}

	// A consume that fails (a value that does not convert) leaves it.
	s.mustFail(`INSERT INTO order_sink SELECT id, amount / (id - id), __change_type FROM orders_stream`)
	s.waitStream(`SELECT id FROM orders_stream`, "1", "2")

	s.run(`INSERT INTO order_sink SELECT id, amount, __change_type FROM orders_stream`)
	wantRows(t, "sink", s.run(`SELECT id, amount, change_type FROM order_sink ORDER BY id`), "1|10.50|INSERT", "2|20.00|INSERT")
	if got := s.streamRows(`SELECT id FROM orders_stream`); len(got) != 0 {
		t.Fatalf("stream after consume: %v, want nothing", got)
	}
	s.run(`INSERT INTO order_sink SELECT id, amount, __change_type FROM orders_stream`)
	if n := s.pipeCount("order_sink"); n != 2 {
		t.Fatalf("a second consume wrote rows: %d in the sink, want 2", n)
	}

	// New files: only they show.
	s.put("incoming/b.csv", []byte("id,amount,status\n3,30.00,NEW\n"))
	s.waitStream(`SELECT id, __change_type FROM orders_stream`, "3|INSERT")
	// APPEND_ONLY ignores deletes and updates.
	s.run(`DELETE FROM orders WHERE id = 1`)
	s.run(`UPDATE orders SET status = 'PAID' WHERE id = 2`)
	time.Sleep(2500 * time.Millisecond)
	if got := s.streamRows(`SELECT id, __change_type FROM orders_stream`); strings.Join(got, ",") != "3|INSERT" {
		t.Fatalf("APPEND_ONLY stream after DELETE and UPDATE: %v, want only 3|INSERT", got)
	}

	d := map[string]string{}
	for _, r := range table(s.run(`DESC TABLE STREAM orders_stream`)) {
		d[r[0]] = r[1]
	}
	if d["mode"] != "APPEND_ONLY" || !strings.HasSuffix(d["table_name"], ".orders") || d["stale"] != "false" || d["comment"] != "new orders" || d["last_consumed_time"] == "" {
		t.Fatalf("DESC TABLE STREAM: %v", d)
	}
	sh := s.run(`SHOW TABLE STREAMS LIKE 'orders%'`)
	if rows := table(sh); len(rows) != 1 || rows[0][column(t, sh, "mode")] != "APPEND_ONLY" {
		t.Fatalf("SHOW TABLE STREAMS:\n%s", rowsText(sh))
	}
	s.run(`DROP TABLE STREAM orders_stream`)
	s.mustFail(`SELECT * FROM orders_stream`, "orders_stream", "does not exist")
	s.run(`DROP TABLE STREAM IF EXISTS orders_stream`)
}

// TestStreamStandard: UPDATE shows UPDATE_BEFORE/UPDATE_AFTER pairs, DELETE
// shows DELETE; a row added and removed since the offset shows nothing;
// two streams on one table keep independent offsets.
func TestStreamStandard(t *testing.T) {
	s := newStack(t)
	s.run(`CREATE TABLE acct (id INT, balance BIGINT, owner STRING)`)
	s.run(`INSERT INTO acct VALUES (1, 100, 'ann'), (2, 200, 'bob'), (3, 300, 'cid')`)
	// Creating a stream turns change tracking on.
	s.run(`CREATE TABLE STREAM acct_changes ON TABLE acct`)
	s.run(`CREATE TABLE STREAM acct_audit ON TABLE acct WITH PROPERTIES ('TABLE_STREAM_MODE' = 'STANDARD')`)
	if d := s.run(`DESC TABLE EXTENDED acct`); !strings.Contains(rowsText(d), "change_tracking") {
		t.Fatalf("DESC TABLE EXTENDED acct does not show change_tracking:\n%s", rowsText(d))
	}
	// Rows from before the stream are not changes.
	time.Sleep(2500 * time.Millisecond)
	if got := s.streamRows(`SELECT * FROM acct_changes`); len(got) != 0 {
		t.Fatalf("new stream shows %v, want nothing", got)
	}

	s.run(`UPDATE acct SET balance = 150 WHERE id = 1`)
	s.run(`DELETE FROM acct WHERE id = 2`)
	s.run(`INSERT INTO acct VALUES (4, 400, 'dan'), (5, 500, 'eve')`)
	s.run(`DELETE FROM acct WHERE id = 5`) // added and removed: no change
	want := []string{"1|100|ann|UPDATE_BEFORE", "1|150|ann|UPDATE_AFTER", "2|200|bob|DELETE", "4|400|dan|INSERT"}
	q := `SELECT id, balance, owner, __change_type FROM acct_changes`
	s.waitStream(q, want...)
	wantRows(t, "table", s.run(`SELECT id, balance FROM acct ORDER BY id`), "1|150", "3|300", "4|400")

	// Commit versions order the changes.
	res := table(s.run(`SELECT __change_type, __commit_version FROM acct_changes ORDER BY __commit_version, __change_type`))
	if len(res) != 4 || res[0][0] != "UPDATE_AFTER" || res[1][0] != "UPDATE_BEFORE" || res[2][0] != "DELETE" || res[3][0] != "INSERT" {
		t.Fatalf("changes in commit order: %v", res)
	}

	// Consuming one stream leaves the other.
	s.run(`CREATE TABLE acct_log (id INT, balance BIGINT, change_type STRING)`)
	s.run(`INSERT INTO acct_log SELECT id, balance, __change_type FROM acct_changes`)
	if n := s.pipeCount("acct_log"); n != 4 {
		t.Fatalf("consumed %d changes, want 4", n)
	}
	if got := s.streamRows(q); len(got) != 0 {
		t.Fatalf("acct_changes after consume: %v", got)
	}
	s.waitStream(`SELECT id, balance, owner, __change_type FROM acct_audit`, want...)

	s.run(`UPDATE acct SET owner = 'CID' WHERE id = 3`)
	s.waitStream(q, "3|300|cid|UPDATE_BEFORE", "3|300|CID|UPDATE_AFTER")
	s.waitStream(`SELECT id, __change_type FROM acct_audit`, append([]string{"1|UPDATE_BEFORE", "1|UPDATE_AFTER", "2|DELETE", "4|INSERT"}, "3|UPDATE_BEFORE", "3|UPDATE_AFTER")...)

	// A row added before a consume's horizon and removed just after it:
	// the consume gets its INSERT, the next read its DELETE.
	s.run(`CREATE TABLE STREAM acct_race ON TABLE acct`)
	s.run(`INSERT INTO acct VALUES (6, 600, 'fay')`)
	time.Sleep(2500 * time.Millisecond)
	s.run(`DELETE FROM acct WHERE id = 6`)
	s.run(`INSERT INTO acct_log SELECT id, balance, __change_type FROM acct_race`)
	wantRows(t, "consumed around a delete", s.run(`SELECT id, balance, change_type FROM acct_log WHERE id = 6`), "6|600|INSERT")
	s.waitStream(`SELECT id, __change_type FROM acct_race`, "6|DELETE")
	s.run(`INSERT INTO acct VALUES (6, 600, 'fay')`) // as it was, for the checks below
	s.run(`DELETE FROM acct WHERE id = 6`)

	// SHOW_INITIAL_ROWS: the first read shows the rows already there.
	s.run(`CREATE TABLE STREAM acct_all ON TABLE acct WITH PROPERTIES ('SHOW_INITIAL_ROWS' = 'TRUE')`)
	s.waitStream(`SELECT id, __change_type FROM acct_all`, "1|INSERT", "3|INSERT", "4|INSERT")

	// A column added to a tracked table reaches its change log too.
	s.run(`ALTER TABLE acct ADD COLUMN note STRING`)
	s.run(`INSERT INTO acct_log SELECT id, balance, __change_type FROM acct_changes`)
	s.run(`UPDATE acct SET note = 'vip' WHERE id = 4`)
	s.waitStream(`SELECT id, note, __change_type FROM acct_changes`, "4|NULL|UPDATE_BEFORE", "4|vip|UPDATE_AFTER")

	// Errors name the object and the fix.
	s.mustFail(`CREATE TABLE STREAM acct_changes ON TABLE acct`, "already exists")
	s.mustFail(`CREATE TABLE STREAM x ON TABLE nope`, "nope", "does not exist")
	s.mustFail(`CREATE TABLE STREAM x ON TABLE acct WITH PROPERTIES ('TABLE_STREAM_MODE' = 'INSERT_ONLY')`, "APPEND_ONLY")
	s.mustFail(`CREATE TABLE STREAM x ON TABLE acct WITH PROPERTIES ('COLOR' = 'red')`, "unknown property", "TABLE_STREAM_MODE")
	s.run(`CREATE OR REPLACE TABLE STREAM acct_changes ON TABLE acct`)
}

// TestStreamStale: a stream whose offset is older than what the change log
// keeps fails with how to recreate it.
func TestStreamStale(t *testing.T) {
	s := newStack(t)
	s.run(`CREATE TABLE ev (id INT)`)
	s.run(`CREATE TABLE STREAM ev_s ON TABLE ev`)
	s.run(`INSERT INTO ev VALUES (1), (2)`)
	// A trim that forgets no removal leaves the stream as it is.
	if err := s.Eng.TrimChangeLog(s.Ctx, s.Schema, "ev", time.Now()); err != nil {
		t.Fatal(err)
	}
	s.waitStream(`SELECT id FROM ev_s`, "1", "2")
	s.run(`DELETE FROM ev WHERE id = 2`)
	// Trim the change log as maintenance does past data_retention_days:
	// everything before now, the DELETE's removed row with it.
	if err := s.Eng.TrimChangeLog(s.Ctx, s.Schema, "ev", time.Now()); err != nil {
		t.Fatal(err)
	}
	s.mustFail(`SELECT * FROM ev_s`, "ev_s", "stale", "CREATE OR REPLACE TABLE STREAM ev_s")
	sh := s.run(`SHOW TABLE STREAMS`)
	if rows := table(sh); len(rows) != 1 || rows[0][column(t, sh, "stale")] != "true" {
		t.Fatalf("SHOW TABLE STREAMS:\n%s", rowsText(sh))
	}
	s.run(`CREATE OR REPLACE TABLE STREAM ev_s ON TABLE ev`)
	s.run(`INSERT INTO ev VALUES (2)`)
	s.waitStream(`SELECT id, __change_type FROM ev_s`, "2|INSERT")
}

// TestStreamCachedSpecs: a process caches a stream's spec for its reads;
// another process consuming the stream, adding a column to its table or
// dropping the stream must show in the first process's next read (its
// cached specs fail their version check in ClickHouse and are read again).
func TestStreamCachedSpecs(t *testing.T) {
	s := newStack(t)
	s.run(`CREATE TABLE events (id BIGINT, kind STRING)`)
	s.run(`ALTER TABLE events SET PROPERTIES ('change_tracking' = 'true')`)
	s.run(`CREATE TABLE STREAM events_stream ON TABLE events`)
	s.run(`CREATE TABLE sink (id BIGINT)`)
	s.run(`INSERT INTO events VALUES (1, 'a'), (2, 'b')`)
	s.waitStream(`SELECT id FROM events_stream`, "1", "2") // cached now

	// Reads with nothing written meanwhile: the cached values are checked
	// by the parts token alone, the change log is not read again (but for
	// a read that follows a background merge of the catalog).
	logged := *s
	logged.Ctx = chstore.WithSettings(s.Ctx, clickhouse.Settings{"log_queries": 1})
	since := time.Now().Add(-time.Second)
	const reads = 5
	for range reads {
		if got := logged.streamRows(`SELECT id FROM events_stream`); !slices.Equal(got, []string{"1", "2"}) {
			t.Fatalf("read again: %v", got)
		}
	}
	must(t, s.Store.Exec(s.Ctx, "SYSTEM FLUSH LOGS"))
	checks, err := s.Store.Strings(s.Ctx, fmt.Sprintf("SELECT toString(count()) FROM system.query_log WHERE type = 2 AND event_time >= toDateTime(%d) AND query LIKE %s",
		since.Unix(), chsql.QuoteString("%FROM lakepipe.table_commits WHERE %db = "+chsql.QuoteString(s.Schema)+"%")))
	must(t, err)
	if n, _ := strconv.Atoi(checks[0]); n > 2 {
		t.Fatalf("%d reads with nothing written read the change log %d times, want at most 2", reads, n)
	}

	other := s.otherProcess()
	other.run(`INSERT INTO sink SELECT id FROM events_stream`)
	if got := s.streamRows(`SELECT id FROM events_stream`); len(got) != 0 {
		t.Fatalf("after another process consumed the stream, this one still reads %v", got)
	}
	other.run(`ALTER TABLE events ADD COLUMN note STRING`)
	s.run(`INSERT INTO events (id, kind, note) VALUES (3, 'c', 'new column')`)
	s.waitStream(`SELECT id, note FROM events_stream`, "3|new column")
	if got := s.streamRows(`SELECT * FROM events_stream`); len(got) != 1 || !strings.HasPrefix(got[0], "3|c|new column|INSERT|") {
		t.Fatalf("SELECT * after another process added a column: %v", got)
	}
	// A commit by another process shows in this one's very next read: the
	// commits this process cached are checked while its query runs.
	other.run(`INSERT INTO events (id, kind, note) VALUES (4, 'd', 'other process')`)
	time.Sleep(2500 * time.Millisecond) // readable 2 s after the commit
	if got := s.streamRows(`SELECT id FROM events_stream`); !slices.Equal(got, []string{"3", "4"}) {
		t.Fatalf("after another process inserted row 4, this one reads %v, want [3 4]", got)
	}
	other.run(`DROP TABLE STREAM events_stream`)
	s.mustFail(`SELECT id FROM events_stream`, "does not exist")
}

// TestDeleteDuringInserts: a DELETE on a change-tracked table removes the
// rows it kept in the change log and no others, even while other writers
// add rows that match its WHERE. Rows inserted while it runs either stay
// or were kept: every row ever inserted is in the table or in the change
// log, never lost without a trace (which a stream would never show go).
func TestDeleteDuringInserts(t *testing.T) {
	s := newStack(t)
	s.run(`CREATE TABLE churn (id BIGINT, grp STRING)`)
	s.run(`ALTER TABLE churn SET PROPERTIES ('change_tracking' = 'true')`)
	const writers, perWriter = 2, 150
	// during runs stmt over and over while the writers insert rows of grp
	// (ids from first), and returns how many times it ran.
	during := func(stmt, grp string, first int) int {
		done := make(chan error, writers)
		for w := 0; w < writers; w++ {
			go func() {
				done <- s.execEach(perWriter, func(i int) string {
					return fmt.Sprintf(`INSERT INTO churn VALUES (%d, '%s')`, first+w*perWriter+i, grp)
				})
			}()
		}
		runs := 0
		for finished := 0; finished < writers; {
			select {
			case err := <-done:
				must(t, err)
				finished++
			default:
				s.run(stmt)
				runs++
			}
		}
		return runs
	}
	deletes := during(`DELETE FROM churn WHERE grp = 'x'`, "x", 0)
	counts, err := s.Store.Strings(s.Ctx, "SELECT toString(count()) FROM "+chsql.Table(schemas.ChangesDB, s.Schema+"__churn")+
		" UNION ALL SELECT toString(count() + 1000000) FROM "+chsql.Table(s.Schema, "churn"))
	must(t, err)
	var k, l int
	for _, c := range counts {
		var n int
		fmt.Sscan(c, &n)
		if n >= 1000000 {
			l = n - 1000000
		} else {
			k = n
		}
	}
	if k+l != writers*perWriter {
		t.Fatalf("%d rows inserted; %d left in the table and %d kept in the change log by %d DELETEs: %d lost without a trace", writers*perWriter, l, k, deletes, writers*perWriter-k-l)
	}
	t.Logf("%d DELETEs during %d inserts: %d rows left, %d kept as deleted", deletes, writers*perWriter, l, k)

	// UPDATEs likewise: each one's new rows (still in the table, or kept
	// when a later UPDATE replaced them) match the old rows it kept.
	updates := during(`UPDATE churn SET id = id + 0 WHERE grp = 'z'`, "z", 10000)
	byCommit := func(q string) map[string]int {
		t.Helper()
		res, err := s.Store.Query(s.Ctx, q)
		must(t, err)
		m := map[string]int{}
		for _, r := range res.Rows {
			m[fmt.Sprint(r[0])] = int(r[1].(uint64))
		}
		return m
	}
	changes := chsql.Table(schemas.ChangesDB, s.Schema+"__churn")
	inTable := byCommit("SELECT _lp_commit, count() FROM " + chsql.Table(s.Schema, "churn") + " GROUP BY _lp_commit")
	replaced := byCommit("SELECT _lp_orig_commit, count() FROM " + changes + " GROUP BY _lp_orig_commit")
	before := byCommit("SELECT _lp_commit, count() FROM " + changes + " WHERE _lp_change_type = 'UPDATE_BEFORE' GROUP BY _lp_commit")
	ids, err := s.Store.Strings(s.Ctx, "SELECT toString(commit_id) FROM lakepipe.table_commits WHERE db = "+chsql.QuoteString(s.Schema)+" AND table = 'churn' AND kind = 'UPDATE'")
	must(t, err)
	if len(ids) != updates {
		t.Fatalf("%d UPDATE commits registered, want %d", len(ids), updates)
	}
	for _, u := range ids {
		if after := inTable[u] + replaced[u]; after != before[u] {
			t.Fatalf("UPDATE commit %s wrote %d new rows but kept %d old ones", u, after, before[u])
		}
	}
	t.Logf("%d UPDATEs during %d inserts: each kept as many old rows as it wrote", updates, writers*perWriter)
}

// TestChangeLogPurgedWithTable: a change-tracked table's change log (its
// change table and its commits) stays while the table is in the trash
// (UNDROP needs it) and while a table of the same name exists, and goes
// when the last of them is purged from the trash.
func TestChangeLogPurgedWithTable(t *testing.T) {
	s := newStack(t)
	state := func() (changeTable bool, commits string) {
		n, err := s.Store.Strings(s.Ctx, "SELECT toString(count()) FROM system.tables WHERE database = "+chsql.QuoteString(schemas.ChangesDB)+" AND name = "+chsql.QuoteString(s.Schema+"__ev"))
		must(t, err)
		c, err := s.Store.Strings(s.Ctx, "SELECT toString(count()) FROM lakepipe.table_commits WHERE db = "+chsql.QuoteString(s.Schema)+" AND table = 'ev'")
		must(t, err)
		// The index of what removals took goes with the commits.
		o, err := s.Store.Strings(s.Ctx, "SELECT toString(count()) FROM lakepipe.removal_origins WHERE db = "+chsql.QuoteString(s.Schema)+" AND table = 'ev'")
		must(t, err)
		if (c[0] == "0") != (o[0] == "0") {
			t.Fatalf("ev's commits: %s, its pairs in removal_origins: %s", c[0], o[0])
		}
		return n[0] == "1", c[0]
	}
	// purge empties the trash: an engine that keeps no dropped table
	// drops a table, which purges the trash.
	cat, err := catalog.Open(s.Ctx, s.Store)
	must(t, err)
	purger := &Stack{T: t, Ctx: s.Ctx, Store: s.Store, Schema: s.Schema, Eng: engine.New(cat, core.Config{Workspace: "default", Schema: s.Schema, TrashRetentionDays: -1})}
	purge := func() {
		purger.run(`CREATE TABLE scratch (id BIGINT)`)
		purger.run(`DROP TABLE scratch`)
	}

	s.run(`CREATE TABLE ev (id BIGINT)`)
	s.run(`ALTER TABLE ev SET PROPERTIES ('change_tracking' = 'true')`)
	s.run(`INSERT INTO ev VALUES (1), (2)`)
	s.run(`DELETE FROM ev WHERE id = 1`)
	if ok, c := state(); !ok || c == "0" {
		t.Fatalf("a tracked table with an insert and a delete: change table %v, %s commits", ok, c)
	}
	s.run(`DROP TABLE ev`)
	if ok, c := state(); !ok || c == "0" {
		t.Fatalf("dropped (in the trash): change table %v, %s commits; UNDROP needs them", ok, c)
	}
	// A table of the same name, created since, shares the log's name.
	s.run(`CREATE TABLE ev (id BIGINT)`)
	s.run(`ALTER TABLE ev SET PROPERTIES ('change_tracking' = 'true')`)
	s.run(`INSERT INTO ev VALUES (3)`)
	_, before := state()
	purge()
	if ok, c := state(); !ok || c != before {
		t.Fatalf("old ev purged, new ev live: change table %v, %s commits, want it and %s", ok, c, before)
	}
	s.run(`CREATE TABLE STREAM ev_s ON TABLE ev`)
	s.run(`DELETE FROM ev WHERE id = 3`) // the change table still works
	s.waitStream(`SELECT id, __change_type FROM ev_s`, "3|DELETE")
	s.run(`DROP TABLE STREAM ev_s`)
	s.run(`DROP TABLE ev`)
	purge()
	if ok, c := state(); ok || c != "0" {
		t.Fatalf("every ev purged: change table %v, %s commits; want neither", ok, c)
	}
}

// TestStreamLagsManyCommits: a stream that many commits went past (a
// pipe committing every second, unconsumed for a day) still reads and
// consumes them: the commit lists no longer fit in a query's text. The
// same with a few commits, listed in the query. Both kinds of stream see
// rows inserted and then deleted since their offset: STANDARD as no
// change, APPEND_ONLY as inserts.
func TestStreamLagsManyCommits(t *testing.T) {
	s := newStack(t)
	for _, n := range []int{20000, 50} {
		ev, evS, evA, sink := fmt.Sprintf("ev%d", n), fmt.Sprintf("ev%d_s", n), fmt.Sprintf("ev%d_a", n), fmt.Sprintf("sink%d", n)
		s.run(`CREATE TABLE ` + ev + ` (id BIGINT, v STRING)`)
		s.run(`ALTER TABLE ` + ev + ` SET PROPERTIES ('change_tracking' = 'true')`)
		s.run(`CREATE TABLE STREAM ` + evS + ` ON TABLE ` + ev)
		s.run(`CREATE TABLE STREAM ` + evA + ` ON TABLE ` + ev + ` WITH PROPERTIES ('TABLE_STREAM_MODE' = 'APPEND_ONLY')`)
		s.run(`CREATE TABLE ` + sink + ` (id BIGINT)`)
		// The commits go above both streams' offsets.
		var offset uint64
		for _, st := range []string{evS, evA} {
			d := s.run(`DESC TABLE STREAM ` + st)
			var o uint64
			for _, r := range table(d) {
				if r[0] == "offset_version" {
					o, _ = strconv.ParseUint(r[1], 10, 64)
				}
			}
			if o == 0 {
				t.Fatalf("no offset_version in DESC TABLE STREAM %s:\n%s", st, rowsText(d))
			}
			offset = max(offset, o)
		}
		// n one-row commits, as as many loads would leave them.
		must(t, s.Store.Exec(s.Ctx, fmt.Sprintf("INSERT INTO %s (id, v, %s) SELECT number, 'loaded', 1000000 + number FROM numbers(%d)",
			chsql.Table(s.Schema, ev), chsql.QuoteIdent(core.CommitColumn), n)))
		must(t, s.Store.Exec(s.Ctx, fmt.Sprintf("INSERT INTO lakepipe.table_commits (db, table, version, commit_id, kind, rows, committed_at) "+
			"SELECT %s, %s, %d + number, 1000000 + number, 'INSERT', 1, now() FROM numbers(%d)", chsql.QuoteString(s.Schema), chsql.QuoteString(ev), offset+1, n)))
		s.run(`DELETE FROM ` + ev + ` WHERE id < 10`)
		time.Sleep(2500 * time.Millisecond) // readable 2 s after the commit
		for _, c := range []struct{ stream, want string }{
			{evS, fmt.Sprintf("%d|%d|%d", n-10, offset+11, offset+uint64(n))},
			{evA, fmt.Sprintf("%d|%d|%d", n, offset+1, offset+uint64(n))},
		} {
			got := s.streamRows(`SELECT COUNT(*), MIN(__commit_version), MAX(__commit_version) FROM ` + c.stream)
			if len(got) != 1 || got[0] != c.want {
				t.Fatalf("%s: count, min and max commit version %v, want %s", c.stream, got, c.want)
			}
		}
		s.run(`INSERT INTO ` + sink + ` SELECT id FROM ` + evS)
		if got := s.streamRows(`SELECT COUNT(*), MIN(id) FROM ` + sink); len(got) != 1 || got[0] != fmt.Sprintf("%d|10", n-10) {
			t.Fatalf("consumed into %s: %v, want %d rows from id 10", sink, got, n-10)
		}
		if got := s.streamRows(`SELECT COUNT(*) FROM ` + evS); got[0] != "0" {
			t.Fatalf("after the consume, %s still has %s rows", evS, got[0])
		}
	}
}

// TestDeleteManyCommits: a DELETE whose rows came from more commits than
// fit in a query's text is narrowed to them by a subquery of the change
// log, and its changes show in a stream.
func TestDeleteManyCommits(t *testing.T) {
	s := newStack(t)
	s.run(`CREATE TABLE ev (id BIGINT)`)
	s.run(`ALTER TABLE ev SET PROPERTIES ('change_tracking' = 'true')`)
	must(t, s.Store.Exec(s.Ctx, fmt.Sprintf("INSERT INTO %s (id, %s) SELECT number, 1000000 + number FROM numbers(12000)",
		chsql.Table(s.Schema, "ev"), chsql.QuoteIdent(core.CommitColumn))))
	must(t, s.Store.Exec(s.Ctx, fmt.Sprintf("INSERT INTO lakepipe.table_commits (db, table, version, commit_id, kind, rows, committed_at) "+
		"SELECT %s, 'ev', 1000 + number, 1000000 + number, 'INSERT', 1, now() FROM numbers(12000)", chsql.QuoteString(s.Schema))))
	s.run(`CREATE TABLE STREAM ev_s ON TABLE ev`)
	s.run(`DELETE FROM ev WHERE id >= 1000`) // rows of 11,000 commits
	if got := s.streamRows(`SELECT COUNT(*), MAX(id) FROM ev`); got[0] != "1000|999" {
		t.Fatalf("after the DELETE: %v, want 1000 rows up to id 999", got)
	}
	s.waitStream(`SELECT COUNT(*), MIN(id), __change_type FROM ev_s GROUP BY __change_type`, "11000|1000|DELETE")
}

// TestStreamReadsWhileWriting: one process reads a stream over and over
// while another keeps inserting into its table. Each read counts at least
// what the one before it did (no read is served from outdated caches),
// and once the writer stops, the next read past the 2 s fence counts every
// row.
func TestStreamReadsWhileWriting(t *testing.T) {
	s := newStack(t)
	s.run(`CREATE TABLE ev (id BIGINT)`)
	s.run(`ALTER TABLE ev SET PROPERTIES ('change_tracking' = 'true')`)
	s.run(`CREATE TABLE STREAM ev_s ON TABLE ev`)
	other := s.otherProcess()
	const inserts = 60
	done := make(chan error, 1)
	go func() {
		done <- other.execEach(inserts, func(i int) string { return fmt.Sprintf(`INSERT INTO ev VALUES (%d)`, i) })
	}()
	last, reads := 0, 0
	for writing := true; writing; {
		select {
		case err := <-done:
			must(t, err)
			writing = false
		default:
		}
		n, _ := strconv.Atoi(s.streamRows(`SELECT COUNT(*) FROM ev_s`)[0])
		if n < last {
			t.Fatalf("read %d counts %d rows, the read before it %d", reads, n, last)
		}
		last, reads = n, reads+1
	}
	time.Sleep(2100 * time.Millisecond) // the fence
	if got := s.streamRows(`SELECT COUNT(*), COUNT(DISTINCT id) FROM ev_s`); got[0] != fmt.Sprintf("%d|%d", inserts, inserts) {
		t.Fatalf("after the writer stopped (%d reads meanwhile): %v, want %d rows", reads, got, inserts)
	}
}

// TestStreamStaleAfterTableRecreated: a stream whose table was dropped and
// a table of the same name created again is stale (the changes of another
// table are not its own), and says how to recreate it; a stream whose
// table was dropped and restored with UNDROP goes on.
func TestStreamStaleAfterTableRecreated(t *testing.T) {
	s := newStack(t)
	for _, tb := range []string{"ev", "kept"} {
		s.run(`CREATE TABLE ` + tb + ` (id BIGINT)`)
		s.run(`CREATE TABLE STREAM ` + tb + `_s ON TABLE ` + tb)
		s.run(`INSERT INTO ` + tb + ` VALUES (1)`)
		s.run(`DROP TABLE ` + tb)
	}
	s.run(`CREATE TABLE ev (id BIGINT)`)
	s.run(`ALTER TABLE ev SET PROPERTIES ('change_tracking' = 'true')`)
	s.run(`INSERT INTO ev VALUES (2)`)
	s.mustFail(`SELECT id FROM ev_s`, "stale", "dropped and created again", "CREATE OR REPLACE TABLE STREAM ev_s ON TABLE")
	sh := s.run(`SHOW TABLE STREAMS LIKE 'ev_s'`)
	if rows := table(sh); len(rows) != 1 || rows[0][column(t, sh, "stale")] != "true" {
		t.Fatalf("SHOW TABLE STREAMS:\n%s", rowsText(sh))
	}
	s.run(`CREATE OR REPLACE TABLE STREAM ev_s ON TABLE ev`)
	s.run(`INSERT INTO ev VALUES (3)`)
	s.waitStream(`SELECT id FROM ev_s`, "3")

	s.run(`UNDROP TABLE kept`)
	s.waitStream(`SELECT id, __change_type FROM kept_s`, "1|INSERT")
}

// TestInsertOverwriteTracked: INSERT OVERWRITE into a change-tracked table
// records the rows it replaces as a DELETE: a stream shows them go and the
// new rows come, and a summary over the table refreshes INCREMENTAL to the
// new contents (a TRUNCATE would have left both counting the old rows).
// A keyed tracked table the same.
func TestInsertOverwriteTracked(t *testing.T) {
	s := newStack(t)
	s.withWorker()
	overwriteTracked(s, "ow", func(tbl string) { s.run(`INSERT OVERWRITE ` + tbl + ` VALUES (2, 'b'), (3, 'c')`) })
}

// overwriteTracked checks an overwrite of (1, a), (2, b) with (2, b),
// (3, c) in change-tracked tables prefix and prefix+"k" (keyed): a stream
// shows the old rows go and the new ones come, and a summary refreshes
// INCREMENTAL to the new contents.
func overwriteTracked(s *Stack, prefix string, overwrite func(tbl string)) {
	t := s.T
	s.run(`CREATE TABLE ` + prefix + ` (id BIGINT, v STRING)`)
	s.run(`CREATE TABLE ` + prefix + `k (id BIGINT, v STRING, PRIMARY KEY (id))`)
	for _, tbl := range []string{prefix, prefix + "k"} {
		s.run(`ALTER TABLE ` + tbl + ` SET PROPERTIES ('change_tracking' = 'true')`)
		s.run(`INSERT INTO ` + tbl + ` VALUES (1, 'a'), (2, 'b')`)
		s.run(`CREATE TABLE STREAM ` + tbl + `_s ON TABLE ` + tbl)
		query := `SELECT v, COUNT(*) AS n FROM ` + tbl + ` GROUP BY v`
		s.run(`CREATE DYNAMIC TABLE ` + tbl + `_sum REFRESH INTERVAL 1 HOUR AS ` + query)
		s.dropAtEnd("DYNAMIC TABLE", tbl+"_sum")
		overwrite(tbl)
		wantRows(t, tbl+" after the overwrite", s.run(`SELECT id, v FROM `+tbl+` ORDER BY id`), "2|b", "3|c")
		s.waitStream(`SELECT id, v, __change_type FROM `+tbl+`_s`, "1|a|DELETE", "2|b|DELETE", "2|b|INSERT", "3|c|INSERT")
		s.refreshEquals(tbl+"_sum", "v, n", query, "INCREMENTAL")
	}
}

// TestCopyOverwriteTracked: COPY OVERWRITE into a change-tracked table,
// as INSERT OVERWRITE: the rows it replaces are a DELETE in the change
// log. It truncated the table, so streams never saw the old rows go, and
// summaries went on counting them.
func TestCopyOverwriteTracked(t *testing.T) {
	s := newStack(t)
	s.withWorker()
	s.volume("cow_vol", "cow", false)
	s.put("cow/f.csv", []byte("2,b\n3,c\n"))
	overwriteTracked(s, "cow", func(tbl string) { s.run(`COPY OVERWRITE ` + tbl + ` FROM VOLUME cow_vol USING CSV`) })
}
