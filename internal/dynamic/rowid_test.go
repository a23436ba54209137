package dynamic

import "testing"

func TestRowHash(t *testing.T) {
	for _, c := range []struct {
		name        string
		cols, types []string
		want        string
	}{
		{"native types as they are", []string{"id", "s", "d", "ts", "e", "a"},
			[]string{"Int64", "String", "Date", "DateTime('UTC')", "Enum8('a' = 1)", "Array(Array(UInt8))"},
			"cityHash64(`id`, `s`, `d`, `ts`, `e`, `a`)"},
		{"NULL apart from empty text", []string{"n"}, []string{"Nullable(String)"},
			"cityHash64(isNull(`n`), ifNull(toString(`n`), ''))"},
		{"18.16 refuses decimals, UUIDs and nullable elements: their text", []string{"x", "u", "a"},
			[]string{"Decimal(10, 2)", "UUID", "Array(Nullable(Int8))"},
			"cityHash64(toString(`x`), toString(`u`), toString(`a`))"},
		{"unknown type: text", []string{"id"}, nil, "cityHash64(toString(`id`))"},
		{"no columns", nil, nil, "toUInt64(0)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := rowHash(c.cols, c.types); got != c.want {
				t.Errorf("rowHash = %s, want %s", got, c.want)
			}
		})
	}
}
