package formats

import (
	"bytes"
	"math"
	"testing"
	"time"

	"github.com/lakepipe/lakepipe/internal/rowio"

	"github.com/shopspring/decimal"
)

func TestCSVWriter(t *testing.T) {
	cols := []rowio.Column{
		{Name: "id", Type: "UInt64"},
		{Name: "name", Type: "Nullable(String)"},
		{Name: "price", Type: "Decimal(10, 2)"},
		{Name: "day", Type: "Nullable(Date)"},
		{Name: "ts", Type: "DateTime"},
		{Name: "ok", Type: "Bool"},
		{Name: "f", Type: "Float64"},
		{Name: "ts3", Type: "DateTime64(3)"},
	}
	name := "a \"quoted\", name"
	day := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	ts := time.Date(2026, 6, 1, 7, 8, 9, 123456789, time.UTC)
	var nilName *string
	var nilDay *time.Time
	tests := []struct {
		name string
		opts rowio.Options
		rows [][]any
		want string
	}{
		{"values", rowio.Options{}, [][]any{
			{uint64(123), &name, decimal.RequireFromString("8999"), &day, ts, true, 1.5, ts},
			{uint64(0), nilName, decimal.RequireFromString("0.5"), nilDay, ts, false, 1e300, ts},
			{uint64(1), "line\nbreak", decimal.RequireFromString("-1.005"), day, ts, false, math.NaN(), ts},
		}, "123,\"a \"\"quoted\"\", name\",8999.00,2026-06-01,2026-06-01 07:08:09,true,1.5,2026-06-01 07:08:09.123\n" +
			"0,,0.50,,2026-06-01 07:08:09,false,1e+300,2026-06-01 07:08:09.123\n" +
			"1,\"line\nbreak\",-1.01,2026-06-01,2026-06-01 07:08:09,false,nan,2026-06-01 07:08:09.123\n"},
		{"header and null value", rowio.Options{Header: true, HasNullValue: true, NullValue: `\N`, Delimiter: '\t'}, [][]any{
			{uint64(1), nilName, decimal.Zero, nilDay, ts, true, 0.0, ts},
			{uint64(2), `\N`, decimal.Zero, day, ts, true, 100.0, ts},
		}, "id\tname\tprice\tday\tts\tok\tf\tts3\n" +
			"1\t\\N\t0.00\t\\N\t2026-06-01 07:08:09\ttrue\t0\t2026-06-01 07:08:09.123\n" +
			"2\t\"\\N\"\t0.00\t2026-06-01\t2026-06-01 07:08:09\ttrue\t100\t2026-06-01 07:08:09.123\n"},
		{"header without rows", rowio.Options{Header: true}, nil, "id,name,price,day,ts,ok,f,ts3\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			w := NewCSVWriter(&buf, cols, tt.opts)
			for _, row := range tt.rows {
				if err := w.Write(row); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			if buf.String() != tt.want {
				t.Errorf("got\n%s\nwant\n%s", buf.String(), tt.want)
			}
		})
	}
}

// TestCSVWriterReadBack: what the writer writes, the reader reads back.
func TestCSVWriterReadBack(t *testing.T) {
	cols := []rowio.Column{{Name: "s", Type: "Nullable(String)"}, {Name: "n", Type: "Int32"}}
	vals := []string{"", "plain", "with,comma", "with \"quote\"", "multi\r\nline\n", "NULL", " spaced "}
	var buf bytes.Buffer
	opts := rowio.Options{Header: true, HasNullValue: true, NullValue: "NULL"}
	w := NewCSVWriter(&buf, cols, opts)
	for i, v := range vals {
		w.Write([]any{v, int32(i)})
	}
	w.Write([]any{nil, int32(-1)})
	w.Close()
	got := readString(t, buf.String(), "CSV", opts)
	if len(got.rows) != len(vals)+1 || len(got.errs) > 0 {
		t.Fatalf("%d rows, errors %v", len(got.rows), got.errs)
	}
	for i, v := range vals {
		if got.rows[i][0] == nil || *got.rows[i][0] != v {
			t.Errorf("row %d: %s, want %q", i, show(got.rows[i:i+1]), v)
		}
	}
	if got.rows[len(vals)][0] != nil {
		t.Errorf("NULL read back as %q", *got.rows[len(vals)][0])
	}
}
