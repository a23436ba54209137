package sqlparse

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/lakepipe/lakepipe/internal/sqlast"
)

// FuzzParse checks that no input makes the parser panic or report an
// internal error, that errors carry sane positions, and that every input
// that parses survives Format → Parse unchanged (apart from source spans).
func FuzzParse(f *testing.F) {
	for _, c := range docCases {
		f.Add(c.sql)
	}
	for _, c := range grammarCases {
		f.Add(c.src)
	}
	for _, s := range []string{
		"SELECT a FROM t WHERE NOT EXISTS (SELECT 1) AND x NOT IN ((SELECT 1)) OR y BETWEEN 1 AND 2",
		"SELECT * FROM a LEFT JOIN (b JOIN c ON b.x = c.x) ON a.y = b.y, ((SELECT 1)) s",
		"SELECT CASE WHEN a THEN -b::INT[1] ELSE INTERVAL '1' DAY END, `X`.`y`, 'it''s\\n' FROM VOLUME v (a STRUCT<b: MAP<STRING, ARRAY<INT>>>) USING CSV OPTIONS('a'='b') FILES('x') SUBDIRECTORY 'd' REGEXP 'r'",
		"CREATE DYNAMIC TABLE d (a, b INT COMMENT 'x') REFRESH INTERVAL 5 MINUTES VCLUSTER v AS (SELECT 1) UNION SELECT 2 ORDER BY 1 LIMIT 1 OFFSET 2",
		"CREATE TABLE STREAM s ON TABLE t WITH PROPERTIES ('TABLE_STREAM_MODE' = 'APPEND_ONLY')",
		"COPY INTO VOLUME v SUBDIRECTORY 'x/' FROM (SELECT 1) FILE_FORMAT = (TYPE = JSON, compression = 'gzip') OVERWRITE = TRUE",
		"SELECT row_number() OVER (PARTITION BY a ORDER BY b DESC NULLS LAST) FROM t",
		"INSERT OVERWRITE t (a) VALUES (1), (-2.5e3)",
		"UPDATE t SET a = DATE '2020-01-01' WHERE b IS NOT NULL",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		if _, err := Split(src); err != nil {
			checkSyntaxError(t, src, err)
		}
		_, _ = ParseScript(src)
		_, _ = ParseExpr(src)
		_, _ = ParseQuery(src)
		s, err := Parse(src)
		if err != nil {
			checkSyntaxError(t, src, err)
			return
		}
		text := sqlast.Format(s)
		s2, err := Parse(text)
		if err != nil {
			t.Fatalf("Parse(Format(s)) failed: %v\ninput:     %q\nformatted: %q", err, src, text)
		}
		if text2 := sqlast.Format(s2); text2 != text {
			t.Fatalf("Format not stable\ninput:  %q\nfirst:  %q\nsecond: %q", src, text, text2)
		}
		clearSpans(s)
		clearSpans(s2)
		if !reflect.DeepEqual(s, s2) {
			t.Fatalf("round trip changed the tree\ninput:     %q\nformatted: %q\nbefore: %s\nafter:  %s", src, text, dump(s), dump(s2))
		}
	})
}

func checkSyntaxError(t *testing.T, src string, err error) {
	t.Helper()
	var se *SyntaxError
	if !errors.As(err, &se) {
		t.Fatalf("error %T is not a *SyntaxError: %v", err, err)
	}
	if strings.Contains(se.Msg, "internal") {
		t.Fatalf("internal error for %q: %v", src, err)
	}
	if se.Pos.Line < 1 || se.Pos.Col < 1 || se.Pos.Offset < 0 || se.Pos.Offset > len(src) {
		t.Fatalf("bad error position %+v for %q", se.Pos, src)
	}
}
