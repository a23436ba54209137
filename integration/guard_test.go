//go:build integration

package integration

import (
	"errors"
	"strings"
	"testing"

	"github.com/lakepipe/lakepipe/internal/chsql"
	"github.com/lakepipe/lakepipe/internal/query"
)

// TestGuardCatalogClosed checks that statements through lakepipe cannot
// reach lakepipe's own databases (the catalog, with every connection's
// secret), ClickHouse's system tables or table functions that reach past
// the user's tables, however the name is spelled or nested; and that the
// documented ways in (SHOW, DESC, load_history('t'), streams, dynamic
// tables) and ordinary queries still work.
func TestGuardCatalogClosed(t *testing.T) {
	s := newStack(t)
	s.withWorker()
	s.put("in/a.csv", []byte("1,a\n2,b\n"))
	vol := s.volume("guard_vol", "", false)
	conn := s.connection()
	s.run(`CREATE TABLE t (id INT, name STRING)`)
	s.run(`COPY INTO t FROM VOLUME ` + vol + ` USING CSV SUBDIRECTORY 'in/'`)

	const catalogMsg = "lakepipe's own tables cannot be read or written by SQL"
	for _, q := range []string{
		`SELECT name, secret FROM lakepipe.objects WHERE kind = 'connection'`,
		"SELECT name, secret FROM `LakePipe`.`objects`",
		`SELECT name, secret FROM "lakepipe"."objects"`,
		`SELECT * FROM (SELECT secret FROM lakepipe.objects) x`,
		`SELECT t.id, o.secret FROM t JOIN lakepipe.objects o ON t.name = o.name`,
		`SELECT name FROM t UNION ALL SELECT secret FROM lakepipe.objects`,
		`WITH c AS (SELECT secret FROM lakepipe.objects) SELECT * FROM c`,
		`SELECT id FROM t WHERE name IN (SELECT secret FROM lakepipe.objects)`,
		`INSERT INTO t SELECT 1, secret FROM lakepipe.objects`,
	} {
		err := s.mustFail(q, "lakepipe.objects", catalogMsg, "SHOW CONNECTIONS")
		var ge *query.GuardError
		if !errors.As(err, &ge) {
			t.Errorf("%s: error %T, want *query.GuardError", q, err)
		}
	}
	s.mustFail(`SELECT * FROM lakepipe_trash.x`, "lakepipe_trash.x", catalogMsg)

	// Writes are refused before anything runs.
	s.mustFail(`INSERT INTO lakepipe.load_history (table_name, file_path) VALUES ('`+s.Schema+`.t', 'forged.csv')`, "lakepipe.load_history", catalogMsg)
	s.mustFail(`DELETE FROM lakepipe.objects WHERE kind = 'connection'`, "lakepipe.objects", catalogMsg)
	s.mustFail(`UPDATE lakepipe.objects SET secret = '' WHERE name = '`+conn+`'`, "lakepipe.objects", catalogMsg)
	s.mustFail(`CREATE TABLE lakepipe.planted (a INT)`, "lakepipe.planted", catalogMsg)
	if n, err := s.Store.Strings(s.Ctx, "SELECT count() FROM lakepipe.load_history WHERE file_path = 'forged.csv'"); err != nil || len(n) != 1 || n[0] != "0" {
		t.Errorf("forged load_history rows: %v, %v", n, err)
	}
	if n, err := s.Store.Strings(s.Ctx, "SELECT count() FROM system.tables WHERE database = 'lakepipe' AND name = 'planted'"); err != nil || len(n) != 1 || n[0] != "0" {
		t.Errorf("lakepipe.planted was created: %v, %v", n, err)
	}

	// ClickHouse's system tables.
	const systemMsg = "ClickHouse's system tables cannot be read or written through lakepipe"
	s.mustFail(`SELECT name FROM system.tables`, "system.tables", systemMsg)
	s.mustFail(`SELECT id FROM t WHERE name IN (SELECT name FROM System.Tables)`, "system.tables", systemMsg)
	s.mustFail(`SELECT * FROM INFORMATION_SCHEMA.TABLES`, "information_schema.tables", systemMsg)

	// Table functions and functions that reach past the user's tables.
	s.mustFail(`SELECT * FROM remote('127.0.0.1', 'lakepipe', 'objects')`, "remote(", "only load_history('t'), pipe_history('p') and READ_KAFKA")
	s.mustFail(`SELECT * FROM url('http://127.0.0.1:8123/?query=SELECT+1', 'CSV', 'a String')`, "url(", "not available")
	s.mustFail(`SELECT * FROM file('/etc/passwd', 'CSV', 'a String')`, "file(", "not available")
	s.mustFail(`SELECT file('/etc/passwd')`, "file(", "not available in lakepipe SQL")
	err := s.mustFail(`SELECT dictGet('lakepipe.d', 'secret', toUInt64(1))`, "dictget(", "not available in lakepipe SQL")
	var rf *chsql.RefusedFunction
	if !errors.As(err, &rf) {
		t.Errorf("dictGet: error %T, want *chsql.RefusedFunction", err)
	}

	// The documented ways in still work.
	if got := rowsText(s.run(`SHOW CONNECTIONS LIKE '` + conn + `'`)); !strings.Contains(got, conn) || strings.Contains(got, s3SecretKey) {
		t.Errorf("SHOW CONNECTIONS:\n%s", indent(got))
	}
	wantRows(t, "load_history('t')", s.run(`SELECT file_path, status FROM load_history('t')`), "in/a.csv|LOADED")
	if got := rowsText(s.run(`SHOW TABLES`)); !strings.Contains(got, "|t|") {
		t.Errorf("SHOW TABLES:\n%s", indent(got))
	}
	if got := rowsText(s.run(`DESC TABLE t`)); !strings.HasPrefix(got, "id|") || !strings.Contains(got, "\nname|") {
		t.Errorf("DESC TABLE t:\n%s", indent(got))
	}
	s.run(`SELECT * FROM DIRECTORY(VOLUME ` + vol + `)`)

	// Ordinary statements, streams and dynamic tables.
	s.run(`CREATE TABLE STREAM t_changes ON TABLE t`)
	s.run(`INSERT INTO t VALUES (3, 'c')`)
	s.run(`UPDATE t SET name = 'B' WHERE id = 2`)
	s.run(`DELETE FROM t WHERE id = 1`)
	wantRows(t, "t", s.run(`WITH x AS (SELECT id, name FROM t) SELECT a.id, b.name FROM x a JOIN t b ON a.id = b.id WHERE a.id IN (SELECT id FROM t) ORDER BY a.id`), "2|B", "3|c")
	s.waitStream(`SELECT id, name, __change_type FROM t_changes`,
		"1|a|DELETE", "2|B|UPDATE_AFTER", "2|b|UPDATE_BEFORE", "3|c|INSERT")
	s.run(`CREATE DYNAMIC TABLE t_count REFRESH INTERVAL 1 HOUR AS SELECT COUNT(*) AS n FROM t`)
	s.dropAtEnd("DYNAMIC TABLE", "t_count")
	wantRows(t, "t_count", s.run(`SELECT n FROM t_count`), "2")
	s.run(`REFRESH DYNAMIC TABLE t_count`)
	if got := rowsText(s.run(`SHOW DYNAMIC TABLE REFRESH HISTORY`)); !strings.Contains(got, "t_count") {
		t.Errorf("SHOW DYNAMIC TABLE REFRESH HISTORY:\n%s", indent(got))
	}
	s.mustFail(`CREATE DYNAMIC TABLE leak REFRESH INTERVAL 1 HOUR AS SELECT name, secret FROM lakepipe.objects`, "lakepipe.objects", catalogMsg)
	s.mustFail(`CREATE TABLE STREAM leak ON TABLE lakepipe.objects`, "lakepipe.objects", catalogMsg)

	// And through `lakepipe sql`, the command of the report.
	out := s.sqlCLI("", "-e", "SELECT name, secret FROM lakepipe.objects WHERE kind='connection'")
	if out.Code == 0 || strings.Contains(out.Stdout+out.Stderr, s3SecretKey) {
		t.Errorf("lakepipe sql read the catalog: code %d\nstdout: %s\nstderr: %s", out.Code, out.Stdout, out.Stderr)
	}
	checkMessage(t, out.Stderr, "lakepipe.objects", catalogMsg)
}
