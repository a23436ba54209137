//go:build integration

package integration

import (
	"strings"
	"testing"
	"time"
)

// TestDynamicTableChain: a chain of three dynamic tables (a summary, a
// table over it, a table over that) refreshes in dependency order on one
// REFRESH of the last, each upstream refresh a child workflow; every
// refresh says why it is FULL, in DESC and in the history.
func TestDynamicTableChain(t *testing.T) {
	s := newStack(t)
	s.withWorker()
	s.run(`CREATE TABLE sales (category STRING, amount DECIMAL(10,2))`)
	s.run(`INSERT INTO sales VALUES ('books', 10.00), ('books', 5.00), ('games', 20.00)`)
	s.run(`CREATE DYNAMIC TABLE by_cat REFRESH INTERVAL 1 HOUR AS SELECT category, SUM(amount) AS total FROM sales GROUP BY category`)
	s.run(`CREATE DYNAMIC TABLE doubled REFRESH INTERVAL 1 HOUR AS SELECT category, total * 2 AS twice FROM by_cat`)
	s.run(`CREATE DYNAMIC TABLE grand REFRESH INTERVAL 1 HOUR COMMENT 'end of the chain' AS SELECT COUNT(*) AS cats, SUM(twice) AS all_twice FROM doubled`)
	for _, d := range []string{"by_cat", "doubled", "grand"} {
		s.dropAtEnd("DYNAMIC TABLE", d)
	}
	wantRows(t, "grand at creation", s.run(`SELECT cats, all_twice FROM grand`), "2|70.00")

	s.run(`INSERT INTO sales VALUES ('music', 1.50), ('games', 4.00)`)
	res := s.run(`REFRESH DYNAMIC TABLE grand`)
	checkMessage(t, res.Message, "grand refreshed", "after its upstream", "by_cat, doubled")
	wantRows(t, "grand after one refresh of it", s.run(`SELECT cats, all_twice FROM grand`), "3|81.00")
	wantRows(t, "doubled", s.run(`SELECT category, twice FROM doubled ORDER BY category`), "books|30.00", "games|48.00", "music|3.00")

	// The history: the two upstream refreshes (CHAIN) before grand's
	// (MANUAL), each after the one it reads.
	h := s.run(`SHOW DYNAMIC TABLE REFRESH HISTORY`)
	var got []string
	for _, r := range table(h) {
		if trig := r[column(t, h, "trigger")]; trig == "CHAIN" || trig == "MANUAL" {
			got = append(got, r[column(t, h, "name")]+":"+trig+":"+r[column(t, h, "state")])
		}
	}
	// Newest first.
	if strings.Join(got, ",") != "grand:MANUAL:SUCCEED,doubled:CHAIN:SUCCEED,by_cat:CHAIN:SUCCEED" {
		t.Fatalf("refresh history (newest first): %v\n%s", got, rowsText(h))
	}
	for _, r := range table(h) {
		if r[column(t, h, "refresh_mode")] != "FULL" || r[column(t, h, "mode_reason")] == "" {
			t.Fatalf("every refresh is FULL with its reason:\n%s", rowsText(h))
		}
	}
	d := map[string]string{}
	for _, r := range table(s.run(`DESC DYNAMIC TABLE grand`)) {
		d[r[0]] = r[1]
	}
	if d["refresh_mode"] != "FULL" || d["refresh_mode_reason"] == "" || d["comment"] != "end of the chain" || !strings.HasSuffix(d["source_tables"], ".doubled") {
		t.Fatalf("DESC DYNAMIC TABLE grand: %v", d)
	}
	// A scheduled refresh runs the chain too: every second here.
	s.run(`CREATE DYNAMIC TABLE fast REFRESH INTERVAL 1 SECOND AS SELECT COUNT(*) AS n FROM doubled`)
	s.dropAtEnd("DYNAMIC TABLE", "fast")
	s.run(`INSERT INTO sales VALUES ('toys', 2.00)`)
	pipeWait(t, 30*time.Second, "a scheduled refresh of fast sees the new category through the chain", func() bool {
		return s.pipeScalar(`SELECT n FROM fast`) == "4"
	})
	s.run(`ALTER DYNAMIC TABLE fast SUSPEND`)

	d = map[string]string{}
	for _, r := range table(s.run(`DESC DYNAMIC TABLE by_cat`)) {
		d[r[0]] = r[1]
	}
	if !strings.Contains(d["refresh_mode_reason"], "does not track changes") {
		t.Fatalf("DESC DYNAMIC TABLE by_cat: %v", d)
	}
}
