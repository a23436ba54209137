package sqlparse

import (
	"testing"

	"github.com/lakepipe/lakepipe/internal/sqlast"
)

// TestRoundTripEdges round-trips shapes that need care in Format: nested
// parentheses around queries, signs, keyword-named objects, property keys
// that bare would read as clauses, escapes.
func TestRoundTripEdges(t *testing.T) {
	for _, src := range []string{
		"SELECT a FROM t WHERE x = (NOT EXISTS (SELECT 1))",
		"SELECT (INTERVAL '1')::STRING, INTERVAL '1' DAY::STRING, INTERVAL -1 HOUR, INTERVAL (1 + 2) MINUTE",
		"SELECT - -1, -(-1), +-1, - - -a, 1 - -1",
		"SELECT 1 FROM t WHERE a IN ((SELECT 1) UNION (SELECT 2)) AND b IN ((1), (2))",
		"SELECT ((SELECT 1) + 1), (((SELECT 1))), ((1) + (2))",
		"SELECT * FROM ((a JOIN b ON x) JOIN c ON y), (((SELECT 1) UNION SELECT 2)) AS u",
		"CREATE TABLE `select` (`from` INT, `Where` STRING, `null` BOOLEAN) COMMENT 'it''s'",
		"SELECT `case`.`when`, `x`() FROM `table` AS `end`",
		`SELECT "exists"(1), "cast", "interval" - 1, "date", "timestamp" FROM t`,
		"COPY INTO t FROM VOLUME v USING CSV 'purge' = 'x' 'subdirectory' = 'y' FILES = 'z'",
		"COPY INTO VOLUME v FROM TABLE t FILE_FORMAT = ('type' = 'x') 'from' = 'y'",
		"CREATE PIPE p 'comment' = 'x' `AS` = 'y' AS COPY INTO t FROM VOLUME v USING CSV",
		"CREATE STORAGE CONNECTION c TYPE OSS 'comment' = 'x' TYPE2 = 'y' 'Key' = 'V'",
		`SELECT 'a\\%b', 'tab\tnl\ncr\rnul\0', '''', '', '\_'`,
		"SELECT a FROM t WHERE a BETWEEN (b AND c) AND d OR NOT a IS NULL",
		"SELECT CASE (a = b) WHEN TRUE THEN (SELECT 1) END, CAST((a + b) AS ARRAY<STRUCT<`A`: INT>>)",
		"SELECT x FROM t ORDER BY (SELECT 1) DESC NULLS FIRST LIMIT (1 + 1) OFFSET -1",
		"WITH `W` AS ((SELECT 1)) ((SELECT * FROM `W`))",
		`CREATE DYNAMIC TABLE "Dt" ("A", b DEFAULT 1 NOT NULL) VCLUSTER "VC" AS WITH x AS (SELECT 1) SELECT * FROM x`,
		"SELECT * FROM `volume` v, VOLUME `Vol` USING CSV AS `volume`",
		"SELECT café, 数据 FROM t",
		"SELECT current_timestamp, CURRENT_DATE(), `current_date`, t.current_timestamp FROM t",
	} {
		checkRoundTrip(t, mustParse(t, src))
	}
}

func TestFormatQuoting(t *testing.T) {
	e := &sqlast.ColumnRef{Parts: []string{"select", "Mixed", "ok_1", "1x", "", "a`b", "数据"}}
	eq(t, "idents", sqlast.FormatExpr(e), "`select`.`Mixed`.ok_1.`1x`.``.`a``b`.`数据`")
	eq(t, "string", sqlast.FormatExpr(&sqlast.Literal{Kind: sqlast.LitString, Value: "it's\\\n\t\r\x00"}), `'it''s\\\n\t\r\0'`)
	eq(t, "func", sqlast.FormatExpr(&sqlast.FuncCall{Name: "exists", Args: []sqlast.Expr{&sqlast.Literal{Kind: sqlast.LitNumber, Value: "1"}}}), "`exists`(1)")
	// Trees built by hand get the parentheses their shape needs.
	sum := &sqlast.BinaryExpr{Op: "+", L: &sqlast.ColumnRef{Parts: []string{"a"}}, R: &sqlast.ColumnRef{Parts: []string{"b"}}}
	eq(t, "parens", sqlast.FormatExpr(&sqlast.BinaryExpr{Op: "*", L: sum, R: sum}), "(a + b) * (a + b)")
	eq(t, "right assoc", sqlast.FormatExpr(&sqlast.BinaryExpr{Op: "-", L: &sqlast.ColumnRef{Parts: []string{"a"}}, R: sum}), "a - (a + b)")
	eq(t, "not", sqlast.FormatExpr(&sqlast.BinaryExpr{Op: "=", L: &sqlast.UnaryExpr{Op: "NOT", X: &sqlast.ColumnRef{Parts: []string{"a"}}}, R: &sqlast.Literal{Kind: sqlast.LitBool, Value: "true"}}), "(NOT a) = TRUE")
	eq(t, "type", sqlast.FormatType(sqlast.TypeName{Name: "MAP", Elems: []sqlast.TypeName{{Name: "STRING"}, {Name: "ARRAY", Elems: []sqlast.TypeName{{Name: "DECIMAL", Params: []int{10, 2}}}}}}), "MAP<STRING, ARRAY<DECIMAL(10, 2)>>")
	eq(t, "struct", sqlast.FormatType(sqlast.TypeName{Name: "STRUCT", Fields: []sqlast.TypeField{{Name: "a", Type: sqlast.TypeName{Name: "INT"}}, {Name: "B c", Type: sqlast.TypeName{Name: "STRING"}}}}), "STRUCT<a: INT, `B c`: STRING>")
	set := &sqlast.SetOp{Op: "UNION", Left: &sqlast.Select{Items: []sqlast.SelectItem{{Star: true}}}, Right: &sqlast.SetOp{Op: "UNION", All: true, Left: &sqlast.Select{Items: []sqlast.SelectItem{{Star: true}}}, Right: &sqlast.Select{Items: []sqlast.SelectItem{{Star: true}}}}}
	eq(t, "set ops", sqlast.FormatQuery(&sqlast.Query{Body: set}), "SELECT * UNION (SELECT * UNION ALL SELECT *)")
	eq(t, "nil", sqlast.Format(nil)+sqlast.FormatExpr(nil)+sqlast.FormatQuery(nil), "")
}
