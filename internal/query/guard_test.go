package query

import (
	"errors"
	"strings"
	"testing"

	"github.com/lakepipe/lakepipe/internal/chsql"
	"github.com/lakepipe/lakepipe/internal/core"
	"github.com/lakepipe/lakepipe/internal/sqlparse"
)

func TestGuardRefuses(t *testing.T) {
	e := configured(core.Config{Workspace: "default", Schema: "public"})
	tests := []struct {
		sql  string
		want string // in the message
	}{
		// Every way of naming the catalog.
		{"SELECT name, secret FROM lakepipe.objects WHERE kind = 'connection'", "lakepipe.objects: lakepipe's own tables cannot be read or written by SQL; use SHOW CONNECTIONS"},
		{"SELECT * FROM LAKEPIPE.OBJECTS", "lakepipe.objects: lakepipe's own"},
		{"SELECT * FROM `LakePipe`.`objects`", "LakePipe.objects: lakepipe's own"},
		{`SELECT * FROM "lakepipe"."objects"`, "lakepipe.objects: lakepipe's own"},
		{`SELECT * FROM "LAKEPIPE".objects o`, "LAKEPIPE.objects"},
		{"SELECT * FROM default.lakepipe.objects", "default.lakepipe.objects"},
		{"SELECT * FROM lakepipe.meta", "lakepipe.meta"},
		{"SELECT * FROM lakepipe.load_history", "lakepipe.load_history"},
		{"SELECT * FROM lakepipe_trash.public__t__1", "lakepipe_trash.public__t__1"},
		{"SELECT * FROM lakepipe_changes.public__t", "lakepipe_changes.public__t"},
		{"SELECT * FROM lakepipe_tmp.q_0123", "lakepipe_tmp.q_0123"},
		{"SELECT * FROM lakepipe_locks.flush_0123", "lakepipe_locks.flush_0123"},
		{"SELECT * FROM `lakepipe_changes_old`.x", "lakepipe_changes_old.x"},
		// Every place a table can hide in a query.
		{"SELECT * FROM (SELECT secret FROM lakepipe.objects) s", "lakepipe.objects"},
		{"SELECT * FROM t JOIN lakepipe.objects o ON t.a = o.name", "lakepipe.objects"},
		{"SELECT * FROM t LEFT JOIN (SELECT * FROM u CROSS JOIN lakepipe.objects) x ON t.a = x.a", "lakepipe.objects"},
		{"SELECT * FROM t, lakepipe.objects", "lakepipe.objects"},
		{"SELECT a FROM t UNION ALL SELECT secret FROM lakepipe.objects", "lakepipe.objects"},
		{"SELECT a FROM t UNION ALL (SELECT secret FROM lakepipe.objects ORDER BY 1 LIMIT 1)", "lakepipe.objects"},
		{"WITH x AS (SELECT * FROM lakepipe.objects) SELECT * FROM x", "lakepipe.objects"},
		{"WITH objects AS (SELECT 1 AS a) SELECT * FROM lakepipe.objects", "lakepipe.objects"},
		{"SELECT a FROM t WHERE a IN (SELECT name FROM lakepipe.objects)", "lakepipe.objects"},
		{"SELECT a FROM t WHERE a NOT IN (SELECT name FROM system.tables)", "system.tables"},
		{"SELECT (SELECT max(secret) FROM lakepipe.objects) FROM t", "lakepipe.objects"},
		{"SELECT a FROM t WHERE CASE WHEN a IN (SELECT name FROM lakepipe.objects) THEN 1 ELSE 0 END = 1", "lakepipe.objects"},
		{"SELECT a FROM t GROUP BY a HAVING count(*) > (SELECT count(*) FROM lakepipe.objects)", "lakepipe.objects"},
		{"SELECT a FROM t ORDER BY (SELECT max(name) FROM lakepipe.objects)", "lakepipe.objects"},
		{"SELECT a FROM t WHERE a IN (lakepipe.objects)", "lakepipe.objects"},
		{"SELECT lakepipe.objects.secret FROM t", "lakepipe.objects"},
		// Writes.
		{"INSERT INTO lakepipe.load_history (table_name) VALUES ('x')", "lakepipe.load_history"},
		{"INSERT OVERWRITE lakepipe.objects SELECT * FROM t", "lakepipe.objects"},
		{"INSERT INTO t SELECT * FROM lakepipe.objects", "lakepipe.objects"},
		{"INSERT INTO t VALUES ((SELECT max(secret) FROM lakepipe.objects))", "lakepipe.objects"},
		{"DELETE FROM lakepipe.objects WHERE kind = 'connection'", "lakepipe.objects"},
		{"DELETE FROM t WHERE a IN (SELECT name FROM lakepipe.objects)", "lakepipe.objects"},
		{"UPDATE lakepipe.meta SET value = 'x'", "lakepipe.meta"},
		{"UPDATE t SET a = (SELECT max(secret) FROM lakepipe.objects)", "lakepipe.objects"},
		{"UPDATE t SET a = 1 WHERE b IN (SELECT name FROM system.tables)", "system.tables"},
		{"CREATE TABLE lakepipe.x (a INT)", "lakepipe.x"},
		{"CREATE TABLE t2 AS SELECT * FROM lakepipe.objects", "lakepipe.objects"},
		{"DROP TABLE lakepipe.objects", "lakepipe.objects"},
		{"DROP TABLE system.query_log", "system.query_log"},
		{"ALTER TABLE lakepipe.objects ADD COLUMN x INT", "lakepipe.objects"},
		{"DESC TABLE lakepipe.objects", "lakepipe.objects"},
		{"CREATE DYNAMIC TABLE d REFRESH INTERVAL 1 MINUTE AS SELECT kind, count(*) FROM lakepipe.objects GROUP BY kind", "lakepipe.objects"},
		{"CREATE DYNAMIC TABLE lakepipe.d AS SELECT 1", "lakepipe.d"},
		{"CREATE TABLE STREAM s ON TABLE lakepipe.objects", "lakepipe.objects"},
		{"COPY INTO lakepipe.load_history FROM VOLUME v USING CSV", "lakepipe.load_history"},
		{"COPY INTO VOLUME v FROM TABLE lakepipe.objects FILE_FORMAT = (TYPE = CSV)", "lakepipe.objects"},
		{"COPY INTO VOLUME v FROM (SELECT * FROM lakepipe.objects) FILE_FORMAT = (TYPE = CSV)", "lakepipe.objects"},
		{"SHOW DYNAMIC TABLE REFRESH HISTORY WHERE name IN (SELECT name FROM lakepipe.objects)", "lakepipe.objects"},
		// ClickHouse's system databases.
		{"SELECT * FROM system.tables", "system.tables: ClickHouse's system tables cannot be read or written through lakepipe"},
		{"SELECT * FROM System.Tables", "system.tables"},
		{"SELECT * FROM `SYSTEM`.`tables`", "SYSTEM.tables"},
		{"SELECT * FROM information_schema.columns", "information_schema.columns"},
		{"SELECT * FROM `INFORMATION_SCHEMA`.`TABLES`", "INFORMATION_SCHEMA.TABLES"},
		// Table functions that reach other servers, files or databases.
		{"SELECT * FROM remote('other:9000', lakepipe.objects)", "remote(…): only load_history('t'), pipe_history('p') and READ_KAFKA(…)"},
		{"SELECT * FROM remoteSecure('other:9440', 'lakepipe', 'objects')", "remotesecure(…)"},
		{"SELECT * FROM cluster('c', 'lakepipe', 'objects')", "cluster(…)"},
		{"SELECT * FROM clusterAllReplicas('c', 'lakepipe', 'objects')", "clusterallreplicas(…)"},
		{"SELECT * FROM file('/etc/passwd', 'LineAsString', 'l String')", "file(…)"},
		{"SELECT * FROM url('http://169.254.169.254/', 'LineAsString', 'l String')", "url(…)"},
		{"SELECT * FROM s3('http://minio/b/k', 'CSV')", "s3(…)"},
		{"SELECT * FROM hdfs('hdfs://h/p', 'CSV', 'a String')", "hdfs(…)"},
		{"SELECT * FROM mysql('h:3306', 'db', 't', 'u', 'p')", "mysql(…)"},
		{"SELECT * FROM postgresql('h:5432', 'db', 't', 'u', 'p')", "postgresql(…)"},
		{"SELECT * FROM jdbc('ds', 'db', 't')", "jdbc(…)"},
		{"SELECT * FROM odbc('dsn', 'db', 't')", "odbc(…)"},
		{"SELECT * FROM executable('x.sh', 'CSV', 'a String')", "executable(…)"},
		{"SELECT * FROM input('a String')", "input(…)"},
		{"SELECT * FROM merge('lakepipe', '^obj')", "merge(…)"},
		{"SELECT * FROM t JOIN (SELECT * FROM remote('h', 'db', 't')) r ON t.a = r.a", "remote(…)"},
		{"INSERT INTO t SELECT * FROM s3('http://minio/b/k', 'CSV')", "s3(…)"},
		// Scalar functions that read dictionaries, files or other tables.
		{"SELECT dictGet('lakepipe.d', 'secret', toUInt64(1))", "dictget(…): functions that read dictionaries"},
		{"SELECT dictGetString('d', 'a', 1) FROM t", "dictgetstring(…)"},
		{"SELECT a FROM t WHERE dictHas('d', a)", "dicthas(…)"},
		{"SELECT joinGet('lakepipe.j', 'v', a) FROM t", "joinget(…)"},
		{"SELECT file('/etc/passwd')", "file(…): functions that read"},
		{"SELECT hasColumnInTable('lakepipe', 'objects', 'secret')", "hascolumnintable(…)"},
		{"SELECT a FROM t WHERE `in`(a, lakepipe.objects)", "in(…)"},
		{"SELECT `dictGet`('d', 'a', 1)", "dictGet(…)"},
		{"SELECT a FROM t WHERE globalIn(a, x)", "globalin(…)"},
		// MERGE INTO: its target, its source and every expression.
		{"MERGE INTO lakepipe.objects t USING s ON t.id = s.id WHEN MATCHED THEN DELETE", "lakepipe"},
		{"MERGE INTO t USING lakepipe.objects s ON t.id = s.id WHEN MATCHED THEN DELETE", "lakepipe"},
		{"MERGE INTO t USING (SELECT * FROM remote('h', 'db', 't')) s ON t.id = s.id WHEN MATCHED THEN DELETE", "remote(…)"},
		{"MERGE INTO t USING s ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = dictGet('d', 'a', 1)", "dictget(…)"},
		{"MERGE INTO t USING s ON t.id = s.id WHEN NOT MATCHED AND file('/etc/passwd') = '' THEN INSERT VALUES (s.id)", "file(…)"},
	}
	for _, tt := range tests {
		stmt, err := sqlparse.Parse(tt.sql)
		if err != nil {
			t.Errorf("parse %q: %v", tt.sql, err)
			continue
		}
		err = e.Guard(stmt)
		if err == nil {
			t.Errorf("%s\n  was allowed", tt.sql)
			continue
		}
		var ge *GuardError
		var rf *chsql.RefusedFunction
		if !errors.As(err, &ge) && !errors.As(err, &rf) {
			t.Errorf("%s\n  error %T, want *GuardError or *chsql.RefusedFunction: %v", tt.sql, err, err)
		}
		if !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s\n  error %q\n  does not hold %q", tt.sql, err, tt.want)
		}
	}
}

func TestGuardAllows(t *testing.T) {
	e := configured(core.Config{Workspace: "default", Schema: "public"})
	for _, sql := range []string{
		"SELECT * FROM t",
		"SELECT * FROM public.t",
		"SELECT * FROM default.public.t",
		"SELECT * FROM lakepipe_data.t",    // a user's schema, not one of lakepipe's
		"SELECT * FROM `lakepipe.objects`", // one quoted name: a table of the session's schema
		"SELECT lakepipe, system FROM t",
		"SELECT t.system, s.lakepipe FROM t JOIN u s ON t.a = s.a",
		"SELECT a FROM t WHERE a IN (1, 2) AND b IN (SELECT b FROM u)",
		"WITH objects AS (SELECT 1 AS a) SELECT * FROM objects",
		"WITH x AS (SELECT a FROM t) SELECT * FROM x UNION ALL SELECT a FROM u",
		"SELECT * FROM load_history('t')",
		"SELECT * FROM LOAD_HISTORY('s.t') WHERE status = 'LOADED'",
		"SELECT * FROM DIRECTORY(VOLUME v)",
		"SELECT * FROM VOLUME v USING CSV",
		"SELECT COUNT(*), upper(a), to_date(b), now(), coalesce(c, 0), lengthUTF8(d) FROM t",
		"SELECT dt FROM t", // not a dict… function, just a column
		"INSERT INTO t VALUES (1, 'a')",
		"INSERT INTO t SELECT * FROM u",
		"DELETE FROM t WHERE a IN (SELECT a FROM u)",
		"UPDATE t SET a = 1 WHERE b = 2",
		"CREATE TABLE t (a INT)",
		"CREATE TABLE t2 AS SELECT * FROM t",
		"CREATE DYNAMIC TABLE d REFRESH INTERVAL 1 MINUTE AS SELECT a, count(*) FROM t GROUP BY a",
		"CREATE TABLE STREAM s ON TABLE t",
		"COPY INTO t FROM VOLUME v USING CSV",
		"COPY INTO VOLUME v FROM TABLE s.t FILE_FORMAT = (TYPE = CSV)",
		"SHOW CONNECTIONS",
		"SHOW TABLES",
		"SHOW PIPES",
		"SHOW DYNAMIC TABLES",
		"SHOW DYNAMIC TABLE REFRESH HISTORY",
		"SHOW DYNAMIC TABLE REFRESH HISTORY WHERE name = 'd' LIMIT 5",
		"DESC TABLE t",
		"DESC CONNECTION c",
		"DESC DYNAMIC TABLE d",
		"DROP TABLE t",
	} {
		stmt, err := sqlparse.Parse(sql)
		if err != nil {
			t.Errorf("parse %q: %v", sql, err)
			continue
		}
		if err := e.Guard(stmt); err != nil {
			t.Errorf("%s\n  refused: %v", sql, err)
		}
	}
}

// A session whose schema is one of lakepipe's reaches it by unqualified
// names too; a CTE of the same name is still the CTE.
func TestGuardDefaultSchema(t *testing.T) {
	e := configured(core.Config{Workspace: "default", Schema: "lakepipe"})
	for sql, refused := range map[string]bool{
		"SELECT * FROM objects":                                 true,
		"INSERT INTO load_history (table_name) VALUES ('x')":    true,
		"WITH objects AS (SELECT 1 AS a) SELECT * FROM objects": false,
		"SELECT * FROM public.t":                                false,
	} {
		stmt, err := sqlparse.Parse(sql)
		if err != nil {
			t.Fatalf("parse %q: %v", sql, err)
		}
		if err := e.Guard(stmt); (err != nil) != refused {
			t.Errorf("%s: refused %v, want %v (%v)", sql, err != nil, refused, err)
		}
	}
}

// configured is a runner with a configuration and nothing else, for
// tests that need no server.
func configured(cfg core.Config) *Runner {
	r := new(Runner)
	r.Cfg = cfg
	return r
}
