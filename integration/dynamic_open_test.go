//go:build integration

package integration

import (
	"strconv"
	"testing"
	"time"

	"github.com/lakepipe/lakepipe/internal/chsql"
)

// TestFullRefreshSkipsLoadsUnderWay: a FULL refresh reads the committed
// rows of its source by naming the commits that are not (those registered
// after its version and the loads under way, lakepipe.open_commits), not
// every commit ever registered. The rows of a load that opened its commit
// and is still writing are left out; once registered they are counted by
// the next refresh; a commit opened twice (a retry) and registered is read
// like any other; maintenance removes the marks of registered commits and
// keeps those of loads still under way.
func TestFullRefreshSkipsLoadsUnderWay(t *testing.T) {
	s := newStack(t)
	s.withWorker()
	s.run(`CREATE TABLE ou_src (k STRING, x INT)`)
	s.run(`ALTER TABLE ou_src SET PROPERTIES ('change_tracking' = 'true')`)
	s.run(`INSERT INTO ou_src VALUES ('a', 1), ('b', 2)`)
	src := chsql.Table(s.Schema, "ou_src")
	marks := func() string {
		t.Helper()
		n, err := s.Store.Strings(s.Ctx, `SELECT toString(count()) FROM lakepipe.open_commits WHERE db = `+chsql.QuoteString(s.Schema)+` AND table = 'ou_src'`)
		if err != nil || len(n) != 1 {
			t.Fatalf("reading open_commits: %v %v", n, err)
		}
		return n[0]
	}
	underWay := func(commit uint64, k string, x int) {
		t.Helper()
		if err := s.Eng.OpenCommits(s.Ctx, s.Schema, "ou_src", []uint64{commit}); err != nil {
			t.Fatal(err)
		}
		if err := s.Store.Exec(s.Ctx, "INSERT INTO "+src+" (k, x, _lp_commit) SELECT "+chsql.QuoteString(k)+", toInt32("+strconv.Itoa(x)+"), toUInt64("+strconv.FormatUint(commit, 10)+")"); err != nil {
			t.Fatal(err)
		}
	}
	// A load under way (commit 77 opened, its row in the table): the
	// first refresh of a new summary is FULL and does not count it.
	underWay(77, "z", 100)
	time.Sleep(2100 * time.Millisecond) // commits are readable 2 s after they are registered
	query := `SELECT k, COUNT(*) AS n, SUM(x) AS sx FROM ou_src GROUP BY k`
	s.run(`CREATE DYNAMIC TABLE ou_sum REFRESH INTERVAL 1 HOUR AS ` + query)
	s.dropAtEnd("DYNAMIC TABLE", "ou_sum")
	wantRows(t, "ou_sum without the load under way", s.run(`SELECT k, n, sx FROM ou_sum ORDER BY k`), "a|1|1", "b|1|2")

	// Registered, its row is counted (INCREMENTAL: the commit is in the
	// window), and its mark is closed.
	if err := s.Eng.RegisterCommit(s.Ctx, s.Schema, "ou_src", 77, "INSERT", 1); err != nil {
		t.Fatal(err)
	}
	s.refreshEquals("ou_sum", "k, n, sx", query, "INCREMENTAL")

	// A commit opened twice (a retried load) and registered once keeps a
	// mark, but is read: a second summary's FULL refresh counts it.
	underWay(78, "y", 10)
	if err := s.Eng.OpenCommits(s.Ctx, s.Schema, "ou_src", []uint64{78}); err != nil {
		t.Fatal(err)
	}
	if err := s.Eng.RegisterCommit(s.Ctx, s.Schema, "ou_src", 78, "INSERT", 1); err != nil {
		t.Fatal(err)
	}
	// And a load still under way.
	underWay(79, "w", 1000)
	time.Sleep(2100 * time.Millisecond)
	s.run(`CREATE DYNAMIC TABLE ou_sum2 REFRESH INTERVAL 1 HOUR AS ` + query)
	s.dropAtEnd("DYNAMIC TABLE", "ou_sum2")
	wantRows(t, "ou_sum2 (FULL) with the twice-opened commit and without the one under way", s.run(`SELECT k, n, sx FROM ou_sum2 ORDER BY k`),
		"a|1|1", "b|1|2", "y|1|10", "z|1|100")

	// Maintenance forgets the marks of registered commits (77's pair,
	// 78's three) and keeps 79's.
	if err := s.Eng.TrimChangeLogs(s.Ctx); err != nil {
		t.Fatal(err)
	}
	if got := marks(); got != "1" {
		t.Fatalf("after maintenance open_commits holds %s marks of ou_src; want 1 (the load under way)", got)
	}
	if err := s.Eng.RegisterCommit(s.Ctx, s.Schema, "ou_src", 79, "INSERT", 1); err != nil {
		t.Fatal(err)
	}
	s.refreshEquals("ou_sum2", "k, n, sx", query, "INCREMENTAL")
}
