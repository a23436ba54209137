package formats

import (
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/lakepipe/lakepipe/internal/rowio"
)

func TestJSONReader(t *testing.T) {
	type tc struct {
		name   string
		in     string
		schema []string
		cols   []string
		rows   [][]string
		lines  []int64
		errs   []rowio.RowError
	}
	tests := []tc{
		{name: "key order of first object", in: `{"b":1,"a":"x","c":true}` + "\n" + `{"a":"y","c":false,"b":2,"d":9}` + "\n",
			cols: []string{"b", "a", "c"}, rows: [][]string{{"1", "x", "true"}, {"2", "y", "false"}}, lines: []int64{1, 2}},
		{name: "missing and null", in: `{"a":1,"b":2}` + "\n" + `{"a":null}` + "\n" + `{}` + "\n",
			cols: []string{"a", "b"}, rows: [][]string{{"1", "2"}, {"<NULL>", "<NULL>"}, {"<NULL>", "<NULL>"}}, lines: []int64{1, 2, 3}},
		{name: "nested values become compact JSON", in: `{"o": {"x": [1, 2, {"y" : "a b"}], "z": null}, "arr": [ ], "e": {}}` + "\n",
			cols: []string{"o", "arr", "e"}, rows: [][]string{{`{"x":[1,2,{"y":"a b"}],"z":null}`, `[]`, `{}`}}, lines: []int64{1}},
		{name: "string escapes", in: `{"s":"a\"b\\c\/d\n\t\u00e9\ud83d\ude00\u0041", "k\u0065y": "v"}` + "\n",
			cols: []string{"s", "key"}, rows: [][]string{{"a\"b\\c/d\n\té😀A", "v"}}, lines: []int64{1}},
		{name: "numbers keep their text", in: `{"n":-0.5e+10,"m":0,"big":123456789012345678901234567890}` + "\n",
			cols: []string{"n", "m", "big"}, rows: [][]string{{"-0.5e+10", "0", "123456789012345678901234567890"}}, lines: []int64{1}},
		{name: "malformed lines", in: `{"a":1}` + "\n" + `{"a":2` + "\n" + `not json` + "\n" + `[1,2]` + "\n" + `{"a":01}` + "\n" + `{"a":3} x` + "\n\n" + `  {"a":4}  ` + "\r\n",
			cols: []string{"a"}, rows: [][]string{{"1"}, {"4"}}, lines: []int64{1, 8},
			errs: []rowio.RowError{
				{Line: 2, Msg: "malformed JSON at byte 7: unexpected end of line, expected ',' or '}'"},
				{Line: 3, Msg: "malformed JSON at byte 1: expected '{', found 'n'"},
				{Line: 4, Msg: "expected a JSON object"},
				{Line: 5, Msg: "malformed JSON at byte 7: expected ',' or '}', found '1'"},
				{Line: 6, Msg: "malformed JSON at byte 9: unexpected data after the object"},
			}},
		{name: "first line malformed", in: "{oops\n" + `{"x":1}` + "\n",
			cols: []string{"x"}, rows: [][]string{{"1"}}, lines: []int64{2},
			errs: []rowio.RowError{{Line: 1, Msg: "malformed JSON at byte 2: expected a string key, found 'o'"}}},
		{name: "duplicate key: last wins", in: `{"a":1,"a":2}` + "\n",
			cols: []string{"a"}, rows: [][]string{{"2"}}, lines: []int64{1}},
		{name: "schema exact then case-insensitive", in: `{"ID":1,"name":"x","Name":"y","other":3}` + "\n" + `{"id":2}` + "\n",
			schema: []string{"id", "Name"}, cols: []string{"id", "Name"}, rows: [][]string{{"1", "y"}, {"2", "<NULL>"}}, lines: []int64{1, 2}},
		{name: "top-level array", in: "[\n  {\"a\": 1,\n   \"b\": \"x\"},\n  {\"a\": 2, \"b\": [1, 2]},\n  {\"a\": oops},\n  {\"b\": \"z\"}\n]\n",
			cols: []string{"a", "b"}, rows: [][]string{{"1", "x"}, {"2", "[1,2]"}, {"<NULL>", "z"}}, lines: []int64{2, 4, 6},
			errs: []rowio.RowError{{Line: 5, Msg: "malformed JSON at byte 7: expected a value, found 'o'"}}},
		{name: "empty array", in: "[]", cols: []string{}},
		{name: "empty file", in: "", cols: []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := rowio.Options{}
			for _, s := range tt.schema {
				opts.Schema = append(opts.Schema, rowio.Column{Name: s})
			}
			for _, mode := range []string{"whole", "choppy"} {
				var r rowio.Reader
				if mode == "whole" {
					r = openBytes(t, []byte(tt.in), "t.json", "JSON", opts)
				} else {
					o := opts
					o.BatchRows = 1
					var err error
					r, err = Open(rowio.Source{R: &choppyReader{data: []byte(tt.in), rng: rand.New(rand.NewPCG(1, 2)), max: 3}, Name: "t.json"}, "json", o)
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
					t.Errorf("%s: errors %+v, want %+v", mode, got.errs, tt.errs)
				}
			}
		})
	}
}

func TestJSONManyLines(t *testing.T) {
	var b strings.Builder
	for i := range 50000 {
		b.WriteString(`{"i":`)
		b.WriteString(strings.Repeat("1", 1+i%7))
		b.WriteString(`,"s":"` + strings.Repeat("é\\n", i%50) + `"}` + "\n")
	}
	r, err := Open(rowio.Source{R: &choppyReader{data: []byte(b.String()), rng: rand.New(rand.NewPCG(5, 6)), max: 1000}, Name: "m.ndjson"}, "JSON", rowio.Options{BatchRows: 777})
	if err != nil {
		t.Fatal(err)
	}
	got := collect(t, r)
	if len(got.rows) != 50000 || len(got.errs) != 0 {
		t.Fatalf("%d rows, %d errors", len(got.rows), len(got.errs))
	}
	for i, row := range got.rows {
		if *row[0] != strings.Repeat("1", 1+i%7) || *row[1] != strings.Repeat("é\n", i%50) || got.lines[i] != int64(i+1) {
			t.Fatalf("row %d: %s line %d", i, show(got.rows[i:i+1]), got.lines[i])
		}
	}
}
