package chsql

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/lakepipe/lakepipe/internal/golden"
	"github.com/lakepipe/lakepipe/internal/sqlast"

	"github.com/lakepipe/lakepipe/internal/sqlparse"
)

// With -update (package golden) the test rewrites the golden file instead
// of comparing with it:
//
//	go test ./internal/chsql -run Golden -update
//
// Review the diff it makes: the file is a list of claims about what correct
// ClickHouse SQL is, and a wrong line enshrined there hides a bug.

const goldenPath = "testdata/translate.golden"

// goldenCase is one input of TestTranslateGolden. Its name is unique and
// groups by prefix; a name starting with expr/ is a scalar expression
// (Translator.Expr, as for the WHERE of DELETE, UPDATE and SHOW … WHERE),
// any other a query.
type goldenCase struct{ name, sql string }

// goldenCases are translated by TestTranslateGolden. Inputs are one line
// each (but for one case about newlines) so that the golden file stays
// readable.
var goldenCases = []goldenCase{
	// Projections and stars.
	{"select/constant", "SELECT 1"},
	{"select/columns-and-aliases", "SELECT a, b AS bee, t.c, s.t.d FROM t"},
	{"select/distinct", "SELECT DISTINCT a FROM t"},
	{"select/star-known-columns", "SELECT * FROM sales"},
	{"select/star-unknown-columns", "SELECT * FROM other"},
	{"select/star-qualified", "SELECT s.* FROM sales s"},
	{"select/star-join-known", "SELECT * FROM sales s JOIN customers c ON s.id = c.id"},
	{"select/star-join-one-unknown", "SELECT * FROM sales s JOIN other o ON s.id = o.id"},
	{"select/star-subquery-stays", "SELECT * FROM (SELECT id FROM sales) x"},
	{"select/qualified-table", "SELECT a FROM analytics.events"},
	{"select/literals", "SELECT 'x', 42, -7, 3.25, 1e3, .5, TRUE, FALSE, NULL"},
	{"select/arithmetic", "SELECT a + b * c - d / e % f, (a + b) * c FROM t"},
	{"select/unary", "SELECT -a, +a, - -a FROM t"},
	{"select/concat-operator", "SELECT a || '-' || b FROM t"},

	// WHERE.
	{"where/comparisons", "SELECT a FROM t WHERE a = 1 AND b <> 2 AND c != 3 AND d < 4 AND e <= 5 AND f > 6 AND g >= 7"},
	{"where/and-or-not", "SELECT a FROM t WHERE NOT a = 1 OR b = 2 AND c = 3"},
	{"where/like", "SELECT a FROM t WHERE b LIKE 'x%' AND c NOT LIKE '%y_'"},
	{"where/like-escaped-wildcard", `SELECT a FROM t WHERE b LIKE '100\%' AND c LIKE 'a\_b'`},
	{"where/ilike", "SELECT a FROM t WHERE b ILIKE 'x%' OR c NOT ILIKE 'Y%'"},
	{"where/rlike", "SELECT a FROM t WHERE b RLIKE '^[a-z]+$'"},
	{"where/not-rlike", "SELECT a FROM t WHERE b NOT RLIKE '^[a-z]+$'"},
	{"where/not-like-operand", "SELECT a FROM t WHERE (b NOT RLIKE 'x') = (c NOT ILIKE 'y')"},
	{"where/between", "SELECT a FROM t WHERE b BETWEEN 1 AND 10"},
	{"where/not-between", "SELECT a FROM t WHERE b NOT BETWEEN 1 AND 10 AND c = 0"},
	{"where/between-dates", "SELECT a FROM t WHERE d BETWEEN DATE '2024-01-01' AND DATE '2024-12-31'"},
	{"where/in-list", "SELECT a FROM t WHERE b IN (1, 2, 3) AND c NOT IN ('x', 'y')"},
	{"where/in-subquery", "SELECT a FROM t WHERE b IN (SELECT id FROM u WHERE ok)"},
	{"where/not-in-subquery", "SELECT a FROM t WHERE b NOT IN (SELECT id FROM u)"},
	{"where/is-null", "SELECT a FROM t WHERE b IS NULL OR c IS NOT NULL"},

	// CASE.
	{"case/searched", "SELECT CASE WHEN a > 0 THEN 'pos' WHEN a < 0 THEN 'neg' ELSE 'zero' END AS sign FROM t"},
	{"case/simple", "SELECT CASE status WHEN 1 THEN 'on' WHEN 0 THEN 'off' END FROM t"},
	{"case/nested", "SELECT CASE WHEN a IS NULL THEN CASE WHEN b THEN 1 ELSE 2 END ELSE 3 END FROM t"},

	// CAST to each family of types.
	{"cast/integers", "SELECT CAST(a AS TINYINT), CAST(a AS SMALLINT), CAST(a AS INT), CAST(a AS INTEGER), CAST(a AS BIGINT) FROM t"},
	{"cast/floats", "SELECT CAST(a AS FLOAT), CAST(a AS DOUBLE) FROM t"},
	{"cast/decimal", "SELECT CAST(a AS DECIMAL(10,2)), a::DECIMAL(38, 0), CAST(a AS NUMERIC(5,1)), CAST(a AS DECIMAL) FROM t"},
	{"cast/text", "SELECT CAST(a AS STRING), CAST(a AS VARCHAR(10)), CAST(a AS CHAR(2)), CAST(a AS BINARY) FROM t"},
	{"cast/boolean", "SELECT CAST(a AS BOOLEAN) FROM t"},
	{"cast/date-time", "SELECT CAST(a AS DATE), CAST(a AS TIMESTAMP), a::TIMESTAMP_NTZ, a::TIMESTAMP_LTZ FROM t"},
	{"cast/array", "SELECT CAST(a AS ARRAY<INT>), CAST(a AS ARRAY<ARRAY<STRING>>) FROM t"},
	{"cast/map-struct", "SELECT CAST(a AS MAP<STRING, INT>), CAST(a AS STRUCT<x: INT, y: STRING>) FROM t"},
	{"cast/json-keeps-text", "SELECT CAST(a AS JSON), a::JSON FROM t"},
	{"cast/double-colon-chain", "SELECT a::DOUBLE::STRING FROM t"},
	{"cast/try-cast", "SELECT TRY_CAST(a AS INT), TRY_CAST(a AS TIMESTAMP) FROM t"},
	{"cast/typed-literals", "SELECT DATE '2024-02-29', TIMESTAMP '2024-02-29 12:00:00'"},
	{"cast/null", "SELECT CAST(NULL AS INT)"},

	// Dates and times.
	{"time/now", "SELECT now(), current_timestamp(), current_date(), today()"},
	{"time/parts", "SELECT year(ts), month(ts), day(ts), dayofmonth(ts), hour(ts), minute(ts), second(ts) FROM t"},
	{"time/conversions", "SELECT to_date(s), date(ts), to_timestamp(s), todate(s), todatetime(s) FROM t"},
	{"time/start-of", "SELECT tostartofday(ts), tostartofhour(ts) FROM t"},
	{"time/interval-arithmetic", "SELECT ts + INTERVAL 1 DAY, ts - INTERVAL '3' HOURS, d + INTERVAL 2 MONTH FROM t"},
	{"time/interval-where", "SELECT a FROM t WHERE ts >= now() - INTERVAL 7 DAY"},
	{"time/bad-interval", "SELECT now() - INTERVAL 'x' DAY"},
	{"time/interval-unit-in-string", "SELECT now() - INTERVAL '3 hours', now() + INTERVAL ' 2 DAY '"},
	{"time/interval-string-no-unit", "SELECT now() - INTERVAL '3'"},
	{"time/bare-current-timestamp", "SELECT current_timestamp, current_date, CURRENT_TIMESTAMP + INTERVAL 1 DAY FROM t"},
	{"time/current-timestamp-quoted-column", "SELECT `current_timestamp`, t.current_date FROM t"},
	{"time/to-date-format", "SELECT to_date(s, 'yyyy/MM/dd'), to_timestamp(s, 'yyyy-MM-dd HH:mm') FROM t"},
	{"time/to-timestamp-formats", "SELECT to_timestamp(s, 'yyyy-MM-dd''T''HH:mm:ss.SSS'), to_timestamp(s, 'd/M/yyyy H:m:s'), to_date(s, 'yyyyMMdd') FROM t"},
	{"time/to-date-format-month-name", "SELECT to_date(s, 'dd MMM yyyy') FROM t"},
	{"time/to-timestamp-format-zone", "SELECT to_timestamp(s, 'yyyy-MM-dd HH:mm:ssXXX') FROM t"},
	{"time/to-date-format-two-digit-year", "SELECT to_date(s, 'dd.MM.yy') FROM t"},
	{"time/to-date-format-column", "SELECT to_date(s, f) FROM t"},
	{"time/try-to-date", "SELECT try_to_date(s, 'dd/MM/yyyy'), try_to_timestamp(s, 'yyyy-MM-dd HH:mm:ss'), try_to_date(s), try_to_timestamp(s) FROM t"},

	// Text.
	{"text/case-mapping", "SELECT lower(a), upper(a), LOWER(a), Upper(a) FROM t"},
	{"text/length-substr", "SELECT length(a), char_length(a), substr(a, 2), substring(a, 2, 3) FROM t"},
	{"text/trim", "SELECT trim(a), ltrim(a), rtrim(a) FROM t"},
	{"text/concat-replace", "SELECT concat(a, b, 'c'), replace(a, 'x', 'y') FROM t"},
	{"text/null-handling", "SELECT coalesce(a, b, ''), ifnull(a, 0), nvl(a, 0), nullif(a, ''), iff(a > 0, 1, 0), if(a, 'y', 'n') FROM t"},
	{"text/split", "SELECT split(a, ',') FROM t"},
	{"text/split-escaped", `SELECT split(a, '\\|'), split(a, ' - ') FROM t`},
	{"text/split-regexp", `SELECT split(a, '\\s+') FROM t`},
	{"text/split-empty", "SELECT split(a, '') FROM t"},
	{"text/md5", "SELECT md5(a) FROM t"},
	{"text/sha", "SELECT sha1(a), sha(a), sha2(a, 256), sha2(a, 224), sha2(a, 0) FROM t"},
	{"text/sha2-512", "SELECT sha2(a, 512) FROM t"},
	{"text/tostring", "SELECT tostring(a), toint64(b) FROM t"},

	// JSON: values are kept as their text on the ClickHouse path.
	{"json/parse-json", "SELECT parse_json(a), PARSE_JSON(a)::STRING, to_json(a), json(a) FROM t"},
	{"json/subscript", "SELECT parse_json(a)['k'] FROM t"},
	{"json/array-subscript", "SELECT a[0] FROM t"},
	{"json/parse-json-two-args", "SELECT parse_json(a, b) FROM t"},
	{"json/get-json-object", "SELECT get_json_object(a, '$.k') FROM t"},

	// Aggregates.
	{"agg/count-star", "SELECT COUNT(*) FROM t"},
	{"agg/functions", "SELECT count(a), count(DISTINCT a), sum(a), avg(a), min(a), max(a), stddev(a), variance(a), any_value(a), approx_count_distinct(a) FROM t"},
	{"agg/clickhouse-names", "SELECT uniq(a), uniqexact(a), grouparray(a) FROM t"},
	{"agg/group-by-having", "SELECT category, SUM(amount) AS total FROM t GROUP BY category HAVING SUM(amount) > 100 AND COUNT(*) >= 2"},
	{"agg/group-by-expression", "SELECT year(ts), count(*) FROM t GROUP BY year(ts)"},
	{"agg/sum-star", "SELECT SUM(*) FROM t"},
	{"agg/window", "SELECT row_number() OVER (PARTITION BY a ORDER BY b) FROM t"},
	{"agg/window-aggregate", "SELECT sum(a) OVER (PARTITION BY b) FROM t"},

	// Joins.
	{"join/inner", "SELECT t.a, u.b FROM t JOIN u ON t.k = u.k"},
	{"join/inner-keyword", "SELECT t.a FROM t INNER JOIN u ON t.k = u.k AND t.j = u.j"},
	{"join/left-outer", "SELECT t.a FROM t LEFT OUTER JOIN u ON t.k = u.k"},
	{"join/right", "SELECT t.a FROM t RIGHT JOIN u ON t.k = u.k"},
	{"join/full", "SELECT t.a FROM t FULL JOIN u ON t.k = u.k"},
	{"join/cross", "SELECT t.a FROM t CROSS JOIN u"},
	{"join/comma", "SELECT t.a FROM t, u WHERE t.k = u.k"},
	{"join/using", "SELECT a FROM t JOIN u USING (k, j)"},
	{"join/aliases", "SELECT x.a, y.b FROM t AS x LEFT JOIN u y ON x.k = y.k"},
	{"join/three-way", "SELECT t.a FROM t JOIN u ON t.k = u.k LEFT JOIN v ON u.j = v.j"},
	{"join/subquery", "SELECT t.a, s.n FROM t JOIN (SELECT k, count(*) AS n FROM u GROUP BY k) s ON t.k = s.k"},

	// Set operations.
	{"union/all", "SELECT a FROM t UNION ALL SELECT a FROM u"},
	{"union/all-three", "SELECT 'Source' AS stage, COUNT(*) AS rows FROM a UNION ALL SELECT 'ODS', COUNT(*) FROM b UNION ALL SELECT 'DWD', COUNT(*) FROM c"},
	{"union/all-order-limit", "SELECT a FROM t UNION ALL SELECT a FROM u ORDER BY a LIMIT 5"},
	{"union/all-limit-offset", "SELECT a AS x FROM t UNION ALL SELECT b FROM u LIMIT 5 OFFSET 2"},
	{"union/parenthesised-arm-offset", "(SELECT a FROM t ORDER BY a OFFSET 1) UNION ALL SELECT a FROM u"},
	{"union/parenthesised-arms", "(SELECT a FROM t ORDER BY a LIMIT 1) UNION ALL (SELECT a FROM u)"},
	{"union/distinct", "SELECT a FROM t UNION SELECT a FROM u"},
	{"union/intersect", "SELECT a FROM t INTERSECT SELECT a FROM u"},
	{"union/except", "SELECT a FROM t EXCEPT SELECT a FROM u"},

	// Subqueries and CTEs.
	{"subquery/from", "SELECT x.a FROM (SELECT a FROM t WHERE a > 0) AS x"},
	{"subquery/from-no-alias", "SELECT a FROM (SELECT a FROM t)"},
	{"subquery/scalar", "SELECT a, (SELECT max(b) FROM u) AS m FROM t"},
	{"subquery/nested-order-limit", "SELECT a FROM (SELECT a FROM t ORDER BY a DESC LIMIT 3) top"},
	{"subquery/exists", "SELECT a FROM t WHERE EXISTS (SELECT 1 FROM u WHERE u.k = t.k)"},
	{"subquery/not-exists", "SELECT a FROM t WHERE NOT EXISTS (SELECT 1 FROM u)"},
	{"cte/one", "WITH x AS (SELECT a FROM t) SELECT a FROM x"},
	{"cte/twice", "WITH x AS (SELECT a FROM t) SELECT x.a FROM x JOIN x AS y ON x.a = y.a"},
	{"cte/chained", "WITH x AS (SELECT a FROM t), y AS (SELECT a FROM x) SELECT a FROM y"},
	{"cte/shadows-table", "WITH sales AS (SELECT 1 AS z) SELECT * FROM sales"},
	{"cte/reads-table-of-its-name", "WITH sales AS (SELECT * FROM sales WHERE amount > 0) SELECT * FROM sales"},
	{"cte/later-not-in-scope", "WITH x AS (SELECT a FROM y), y AS (SELECT a FROM t) SELECT a FROM x"},
	{"cte/in-subquery", "WITH x AS (SELECT a FROM t) SELECT b FROM u WHERE b IN (SELECT a FROM x)"},

	// ORDER BY and LIMIT.
	{"order/asc-desc", "SELECT a, b FROM t ORDER BY a, b DESC"},
	{"order/nulls", "SELECT a FROM t ORDER BY a NULLS FIRST, b DESC NULLS LAST"},
	{"order/expression", "SELECT a FROM t ORDER BY lower(a), 1"},
	// Positions: the k-th column (ClickHouse 18.16 would sort by the constant).
	{"order/position-alias", "SELECT a AS x, lower(b) AS y FROM t ORDER BY 2 DESC, 1"},
	{"order/position-expression", "SELECT a, lower(b) FROM t ORDER BY 2"},
	{"order/position-star", "SELECT * FROM t ORDER BY 2"},
	{"order/position-star-subquery", "SELECT * FROM (SELECT a, COUNT(*) AS n FROM t GROUP BY a) ORDER BY 2, 1"},
	{"order/position-union", "SELECT a, b FROM t UNION ALL SELECT a, b FROM t ORDER BY 2, 1"},
	{"order/position-union-unnamed", "SELECT a, lower(b) FROM t UNION ALL SELECT a, b FROM t ORDER BY 2"},
	{"order/position-out-of-range", "SELECT a FROM t ORDER BY 3"},
	{"group/position", "SELECT a, COUNT(*) AS n FROM t GROUP BY 1 ORDER BY 2 DESC"},
	{"order/limit", "SELECT a FROM t LIMIT 10"},
	{"order/limit-offset", "SELECT a FROM t ORDER BY a LIMIT 10 OFFSET 20"},
	{"order/offset-without-limit", "SELECT a FROM t ORDER BY a OFFSET 5"},
	{"order/limit-only-zero-offset", "SELECT a FROM t LIMIT 0"},

	// Sources lakepipe renders itself (Translator.Source).
	{"source/volume", "SELECT * FROM VOLUME v USING CSV"},
	{"source/volume-alias", "SELECT f.a FROM VOLUME v (a INT) USING CSV AS f"},
	{"source/directory", "SELECT relative_path FROM DIRECTORY(VOLUME v) d"},
	{"source/table-function", "SELECT * FROM load_history('t')"},
	{"source/unknown-table", "SELECT a FROM missing"},

	// Quoting of identifiers and literals.
	{"quote/identifier-case", "SELECT `MixedCase`, \"Dq Col\", MixedCase FROM `My Table`"},
	{"quote/identifier-backquote", "SELECT `a``b` FROM t"},
	{"quote/identifier-backslash", `SELECT ` + "`a\\b`" + ` FROM t`},
	{"quote/identifier-dquote-in-backquotes", "SELECT `say \"hi\"` AS `it's` FROM t"},
	{"quote/identifier-unicode", "SELECT `名前`, `café` AS `naïve` FROM `表`"},
	{"quote/identifier-keyword", "SELECT `select`, `from` FROM `where`"},
	{"quote/alias-odd", "SELECT a AS `x y`, b AS `1st`, c AS \"semi;colon\" FROM t"},
	{"quote/string-doubled-quote", "SELECT 'it''s'"},
	{"quote/string-backslash-quote", `SELECT 'it\'s', 'a\\b', 'C:\path'`},
	{"quote/string-escapes", `SELECT 'line\nbreak', 'tab\there', 'cr\r', 'nul\0'`},
	{"quote/string-raw-newline", "SELECT 'two\nlines'"},
	{"quote/string-unicode", "SELECT '日本語', 'emoji 🎉', 'e\u0301'"},
	{"quote/string-injection", "SELECT a FROM t WHERE b = 'x'' OR 1=1 --'"},
	{"quote/string-backtick", "SELECT '`not an ident`'"},
	{"quote/function-backquoted-name", "SELECT `toStartOfMonth`(ts) FROM t"},
	{"quote/function-camelcase-unquoted", "SELECT toStartOfMonth(ts), toYYYYMM(ts), parseDateTimeBestEffortOrNull(s) FROM t"},
	{"quote/function-combinators", "SELECT countIf(a > 1), uniqExactIf(b, a > 0), sumArray(c), groupArrayState(a) FROM t"},
	{"quote/function-unknown-unquoted", "SELECT my_udf(a), isnull(a) FROM t"},
	{"quote/function-odd-name", "SELECT `drop table`(a) FROM t"},

	// Functions refused because they read past the query's tables.
	{"refused/dictget", "SELECT dictGet('lakepipe.d', 'secret', toUInt64(1))"},
	{"refused/dict-prefix", "SELECT dictGetStringOrDefault('d', 'a', toUInt64(1), '') FROM t"},
	{"refused/dict-backquoted", "SELECT `dictHas`('d', a) FROM t"},
	{"refused/joinget", "SELECT joinGet('j', 'v', a) FROM t"},
	{"refused/file", "SELECT file('/etc/passwd')"},
	{"refused/hascolumnintable", "SELECT hasColumnInTable('lakepipe', 'objects', 'secret')"},
	{"refused/in-function", "SELECT a FROM t WHERE `in`(a, x)"},
	{"refused/globalnotin", "SELECT a FROM t WHERE globalNotIn(a, x)"},
	{"refused/nested-in-argument", "SELECT upper(file('/etc/passwd')) FROM t"},
	{"refused/in-subquery", "SELECT a FROM t WHERE a IN (SELECT dictGet('d', 'a', 1))"},
	{"refused/in-cte", "WITH x AS (SELECT joinGet('j', 'v', 1) AS v) SELECT v FROM x"},
	{"refused/in-join-on", "SELECT t.a FROM t JOIN u ON dictHas('d', t.a)"},
	{"refused/look-alikes-pass", "SELECT filename(a), index_of(a), dictionary, infile(a) FROM t"},

	// Scalar expressions on their own.
	{"expr/where-of-delete", "id IN (1, 2) AND name LIKE 'a%' AND NOT deleted"},
	{"expr/between-cast", "CAST(ts AS DATE) NOT BETWEEN DATE '2024-01-01' AND current_date()"},
	{"expr/case-upper", "CASE WHEN upper(s) = 'OK' THEN 1 ELSE 0 END"},
	{"expr/refused", "dictGet('d', 'a', 1) = 'x'"},
	{"expr/subscript", "v['a']['b'] = 1"},
}

// knownWrong names the cases whose current output is wrong, and why. The
// golden file records that output under a KNOWN WRONG warning, so that a
// fix shows up as a diff and nobody takes the line for the right
// translation; take the entry off with the fix.
var knownWrong = map[string]string{}

// goldenTranslator resolves names the way the engine does, minus the
// catalog: unqualified tables live in public, sales and customers have known
// columns, the table "missing" does not exist, and lakepipe's own sources
// render as visible placeholders so their aliases can be checked.
func goldenTranslator() *Translator {
	return &Translator{
		Table: func(n sqlast.ObjectName) (string, error) {
			if n.Name() == "missing" {
				return "", fmt.Errorf("table %s does not exist", n.Name())
			}
			schema := n.Schema()
			if schema == "" {
				schema = "public"
			}
			return Table(schema, n.Name()), nil
		},
		Source: func(ref sqlast.TableRef) (string, error) {
			switch r := ref.(type) {
			case *sqlast.VolumeRef:
				return "(SELECT * FROM volume " + QuoteString(r.Source.Volume) + ")", nil
			case *sqlast.DirectoryRef:
				return "(SELECT * FROM directory " + QuoteString(r.Volume) + ")", nil
			case *sqlast.FuncRef:
				return "(SELECT * FROM function " + QuoteString(r.Func.Name) + ")", nil
			}
			return "", fmt.Errorf("unexpected source %T", ref)
		},
		Columns: func(n sqlast.ObjectName) ([]string, bool) {
			switch n.Name() {
			case "sales":
				return []string{"id", "amount"}, true
			case "customers":
				return []string{"id", "name"}, true
			}
			return nil, false
		},
	}
}

// translateGolden returns the translation of one case, or its error
// prefixed by its class; a parse error is a broken case, not a result.
func translateGolden(t *testing.T, name, sql string) string {
	t.Helper()
	var out string
	var err error
	if strings.HasPrefix(name, "expr/") {
		e, perr := sqlparse.ParseExpr(sql)
		if perr != nil {
			t.Fatalf("%s: parse %q: %v", name, sql, perr)
		}
		out, err = goldenTranslator().Expr(e)
	} else {
		q, perr := sqlparse.ParseQuery(sql)
		if perr != nil {
			t.Fatalf("%s: parse %q: %v", name, sql, perr)
		}
		out, err = goldenTranslator().Query(q)
	}
	var rf *RefusedFunction
	var un *Unsupported
	switch {
	case errors.As(err, &rf):
		return "error (refused): " + err.Error()
	case errors.As(err, &un):
		return "error (unsupported): " + err.Error()
	case err != nil:
		return "error: " + err.Error()
	}
	return out
}

const goldenHeader = `# Golden translations of lakepipe SQL into ClickHouse SQL, written by
# TestTranslateGolden (golden_test.go). Regenerate with
#   go test ./internal/chsql -run Golden -update
# and review the diff by eye: every block is a claim that the SQL after ---
# is the right ClickHouse text for the SQL before it, except the blocks
# marked KNOWN WRONG, which record today's output of a bug still to fix.
`

// goldenBlock renders one case of the golden file.
func goldenBlock(c goldenCase, out string) string {
	sep := "---"
	if why := knownWrong[c.name]; why != "" {
		sep += " KNOWN WRONG: " + why
	}
	return "\n=== " + c.name + "\n" + c.sql + "\n" + sep + "\n" + out + "\n"
}

// parseGolden splits a golden file into its cases' outputs by name. It is
// only used to point at the cases that differ; the file is compared whole.
func parseGolden(text string) map[string]string {
	out := map[string]string{}
	for _, block := range strings.Split(text, "\n=== ")[1:] {
		name, rest, _ := strings.Cut(block, "\n")
		_, res, _ := strings.Cut(rest, "\n---")
		_, res, _ = strings.Cut(res, "\n") // past a KNOWN WRONG note
		out[name] = strings.TrimSuffix(res, "\n")
	}
	return out
}

func TestTranslateGolden(t *testing.T) {
	var b strings.Builder
	b.WriteString(goldenHeader)
	got := map[string]string{}
	for _, c := range goldenCases {
		if _, dup := got[c.name]; dup {
			t.Fatalf("case %s is listed twice", c.name)
		}
		if strings.ContainsAny(c.name, "\n ") || strings.Contains(c.sql, "\n---") || strings.Contains(c.sql, "\n=== ") {
			t.Fatalf("case %s: name or input would break the golden file's layout", c.name)
		}
		got[c.name] = translateGolden(t, c.name, c.sql)
		b.WriteString(goldenBlock(c, got[c.name]))
	}
	for name := range knownWrong {
		if _, ok := got[name]; !ok {
			t.Fatalf("knownWrong lists %s, which is not a case", name)
		}
	}
	golden.Check(t, golden.File{Path: goldenPath, Text: b.String(), Got: got, Parse: parseGolden,
		Update: "go test ./internal/chsql -run Golden -update"})
}
