package recordeval

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lakepipe/lakepipe/internal/chstore"
	"github.com/lakepipe/lakepipe/internal/rowio"
	"github.com/lakepipe/lakepipe/internal/sqlast"
	"github.com/lakepipe/lakepipe/internal/sqlparse"
)

// docPipe is the Kafka pipe of the pipe guide, verbatim.
const docPipe = `CREATE PIPE pipe_kafka_logs
VIRTUAL_CLUSTER = 'default'
BATCH_INTERVAL_IN_SECONDS = '30'
AS
COPY INTO kafka_logs
FROM (
SELECT
CAST(PARSE_JSON(VALUE::STRING)['time'] AS TIMESTAMP) as log_time,
PARSE_JSON(VALUE::STRING)['level']::STRING as level,
PARSE_JSON(VALUE::STRING)['message']::STRING as message
FROM READ_KAFKA(
'kafka-broker:9092', -- bootstrap_servers
'app_logs', -- topic
'', -- topic_prefix
'lakehouse_consumer', -- group_id
'', '', '', '', -- 偏移量参数（Pipe 自动管理）
'raw', 'raw', -- key/value format
0, -- max_errors
map() -- kafka_configs
)
);`

// docOrdersPipe is the other Kafka pipe of the ClickZetta Lakehouse documentation.
const docOrdersPipe = `CREATE PIPE kafka_orders_pipe
VIRTUAL_CLUSTER = 'default'
BATCH_INTERVAL_IN_SECONDS = '60'
AS
COPY INTO orders_raw
FROM (
SELECT CAST(value AS STRING) AS raw_msg
FROM TABLE(READ_KAFKA(
'kafka-host:9092', 'orders_topic', '', 'pipe_orders_group', '', '', '', '', 'raw', 'raw', 0, map()
))
);`

// compilePipe compiles the SELECT of a CREATE PIPE statement with the
// formats its READ_KAFKA names.
func compilePipe(t testing.TB, sql string) *Program {
	t.Helper()
	st, err := sqlparse.Parse(sql)
	if err != nil {
		t.Fatal(err)
	}
	sel := st.(*sqlast.CreatePipe).Copy.Query.Body.(*sqlast.Select)
	args := sel.From[0].(*sqlast.FuncRef).Func.Args
	kf := args[8].(*sqlast.Literal).Value
	vf := args[9].(*sqlast.Literal).Value
	p, err := Compile(sel, kf, vf)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// compileSelect compiles "SELECT <list> FROM READ_KAFKA(…) [WHERE …]".
func compileSelect(list, where, keyFormat, valueFormat string) (*Program, error) {
	sql := "SELECT " + list + " FROM READ_KAFKA('b:9092', 't', '', 'g', '', '', '', '', '" + keyFormat + "', '" + valueFormat + "', 0, map())"
	if where != "" {
		sql += " WHERE " + where
	}
	q, err := sqlparse.ParseQuery(sql)
	if err != nil {
		return nil, err
	}
	return Compile(q.Body.(*sqlast.Select), keyFormat, valueFormat)
}

const nullCell = "NULL"

// row returns row i of b, NULL cells as "NULL".
func row(b *rowio.Batch, i int) []string {
	out := make([]string, len(b.Cols))
	for c, v := range b.Cols {
		if v.Null[i] {
			out[c] = nullCell
		} else {
			out[c] = string(v.Text[i])
		}
	}
	return out
}

// evalRow evaluates r and returns its cells ("NULL" for NULL).
func evalRow(p *Program, r *Record) ([]string, bool, error) {
	b := p.NewBatch(1, nil)
	kept, err := p.Append(b, r)
	if err != nil || !kept {
		if b.Rows != 0 || len(b.Line) != 0 || len(b.Cols[0].Text) != 0 {
			return nil, kept, fmt.Errorf("batch changed although kept=%v err=%v", kept, err)
		}
		return nil, kept, err
	}
	if b.Rows != 1 || b.Line[0] != r.Offset {
		return nil, kept, fmt.Errorf("Rows=%d Line=%v", b.Rows, b.Line)
	}
	return row(b, 0), true, nil
}

func logRecord(value string) *Record {
	return &Record{Value: []byte(value), Topic: "app_logs", Offset: 7}
}

func TestDocKafkaPipe(t *testing.T) {
	p := compilePipe(t, docPipe)
	if got := strings.Join(p.Columns, ","); got != "log_time,level,message" {
		t.Fatalf("Columns = %s", got)
	}
	if p.nslots != 1 {
		t.Errorf("PARSE_JSON(VALUE::STRING) gets %d memo slots, want 1", p.nslots)
	}
	cases := []struct {
		name, value string
		want        string // cells joined by " | "
		err         string // substring of the error
	}{
		{name: "good", value: `{"time":"2024-01-15T10:30:00Z","level":"ERROR","message":"disk full"}`,
			want: "2024-01-15 10:30:00 | ERROR | disk full"},
		{name: "space and fraction", value: ` {"time": "2024-01-15 10:30:00.250", "level": "INFO", "message": "ok"} `,
			want: "2024-01-15 10:30:00.25 | INFO | ok"},
		{name: "zone", value: `{"time":"2024-01-15T12:30:00+02:00","level":"WARN","message":"x"}`,
			want: "2024-01-15 10:30:00 | WARN | x"},
		{name: "epoch seconds", value: `{"time":1705314600,"level":"INFO","message":"m"}`,
			want: "2024-01-15 10:30:00 | INFO | m"},
		{name: "epoch millis", value: `{"time":1705314600123,"level":"INFO","message":"m"}`,
			want: "2024-01-15 10:30:00.123 | INFO | m"},
		{name: "escapes", value: `{"time":"2024-01-15T10:30:00Z","level":"INFO","message":"say \"hi\"\n\u00e9\ud83d\ude00"}`,
			want: "2024-01-15 10:30:00 | INFO | say \"hi\"\n\u00e9\U0001F600"},
		{name: "missing fields", value: `{"message":"only"}`, want: "NULL | NULL | only"},
		{name: "null fields", value: `{"time":null,"level":null,"message":null}`, want: "NULL | NULL | NULL"},
		{name: "not an object", value: `[1,2,3]`, want: "NULL | NULL | NULL"},
		{name: "JSON null", value: `null`, want: "NULL | NULL | NULL"},
		{name: "non-string message", value: `{"message":{"a": [1, 2]},"level":3}`, want: `NULL | 3 | {"a":[1,2]}`},
		{name: "duplicate key: last wins", value: `{"level":"A","level":"B"}`, want: "NULL | B | NULL"},
		{name: "bad JSON", value: `{"time":"2024-01-15T10:30:00Z","level":"INFO"`,
			err: "column log_time: value::STRING is not valid JSON: unexpected end of JSON input at offset 45"},
		{name: "not JSON", value: `hello`, err: "column log_time: value::STRING is not valid JSON: invalid character 'h' looking for beginning of value at offset 0"},
		{name: "trailing garbage", value: `{} x`, err: "invalid character 'x' after top-level value at offset 3"},
		{name: "empty", value: ``, err: "column log_time: value::STRING is not valid JSON: unexpected end of JSON input"},
		{name: "bad timestamp", value: `{"time":"yesterday","level":"INFO","message":"m"}`,
			err: `column log_time: cannot cast JSON "\"yesterday\"" to TIMESTAMP`},
		{name: "bad date", value: `{"time":"2024-02-30 10:00:00","level":"INFO","message":"m"}`,
			err: `column log_time: cannot cast`},
		{name: "timestamp is an object", value: `{"time":{},"level":"INFO","message":"m"}`,
			err: `column log_time: cannot cast JSON "{}" to TIMESTAMP`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cells, kept, err := evalRow(p, logRecord(c.value))
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err = %v, want %q", err, c.err)
				}
				return
			}
			if err != nil || !kept {
				t.Fatalf("kept=%v err=%v", kept, err)
			}
			if got := strings.Join(cells, " | "); got != c.want {
				t.Errorf("got  %q\nwant %q", got, c.want)
			}
		})
	}
}

func TestDocOrdersPipe(t *testing.T) {
	p := compilePipe(t, docOrdersPipe)
	if got := strings.Join(p.Columns, ","); got != "raw_msg" {
		t.Fatalf("Columns = %s", got)
	}
	for _, c := range []struct {
		value []byte
		want  string
	}{
		{[]byte(`{"order_id": 1}`), `{"order_id": 1}`},
		{[]byte("not json \xff at all"), "not json \xff at all"},
		{[]byte{}, ""},
		{nil, nullCell},
	} {
		cells, _, err := evalRow(p, &Record{Value: c.value})
		if err != nil || cells[0] != c.want {
			t.Errorf("value %q: got %q, %v; want %q", c.value, cells, err, c.want)
		}
	}
}

// exprRecord is the record the expression tests evaluate.
var exprRecord = &Record{
	Key: []byte("k1"),
	Value: []byte(`{"s":"Hello","n":null,"i":42,"f":1.5,"big":12345678901234567890,` +
		`"arr":[1,"two",{"x":3}],"o":{"a":{"b":"deep"}},"t":"2024-01-15T10:30:00Z",` +
		`"esc":"a\"b\u00e9\n","neg":-7,"e":1e3,"b":true,"sp":"  pad  "}`),
	Topic:     "app_logs",
	Partition: 3,
	Offset:    1234,
	Timestamp: time.Date(2024, 1, 15, 11, 30, 0, 500_000_000, time.FixedZone("CET", 3600)),
	Headers:   []Header{{Key: "trace", Value: []byte("abc")}, {Key: "n", Value: nil}},
}

type exprCase struct {
	expr string
	want string // the cell, "NULL", or "error: <substring>"
}

// J stands for PARSE_JSON(value) in exprCases.
var exprCases = []exprCase{
	// record columns
	{"key", "k1"},
	{"topic", "app_logs"},
	{"partition", "3"},
	{"`partition`", "3"},
	{"offset", "1234"},
	{"`Offset`", "1234"},
	{"timestamp", "2024-01-15 10:30:00.5"},
	{"`timestamp`", "2024-01-15 10:30:00.5"},
	{"k.topic", "app_logs"},
	{"headers", `{"trace":"abc","n":null}`},
	{"headers['trace']", "abc"},
	{"headers['n']", "NULL"},
	{"length(value) > 100", "true"},
	{"current_timestamp IS NOT NULL", "true"},
	{"current_timestamp() = now()", "true"},
	{"current_date() = CAST(now() AS DATE)", "true"},

	// JSON
	{"J['s']", "Hello"},
	{"J['n']", "NULL"},
	{"J['missing']", "NULL"},
	{"J['i']", "42"},
	{"J['f']", "1.5"},
	{"J['e']", "1e3"},
	{"J['e'] + 0", "1000"},
	{"J['big']", "12345678901234567890"},
	{"J['big']::STRING", "12345678901234567890"},
	{"J['big']::DECIMAL(20,0)", "12345678901234567890"},
	{"J['big'] + 1", "12345678901234567891"},
	{"J['big']::BIGINT", "error: to BIGINT: out of range"},
	{"J['arr']", `[1,"two",{"x":3}]`},
	{"J['arr'][0]", "1"},
	{"J['arr'][1]", "two"},
	{"J['arr'][2]['x']", "3"},
	{"J['arr'][5]", "NULL"},
	{"J['arr'][-1]", "NULL"},
	{"J['arr'][1 + 1]['x']", "3"},
	{"J['o']", `{"a":{"b":"deep"}}`},
	{"J['o']['a']['b']", "deep"},
	{"J['o']['a']['b']::STRING", "deep"},
	{"J['s']['x']", "NULL"},
	{"J[0]", "NULL"},
	{"J['esc']", "a\"b\u00e9\n"},
	{"J['b']", "true"},
	{"J['b'] AND true", "true"},
	{"J['i'] = 42", "true"},
	{"J['i'] = '42'", "true"},
	{"J['s'] = 'Hello'", "true"},
	{"J['f'] > J['i']", "false"},
	{"J['neg'] * 2", "-14"},
	{"-J['i']", "-42"},
	{"upper(J['s'])", "HELLO"},
	{"J['t']::TIMESTAMP", "2024-01-15 10:30:00"},
	{"J['o']::STRING", `{"a":{"b":"deep"}}`},
	{"J['o'] IS NOT NULL", "true"},
	{"J['i']::INT + 1", "43"},
	{"J['f']::INT", "1"},
	{"J['b']::BOOLEAN", "true"},
	{"J['s']::INT", `error: cannot cast JSON "\"Hello\"" to INT`},
	{"PARSE_JSON(J['arr']::STRING)[1]", "two"},
	{"PARSE_JSON('[1, 2]')", "[1,2]"},
	{`PARSE_JSON('"x"')`, "x"},
	{"PARSE_JSON('null')", "NULL"},
	{"PARSE_JSON(NULL)", "NULL"},
	{"PARSE_JSON('{bad')", "error: '{bad' is not valid JSON: invalid character 'b' looking for beginning of object key string at offset 1"},
	{"TRY_PARSE_JSON('{bad')", "NULL"},
	{"TRY_PARSE_JSON('{}')", "{}"},
	{`PARSE_JSON('"[1]"')`, "[1]"},
	{"GET_JSON_OBJECT(value, '$.o.a.b')", "deep"},
	{"GET_JSON_OBJECT(value, '$.arr[2].x')", "3"},
	{"GET_JSON_OBJECT(value, '$.arr')", `[1,"two",{"x":3}]`},
	{"GET_JSON_OBJECT(value, '$.nope')", "NULL"},
	{"GET_JSON_OBJECT(value, '$.n')", "NULL"},
	{"GET_JSON_OBJECT(value, '$[''s'']')", "Hello"},
	{"GET_JSON_OBJECT(value, '$')", "(the record's value)"},
	{"GET_JSON_OBJECT('not json', '$.a')", "NULL"},
	{"GET_JSON_OBJECT(value, '$.' || 's')", "Hello"},
	{"GET_JSON_OBJECT(value, 'bad path' || '')", "NULL"},
	{"JSON_EXTRACT(value, '$.esc')", "a\"b\u00e9\n"},
	{"get_json_object(value, '$.i') + 1", "43"},
	{`CAST('{"a": 1}' AS JSON)`, `{"a":1}`},
	{`CAST('{"a": 1}' AS JSON)['a']`, "1"},
	{"CAST(1.5 AS JSON)", "1.5"},
	{"CAST(timestamp AS JSON)", "2024-01-15 10:30:00.5"},
	{"CAST('x' AS JSON)", `error: "x" is not valid JSON`},

	// casts
	{"CAST('42' AS INT)", "42"},
	{"CAST(' 42 ' AS INT)", "42"},
	{"CAST('1.9' AS INT)", "1"},
	{"CAST('-1.9' AS INT)", "-1"},
	{"CAST('1e3' AS INT)", "1000"},
	{"CAST(127 AS TINYINT)", "127"},
	{"CAST('300' AS TINYINT)", `error: cannot cast "300" to TINYINT: out of range`},
	{"CAST(-32769 AS SMALLINT)", "error: out of range"},
	{"CAST('2147483648' AS INT)", "error: out of range"},
	{"CAST(2147483647 AS INTEGER)", "2147483647"},
	{"CAST('9223372036854775807' AS BIGINT)", "9223372036854775807"},
	{"CAST('9223372036854775808' AS BIGINT)", "error: out of range"},
	{"CAST(-9223372036854775808 AS BIGINT)", "-9223372036854775808"},
	{"CAST(1e19 AS BIGINT)", "error: out of range"},
	{"CAST('abc' AS INT)", `error: cannot cast "abc" to INT`},
	{"TRY_CAST('abc' AS INT)", "NULL"},
	{"TRY_CAST('12' AS INT)", "12"},
	{"TRY_CAST(1/0 AS INT)", "error: division by zero"},
	{"CAST(NULL AS INT)", "NULL"},
	{"CAST(1.5 AS STRING)", "1.5"},
	{"CAST(true AS INT)", "1"},
	{"CAST(true AS STRING)", "true"},
	{"CAST(42 AS VARCHAR(1))", "42"},
	{"CAST('x' AS CHAR(3))", "x"},
	{"CAST('3.14' AS DOUBLE)", "3.14"},
	{"CAST('1e3' AS FLOAT)", "1000"},
	{"CAST(0.1 AS DOUBLE) + 0.2", "0.30000000000000004"},
	{"CAST('x' AS DOUBLE)", `error: cannot cast "x" to DOUBLE`},
	{"CAST(1 AS DOUBLE) / 3", "0.3333333333333333"},
	{"CAST('12.345' AS DECIMAL(10,2))", "12.35"},
	{"CAST('-12.345' AS DECIMAL(10,2))", "-12.35"},
	{"CAST('-0.001' AS DECIMAL(10,2))", "0.00"},
	{"CAST('99.994' AS DECIMAL(4,2))", "99.99"},
	{"CAST('99.995' AS DECIMAL(4,2))", "error: cannot cast \"99.995\" to DECIMAL(4, 2): does not fit"},
	{"CAST(5 AS DECIMAL(5,2))", "5.00"},
	{"CAST(1.25 AS DECIMAL(3,1))", "1.3"},
	{"CAST('1.5e2' AS DECIMAL(5,1))", "150.0"},
	{"CAST('0.5' AS DECIMAL)", "1"},
	{"CAST('007.10' AS NUMERIC(5,2))", "7.10"},
	{"CAST('.5' AS DECIMAL(3,2))", "0.50"},
	{"CAST('abc' AS DECIMAL(5,1))", "error: cannot cast \"abc\" to DECIMAL(5, 1)"},
	{"CAST('12.345' AS DECIMAL(10,2)) + 1", "13.35"},
	{"CAST('12.345' AS DECIMAL(10,2)) * 2", "24.70"}, // DECIMAL(p,2): the scale stays in the text
	{"CAST('1.5' AS DECIMAL(10,2)) + CAST('1.25' AS DECIMAL(10,3))", "2.750"},
	{"CAST('1.5' AS DECIMAL(10,2)) * CAST('2' AS DECIMAL(10,1))", "3.000"},
	{"CAST('2.50' AS DECIMAL(10,2)) - 1", "1.50"},
	{"round(CAST('2.04' AS DECIMAL(10,2)), 1)", "2.0"},
	{"CAST('12.345' AS DECIMAL(10,2)) > 12.3", "true"},
	{"CAST('true' AS BOOLEAN)", "true"},
	{"CAST('NO' AS BOOLEAN)", "false"},
	{"CAST(0 AS BOOLEAN)", "false"},
	{"CAST(2.5 AS BOOLEAN)", "true"},
	{"CAST('maybe' AS BOOLEAN)", `error: cannot cast "maybe" to BOOLEAN`},
	{"CAST('2024-01-15 10:30:00' AS TIMESTAMP)", "2024-01-15 10:30:00"},
	{"CAST('2024-01-15T10:30:00.123456Z' AS TIMESTAMP)", "2024-01-15 10:30:00.123456"},
	{"CAST('2024-01-15T12:30:00+02:00' AS TIMESTAMP)", "2024-01-15 10:30:00"},
	{"CAST('2024-01-15 05:30:00 -0500' AS TIMESTAMP)", "2024-01-15 10:30:00"},
	{"CAST('2024-01-15 10:30:00 UTC' AS TIMESTAMP)", "2024-01-15 10:30:00"},
	{"CAST('2024-01-15T10:30' AS TIMESTAMP)", "2024-01-15 10:30:00"},
	{"CAST('2024/01/15 10:30:00' AS TIMESTAMP)", "2024-01-15 10:30:00"},
	{"CAST('2024-01-15' AS TIMESTAMP)", "2024-01-15 00:00:00"},
	{"CAST('2024-01-15 10:30:00 +0000 UTC' AS TIMESTAMP)", "2024-01-15 10:30:00"},
	{"CAST('Mon, 15 Jan 2024 10:30:00 GMT' AS TIMESTAMP)", "2024-01-15 10:30:00"},
	{"CAST('15/Jan/2024:11:30:00 +0100' AS TIMESTAMP)", "2024-01-15 10:30:00"},
	{"CAST(1705314600 AS TIMESTAMP)", "2024-01-15 10:30:00"},
	{"CAST(1705314600123 AS TIMESTAMP)", "2024-01-15 10:30:00.123"},
	{"CAST(1705314600123456 AS TIMESTAMP)", "2024-01-15 10:30:00.123456"},
	{"CAST(1705314600123456789 AS TIMESTAMP)", "2024-01-15 10:30:00.123456789"},
	{"CAST('1705314600' AS TIMESTAMP)", "2024-01-15 10:30:00"},
	{"CAST(1705314600.5 AS TIMESTAMP)", "2024-01-15 10:30:00.5"},
	{"CAST(-1 AS TIMESTAMP)", "1969-12-31 23:59:59"},
	{"CAST('2024-02-30' AS TIMESTAMP)", `error: cannot cast "2024-02-30" to TIMESTAMP`},
	{"CAST('2024-01-15 25:00:00' AS TIMESTAMP)", `error: cannot cast`},
	{"CAST('yesterday' AS TIMESTAMP)", `error: cannot cast "yesterday" to TIMESTAMP`},
	{"TRY_CAST('yesterday' AS TIMESTAMP)", "NULL"},
	{"CAST(true AS TIMESTAMP)", "error: cannot cast BOOLEAN true to TIMESTAMP"},
	{"CAST('2024-01-15 10:30:00' AS DATE)", "2024-01-15"},
	{"CAST(timestamp AS DATE)", "2024-01-15"},
	{"CAST(timestamp AS BIGINT)", "1705314600"},
	{"CAST(timestamp AS DOUBLE)", "1.7053146005e+09"},
	{"CAST(timestamp AS STRING)", "2024-01-15 10:30:00.5"},
	{"DATE '2024-01-15'", "2024-01-15"},
	{"CAST(DATE '2024-01-15' AS TIMESTAMP)", "2024-01-15 00:00:00"},
	{"TIMESTAMP '2024-01-15 10:30:00'", "2024-01-15 10:30:00"},
	{"value::VARCHAR(3) = value", "true"},

	// numbers beyond float64 and exponents that must not be expanded
	{`PARSE_JSON('{"x":1e999999999}')['x'] = 1`, "false"},
	{`PARSE_JSON('{"x":1e999999999}')['x'] + 1`, "+Inf"},
	{`PARSE_JSON('{"x":1e999999999}')['x']`, "1e999999999"},
	{`CAST(PARSE_JSON('[1e400]')[0] AS BIGINT)`, "error: out of range"},
	{`PARSE_JSON('[123456789012345678901234567890]')[0] > 1`, "true"},
	{`PARSE_JSON('[123456789012345678901234567890]')[0] + 1`, "123456789012345678901234567891"},
	{"CAST('1e999999999' AS DECIMAL(10,2))", "error: out of range"},
	{"CAST('1e-999999999' AS DECIMAL(10,2))", "error: out of range"},
	{"CAST('1e3' AS DECIMAL(10,2))", "1000.00"},
	{"CAST('1e999999999' AS DOUBLE)", "error: out of range"},
	{"'1e999999999' + 1", "+Inf"},
	{"CAST('9' || repeat AS INT)", "error: unknown column repeat"},

	// arithmetic and text operators
	{"1 + 2", "3"},
	{"7 - 10", "-3"},
	{"6 * 7", "42"},
	{"7 / 2", "3.5"},
	{"7 % 3", "1"},
	{"-7 % 3", "-1"},
	{"7.5 % 2", "1.5"},
	{"1 / 0", "error: division by zero"},
	{"1 % 0", "error: division by zero"},
	{"1.5 / 0", "error: division by zero"},
	{"9223372036854775807 + 1", "error: integer overflow"},
	{"-9223372036854775807 - 2", "error: integer overflow"},
	{"4611686018427387904 * 2", "error: integer overflow"},
	{"-(-9223372036854775807 - 1)", "error: integer overflow"},
	{"'5' + 1", "6"},
	{"'1.5' * 2", "3"},
	{"'a' + 1", `error: "a" is not a number`},
	{"true + 1", "error: BOOLEAN true is not a number"},
	{"1 + NULL", "NULL"},
	{"1.5 + 1", "2.5"},
	{"-(3)", "-3"},
	{"+3", "3"},
	{"2 * 3 + 4", "10"},
	{"'a' || 'b'", "ab"},
	{"'a' || NULL", "NULL"},
	{"'n=' || 1 || ',' || 2.5", "n=1,2.5"},
	{"'t=' || true", "t=true"},
	{"J['s'] || '!'", "Hello!"},
	{"1 < 2", "true"},
	{"'a' < 'b'", "true"},
	{"'b' < 'a'", "false"},
	{"2 = 2.0", "true"},
	{"1 <> 1", "false"},
	{"1 != 2", "true"},
	{"2 >= 2", "true"},
	{"2 <= 1", "false"},
	{"'10' < '9'", "true"},
	{"10 < '9'", "false"},
	{"timestamp > '2024-01-01'", "true"},
	{"timestamp < TIMESTAMP '2024-01-01 00:00:00'", "false"},
	{"DATE '2024-01-15' < timestamp", "true"},
	{"true > false", "true"},
	{"'yes' = true", "true"},
	{"1 = 'x'", `error: cannot compare "x" with a number`},
	{"timestamp = 5", "error: cannot compare TIMESTAMP"},
	{"NULL = NULL", "NULL"},
	{"J['n'] = 1", "NULL"},
	{"'hello' LIKE 'h%'", "true"},
	{"'hello' LIKE 'h_llo'", "true"},
	{"'hello' LIKE 'H%'", "false"},
	{"'hello' ILIKE 'H%O'", "true"},
	{"'HÉLLO' ILIKE 'hé%'", "true"},
	{"'hello' NOT LIKE '%x%'", "true"},
	{"'hello' NOT ILIKE '%L%'", "false"},
	{"'héllo' LIKE 'h_llo'", "true"},
	{"'abc' LIKE '%b%'", "true"},
	{"'abc' LIKE ''", "false"},
	{"'' LIKE '%'", "true"},
	{"'aXbXc' LIKE 'a%b%c'", "true"},
	{"'mississippi' LIKE '%iss%ppi'", "true"},
	{"'mississippi' LIKE '%iss%ppx'", "false"},
	{"'a%b' LIKE 'a\\%b'", "true"},
	{"'axb' LIKE 'a\\%b'", "false"},
	{"'a_b' LIKE 'a\\_b'", "true"},
	{"'abc' LIKE 'a' || '%'", "true"},
	{"NULL LIKE 'a'", "NULL"},
	{"'a' LIKE NULL", "NULL"},
	{"'abc123' RLIKE '[0-9]+'", "true"},
	{"'abc' NOT RLIKE '[0-9]'", "true"},
	{"'abc' RLIKE '^b'", "false"},
	{"2 IN (1, 2)", "true"},
	{"3 IN (1, 2)", "false"},
	{"3 IN (1, NULL)", "NULL"},
	{"2 IN (1, NULL, 2)", "true"},
	{"3 NOT IN (1, 2)", "true"},
	{"3 NOT IN (1, NULL)", "NULL"},
	{"NULL IN (1)", "NULL"},
	{"J['s'] IN ('Hello', 'x')", "true"},
	{"partition IN ('3')", "true"},
	{"5 BETWEEN 1 AND 10", "true"},
	{"5 NOT BETWEEN 1 AND 10", "false"},
	{"5 BETWEEN 6 AND NULL", "false"},
	{"5 BETWEEN 1 AND NULL", "NULL"},
	{"5 NOT BETWEEN 1 AND NULL", "NULL"},
	{"'b' BETWEEN 'a' AND 'c'", "true"},
	{"NULL IS NULL", "true"},
	{"1 IS NULL", "false"},
	{"J['n'] IS NULL", "true"},
	{"J['s'] IS NOT NULL", "true"},
	{"J['missing'] IS NULL", "true"},
	{"CASE WHEN J['i'] > 40 THEN 'big' ELSE 'small' END", "big"},
	{"CASE WHEN J['i'] > 50 THEN 'big' END", "NULL"},
	{"CASE J['s'] WHEN 'x' THEN 1 WHEN 'Hello' THEN 2 END", "2"},
	{"CASE 1 WHEN 2 THEN 'a' END", "NULL"},
	{"CASE NULL WHEN NULL THEN 1 ELSE 0 END", "0"},
	{"CASE WHEN NULL THEN 1 ELSE 2 END", "2"},
	{"CASE WHEN true THEN 1 ELSE 1/0 END", "1"},
	{"CASE WHEN 'x' THEN 1 END", `error: "x" is not a boolean`},
	{"timestamp + INTERVAL 1 DAY", "2024-01-16 10:30:00.5"},
	{"timestamp - INTERVAL '2' HOUR", "2024-01-15 08:30:00.5"},
	{"timestamp + INTERVAL '3 hours'", "2024-01-15 13:30:00.5"},
	{"INTERVAL 30 MINUTE + timestamp", "2024-01-15 11:00:00.5"},
	{"timestamp + INTERVAL 500 MILLISECOND", "2024-01-15 10:30:01"},
	{"DATE '2024-01-31' + INTERVAL 1 MONTH", "2024-02-29"},
	{"DATE '2024-02-29' - INTERVAL 1 YEAR", "2023-02-28"},
	{"DATE '2024-01-15' + INTERVAL 1 WEEK", "2024-01-22"},
	{"DATE '2024-01-15' + INTERVAL 1 QUARTER", "2024-04-15"},
	{"DATE '2024-01-15' + INTERVAL 6 HOUR", "2024-01-15 06:00:00"},
	{"'2024-01-15' + INTERVAL 1 DAY", "2024-01-16 00:00:00"},
	{"timestamp + INTERVAL 9223372036854775807 HOUR", "error: out of range"},

	// text functions
	{"lower('AbC')", "abc"},
	{"lower('ÀB')", "àb"},
	{"lcase('X')", "x"},
	{"upper('héllo')", "HÉLLO"},
	{"upper(NULL)", "NULL"},
	{"upper(12)", "12"},
	{"trim('  a b  ')", "a b"},
	{"trim(J['sp'])", "pad"},
	{"ltrim('  a ')", "a "},
	{"rtrim('  a ')", "  a"},
	{"trim('xxaxx', 'x')", "a"},
	{"trim(' \t a \t ')", "\t a \t"}, // spaces only, as Spark and ClickHouse
	{"ltrim('xya', 'xy')", "a"},
	{"length('héllo')", "5"},
	{"char_length('')", "0"},
	{"character_length('ab')", "2"},
	{"length(NULL)", "NULL"},
	{"length(123)", "3"},
	{"substr('Spark SQL', 5)", "k SQL"},
	{"substr('Spark SQL', -3)", "SQL"},
	{"substr('Spark SQL', 5, 1)", "k"},
	{"substr('Spark SQL', 0, 2)", "Sp"},
	{"substr('abc', -5, 3)", "a"},
	{"substr('héllo', 2, 3)", "éll"},
	{"substr('abc', 10)", ""},
	{"substr('abc', 2, -1)", ""},
	{"substr('abc', -9223372036854775807, -9223372036854775807)", ""},
	{"substr('abc', 2, 0)", ""},
	{"substring('abc', 2)", "bc"},
	{"substr('abc', 'x')", `error: substr: position: cannot cast "x" to BIGINT`},
	{"substr('abc', 2, 9223372036854775807)", "bc"},
	{"concat('a', 'b', 1)", "ab1"},
	{"concat('a', NULL)", "NULL"},
	{"concat_ws('-', 'a', NULL, 'b')", "a-b"},
	{"concat_ws(NULL, 'a')", "NULL"},
	{"concat_ws(',', J['s'], 1)", "Hello,1"},
	{"replace('aXbXc', 'X', '-')", "a-b-c"},
	{"replace('abc', 'b')", "ac"},
	{"replace('abc', '', 'x')", "abc"},
	{"replace('aaa', 'aa', 'b')", "ba"},
	{"split_part('a,b,c', ',', 2)", "b"},
	{"split_part('a,b,c', ',', -1)", "c"},
	{"split_part('a,b,c', ',', -3)", "a"},
	{"split_part('a,b,c', ',', 4)", ""},
	{"split_part('a,b,c', ',', -4)", ""},
	{"split_part('a,b,c', ',', 0)", "a"},
	{"split_part('abc', '', 1)", "abc"},
	{"split_part('a,,c', ',', 2)", ""},
	{"split_part('a::b', '::', 2)", "b"},
	{"regexp_extract('order-123-x', '([a-z]+)-([0-9]+)', 2)", "123"},
	{"regexp_extract('order-123-x', '([a-z]+)-([0-9]+)')", "order"},
	{"regexp_extract('order-123', '[0-9]+', 0)", "123"},
	{"regexp_extract('abc', '([0-9]+)')", ""},
	{"regexp_extract('abc', '(a)|(z)', 2)", ""},
	{"regexp_extract('a1', '[a-z]' || '([0-9])', 1)", "1"},
	{"regexp_extract('a1', '([a-z])' || '', 2)", "error: regexp_extract: group 2 does not exist"},
	{"regexp_replace('a1b22c', '[0-9]+', '#')", "a#b#c"},
	{"regexp_replace('John Smith', '(\\\\w+) (\\\\w+)', '$2, $1')", "Smith, John"},
	{"regexp_replace('ab', 'b', '$')", "a$"},
	{"regexp_replace('ab', 'b', '\\\\$1')", "a$1"},
	{"regexp_replace('abc', '(b)', '$1$1')", "abbc"},
	{"regexp_replace('abc', 'B' || '', 'x')", "abc"},
	{"regexp_like('abc', '^a')", "true"},
	{"regexp_like('abc', 'z')", "false"},

	// NULL handling and conditions
	{"coalesce(NULL, J['missing'], 'x', 1/0)", "x"},
	{"coalesce(NULL, NULL)", "NULL"},
	{"nvl(NULL, 'd')", "d"},
	{"ifnull('a', 'd')", "a"},
	{"nullif(1, 1)", "NULL"},
	{"nullif(1, 2)", "1"},
	{"nullif(NULL, 1)", "NULL"},
	{"nullif(1, NULL)", "1"},
	{"if(1 < 2, 'y', 'n')", "y"},
	{"if(NULL, 'y', 'n')", "n"},
	{"iff(false, 1, 2)", "2"},
	{"if(true, 1, 1/0)", "1"},

	// numbers
	{"abs(-5)", "5"},
	{"abs(-1.5)", "1.5"},
	{"abs('-3')", "3"},
	{"abs(J['neg'])", "7"},
	{"abs(-9223372036854775807 - 1)", "error: integer overflow"},
	{"round(2.5)", "3"},
	{"round(-2.5)", "-3"},
	{"round(1.005, 2)", "1.01"},
	{"round(3.14159, 3)", "3.142"},
	{"round(3.14159, 10)", "3.14159"},
	{"round(1234, -2)", "1200"},
	{"round(1250, -2)", "1300"},
	{"round(-1250, -2)", "-1300"},
	{"round(1250, -30)", "0"},
	{"round(1250.0, -2)", "1300"},
	{"round(7)", "7"},
	{"round(CAST('2.345' AS DECIMAL(5,3)), 2)", "2.35"},
	{"round(J['f'])", "2"},
	{"round(NULL)", "NULL"},
	{"round('x')", `error: round: "x" is not a number`},
	{"floor(1.7)", "1"},
	{"floor(-1.2)", "-2"},
	{"ceil(1.2)", "2"},
	{"ceiling(-1.7)", "-1"},
	{"floor(5)", "5"},
	{"floor('2.5')", "2"},
	{"ceil(CAST('2.01' AS DECIMAL(4,2)))", "3"},
	{"floor(1e300)", "error: out of range"},

	// time functions
	{"to_timestamp('2024-01-15 10:30:00')", "2024-01-15 10:30:00"},
	{"to_timestamp('15/01/2024 10:30', 'dd/MM/yyyy HH:mm')", "2024-01-15 10:30:00"},
	{"to_timestamp('2024-01-15 10:30:00.123', 'yyyy-MM-dd HH:mm:ss.SSS')", "2024-01-15 10:30:00.123"},
	{"to_timestamp('2024-01-15T10:30:00', 'yyyy-MM-dd''T''HH:mm:ss')", "2024-01-15 10:30:00"},
	{"to_timestamp('2024-01-15 11:30:00 +0100', 'yyyy-MM-dd HH:mm:ss Z')", "2024-01-15 10:30:00"},
	{"to_timestamp('20240115', 'yyyyMMdd')", "2024-01-15 00:00:00"},
	{"to_timestamp('bad', 'yyyy')", `error: to_timestamp: cannot parse "bad"`},
	{"try_to_timestamp('bad', 'yyyy')", "NULL"},
	{"to_timestamp(1705314600)", "2024-01-15 10:30:00"},
	{"to_timestamp('x')", `error: cannot cast "x" to TIMESTAMP`},
	{"try_to_timestamp('x')", "NULL"},
	{"to_date('2024-01-15 10:30:00')", "2024-01-15"},
	{"to_date('01/15/2024', 'MM/dd/yyyy')", "2024-01-15"},
	{"to_date('20240115', 'yyyyMMdd')", "2024-01-15"}, // what CAST('20240115' AS DATE)'s error advises
	{"TRY_CAST('20240115' AS DATE)", "NULL"},
	{"try_to_date('13/15/2024', 'MM/dd/yyyy')", "NULL"},
	{"to_date('2024-01-15', 'yyyy-MM-dd' || '')", "2024-01-15"},
	{"to_date('2024-01-15', NULL)", "NULL"},
	{"from_unixtime(1705314600)", "2024-01-15 10:30:00"},
	{"from_unixtime(1705314600, 'yyyy/MM/dd')", "2024/01/15"},
	{"from_unixtime(0, 'yyyy-MM-dd HH:mm:ss EEE')", "1970-01-01 00:00:00 Thu"},
	{"from_unixtime('1705314600')", "2024-01-15 10:30:00"},
	{"unix_timestamp(timestamp)", "1705314600"},
	{"unix_timestamp('2024-01-15 10:30:00')", "1705314600"},
	{"unix_timestamp('15/01/2024', 'dd/MM/yyyy')", "1705276800"},
	{"unix_timestamp() > 1700000000", "true"},
	{"date_format(timestamp, 'yyyy-MM-dd')", "2024-01-15"},
	{"date_format(timestamp, 'HH:mm:ss.SSS')", "10:30:00.500"},
	{"date_format('2024-01-15 10:30:00', 'MMM d, yyyy')", "Jan 15, 2024"},
	{"date_format(timestamp, 'yyyy-MM-dd''T''HH:mm:ssXXX')", "2024-01-15T10:30:00Z"},
	{"date_format(timestamp, 'EEEE h a')", "Monday 10 AM"},
	{"date_format(timestamp, 'D')", "error: date format \"D\": pattern \"D\" is not supported"},
	{"year(timestamp)", "2024"},
	{"month(timestamp)", "1"},
	{"day(timestamp)", "15"},
	{"dayofmonth(timestamp)", "15"},
	{"hour(timestamp)", "10"},
	{"minute(timestamp)", "30"},
	{"second(timestamp)", "0"},
	{"year('2023-06-01')", "2023"},
	{"hour(NULL)", "NULL"},
	{"year('x')", `error: year: cannot cast "x" to TIMESTAMP`},
}

func TestExpressions(t *testing.T) {
	for _, c := range exprCases {
		if c.want == "(the record's value)" {
			c.want = string(exprRecord.Value)
		}
		expr := strings.ReplaceAll(c.expr, "J[", "PARSE_JSON(value)[")
		t.Run(c.expr, func(t *testing.T) {
			got, err := evalExpr(expr, "raw", exprRecord)
			checkCell(t, got, err, c.want)
		})
	}
}

// TestExpressionsJSONFormat runs the JSON cases again with the 'json'
// value format: value['a'] instead of PARSE_JSON(value)['a'].
func TestExpressionsJSONFormat(t *testing.T) {
	n := 0
	for _, c := range exprCases {
		if !strings.Contains(c.expr, "J[") {
			continue
		}
		n++
		expr := strings.ReplaceAll(c.expr, "J[", "value[")
		t.Run(expr, func(t *testing.T) {
			got, err := evalExpr(expr, "json", exprRecord)
			checkCell(t, got, err, c.want)
		})
	}
	if n < 30 {
		t.Fatalf("only %d JSON cases", n)
	}
}

func evalExpr(expr, valueFormat string, r *Record) (string, error) {
	p, err := compileSelect(expr+" AS x", "", "raw", valueFormat)
	if err != nil {
		return "", fmt.Errorf("compile: %w", err)
	}
	cells, _, err := evalRow(p, r)
	if err != nil {
		return "", err
	}
	return cells[0], nil
}

func checkCell(t *testing.T, got string, err error, want string) {
	t.Helper()
	if msg, ok := strings.CutPrefix(want, "error: "); ok {
		if err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("got %q, %v; want an error containing %q", got, err, msg)
		}
		return
	}
	if err != nil || got != want {
		t.Errorf("got %q, %v; want %q", got, err, want)
	}
}

func TestThreeValuedLogic(t *testing.T) {
	vals := []string{"TRUE", "FALSE", "NULL"}
	and := [3][3]string{
		{"true", "false", "NULL"},
		{"false", "false", "false"},
		{"NULL", "false", "NULL"},
	}
	or := [3][3]string{
		{"true", "true", "true"},
		{"true", "false", "NULL"},
		{"true", "NULL", "NULL"},
	}
	not := [3]string{"false", "true", "NULL"}
	for i, a := range vals {
		for j, b := range vals {
			for _, c := range []struct{ op, want string }{{"AND", and[i][j]}, {"OR", or[i][j]}} {
				expr := fmt.Sprintf("CAST(%s AS BOOLEAN) %s CAST(%s AS BOOLEAN)", a, c.op, b)
				got, err := evalExpr(expr, "raw", exprRecord)
				checkCell(t, got, err, c.want)
			}
		}
		got, err := evalExpr("NOT CAST("+a+" AS BOOLEAN)", "raw", exprRecord)
		checkCell(t, got, err, not[i])
	}
	// short-circuit: the other side is not evaluated
	for expr, want := range map[string]string{
		"false AND 1/0 = 1": "false",
		"true OR 1/0 = 1":   "true",
		"NULL AND 1/0 = 1":  "error: division by zero",
		"1 AND 'yes'":       "true",
		"0 OR 'no'":         "false",
		"'x' AND true":      `error: "x" is not a boolean`,
	} {
		got, err := evalExpr(expr, "raw", exprRecord)
		checkCell(t, got, err, want)
	}
}

func TestWhere(t *testing.T) {
	p, err := compileSelect("offset, PARSE_JSON(value)['msg'] AS msg", "PARSE_JSON(value)['level'] IN ('ERROR', 'WARN')", "raw", "raw")
	if err != nil {
		t.Fatal(err)
	}
	recs := []string{
		`{"level":"ERROR","msg":"a"}`,
		`{"level":"INFO","msg":"b"}`,
		`{"msg":"c"}`, // NULL level: filtered out
		`{"level":"WARN","msg":"d"}`,
	}
	b := p.NewBatch(4, nil)
	var kept []bool
	for i, v := range recs {
		k, err := p.Append(b, &Record{Value: []byte(v), Offset: int64(100 + i)})
		if err != nil {
			t.Fatal(err)
		}
		kept = append(kept, k)
	}
	if fmt.Sprint(kept) != "[true false false true]" {
		t.Errorf("kept = %v", kept)
	}
	if b.Rows != 2 || fmt.Sprint(b.Line) != "[100 103]" || fmt.Sprint(row(b, 0), row(b, 1)) != "[100 a] [103 d]" {
		t.Errorf("batch: Rows=%d Line=%v %v %v", b.Rows, b.Line, row(b, 0), row(b, 1))
	}
	// errors in WHERE name it
	_, err = p.Append(b, &Record{Value: []byte(`nope`)})
	if err == nil || !strings.HasPrefix(err.Error(), "WHERE: value is not valid JSON") {
		t.Errorf("err = %v", err)
	}
	if b.Rows != 2 {
		t.Errorf("failed records were appended: Rows=%d", b.Rows)
	}
	p, _ = compileSelect("offset", "value", "raw", "raw")
	if _, err := p.Append(p.NewBatch(1, nil), &Record{Value: []byte(`x`)}); err == nil || err.Error() != `WHERE: "x" is not a boolean` {
		t.Errorf("err = %v", err)
	}
}

func TestFormats(t *testing.T) {
	rec := &Record{Key: []byte(`{"id": 7}`), Value: []byte(` {"a": {"b": [1, 2]}} `)}
	cases := []struct {
		list, kf, vf string
		rec          *Record
		want         string
	}{
		{"key, value", "raw", "raw", rec, `{"id": 7} |  {"a": {"b": [1, 2]}} `},
		{"key, value", "json", "json", rec, `{"id":7} | {"a":{"b":[1,2]}}`},
		{"key['id'], value['a']['b'][1]", "json", "json", rec, `7 | 2`},
		{"value['a']", "RAW", "JSON", rec, `{"b":[1,2]}`},
		{"PARSE_JSON(value::STRING)['a']['b']", "raw", "json", rec, `[1,2]`},
		{"key, value", "json", "json", &Record{}, "NULL | NULL"},
		{"key, value", "raw", "raw", &Record{}, "NULL | NULL"},
		{"key, value", "raw", "raw", &Record{Key: []byte{}, Value: []byte{}}, " | "},
		{"value", "raw", "json", &Record{Value: []byte(`"text"`)}, "text"},
		{"value", "raw", "json", &Record{Value: []byte(`null`)}, "NULL"},
		{"value IS NULL", "raw", "json", &Record{Value: []byte(`null`)}, "true"},
		{"value + 1", "raw", "json", &Record{Value: []byte(`41`)}, "42"},
	}
	for _, c := range cases {
		p, err := compileSelect(c.list, "", c.kf, c.vf)
		if err != nil {
			t.Fatalf("%s: %v", c.list, err)
		}
		cells, _, err := evalRow(p, c.rec)
		if got := strings.Join(cells, " | "); err != nil || got != c.want {
			t.Errorf("%s (%s/%s): got %q, %v; want %q", c.list, c.kf, c.vf, got, err, c.want)
		}
	}
	// a 'json' value that is not JSON fails the record, even unused
	p, _ := compileSelect("offset", "", "raw", "json")
	_, _, err := evalRow(p, &Record{Value: []byte(`{oops`)})
	if err == nil || !strings.Contains(err.Error(), "value is not valid JSON (value format 'json'): invalid character 'o'") {
		t.Errorf("err = %v", err)
	}
	p, _ = compileSelect("offset", "", "json", "raw")
	_, _, err = evalRow(p, &Record{Key: []byte(`[`)})
	if err == nil || !strings.Contains(err.Error(), "key is not valid JSON (key format 'json')") {
		t.Errorf("err = %v", err)
	}
}

func TestSelectStar(t *testing.T) {
	for _, list := range []string{"*", "k.*"} {
		p, err := compileSelect(list, "", "raw", "raw")
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(p.Columns, ","); got != "key,value,topic,partition,offset,timestamp,headers" {
			t.Fatalf("Columns = %s", got)
		}
		cells, _, err := evalRow(p, exprRecord)
		if err != nil {
			t.Fatal(err)
		}
		want := []string{"k1", string(exprRecord.Value), "app_logs", "3", "1234", "2024-01-15 10:30:00.5", `{"trace":"abc","n":null}`}
		if fmt.Sprint(cells) != fmt.Sprint(want) {
			t.Errorf("got  %q\nwant %q", cells, want)
		}
	}
	p, _ := compileSelect("*, offset + 1 AS next", "", "raw", "raw")
	cells, _, err := evalRow(p, &Record{Offset: 5, Headers: []Header{{Key: "x\"y", Value: []byte("\xff\n")}}})
	if err != nil || len(cells) != 8 || cells[7] != "6" || cells[6] != `{"x\"y":"\ufffd\n"}` || cells[5] != nullCell {
		t.Errorf("got %q, %v", cells, err)
	}
}

func TestColumnNames(t *testing.T) {
	p, err := compileSelect("a.value, value::STRING, CAST(PARSE_JSON(value)['ts'] AS TIMESTAMP), PARSE_JSON(value)['x'][0], 1 + 1, topic AS t, (offset)", "", "raw", "raw")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(p.Columns, ","); got != "value,value,ts,col4,col5,t,offset" {
		t.Errorf("Columns = %s", got)
	}
}

func TestCompileErrors(t *testing.T) {
	for _, c := range []struct{ list, where, vf, err string }{
		{"nope", "", "raw", "select item 1 (nope): unknown column nope (a Kafka record has key, value, topic, partition, offset, timestamp, headers)"},
		{"offset, k.nope", "", "raw", "select item 2 (k.nope): unknown column k.nope"},
		{"frobnicate(value)", "", "raw", "unknown function frobnicate (available: abs, ceil, ceiling, char_length,"},
		{"count(*)", "", "raw", "a Kafka pipe's SELECT is evaluated per record: aggregate function count(…) is not supported"},
		{"sum(offset)", "", "raw", "per record: aggregate function sum(…)"},
		{"row_number() OVER (ORDER BY offset)", "", "raw", "per record: window function row_number(…) OVER (…)"},
		{"lower(value) OVER (PARTITION BY key)", "", "raw", "per record: window function lower(…) OVER (…)"},
		{"(SELECT 1)", "", "raw", "per record: a subquery is not supported"},
		{"offset", "EXISTS (SELECT 1)", "raw", "WHERE: a Kafka pipe's SELECT is evaluated per record: a subquery"},
		{"offset IN (SELECT 1)", "", "raw", "per record: IN (subquery)"},
		{"lower(DISTINCT value)", "", "raw", "DISTINCT is only allowed in aggregates"},
		{"lower(value, key)", "", "raw", "lower takes 1 argument, got 2"},
		{"substr(value)", "", "raw", "substr takes 2 to 3 arguments, got 1"},
		{"concat()", "", "raw", "concat takes at least 1 arguments, got 0"},
		{"value['a']", "", "raw", "cannot index value: it is a STRING, not JSON (use PARSE_JSON(value::STRING)[…] or READ_KAFKA's 'json' value format)"},
		{"value::STRING['a']", "", "json", "cannot index value::STRING: it is a STRING"},
		{"offset[0]", "", "raw", "cannot index `offset`: it is a BIGINT"},
		{"PARSE_JSON(value)[true]", "", "raw", "an index is a 'key' or an integer"},
		{"CAST(value AS ARRAY<INT>)", "", "raw", "cannot cast to ARRAY<INT>"},
		{"CAST(value AS DECIMAL(40,2))", "", "raw", "DECIMAL(40, 2): precision must be 1..38"},
		{"INTERVAL 1 DAY", "", "raw", "INTERVAL is only supported as timestamp + INTERVAL"},
		{"value RLIKE '('", "", "raw", "bad regular expression"},
		{"regexp_extract(value, '(a)', 2)", "", "raw", "regexp_extract: group 2 does not exist: the pattern has 1"},
		{"GET_JSON_OBJECT(value, 'a.b')", "", "raw", `get_json_object: JSON path "a.b" must start with $`},
		{"GET_JSON_OBJECT(value, '$.a[*]')", "", "raw", "wildcards are not supported"},
		{"date_format(timestamp, 'yyyy-MM-dd Q')", "", "raw", `date_format: date format "yyyy-MM-dd Q": pattern "Q" is not supported`},
		{"date_format(timestamp, 'HHmmssSSS')", "", "raw", "must follow '.' or ','"},
		{"date_format(timestamp, 'yyyy''2''')", "", "raw", "literal digits are not supported"},
		{"date_format(timestamp, '''Mon''')", "", "raw", "literal text \"Mon\" is not supported"},
		{"offset", "nope = 1", "raw", "WHERE: unknown column nope"},
	} {
		_, err := compileSelect(c.list, c.where, "raw", c.vf)
		if err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("%s WHERE %s: err = %v, want %q", c.list, c.where, err, c.err)
		}
	}
	q, _ := sqlparse.ParseQuery("SELECT DISTINCT value FROM t")
	if _, err := Compile(q.Body.(*sqlast.Select), "raw", "raw"); err == nil || !strings.Contains(err.Error(), "SELECT DISTINCT is not supported") {
		t.Errorf("DISTINCT: %v", err)
	}
	q, _ = sqlparse.ParseQuery("SELECT key FROM t GROUP BY key")
	if _, err := Compile(q.Body.(*sqlast.Select), "raw", "raw"); err == nil || !strings.Contains(err.Error(), "GROUP BY is not supported") {
		t.Errorf("GROUP BY: %v", err)
	}
	if _, err := compileSelect("value", "", "raw", "avro"); err == nil || err.Error() != `value format "avro": READ_KAFKA supports 'raw' and 'json'` {
		t.Errorf("format: %v", err)
	}
	if _, err := Compile(nil, "raw", "raw"); err == nil {
		t.Error("nil SELECT compiled")
	}
}

func TestBatch(t *testing.T) {
	p := compilePipe(t, docPipe)
	b := p.NewBatch(2, nil)
	good := `{"time":"2024-01-15T10:30:00Z","level":"E","message":"m%d"}`
	for i := range 5 {
		if _, err := p.Append(b, &Record{Value: fmt.Appendf(nil, good, i), Offset: int64(i)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := p.Append(b, &Record{Value: []byte("bad"), Offset: 99}); err == nil {
		t.Fatal("bad record accepted")
	}
	if b.Rows != 5 || len(b.Line) != 5 || len(b.Cols[2].Text) != 5 || len(b.Cols[2].Null) != 5 {
		t.Fatalf("Rows=%d Line=%v", b.Rows, b.Line)
	}
	first := b.Cols[2].Text[0]
	ResetBatch(b)
	if b.Rows != 0 || len(b.Line) != 0 || len(b.Cols[0].Text) != 0 || len(b.Cols[0].Null) != 0 {
		t.Fatalf("after reset: %+v", b)
	}
	for i := range 3 {
		if _, err := p.Append(b, &Record{Value: fmt.Appendf(nil, good, 10+i), Offset: int64(i)}); err != nil {
			t.Fatal(err)
		}
	}
	if string(first) != "m0" || fmt.Sprint(row(b, 2)) != "[2024-01-15 10:30:00 E m12]" {
		t.Errorf("first=%q row=%v", first, row(b, 2))
	}
	// the output does not alias the record
	rec := &Record{Value: []byte(`{"message":"abc"}`)}
	b = p.NewBatch(1, nil)
	if _, err := p.Append(b, rec); err != nil {
		t.Fatal(err)
	}
	copy(rec.Value, "XXXXXXXXXXXXXXXXX")
	if got := string(b.Cols[2].Text[0]); got != "abc" {
		t.Errorf("cell changed with the record: %q", got)
	}
	if _, err := p.Append(&rowio.Batch{Cols: make([]rowio.Vector, 2)}, rec); err == nil {
		t.Error("batch with the wrong number of columns accepted")
	}
}

// TestOutputForChstore checks that cells use spellings chstore reads.
func TestOutputForChstore(t *testing.T) {
	for _, expr := range []string{"timestamp", "CAST(timestamp AS DATE)", "CAST('2024-01-15T10:30:00.123456789Z' AS TIMESTAMP)", "CAST('1900-01-01' AS TIMESTAMP)"} {
		got, err := evalExpr(expr, "raw", exprRecord)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := chstore.ParseTime(got); err != nil {
			t.Errorf("%s = %q: chstore cannot read it: %v", expr, got, err)
		}
	}
}

func TestConcurrentAppend(t *testing.T) {
	p := compilePipe(t, docPipe)
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for g := range 4 {
		wg.Go(func() {
			b := p.NewBatch(100, nil)
			for i := range 500 {
				v := fmt.Appendf(nil, `{"time":%d,"level":"L%d","message":"g%d-%d"}`, 1705314600+i, g, g, i)
				if _, err := p.Append(b, &Record{Value: v}); err != nil {
					errs <- err
					return
				}
			}
			for i := range 500 {
				if got, want := string(b.Cols[2].Text[i]), fmt.Sprintf("g%d-%d", g, i); got != want {
					errs <- fmt.Errorf("row %d: %q, want %q", i, got, want)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestFunctionsDocumented(t *testing.T) {
	names := Functions()
	if len(names) < 50 || names[0] != "abs" {
		t.Errorf("Functions() = %v", names)
	}
	for _, n := range names {
		if aggregates[n] {
			t.Errorf("%s is both a function and an aggregate", n)
		}
	}
}

// FuzzAppend feeds random value bytes through the documentation's pipe program and checks
// that Append never panics and either appends one well-formed row or none.
func FuzzAppend(f *testing.F) {
	for _, s := range []string{
		`{"time":"2024-01-15T10:30:00Z","level":"ERROR","message":"disk full"}`,
		`{"time":1705314600123,"level":null,"message":{"a":[1,2,{"b":"\u00e9\ud83d"}]}}`,
		`{"time":"2024/01/15 10:30:00+05:30","level":"x","message":"\\\"","message":1e400}`,
		`[[[[[[[[]]]]]]]]`, `"\ud800"`, `{"a":}`, "\xff", `{"time":"9999-12-31T23:59:59.999999999-23:59"}`,
	} {
		f.Add([]byte(s))
	}
	p := compilePipe(f, docPipe)
	extra, err := compileSelect(`value, PARSE_JSON(value)['a'][0]['b'], GET_JSON_OBJECT(value, '$.a[1].b'),
		TRY_CAST(PARSE_JSON(value)['time'] AS DECIMAL(10,2)), TRY_CAST(value AS TIMESTAMP), TRY_CAST(value AS DOUBLE),
		TRY_CAST(value AS BIGINT), value LIKE '%a_b%', value RLIKE 'x+', upper(value), substr(value, 2, 3),
		regexp_extract(value, '([0-9]+)', 1), TRY_PARSE_JSON(value), round(TRY_CAST(value AS DOUBLE), 2)`, "", "raw", "raw")
	if err != nil {
		f.Fatal(err)
	}
	jsonProg, err := compileSelect("value, value['time'], value['message'][0]", "", "raw", "json")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, v []byte) {
		for _, p := range []*Program{p, extra, jsonProg} {
			b := p.NewBatch(1, nil)
			kept, err := p.Append(b, &Record{Value: v})
			switch {
			case err != nil && (kept || b.Rows != 0):
				t.Fatalf("error %v but kept=%v Rows=%d", err, kept, b.Rows)
			case err == nil && (!kept || b.Rows != 1):
				t.Fatalf("kept=%v Rows=%d", kept, b.Rows)
			}
			for _, c := range b.Cols {
				if len(c.Text) != b.Rows || len(c.Null) != b.Rows {
					t.Fatalf("column of %d cells for %d rows", len(c.Text), b.Rows)
				}
			}
		}
	})
}

// BenchmarkDocPipeProgram measures records/s through the documentation's
// pipe's SELECT for ~100-byte JSON log lines, into the vectors a Kafka pipe
// uses (the TIMESTAMP as a time). "direct" is the program as pipes run it,
// its CAST(PARSE_JSON(…)['key'] AS T) columns writing their cells
// themselves; "general" evaluates them through the general steps. Run both
// and read the ratio:
//
//	go test ./internal/recordeval -run XXX -bench DocPipeProgram
func BenchmarkDocPipeProgram(b *testing.B) {
	levels := []string{"INFO", "WARN", "ERROR", "DEBUG"}
	recs := make([]*Record, 1024)
	size := 0
	for i := range recs {
		v := fmt.Appendf(nil, `{"time":"2026-06-01T12:%02d:%02d.%03dZ","level":"%s","message":"request %d served in %d ms"}`,
			i/60%60, i%60, i%1000, levels[i%4], i, i%250)
		recs[i] = &Record{Value: v, Topic: "app_logs", Offset: int64(i)}
		size += len(v)
	}
	for _, mode := range []string{"direct", "general"} {
		b.Run(mode, func(b *testing.B) {
			p := compilePipe(b, docPipe)
			p.general = mode == "general"
			typed := make([]bool, len(p.Columns))
			for i := range typed {
				typed[i] = p.Typed(i) != ""
			}
			b.SetBytes(int64(size / len(recs)))
			b.ReportAllocs()
			batch := p.NewBatch(4096, typed)
			ev := p.Evaluator()
			n := 0
			for b.Loop() {
				if batch.Rows == 4096 {
					ResetBatch(batch)
				}
				if _, err := ev.Append(batch, recs[n%len(recs)]); err != nil {
					b.Fatal(err)
				}
				n++
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
		})
	}
}

// TestAppendPanicIsBadRecord: a panic while evaluating a record (here a
// nil record, which nothing else can send) is that record's error; the
// batch stays as it was and takes the next record.
func TestAppendPanicIsBadRecord(t *testing.T) {
	p, err := compileSelect("offset, value::STRING", "", "raw", "raw")
	if err != nil {
		t.Fatal(err)
	}
	b := p.NewBatch(4, nil)
	if _, err := p.Append(b, &Record{Value: []byte("a"), Offset: 1}); err != nil {
		t.Fatal(err)
	}
	kept, err := p.Append(b, nil)
	if kept || err == nil || !strings.Contains(err.Error(), "could not be evaluated") {
		t.Fatalf("Append(nil) = %v, %v", kept, err)
	}
	if _, err := p.Append(b, &Record{Value: []byte("b"), Offset: 2}); err != nil {
		t.Fatal(err)
	}
	if b.Rows != 2 || fmt.Sprint(row(b, 0), row(b, 1)) != "[1 a] [2 b]" || fmt.Sprint(b.Line) != "[1 2]" {
		t.Errorf("batch: Rows=%d Line=%v %v %v", b.Rows, b.Line, row(b, 0), row(b, 1))
	}
}

// TestTypedBatch: columns asked for typed hold the values their text
// would show; the others stay text; a record that fails leaves a typed
// batch as it was.
func TestTypedBatch(t *testing.T) {
	p, err := compileSelect(`CAST(PARSE_JSON(VALUE::STRING)['time'] AS TIMESTAMP) AS ts, CAST(PARSE_JSON(VALUE::STRING)['d'] AS DATE) AS d,
		PARSE_JSON(VALUE::STRING)['n']::BIGINT AS n, PARSE_JSON(VALUE::STRING)['f']::DOUBLE AS f, "offset" AS o, PARSE_JSON(VALUE::STRING)['s']::STRING AS s`, "", "raw", "raw")
	if err != nil {
		t.Fatal(err)
	}
	wantTyped := []string{"TIMESTAMP", "DATE", "BIGINT", "DOUBLE", "BIGINT", ""}
	for i, w := range wantTyped {
		if got := p.Typed(i); got != w {
			t.Errorf("Typed(%d) = %q, want %q", i, got, w)
		}
	}
	inputs := []string{
		`{"time": "2026-12-02 10:01:02.5", "d": "2026-12-02", "n": 42, "f": 1.25, "s": "x"}`,
		`{"time": null, "n": "-7", "f": "1e300", "s": null}`,
		`{"time": "2026-12-02T10:01:02Z", "d": "2026-01-31", "n": 9223372036854775807, "f": 3}`,
	}
	typed := p.NewBatch(len(inputs), []bool{true, true, true, true, true, true})
	text := p.NewBatch(len(inputs), nil)
	for i, v := range inputs {
		for _, b := range []*rowio.Batch{typed, text} {
			if _, err := p.Append(b, &Record{Value: []byte(v), Offset: int64(i)}); err != nil {
				t.Fatalf("record %d: %v", i, err)
			}
		}
	}
	if typed.Cols[5].Text == nil || typed.Cols[0].Text != nil || len(typed.Cols[0].Time) != len(inputs) || len(typed.Cols[2].Int) != len(inputs) || len(typed.Cols[3].Float) != len(inputs) {
		t.Fatalf("typed batch holds the wrong vectors: %+v", typed.Cols)
	}
	for r := range inputs {
		for c, v := range typed.Cols {
			want := row(text, r)[c]
			var got string
			switch {
			case v.Null[r]:
				got = nullCell
			case v.Int != nil:
				got = strconv.FormatInt(v.Int[r], 10)
			case v.Float != nil:
				got = strconv.FormatFloat(v.Float[r], 'g', -1, 64)
			case v.Time != nil && c == 1:
				got = v.Time[r].Format("2006-01-02")
			case v.Time != nil:
				got = v.Time[r].Format("2006-01-02 15:04:05.999999999")
			default:
				got = string(v.Text[r])
			}
			if got != want {
				t.Errorf("row %d column %s: typed %q, text %q", r, p.Columns[c], got, want)
			}
		}
	}
	// A record failing in a later column appends nothing.
	if _, err := p.Append(typed, &Record{Value: []byte(`{"time": "2026-12-02 10:00:00", "n": "many"}`)}); err == nil {
		t.Fatal("a bad BIGINT was accepted")
	}
	for c, v := range typed.Cols {
		if n := len(v.Null); n != len(inputs) || len(v.Int)+len(v.Float)+len(v.Time)+len(v.Text) != len(inputs) {
			t.Errorf("column %d grew on a failed record: %d nulls", c, n)
		}
	}
}

// fieldCastLists are SELECT lists whose columns are mostly
// CAST(PARSE_JSON(…)['key'] AS T), the columns that write their cells
// themselves (castNode.emit); each list stops at its first failing
// column, so failing casts get lists of their own.
var fieldCastLists = []string{
	`CAST(PARSE_JSON(value::STRING)['t'] AS TIMESTAMP), PARSE_JSON(value::STRING)['s']::STRING,
	 CAST(PARSE_JSON(value::STRING)['t'] AS STRING), PARSE_JSON(value::STRING)['s']::VARCHAR(3),
	 offset, CAST(PARSE_JSON(value::STRING)['missing'] AS STRING)`,
	`TRY_CAST(PARSE_JSON(value::STRING)['t'] AS TIMESTAMP), TRY_CAST(PARSE_JSON(value::STRING)['s'] AS TIMESTAMP),
	 TRY_CAST(PARSE_JSON(value::STRING)['s'] AS BIGINT), TRY_CAST(PARSE_JSON(value::STRING)['t'] AS DOUBLE),
	 TRY_CAST(PARSE_JSON(value::STRING)['t'] AS DATE), TRY_CAST(PARSE_JSON(value::STRING)['s'] AS DECIMAL(5,2)),
	 TRY_CAST(PARSE_JSON(value::STRING)['s'] AS BOOLEAN), CAST(PARSE_JSON(value::STRING)['s'] AS JSON)`,
	`CAST(TRY_PARSE_JSON(value::STRING)['s'] AS STRING), TRY_CAST(TRY_PARSE_JSON(value::STRING)['t'] AS TIMESTAMP)`,
	`CAST(PARSE_JSON(value::STRING)['s'] AS TIMESTAMP)`,
	`CAST(PARSE_JSON(value::STRING)['t'] AS BIGINT), PARSE_JSON(value::STRING)['s']::STRING`,
}

// bothWays compiles list twice: with its direct field casts, and with the
// general steps only.
func bothWays(tb testing.TB, list string) [2]*Program {
	tb.Helper()
	var ps [2]*Program
	for k := range ps {
		p, err := compileSelect(list, "", "raw", "raw")
		if err != nil {
			tb.Fatalf("%s: %v", list, err)
		}
		p.general = k == 1
		ps[k] = p
	}
	return ps
}

// appendBothWays appends v through both programs of bothWays, with typed
// vectors where they have them or with text only, and fails when the two
// differ in anything.
func appendBothWays(t *testing.T, ps [2]*Program, v []byte) {
	t.Helper()
	p := ps[0]
	typed := make([]bool, len(p.Columns))
	for i := range typed {
		typed[i] = p.Typed(i) != ""
	}
	for _, ty := range [][]bool{nil, typed} {
		var bs [2]*rowio.Batch
		var kept [2]bool
		var errs [2]string
		for k, q := range ps {
			bs[k] = q.NewBatch(2, ty)
			// A first record (kept by most lists), so that a failing
			// second one must leave it as it was.
			_, _ = q.Append(bs[k], &Record{Value: []byte(`{"t":"2024-01-15 10:30:00","s":"2024-01-15"}`), Offset: 1})
			var err error
			kept[k], err = q.Append(bs[k], &Record{Value: v, Offset: 2})
			if err != nil {
				errs[k] = err.Error()
			}
		}
		if kept[0] != kept[1] || errs[0] != errs[1] {
			t.Fatalf("%q: direct kept=%v err=%q; general kept=%v err=%q", v, kept[0], errs[0], kept[1], errs[1])
		}
		if !reflect.DeepEqual(bs[0], bs[1]) {
			t.Fatalf("%q (typed %v): direct %+v\ngeneral %+v", v, ty, bs[0], bs[1])
		}
	}
}

// TestFieldCastDirect: the columns that write their cells themselves give
// exactly what the general steps give, errors included.
func TestFieldCastDirect(t *testing.T) {
	values := []string{
		`{"t":"2024-01-15T10:30:00.123Z","s":"hello"}`, `{"t":"2024/01/15 10:30:00+05:30","s":"héllo"}`,
		`{"t":1705314600,"s":"12.5"}`, `{"t":"yesterday","s":"\u00e9\n"}`, `{"t":null,"s":null}`, `{"t":"","s":""}`,
		`{"t":" 2024-01-15 ","s":" true "}`, `{"t":{"a":1},"s":[1, 2]}`, `{"s":"a","s":"b"}`, `{"t":"20240115","s":"20240115"}`,
		`{"t":"9999-12-31T23:59:59.999999999-23:59","s":"\ud800"}`, `not json`, `[1,2]`, `"{\"t\":\"2024-01-15\"}"`, `null`, ``,
		"{\"t\":\"2024-01-15\",\"s\":\"\xff\"}",
	}
	for _, list := range fieldCastLists {
		ps := bothWays(t, list)
		if !slices.ContainsFunc(ps[0].fields, func(f *castNode) bool { return f != nil }) {
			t.Fatalf("%s: no column writes its cell itself", list)
		}
		for _, v := range values {
			appendBothWays(t, ps, []byte(v))
		}
	}
}

// FuzzFieldCastDirect is TestFieldCastDirect on any record value.
func FuzzFieldCastDirect(f *testing.F) {
	for _, s := range []string{`{"t":"2024-01-15T10:30:00Z","s":"disk full"}`, `{"t":17e2,"s":"\\u0041"}`, `{"s":"a","s":1}`} {
		f.Add([]byte(s))
	}
	var progs [][2]*Program
	for _, list := range fieldCastLists {
		progs = append(progs, bothWays(f, list))
	}
	f.Fuzz(func(t *testing.T, v []byte) {
		for _, ps := range progs {
			appendBothWays(t, ps, v)
		}
	})
}
