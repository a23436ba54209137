package engine

import (
	"fmt"
	"testing"
	"time"

	"github.com/lakepipe/lakepipe/internal/sqlparse"
)

func TestFreshness(t *testing.T) {
	var f freshness
	used := map[string]string{"table_stream s.x": "7", "commits s.t 5": "ab/2"}
	if f.holds("", used) {
		t.Fatal("nothing recorded, yet holds")
	}
	f.record("tok1", used)
	for _, tc := range []struct {
		name  string
		token string
		used  map[string]string
		want  bool
	}{
		{"same token, same values", "tok1", used, true},
		{"a subset of what was found current", "tok1", map[string]string{"table_stream s.x": "7"}, true},
		{"written since", "tok2", used, false},
		{"another version of a value", "tok1", map[string]string{"table_stream s.x": "8"}, false},
		{"a value never checked", "tok1", map[string]string{"table t.y": "1"}, false},
		{"nothing used", "tok1", nil, false},
	} {
		if got := f.holds(tc.token, tc.used); got != tc.want {
			t.Errorf("%s: holds = %v, want %v", tc.name, got, tc.want)
		}
	}
	// A check at the same token adds to what holds; one at a new token
	// forgets what was found before it.
	f.record("tok1", map[string]string{"table t.y": "1"})
	if !f.holds("tok1", map[string]string{"table t.y": "1", "table_stream s.x": "7"}) {
		t.Error("values found current at one token do not add up")
	}
	f.record("tok2", map[string]string{"table t.y": "1"})
	if f.holds("tok2", used) {
		t.Error("values found at an older token still hold at a newer one")
	}
}

// TestFreshnessBusy: reads that keep finding the token changed stop
// reading it for a while, then try again.
func TestFreshnessBusy(t *testing.T) {
	var f freshness
	used := map[string]string{"table t.x": "1"}
	f.record("tok0", used)
	for i := range tokenMisses {
		if !f.worthReading() {
			t.Fatalf("read %d: the token is skipped after %d changes", i, i)
		}
		f.holds(fmt.Sprintf("tok%d", i+1), used)
	}
	for i := range tokenSkips {
		if !f.skipping() || f.worthReading() {
			t.Fatalf("read %d after %d changes in a row: the token is read", i, tokenMisses)
		}
	}
	if f.skipping() || !f.worthReading() {
		t.Fatalf("after %d reads without it, the token is still skipped", tokenSkips)
	}
	// A token found unchanged resets the count.
	f.record("tok9", used)
	for range 2 * tokenMisses {
		f.holds("tok8", used)
		if !f.holds("tok9", used) {
			t.Fatal("the recorded values do not hold at their token")
		}
	}
	if f.skipping() {
		t.Fatal("changes that were not in a row made reads skip the token")
	}
}

func TestCommitsPrint(t *testing.T) {
	at := time.Unix(1700000000, 0)
	base := []commitRef{{version: 10, id: 1, kind: commitInsert, at: at}, {version: 20, id: 2, kind: commitDelete, at: at}}
	changed := map[string][]commitRef{
		"one fewer":      base[:1],
		"another id":     {{version: 10, id: 3, kind: commitInsert, at: at}, base[1]},
		"another kind":   {base[0], {version: 20, id: 2, kind: commitUpdate, at: at}},
		"another moment": {base[0], {version: 20, id: 2, kind: commitDelete, at: at.Add(time.Second)}},
		"none":           nil,
	}
	p := commitsPrint(base)
	if p != commitsPrint(append([]commitRef(nil), base...)) {
		t.Fatal("the same commits print differently")
	}
	for name, c := range changed {
		if commitsPrint(c) == p {
			t.Errorf("%s: prints as the original", name)
		}
	}
}

func TestReadsChangeColumns(t *testing.T) {
	for _, tc := range []struct {
		sql  string
		want bool
	}{
		{"SELECT COUNT(*), SUM(amount) FROM s", false},
		{"SELECT id FROM s WHERE id > 3 ORDER BY id", false},
		{"SELECT * FROM s", true},
		{"SELECT s.* FROM s", true},
		{"SELECT id, __change_type FROM s", true},
		{"SELECT id FROM s WHERE __COMMIT_VERSION > 0", true},
		{"SELECT MAX(s.__commit_timestamp) FROM s", true},
		{"SELECT c FROM (SELECT __change_type AS c FROM s) AS x", true},
		{"SELECT id FROM (SELECT * FROM s) AS x", true},
		{"SELECT id FROM s UNION ALL SELECT id FROM s2 WHERE __change_type = 'INSERT'", true},
	} {
		stmts, err := sqlparse.ParseScript(tc.sql)
		if err != nil {
			t.Fatalf("%s: %v", tc.sql, err)
		}
		q, ok := stmts[0].(*sqlparse.QueryStmt)
		if !ok {
			t.Fatalf("%s: a %T, not a query", tc.sql, stmts[0])
		}
		if got := readsChangeColumns(q.Query); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.sql, got, tc.want)
		}
	}
}
