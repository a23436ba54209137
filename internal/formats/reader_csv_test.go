package formats

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/lakepipe/lakepipe/internal/rowio"
)

func rowsOf(rows ...[]string) [][]*string {
	out := make([][]*string, len(rows))
	for i, r := range rows {
		out[i] = make([]*string, len(r))
		for j, v := range r {
			if v != "<NULL>" {
				out[i][j] = sp(v)
			}
		}
	}
	return out
}

func names(cols []rowio.Column) []string {
	out := make([]string, len(cols))
	for i, c := range cols {
		out[i] = c.Name
	}
	return out
}

func TestCSVReader(t *testing.T) {
	type tc struct {
		name  string
		in    string
		opts  map[string]string
		cols  []string
		rows  [][]string
		lines []int64
		errs  []rowio.RowError
	}
	tests := []tc{
		{name: "plain", in: "1,a,x\n2,b,y\n",
			cols: []string{"f0", "f1", "f2"}, rows: [][]string{{"1", "a", "x"}, {"2", "b", "y"}}, lines: []int64{1, 2}},
		{name: "no final newline", in: "1,a\n2,b",
			cols: []string{"f0", "f1"}, rows: [][]string{{"1", "a"}, {"2", "b"}}, lines: []int64{1, 2}},
		{name: "empty fields", in: ",\n1,\n,2\n",
			cols: []string{"f0", "f1"}, rows: [][]string{{"", ""}, {"1", ""}, {"", "2"}}, lines: []int64{1, 2, 3}},
		{name: "trailing separator at EOF", in: "1,",
			cols: []string{"f0", "f1"}, rows: [][]string{{"1", ""}}, lines: []int64{1}},
		{name: "header", in: "id,name\n1,a\n", opts: map[string]string{"header": "true"},
			cols: []string{"id", "name"}, rows: [][]string{{"1", "a"}}, lines: []int64{2}},
		{name: "quoted header", in: "\"the id\",\"a,b\"\n1,a\n", opts: map[string]string{"HEADER": "TRUE"},
			cols: []string{"the id", "a,b"}, rows: [][]string{{"1", "a"}}, lines: []int64{2}},
		{name: "header only", in: "id,name\n", opts: map[string]string{"header": "true"},
			cols: []string{"id", "name"}},
		{name: "empty file", in: "", cols: []string{}},
		{name: "quoting", in: `1,"a,b","say ""hi""",""` + "\n",
			cols: []string{"f0", "f1", "f2", "f3"}, rows: [][]string{{"1", "a,b", `say "hi"`, ""}}, lines: []int64{1}},
		{name: "quote inside unquoted field is data", in: "1,ab\"c\n",
			cols: []string{"f0", "f1"}, rows: [][]string{{"1", `ab"c`}}, lines: []int64{1}},
		{name: "CRLF", in: "1,a\r\n2,\"b\"\r\n3,c",
			cols: []string{"f0", "f1"}, rows: [][]string{{"1", "a"}, {"2", "b"}, {"3", "c"}}, lines: []int64{1, 2, 3}},
		{name: "lone CR is data", in: "1,a\rb\n",
			cols: []string{"f0", "f1"}, rows: [][]string{{"1", "a\rb"}}, lines: []int64{1}},
		{name: "quoted newlines", in: "1,\"x\ny\nz\"\n2,\"p\r\nq\"\n3,w\n",
			cols: []string{"f0", "f1"}, rows: [][]string{{"1", "x\ny\nz"}, {"2", "p\r\nq"}, {"3", "w"}}, lines: []int64{1, 4, 6}},
		{name: "blank lines skipped", in: "\n1,a\n\n\r\n2,b\n\n",
			cols: []string{"f0", "f1"}, rows: [][]string{{"1", "a"}, {"2", "b"}}, lines: []int64{2, 5}},
		{name: "wrong field counts", in: "1,a,x\n2,b\n3,c,z\n4,d,e,f\n\"5\",\"e\nf\"\n6,g,h\n",
			cols: []string{"f0", "f1", "f2"}, rows: [][]string{{"1", "a", "x"}, {"3", "c", "z"}, {"6", "g", "h"}}, lines: []int64{1, 3, 7},
			errs: []rowio.RowError{{Line: 2, Msg: "expected 3 fields, got 2"}, {Line: 4, Msg: "expected 3 fields, got 4"}, {Line: 5, Msg: "expected 3 fields, got 2"}}},
		{name: "unterminated quote resumes at next line", in: "1,a\n2,\"b\n3,c\n4,d\n",
			cols: []string{"f0", "f1"}, rows: [][]string{{"1", "a"}, {"3", "c"}, {"4", "d"}}, lines: []int64{1, 3, 4},
			errs: []rowio.RowError{{Line: 2, Msg: "unterminated quoted field"}}},
		{name: "data after closing quote", in: "1,\"a\"x\n2,b\n",
			cols: []string{"f0", "f1"}, rows: [][]string{{"2", "b"}}, lines: []int64{2},
			errs: []rowio.RowError{{Line: 1, Msg: "unexpected character after a closing quote"}}},
		{name: "schema", in: "1,a\n2,b,c\n", opts: map[string]string{},
			cols: []string{"ID", "Name"}, rows: [][]string{{"1", "a"}}, lines: []int64{1},
			errs: []rowio.RowError{{Line: 2, Msg: "expected 2 fields, got 3"}}},
		{name: "schema with header", in: "x,y\n1,a\n", opts: map[string]string{"header": "true"},
			cols: []string{"ID", "Name"}, rows: [][]string{{"1", "a"}}, lines: []int64{2}},
		{name: "tab separator", in: "1\ta,b\t\"c\td\"\n", opts: map[string]string{"sep": `\t`},
			cols: []string{"f0", "f1", "f2"}, rows: [][]string{{"1", "a,b", "c\td"}}, lines: []int64{1}},
		{name: "semicolon delimiter", in: "1;2\n", opts: map[string]string{"delimiter": ";"},
			cols: []string{"f0", "f1"}, rows: [][]string{{"1", "2"}}, lines: []int64{1}},
		{name: "single quote", in: "1,'a,''b'''\n", opts: map[string]string{"quote": "'"},
			cols: []string{"f0", "f1"}, rows: [][]string{{"1", "a,'b'"}}, lines: []int64{1}},
		{name: "no quoting", in: "\"1,\"a\n", opts: map[string]string{"quote": ""},
			cols: []string{"f0", "f1"}, rows: [][]string{{`"1`, `"a`}}, lines: []int64{1}},
		{name: "backslash escape", in: `1,"a\"b\\c"` + "\n", opts: map[string]string{"escape": `\\`},
			cols: []string{"f0", "f1"}, rows: [][]string{{"1", `a"b\c`}}, lines: []int64{1}},
		{name: "null value", in: "1,NULL,\"NULL\",\n", opts: map[string]string{"nullValue": "NULL"},
			cols: []string{"f0", "f1", "f2", "f3"}, rows: [][]string{{"1", "<NULL>", "NULL", ""}}, lines: []int64{1}},
		{name: "empty null value", in: "1,,\"\"\n", opts: map[string]string{"null_value": ""},
			cols: []string{"f0", "f1", "f2"}, rows: [][]string{{"1", "<NULL>", ""}}, lines: []int64{1}},
		{name: "skip rows", in: "junk\nmore junk\nid,v\n1,2\n", opts: map[string]string{"skip_rows": "2", "header": "true"},
			cols: []string{"id", "v"}, rows: [][]string{{"1", "2"}}, lines: []int64{4}},
		{name: "BOM", in: "\xef\xbb\xbfid,v\n1,2\n", opts: map[string]string{"header": "true"},
			cols: []string{"id", "v"}, rows: [][]string{{"1", "2"}}, lines: []int64{2}},
		{name: "unicode", in: "1,\"héllo, wörld 日本\"\n",
			cols: []string{"f0", "f1"}, rows: [][]string{{"1", "héllo, wörld 日本"}}, lines: []int64{1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts, err := rowio.ParseOptions(tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			if strings.HasPrefix(tt.name, "schema") {
				opts.Schema = []rowio.Column{{Name: "ID", Type: "Int64"}, {Name: "Name", Type: "String"}}
			}
			// Whole reads, and reads in tiny pieces with tiny batches, must
			// agree.
			for _, mode := range []string{"whole", "choppy"} {
				var r rowio.Reader
				if mode == "whole" {
					r = openBytes(t, []byte(tt.in), "t.csv", "csv", opts)
				} else {
					o := opts
					o.BatchRows = 1
					r, err = Open(rowio.Source{R: &choppyReader{data: []byte(tt.in), rng: rand.New(rand.NewPCG(1, 2)), max: 3}, Name: "t.csv"}, "CSV", o)
					if err != nil {
						t.Fatal(err)
					}
				}
				got := collect(t, r)
				if !reflect.DeepEqual(names(got.cols), tt.cols) {
					t.Errorf("%s: columns %q, want %q", mode, names(got.cols), tt.cols)
				}
				if want := rowsOf(tt.rows...); !reflect.DeepEqual(got.rows, want) && len(want)+len(got.rows) > 0 {
					t.Errorf("%s: rows %s, want %s", mode, show(got.rows), show(want))
				}
				if !reflect.DeepEqual(got.lines, tt.lines) && len(got.lines)+len(tt.lines) > 0 {
					t.Errorf("%s: lines %v, want %v", mode, got.lines, tt.lines)
				}
				if !reflect.DeepEqual(got.errs, tt.errs) && len(got.errs)+len(tt.errs) > 0 {
					t.Errorf("%s: errors %v, want %v", mode, got.errs, tt.errs)
				}
			}
		})
	}
}

func show(rows [][]*string) string {
	var b strings.Builder
	for _, r := range rows {
		b.WriteString("[")
		for i, v := range r {
			if i > 0 {
				b.WriteString(" ")
			}
			if v == nil {
				b.WriteString("NULL")
			} else {
				fmt.Fprintf(&b, "%q", *v)
			}
		}
		b.WriteString("]")
	}
	return b.String()
}

// TestCSVAgainstEncodingCSV compares with the standard library on a large
// random file read through tiny reads, so that records straddle every
// kind of buffer and batch boundary.
func TestCSVAgainstEncodingCSV(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	pieces := []string{"", "a", "hello world", "x,y", `q"q`, "multi\nline", "123", "8999.00", strings.Repeat("long", 300)}
	for range 10000 {
		rec := make([]string, 4)
		for j := range rec {
			rec[j] = pieces[rng.IntN(len(pieces))]
		}
		if rec[0] == "" {
			rec[0] = "k" // a first empty field alone would be a blank line
		}
		w.Write(rec)
	}
	w.Flush()
	data := buf.Bytes()

	cr := csv.NewReader(bytes.NewReader(data))
	var want [][]string
	var wantLines []int64
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		line, _ := cr.FieldPos(0)
		want = append(want, rec)
		wantLines = append(wantLines, int64(line))
	}
	for _, max := range []int{7, 1 << 16} {
		r, err := Open(rowio.Source{R: &choppyReader{data: data, rng: rng, max: max}, Name: "big.csv"}, "csv", rowio.Options{BatchRows: 1000})
		if err != nil {
			t.Fatal(err)
		}
		got := collect(t, r)
		if len(got.errs) > 0 {
			t.Fatalf("errors: %v", got.errs[:min(5, len(got.errs))])
		}
		if len(got.rows) != len(want) {
			t.Fatalf("got %d rows, want %d", len(got.rows), len(want))
		}
		for i := range want {
			for j := range want[i] {
				if *got.rows[i][j] != want[i][j] {
					t.Fatalf("row %d field %d: %q, want %q", i, j, *got.rows[i][j], want[i][j])
				}
			}
			if got.lines[i] != wantLines[i] {
				t.Fatalf("row %d: line %d, want %d", i, got.lines[i], wantLines[i])
			}
		}
	}
}

func TestCSVLongRecordAndOverlong(t *testing.T) {
	long := strings.Repeat("x", 3*rowio.ChunkSize)
	in := "1," + long + "\n2,b\n"
	got := readString(t, in, "CSV", rowio.Options{})
	if len(got.rows) != 2 || *got.rows[0][1] != long || *got.rows[1][1] != "b" {
		t.Fatalf("long field not read back: %d rows", len(got.rows))
	}

	// An unterminated quote in a huge file costs one line, and memory
	// stays bounded by Limits.MaxLineBytes.
	var b strings.Builder
	b.WriteString("1,\"oops\n")
	line := "2,abcdefghijklmnopqrstuvwxyz\n"
	for b.Len() < rowio.DefaultMaxLineBytes+2*rowio.ChunkSize {
		b.WriteString(line)
	}
	r, err := Open(rowio.Source{R: &choppyReader{data: []byte(b.String()), rng: rand.New(rand.NewPCG(3, 4)), max: 16 << 10}, Name: "x.csv"}, "CSV", rowio.Options{})
	if err != nil {
		t.Fatal(err)
	}
	got = collect(t, r)
	if len(got.errs) != 1 || got.errs[0].Line != 1 {
		t.Fatalf("errors %v", got.errs)
	}
	if want := (b.Len() - len("1,\"oops\n")) / len(line); len(got.rows) != want {
		t.Fatalf("got %d rows, want %d", len(got.rows), want)
	}
}

func TestCSVReadError(t *testing.T) {
	boom := errors.New("boom")
	r, err := Open(rowio.Source{R: io.MultiReader(strings.NewReader("1,2\n3,"), &failReader{boom}), Name: "x.csv"}, "CSV", rowio.Options{})
	if err != nil {
		if !errors.Is(err, boom) {
			t.Fatalf("got %v, want boom", err)
		}
		return
	}
	for {
		_, err := r.Next()
		if err == nil {
			continue
		}
		if !errors.Is(err, boom) {
			t.Fatalf("got %v, want boom", err)
		}
		break
	}
}

type failReader struct{ err error }

func (f *failReader) Read([]byte) (int, error) { return 0, f.err }

func TestOpenErrors(t *testing.T) {
	if _, err := Open(rowio.Source{R: strings.NewReader(""), Name: "x"}, "avro", rowio.Options{}); err == nil || !strings.Contains(err.Error(), "CSV, JSON, PARQUET") {
		t.Fatalf("unknown format: %v", err)
	}
	if _, err := Open(rowio.Source{R: strings.NewReader("\"a\n"), Name: "x"}, "csv", rowio.Options{Header: true}); err == nil {
		t.Fatal("malformed header accepted")
	}
}

func TestParseOptions(t *testing.T) {
	o, err := rowio.ParseOptions(map[string]string{"Header": "true", "field_delimiter": "|", "NULLVALUE": `\N`, "compression": "ZSTD", "skip_rows": "3"})
	if err != nil {
		t.Fatal(err)
	}
	if !o.Header || o.Delimiter != '|' || !o.HasNullValue || o.NullValue != `\N` || o.Compression != "zstd" || o.SkipRows != 3 || o.BatchRows != rowio.DefaultBatchRows || o.Quote != '"' {
		t.Fatalf("%+v", o)
	}
	for _, bad := range []map[string]string{
		{"heder": "true"},
		{"header": "maybe"},
		{"sep": "ab"},
		{"sep": ",", "delimiter": ";"},
		{"compression": "lz4"},
		{"skip_rows": "-1"},
		{"sep": `"`},
	} {
		if _, err := rowio.ParseOptions(bad); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
	_, err = rowio.ParseOptions(map[string]string{"heder": "true"})
	if !strings.Contains(err.Error(), `"heder"`) || !strings.Contains(err.Error(), "header") {
		t.Errorf("unknown key error %q does not name the key and the known ones", err)
	}
}
