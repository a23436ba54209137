//go:build integration

package integration

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"
	"time"
)

// TestDynamicTableChainIncremental: a chain of three dynamic tables over a
// change-tracked table — a summary (clicks_by_user), a filter of it
// (big_spenders, the scenario of issue 24) and a summary of that
// (spenders) — refreshes INCREMENTAL at every layer after the first,
// through inserts, deletes and updates of the source; after every round
// each table equals its query run afresh over the table it reads.
func TestDynamicTableChainIncremental(t *testing.T) {
	s := newStack(t)
	s.withWorker()
	rng := rand.New(rand.NewSource(testSeed(t, "LAKEPIPE_TEST_SEED")))
	s.run(`CREATE TABLE clicks (user_id INT, page STRING, amount DECIMAL(10,2))`)
	s.run(`ALTER TABLE clicks SET PROPERTIES ('change_tracking' = 'true')`)
	clicks := func(n int) {
		vals := make([]string, n)
		for i := range vals {
			vals[i] = fmt.Sprintf("(%d, 'p%d', %d.%02d)", rng.Intn(12), rng.Intn(4), rng.Intn(60), rng.Intn(100))
		}
		s.run(`INSERT INTO clicks VALUES ` + strings.Join(vals, ", "))
	}
	clicks(40)
	layers := []struct{ name, query, cols string }{
		{"clicks_by_user", `SELECT user_id, COUNT(*) AS n, SUM(amount) AS spend FROM clicks GROUP BY user_id`, "user_id, n, spend"},
		{"big_spenders", `SELECT user_id, spend FROM clicks_by_user WHERE spend > 100`, "user_id, spend"},
		{"spenders", `SELECT COUNT(*) AS users, SUM(spend) AS total FROM big_spenders`, "users, total"},
	}
	for _, l := range layers {
		s.run(`CREATE DYNAMIC TABLE ` + l.name + ` REFRESH INTERVAL 1 HOUR AS ` + l.query)
		s.dropAtEnd("DYNAMIC TABLE", l.name)
	}
	for round := 0; round < 6; round++ {
		clicks(1 + rng.Intn(15))
		switch round % 3 {
		case 1:
			s.run(fmt.Sprintf(`DELETE FROM clicks WHERE user_id = %d`, rng.Intn(12)))
		case 2:
			s.run(fmt.Sprintf(`UPDATE clicks SET amount = amount + 50 WHERE page = 'p%d'`, rng.Intn(4)))
		}
		time.Sleep(2100 * time.Millisecond) // changes are readable 2 s after their commit
		// One REFRESH of the last layer refreshes the chain.
		checkMessage(t, s.run(`REFRESH DYNAMIC TABLE spenders`).Message, "spenders refreshed (INCREMENTAL)", "after its upstream")
		h := s.run(`SHOW DYNAMIC TABLE REFRESH HISTORY`)
		seen := map[string]bool{}
		for _, r := range table(h) {
			name := r[column(t, h, "name")]
			if seen[name] {
				continue // older refreshes
			}
			seen[name] = true
			if mode := r[column(t, h, "refresh_mode")]; mode != "INCREMENTAL" {
				t.Fatalf("round %d: %s refreshed %s: %s", round, name, mode, r[column(t, h, "mode_reason")])
			}
		}
		for i, l := range layers {
			got := rowsText(s.run(`SELECT ` + l.cols + ` FROM ` + l.name + ` ORDER BY ` + l.cols))
			want := rowsText(s.run(`SELECT ` + l.cols + ` FROM (` + l.query + `) ORDER BY ` + l.cols))
			if got != want {
				t.Fatalf("round %d, %s: the dynamic table\n%s\nwant (its query afresh)\n%s", round, l.name, indent(got), indent(want))
			}
			if i > 0 && round == 0 {
				d := map[string]string{}
				for _, r := range table(s.run(`DESC DYNAMIC TABLE ` + l.name)) {
					d[r[0]] = r[1]
				}
				if d["refresh_mode"] != "INCREMENTAL" || !strings.Contains(d["refresh_mode_reason"], "over dynamic table") {
					t.Fatalf("DESC DYNAMIC TABLE %s: %v", l.name, d)
				}
			}
		}
	}
}
