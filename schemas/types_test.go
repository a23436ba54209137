package schemas

import (
	"testing"

	"github.com/lakepipe/lakepipe/internal/sqlast"
	"github.com/lakepipe/lakepipe/internal/sqlparse"
)

func TestClickHouseType(t *testing.T) {
	tests := []struct {
		sql     string
		notNull bool
		want    string
	}{
		{"BIGINT", false, "Nullable(Int64)"},
		{"INT", true, "Int32"},
		{"DECIMAL(10,2)", false, "Nullable(Decimal(10, 2))"},
		{"DECIMAL", false, "Nullable(Decimal(10, 0))"},
		{"STRING", false, "Nullable(String)"},
		{"VARCHAR(20)", false, "Nullable(String)"},
		{"BOOLEAN", false, "Nullable(UInt8)"},
		{"TIMESTAMP", false, "Nullable(DateTime)"},
		{"DATE", true, "Date"},
		{"DOUBLE", false, "Nullable(Float64)"},
		{"ARRAY<INT>", false, "Array(Nullable(Int32))"},
		{"MAP<STRING,INT>", false, "Nullable(String)"},
	}
	for _, tt := range tests {
		stmt, err := sqlparse.Parse("CREATE TABLE t (c " + tt.sql + ")")
		if err != nil {
			t.Fatalf("%s: %v", tt.sql, err)
		}
		typ := stmt.(*sqlast.CreateTable).Columns[0].Type
		got, err := ClickHouseType(typ, tt.notNull)
		if err != nil || got != tt.want {
			t.Errorf("%s: got %q, %v; want %q", tt.sql, got, err, tt.want)
		}
		if back := SQLTypeOf(got); back == "" {
			t.Errorf("%s: no SQL name for %s", tt.sql, got)
		}
	}
	if _, err := ClickHouseType(sqlast.TypeName{Name: "DECIMAL", Params: []int{50, 2}}, false); err == nil {
		t.Error("DECIMAL(50,2) accepted")
	}
	if _, err := ClickHouseType(sqlast.TypeName{Name: "GEOMETRY"}, false); err == nil {
		t.Error("unknown type accepted")
	}
}
