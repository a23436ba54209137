package sqlparse

import (
	"errors"
	"strings"
	"testing"

	"github.com/lakepipe/lakepipe/internal/sqlast"
)

func TestDocStatements(t *testing.T) {
	for i, c := range docCases {
		s, err := Parse(c.sql)
		if err != nil {
			t.Errorf("example %d (%s): %v\n%s", i, c.doc, err, c.sql)
			continue
		}
		start, text := s.Span()
		if start != (sqlast.Pos{Offset: 0, Line: 1, Col: 1}) {
			t.Errorf("example %d: Start = %+v", i, start)
		}
		if want := strings.TrimSuffix(c.sql, ";"); text != want {
			t.Errorf("example %d: Text = %q, want %q", i, text, want)
		}
		t.Run(firstWords(c.sql), func(t *testing.T) { c.check(t, s) })
	}
}

func firstWords(s string) string {
	f := strings.Fields(s)
	if len(f) > 4 {
		f = f[:4]
	}
	return strings.Join(f, "_")
}

func TestDocRoundTrip(t *testing.T) {
	for _, c := range docCases {
		checkRoundTrip(t, mustParse(t, c.sql))
	}
}

// TestDocScripts parses blocks of the ClickZetta Lakehouse documentation as whole scripts, comments and
// all, and checks where each statement starts.
func TestDocScripts(t *testing.T) {
	// pipe-and-table-stream, the four set-up steps, verbatim.
	script := `-- 第一步：创建存储连接
CREATE STORAGE CONNECTION my_oss_conn
TYPE OSS
ENDPOINT = 'oss-cn-hangzhou.aliyuncs.com'
ACCESS_ID = '...'
ACCESS_KEY = '...';
-- 第二步：创建 External Volume（指向具体子目录）
CREATE EXTERNAL VOLUME orders_pipe_vol
LOCATION 'oss://my-bucket/orders_incoming/'
USING CONNECTION my_oss_conn
DIRECTORY = (ENABLE = TRUE, AUTO_REFRESH = TRUE)
RECURSIVE = TRUE;
-- 第三步：创建目标表
CREATE TABLE IF NOT EXISTS orders (
order_id INT,
amount DECIMAL(10,2),
status STRING
);
-- 第四步：创建 Pipe
CREATE PIPE orders_oss_pipe
VIRTUAL_CLUSTER = 'default'
INGEST_MODE = 'LIST_PURGE'
AS
COPY INTO orders
FROM VOLUME orders_pipe_vol (order_id INT, amount DECIMAL(10,2), status STRING)
USING CSV OPTIONS('header' = 'true')
PURGE = TRUE;`
	stmts, err := ParseScript(script)
	if err != nil {
		t.Fatal(err)
	}
	var lines []int
	for _, s := range stmts {
		start, _ := s.Span()
		lines = append(lines, start.Line)
	}
	eq(t, "start lines", lines, []int{2, 8, 14, 20})
	as[*sqlast.CreateConnection](t, stmts[0])
	as[*sqlast.CreateVolume](t, stmts[1])
	as[*sqlast.CreateTable](t, stmts[2])
	p := as[*sqlast.CreatePipe](t, stmts[3])
	eq(t, "pipe text starts", strings.HasPrefix(p.Text, "CREATE PIPE orders_oss_pipe\nVIRTUAL_CLUSTER"), true)
	eq(t, "copy start", p.Copy.Start, sqlast.Pos{Offset: strings.Index(script, "COPY INTO orders"), Line: 24, Col: 1})
	eq(t, "table text", stmts[2].(*sqlast.CreateTable).Text, "CREATE TABLE IF NOT EXISTS orders (\norder_id INT,\namount DECIMAL(10,2),\nstatus STRING\n)")

	// The end-to-end example flattens its scripts onto one line, so a leading
	// "-- label" comments out the whole line: nothing is left to run.
	flat := `-- 查看 Pipe 状态 DESC PIPE EXTENDED sales_pipe; -- 关键字段：pipe_status (RUNNING/PAUSED)、ingest_mode、input_name、output_name -- 暂停 Pipe（停止扫描新文件） ALTER PIPE sales_pipe SET PIPE_EXECUTION_PAUSED = TRUE;`
	stmts, err = ParseScript(flat)
	if err != nil || len(stmts) != 0 {
		t.Errorf("commented-out line: %d statements, %v", len(stmts), err)
	}

	// Two statements of that example on one line, without the label.
	line := `ALTER VOLUME my_data_vol REFRESH; -- 查看导出的文件 SELECT relative_path, size, last_modified_time FROM DIRECTORY(VOLUME my_data_vol) WHERE relative_path LIKE 'export/%';`
	stmts, err = ParseScript(line)
	if err != nil {
		t.Fatal(err)
	}
	eq(t, "statements", len(stmts), 1)
	monitoring := `-- 查看所有 Pipe（含状态、类型、VCluster）
SHOW PIPES;
-- 查看 Pipe 详情
DESC PIPE orders_oss_pipe;
-- 立即触发扫描（不等待下一轮检测周期）
ALTER PIPE orders_oss_pipe REFRESH;
-- 暂停 Pipe
ALTER PIPE orders_oss_pipe SET PIPE_EXECUTION_PAUSED = TRUE;
-- 恢复 Pipe
ALTER PIPE orders_oss_pipe SET PIPE_EXECUTION_PAUSED = FALSE;
-- 删除 Pipe（不影响目标表数据）
DROP PIPE orders_oss_pipe;`
	stmts, err = ParseScript(monitoring)
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, s := range stmts {
		_, text := s.Span()
		texts = append(texts, text)
	}
	eq(t, "texts", texts, []string{"SHOW PIPES", "DESC PIPE orders_oss_pipe", "ALTER PIPE orders_oss_pipe REFRESH",
		"ALTER PIPE orders_oss_pipe SET PIPE_EXECUTION_PAUSED = TRUE",
		"ALTER PIPE orders_oss_pipe SET PIPE_EXECUTION_PAUSED = FALSE", "DROP PIPE orders_oss_pipe"})
	start, _ := stmts[5].Span()
	eq(t, "DROP start", start, sqlast.Pos{Offset: strings.Index(monitoring, "DROP PIPE"), Line: 12, Col: 1})
}

// grammarCases are statements beyond the ClickZetta Lakehouse documentation with their canonical form.
var grammarCases = []struct{ src, want string }{
	// identifiers: keywords are names where a name is expected
	{"SELECT COUNT(*) AS rows, value, key, status, comment, date, timestamp, partition, offset FROM t",
		"SELECT count(*) AS rows, value, key, status, `comment`, `date`, `timestamp`, `partition`, `offset` FROM t"},
	{"SELECT `MixedCase`, MixedCase, `a``b` FROM `My Table` AS `T`",
		"SELECT `MixedCase`, mixedcase, `a``b` FROM `My Table` AS `T`"},
	{"select a as b, c d from ws.sch.t x", "SELECT a AS b, c AS d FROM ws.sch.t AS x"},
	{"SELECT t.*, * FROM t", "SELECT t.*, * FROM t"},
	{`SELECT "dq", "Mixed"."Col" AS "Alias", "a""b" FROM "T"`, "SELECT dq, `Mixed`.`Col` AS `Alias`, `a\"b` FROM `T`"},
	// joins
	{"SELECT * FROM a LEFT OUTER JOIN b ON a.id = b.id RIGHT JOIN c USING (id) FULL OUTER JOIN d ON TRUE CROSS JOIN e INNER JOIN f ON x",
		"SELECT * FROM a LEFT JOIN b ON a.id = b.id RIGHT JOIN c USING (id) FULL JOIN d ON TRUE CROSS JOIN e JOIN f ON x"},
	{"SELECT * FROM a, b JOIN (c JOIN d ON c.x = d.x) ON b.y = c.y", "SELECT * FROM a, b JOIN (c JOIN d ON c.x = d.x) ON b.y = c.y"},
	// query clauses
	{"WITH a AS (SELECT 1 AS x), b AS (SELECT x FROM a) SELECT DISTINCT x FROM b WHERE x > 0 GROUP BY x, 2 HAVING count(*) > 1 ORDER BY x DESC NULLS FIRST, 2 ASC NULLS LAST LIMIT 10 OFFSET 5",
		"WITH a AS (SELECT 1 AS x), b AS (SELECT x FROM a) SELECT DISTINCT x FROM b WHERE x > 0 GROUP BY x, 2 HAVING count(*) > 1 ORDER BY x DESC NULLS FIRST, 2 NULLS LAST LIMIT 10 OFFSET 5"},
	{"SELECT 1 UNION SELECT 2 INTERSECT SELECT 3 EXCEPT SELECT 4 MINUS SELECT 5 UNION DISTINCT SELECT 6 INTERSECT ALL SELECT 7",
		"SELECT 1 UNION SELECT 2 INTERSECT SELECT 3 EXCEPT SELECT 4 EXCEPT SELECT 5 UNION SELECT 6 INTERSECT ALL SELECT 7"},
	{"(SELECT 1) UNION ALL (SELECT 2 ORDER BY 1 LIMIT 1) ORDER BY 1", "(SELECT 1) UNION ALL (SELECT 2 ORDER BY 1 LIMIT 1) ORDER BY 1"},
	{"((SELECT 1))", "((SELECT 1))"},
	{"SELECT * FROM (SELECT a FROM t) AS s, (SELECT 1) x, ((SELECT 2)) y WHERE a IN (SELECT a FROM u) AND EXISTS (SELECT 1) AND NOT EXISTS (SELECT 2) AND b = (SELECT max(b) FROM t)",
		"SELECT * FROM (SELECT a FROM t) AS s, (SELECT 1) AS x, ((SELECT 2)) AS y WHERE a IN (SELECT a FROM u) AND EXISTS (SELECT 1) AND NOT EXISTS (SELECT 2) AND b = (SELECT max(b) FROM t)"},
	{"SELECT row_number() OVER (PARTITION BY a, b ORDER BY c DESC), sum(x) OVER (), count(DISTINCT y) FROM t",
		"SELECT row_number() OVER (PARTITION BY a, b ORDER BY c DESC), sum(x) OVER (), count(DISTINCT y) FROM t"},
	// special sources
	{"SELECT * FROM VOLUME v (a INT, b STRING) USING json OPTIONS('k'='v', 'x' = 'y') FILES('a.json','b.json') SUBDIRECTORY 'd/' REGEXP '.*json' AS x",
		"SELECT * FROM VOLUME v (a INT, b STRING) USING JSON OPTIONS ('k' = 'v', 'x' = 'y') FILES ('a.json', 'b.json') SUBDIRECTORY 'd/' REGEXP '.*json' AS x"},
	{"SELECT f0, f1 FROM VOLUME v USING CSV SUBDIRECTORY 'in/' vv WHERE f0 <> ''", "SELECT f0, f1 FROM VOLUME v USING CSV SUBDIRECTORY 'in/' AS vv WHERE f0 <> ''"},
	{"SELECT * FROM DIRECTORY(VOLUME v) d, TABLE(READ_KAFKA('h:9092', 't', '', 'g', '', '', '', '', 'raw', 'raw', 0, map('k', 'v'))) AS k",
		"SELECT * FROM DIRECTORY(VOLUME v) AS d, TABLE(read_kafka('h:9092', 't', '', 'g', '', '', '', '', 'raw', 'raw', 0, map('k', 'v'))) AS k"},
	{"SELECT * FROM volume, directory, pipe", "SELECT * FROM `volume`, `directory`, `pipe`"},
	// expressions
	{"SELECT CASE WHEN a > 1 THEN 'x' WHEN a IS NULL THEN NULL ELSE 'y' END, CASE a WHEN 1 THEN TRUE END FROM t",
		"SELECT CASE WHEN a > 1 THEN 'x' WHEN a IS NULL THEN NULL ELSE 'y' END, CASE a WHEN 1 THEN TRUE END FROM t"},
	{"SELECT CAST(a AS DECIMAL(10, 2)), TRY_CAST(b AS BIGINT), c::TIMESTAMP_NTZ, d::ARRAY<STRING>, e::MAP<STRING,ARRAY<INT>>, f::STRUCT<a:INT,b:STRUCT<c:STRING>>",
		"SELECT CAST(a AS DECIMAL(10, 2)), TRY_CAST(b AS BIGINT), c::TIMESTAMP_NTZ, d::ARRAY<STRING>, e::MAP<STRING, ARRAY<INT>>, f::STRUCT<a: INT, b: STRUCT<c: STRING>>"},
	{"SELECT INTERVAL '1' DAY, INTERVAL 1 HOUR, INTERVAL 3 minutes, now() - INTERVAL 7 DAYS, DATE '2026-06-01', TIMESTAMP '2026-06-01 00:00:00'",
		"SELECT INTERVAL '1' DAY, INTERVAL 1 HOUR, INTERVAL 3 MINUTE, now() - INTERVAL 7 DAY, CAST('2026-06-01' AS DATE), CAST('2026-06-01 00:00:00' AS TIMESTAMP)"},
	{"SELECT arr[0], map('a', 1)['a'], parse_json(v)['a']['b'], -x, +y, - -z, NOT a, a || b || 'c', 1.5, 1e3, .5, 2E-3, TRUE, false, NULL, map(), array(1, 2)",
		"SELECT arr[0], map('a', 1)['a'], parse_json(v)['a']['b'], -x, +y, - -z, NOT a, a || b || 'c', 1.5, 1e3, .5, 2E-3, TRUE, FALSE, NULL, map(), array(1, 2)"},
	{`SELECT 'it''s', 'it\'s', 'a\nb', 'tab\there', 'back\\slash', 'like\%', 'dq"x'`,
		`SELECT 'it''s', 'it''s', 'a\nb', 'tab\there', 'back\\slash', 'like\\%', 'dq"x'`},
	{"SELECT * FROM t WHERE a NOT LIKE 'x%' AND b ILIKE 'y' AND c RLIKE '^z' AND d NOT BETWEEN 1 AND 2 AND e NOT IN (1, 2) AND f IS NOT NULL AND g != 1",
		"SELECT * FROM t WHERE a NOT LIKE 'x%' AND b ILIKE 'y' AND c RLIKE '^z' AND d NOT BETWEEN 1 AND 2 AND e NOT IN (1, 2) AND f IS NOT NULL AND g <> 1"},
	{"SELECT (a + b) * c, a + b * c, (a OR b) AND c, ((1)) FROM t", "SELECT (a + b) * c, a + b * c, (a OR b) AND c, ((1)) FROM t"},
	// tables
	{"CREATE TABLE IF NOT EXISTS ws.sch.events (id BIGINT NOT NULL COMMENT 'id', ts TIMESTAMP DEFAULT now(), tags ARRAY<STRING>, attrs MAP<STRING, STRING>, geo STRUCT<lat: DOUBLE, lon: DOUBLE>, v VARCHAR(10), c CHAR(2), f FLOAT, d DECIMAL, i INTEGER, s SMALLINT, ti TINYINT, b BOOLEAN, bin BINARY, j JSON, dt DATE, ltz TIMESTAMP_LTZ) PARTITIONED BY (dt) COMMENT 'events' PROPERTIES ('change_tracking' = 'true')",
		"CREATE TABLE IF NOT EXISTS ws.sch.events (id BIGINT NOT NULL COMMENT 'id', ts TIMESTAMP DEFAULT now(), tags ARRAY<STRING>, attrs MAP<STRING, STRING>, geo STRUCT<lat: DOUBLE, lon: DOUBLE>, v VARCHAR(10), c CHAR(2), f FLOAT, d DECIMAL, i INTEGER, s SMALLINT, ti TINYINT, b BOOLEAN, bin BINARY, j JSON, dt DATE, ltz TIMESTAMP_LTZ) PARTITIONED BY (dt) COMMENT 'events' PROPERTIES ('change_tracking' = 'true')"},
	{"CREATE TABLE t (a INT) TBLPROPERTIES ('a'='b') COMMENT 'c' PARTITIONED BY (a)",
		"CREATE TABLE t (a INT) PARTITIONED BY (a) COMMENT 'c' PROPERTIES ('a' = 'b')"},
	{"CREATE TABLE t2 AS SELECT * FROM t", "CREATE TABLE t2 AS SELECT * FROM t"},
	{"CREATE TABLE stream (a INT)", "CREATE TABLE `stream` (a INT)"},
	{"DROP TABLE stream", "DROP TABLE `stream`"},
	{"UNDROP TABLE t", "UNDROP TABLE t"},
	{"ALTER TABLE t SET TBLPROPERTIES ('change_tracking' = 'true')", "ALTER TABLE t SET PROPERTIES ('change_tracking' = 'true')"},
	{"ALTER TABLE t ADD COLUMN c STRING COMMENT 'new'", "ALTER TABLE t ADD COLUMN c STRING COMMENT 'new'"},
	{"ALTER TABLE t ADD c INT", "ALTER TABLE t ADD COLUMN c INT"},
	{"ALTER TABLE t DROP COLUMN c", "ALTER TABLE t DROP COLUMN c"},
	{"SHOW TABLES", "SHOW TABLES"},
	{"SHOW TABLES LIKE 'sales%'", "SHOW TABLES LIKE 'sales%'"},
	{"DESC t", "DESC TABLE t"},
	{"DESCRIBE TABLE t EXTENDED", "DESC TABLE t EXTENDED"},
	{"DESC EXTENDED t", "DESC TABLE t EXTENDED"},
	{"DESC pipe", "DESC TABLE `pipe`"},
	// DML
	{"INSERT OVERWRITE TABLE t (a, b) SELECT a, b FROM u", "INSERT OVERWRITE t (a, b) SELECT a, b FROM u"},
	{"INSERT INTO t (SELECT 1)", "INSERT INTO t (SELECT 1)"},
	{"INSERT INTO t VALUES (1, 'a', NULL), (-2, 'b', 3.5)", "INSERT INTO t VALUES (1, 'a', NULL), (-2, 'b', 3.5)"},
	{"DELETE FROM t WHERE id IN (1, 2)", "DELETE FROM t WHERE id IN (1, 2)"},
	{"DELETE FROM t", "DELETE FROM t"},
	{"UPDATE t SET a = a + 1, b = 'x' WHERE id = 3", "UPDATE t SET a = a + 1, b = 'x' WHERE id = 3"},
	{"MERGE INTO t USING s ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT VALUES (s.id, s.v)",
		"MERGE INTO t USING s ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT VALUES (s.id, s.v)"},
	{"merge into db.t as tgt using (select id, max(v) as v from s group by id) src on tgt.id = src.id and tgt.k = src.k when matched and src.v is null then delete when matched then update set v = src.v, n = tgt.n + 1 when not matched and src.v > 0 then insert (id, v) values (src.id, src.v)",
		"MERGE INTO db.t AS tgt USING (SELECT id, max(v) AS v FROM s GROUP BY id) AS src ON tgt.id = src.id AND tgt.k = src.k WHEN MATCHED AND src.v IS NULL THEN DELETE WHEN MATCHED THEN UPDATE SET v = src.v, n = tgt.n + 1 WHEN NOT MATCHED AND src.v > 0 THEN INSERT (id, v) VALUES (src.id, src.v)"},
	{"CREATE TABLE t (id BIGINT PRIMARY KEY COMMENT 'the key', v STRING)", "CREATE TABLE t (id BIGINT COMMENT 'the key', v STRING, PRIMARY KEY (id))"},
	{"CREATE TABLE t (a INT NOT NULL, b STRING, v DOUBLE, PRIMARY KEY (a, b)) PARTITIONED BY (a)", "CREATE TABLE t (a INT NOT NULL, b STRING, v DOUBLE, PRIMARY KEY (a, b)) PARTITIONED BY (a)"},
	// COPY
	{"COPY INTO t (a, b) FROM VOLUME v USING JSON FILES('x.json') PURGE = FALSE ON_ERROR = 'continue'",
		"COPY INTO t (a, b) FROM VOLUME v USING JSON FILES ('x.json') ON_ERROR = 'continue'"},
	{"COPY OVERWRITE t FROM (SELECT * FROM VOLUME v USING CSV OPTIONS('header'='true'))",
		"COPY OVERWRITE t FROM (SELECT * FROM VOLUME v USING CSV OPTIONS ('header' = 'true'))"},
	{"COPY INTO t FROM VOLUME v USING PARQUET SUBDIRECTORY 'd/' PURGE = TRUE, ON_ERROR = 'abort'",
		"COPY INTO t FROM VOLUME v USING PARQUET SUBDIRECTORY 'd/' PURGE = TRUE ON_ERROR = 'abort'"},
	{"COPY INTO VOLUME v SUBDIRECTORY 'x/' FROM (SELECT 1) FILE_FORMAT = (TYPE = JSON, compression = 'gzip') OVERWRITE = TRUE",
		"COPY INTO VOLUME v SUBDIRECTORY 'x/' FROM (SELECT 1) FILE_FORMAT = (TYPE = JSON, COMPRESSION = 'gzip') OVERWRITE = TRUE"},
	{"COPY INTO VOLUME v FROM TABLE s.t FILE_FORMAT = (TYPE = 'parquet')", "COPY INTO VOLUME v FROM TABLE s.t FILE_FORMAT = (TYPE = PARQUET)"},
	// pipes
	{"CREATE PIPE IF NOT EXISTS p VIRTUAL_CLUSTER = 'vc', INGEST_MODE = 'LIST', BATCH_INTERVAL_IN_SECONDS = 60, POLL_INTERVAL_IN_SECONDS = '10' COMMENT 'c' AS COPY INTO t FROM VOLUME v USING CSV",
		"CREATE PIPE IF NOT EXISTS p VIRTUAL_CLUSTER = 'vc' INGEST_MODE = 'LIST' BATCH_INTERVAL_IN_SECONDS = '60' POLL_INTERVAL_IN_SECONDS = '10' COMMENT 'c' AS COPY INTO t FROM VOLUME v USING CSV"},
	{"CREATE PIPE p AS COPY INTO t FROM (SELECT key, value, topic, partition, offset, timestamp FROM READ_KAFKA('h', 't', '', 'g', '', '', '', '', 'raw', 'raw', 10, map('security.protocol', 'PLAINTEXT')))",
		"CREATE PIPE p AS COPY INTO t FROM (SELECT key, value, topic, `partition`, `offset`, `timestamp` FROM read_kafka('h', 't', '', 'g', '', '', '', '', 'raw', 'raw', 10, map('security.protocol', 'PLAINTEXT')))"},
	{"SHOW PIPES LIKE 'p%'", "SHOW PIPES LIKE 'p%'"},
	{"DESCRIBE PIPE p EXTENDED", "DESC PIPE EXTENDED p"},
	{"DESC EXTENDED PIPE p", "DESC PIPE EXTENDED p"},
	{"ALTER PIPE p SET PIPE_EXECUTION_PAUSED = TRUE, COMMENT = 'x'", "ALTER PIPE p SET PIPE_EXECUTION_PAUSED = TRUE, COMMENT = 'x'"},
	{"ALTER PIPE p AS COPY INTO t FROM VOLUME v USING CSV", "ALTER PIPE p AS COPY INTO t FROM VOLUME v USING CSV"},
	{"DROP PIPE IF EXISTS p", "DROP PIPE IF EXISTS p"},
	// dynamic tables
	{"CREATE DYNAMIC TABLE IF NOT EXISTS d (category, cnt COMMENT 'n', total DECIMAL(18,2)) COMMENT 'c' VCLUSTER 'Analytics' REFRESH INTERVAL 5 MINUTES AS SELECT category, count(*), sum(x) FROM t GROUP BY category",
		"CREATE DYNAMIC TABLE IF NOT EXISTS d (category, cnt COMMENT 'n', total DECIMAL(18, 2)) REFRESH INTERVAL 5 MINUTE VCLUSTER `Analytics` COMMENT 'c' AS SELECT category, count(*), sum(x) FROM t GROUP BY category"},
	{"CREATE DYNAMIC TABLE d AS SELECT 1", "CREATE DYNAMIC TABLE d AS SELECT 1"},
	{"SHOW DYNAMIC TABLE REFRESH HISTORY", "SHOW DYNAMIC TABLE REFRESH HISTORY"},
	{"SHOW DYNAMIC TABLE REFRESH HISTORY WHERE name = 'd' AND state = 'FAILED' LIMIT 10", "SHOW DYNAMIC TABLE REFRESH HISTORY WHERE name = 'd' AND state = 'FAILED' LIMIT 10"},
	{"SHOW DYNAMIC TABLES LIKE 'd%'", "SHOW DYNAMIC TABLES LIKE 'd%'"},
	{"DESC DYNAMIC TABLE d", "DESC DYNAMIC TABLE d"},
	{"DROP DYNAMIC TABLE IF EXISTS d", "DROP DYNAMIC TABLE IF EXISTS d"},
	{"ALTER DYNAMIC TABLE d SUSPEND", "ALTER DYNAMIC TABLE d SUSPEND"},
	{"ALTER DYNAMIC TABLE d RESUME", "ALTER DYNAMIC TABLE d RESUME"},
	// table streams
	{"CREATE OR REPLACE TABLE STREAM IF NOT EXISTS s ON TABLE t WITH PROPERTIES ('TABLE_STREAM_MODE' = 'APPEND_ONLY') COMMENT 'c'",
		"CREATE OR REPLACE TABLE STREAM IF NOT EXISTS s ON TABLE t WITH PROPERTIES ('TABLE_STREAM_MODE' = 'APPEND_ONLY') COMMENT 'c'"},
	{"CREATE TABLE STREAM s ON TABLE sch.t", "CREATE TABLE STREAM s ON TABLE sch.t"},
	{"SHOW TABLE STREAMS", "SHOW TABLE STREAMS"},
	{"DESC TABLE STREAM s", "DESC TABLE STREAM s"},
	{"DROP TABLE STREAM IF EXISTS s", "DROP TABLE STREAM IF EXISTS s"},
	{"SELECT * FROM s WHERE __change_type = 'INSERT'", "SELECT * FROM s WHERE __change_type = 'INSERT'"},
	// connections and volumes
	{"CREATE STORAGE CONNECTION c TYPE COS, ENDPOINT = 'cos.ap-shanghai.myqcloud.com', REGION = 'ap-shanghai', ACCESS_KEY = 'ak', SECRET_KEY = 'sk' COMMENT 'tencent'",
		"CREATE STORAGE CONNECTION c TYPE COS ENDPOINT = 'cos.ap-shanghai.myqcloud.com' REGION = 'ap-shanghai' ACCESS_KEY = 'ak' SECRET_KEY = 'sk' COMMENT 'tencent'"},
	{"create storage connection s3c type s3 access_key_id = 'a' access_key_secret = 'b' region = 'us-east-1'",
		"CREATE STORAGE CONNECTION s3c TYPE S3 ACCESS_KEY_ID = 'a' ACCESS_KEY_SECRET = 'b' REGION = 'us-east-1'"},
	{"SHOW CONNECTIONS", "SHOW CONNECTIONS"},
	{"SHOW STORAGE CONNECTIONS LIKE 'c%'", "SHOW CONNECTIONS LIKE 'c%'"},
	{"DESC STORAGE CONNECTION c", "DESC CONNECTION c"},
	{"DROP CONNECTION IF EXISTS c", "DROP STORAGE CONNECTION IF EXISTS c"},
	{"CREATE EXTERNAL VOLUME v COMMENT 'x' RECURSIVE = FALSE DIRECTORY = (AUTO_REFRESH = TRUE ENABLE = TRUE) USING CONNECTION c LOCATION 's3://b/d/'",
		"CREATE EXTERNAL VOLUME v LOCATION 's3://b/d/' USING CONNECTION c DIRECTORY = (ENABLE = TRUE, AUTO_REFRESH = TRUE) RECURSIVE = FALSE COMMENT 'x'"},
	{"CREATE EXTERNAL VOLUME v LOCATION 'cos://b/d/' USING CONNECTION c", "CREATE EXTERNAL VOLUME v LOCATION 'cos://b/d/' USING CONNECTION c DIRECTORY = (ENABLE = FALSE, AUTO_REFRESH = FALSE) RECURSIVE = FALSE"},
	{"SHOW VOLUMES LIKE 'v%'", "SHOW VOLUMES LIKE 'v%'"},
	{"DESCRIBE VOLUME v", "DESC VOLUME v"},
	{"DROP VOLUME IF EXISTS v", "DROP VOLUME IF EXISTS v"},
	{"ALTER VOLUME v REFRESH;", "ALTER VOLUME v REFRESH"},
}

// TestGrammar parses grammarCases and checks their canonical form; every
// case must also survive a round trip.
func TestGrammar(t *testing.T) {
	for _, c := range grammarCases {
		s, err := Parse(c.src)
		if err != nil {
			t.Errorf("Parse(%q): %v", c.src, err)
			continue
		}
		if got := sqlast.Format(s); got != c.want {
			t.Errorf("Format(Parse(%q))\n got: %s\nwant: %s", c.src, got, c.want)
		}
		checkRoundTrip(t, s)
	}
}

// sexpr renders an expression fully parenthesised, to check precedence.
func sexpr(e sqlast.Expr) string {
	switch e := e.(type) {
	case *sqlast.BinaryExpr:
		return "(" + e.Op + " " + sexpr(e.L) + " " + sexpr(e.R) + ")"
	case *sqlast.UnaryExpr:
		return "(" + e.Op + " " + sexpr(e.X) + ")"
	case *sqlast.InExpr:
		op := "IN"
		if e.Not {
			op = "NOT IN"
		}
		var items []string
		for _, x := range e.List {
			items = append(items, sexpr(x))
		}
		return "(" + op + " " + sexpr(e.X) + " [" + strings.Join(items, " ") + "])"
	case *sqlast.BetweenExpr:
		return "(BETWEEN " + sexpr(e.X) + " " + sexpr(e.Lo) + " " + sexpr(e.Hi) + ")"
	case *sqlast.IsNullExpr:
		if e.Not {
			return "(IS NOT NULL " + sexpr(e.X) + ")"
		}
		return "(IS NULL " + sexpr(e.X) + ")"
	case *sqlast.CastExpr:
		return "(CAST " + sexpr(e.X) + " " + sqlast.FormatType(e.Type) + ")"
	case *sqlast.IndexExpr:
		return "(INDEX " + sexpr(e.X) + " " + sexpr(e.Index) + ")"
	case *sqlast.ParenExpr:
		return "(PAREN " + sexpr(e.X) + ")"
	}
	return sqlast.FormatExpr(e)
}

func TestPrecedence(t *testing.T) {
	cases := []struct{ src, want string }{
		{"a OR b AND c", "(OR a (AND b c))"},
		{"a AND b OR c", "(OR (AND a b) c)"},
		{"NOT a AND b", "(AND (NOT a) b)"},
		{"NOT a = b", "(NOT (= a b))"},
		{"NOT NOT a", "(NOT (NOT a))"},
		{"a = b AND c <> d", "(AND (= a b) (<> c d))"},
		{"a || b = c", "(= (|| a b) c)"},
		{"a + b || c", "(|| (+ a b) c)"},
		{"a + b * c - d", "(- (+ a (* b c)) d)"},
		{"a - b - c", "(- (- a b) c)"},
		{"a / b % c", "(% (/ a b) c)"},
		{"-a * b", "(* (- a) b)"},
		{"-a::INT", "(- (CAST a INT))"},
		{"a::INT[1]", "(INDEX (CAST a INT) 1)"},
		{"f(x)['a']::STRING", "(CAST (INDEX f(x) 'a') STRING)"},
		{"a BETWEEN 1 AND 2 AND b", "(AND (BETWEEN a 1 2) b)"},
		{"a BETWEEN b + 1 AND c * 2", "(BETWEEN a (+ b 1) (* c 2))"},
		{"a NOT IN (1, 2) OR b IS NOT NULL", "(OR (NOT IN a [1 2]) (IS NOT NULL b))"},
		{"a LIKE 'x' || '%'", "(LIKE a (|| 'x' '%'))"},
		{"a NOT LIKE b AND c ILIKE d", "(AND (NOT LIKE a b) (ILIKE c d))"},
		{"a = b IS NULL", "(IS NULL (= a b))"},
		{"(a OR b) AND c", "(AND (PAREN (OR a b)) c)"},
		{"a < b = c", "(= (< a b) c)"},
		{"x = -1", "(= x (- 1))"},
	}
	for _, c := range cases {
		e, err := ParseExpr(c.src)
		if err != nil {
			t.Errorf("ParseExpr(%q): %v", c.src, err)
			continue
		}
		if got := sexpr(e); got != c.want {
			t.Errorf("ParseExpr(%q) = %s, want %s", c.src, got, c.want)
		}
		f := sqlast.FormatExpr(e)
		e2, err := ParseExpr(f)
		if err != nil || sexpr(e2) != c.want {
			t.Errorf("round trip of %q via %q: %v %v", c.src, f, e2, err)
		}
	}
}

func TestTrees(t *testing.T) {
	s := mustParse(t, "SELECT a FROM t WHERE NOT EXISTS (SELECT 1) AND x NOT IN ((SELECT y FROM u))")
	w := as[*sqlast.BinaryExpr](t, as[*sqlast.Select](t, as[*sqlast.QueryStmt](t, s).Query.Body).Where)
	ex := as[*sqlast.ExistsExpr](t, w.L)
	eq(t, "Exists.Not", ex.Not, true)
	in := as[*sqlast.InExpr](t, w.R)
	eq(t, "In.Not", in.Not, true)
	eq(t, "In.Query body", sqlast.FormatQuery(as[*sqlast.Query](t, in.Query.Body)), "SELECT y FROM u")

	s = mustParse(t, "SELECT * FROM a JOIN b ON a.x = b.x LEFT JOIN c USING (y, z)")
	j := as[*sqlast.JoinRef](t, as[*sqlast.Select](t, as[*sqlast.QueryStmt](t, s).Query.Body).From[0])
	eq(t, "Kind", j.Kind, "LEFT")
	eq(t, "Using", j.Using, []string{"y", "z"})
	eq(t, "Right", j.Right, sqlast.TableRef(&sqlast.TableName{Name: name("c")}))
	inner := as[*sqlast.JoinRef](t, j.Left)
	eq(t, "inner Kind", inner.Kind, "INNER")
	eq(t, "inner On", sqlast.FormatExpr(inner.On), "a.x = b.x")

	s = mustParse(t, "ALTER PIPE p AS COPY INTO t FROM VOLUME v USING CSV")
	ap := as[*sqlast.AlterPipe](t, s)
	eq(t, "Action", ap.Action, "SET_COPY")
	eq(t, "Copy.Text", ap.Copy.Text, "COPY INTO t FROM VOLUME v USING CSV")
	eq(t, "Copy.Start", ap.Copy.Start, sqlast.Pos{Offset: 16, Line: 1, Col: 17})

	s = mustParse(t, "CREATE DYNAMIC TABLE d REFRESH INTERVAL '30' SECONDS AS\n  SELECT 1 -- trailing\n")
	dt := as[*sqlast.CreateDynamicTable](t, s)
	eq(t, "IntervalN", dt.IntervalN, 30)
	eq(t, "IntervalUnit", dt.IntervalUnit, "SECOND")
	eq(t, "QueryText", dt.QueryText, "SELECT 1")
	eq(t, "Text", dt.Text, "CREATE DYNAMIC TABLE d REFRESH INTERVAL '30' SECONDS AS\n  SELECT 1")

	s = mustParse(t, "CREATE TABLE STREAM s ON TABLE t WITH PROPERTIES ('TABLE_STREAM_MODE' = 'STANDARD')")
	ts := as[*sqlast.CreateTableStream](t, s)
	eq(t, "Props", kv(ts.Props), []string{"TABLE_STREAM_MODE=STANDARD"})
	eq(t, "Table", ts.Table, name("t"))

	s = mustParse(t, "CREATE STORAGE CONNECTION c TYPE OSS 'Endpoint' = 'e' `Region` = 'r'")
	eq(t, "string keys kept", kv(as[*sqlast.CreateConnection](t, s).Props), []string{"Endpoint=e", "Region=r"})

	s = mustParse(t, "COPY INTO VOLUME v FROM TABLE t FILE_FORMAT = (TYPE = CSV, FIELD_DELIMITER = '|', header = true)")
	cv := as[*sqlast.CopyIntoVolume](t, s)
	eq(t, "FormatOptions", kv(cv.FormatOptions), []string{"field_delimiter=|", "header=true"})

	s = mustParse(t, "SELECT * FROM t ORDER BY a NULLS FIRST, b DESC NULLS LAST")
	ob := as[*sqlast.QueryStmt](t, s).Query.OrderBy
	eq(t, "NullsFirst[0]", *ob[0].NullsFirst, true)
	eq(t, "NullsFirst[1]", *ob[1].NullsFirst, false)
	eq(t, "Desc[1]", ob[1].Desc, true)

	s = mustParse(t, "SHOW DYNAMIC TABLE REFRESH HISTORY LIMIT 3")
	eq(t, "Limit", *as[*sqlast.ShowRefreshHistory](t, s).Limit, 3)

	e, err := ParseExpr("INTERVAL '1' DAY")
	if err != nil {
		t.Fatal(err)
	}
	eq(t, "interval", unspanned(e), sqlast.Expr(&sqlast.IntervalExpr{Value: &sqlast.Literal{Kind: sqlast.LitString, Value: "1"}, Unit: "DAY"}))
	// The unit may be inside a string (INTERVAL '3 hours'), for the
	// evaluator to read.
	e, err = ParseExpr("INTERVAL '3 hours'")
	if err != nil {
		t.Fatal(err)
	}
	eq(t, "interval in a string", unspanned(e), sqlast.Expr(&sqlast.IntervalExpr{Value: &sqlast.Literal{Kind: sqlast.LitString, Value: "3 hours"}}))

	// CURRENT_TIMESTAMP and CURRENT_DATE without parentheses are calls; a
	// column of that name is quoted or qualified.
	e, err = ParseExpr("CURRENT_TIMESTAMP + `current_date` + t.current_date + current_date")
	if err != nil {
		t.Fatal(err)
	}
	eq(t, "niladic", sqlast.FormatExpr(e), "current_timestamp() + `current_date` + t.`current_date` + current_date()")

	q, err := ParseQuery("SELECT 1;")
	if err != nil {
		t.Fatal(err)
	}
	eq(t, "ParseQuery", sqlast.FormatQuery(q), "SELECT 1")
}

func TestErrors(t *testing.T) {
	cases := []struct{ src, want string }{
		{"SELECT * FROM", "line 1, column 14: syntax error at end of input: expected a table name"},
		{"MERGE INTO t USING s ON t.id = s.id", "line 1, column 36: syntax error at end of input: expected WHEN MATCHED THEN … or WHEN NOT MATCHED THEN …"},
		{"MERGE INTO t USING s ON t.id = s.id WHEN NOT MATCHED THEN UPDATE SET v = 1", "line 1, column 59: syntax error near 'UPDATE': expected INSERT [(columns)] VALUES (…) after WHEN NOT MATCHED THEN"},
		{"MERGE INTO t USING s ON t.id = s.id WHEN MATCHED THEN INSERT VALUES (1)", "line 1, column 55: syntax error near 'INSERT': expected UPDATE SET … or DELETE after WHEN MATCHED THEN"},
		{"MERGE INTO t USING VOLUME v USING CSV ON 1 WHEN MATCHED THEN DELETE", "line 1, column 20: syntax error near 'VOLUME': expected a table, a table stream or (SELECT …) after USING"},
		{"CREATE TABLE t (a INT PRIMARY KEY, b INT, PRIMARY KEY (b))", "line 1, column 43: syntax error near 'PRIMARY': PRIMARY KEY is declared twice"},
		{"SELECT a,\n  b\nFROM WHERE x", "line 3, column 6: syntax error near 'WHERE': expected a table name"},
		{"\n\nSELECT a FROM t, FROM", "line 3, column 18: syntax error near 'FROM': expected a table name"},
		{"SELECT 'abc", "line 1, column 8: syntax error near ''…'': unterminated string literal"},
		{"SELECT 1 /* never closed", "line 1, column 10: syntax error near '/*': unterminated comment"},
		{"SELECT `x", "line 1, column 8: syntax error near '`x': unterminated quoted identifier"},
		{"SELECT '数据' FROM", "line 1, column 17: syntax error at end of input: expected a table name"},
		{"SELECT * FROM VOLUME v", "line 1, column 23: syntax error at end of input: expected USING CSV, JSON or PARQUET"},
		{"SELECT \u1039", "line 1, column 8: syntax error near '\u1039': unexpected character"},
		{"SELECT '数据', # FROM t", "line 1, column 14: syntax error near '#': unexpected character"},
		{"CREATE STORAGE CONNECTION c ENDPOINT = 'x'", "line 1, column 43: syntax error at end of input: expected TYPE OSS, COS or S3"},
		{"CREATE STORAGE CONNECTION c TYPE HDFS", "line 1, column 34: syntax error near 'HDFS': expected the connection type OSS, COS or S3"},
		{"CREATE EXTERNAL VOLUME v USING CONNECTION c", "line 1, column 44: syntax error at end of input: expected LOCATION 'oss://bucket/dir/'"},
		{"CREATE EXTERNAL VOLUME v LOCATION 'oss://b/d/' DIRECTORY = (ENABLE = YES)", "line 1, column 70: syntax error near 'YES': ENABLE expects TRUE or FALSE"},
		{"COPY INTO t FROM VOLUME v USING XML", "line 1, column 33: syntax error near 'XML': expected the file format CSV, JSON or PARQUET"},
		{"COPY INTO t FROM t2", "line 1, column 18: syntax error near 't2': expected VOLUME <volume> … or (SELECT …)"},
		{"CREATE PIPE p AS COPY INTO VOLUME v FROM TABLE t", "line 1, column 18: syntax error near 'COPY': a pipe loads into a table: expected COPY INTO <table>, not COPY INTO VOLUME"},
		{"CREATE PIPE p VIRTUAL_CLUSTER = 'x'", "line 1, column 36: syntax error at end of input: expected a pipe property (KEY = 'value'), COMMENT or AS COPY INTO …"},
		{"SELECT 1;;", "line 1, column 10: syntax error near ';': expected end of input after the statement (one statement only)"},
		{"SELECT 1; SELECT 2", "line 1, column 11: syntax error near 'SELECT': expected end of statement"},
		{"SELECT (1", "line 1, column 10: syntax error at end of input: expected ')'"},
		{"SELECT CAST(a AS FOO) FROM t", "line 1, column 18: syntax error near 'FOO': expected a type name (INT, BIGINT, DECIMAL(p,s), STRING, TIMESTAMP, ARRAY<…>, …)"},
		{"CREATE TABLE t (\n  a INT,\n  b DECIMAL(10,2,3)\n)", "line 3, column 18: syntax error near '3': DECIMAL takes at most 2 parameter(s)"},
		{"DROP SCHEMA x", "line 1, column 6: syntax error near 'SCHEMA': expected TABLE, VOLUME, CONNECTION, PIPE, DYNAMIC TABLE or TABLE STREAM after DROP"},
		{"", "line 1, column 1: syntax error at end of input: expected a statement"},
		{"-- only a comment\n", "line 2, column 1: syntax error at end of input: expected a statement"},
		{"CREATE OR REPLACE PIPE p AS COPY INTO t FROM VOLUME v USING CSV", "line 1, column 19: syntax error near 'PIPE': OR REPLACE is supported only for DYNAMIC TABLE and TABLE STREAM"},
		{"CREATE DYNAMIC TABLE d REFRESH INTERVAL 1 WEEK AS SELECT 1", "line 1, column 43: syntax error near 'WEEK': expected SECOND, MINUTE, HOUR or DAY"},
		{"SELECT a FROM t WHERE", "line 1, column 22: syntax error at end of input: expected an expression"},
		{"SELECT now() - INTERVAL 3", "line 1, column 26: syntax error at end of input: expected the unit of the INTERVAL (YEAR, QUARTER, MONTH, WEEK, DAY, HOUR, MINUTE, SECOND, MILLISECOND or MICROSECOND)"},
		{"SELECT ts + INTERVAL (1 + 2) days2 FROM t", "line 1, column 30: syntax error near 'days2': expected the unit of the INTERVAL (YEAR, QUARTER, MONTH, WEEK, DAY, HOUR, MINUTE, SECOND, MILLISECOND or MICROSECOND)"},
		{"SELECT CASE WHEN a THEN b", "line 1, column 26: syntax error at end of input: expected END to close CASE"},
		{"SELECT sum(x) OVER (ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) FROM t", "line 1, column 21: syntax error near 'ROWS': expected ')' (a window has PARTITION BY and ORDER BY only; frames are not supported)"},
		{"INSERT INTO t", "line 1, column 14: syntax error at end of input: expected VALUES (…) or SELECT …"},
		{"SELECT ``", "line 1, column 8: syntax error near '``': empty identifier"},
		{"CREATE TABLE a.b.c.d (x INT)", "line 1, column 19: syntax error near '.': a name has at most three parts (workspace.schema.name)"},
		{"CREATE EXTERNAL VOLUME v LOCATION 'a' LOCATION 'b' USING CONNECTION c", "line 1, column 39: syntax error near 'LOCATION': LOCATION is given twice"},
	}
	for _, c := range cases {
		_, err := Parse(c.src)
		if err == nil {
			t.Errorf("Parse(%q) succeeded, want %s", c.src, c.want)
			continue
		}
		var se *SyntaxError
		if !errors.As(err, &se) {
			t.Errorf("Parse(%q): error %T is not a *SyntaxError", c.src, err)
		}
		if err.Error() != c.want {
			t.Errorf("Parse(%q)\n got: %s\nwant: %s", c.src, err, c.want)
		}
	}
}

func TestScriptErrorPositions(t *testing.T) {
	script := "SELECT 1;\n\n-- the next one is broken\nSELECT * FROM t WHERE;\nSELECT 2;"
	_, err := ParseScript(script)
	want := "line 4, column 22: syntax error at end of input: expected an expression"
	if err == nil || err.Error() != want {
		t.Errorf("got %v, want %s", err, want)
	}
	var se *SyntaxError
	if errors.As(err, &se) && se.Pos.Offset != strings.Index(script, ";\nSELECT 2") {
		t.Errorf("offset %d", se.Pos.Offset)
	}

	script = "CREATE TABLE t (a INT);\nCREATE TABLE u (\n  a INT,\n  b FOO\n);"
	_, err = ParseScript(script)
	want = "line 4, column 5: syntax error near 'FOO': expected a type name (INT, BIGINT, DECIMAL(p,s), STRING, TIMESTAMP, ARRAY<…>, …)"
	if err == nil || err.Error() != want {
		t.Errorf("got %v, want %s", err, want)
	}

	chunks, err := Split(script)
	if err != nil {
		t.Fatal(err)
	}
	_, err = ParseChunk(chunks[1])
	if err == nil || err.Error() != want {
		t.Errorf("ParseChunk: got %v, want %s", err, want)
	}

	stmts, err := ParseScript("  SELECT 1 ;\n  /* c */ SELECT\n 2")
	if err != nil {
		t.Fatal(err)
	}
	var starts []sqlast.Pos
	for _, s := range stmts {
		p, _ := s.Span()
		starts = append(starts, p)
	}
	eq(t, "starts", starts, []sqlast.Pos{{Offset: 2, Line: 1, Col: 3}, {Offset: 23, Line: 2, Col: 11}})
	_, text := stmts[1].Span()
	eq(t, "text", text, "SELECT\n 2")
}

func TestSplit(t *testing.T) {
	src := "SELECT ';' ; SELECT \"a;b\";SELECT `c;d`; -- x;y\n SELECT 1 /* ; */ ; ;;  \n" +
		"SELECT 'it''s;', 'a\\';b' ;\n-- trailing; comment\n/* ; */"
	chunks, err := Split(src)
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, c := range chunks {
		texts = append(texts, c.Text)
		if src[c.Start.Offset:c.Start.Offset+len(c.Text)] != c.Text {
			t.Errorf("Start %+v does not point at %q", c.Start, c.Text)
		}
	}
	eq(t, "texts", texts, []string{"SELECT ';'", `SELECT "a;b"`, "SELECT `c;d`", "SELECT 1", `SELECT 'it''s;', 'a\';b'`})
	eq(t, "start 4", chunks[3].Start, sqlast.Pos{Offset: 48, Line: 2, Col: 2})
	eq(t, "start 5", chunks[4].Start, sqlast.Pos{Offset: strings.Index(src, "SELECT 'it"), Line: 3, Col: 1})

	for _, empty := range []string{"", "  ", ";;", "-- c;\n", "/* a; */ ; -- b"} {
		chunks, err := Split(empty)
		if err != nil || len(chunks) != 0 {
			t.Errorf("Split(%q) = %v, %v", empty, chunks, err)
		}
	}
	if _, err := Split("SELECT 1; SELECT 'open;"); err == nil || err.Error() != "line 1, column 18: syntax error near ''…'': unterminated string literal" {
		t.Errorf("unterminated: %v", err)
	}
}

func TestInspect(t *testing.T) {
	s := mustParse(t, "INSERT INTO t SELECT a, f(b) FROM u JOIN (SELECT c FROM v WHERE d IN (SELECT e FROM w)) x ON u.k = x.k")
	var cols []string
	depth, maxDepth := 0, 0
	sqlast.Inspect(s, func(n any) bool {
		if n == nil {
			depth--
			return true
		}
		depth++
		if depth > maxDepth {
			maxDepth = depth
		}
		if c, ok := n.(*sqlast.ColumnRef); ok {
			cols = append(cols, strings.Join(c.Parts, "."))
		}
		return true
	})
	eq(t, "columns", cols, []string{"a", "b", "c", "d", "e", "u.k", "x.k"})
	eq(t, "balanced", depth, 0)
	if maxDepth < 8 {
		t.Errorf("max depth %d", maxDepth)
	}

	// Returning false prunes: subqueries are not entered.
	cols = nil
	sqlast.Inspect(s, func(n any) bool {
		if _, ok := n.(*sqlast.SubqueryRef); ok {
			return false
		}
		if c, ok := n.(*sqlast.ColumnRef); ok {
			cols = append(cols, strings.Join(c.Parts, "."))
		}
		return true
	})
	eq(t, "pruned", cols, []string{"a", "b", "u.k", "x.k"})

	// Pipes reach their COPY's query; table functions are visited.
	p := mustParse(t, docCases[5].sql)
	var funcs []string
	sqlast.Inspect(p, func(n any) bool {
		if f, ok := n.(*sqlast.FuncCall); ok {
			funcs = append(funcs, f.Name)
		}
		return true
	})
	eq(t, "funcs", funcs, []string{"read_kafka", "map"})
	sqlast.Inspect(nil, func(any) bool { t.Error("called for nil"); return true })
}
