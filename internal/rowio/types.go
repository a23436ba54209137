package rowio

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
)

// ClickHouseType names the ClickHouse type for a column of Arrow type dt,
// wrapped in Nullable(...) when nullable. Types without a ClickHouse
// counterpart here (nested, dictionary, time-of-day, interval, decimal256,
// float16, …) map to String; the Parquet reader then delivers such columns
// as *array.String holding their text (JSON for nested values), so a
// Vector.Arrow is always one of the array types named below.
//
//	int8…int64, uint8…uint64 → Int8…Int64, UInt8…UInt64
//	float32, float64          → Float32, Float64
//	string, large_string,
//	binary, large_binary      → String
//	bool                      → UInt8
//	decimal128(p, s)          → Decimal(p, s)
//	date32                    → Date
//	timestamp (any unit, tz)  → DateTime
func ClickHouseType(dt arrow.DataType, nullable bool) (string, error) {
	if dt == nil {
		return "", fmt.Errorf("no Arrow type")
	}
	t := baseClickHouseType(dt)
	if nullable {
		t = "Nullable(" + t + ")"
	}
	return t, nil
}

func baseClickHouseType(dt arrow.DataType) string {
	switch dt.ID() {
	case arrow.INT8:
		return "Int8"
	case arrow.INT16:
		return "Int16"
	case arrow.INT32:
		return "Int32"
	case arrow.INT64:
		return "Int64"
	case arrow.UINT8:
		return "UInt8"
	case arrow.UINT16:
		return "UInt16"
	case arrow.UINT32:
		return "UInt32"
	case arrow.UINT64:
		return "UInt64"
	case arrow.FLOAT32:
		return "Float32"
	case arrow.FLOAT64:
		return "Float64"
	case arrow.BOOL:
		return "UInt8"
	case arrow.DECIMAL128:
		d := dt.(*arrow.Decimal128Type)
		return fmt.Sprintf("Decimal(%d, %d)", d.Precision, d.Scale)
	case arrow.DATE32, arrow.DATE64:
		return "Date"
	case arrow.TIMESTAMP:
		return "DateTime"
	}
	return "String"
}

// NativeArrow reports whether the Parquet reader passes arrays of dt on
// as they are; other types are rendered to text.
func NativeArrow(dt arrow.DataType) bool {
	switch dt.ID() {
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64,
		arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.UINT64,
		arrow.FLOAT32, arrow.FLOAT64, arrow.BOOL, arrow.DECIMAL128,
		arrow.DATE32, arrow.DATE64, arrow.TIMESTAMP,
		arrow.STRING, arrow.LARGE_STRING, arrow.BINARY, arrow.LARGE_BINARY:
		return true
	}
	return false
}

// ArrowType maps a ClickHouse type to the Arrow type the Parquet writer
// uses for it, and whether the column is nullable. LowCardinality is
// transparent. Integers keep their width and signedness; String,
// FixedString, UUID, Enum and IP types become utf8; Decimal(p, s) and
// Decimal32/64/128(s) become decimal128; DateTime becomes timestamp[us,
// UTC] (DateTime64 with precision above 6 becomes timestamp[ns, UTC]);
// Date and Date32 become date32; Bool becomes bool. Other types are an
// error.
func ArrowType(chType string) (arrow.DataType, bool, error) {
	base, nullable := unwrapType(chType)
	name, args := splitType(base)
	switch name {
	case "Int8":
		return arrow.PrimitiveTypes.Int8, nullable, nil
	case "Int16":
		return arrow.PrimitiveTypes.Int16, nullable, nil
	case "Int32":
		return arrow.PrimitiveTypes.Int32, nullable, nil
	case "Int64":
		return arrow.PrimitiveTypes.Int64, nullable, nil
	case "UInt8":
		return arrow.PrimitiveTypes.Uint8, nullable, nil
	case "UInt16":
		return arrow.PrimitiveTypes.Uint16, nullable, nil
	case "UInt32":
		return arrow.PrimitiveTypes.Uint32, nullable, nil
	case "UInt64":
		return arrow.PrimitiveTypes.Uint64, nullable, nil
	case "Float32":
		return arrow.PrimitiveTypes.Float32, nullable, nil
	case "Float64":
		return arrow.PrimitiveTypes.Float64, nullable, nil
	case "Bool", "Boolean":
		return arrow.FixedWidthTypes.Boolean, nullable, nil
	case "String", "FixedString", "UUID", "Enum8", "Enum16", "Enum", "IPv4", "IPv6":
		return arrow.BinaryTypes.String, nullable, nil
	case "Date", "Date32":
		return arrow.FixedWidthTypes.Date32, nullable, nil
	case "DateTime":
		return &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, nullable, nil
	case "DateTime64":
		unit := arrow.Microsecond
		if len(args) > 0 {
			if p, err := strconv.Atoi(args[0]); err == nil && p > 6 {
				unit = arrow.Nanosecond
			}
		}
		return &arrow.TimestampType{Unit: unit, TimeZone: "UTC"}, nullable, nil
	case "Decimal", "Decimal32", "Decimal64", "Decimal128":
		p, s, err := decimalPS(name, args)
		if err != nil {
			return nil, false, fmt.Errorf("type %s: %w", chType, err)
		}
		if p > 38 {
			return nil, false, fmt.Errorf("type %s: precision above 38 is not supported in Parquet export", chType)
		}
		return &arrow.Decimal128Type{Precision: int32(p), Scale: int32(s)}, nullable, nil
	}
	return nil, false, fmt.Errorf("type %s cannot be exported to Parquet", chType)
}

// unwrapType strips LowCardinality(...) and Nullable(...) in any nesting.
func unwrapType(t string) (base string, nullable bool) {
	t = strings.TrimSpace(t)
	for {
		switch {
		case strings.HasPrefix(t, "Nullable(") && strings.HasSuffix(t, ")"):
			t, nullable = strings.TrimSpace(t[len("Nullable("):len(t)-1]), true
		case strings.HasPrefix(t, "LowCardinality(") && strings.HasSuffix(t, ")"):
			t = strings.TrimSpace(t[len("LowCardinality(") : len(t)-1])
		default:
			return t, nullable
		}
	}
}

// splitType splits "Name(a, b)" into Name and its top-level arguments.
func splitType(t string) (string, []string) {
	i := strings.IndexByte(t, '(')
	if i < 0 || !strings.HasSuffix(t, ")") {
		return t, nil
	}
	name, inner := strings.TrimSpace(t[:i]), t[i+1:len(t)-1]
	var args []string
	depth, start := 0, 0
	inStr := false
	for j := 0; j < len(inner); j++ {
		switch c := inner[j]; {
		case c == '\'' && (j == 0 || inner[j-1] != '\\'):
			inStr = !inStr
		case inStr:
		case c == '(':
			depth++
		case c == ')':
			depth--
		case c == ',' && depth == 0:
			args = append(args, strings.TrimSpace(inner[start:j]))
			start = j + 1
		}
	}
	args = append(args, strings.TrimSpace(inner[start:]))
	return name, args
}

func decimalPS(name string, args []string) (p, s int, err error) {
	atoi := func(i int) (int, error) {
		if i >= len(args) {
			return 0, fmt.Errorf("missing argument")
		}
		return strconv.Atoi(args[i])
	}
	switch name {
	case "Decimal":
		if p, err = atoi(0); err != nil {
			return 0, 0, err
		}
		if len(args) > 1 {
			if s, err = atoi(1); err != nil {
				return 0, 0, err
			}
		}
	case "Decimal32":
		p = 9
		s, err = atoi(0)
	case "Decimal64":
		p = 18
		s, err = atoi(0)
	case "Decimal128":
		p = 38
		s, err = atoi(0)
	case "Decimal256":
		p = 76
		s, err = atoi(0)
	}
	if err != nil {
		return 0, 0, err
	}
	if p < 1 || s < 0 || s > p {
		return 0, 0, fmt.Errorf("bad precision/scale (%d, %d)", p, s)
	}
	return p, s, nil
}

// ColumnScale returns the scale of a Decimal column type, or -1 if the
// type is not a decimal.
func ColumnScale(chType string) int {
	base, _ := unwrapType(chType)
	name, args := splitType(base)
	if !strings.HasPrefix(name, "Decimal") {
		return -1
	}
	_, s, err := decimalPS(name, args)
	if err != nil {
		return -1
	}
	return s
}

// IsDateType reports whether values of chType are calendar dates.
func IsDateType(chType string) bool {
	base, _ := unwrapType(chType)
	return base == "Date" || base == "Date32"
}

// DateTime64Precision returns the sub-second digits of a DateTime64 type,
// or 0.
func DateTime64Precision(chType string) int {
	base, _ := unwrapType(chType)
	name, args := splitType(base)
	if name != "DateTime64" || len(args) == 0 {
		return 0
	}
	p, err := strconv.Atoi(args[0])
	if err != nil || p < 0 {
		return 0
	}
	return min(p, 9)
}
