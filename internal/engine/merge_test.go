package engine

import (
	"strings"
	"testing"

	"github.com/lakepipe/lakepipe/internal/catalog"
	"github.com/lakepipe/lakepipe/internal/chsql"
	"github.com/lakepipe/lakepipe/internal/query"
	"github.com/lakepipe/lakepipe/internal/sqlast"
	"github.com/lakepipe/lakepipe/internal/sqlparse"
)

// The rows of a MERGE: the target's rows are looked up by the source's
// keys in the target's own SELECT (where its key index serves them; 18.16
// does not push a condition into a subquery), a NULL source key is
// flagged, and the first clause that holds gives each column its value.
func TestMergeRowsQuery(t *testing.T) {
	stmt, err := sqlparse.Parse(`MERGE INTO users t USING staging s ON t.id = s.id
WHEN MATCHED AND s.op = 'delete' THEN DELETE
WHEN MATCHED THEN UPDATE SET name = s.name
WHEN NOT MATCHED THEN INSERT (id, name) VALUES (s.id, s.name)`)
	if err != nil {
		t.Fatal(err)
	}
	m := merger{
		spec: catalog.TableSpec{PrimaryKey: []string{"id"}, Columns: []catalog.ColumnSpec{
			{Name: "id", CHType: "Int64"}, {Name: "name", CHType: "Nullable(String)"}}},
		target: "t", source: "s", srcCols: []string{"id", "name", "op"},
	}
	sess := &query.Session{Tr: &chsql.Translator{}}
	got, err := m.rows(sess, stmt.(*sqlast.MergeInto), "`lakepipe_tmp`.`src`", "`public`.`users` FINAL")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"CAST(assumeNotNull(`__s_0`) AS Int64) AS `__k_0`, toUInt8(isNull(`__s_0`)) AS __s_null",
		"FROM `public`.`users` FINAL WHERE (`id`) GLOBAL IN (SELECT `__k_0` FROM (",
		"ALL LEFT JOIN",
		"USING (`__k_0`)",
		"multiIf((__t_m = 1 AND __s_null = 0) AND ifNull(((`__s_2` = 'delete')), 0), 1, (__t_m = 1 AND __s_null = 0), 2, (__t_m = 0 OR __s_null = 1), 3, 0) AS __lp_act",
		"multiIf(__lp_act = 2, materialize(CAST(`__s_1` AS Nullable(String))), __lp_act = 3, materialize(CAST(`__s_1` AS Nullable(String))), `__t_1`) AS `name`",
		"toUInt8(multiIf(__lp_act = 1, 3, __lp_act = 2, 2, __lp_act = 3, 1, 0)) AS __lp_kind",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the rows query lacks\n  %s\nin\n  %s", want, got)
		}
	}
}
