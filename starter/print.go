package main

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/shopspring/decimal"

	"github.com/lakepipe/lakepipe/internal/core"
	"github.com/lakepipe/lakepipe/schemas"
)

// printer writes results in one of the output formats. Its sink, when
// not nil, takes a SELECT's rows as they arrive (core.RowSink): the
// formats for scripts (csv, tsv, json) write them at once, so that an
// export is not bound by memory; the table format keeps the first
// maxRows for its column widths and counts the rest.
type printer interface {
	print(*core.Result) error
	sink() core.RowSink
}

// defaultMaxRows is how many rows the table format shows (--max-rows), as
// clickhouse-client's Pretty formats show 10,000.
const defaultMaxRows = 10000

func newPrinter(format string, w io.Writer, maxRows int) (printer, error) {
	switch strings.ToLower(format) {
	case "table", "":
		return &tablePrinter{w: w, maxRows: maxRows}, nil
	case "csv":
		return &sepPrinter{w: bufio.NewWriter(w), sep: ','}, nil
	case "tsv":
		return &sepPrinter{w: bufio.NewWriter(w), sep: '\t'}, nil
	case "json":
		return &jsonPrinter{w: bufio.NewWriter(w)}, nil
	}
	return nil, fmt.Errorf("--format %q: expected table, csv, tsv or json", format)
}

// printRows writes a result held whole through a sink.
func printRows(s core.RowSink, res *core.Result) error {
	if err := s.Columns(res.Columns, res.Types); err != nil {
		return err
	}
	for _, row := range res.Rows {
		if err := s.Row(row); err != nil {
			return err
		}
	}
	return nil
}

// cellText renders a value; Decimal keeps its column's scale (8999.00).
func cellText(v any, chType string) string {
	switch x := v.(type) {
	case nil:
		return "NULL"
	case string:
		return x
	case time.Time:
		base, _ := schemas.BaseOf(chType)
		if base == "Date" {
			return x.Format("2006-01-02")
		}
		return x.Format("2006-01-02 15:04:05")
	case decimal.Decimal:
		var p, s int32
		base, _ := schemas.BaseOf(chType)
		if _, err := fmt.Sscanf(strings.ReplaceAll(base, " ", ""), "Decimal(%d,%d)", &p, &s); err == nil {
			return x.StringFixed(s)
		}
		return x.String()
	case []byte:
		return string(x)
	}
	return fmt.Sprint(v)
}

func rowText(types []string, row []any) []string {
	out := make([]string, len(row))
	for i, v := range row {
		t := ""
		if i < len(types) {
			t = types[i]
		}
		out[i] = cellText(v, t)
	}
	return out
}

type tablePrinter struct {
	w       io.Writer
	maxRows int // 0: every row, held whole (LAKEPIPE_MAX_RESULT_BYTES bounds it)
	// The result being printed.
	cols, types []string
	cells       [][]string
	held        int // bytes of cells
	total       int64
	full        bool // a row was not kept: the rest are only counted
}

// What the table format keeps of a streamed result: cells are cut at
// maxCellBytes (clickhouse-client's Pretty formats cut values at 10,000
// characters), and rows stop being kept past maxTableBytes, whatever
// --max-rows says, so that a few huge values cannot take the memory.
const (
	maxCellBytes  = 10000
	maxTableBytes = 64 << 20
)

// sink is the printer itself when it shows a bounded number of rows.
func (p *tablePrinter) sink() core.RowSink {
	if p.maxRows <= 0 {
		return nil
	}
	return p
}

func (p *tablePrinter) Columns(names, types []string) error {
	p.cols, p.types, p.cells, p.held, p.total, p.full = names, types, nil, 0, 0, false
	return nil
}

func (p *tablePrinter) Row(row []any) error {
	p.total++
	if p.full = p.full || p.maxRows > 0 && (len(p.cells) >= p.maxRows || p.held >= maxTableBytes); p.full {
		return nil // only counted; the rows kept stay the first ones
	}
	cells := rowText(p.types, row)
	for i, c := range cells {
		if p.maxRows > 0 && len(c) > maxCellBytes {
			c = strings.ToValidUTF8(c[:maxCellBytes], "") + "…"
		}
		cells[i] = cellEscape.Replace(c)
		p.held += len(cells[i])
	}
	p.cells = append(p.cells, cells)
	return nil
}

// cellEscape keeps a cell on its line of the table (and the widths, which
// are measured after it, right).
var cellEscape = strings.NewReplacer("\n", "\\n", "\r", "\\r", "\t", "\\t")

func (p *tablePrinter) print(res *core.Result) error {
	if len(res.Columns) == 0 {
		if res.Message != "" {
			_, err := fmt.Fprintln(p.w, res.Message)
			return err
		}
		return nil
	}
	if !res.Streamed {
		_ = printRows(p, res)
	}
	cols := make([]string, len(p.cols))
	widths := make([]int, len(p.cols))
	for i, c := range p.cols {
		cols[i] = cellEscape.Replace(c)
		widths[i] = width(cols[i])
	}
	for _, row := range p.cells {
		for i, c := range row {
			if n := width(c); i < len(widths) && n > widths[i] {
				widths[i] = n
			}
		}
	}
	var b strings.Builder
	line := func() {
		for _, w := range widths {
			b.WriteString("+" + strings.Repeat("-", w+2))
		}
		b.WriteString("+\n")
	}
	rowOut := func(vals []string) {
		for i, v := range vals {
			b.WriteString("| " + v + strings.Repeat(" ", widths[i]-width(v)) + " ")
		}
		b.WriteString("|\n")
	}
	line()
	rowOut(cols)
	line()
	for _, r := range p.cells {
		rowOut(r)
	}
	line()
	fmt.Fprintf(&b, "%d row%s", p.total, map[bool]string{true: "", false: "s"}[p.total == 1])
	if shown := int64(len(p.cells)); shown < p.total {
		fmt.Fprintf(&b, " (the first %d shown: --max-rows 0 shows every row; --format csv, tsv or json print them all)", shown)
	}
	b.WriteString("\n")
	if res.Message != "" {
		b.WriteString(res.Message + "\n")
	}
	p.cells = nil
	_, err := io.WriteString(p.w, b.String())
	return err
}

type sepPrinter struct {
	w     *bufio.Writer
	sep   rune
	types []string
	csv   *csv.Writer
}

func (p *sepPrinter) print(res *core.Result) error {
	if len(res.Columns) > 0 && !res.Streamed { // messages are for people; scripts get rows only
		if err := printRows(p, res); err != nil {
			return err
		}
	}
	return p.flush()
}

func (p *sepPrinter) sink() core.RowSink { return p }

func (p *sepPrinter) flush() error {
	if p.csv != nil {
		p.csv.Flush()
		if err := p.csv.Error(); err != nil {
			return err
		}
	}
	return p.w.Flush()
}

func (p *sepPrinter) Columns(names, types []string) error {
	p.types = types
	if p.sep == ',' {
		p.csv = csv.NewWriter(p.w)
		return p.csv.Write(names)
	}
	_, err := p.w.WriteString(strings.Join(names, "\t") + "\n")
	return err
}

var tsvEscape = strings.NewReplacer("\\", "\\\\", "\t", "\\t", "\n", "\\n")

func (p *sepPrinter) Row(row []any) error {
	vals := rowText(p.types, row)
	if p.sep == ',' {
		return p.csv.Write(vals)
	}
	for i, v := range vals {
		if i > 0 {
			p.w.WriteByte('\t')
		}
		tsvEscape.WriteString(p.w, v)
	}
	return p.w.WriteByte('\n')
}

// jsonPrinter writes one JSON object per row (JSON Lines); statements
// without rows print {"message": …}.
type jsonPrinter struct {
	w            *bufio.Writer
	names, types []string
}

func (p *jsonPrinter) print(res *core.Result) error {
	switch {
	case len(res.Columns) == 0:
		if err := json.NewEncoder(p.w).Encode(map[string]string{"message": res.Message}); err != nil {
			return err
		}
	case !res.Streamed:
		if err := printRows(p, res); err != nil {
			return err
		}
	}
	return p.flush()
}

func (p *jsonPrinter) flush() error { return p.w.Flush() }

func (p *jsonPrinter) sink() core.RowSink { return p }

func (p *jsonPrinter) Columns(names, types []string) error {
	p.names, p.types = names, types
	return nil
}

func (p *jsonPrinter) Row(row []any) error {
	obj := make(orderedRow, len(row))
	for i, v := range row {
		t := ""
		if i < len(p.types) {
			t = p.types[i]
		}
		name := ""
		if i < len(p.names) {
			name = p.names[i]
		}
		obj[i] = kv{name, jsonValue(v, t)}
	}
	b, err := obj.MarshalJSON()
	if err != nil {
		return err
	}
	p.w.Write(b)
	return p.w.WriteByte('\n')
}

func jsonValue(v any, chType string) any {
	switch x := v.(type) {
	case nil, bool, string, int8, int16, int32, int64, uint8, uint16, uint32, float32, float64, int, uint:
		return x
	case uint64:
		return x
	}
	return cellText(v, chType)
}

type kv struct {
	k string
	v any
}

// orderedRow marshals as an object that keeps the column order.
type orderedRow []kv

func (o orderedRow) MarshalJSON() ([]byte, error) {
	var b strings.Builder
	b.WriteByte('{')
	for i, f := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(f.k)
		v, err := json.Marshal(f.v)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return []byte(b.String()), nil
}

// width is the number of terminal columns s takes: East Asian wide
// characters (the ClickZetta Lakehouse documentation's comments are Chinese) take two.
func width(s string) int {
	n := 0
	for _, r := range s {
		switch {
		case r >= 0x1100 && r <= 0x115F, r >= 0x2E80 && r <= 0xA4CF, r >= 0xAC00 && r <= 0xD7A3,
			r >= 0xF900 && r <= 0xFAFF, r >= 0xFE30 && r <= 0xFE4F, r >= 0xFF00 && r <= 0xFF60,
			r >= 0xFFE0 && r <= 0xFFE6, r >= 0x20000 && r <= 0x3FFFD:
			n += 2
		default:
			n++
		}
	}
	return n
}
