//go:build integration

package integration

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lakepipe/lakepipe/internal/sqlast"

	"github.com/shopspring/decimal"

	"github.com/lakepipe/lakepipe/internal/recordeval"
	"github.com/lakepipe/lakepipe/internal/sqlparse"
	"github.com/lakepipe/lakepipe/schemas"
)

// TestRecordevalMatchesClickHouse evaluates the same expressions over the
// same values the two ways lakepipe evaluates SQL: record by record in Go
// (package recordeval: Kafka pipes) and translated for ClickHouse (package
// chsql: COPY, SELECT, dynamic tables), through the engine as a user's
// SELECT runs. Each expression of diffCases runs over the inputs of its set
// (plus NULL), on ClickHouse in one query. Every pair must agree — an error
// on both sides agrees — or be explained by a note: deliberateDiffs
// (differences lakepipe means to have) or knownBugs (one side is wrong;
// logged, not failed, until fixed). A note that no pair needs any more
// fails the test, so the lists stay true. LAKEPIPE_DIFF_DUMP=1 logs every
// pair.
func TestRecordevalMatchesClickHouse(t *testing.T) {
	s := newStack(t)
	version, err := s.Store.Strings(s.Ctx, "SELECT version()")
	if err != nil || len(version) != 1 {
		t.Fatalf("ClickHouse version: %v %v", version, err)
	}
	old := strings.HasPrefix(version[0], "18.")
	for _, set := range diffSets {
		rows := []string{"(0, NULL)"}
		for i, in := range set.inputs {
			lit := sqlast.FormatExpr(&sqlast.Literal{Kind: sqlast.LitString, Value: in})
			rows = append(rows, fmt.Sprintf("(%d, %s)", i+1, lit))
		}
		s.run(fmt.Sprintf("CREATE TABLE %s (id BIGINT, value STRING); INSERT INTO %s VALUES %s",
			set.name, set.name, strings.Join(rows, ", ")))
	}

	dump := os.Getenv("LAKEPIPE_DIFF_DUMP") != ""
	notes := append(append([]diffNote(nil), deliberateDiffs...), knownBugs...)
	hits := make([]int, len(notes))
	examples := make([]string, len(notes))
	var pairs, same, bothFail int
	for _, c := range diffCases {
		t.Run(c.set+"/"+c.expr, func(t *testing.T) {
			set := diffSet(t, c.set)
			inputs := append([]*string{nil}, ptrs(set.inputs)...)
			ch := clickHouseSide(s, c.expr, set.name, len(inputs))
			prog, cerr := recordevalProgram(c.expr)
			for i, in := range inputs {
				pairs++
				re := diffResult{err: fmt.Sprint("compile: ", cerr)}
				if cerr == nil {
					re = recordevalSide(prog, in)
				}
				if dump {
					t.Logf("%s | recordeval %s | ClickHouse %s", showInput(in), re, ch[i])
				}
				if sameResult(re, ch[i]) {
					same++
					if re.err != "" {
						bothFail++
					}
					continue
				}
				k := explain(notes, c.expr, in, re, ch[i])
				if k < 0 {
					t.Errorf("input %s: recordeval %s, ClickHouse %s", showInput(in), re, ch[i])
					continue
				}
				if hits[k]++; hits[k] == 1 {
					examples[k] = fmt.Sprintf("%s on %s: recordeval %s, ClickHouse %s", c.expr, showInput(in), re, ch[i])
				}
			}
		})
	}

	var deliberate, bugs int
	for k, n := range notes {
		isBug := k >= len(deliberateDiffs)
		switch {
		case hits[k] == 0 && (old || !n.only1816):
			t.Errorf("no pair differs as this note says any more; remove it: %s", n)
		case hits[k] > 0 && isBug:
			bugs += hits[k]
			t.Logf("KNOWN BUG (%d pairs), e.g. %s\n    %s", hits[k], examples[k], n.why)
		case hits[k] > 0:
			deliberate += hits[k]
			t.Logf("deliberate (%d pairs), e.g. %s", hits[k], examples[k])
		}
	}
	t.Logf("ClickHouse %s: %d expression × input pairs: %d agree (%d of them failing on both sides), %d differ deliberately, %d by known bugs",
		version[0], pairs, same, bothFail, deliberate, bugs)
}

// diffCase is one expression over the column value (STRING) of the
// inputs of set.
type diffCase struct {
	expr string
	set  string
}

// diffInputs is a named set of inputs; each set also holds NULL (id 0).
type diffInputs struct {
	name   string
	inputs []string
}

// diffSets are the inputs, as the value of a raw Kafka record and as the
// STRING column value of a table.
var diffSets = []diffInputs{
	{"json_in", []string{
		`{"a":1,"b":"x","c":{"d":true},"e":[10,20,30],"n":null}`,
		`{"a":"2024-01-15T10:30:00Z","b":"\u00e9\u4e2d \ud83d\ude00","c":{"d":"nested"},"e":[],"n":1.5}`,
		`{"a":-9223372036854775808,"b":"","c":null,"e":["x",{"y":1}]}`,
		`{"a":1e3,"b":"quote\"and\\back","c":{},"e":[null]}`,
		`{ "a" : true , "b" : " padded " , "e" : [ 1 , 2 ] }`,
		`{"a":12345678901234567890,"b":false,"a2":0.1}`,
		`{"a":"1705314600","b":null,"c":{"d":[1,{"e":2}]}}`,
		`[1,2,3]`,
		`"just a string"`,
		`42`,
		`null`,
		`not json`,
		``,
	}},
	// texts: words, blanks, non-ASCII, separators, LIKE's special characters.
	{"text_in", []string{
		"hello", " Hello World ", "", "ÄÖü straße", "a,b,,c", "123", "-45.67",
		"true", "abc%_x", "\tpadded\t", "日本語テキスト", "hello hello",
	}},
	// ints: integers in BIGINT's range, with the INT and BIGINT edges.
	{"int_in", []string{
		"0", "1", "-1", "7", "42", "-100",
		"2147483647", "2147483648", "-2147483648", "-2147483649",
		"9223372036854775807", "-9223372036854775808",
	}},
	// numtext: what a cast to a number meets in real data.
	{"numtext_in", []string{
		"42", "-7", "+5", "3.14159", "-2.5", "1e3", " 7 ", "0x1A", "abc", "",
		"9223372036854775808", "-9223372036854775809", "99999999.995", "NaN",
	}},
	{"double_in", []string{
		"0", "1.5", "-2.5", "2.5", "0.5", "0.1", "1.005", "3.14159", "-0.5",
		"1e-7", "123456789.125", "1e300", "-1e300", "9007199254740993",
	}},
	// decimals: at most two fraction digits, within DECIMAL(10,2).
	{"decimal_in", []string{
		"0", "1.5", "-2.25", "2.5", "-2.5", "0.1", "123.45", "-0.01", "99999999.99", "0.05", "7",
	}},
	// times: the spelling ClickHouse's CAST reads too.
	{"time_in", []string{
		"2024-01-15 10:30:00", "2024-02-29 23:59:59", "1970-01-01 00:00:00",
		"2024-01-15 00:00:00", "2024-12-31 23:59:59", "2024-01-31 08:00:00",
		"2000-03-01 12:00:00", "2024-01-15 10:30:00.123",
	}},
	// timetext: other spellings a cast to TIMESTAMP or DATE meets.
	{"timetext_in", []string{
		"2024-01-15", "2024-01-15T10:30:00Z", "2024-01-15T10:30:00.123Z",
		"2024-01-15 10:30:00+02:00", "2024/01/15 10:30:00", "20240115",
		"1705314600", "1705314600123", "Mon, 15 Jan 2024 10:30:00 +0000",
		"15/Jan/2024:10:30:00 +0000", "2024-13-01", "2024-02-30 00:00:00",
		"1969-12-31 23:59:59", "2106-02-07 06:28:16", "yesterday", "",
	}},
	{"bool_in", []string{
		"true", "false", "TRUE", "t", "f", "yes", "no", "1", "0", "on", "off", "maybe", "", "2",
	}},
}

// diffCases are the expressions, each over the inputs suited to it: casts
// meet messy text, arithmetic clean numbers, so that one cause shows in few
// cases.
var diffCases = []diffCase{
	// casts
	{"value::STRING", "text_in"},
	{"CAST(value AS STRING)", "int_in"},
	{"value::BIGINT", "int_in"},
	{"value::BIGINT", "numtext_in"},
	{"value::INT", "int_in"},
	{"CAST(value AS INT)", "numtext_in"},
	{"value::DOUBLE", "double_in"},
	{"value::DOUBLE", "numtext_in"},
	{"value::BOOLEAN", "bool_in"},
	{"value::DECIMAL(10,2)", "decimal_in"},
	{"value::DECIMAL(10,2)", "numtext_in"},
	{"CAST(value AS DECIMAL(10,2))", "double_in"},
	{"TRY_CAST(value AS BIGINT)", "numtext_in"},
	{"value::TIMESTAMP", "time_in"},
	{"value::TIMESTAMP", "timetext_in"},
	{"value::DATE", "time_in"},
	{"CAST(value AS DATE)", "timetext_in"},
	{"value::BIGINT::STRING", "int_in"},
	{"value::BIGINT::DOUBLE", "int_in"},
	{"value::BIGINT::BOOLEAN", "int_in"},
	{"value::BIGINT::TIMESTAMP", "int_in"},
	{"value::DOUBLE::STRING", "double_in"},
	{"value::DOUBLE::BIGINT", "double_in"},
	{"value::DECIMAL(10,2)::STRING", "decimal_in"},
	{"value::BOOLEAN::STRING", "bool_in"},
	{"value::TIMESTAMP::STRING", "time_in"},
	{"value::TIMESTAMP::BIGINT", "time_in"},
	{"value::DATE::STRING", "time_in"},
	// JSON
	{"PARSE_JSON(value)::STRING", "json_in"},
	{"PARSE_JSON(value)['a']", "json_in"},
	{"PARSE_JSON(value)['a']::STRING", "json_in"},
	{"PARSE_JSON(value)['a']::BIGINT", "json_in"},
	{"PARSE_JSON(value)['a']::DOUBLE", "json_in"},
	{"CAST(PARSE_JSON(value)['a'] AS TIMESTAMP)", "json_in"},
	{"PARSE_JSON(value)['b']::STRING", "json_in"},
	{"PARSE_JSON(value)['c']['d']", "json_in"},
	{"PARSE_JSON(value)['e'][0]", "json_in"},
	{"PARSE_JSON(value)['e'][1]['y']", "json_in"},
	{"PARSE_JSON(value)['missing']", "json_in"},
	{"PARSE_JSON(value)['n']", "json_in"},
	{"PARSE_JSON(value)['n'] IS NULL", "json_in"},
	{"PARSE_JSON(value)[0]", "json_in"},
	{"get_json_object(value, '$.c.d')", "json_in"},
	{"TRY_PARSE_JSON(value)::STRING", "json_in"},
	// dates
	{"year(value)", "time_in"},
	{"year(value::TIMESTAMP)", "time_in"},
	{"month(value::TIMESTAMP)", "time_in"},
	{"day(value::DATE)", "time_in"},
	{"hour(value::TIMESTAMP)", "time_in"},
	{"minute(value::TIMESTAMP)", "time_in"},
	{"second(value::TIMESTAMP)", "time_in"},
	{"to_date(value)", "time_in"},
	{"to_date(value)", "timetext_in"},
	{"to_timestamp(value)", "time_in"},
	{"to_date(value, 'yyyy-MM-dd')", "timetext_in"},
	{"to_timestamp(value, 'yyyy-MM-dd HH:mm:ss')", "timetext_in"},
	{"to_timestamp(value, 'yyyy/MM/dd HH:mm:ss')", "timetext_in"},
	{"try_to_date(value, 'yyyy-MM-dd')", "timetext_in"},
	{"value::TIMESTAMP + INTERVAL '2 hours'", "time_in"},
	{"current_timestamp IS NOT NULL", "text_in"},
	{"value::TIMESTAMP + INTERVAL 1 DAY", "time_in"},
	{"value::TIMESTAMP - INTERVAL 2 HOUR", "time_in"},
	{"value::TIMESTAMP + INTERVAL 1 MONTH", "time_in"},
	{"value::DATE + INTERVAL 1 YEAR", "time_in"},
	{"value::TIMESTAMP > '2024-01-15 10:30:00'", "time_in"},
	{"value::DATE = '2024-01-15'", "time_in"},
	{"date_format(value::TIMESTAMP, 'yyyy-MM-dd')", "time_in"},
	{"unix_timestamp(value)", "time_in"},
	{"from_unixtime(value::BIGINT)", "int_in"},
	// text
	{"concat(value, '-x')", "text_in"},
	{"concat(value, NULL)", "text_in"},
	{"value || '!'", "text_in"},
	{"lower(value)", "text_in"},
	{"upper(value)", "text_in"},
	{"substr(value, 2, 3)", "text_in"},
	{"substr(value, 2)", "text_in"},
	{"substr(value, -3)", "text_in"},
	{"substr(value, -3, 2)", "text_in"},
	{"substr(value, 0, 2)", "text_in"},
	{"substring(value, 1, 100)", "text_in"},
	{"length(value)", "text_in"},
	{"char_length(value)", "text_in"},
	{"trim(value)", "text_in"},
	{"ltrim(value)", "text_in"},
	{"rtrim(value)", "text_in"},
	{"replace(value, 'l', 'L')", "text_in"},
	{"split_part(value, ',', 2)", "text_in"},
	{"concat_ws('-', value, NULL, 'z')", "text_in"},
	{"value LIKE 'h%'", "text_in"},
	{"value LIKE '%\\_%'", "text_in"},
	{"value NOT LIKE '%o%'", "text_in"},
	{"value ILIKE 'H%'", "text_in"},
	{"value RLIKE '^[a-z]+$'", "text_in"},
	{"value NOT RLIKE '^[a-z]+$'", "text_in"},
	{"regexp_extract(value, '([a-z]+)', 1)", "text_in"},
	{"regexp_replace(value, '[aeiou]', '*')", "text_in"},
	// NULL handling
	{"COALESCE(value, 'dflt')", "text_in"},
	{"COALESCE(NULL, value, 'x')", "text_in"},
	{"NULLIF(value, '')", "text_in"},
	{"nvl(value, 'n')", "text_in"},
	{"ifnull(value, 'n')", "text_in"},
	{"IF(value = 'hello', 'yes', 'no')", "text_in"},
	{"IF(value IS NULL, 'null', value)", "text_in"},
	{"CASE WHEN value IS NULL THEN 'null' WHEN value = '' THEN 'empty' ELSE value END", "text_in"},
	{"CASE value WHEN 'hello' THEN 1 WHEN '123' THEN 2 ELSE 0 END", "text_in"},
	{"CASE WHEN value = 'hello' THEN 'h' END", "text_in"},
	{"value IS NULL", "text_in"},
	{"value IS NOT NULL", "text_in"},
	{"value = NULL", "text_in"},
	{"value IN ('hello', '123')", "text_in"},
	{"value IN ('hello', NULL)", "text_in"},
	{"value NOT IN ('hello', NULL)", "text_in"},
	{"(value = 'hello') AND NULL", "text_in"},
	{"(value = 'hello') OR NULL", "text_in"},
	{"NOT (value = 'hello')", "text_in"},
	// arithmetic
	{"value::BIGINT + 1", "int_in"},
	{"value::BIGINT - 1", "int_in"},
	{"value::BIGINT * 2", "int_in"},
	{"value::BIGINT * value::BIGINT", "int_in"},
	{"value::BIGINT / 2", "int_in"},
	{"value::BIGINT / 0", "int_in"},
	{"value::BIGINT % 7", "int_in"},
	{"value::BIGINT % -3", "int_in"},
	{"value::BIGINT % 0", "int_in"},
	{"-value::BIGINT", "int_in"},
	{"abs(value::BIGINT)", "int_in"},
	{"value::INT + 1", "int_in"},
	{"value::BIGINT + 0.5", "int_in"},
	{"value::DOUBLE * 1.5", "double_in"},
	{"value::DOUBLE + 1", "double_in"},
	{"value::DOUBLE / 0", "double_in"},
	{"abs(value::DOUBLE)", "double_in"},
	{"round(value::DOUBLE)", "double_in"},
	{"round(value::DOUBLE, 1)", "double_in"},
	{"round(value::DOUBLE, 2)", "double_in"},
	{"floor(value::DOUBLE)", "double_in"},
	{"ceil(value::DOUBLE)", "double_in"},
	{"value::DECIMAL(10,2) + 1", "decimal_in"},
	{"value::DECIMAL(10,2) * 3", "decimal_in"},
	{"value::DECIMAL(10,2) / 4", "decimal_in"},
	{"value::DECIMAL(10,2) - 0.5", "decimal_in"},
	{"(value::DECIMAL(10,2) * 3)::STRING", "decimal_in"},
	{"round(value::DECIMAL(10,2), 1)", "decimal_in"},
	// comparisons and logic (BOOLEAN from text only in the casts above:
	// on the ClickHouse path it is UInt8, see knownBugs)
	{"value::BIGINT > 10", "int_in"},
	{"value::BIGINT = 42", "int_in"},
	{"value::BIGINT <> 42", "int_in"},
	{"value::BIGINT BETWEEN 0 AND 100", "int_in"},
	{"value::BIGINT NOT BETWEEN 0 AND 100", "int_in"},
	{"value::BIGINT IN (1, 42)", "int_in"},
	{"value = 42", "int_in"},
	{"value::DOUBLE = 2.5", "double_in"},
	{"value::DOUBLE < 1", "double_in"},
	{"value < 'b'", "text_in"},
	{"value = '123'", "text_in"},
	{"value > ''", "text_in"},
	{"(value::BIGINT > 0) = TRUE", "int_in"},
	{"(value::BIGINT > 0)::STRING", "int_in"},
	{"value::BIGINT > 10 AND value::BIGINT < 100", "int_in"},
	{"value::BIGINT < 0 OR value::BIGINT > 100", "int_in"},
	{"NOT (value::BIGINT > 10)", "int_in"},
	{"(value::BIGINT > 10) = (value::BIGINT < 100)", "int_in"},
}

func diffSet(t *testing.T, name string) diffInputs {
	for _, s := range diffSets {
		if s.name == name {
			return s
		}
	}
	t.Fatalf("no input set %q", name)
	return diffInputs{}
}

func ptrs(ss []string) []*string {
	out := make([]*string, len(ss))
	for i := range ss {
		out[i] = &ss[i]
	}
	return out
}

// showInput prints an input quoted, or NULL.
func showInput(in *string) string {
	if in == nil {
		return "NULL"
	}
	return strconv.Quote(*in)
}

// diffResult is one side's result: text, NULL, or an error.
type diffResult struct {
	text   string
	null   bool
	err    string
	chType string // ClickHouse's type of the result, without Nullable
}

// String prints the result quoted, as NULL or as error(message).
func (r diffResult) String() string {
	switch {
	case r.err != "":
		return "error(" + r.err + ")"
	case r.null:
		return "NULL"
	}
	return strconv.Quote(r.text)
}

// recordevalProgram compiles expr as a Kafka pipe's SELECT over raw records.
func recordevalProgram(expr string) (*recordeval.Program, error) {
	q, err := sqlparse.ParseQuery("SELECT " + expr + " AS c FROM READ_KAFKA('b:9092', 't', '', 'g', '', '', '', '', 'raw', 'raw', 0, map())")
	if err != nil {
		return nil, err
	}
	return recordeval.Compile(q.Body.(*sqlast.Select), "raw", "raw")
}

// recordevalSide evaluates a record whose value is in (nil: a NULL value).
func recordevalSide(p *recordeval.Program, in *string) diffResult {
	r := &recordeval.Record{}
	if in != nil {
		r.Value = []byte(*in)
	}
	b := p.NewBatch(1, nil)
	if _, err := p.Append(b, r); err != nil {
		return diffResult{err: err.Error()}
	}
	if b.Cols[0].Null[0] {
		return diffResult{null: true}
	}
	return diffResult{text: string(b.Cols[0].Text[0])}
}

// clickHouseSide runs expr over all n inputs of table in one query through
// the engine; when that fails, over each input alone, so that an error is
// charged to the inputs that cause it.
func clickHouseSide(s *Stack, expr, table string, n int) []diffResult {
	out := make([]diffResult, n)
	res, err := s.exec(fmt.Sprintf("SELECT id, %s AS c FROM %s ORDER BY id", expr, table))
	if err == nil && len(res) == 1 && len(res[0].Rows) == n {
		for i, row := range res[0].Rows {
			out[i] = chResult(row[1], res[0].Types[1])
		}
		return out
	}
	for i := range out {
		res, err := s.exec(fmt.Sprintf("SELECT %s AS c FROM %s WHERE id = %d", expr, table, i))
		switch {
		case err != nil:
			out[i] = diffResult{err: err.Error()}
		case len(res) != 1 || len(res[0].Rows) != 1:
			out[i] = diffResult{err: fmt.Sprintf("want one row for id %d, got %v", i, res)}
		default:
			out[i] = chResult(res[0].Rows[0][0], res[0].Types[0])
		}
	}
	return out
}

// chResult renders a ClickHouse value as recordeval renders a value of that
// type (doc.go, Output): floats in strconv's shortest 'g' form, decimals
// with their scale, times in UTC with the fraction when there is one.
func chResult(v any, chType string) diffResult {
	base, _ := schemas.BaseOf(chType)
	r := diffResult{chType: base}
	switch x := v.(type) {
	case nil:
		r.null = true
	case string:
		r.text = x
	case []byte:
		r.text = string(x)
	case float64:
		r.text = strconv.FormatFloat(x, 'g', -1, 64)
	case float32:
		r.text = strconv.FormatFloat(float64(x), 'g', -1, 32)
	case bool:
		r.text = strconv.FormatBool(x)
	case decimal.Decimal:
		var p, sc int32
		if _, err := fmt.Sscanf(strings.ReplaceAll(base, " ", ""), "Decimal(%d,%d)", &p, &sc); err == nil {
			r.text = x.StringFixed(sc)
		} else {
			r.text = x.String()
		}
	case time.Time:
		if base == "Date" {
			r.text = x.UTC().Format("2006-01-02")
		} else {
			r.text = x.UTC().Format("2006-01-02 15:04:05.999999999")
		}
	default:
		r.text = fmt.Sprint(v)
	}
	return r
}

// sameResult compares the two sides: an error agrees with an error, NULL
// with NULL, a value with the same text, with two allowances for
// ClickHouse's types: a BOOLEAN is UInt8 there (18.16 has no Bool), so
// recordeval's true/false equals its 1/0; and a Float64 or Decimal equals
// recordeval's text of the same number (floor(2.5) is the Float64 2 there,
// DECIMAL(10,2) 1.5 + 1 is 2.50). Either way the same value reaches a
// column; where the text itself matters, the cases cast to STRING.
func sameResult(re, ch diffResult) bool {
	switch {
	case re.err != "" || ch.err != "":
		return re.err != "" && ch.err != ""
	case re.null || ch.null:
		return re.null == ch.null
	case re.text == ch.text:
		return true
	case ch.chType == "UInt8" && (re.text == "true" || re.text == "false"):
		return ch.text == map[bool]string{true: "1", false: "0"}[re.text == "true"]
	case ch.chType == "Float64" || strings.HasPrefix(ch.chType, "Decimal"):
		a, errA := decimal.NewFromString(re.text)
		b, errB := decimal.NewFromString(ch.text)
		return errA == nil && errB == nil && a.Equal(b)
	}
	return false
}

// diffNote explains differences. Its patterns, in which * stands for any
// text, are matched against the case's expression (exprs: any of them),
// the input as showInput prints it (inputs: any of them; none: every
// input) and each side's result as diffResult prints it ("text", NULL or
// error(message)).
type diffNote struct {
	exprs      []string
	inputs     []string
	recordeval string
	clickhouse string
	why        string
	// only1816 marks what ClickHouse 18.16 does and current releases do
	// not (or are not known to): the note may go unused on those.
	only1816 bool
}

func (n diffNote) String() string {
	return fmt.Sprintf("%q on %q: recordeval %s, ClickHouse %s", n.exprs, n.inputs, n.recordeval, n.clickhouse)
}

// explain returns the index of the first note that explains a difference,
// or -1.
func explain(notes []diffNote, expr string, in *string, re, ch diffResult) int {
	for k, n := range notes {
		if anyGlob(n.exprs, expr) && (len(n.inputs) == 0 || anyGlob(n.inputs, showInput(in))) &&
			glob(n.recordeval, re.String()) && glob(n.clickhouse, ch.String()) {
			return k
		}
	}
	return -1
}

func anyGlob(patterns []string, s string) bool {
	for _, p := range patterns {
		if glob(p, s) {
			return true
		}
	}
	return false
}

// glob reports whether s matches pattern, in which * matches any text.
func glob(pattern, s string) bool {
	parts := strings.Split(pattern, "*")
	if len(parts) == 1 {
		return s == pattern
	}
	if !strings.HasPrefix(s, parts[0]) {
		return false
	}
	s = s[len(parts[0]):]
	for _, p := range parts[1 : len(parts)-1] {
		i := strings.Index(s, p)
		if i < 0 {
			return false
		}
		s = s[i+len(p):]
	}
	return len(s) >= len(parts[len(parts)-1]) && strings.HasSuffix(s, parts[len(parts)-1])
}

// deliberateDiffs are the differences lakepipe means to have.
var deliberateDiffs = []diffNote{
	{
		exprs:      []string{"*[*"},
		recordeval: "*",
		clickhouse: "error(*subscripts ([…]) in queries run by ClickHouse is not supported*)",
		why: "JSON subscripts (x['key'], x[n]) are evaluated in Kafka pipes only: chsql refuses them " +
			"with a clear error (translate.go, IndexExpr) rather than map them onto ClickHouse 18.16's " +
			"visitParam… functions, which can neither nest nor index arrays. An error, never a wrong " +
			"value; every JSON path case is one-sided until chsql translates subscripts.",
	},
	{
		exprs:      []string{"get_json_object(*"},
		recordeval: "*",
		clickhouse: "error(*get_json_object in queries run by ClickHouse is not supported*)",
		why: "get_json_object is evaluated in Kafka pipes only, like JSON subscripts: chsql refuses it " +
			"with a clear error because ClickHouse 18.16 has no JSON path functions (its visitParam… " +
			"functions find a key at any depth and cannot index arrays, so they would give wrong values).",
	},
	{
		exprs:      []string{"PARSE_JSON(value)::STRING"},
		inputs:     []string{`"{ *`},
		recordeval: `"{*`,
		clickhouse: `"{ *`,
		why: "JSON is kept as the text it came as on the ClickHouse path (PARSE_JSON is the identity " +
			"there), recordeval writes it compact (doc.go): the same document, spaced differently.",
	},
	{
		exprs:      []string{"value::DOUBLE::STRING"},
		recordeval: `"*e*"`,
		clickhouse: `"*"`,
		why: "The text of a DOUBLE: recordeval writes Go's shortest 'g' form (doc.go), with an " +
			"exponent from 1e+06 up and below 1e-04 (1.23456789125e+08, 1e-07), ClickHouse its own " +
			"(123456789.125, 1e-7). The same number; Spark and ClickZetta would write Java's " +
			"1.23456789125E8, which neither side does.",
	},
	{
		exprs:      []string{"floor(value::DOUBLE)", "ceil(value::DOUBLE)"},
		recordeval: "error(*out of range*)",
		clickhouse: `"*e+300"`,
		why: "floor and ceil give BIGINT in recordeval, as in Spark, and a DOUBLE beyond BIGINT's " +
			"range is an error there (Spark clamps it); ClickHouse's floor keeps Float64. Within " +
			"BIGINT's range the two agree.",
	},
	{
		exprs:      []string{"CAST(value AS DATE)", "to_date(value)"},
		inputs:     []string{`"20240115"`},
		recordeval: "error(*yyyyMMdd*)",
		clickhouse: "*",
		why: "recordeval refuses 8 digits that form a yyyyMMdd date as a DATE: text that is only a " +
			"number is Unix time (doc.go), which made 20240115 a plausible wrong date (1970-08-23) " +
			"without a word. Spark's CAST gives NULL (to_date(s, 'yyyyMMdd') reads it), ClickHouse NULL " +
			"(CAST) or an error (toDate); the error says how to read it.",
	},
}

// knownBugs are differences where one side is wrong; each names which one
// and why. They are logged, not failed, until fixed.
var knownBugs = []diffNote{
	// casts
	{
		exprs: []string{"value::BIGINT", "CAST(value AS INT)", "TRY_CAST(value AS BIGINT)", "value::DOUBLE",
			"value::BOOLEAN", "value::BOOLEAN::STRING", "value::TIMESTAMP*", "value::DATE*", "CAST(value AS DATE)",
			"*(value::TIMESTAMP)", "*(value::DATE)"},
		recordeval: "*",
		clickhouse: "NULL",
		why: "ClickHouse path wrong. chsql casts with CAST(x AS Nullable(T)), and ClickHouse answers NULL " +
			"wherever its parser fails (current releases too: ClickHouse PR #18445 made toT() of a " +
			"Nullable do the same). So text that CAST must refuse (ClickZetta's CAST fails; TRY_CAST is " +
			"the NULL-giving form, and chsql drops its TRY_) silently becomes NULL, and so does text " +
			"ClickZetta and recordeval read: '3.14159', ' 7 ' and '1e3' as integers, '+5' as DOUBLE, " +
			"ISO 8601 with T, Z or an offset, fractional seconds and date-only text as TIMESTAMP (18.16), " +
			"Unix epochs, RFC 1123, 'true'/'yes'/'on' as BOOLEAN.",
	},
	{
		exprs: []string{"value::BIGINT", "value::INT", "CAST(value AS INT)", "TRY_CAST(value AS BIGINT)",
			"value::INT + 1", "value::DOUBLE::BIGINT", "value::BIGINT + 1", "value::BIGINT - 1", "value::BIGINT * 2",
			"value::BIGINT * value::BIGINT", "-value::BIGINT", "abs(value::BIGINT)"},
		recordeval: "*",
		clickhouse: `"*"`,
		why: "ClickHouse path wrong: integers wrap around. Text beyond BIGINT parses modulo 2^64 " +
			"('9223372036854775808' is -9223372036854775808), CAST to INT keeps the low 32 bits " +
			"('2147483648' is -2147483648), + - * and unary minus overflow silently, a DOUBLE beyond " +
			"BIGINT casts to -2^63. recordeval errors (TRY_CAST: NULL), as Databricks' ANSI mode and " +
			"Snowflake do; no engine of ClickZetta's family returns a wrapped number. Current releases " +
			"wrap too (CAST is unchecked; accurateCast is the checked one).",
	},
	{
		exprs:      []string{"value::BIGINT::BOOLEAN", "value::BOOLEAN", "value::BOOLEAN::STRING", "(value::BIGINT > 0)::STRING"},
		recordeval: "*",
		clickhouse: `"*"`,
		why: "ClickHouse path wrong. BOOLEAN is UInt8 there (schemas: 18.16 has no Bool), so " +
			"CAST(x AS BOOLEAN) is CAST(x AS UInt8): a number keeps its value modulo 256 instead of " +
			"becoming true or false (2 is 2, -1 is 255, 2147483648 is 0, i.e. false), and a boolean cast " +
			"to STRING is '1'/'0' where ClickZetta (and recordeval) write 'true'/'false'.",
	},
	{
		exprs:      []string{"to_date(value)", "to_timestamp(value)"},
		recordeval: "*",
		clickhouse: "error(*)",
		why: "ClickHouse path wrong: to_date and to_timestamp become toDate and toDateTime, which " +
			"throw on text recordeval (and ClickZetta) read — ISO 8601 with T, Z or an offset, " +
			"fractional seconds, epochs, RFC 1123 — and, on 18.16, on NULL ('value is too short'; " +
			"ClickHouse PR #18445 fixed that in 21.1).",
	},
	// times
	{
		exprs: []string{"value::TIMESTAMP", "CAST(value AS DATE)", "to_date(value)", "value::BIGINT::TIMESTAMP", "value::TIMESTAMP - INTERVAL 2 HOUR",
			"to_timestamp(value, *"},
		inputs:     []string{`"1969-12-31 23:59:59"`, `"2106-02-07 06:28:16"`, `"-*"`, `"9223372036854775807"`, `"1970-01-01 00:00:00"`},
		recordeval: `"*"`,
		clickhouse: `"*"`,
		why: "ClickHouse path wrong: TIMESTAMP is DateTime there, 32-bit seconds from 1970, and times " +
			"outside 1970-01-01 … 2106-02-07 06:28:15 wrap around silently (1969-12-31 23:59:59 is " +
			"1970-01-01 23:59:59, -1 is 2106-02-07 06:28:15, 1970-01-01 minus 2 hours is 2106). " +
			"recordeval keeps them (reading 2^63-1 as nanoseconds, doc.go). A TIMESTAMP column cannot " +
			"hold them either, so an error is due, not another time. Current releases' DateTime has the " +
			"same range.",
	},
	{
		exprs: []string{"value::TIMESTAMP", "CAST(value AS DATE)", "to_date(value)", "to_date(value, *", "to_timestamp(value, *",
			"try_to_date(value, *"},
		inputs:     []string{`"2024-02-30 00:00:00"`, `"2024-13-01"`, `"1705314600"`},
		recordeval: "*",
		clickhouse: `"*"`,
		why: "ClickHouse path wrong: its date parser does not check the date: 2024-02-30 becomes " +
			"2024-03-01, 2024-13-01 and (as DATE) 1705314600 become 1970-01-01; to_date with a format " +
			"ends in the same parser. recordeval refuses the first two (try_to_date: NULL) and reads " +
			"1705314600 as Unix seconds (2024-01-15).",
	},
	{
		exprs:      []string{"value::TIMESTAMP::STRING", "value::DATE::STRING"},
		inputs:     []string{`"1970-01-01 00:00:00"`},
		recordeval: `"1970-01-01*"`,
		clickhouse: `"0000-00-00*"`,
		why:        "ClickHouse 18.16 wrong: it prints the zero DateTime and Date as 0000-00-00; current releases print 1970-01-01.",
		only1816:   true,
	},
	// decimals
	{
		exprs:      []string{"*DECIMAL(10,2)*"},
		inputs:     []string{"NULL"},
		recordeval: "NULL",
		clickhouse: "error(*Attempt to read after eof*)",
		why: "ClickHouse 18.16 wrong: CAST of a NULL Nullable(String) to Nullable(Decimal) throws " +
			"'Attempt to read after eof' (ClickHouse PR #18718 fixed it in 21.1), so a DECIMAL cast " +
			"of a text column fails as soon as one row is NULL.",
		only1816: true,
	},
	{
		exprs:      []string{"*DECIMAL(10,2)*"},
		recordeval: `"*"`,
		clickhouse: "error(*Decimal value is too small*)",
		why: "ClickHouse 18.16 wrong: text or a DOUBLE with more fraction digits than the scale is " +
			"refused ('3.14159', 1.005, 1e-7 as DECIMAL(10,2)); recordeval rounds half away from zero " +
			"(3.14, 1.01, 0.00) as Spark's HALF_UP does. Not checked on a current release.",
		only1816: true,
	},
	{
		exprs:      []string{"value::DECIMAL(10,2)"},
		recordeval: "*",
		clickhouse: `"0.00"`,
		why: "ClickHouse 18.16 wrong: text it cannot parse casts to DECIMAL as 0.00 ('0x1A', 'abc', " +
			"'NaN', and ' 7 ', which recordeval reads as 7.00); recordeval refuses the others. Since " +
			"ClickHouse PR #18718 (21.1) it is NULL, the cast entry's case.",
		only1816: true,
	},
	{
		exprs:      []string{"*DECIMAL(10,2)*"},
		recordeval: "error(*does not fit*)",
		clickhouse: `"*"`,
		why: "ClickHouse path wrong: Decimal(10, 2) is held in 64 bits and casts do not check the " +
			"precision, so 9007199254740993 'fits'; recordeval refuses more than 8 integer digits " +
			"(Spark: NULL, or an error in ANSI mode).",
	},
	{
		exprs:      []string{"value::DECIMAL(10,2) / 4"},
		recordeval: `"*"`,
		clickhouse: `"*"`,
		why: "ClickHouse path wrong: Decimal(10,2) / 4 is a Decimal(10,2) there, truncated: 1.5 / 4 = " +
			"0.37, -0.01 / 4 = 0.00. Spark gives DECIMAL 0.375000, recordeval (whose / is always " +
			"DOUBLE, doc.go) 0.375.",
	},
	{
		exprs:      []string{"value::DECIMAL(10,2) - 0.5"},
		recordeval: "*",
		clickhouse: "error(*Illegal types Decimal*)",
		why: "ClickHouse path wrong: chsql passes 0.5 as a Float64 literal and ClickHouse refuses " +
			"Decimal - Float64; in Spark and ClickZetta 0.5 is a DECIMAL(1,1) literal and the " +
			"subtraction works, as in recordeval.",
	},
	// arithmetic
	{
		exprs:      []string{"value::BIGINT / 0", "value::DOUBLE / 0"},
		recordeval: "error(*division by zero*)",
		clickhouse: `"*"`,
		why: "ClickHouse path wrong: its / is floating point, so x / 0 is +Inf, -Inf or NaN. " +
			"recordeval errors (doc.go), as Databricks' ANSI mode and Snowflake do (Spark's legacy " +
			"mode gives NULL); none gives Infinity.",
	},
	{
		exprs:      []string{"value::BIGINT % 0"},
		inputs:     []string{"NULL"},
		recordeval: "NULL",
		clickhouse: "error(*Division by zero*)",
		why: "ClickHouse path wrong (minor): % 0 throws for a NULL row too, where SQL gives NULL; for " +
			"every other row both sides fail.",
	},
	{
		exprs:      []string{"round(value::DOUBLE, 2)"},
		inputs:     []string{`"1.005"`},
		recordeval: `"1.01"`,
		clickhouse: `"1"`,
		why: "ClickHouse path wrong (minor): Spark and ClickZetta round a DOUBLE half up on its " +
			"decimal text, round(1.005, 2) = 1.01, as recordeval does; ClickHouse rounds the binary " +
			"value 1.00499999…: 1.",
	},
	// NULL handling and logic
	{
		exprs:      []string{"(value = 'hello') AND NULL"},
		recordeval: `"false"`,
		clickhouse: "NULL",
		why:        "ClickHouse 18.16 wrong: its and() is not three-valued, FALSE AND NULL is NULL there; current releases document Kleene logic (FALSE).",
		only1816:   true,
	},
	{
		exprs:      []string{"(value = 'hello') OR NULL", "value::BIGINT < 0 OR value::BIGINT > 100"},
		recordeval: "NULL",
		clickhouse: `"0"`,
		why:        "ClickHouse 18.16 wrong: its or() is not three-valued, FALSE OR NULL is 0 there; current releases document Kleene logic (NULL).",
		only1816:   true,
	},
	{
		exprs:      []string{"value IN (*", "value NOT IN (*", "value::BIGINT IN (*"},
		recordeval: "NULL",
		clickhouse: `"*"`,
		why: "ClickHouse path wrong: its IN never gives NULL here. NULL IN (…) is 0, and x IN ('a', " +
			"NULL) without a match is 0 (NOT IN: 1); SQL, Spark and recordeval give NULL. Seen on " +
			"18.16; not checked on a current release.",
	},
	{
		exprs:      []string{"IF(value = 'hello', 'yes', 'no')"},
		inputs:     []string{"NULL"},
		recordeval: `"no"`,
		clickhouse: "NULL",
		why:        "ClickHouse path wrong: IF with a NULL condition takes the ELSE branch in Spark and ClickZetta (and recordeval); 18.16's if() gives NULL. Not checked on a current release.",
	},
	{
		exprs:      []string{"CASE value WHEN *"},
		inputs:     []string{"NULL"},
		recordeval: `"0"`,
		clickhouse: "NULL",
		why:        "ClickHouse path wrong: CASE NULL WHEN … ELSE 0 END is 0 in SQL (no WHEN matches a NULL operand); 18.16 gives NULL. Not checked on a current release.",
	},
	// functions
	{
		exprs:      []string{"trim(value)", "ltrim(value)", "rtrim(value)"},
		recordeval: "*",
		clickhouse: "error(*Unknown function trim*)",
		why: "ClickHouse 18.16 lacks trimBoth/trimLeft/trimRight, which chsql maps trim/ltrim/rtrim " +
			"to. Where they exist they trim spaces only, as Spark and recordeval do.",
		only1816: true,
	},
	{
		exprs:      []string{"*"},
		recordeval: "*",
		clickhouse: "error(*Unknown function*)",
		why: "ClickHouse path wrong: chsql passes names it does not map straight to ClickHouse, which " +
			"has no concat_ws, split_part, regexp_extract, regexp_replace, " +
			"try_parse_json, date_format, unix_timestamp or from_unixtime (18.16). Newer releases know " +
			"some of these names with MySQL semantics (DATE_FORMAT and FROM_UNIXTIME take %Y-style " +
			"formats, not yyyy-MM-dd), so without a translation the error may turn into wrong values there.",
	},
	{
		exprs:      []string{"year(value)", "value = 42"},
		recordeval: "*",
		clickhouse: "error(*Illegal type*)",
		why: "ClickHouse path wrong: ClickZetta and Spark convert text implicitly (year('2024-01-15 " +
			"10:30:00'), '42' = 42), as recordeval does; chsql hands the String to ClickHouse, which " +
			"refuses it.",
	},
	{
		exprs:      []string{"substr(value, 2)", "substr(value, -3)", "substr(value, -3, 2)"},
		recordeval: "*",
		clickhouse: "error(*substringUTF8*)",
		why: "ClickHouse 18.16 wrong: its substringUTF8 needs a length and a non-negative offset " +
			"(chsql writes -3 as -(3)); current releases take both forms.",
		only1816: true,
	},
	{
		exprs:      []string{"substr(value, 0, 2)"},
		recordeval: "*",
		clickhouse: "error(*greater than 0*)",
		why: "ClickHouse path wrong: Spark's substr takes position 0 as 1 ('hello' gives 'he'), as " +
			"recordeval does; 18.16 refuses offset 0 and current releases return '' for it.",
		only1816: true,
	},
	// JSON
	{
		exprs:      []string{"PARSE_JSON(value)::STRING"},
		inputs:     []string{`"not json"`, `""`},
		recordeval: "error(*not valid JSON*)",
		clickhouse: `"*"`,
		why: "ClickHouse path wrong: PARSE_JSON is the identity there, so text that is not JSON " +
			"passes as if it were; ClickZetta's PARSE_JSON refuses it (TRY_PARSE_JSON gives NULL), as " +
			"recordeval does.",
	},
	{
		exprs:      []string{"PARSE_JSON(value)::STRING"},
		inputs:     []string{`"\"just a string\""`, `"null"`},
		recordeval: "*",
		clickhouse: `"*"`,
		why: "ClickHouse path wrong: as JSON stays text there, a JSON string cast to STRING keeps its " +
			"quotes and JSON null is the text 'null'; ClickZetta (and recordeval, doc.go) give the " +
			"string's text and NULL.",
	},
}
