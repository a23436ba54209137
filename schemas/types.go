// Package schemas holds what lakepipe declares in ClickHouse: the mapping
// from the SQL types of the ClickZetta Lakehouse documentation to ClickHouse types, and the DDL of lakepipe's
// own system tables. Everything here runs on ClickHouse 18.16 and current
// releases alike, so it uses neither Bool, Map, DateTime64 nor named tuples.
package schemas

import (
	"fmt"
	"strings"

	"github.com/lakepipe/lakepipe/internal/sqlast"
)

// ClickHouseType maps a declared column type to the ClickHouse type that
// stores it. Columns are Nullable unless declared NOT NULL, as SQL users
// expect an empty CSV field or a missing JSON key to load as NULL.
func ClickHouseType(t sqlast.TypeName, notNull bool) (string, error) {
	base, err := baseType(t)
	if err != nil {
		return "", err
	}
	if notNull || strings.HasPrefix(base, "Array(") {
		return base, nil
	}
	return "Nullable(" + base + ")", nil
}

func baseType(t sqlast.TypeName) (string, error) {
	switch t.Name {
	case "TINYINT", "BYTE":
		return "Int8", nil
	case "SMALLINT", "SHORT":
		return "Int16", nil
	case "INT", "INTEGER":
		return "Int32", nil
	case "BIGINT", "LONG":
		return "Int64", nil
	case "FLOAT", "REAL":
		return "Float32", nil
	case "DOUBLE", "FLOAT64":
		return "Float64", nil
	case "DECIMAL", "NUMERIC", "NUMBER":
		p, s, err := DecimalParams(t)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("Decimal(%d, %d)", p, s), nil
	case "STRING", "VARCHAR", "CHAR", "TEXT", "BINARY", "JSON", "VARIANT":
		return "String", nil
	case "BOOLEAN", "BOOL":
		// 18.16 has no Bool type; UInt8 0/1 is what current releases alias it to.
		return "UInt8", nil
	case "DATE":
		return "Date", nil
	case "TIMESTAMP", "TIMESTAMP_NTZ", "TIMESTAMP_LTZ", "DATETIME":
		return "DateTime", nil
	case "ARRAY":
		if len(t.Elems) != 1 {
			return "", fmt.Errorf("ARRAY needs one element type, as in ARRAY<STRING>")
		}
		elem, err := ClickHouseType(t.Elems[0], false)
		if err != nil {
			return "", err
		}
		return "Array(" + elem + ")", nil
	case "MAP", "STRUCT":
		// Stored as JSON text: 18.16 has neither Map nor named Tuple.
		return "String", nil
	}
	return "", fmt.Errorf("unknown type %s (supported: INT, BIGINT, SMALLINT, TINYINT, FLOAT, DOUBLE, DECIMAL(p,s), STRING, VARCHAR(n), BOOLEAN, DATE, TIMESTAMP, ARRAY<T>, MAP<K,V>, STRUCT<…>)", t.Name)
}

// BaseOf strips Nullable(…) and LowCardinality(…) from a ClickHouse type.
func BaseOf(chType string) (base string, nullable bool) {
	for {
		switch {
		case strings.HasPrefix(chType, "Nullable(") && strings.HasSuffix(chType, ")"):
			chType, nullable = chType[len("Nullable("):len(chType)-1], true
		case strings.HasPrefix(chType, "LowCardinality(") && strings.HasSuffix(chType, ")"):
			chType = chType[len("LowCardinality(") : len(chType)-1]
		default:
			return chType, nullable
		}
	}
}

// SQLTypeOf names a ClickHouse type in the ClickZetta Lakehouse documentation's vocabulary, for DESC of
// tables lakepipe did not create itself and for schemas inferred from files.
func SQLTypeOf(chType string) string {
	base, _ := BaseOf(chType)
	switch {
	case base == "Int8":
		return "TINYINT"
	case base == "Int16" || base == "UInt8":
		return "SMALLINT"
	case base == "Int32" || base == "UInt16":
		return "INT"
	case base == "Int64" || base == "UInt32" || base == "UInt64":
		return "BIGINT"
	case base == "Float32":
		return "FLOAT"
	case base == "Float64":
		return "DOUBLE"
	case strings.HasPrefix(base, "Decimal("):
		return "DECIMAL(" + strings.ReplaceAll(base[len("Decimal("):len(base)-1], " ", "") + ")"
	case base == "Date":
		return "DATE"
	case strings.HasPrefix(base, "DateTime"):
		return "TIMESTAMP"
	case strings.HasPrefix(base, "Array("):
		return "ARRAY<" + SQLTypeOf(base[len("Array("):len(base)-1]) + ">"
	}
	return "STRING"
}

// DecimalParams reads DECIMAL[(p[,s])]: precision 10 and scale 0 by
// default, precision 1..38, scale 0..precision.
func DecimalParams(t sqlast.TypeName) (p, s int, err error) {
	p, s = 10, 0
	switch len(t.Params) {
	case 0:
	case 1:
		p = t.Params[0]
	default:
		p, s = t.Params[0], t.Params[1]
	}
	if p < 1 || p > 38 || s < 0 || s > p {
		return 0, 0, fmt.Errorf("DECIMAL(%d,%d): precision must be 1..38 and scale 0..precision", p, s)
	}
	return p, s, nil
}
