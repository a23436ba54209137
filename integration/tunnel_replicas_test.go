//go:build integration

package integration

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lakepipe/lakepipe/internal/chsql"
	"github.com/lakepipe/lakepipe/internal/core"
	"github.com/lakepipe/lakepipe/tunnel"
)

// TestTunnelReplicasRoundRobin: two `lakepipe serve` processes behind a balancer that
// sends every request to the next one and breaks some connections mid
// flush (request cut, answer lost, or the client cut off while the service
// goes on writing). 1,000 flushes from clients that retry: every flush's
// rows are in the table exactly once, in a plain table, in a
// change-tracked one whose table stream shows each row once, and in a
// change-tracked keyed table (staged flushes, never removed: keyed.go of
// internal/streamwrite) whose stream shows every key.
func TestTunnelReplicasRoundRobin(t *testing.T) {
	s := newStack(t)
	s.run(`CREATE TABLE rr_plain (w BIGINT, id BIGINT)`)
	s.run(`CREATE TABLE rr_tracked (w BIGINT, id BIGINT)`)
	s.run(`ALTER TABLE rr_tracked SET PROPERTIES ('change_tracking' = 'true')`)
	s.run(`CREATE TABLE STREAM rr_changes ON TABLE rr_tracked WITH PROPERTIES ('TABLE_STREAM_MODE' = 'APPEND_ONLY')`)
	s.run(`CREATE TABLE rr_keyed (w BIGINT, id BIGINT, PRIMARY KEY (w, id)) PROPERTIES ('change_tracking' = 'true')`)
	s.run(`CREATE TABLE STREAM rr_keyed_changes ON TABLE rr_keyed`)
	token := "tok-" + randID(12)
	serve := func() string {
		addr, _ := startServer(t, []string{"serve", "--listen", "127.0.0.1:0", "--stall-timeout", "3s"}, "lakepipe write service running", "LAKEPIPE_TUNNEL_TOKEN="+token)
		return addr
	}
	proxy := newRRProxy(t, 19, serve(), serve())
	// One request per connection, so that the balancer's turn and its
	// faults meet every attempt.
	hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	c, err := tunnel.New("http://"+proxy.Addr(), tunnel.WithToken(token), tunnel.WithSchema(s.Schema), tunnel.WithHTTPClient(hc))
	must(t, err)
	type writer struct {
		table string
		pack  *tunnel.RecordPack
	}
	var writers []writer
	writersOf := map[string]int{"rr_plain": 2, "rr_tracked": 1, "rr_keyed": 1}
	for w, table := range []string{"rr_plain", "rr_plain", "rr_tracked", "rr_keyed"} {
		sess, err := c.BuildStreamUploadSession(s.Schema, table).Build(s.Ctx)
		must(t, err)
		pack, err := sess.NewRecordPack()
		must(t, err)
		writers = append(writers, writer{table, pack})
		_ = w
	}
	proxy.Faults.Store(true)
	const flushes, rows = 250, 20 // per writer: 1,000 flushes in all
	errs := make(chan error, len(writers))
	var wg sync.WaitGroup
	for w, wr := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for f := 0; f < flushes; f++ {
				for i := 0; i < rows; i++ {
					if err := wr.pack.AppendRow(int64(w), int64(f*rows+i)); err != nil {
						errs <- err
						return
					}
				}
				if _, err := wr.pack.Flush(tunnel.FlushOption{Timeout: 2 * time.Minute}); err != nil {
					errs <- fmt.Errorf("writer %d, flush %d: %w", w, f, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	counts := proxy.Counts()
	t.Logf("connections: %v", counts)
	for _, mode := range []string{"cut-request", "lose-answer", "abandon"} {
		if counts[mode] < 10 {
			t.Fatalf("only %d connections met %s: the test did not test it (%v)", counts[mode], mode, counts)
		}
	}
	// An abandoned attempt may still be finishing: it removes its own rows
	// when it sees the retry. Wait for the services to go idle.
	for _, table := range []string{"rr_plain", "rr_tracked", "rr_keyed"} {
		want := fmt.Sprint(writersOf[table] * flushes * rows)
		q := fmt.Sprintf(`SELECT COUNT(*), COUNT(DISTINCT w * 1000000 + id) FROM %s`, table)
		deadline := time.Now().Add(30 * time.Second)
		got := strings.Join(s.streamRows(q), "")
		for got != want+"|"+want && time.Now().Before(deadline) {
			time.Sleep(500 * time.Millisecond)
			got = strings.Join(s.streamRows(q), "")
		}
		if got != want+"|"+want {
			t.Fatalf("%s: rows|distinct rows = %s, want %s|%s", table, got, want, want)
		}
	}
	time.Sleep(2500 * time.Millisecond) // changes are readable 2 s after their commit
	want := fmt.Sprint(flushes * rows)
	if got := strings.Join(s.streamRows(`SELECT COUNT(*), COUNT(DISTINCT w * 1000000 + id) FROM rr_changes`), ""); got != want+"|"+want {
		t.Fatalf("the stream on rr_tracked: rows|distinct = %s, want %s|%s", got, want, want)
	}
	// A retried flush into the keyed table writes its keys again: the
	// stream shows each key, as new or as overwritten with itself.
	if got := strings.Join(s.streamRows(`SELECT COUNT(DISTINCT w * 1000000 + id), countIf(__change_type NOT IN ('INSERT', 'UPDATE_AFTER', 'UPDATE_BEFORE')) FROM rr_keyed_changes`), ""); got != want+"|0" {
		t.Fatalf("the stream on rr_keyed: distinct keys|other changes = %s, want %s|0", got, want)
	}
	n, err := s.Store.Strings(s.Ctx, `SELECT toString(count()) FROM lakepipe.flush_retries WHERE db = `+chsql.QuoteString(s.Schema))
	must(t, err)
	t.Logf("retries that took the lock: %v", n)
}

// TestFlushRetrySweep: maintenance removes what retried flushes left once
// no attempt can still write: rows of attempts that lost, and the winner's
// own when it never finished; then it forgets the flushes.
func TestFlushRetrySweep(t *testing.T) {
	s := newStack(t)
	s.run(`CREATE TABLE sweep (id BIGINT)`)
	// Flush a: attempt 3 won and finished (5 rows); attempts 1 and 2 left
	// blocks. Flush b: attempt 2 won but died after 2 of its 4 rows.
	a1, a2, a3 := core.FlushAttemptCommit("sess", "a", 1), core.FlushAttemptCommit("sess", "a", 2), core.FlushAttemptCommit("sess", "a", 3)
	b2 := core.FlushAttemptCommit("sess", "b", 2)
	rows := map[uint64]int{a1: 3, a2: 2, a3: 5, b2: 2}
	for commit, n := range rows {
		must(t, s.Store.Exec(s.Ctx, fmt.Sprintf("INSERT INTO %s.sweep (id, _lp_commit) SELECT number, %d FROM numbers(%d)", chsql.QuoteIdent(s.Schema), commit, n)))
	}
	old := time.Now().Add(-2 * time.Hour).UTC()
	must(t, s.Store.InsertRows(s.Ctx, "lakepipe", "flush_retries", []string{"session", "flush_id", "attempt", "db", "table", "winner", "records", "at"}, [][]any{
		{"sess", "a", uint32(2), s.Schema, "sweep", a2, int64(5), old},
		{"sess", "a", uint32(3), s.Schema, "sweep", a3, int64(5), old},
		{"sess", "b", uint32(2), s.Schema, "sweep", b2, int64(4), old},
	}))
	// A recent retry is left alone: its attempts may still be writing.
	must(t, s.Store.InsertRows(s.Ctx, "lakepipe", "flush_retries", []string{"session", "flush_id", "attempt", "db", "table", "winner", "records", "at"}, [][]any{
		{"sess", "c", uint32(2), s.Schema, "sweep", uint64(3), int64(1), time.Now().UTC()},
	}))
	// Flush d into a change-tracked table: attempt 2 won and finished,
	// attempt 1 died after opening its commit and writing 3 rows.
	s.run(`CREATE TABLE sweep_t (id BIGINT)`)
	s.run(`ALTER TABLE sweep_t SET PROPERTIES ('change_tracking' = 'true')`)
	d1, d2 := core.FlushAttemptCommit("sess", "d", 1), core.FlushAttemptCommit("sess", "d", 2)
	for commit, n := range map[uint64]int{d1: 3, d2: 2} {
		must(t, s.Store.Exec(s.Ctx, fmt.Sprintf("INSERT INTO %s.sweep_t (id, _lp_commit) SELECT number, %d FROM numbers(%d)", chsql.QuoteIdent(s.Schema), commit, n)))
	}
	openMark(s, "sweep_t", d1, "", 2*time.Hour)
	must(t, s.Store.InsertRows(s.Ctx, "lakepipe", "flush_retries", []string{"session", "flush_id", "attempt", "db", "table", "winner", "records", "at"}, [][]any{
		{"sess", "d", uint32(2), s.Schema, "sweep_t", d2, int64(2), old},
	}))
	must(t, s.Eng.SweepFlushRetries(s.Ctx))
	tracked, err := s.Store.Strings(s.Ctx, fmt.Sprintf("SELECT concat(toString(count()), ' ', toString((SELECT sum(sign) FROM lakepipe.open_commits WHERE db = %s AND table = 'sweep_t'))) FROM %s.sweep_t",
		chsql.QuoteString(s.Schema), chsql.QuoteIdent(s.Schema)))
	if err != nil || len(tracked) != 1 || tracked[0] != "2 0" {
		t.Fatalf("after the sweep the tracked table holds (rows, open marks) %v (%v), want 2 0: the dead attempt's rows gone and its load closed", tracked, err)
	}
	got, err := s.Store.Strings(s.Ctx, fmt.Sprintf("SELECT concat(toString(_lp_commit = %d), ':', toString(count())) FROM %s.sweep GROUP BY _lp_commit", a3, chsql.QuoteIdent(s.Schema)))
	must(t, err)
	if strings.Join(got, ",") != "1:5" {
		t.Fatalf("after the sweep (is the winner : rows): %v, want only flush a's winner, 5 rows", got)
	}
	left, err := s.Store.Strings(s.Ctx, "SELECT flush_id FROM lakepipe.flush_retries WHERE session = 'sess' ORDER BY flush_id")
	must(t, err)
	if strings.Join(left, ",") != "c" {
		t.Fatalf("retries left after the sweep: %v, want only the recent one (c)", left)
	}
	must(t, s.Store.Exec(s.Ctx, "ALTER TABLE lakepipe.flush_retries DELETE WHERE session = 'sess'"))
}
