package main

import (
	"strings"
	"testing"
	"time"

	"github.com/lakepipe/lakepipe/internal/core"
)

// TestPrinterStreamed: a result written row by row through a printer's
// RowSink (a SELECT's rows as they arrive) prints what the same result
// held whole prints.
func TestPrinterStreamed(t *testing.T) {
	res := &core.Result{
		Columns: []string{"id", "note", "at"},
		Types:   []string{"Int64", "Nullable(String)", "DateTime"},
		Rows: [][]any{
			{int64(1), "plain", time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)},
			{int64(2), "tab\there, \"quoted\", new\nline <&>", time.Date(2026, 12, 7, 11, 0, 0, 0, time.UTC)},
			{int64(3), nil, time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)},
		},
	}
	for _, tc := range []struct{ format, want string }{
		{"csv", "id,note,at\n1,plain,2026-12-07 10:00:00\n2,\"tab\there, \"\"quoted\"\", new\nline <&>\",2026-12-07 11:00:00\n3,NULL,2026-12-07 12:00:00\n"},
		{"tsv", "id\tnote\tat\n1\tplain\t2026-12-07 10:00:00\n2\ttab\\there, \"quoted\", new\\nline <&>\t2026-12-07 11:00:00\n3\tNULL\t2026-12-07 12:00:00\n"},
		{"json", `{"id":1,"note":"plain","at":"2026-12-07 10:00:00"}` + "\n" +
			`{"id":2,"note":"tab\there, \"quoted\", new\nline \u003c\u0026\u003e","at":"2026-12-07 11:00:00"}` + "\n" +
			`{"id":3,"note":null,"at":"2026-12-07 12:00:00"}` + "\n"},
	} {
		var whole, streamed strings.Builder
		pw, err := newPrinter(tc.format, &whole)
		if err != nil {
			t.Fatal(err)
		}
		if err := pw.print(res); err != nil {
			t.Fatal(err)
		}
		ps, _ := newPrinter(tc.format, &streamed)
		sink, ok := ps.(core.RowSink)
		if !ok {
			t.Fatalf("%s: the printer takes no rows as they arrive", tc.format)
		}
		if err := printRows(sink, res); err != nil {
			t.Fatal(err)
		}
		if err := ps.print(&core.Result{Columns: res.Columns, Types: res.Types, Streamed: true}); err != nil {
			t.Fatal(err)
		}
		if whole.String() != tc.want || streamed.String() != tc.want {
			t.Errorf("%s:\nwhole    %q\nstreamed %q\nwant     %q", tc.format, whole.String(), streamed.String(), tc.want)
		}
	}
	var table strings.Builder
	pt, _ := newPrinter("table", &table)
	if _, ok := pt.(core.RowSink); ok {
		t.Error("the table format streams: it needs every row for its widths")
	}
}
