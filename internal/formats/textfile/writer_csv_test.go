package textfile

import (
	"bytes"
	"errors"
	"io"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/lakepipe/lakepipe/internal/rowio"
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

// The readers directly, without package formats' dispatch: a CSV with a
// header and a bad row, and JSON lines with a bad line, each keep reading
// past the bad record and name its line.
func TestReadersDirectly(t *testing.T) {
	open := func(text string) (*rowio.CountingReader, *rowio.Decompressor) {
		cnt := &rowio.CountingReader{R: strings.NewReader(text)}
		dec, err := rowio.OpenDecompressed(cnt, "f", rowio.CompressionNone, rowio.Limits{}.WithDefaults())
		if err != nil {
			t.Fatal(err)
		}
		return cnt, dec
	}
	opts := rowio.Options{Header: true}.WithDefaults()
	cnt, dec := open("a,b\n1,2\n3\n4,5\n")
	csv, err := NewCSVReader("f.csv", cnt, dec, opts)
	if err != nil {
		t.Fatal(err)
	}
	rows, errs := drain(t, csv)
	if rows != 2 || len(errs) != 1 || errs[0].Line != 3 {
		t.Errorf("CSV: %d rows, errors %+v; want 2 rows and line 3 refused", rows, errs)
	}
	cnt, dec = open("{\"a\": 1}\nnot json\n{\"a\": 2}\n")
	js, err := NewJSONReader("f.json", cnt, dec, rowio.Options{}.WithDefaults())
	if err != nil {
		t.Fatal(err)
	}
	rows, errs = drain(t, js)
	if rows != 2 || len(errs) != 1 || errs[0].Line != 2 {
		t.Errorf("JSON: %d rows, errors %+v; want 2 rows and line 2 refused", rows, errs)
	}
}

func drain(t *testing.T, r rowio.Reader) (rows int, errs []rowio.RowError) {
	t.Helper()
	for {
		b, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		rows += b.Rows
		errs = append(errs, b.Errors...)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	return rows, errs
}
