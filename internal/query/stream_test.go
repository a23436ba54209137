package query

import (
	"testing"

	"github.com/lakepipe/lakepipe/internal/sqlast"
	"github.com/lakepipe/lakepipe/internal/sqlparse"
)

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
		q, ok := stmts[0].(*sqlast.QueryStmt)
		if !ok {
			t.Fatalf("%s: a %T, not a query", tc.sql, stmts[0])
		}
		if got := ReadsChangeColumns(q.Query); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.sql, got, tc.want)
		}
	}
}
