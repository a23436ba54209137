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
		pw, err := newPrinter(tc.format, &whole, defaultMaxRows)
		if err != nil {
			t.Fatal(err)
		}
		if err := pw.print(res); err != nil {
			t.Fatal(err)
		}
		ps, _ := newPrinter(tc.format, &streamed, defaultMaxRows)
		sink := ps.sink()
		if sink == nil {
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
	// The table format keeps the rows it shows, streamed or held alike,
	// and counts the rest; with no bound it takes no rows as they come.
	for _, streamed := range []bool{false, true} {
		var table strings.Builder
		pt, _ := newPrinter("table", &table, 2)
		r := res
		if streamed {
			if err := printRows(pt.sink(), res); err != nil {
				t.Fatal(err)
			}
			r = &core.Result{Columns: res.Columns, Types: res.Types, Streamed: true}
		}
		if err := pt.print(r); err != nil {
			t.Fatal(err)
		}
		out := table.String()
		if !strings.Contains(out, "| 2  | tab") || strings.Contains(out, "| 3 ") ||
			!strings.Contains(out, "3 rows (the first 2 shown: --max-rows 0 shows every row") {
			t.Errorf("table of 3 rows, 2 shown (streamed %v):\n%s", streamed, out)
		}
	}
	if pt, _ := newPrinter("table", &strings.Builder{}, 0); pt.sink() != nil {
		t.Error("the table format with every row takes rows as they come: nothing would bound them")
	}
}

// FuzzTablePrinter: whatever a cell or a column name holds (newlines,
// tabs, wide characters, invalid UTF-8), the table prints without a
// panic, one line per row, every line as wide as the border.
func FuzzTablePrinter(f *testing.F) {
	f.Add("note", "plain")
	f.Add("a\nb", "line\nbreak")
	f.Add("列", "中文\t\r")
	f.Add("\xff", "\x00\xfe")
	f.Fuzz(func(t *testing.T, col, cell string) {
		var out strings.Builder
		p, _ := newPrinter("table", &out, 2)
		res := &core.Result{Columns: []string{col, "n"}, Types: []string{"String", "Int64"}, Rows: [][]any{{cell, int64(1)}, {nil, int64(2)}, {cell, int64(3)}}}
		if err := p.print(res); err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
		if len(lines) != 7 { // border, header, border, 2 rows, border, count
			t.Fatalf("%d lines, want 7:\n%s", len(lines), out.String())
		}
		for _, l := range lines[:6] {
			if width(l) != width(lines[0]) {
				t.Fatalf("line %q is %d wide, the border %d", l, width(l), width(lines[0]))
			}
		}
	})
}

// TestTableCellCut: the table format cuts a huge value for display, as
// clickhouse-client's Pretty formats do, so that the rows it keeps stay
// small; --max-rows 0 (every row held whole) shows it whole.
func TestTableCellCut(t *testing.T) {
	huge := strings.Repeat("界", 400000) // 1.2 MB
	for _, c := range []struct {
		maxRows int
		want    int
	}{{10, maxCellBytes}, {0, len(huge)}} {
		var out strings.Builder
		p, _ := newPrinter("table", &out, c.maxRows)
		if err := p.print(&core.Result{Columns: []string{"v"}, Types: []string{"String"}, Rows: [][]any{{huge}}}); err != nil {
			t.Fatal(err)
		}
		line := strings.Split(out.String(), "\n")[3]
		cell := strings.TrimSuffix(strings.TrimSpace(strings.Trim(line, "|")), "…")
		if len(cell) > c.want || len(cell) < c.want-3 || !strings.HasPrefix(cell, "界") {
			t.Errorf("--max-rows %d: a cell of %d bytes shown as %d bytes, want about %d", c.maxRows, len(huge), len(cell), c.want)
		}
	}
}
