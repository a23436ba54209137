package chsql

import (
	"errors"
	"strings"
	"testing"

	"github.com/lakepipe/lakepipe/internal/sqlast"

	"github.com/lakepipe/lakepipe/internal/sqlparse"
)

func testTranslator() *Translator {
	return &Translator{
		Table: func(n sqlast.ObjectName) (string, error) {
			return Table("public", n.Name()), nil
		},
		Columns: func(n sqlast.ObjectName) ([]string, bool) {
			if n.Name() == "sales" {
				return []string{"id", "amount"}, true
			}
			return nil, false
		},
	}
}

func TestTranslateQuery(t *testing.T) {
	tests := []struct{ in, want string }{
		{"SELECT COUNT(*) FROM sales_ods", "SELECT count() FROM `public`.`sales_ods`"},
		{"SELECT * FROM sales", "SELECT `id`, `amount` FROM `public`.`sales`"},
		{"SELECT s.* FROM sales s", "SELECT `s`.`id`, `s`.`amount` FROM `public`.`sales` AS `s`"},
		{"SELECT * FROM other", "SELECT * FROM `public`.`other`"},
		{"SELECT CAST(a AS BIGINT), b::DECIMAL(10,2) FROM t", "SELECT CAST(`a` AS Nullable(Int64)), CAST(`b` AS Nullable(Decimal(10, 2))) FROM `public`.`t`"},
		{"SELECT 'Source' AS stage, COUNT(*) AS rows FROM a UNION ALL SELECT 'ODS' AS stage, COUNT(*) AS rows FROM b",
			"SELECT 'Source' AS `stage`, count() AS `rows` FROM `public`.`a` UNION ALL SELECT 'ODS' AS `stage`, count() AS `rows` FROM `public`.`b`"},
		{"SELECT a FROM t WHERE b ILIKE 'x%' AND c || 'y' = 'zy'", "SELECT `a` FROM `public`.`t` WHERE ((lowerUTF8(`b`) LIKE lowerUTF8('x%')) AND (concat(`c`, 'y') = 'zy'))"},
		{"SELECT a FROM t ORDER BY a DESC LIMIT 10 OFFSET 5", "SELECT `a` FROM `public`.`t` ORDER BY `a` DESC LIMIT 5, 10"},
		{"SELECT category, SUM(amount) FROM t GROUP BY category HAVING SUM(amount) > 1", "SELECT `category`, sum(`amount`) FROM `public`.`t` GROUP BY `category` HAVING (sum(`amount`) > 1)"},
		{"SELECT a FROM t WHERE b IS NULL AND c NOT IN (1, 2)", "SELECT `a` FROM `public`.`t` WHERE (isNull(`b`) AND `c` NOT IN (1, 2))"},
		{"SELECT COUNT(DISTINCT a), TRUE FROM t", "SELECT count(DISTINCT `a`), 1 FROM `public`.`t`"},
		{"WITH x AS (SELECT a FROM t) SELECT a FROM x", "SELECT `a` FROM (SELECT `a` FROM `public`.`t`) AS `x`"},
		{"SELECT 'it''s' AS s", `SELECT 'it\'s' AS ` + "`s`"},
		{"SELECT a FROM t JOIN u ON t.k = u.k", "SELECT `a` FROM `public`.`t` ALL INNER JOIN `public`.`u` ON (`t`.`k` = `u`.`k`)"},
	}
	for _, tt := range tests {
		q, err := sqlparse.ParseQuery(tt.in)
		if err != nil {
			t.Fatalf("parse %q: %v", tt.in, err)
		}
		got, err := testTranslator().Query(q)
		if err != nil {
			t.Fatalf("translate %q: %v", tt.in, err)
		}
		if got != tt.want {
			t.Errorf("%s\n got %s\nwant %s", tt.in, got, tt.want)
		}
	}
}

func TestTranslateUnsupported(t *testing.T) {
	for _, in := range []string{
		"SELECT a FROM t UNION SELECT a FROM u",
		"SELECT a FROM t WHERE EXISTS (SELECT 1 FROM u)",
		"SELECT row_number() OVER (ORDER BY a) FROM t",
		"SELECT * FROM VOLUME v USING CSV",
		"SELECT * ORDER BY 1", // no FROM: the fuzzer found it out of range
	} {
		q, err := sqlparse.ParseQuery(in)
		if err != nil {
			t.Fatalf("parse %q: %v", in, err)
		}
		if _, err := testTranslator().Query(q); err == nil || !strings.Contains(err.Error(), "not supported") {
			t.Errorf("%s: err = %v, want not supported", in, err)
		}
	}
}

func TestQuote(t *testing.T) {
	if got := QuoteIdent("a`b\\c"); got != "`a\\`b\\\\c`" {
		t.Errorf("QuoteIdent = %s", got)
	}
	if got := QuoteString("it's\n\\"); got != `'it\'s\n\\'` {
		t.Errorf("QuoteString = %s", got)
	}
}

func TestTranslateRefusedFunctions(t *testing.T) {
	tests := []struct{ in, name string }{
		{"SELECT dictGet('lakepipe.d', 'secret', toUInt64(1))", "dictget"},
		{"SELECT `dictGetOrDefault`('d', 'a', 1, '') FROM t", "dictGetOrDefault"},
		{"SELECT a FROM t WHERE dictHas('d', a)", "dicthas"},
		{"SELECT joinGet('j', 'v', a) FROM t", "joinget"},
		{"SELECT joinGetOrNull('j', 'v', a) FROM t", "joingetornull"},
		{"SELECT file('/etc/passwd')", "file"},
		{"SELECT hasColumnInTable('lakepipe', 'objects', 'secret')", "hascolumnintable"},
		{"SELECT a FROM t WHERE `in`(a, x)", "in"},
		{"SELECT a FROM t WHERE globalNotIn(a, x)", "globalnotin"},
		{"SELECT upper(file('/etc/passwd')) FROM t", "file"},
		{"SELECT a FROM t WHERE a IN (SELECT dictGet('d', 'a', 1))", "dictget"},
	}
	for _, tt := range tests {
		q, err := sqlparse.ParseQuery(tt.in)
		if err != nil {
			t.Fatalf("parse %q: %v", tt.in, err)
		}
		_, err = testTranslator().Query(q)
		var rf *RefusedFunction
		if !errors.As(err, &rf) || rf.Name != tt.name {
			t.Errorf("%s: err = %v, want RefusedFunction %s", tt.in, err, tt.name)
			continue
		}
		if !strings.Contains(err.Error(), "are not available in lakepipe SQL") {
			t.Errorf("%s: message %q", tt.in, err)
		}
	}
	// Look-alikes are ordinary functions.
	for _, in := range []string{"SELECT lengthUTF8(a), index_of(a) FROM t", "SELECT a FROM t WHERE a IN (1, 2)", "SELECT filename(a) FROM t"} {
		q, err := sqlparse.ParseQuery(in)
		if err != nil {
			t.Fatalf("parse %q: %v", in, err)
		}
		if _, err := testTranslator().Query(q); err != nil {
			t.Errorf("%s: %v", in, err)
		}
	}
}

func TestClickHouseName(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"tostartofmonth", "toStartOfMonth"},
		{"md5", "MD5"},
		{"countif", "countIf"},
		{"uniqexactifstate", "uniqExactIfState"},
		{"summergestate", "sumMergeState"},
		{"summap", "sumMap"},
		{"stddev_popif", "STDDEV_POPIf"},
		{"jsonextractstring", "JSONExtractString"}, // current releases only
		{"length", ""},                             // all lower case: stays as written
		{"count_if", ""},
		{"if", ""},
		{"my_udf", ""},
	} {
		got, ok := clickHouseName(tt.in)
		if got != tt.want || ok != (tt.want != "") {
			t.Errorf("clickHouseName(%q) = %q, %v; want %q", tt.in, got, ok, tt.want)
		}
	}
}

func TestParseJavaFormat(t *testing.T) {
	for _, tt := range []struct{ format, re, repl, err string }{
		{format: "yyyy-MM-dd", re: `(\d{4})-(\d{2})-(\d{2})`, repl: `\1-\2-\3 00:00:00`},
		{format: "dd/MM/yyyy HH:mm", re: `(\d{2})/(\d{2})/(\d{4}) (\d{2}):(\d{2})`, repl: `\3-\2-\1 \4:\5:00`},
		{format: "yyyy-MM-dd'T'HH:mm:ss,SS", re: `(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2}),\d{2}`, repl: `\1-\2-\3 \4:\5:\6`},
		{format: "yyyy''MM 'o''clock' y.M", err: `the pattern "y" is not supported on ClickHouse (given twice)`},
		{format: "yyyy''MM 'o''clock'", re: `(\d{4})'(\d{2}) o'clock`, repl: `\1-\2-01 00:00:00`},
		{format: "yyyy-MM", re: `(\d{4})-(\d{2})`, repl: `\1-\2-01 00:00:00`},
		{format: "MM-dd", err: "has no year"},
		{format: "yyyy-MM-dd 'at", err: "unterminated quote"},
		{format: "yyyy-MM-dd HH:mm:ssSSS", err: `"SSS" is not supported on ClickHouse (fractions of a second must follow '.' or ',')`},
		{format: "yyyy-MM-dd hh:mm a", err: `"hh" is not supported`},
		{format: "EEE, dd MMM yyyy", err: `"EEE" is not supported`},
		{format: "yyyy-MM-dd HH:mm:ss Z", err: `"Z" is not supported`},
		{format: "yyyyy", err: `"yyyyy" is not supported`},
	} {
		p, err := parseJavaFormat(tt.format)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%s: err = %v, want %s", tt.format, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tt.format, err)
			continue
		}
		if p.re != tt.re || p.replacement(false) != tt.repl {
			t.Errorf("%s: re %s, replacement %s; want %s, %s", tt.format, p.re, p.replacement(false), tt.re, tt.repl)
		}
	}
}

func TestPlainRegexp(t *testing.T) {
	for _, tt := range []struct {
		re, want string
		ok       bool
	}{
		{",", ",", true},
		{" - ", " - ", true},
		{`\|`, "|", true},
		{`a\.b\\c`, `a.b\c`, true},
		{"日本", "日本", true},
		{`\s+`, "", false},
		{`\d`, "", false},
		{"a|b", "", false},
		{"[,;]", "", false},
		{".", "", false},
		{`x\`, "", false},
	} {
		got, ok := plainRegexp(tt.re)
		if got != tt.want || ok != tt.ok {
			t.Errorf("plainRegexp(%q) = %q, %v; want %q, %v", tt.re, got, ok, tt.want, tt.ok)
		}
	}
}

// TestTranslateKeyed: a keyed table is read with FINAL; on the right of a
// join, where 18.16 ignores FINAL, through a subquery that keeps its name.
func TestTranslateKeyed(t *testing.T) {
	tr := testTranslator()
	tr.Keyed = func(n sqlast.ObjectName) bool { return n.Name() == "users" }
	tests := []struct{ in, want string }{
		{"SELECT count() FROM users", "SELECT count() FROM `public`.`users` FINAL"},
		{"SELECT u.id FROM users u WHERE u.id = 1", "SELECT `u`.`id` FROM `public`.`users` AS `u` FINAL WHERE (`u`.`id` = 1)"},
		{"SELECT o.id, users.name FROM orders o JOIN users ON users.id = o.uid",
			"SELECT `o`.`id`, `users`.`name` FROM `public`.`orders` AS `o` ALL INNER JOIN (SELECT * FROM `public`.`users` FINAL) AS `users` ON (`users`.`id` = `o`.`uid`)"},
		{"SELECT u.name FROM users u LEFT JOIN users v USING (id)",
			"SELECT `u`.`name` FROM `public`.`users` AS `u` FINAL ALL LEFT JOIN (SELECT * FROM `public`.`users` FINAL) AS `v` USING (`id`)"},
	}
	for _, tc := range tests {
		st, err := sqlparse.Parse(tc.in)
		if err != nil {
			t.Fatalf("%s: %v", tc.in, err)
		}
		got, err := tr.Query(st.(*sqlast.QueryStmt).Query)
		if err != nil {
			t.Fatalf("%s: %v", tc.in, err)
		}
		if got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.in, got, tc.want)
		}
	}
}
