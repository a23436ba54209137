package chsql

import (
	"testing"

	"github.com/lakepipe/lakepipe/internal/sqlparse"
)

// FuzzTranslate checks that no query that parses makes the translator
// panic: it either translates or says why not (positional ORDER BY and
// GROUP BY, stars over subqueries, CTEs and joins included).
func FuzzTranslate(f *testing.F) {
	for _, c := range goldenCases {
		f.Add(c.sql)
	}
	f.Add("SELECT * FROM (SELECT * FROM (SELECT a AS x FROM t) s) ORDER BY 1, 9223372036854775808, 0")
	f.Add("SELECT s.*, c.* FROM sales s JOIN customers c ON s.id = c.id ORDER BY 3 DESC GROUP BY 2")
	f.Fuzz(func(t *testing.T, src string) {
		q, err := sqlparse.ParseQuery(src)
		if err != nil {
			return
		}
		_, _ = goldenTranslator().Query(q)
	})
}
