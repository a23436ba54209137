//go:build integration

package integration

import (
	"bufio"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// failingScript has a statement that fails at run time on line 7 (its
// second line; the statement starts on line 6) and a syntax error on line 10.
const failingScript = `-- a script with mistakes
CREATE TABLE before_err (x INT);
INSERT INTO before_err VALUES (1), (2);

-- the next statement names a table that does not exist
SELECT x
  FROM no_such_table;
CREATE TABLE after_err (x INT);
INSERT INTO after_err
  VALUES (1) oops;
CREATE TABLE after_syntax (x INT);
`

func (s *Stack) tableNames() string {
	s.T.Helper()
	var names []string
	for _, r := range table(s.run(`SHOW TABLES`)) {
		names = append(names, r[1])
	}
	return strings.Join(names, ",")
}

// TestCLIScriptErrors checks that `lakepipe sql -f` reports where a script
// failed and stops there, and that --continue-on-error runs the rest but
// still exits non-zero.
func TestCLIScriptErrors(t *testing.T) {
	t.Run("stops at the first error", func(t *testing.T) {
		s := newStack(t)
		file := writeFile(t, "script.sql", failingScript)
		out := s.sqlCLI("", "-f", file)
		if out.Code != 1 {
			t.Errorf("exit code %d, want 1", out.Code)
		}
		for _, want := range []string{file + ": statement 3 (line 6)", "no_such_table", "3 statement(s) after it were not run", "--continue-on-error"} {
			if !strings.Contains(out.Stderr, want) {
				t.Errorf("stderr does not say %q:\n%s", want, out.Stderr)
			}
		}
		checkMessage(t, out.Stderr)
		if got := s.tableNames(); got != "before_err" {
			t.Errorf("tables after the failed script: %q, want only before_err (nothing after the error runs)", got)
		}
		if got := rowsText(s.run(`SELECT x FROM before_err ORDER BY x`)); got != "1\n2" {
			t.Errorf("before_err holds %q, want the rows inserted before the error", got)
		}
	})

	t.Run("continue-on-error", func(t *testing.T) {
		s := newStack(t)
		file := writeFile(t, "script.sql", failingScript)
		out := s.sqlCLI("", "--continue-on-error", "-f", file)
		if out.Code != 1 {
			t.Errorf("exit code %d, want 1: a statement failed", out.Code)
		}
		for _, want := range []string{"statement 3 (line 6)", "no_such_table", "line 10", "oops"} {
			if !strings.Contains(out.Stderr, want) {
				t.Errorf("stderr does not say %q:\n%s", want, out.Stderr)
			}
		}
		if strings.Contains(out.Stderr, "not run") {
			t.Errorf("stderr says statements were skipped:\n%s", out.Stderr)
		}
		if got := s.tableNames(); got != "after_err,after_syntax,before_err" {
			t.Errorf("tables after the script: %q, want every statement after the errors to have run", got)
		}
	})

	t.Run("stdin", func(t *testing.T) {
		s := newStack(t)
		out := s.sqlCLI("SELECT 1 AS one;\n\nSELECT *\n  FROM nowhere_table;\n", "--format", "csv")
		if out.Code != 1 || !strings.Contains(out.Stderr, "stdin: statement 2 (line 3)") || !strings.Contains(out.Stderr, "nowhere_table") {
			t.Errorf("exit %d, stderr %q; want statement 2 (line 3) naming nowhere_table", out.Code, out.Stderr)
		}
		if out.Stdout != "one\n1\n" {
			t.Errorf("stdout %q, want the first statement's result", out.Stdout)
		}
	})
}

// TestCLICheckOffline checks that `lakepipe sql --check -f` validates a
// script without any server: ClickHouse is pointed at a dead port.
func TestCLICheckOffline(t *testing.T) {
	dead := []string{"LAKEPIPE_CLICKHOUSE_ADDR=127.0.0.1:1", "LAKEPIPE_TEMPORAL_ADDR=127.0.0.1:1"}
	good := `CREATE STORAGE CONNECTION IF NOT EXISTS my_oss_conn TYPE OSS access_id = 'id' access_key = 'key' ENDPOINT = 'oss-cn-shanghai.aliyuncs.com';
CREATE EXTERNAL VOLUME IF NOT EXISTS my_data_vol LOCATION 'oss://my-bucket/data/' USING CONNECTION my_oss_conn DIRECTORY = (ENABLE = TRUE, AUTO_REFRESH = FALSE) RECURSIVE = TRUE COMMENT 'v';
` + salesSourceDDL + `;
` + salesInsert + `;
COPY INTO VOLUME my_data_vol SUBDIRECTORY 'export/' FROM TABLE sales_source FILE_FORMAT = (TYPE = CSV);
SELECT * FROM VOLUME my_data_vol USING CSV FILES('export/part00001.csv');
CREATE PIPE IF NOT EXISTS sales_pipe INGEST_MODE = 'LIST_PURGE' VIRTUAL_CLUSTER = 'DEFAULT' COMMENT 'p' AS COPY INTO sales_ods FROM VOLUME pipe_vol USING CSV PURGE = TRUE;
`
	dir := t.TempDir()
	t.Run("valid script", func(t *testing.T) {
		out := cli(t, dir, dead, "", "sql", "--check", "-f", writeFile(t, "good.sql", good))
		if out.Code != 0 || !strings.Contains(out.Stdout, "7 statements OK") {
			t.Errorf("exit %d\nstdout %s\nstderr %s\nwant 7 statements OK without a server", out.Code, out.Stdout, out.Stderr)
		}
	})
	t.Run("bad type", func(t *testing.T) {
		bad := "CREATE TABLE ok1 (a INT);\n\nCREATE TABLE t (\n  a INT,\n  b DECIMAL(50,2)\n);\nCREATE TABLE t2 (c WHATEVER);\n"
		out := cli(t, dir, dead, "", "sql", "--check", "-f", writeFile(t, "bad.sql", bad))
		if out.Code != 1 {
			t.Errorf("exit code %d, want 1", out.Code)
		}
		for _, want := range []string{"statement 2 (line 3)", "DECIMAL(50,2)", "line 7", "WHATEVER", "2 of 3 statements have errors"} {
			if !strings.Contains(out.Stderr, want) {
				t.Errorf("stderr does not say %q:\n%s", want, out.Stderr)
			}
		}
		if strings.Contains(out.Stderr, "127.0.0.1:1") || strings.Contains(out.Stderr, "does not answer") {
			t.Errorf("--check tried to reach a server:\n%s", out.Stderr)
		}
	})
	t.Run("bad options", func(t *testing.T) {
		bad := "COPY INTO t FROM VOLUME v USING CSV OPTIONS('hedaer'='true');\nCREATE PIPE p INGEST_MODE = 'SOMETIMES' AS COPY INTO t FROM VOLUME v USING CSV;\n"
		out := cli(t, dir, dead, "", "sql", "--check", "-f", writeFile(t, "opts.sql", bad))
		for _, want := range []string{"statement 1 (line 1)", "hedaer", "statement 2 (line 2)", "SOMETIMES"} {
			if !strings.Contains(out.Stderr, want) {
				t.Errorf("stderr does not say %q:\n%s", want, out.Stderr)
			}
		}
		if out.Code != 1 {
			t.Errorf("exit code %d, want 1", out.Code)
		}
	})
	t.Run("running needs the server", func(t *testing.T) {
		// The same dead port without --check fails clearly, proving the
		// runs above really had no server.
		out := cli(t, dir, dead, "", "sql", "-e", "SELECT 1")
		if out.Code != 1 || !strings.Contains(out.Stderr, "127.0.0.1:1") {
			t.Errorf("exit %d, stderr %q; want a failure naming the ClickHouse address", out.Code, out.Stderr)
		}
		checkMessage(t, out.Stderr)
	})
}

// TestCLIFormats checks the csv, tsv, json and table outputs of `lakepipe
// sql --format`, with quoting, NULL and decimals.
func TestCLIFormats(t *testing.T) {
	s := newStack(t)
	s.run(`CREATE TABLE f (id INT, name STRING, price DECIMAL(10,2), note STRING)`)
	s.run(`INSERT INTO f VALUES (1, 'plain', 1.50, NULL), (2, 'a,b "q"', 2.00, 'tab	in')`)
	query := `SELECT id, name, price, note FROM f ORDER BY id`

	cases := []struct {
		format string
		want   string
	}{
		{"csv", "id,name,price,note\n1,plain,1.50,NULL\n2,\"a,b \"\"q\"\"\",2.00,tab\tin\n"},
		{"tsv", "id\tname\tprice\tnote\n1\tplain\t1.50\tNULL\n2\ta,b \"q\"\t2.00\ttab\\tin\n"},
	}
	for _, c := range cases {
		t.Run(c.format, func(t *testing.T) {
			out := s.sqlCLI("", "--format", c.format, "-e", query)
			if out.Code != 0 || out.Stdout != c.want {
				t.Errorf("exit %d, stderr %q\nstdout:\n%q\nwant:\n%q", out.Code, out.Stderr, out.Stdout, c.want)
			}
		})
	}

	t.Run("json", func(t *testing.T) {
		out := s.sqlCLI("", "--format", "json", "-e", query+"; CREATE TABLE g (x INT)")
		if out.Code != 0 {
			t.Fatalf("exit %d: %s", out.Code, out.Stderr)
		}
		var got []map[string]any
		sc := bufio.NewScanner(strings.NewReader(out.Stdout))
		for sc.Scan() {
			var m map[string]any
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				t.Fatalf("line %q is not JSON: %v", sc.Text(), err)
			}
			got = append(got, m)
		}
		want := []map[string]any{
			{"id": 1.0, "name": "plain", "price": "1.50", "note": nil},
			{"id": 2.0, "name": `a,b "q"`, "price": "2.00", "note": "tab\tin"},
			{"message": "table " + s.Schema + ".g created"},
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("json output:\n%s\nparsed %v\nwant %v", out.Stdout, got, want)
		}
		// Columns keep their order.
		if !strings.HasPrefix(out.Stdout, `{"id":1,"name":"plain","price":"1.50","note":null}`) {
			t.Errorf("json rows do not keep the column order: %s", out.Stdout)
		}
	})

	t.Run("table", func(t *testing.T) {
		out := s.sqlCLI("", "-e", query)
		// A tab shows escaped, as in TSV: the row stays aligned.
		want := []string{"| id | name    | price | note    |", "| 1  | plain   | 1.50  | NULL    |", `| 2  | a,b "q" | 2.00  | tab\tin |`, "2 rows"}
		for _, w := range want {
			if !strings.Contains(out.Stdout, w) {
				t.Errorf("table output lacks %q:\n%s", w, out.Stdout)
			}
		}
	})

	t.Run("bad format", func(t *testing.T) {
		out := s.sqlCLI("", "--format", "xml", "-e", query)
		if out.Code != 2 || !strings.Contains(out.Stderr, "xml") {
			t.Errorf("exit %d, stderr %q; want usage error 2 naming xml", out.Code, out.Stderr)
		}
	})
}
