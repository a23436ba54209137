package sqlparse

import (
	"testing"

	"github.com/lakepipe/lakepipe/internal/sqlast"
)

// docCase is one SQL statement copied verbatim (with its semicolon) from a
// page of the ClickZetta Lakehouse documentation, and a check of its syntax tree.
type docCase struct {
	doc   string
	sql   string
	check func(t *testing.T, s sqlast.Statement)
}

// docCases are every statement of the ClickZetta Lakehouse documentation. Table-cell fragments such as
// "CREATE PIPE ... AS COPY INTO ... FROM READ_KAFKA(...)" are not statements
// and are left out.
var docCases = []docCase{
	{
		doc: "pipe-and-table-stream",
		sql: `CREATE STORAGE CONNECTION my_oss_conn
TYPE OSS
ENDPOINT = 'oss-cn-hangzhou.aliyuncs.com'
ACCESS_ID = '...'
ACCESS_KEY = '...';`,
		check: func(t *testing.T, s sqlast.Statement) {
			c := as[*sqlast.CreateConnection](t, s)
			eq(t, "Name", c.Name, "my_oss_conn")
			eq(t, "Kind", c.Kind, "OSS")
			eq(t, "Props", kv(c.Props), []string{"endpoint=oss-cn-hangzhou.aliyuncs.com", "access_id=...", "access_key=..."})
			eq(t, "IfNotExists", c.IfNotExists, false)
			eq(t, "Props[1].Pos", c.Props[1].Pos, sqlast.Pos{Offset: 89, Line: 4, Col: 1})
		},
	},
	{
		doc: "pipe-and-table-stream",
		sql: `CREATE EXTERNAL VOLUME orders_pipe_vol
LOCATION 'oss://my-bucket/orders_incoming/'
USING CONNECTION my_oss_conn
DIRECTORY = (ENABLE = TRUE, AUTO_REFRESH = TRUE)
RECURSIVE = TRUE;`,
		check: func(t *testing.T, s sqlast.Statement) {
			v := as[*sqlast.CreateVolume](t, s)
			eq(t, "Name", v.Name, "orders_pipe_vol")
			eq(t, "Location", v.Location, "oss://my-bucket/orders_incoming/")
			eq(t, "Connection", v.Connection, "my_oss_conn")
			eq(t, "DirectoryEnable", v.DirectoryEnable, true)
			eq(t, "AutoRefresh", v.AutoRefresh, true)
			eq(t, "Recursive", v.Recursive, true)
			eq(t, "Comment", v.Comment, (*string)(nil))
		},
	},
	{
		doc: "pipe-and-table-stream",
		sql: `CREATE TABLE IF NOT EXISTS orders (
order_id INT,
amount DECIMAL(10,2),
status STRING
);`,
		check: func(t *testing.T, s sqlast.Statement) {
			c := as[*sqlast.CreateTable](t, s)
			eq(t, "Name", c.Name, name("orders"))
			eq(t, "IfNotExists", c.IfNotExists, true)
			eq(t, "Columns", cols(c.Columns), []string{"order_id INT", "amount DECIMAL(10, 2)", "status STRING"})
			eq(t, "Columns[1].Type", c.Columns[1].Type, sqlast.TypeName{Name: "DECIMAL", Params: []int{10, 2}})
			eq(t, "Columns[2].Pos", c.Columns[2].Pos, sqlast.Pos{Offset: 72, Line: 4, Col: 1})
		},
	},
	{
		doc: "pipe-and-table-stream",
		sql: `CREATE PIPE orders_oss_pipe
VIRTUAL_CLUSTER = 'default'
INGEST_MODE = 'LIST_PURGE'
AS
COPY INTO orders
FROM VOLUME orders_pipe_vol (order_id INT, amount DECIMAL(10,2), status STRING)
USING CSV OPTIONS('header' = 'true')
PURGE = TRUE;`,
		check: func(t *testing.T, s sqlast.Statement) {
			p := as[*sqlast.CreatePipe](t, s)
			eq(t, "Name", p.Name, "orders_oss_pipe")
			eq(t, "Props", kv(p.Props), []string{"virtual_cluster=default", "ingest_mode=LIST_PURGE"})
			c := p.Copy
			eq(t, "Copy.Table", c.Table, name("orders"))
			eq(t, "Copy.Start", c.Start, sqlast.Pos{Offset: 86, Line: 5, Col: 1})
			eq(t, "Copy.Text", c.Text, "COPY INTO orders\nFROM VOLUME orders_pipe_vol (order_id INT, amount DECIMAL(10,2), status STRING)\nUSING CSV OPTIONS('header' = 'true')\nPURGE = TRUE")
			eq(t, "Copy.Query", c.Query, (*sqlast.Query)(nil))
			eq(t, "Volume.Volume", c.Volume.Volume, "orders_pipe_vol")
			eq(t, "Volume.Schema", cols(c.Volume.Schema), []string{"order_id INT", "amount DECIMAL(10, 2)", "status STRING"})
			eq(t, "Volume.Format", c.Volume.Format, "CSV")
			eq(t, "Volume.Options", kv(c.Volume.Options), []string{"header=true"})
			eq(t, "Purge", c.Purge, true)
			eq(t, "Options", c.Options, []sqlast.Property(nil))
		},
	},
	{
		doc: "pipe-and-table-stream",
		sql: `SELECT * FROM load_history('orders');`,
		check: func(t *testing.T, s sqlast.Statement) {
			q := as[*sqlast.QueryStmt](t, s).Query
			sel := as[*sqlast.Select](t, q.Body)
			eq(t, "Items", sel.Items, []sqlast.SelectItem{{Star: true}})
			f := as[*sqlast.FuncRef](t, sel.From[0])
			eq(t, "Func", sqlast.FormatExpr(f.Func), "load_history('orders')")
			eq(t, "Wrapped", f.Wrapped, false)
		},
	},
	{
		doc: "pipe-and-table-stream",
		sql: `CREATE PIPE kafka_orders_pipe
VIRTUAL_CLUSTER = 'default'
BATCH_INTERVAL_IN_SECONDS = '60'
AS
COPY INTO orders_raw
FROM (
SELECT CAST(value AS STRING) AS raw_msg
FROM TABLE(READ_KAFKA(
'kafka-host:9092', -- bootstrap.servers
'orders_topic', -- topic
'', -- topic pattern（暂不支持，留空）
'pipe_orders_group', -- group_id（同 Topic 不同 Pipe 必须不同）
'', '', '', '', -- 起止位点和时间戳，Pipe 自动管理
'raw', 'raw', -- key/value 格式
0, map() -- 最大错误数、额外 Kafka 配置
))
);`,
		check: func(t *testing.T, s sqlast.Statement) {
			p := as[*sqlast.CreatePipe](t, s)
			eq(t, "Name", p.Name, "kafka_orders_pipe")
			eq(t, "Props", kv(p.Props), []string{"virtual_cluster=default", "batch_interval_in_seconds=60"})
			c := p.Copy
			eq(t, "Copy.Table", c.Table, name("orders_raw"))
			eq(t, "Copy.Volume", c.Volume, (*sqlast.VolumeSource)(nil))
			eq(t, "Copy.Start.Line", c.Start.Line, 5)
			sel := as[*sqlast.Select](t, c.Query.Body)
			eq(t, "Items", sqlast.FormatExpr(sel.Items[0].Expr), "CAST(value AS STRING)")
			eq(t, "Alias", sel.Items[0].Alias, "raw_msg")
			f := as[*sqlast.FuncRef](t, sel.From[0])
			eq(t, "Wrapped", f.Wrapped, true)
			eq(t, "Func.Name", f.Func.Name, "read_kafka")
			eq(t, "Func.Args", sqlast.FormatExpr(f.Func), "read_kafka('kafka-host:9092', 'orders_topic', '', 'pipe_orders_group', '', '', '', '', 'raw', 'raw', 0, map())")
			eq(t, "map()", f.Func.Args[11], sqlast.Expr(&sqlast.FuncCall{Name: "map"}))
		},
	},
	{
		doc: "pipe-and-table-stream",
		sql: `SHOW PIPES;`,
		check: func(t *testing.T, s sqlast.Statement) {
			eq(t, "stmt", s, sqlast.Statement(&sqlast.ShowPipes{StmtBase: sqlast.StmtBase{Start: sqlast.Pos{Line: 1, Col: 1}, Text: "SHOW PIPES"}}))
		},
	},
	{
		doc: "pipe-and-table-stream",
		sql: `DESC PIPE orders_oss_pipe;`,
		check: func(t *testing.T, s sqlast.Statement) {
			d := as[*sqlast.DescPipe](t, s)
			eq(t, "Name", d.Name, "orders_oss_pipe")
			eq(t, "Extended", d.Extended, false)
		},
	},
	{
		doc: "pipe-and-table-stream",
		sql: `ALTER PIPE orders_oss_pipe REFRESH;`,
		check: func(t *testing.T, s sqlast.Statement) {
			a := as[*sqlast.AlterPipe](t, s)
			eq(t, "Name", a.Name, "orders_oss_pipe")
			eq(t, "Action", a.Action, "REFRESH")
		},
	},
	{
		doc: "pipe-and-table-stream",
		sql: `ALTER PIPE orders_oss_pipe SET PIPE_EXECUTION_PAUSED = TRUE;`,
		check: func(t *testing.T, s sqlast.Statement) {
			a := as[*sqlast.AlterPipe](t, s)
			eq(t, "Name", a.Name, "orders_oss_pipe")
			eq(t, "Action", a.Action, "SET")
			eq(t, "Props", kv(a.Props), []string{"pipe_execution_paused=true"})
		},
	},
	{
		doc: "pipe-and-table-stream",
		sql: `ALTER PIPE orders_oss_pipe SET PIPE_EXECUTION_PAUSED = FALSE;`,
		check: func(t *testing.T, s sqlast.Statement) {
			a := as[*sqlast.AlterPipe](t, s)
			eq(t, "Action", a.Action, "SET")
			eq(t, "Props", kv(a.Props), []string{"pipe_execution_paused=false"})
		},
	},
	{
		doc: "pipe-and-table-stream",
		sql: `DROP PIPE orders_oss_pipe;`,
		check: func(t *testing.T, s sqlast.Statement) {
			d := as[*sqlast.DropPipe](t, s)
			eq(t, "Name", d.Name, "orders_oss_pipe")
			eq(t, "IfExists", d.IfExists, false)
		},
	},
	{
		doc: "pipe-guide-kafka-and-volume",
		sql: `CREATE TABLE IF NOT EXISTS kafka_logs (
log_time TIMESTAMP,
level STRING,
message STRING
);`,
		check: func(t *testing.T, s sqlast.Statement) {
			c := as[*sqlast.CreateTable](t, s)
			eq(t, "Name", c.Name, name("kafka_logs"))
			eq(t, "Columns", cols(c.Columns), []string{"log_time TIMESTAMP", "level STRING", "message STRING"})
		},
	},
	{
		doc: "pipe-guide-kafka-and-volume",
		sql: `CREATE TABLE IF NOT EXISTS oss_data (
id INT,
value STRING
);`,
		check: func(t *testing.T, s sqlast.Statement) {
			c := as[*sqlast.CreateTable](t, s)
			eq(t, "Name", c.Name, name("oss_data"))
			eq(t, "Columns", cols(c.Columns), []string{"id INT", "value STRING"})
		},
	},
	{
		doc: "pipe-guide-kafka-and-volume",
		sql: `CREATE PIPE pipe_kafka_logs
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
);`,
		check: func(t *testing.T, s sqlast.Statement) {
			p := as[*sqlast.CreatePipe](t, s)
			eq(t, "Name", p.Name, "pipe_kafka_logs")
			eq(t, "Props", kv(p.Props), []string{"virtual_cluster=default", "batch_interval_in_seconds=30"})
			c := p.Copy
			eq(t, "Copy.Table", c.Table, name("kafka_logs"))
			sel := as[*sqlast.Select](t, c.Query.Body)
			var items []string
			for _, it := range sel.Items {
				items = append(items, sqlast.FormatExpr(it.Expr)+" AS "+it.Alias)
			}
			eq(t, "Items", items, []string{
				"CAST(parse_json(value::STRING)['time'] AS TIMESTAMP) AS log_time",
				"parse_json(value::STRING)['level']::STRING AS level",
				"parse_json(value::STRING)['message']::STRING AS message",
			})
			cast := as[*sqlast.CastExpr](t, sel.Items[1].Expr)
			eq(t, "DoubleColon", cast.DoubleColon, true)
			idx := as[*sqlast.IndexExpr](t, cast.X)
			eq(t, "Index", unspanned(idx.Index), sqlast.Expr(&sqlast.Literal{Kind: sqlast.LitString, Value: "level"}))
			f := as[*sqlast.FuncRef](t, sel.From[0])
			eq(t, "Wrapped", f.Wrapped, false)
			eq(t, "Func", sqlast.FormatExpr(f.Func), "read_kafka('kafka-broker:9092', 'app_logs', '', 'lakehouse_consumer', '', '', '', '', 'raw', 'raw', 0, map())")
		},
	},
	{
		doc: "pipe-guide-kafka-and-volume",
		sql: `CREATE PIPE pipe_oss_data
VIRTUAL_CLUSTER = 'default'
BATCH_INTERVAL_IN_SECONDS = '60'
AS
COPY INTO oss_data
FROM VOLUME my_oss_volume
USING CSV OPTIONS ('header' = 'true');`,
		check: func(t *testing.T, s sqlast.Statement) {
			p := as[*sqlast.CreatePipe](t, s)
			eq(t, "Name", p.Name, "pipe_oss_data")
			eq(t, "Props", kv(p.Props), []string{"virtual_cluster=default", "batch_interval_in_seconds=60"})
			c := p.Copy
			eq(t, "Copy.Table", c.Table, name("oss_data"))
			eq(t, "Volume.Volume", c.Volume.Volume, "my_oss_volume")
			eq(t, "Volume.Schema", c.Volume.Schema, []sqlast.ColumnDef(nil))
			eq(t, "Volume.Format", c.Volume.Format, "CSV")
			eq(t, "Volume.Options", kv(c.Volume.Options), []string{"header=true"})
			eq(t, "Purge", c.Purge, false)
		},
	},
	{
		doc: "pipe-guide-kafka-and-volume",
		sql: `SHOW PIPES LIKE 'pipe_kafka_logs';`,
		check: func(t *testing.T, s sqlast.Statement) {
			sp := as[*sqlast.ShowPipes](t, s)
			eq(t, "Like", sp.Like, str("pipe_kafka_logs"))
		},
	},
	{
		doc: "pipe-guide-kafka-and-volume",
		sql: `ALTER PIPE pipe_kafka_logs EXECUTE;`,
		check: func(t *testing.T, s sqlast.Statement) {
			a := as[*sqlast.AlterPipe](t, s)
			eq(t, "Name", a.Name, "pipe_kafka_logs")
			eq(t, "Action", a.Action, "EXECUTE")
		},
	},
	{
		doc: "pipe-guide-kafka-and-volume",
		sql: `DROP PIPE pipe_kafka_logs;`,
		check: func(t *testing.T, s sqlast.Statement) {
			eq(t, "Name", as[*sqlast.DropPipe](t, s).Name, "pipe_kafka_logs")
		},
	},
	{
		doc: "pipe-guide-kafka-and-volume",
		sql: `DROP TABLE IF EXISTS kafka_logs;`,
		check: func(t *testing.T, s sqlast.Statement) {
			d := as[*sqlast.DropTable](t, s)
			eq(t, "Name", d.Name, name("kafka_logs"))
			eq(t, "IfExists", d.IfExists, true)
		},
	},
	{
		doc: "pipe-guide-kafka-and-volume",
		sql: `DROP TABLE IF EXISTS oss_data;`,
		check: func(t *testing.T, s sqlast.Statement) {
			d := as[*sqlast.DropTable](t, s)
			eq(t, "Name", d.Name, name("oss_data"))
			eq(t, "IfExists", d.IfExists, true)
		},
	},
	{
		doc: "pipe-guide-kafka-and-volume",
		sql: `DROP PIPE IF EXISTS pipe_kafka_logs;`,
		check: func(t *testing.T, s sqlast.Statement) {
			d := as[*sqlast.DropPipe](t, s)
			eq(t, "Name", d.Name, "pipe_kafka_logs")
			eq(t, "IfExists", d.IfExists, true)
		},
	},
	{
		doc: "pipe-guide-kafka-and-volume",
		sql: `DROP PIPE IF EXISTS pipe_oss_data;`,
		check: func(t *testing.T, s sqlast.Statement) {
			d := as[*sqlast.DropPipe](t, s)
			eq(t, "Name", d.Name, "pipe_oss_data")
			eq(t, "IfExists", d.IfExists, true)
		},
	},
	{
		doc: "volume-pipe-dynamic-table-end-to-end",
		sql: `CREATE STORAGE CONNECTION IF NOT EXISTS my_oss_conn TYPE OSS access_id = '<your_access_key_id>' access_key = '<your_access_key_secret>' ENDPOINT = 'oss-cn-shanghai.aliyuncs.com';`,
		check: func(t *testing.T, s sqlast.Statement) {
			c := as[*sqlast.CreateConnection](t, s)
			eq(t, "IfNotExists", c.IfNotExists, true)
			eq(t, "Name", c.Name, "my_oss_conn")
			eq(t, "Kind", c.Kind, "OSS")
			eq(t, "Props", kv(c.Props), []string{"access_id=<your_access_key_id>", "access_key=<your_access_key_secret>", "endpoint=oss-cn-shanghai.aliyuncs.com"})
		},
	},
	{
		doc: "volume-pipe-dynamic-table-end-to-end",
		sql: `CREATE EXTERNAL VOLUME IF NOT EXISTS my_data_vol LOCATION 'oss://my-bucket/data/' USING CONNECTION my_oss_conn DIRECTORY = (ENABLE = TRUE, AUTO_REFRESH = FALSE) RECURSIVE = TRUE COMMENT '数据湖加速专用 Volume';`,
		check: func(t *testing.T, s sqlast.Statement) {
			v := as[*sqlast.CreateVolume](t, s)
			eq(t, "IfNotExists", v.IfNotExists, true)
			eq(t, "Name", v.Name, "my_data_vol")
			eq(t, "Location", v.Location, "oss://my-bucket/data/")
			eq(t, "Connection", v.Connection, "my_oss_conn")
			eq(t, "DirectoryEnable", v.DirectoryEnable, true)
			eq(t, "AutoRefresh", v.AutoRefresh, false)
			eq(t, "Recursive", v.Recursive, true)
			eq(t, "Comment", v.Comment, str("数据湖加速专用 Volume"))
		},
	},
	{
		doc: "volume-pipe-dynamic-table-end-to-end",
		sql: `CREATE TABLE IF NOT EXISTS sales_source ( id BIGINT COMMENT '订单ID', product STRING COMMENT '商品名', category STRING COMMENT '品类', amount DECIMAL(10,2) COMMENT '金额', dt STRING COMMENT '日期' ) COMMENT '数据湖加速测试源表';`,
		check: func(t *testing.T, s sqlast.Statement) {
			c := as[*sqlast.CreateTable](t, s)
			eq(t, "Name", c.Name, name("sales_source"))
			eq(t, "Columns", cols(c.Columns), []string{"id BIGINT COMMENT '订单ID'", "product STRING COMMENT '商品名'",
				"category STRING COMMENT '品类'", "amount DECIMAL(10, 2) COMMENT '金额'", "dt STRING COMMENT '日期'"})
			eq(t, "Comment", c.Comment, str("数据湖加速测试源表"))
			eq(t, "AsQuery", c.AsQuery, (*sqlast.Query)(nil))
		},
	},
	{
		doc: "volume-pipe-dynamic-table-end-to-end",
		sql: `INSERT INTO sales_source VALUES (1, 'iPhone 15', 'Electronics', 8999.00, '2026-06-01'), (2, 'MacBook Pro', 'Electronics', 14999.00, '2026-06-01'), (3, 'AirPods', 'Electronics', 1299.00, '2026-06-01'), (4, 'Nike Air Max', 'Sports', 899.00, '2026-06-01'), (5, 'Yoga Mat', 'Sports', 199.00, '2026-06-01');`,
		check: func(t *testing.T, s sqlast.Statement) {
			in := as[*sqlast.Insert](t, s)
			eq(t, "Table", in.Table, name("sales_source"))
			eq(t, "Overwrite", in.Overwrite, false)
			eq(t, "Columns", in.Columns, []string(nil))
			eq(t, "rows", len(in.Values), 5)
			eq(t, "row 0", sqlast.FormatExprs(in.Values[0]), "1, 'iPhone 15', 'Electronics', 8999.00, '2026-06-01'")
			eq(t, "row 4", sqlast.FormatExprs(in.Values[4]), "5, 'Yoga Mat', 'Sports', 199.00, '2026-06-01'")
			eq(t, "8999.00", unspanned(in.Values[0][3]), sqlast.Expr(&sqlast.Literal{Kind: sqlast.LitNumber, Value: "8999.00"}))
		},
	},
	{
		doc: "volume-pipe-dynamic-table-end-to-end",
		sql: `COPY INTO VOLUME my_data_vol SUBDIRECTORY 'export/' FROM TABLE sales_source FILE_FORMAT = (TYPE = CSV);`,
		check: func(t *testing.T, s sqlast.Statement) {
			c := as[*sqlast.CopyIntoVolume](t, s)
			eq(t, "Volume", c.Volume, "my_data_vol")
			eq(t, "Subdirectory", c.Subdirectory, "export/")
			eq(t, "FromTable", c.FromTable, &sqlast.ObjectName{Parts: []string{"sales_source"}})
			eq(t, "FromQuery", c.FromQuery, (*sqlast.Query)(nil))
			eq(t, "FileFormat", c.FileFormat, "CSV")
			eq(t, "FormatOptions", c.FormatOptions, []sqlast.Property(nil))
		},
	},
	{
		doc: "volume-pipe-dynamic-table-end-to-end",
		sql: `COPY INTO VOLUME my_data_vol SUBDIRECTORY 'export/' FROM TABLE sales_source FILE_FORMAT = (TYPE = PARQUET);`,
		check: func(t *testing.T, s sqlast.Statement) {
			c := as[*sqlast.CopyIntoVolume](t, s)
			eq(t, "Volume", c.Volume, "my_data_vol")
			eq(t, "Subdirectory", c.Subdirectory, "export/")
			eq(t, "FromTable", c.FromTable, &sqlast.ObjectName{Parts: []string{"sales_source"}})
			eq(t, "FileFormat", c.FileFormat, "PARQUET")
		},
	},
	{
		doc: "volume-pipe-dynamic-table-end-to-end",
		sql: `ALTER VOLUME my_data_vol REFRESH;`,
		check: func(t *testing.T, s sqlast.Statement) {
			a := as[*sqlast.AlterVolume](t, s)
			eq(t, "Name", a.Name, "my_data_vol")
			eq(t, "Action", a.Action, "REFRESH")
		},
	},
	{
		doc: "volume-pipe-dynamic-table-end-to-end",
		sql: `SELECT relative_path, size, last_modified_time FROM DIRECTORY(VOLUME my_data_vol) WHERE relative_path LIKE 'export/%';`,
		check: func(t *testing.T, s sqlast.Statement) {
			sel := as[*sqlast.Select](t, as[*sqlast.QueryStmt](t, s).Query.Body)
			eq(t, "Items", formatItems(sel.Items), "relative_path, size, last_modified_time")
			eq(t, "From", sel.From, []sqlast.TableRef{&sqlast.DirectoryRef{Volume: "my_data_vol"}})
			w := as[*sqlast.BinaryExpr](t, sel.Where)
			eq(t, "Where.Op", w.Op, "LIKE")
			eq(t, "Where.R", unspanned(w.R), sqlast.Expr(&sqlast.Literal{Kind: sqlast.LitString, Value: "export/%"}))
		},
	},
	{
		doc: "volume-pipe-dynamic-table-end-to-end",
		sql: `SELECT * FROM VOLUME my_data_vol USING CSV FILES('export/part00001.csv');`,
		check: func(t *testing.T, s sqlast.Statement) {
			sel := as[*sqlast.Select](t, as[*sqlast.QueryStmt](t, s).Query.Body)
			eq(t, "Items", sel.Items, []sqlast.SelectItem{{Star: true}})
			v := as[*sqlast.VolumeRef](t, sel.From[0])
			eq(t, "Source", v.Source, sqlast.VolumeSource{Volume: "my_data_vol", Format: "CSV", Files: []string{"export/part00001.csv"}})
			eq(t, "Alias", v.Alias, "")
		},
	},
	{
		doc: "volume-pipe-dynamic-table-end-to-end",
		sql: `SELECT id, product, category, amount, dt FROM VOLUME my_data_vol USING PARQUET FILES('export/part00001.parquet');`,
		check: func(t *testing.T, s sqlast.Statement) {
			sel := as[*sqlast.Select](t, as[*sqlast.QueryStmt](t, s).Query.Body)
			eq(t, "Items", formatItems(sel.Items), "id, product, category, amount, dt")
			v := as[*sqlast.VolumeRef](t, sel.From[0])
			eq(t, "Source", v.Source, sqlast.VolumeSource{Volume: "my_data_vol", Format: "PARQUET", Files: []string{"export/part00001.parquet"}})
		},
	},
	{
		doc: "volume-pipe-dynamic-table-end-to-end",
		sql: `CREATE EXTERNAL VOLUME IF NOT EXISTS pipe_vol LOCATION 'oss://my-bucket/data/incoming/' USING CONNECTION my_oss_conn DIRECTORY = (ENABLE = TRUE, AUTO_REFRESH = TRUE) RECURSIVE = TRUE COMMENT 'Pipe 持续导入专用 Volume';`,
		check: func(t *testing.T, s sqlast.Statement) {
			v := as[*sqlast.CreateVolume](t, s)
			eq(t, "Name", v.Name, "pipe_vol")
			eq(t, "Location", v.Location, "oss://my-bucket/data/incoming/")
			eq(t, "Connection", v.Connection, "my_oss_conn")
			eq(t, "AutoRefresh", v.AutoRefresh, true)
			eq(t, "Recursive", v.Recursive, true)
			eq(t, "Comment", v.Comment, str("Pipe 持续导入专用 Volume"))
		},
	},
	{
		doc: "volume-pipe-dynamic-table-end-to-end",
		sql: `CREATE TABLE IF NOT EXISTS sales_ods ( id BIGINT COMMENT '订单ID', product STRING COMMENT '商品名', category STRING COMMENT '品类', amount DECIMAL(10,2) COMMENT '金额', dt STRING COMMENT '日期' ) COMMENT 'ODS 层——Pipe 导入目标表';`,
		check: func(t *testing.T, s sqlast.Statement) {
			c := as[*sqlast.CreateTable](t, s)
			eq(t, "Name", c.Name, name("sales_ods"))
			eq(t, "Columns", len(c.Columns), 5)
			eq(t, "Columns[0]", cols(c.Columns[:1]), []string{"id BIGINT COMMENT '订单ID'"})
			eq(t, "Comment", c.Comment, str("ODS 层——Pipe 导入目标表"))
		},
	},
	{
		doc: "volume-pipe-dynamic-table-end-to-end",
		sql: `CREATE PIPE IF NOT EXISTS sales_pipe INGEST_MODE = 'LIST_PURGE' VIRTUAL_CLUSTER = 'DEFAULT' COMMENT '销售数据持续导入管道' AS COPY INTO sales_ods FROM VOLUME pipe_vol USING CSV PURGE = TRUE;`,
		check: func(t *testing.T, s sqlast.Statement) {
			p := as[*sqlast.CreatePipe](t, s)
			eq(t, "IfNotExists", p.IfNotExists, true)
			eq(t, "Name", p.Name, "sales_pipe")
			eq(t, "Props", kv(p.Props), []string{"ingest_mode=LIST_PURGE", "virtual_cluster=DEFAULT"})
			eq(t, "Comment", p.Comment, str("销售数据持续导入管道"))
			c := p.Copy
			eq(t, "Copy.Text", c.Text, "COPY INTO sales_ods FROM VOLUME pipe_vol USING CSV PURGE = TRUE")
			eq(t, "Copy.Table", c.Table, name("sales_ods"))
			eq(t, "Volume", *c.Volume, sqlast.VolumeSource{Volume: "pipe_vol", Format: "CSV"})
			eq(t, "Purge", c.Purge, true)
		},
	},
	{
		doc: "volume-pipe-dynamic-table-end-to-end",
		sql: `DESC PIPE EXTENDED sales_pipe;`,
		check: func(t *testing.T, s sqlast.Statement) {
			d := as[*sqlast.DescPipe](t, s)
			eq(t, "Name", d.Name, "sales_pipe")
			eq(t, "Extended", d.Extended, true)
		},
	},
	{
		doc: "volume-pipe-dynamic-table-end-to-end",
		sql: `ALTER PIPE sales_pipe SET PIPE_EXECUTION_PAUSED = TRUE;`,
		check: func(t *testing.T, s sqlast.Statement) {
			a := as[*sqlast.AlterPipe](t, s)
			eq(t, "Name", a.Name, "sales_pipe")
			eq(t, "Props", kv(a.Props), []string{"pipe_execution_paused=true"})
		},
	},
	{
		doc: "volume-pipe-dynamic-table-end-to-end",
		sql: `ALTER PIPE sales_pipe SET PIPE_EXECUTION_PAUSED = FALSE;`,
		check: func(t *testing.T, s sqlast.Statement) {
			a := as[*sqlast.AlterPipe](t, s)
			eq(t, "Name", a.Name, "sales_pipe")
			eq(t, "Props", kv(a.Props), []string{"pipe_execution_paused=false"})
		},
	},
	{
		doc: "volume-pipe-dynamic-table-end-to-end",
		sql: `SELECT * FROM load_history('sales_ods');`,
		check: func(t *testing.T, s sqlast.Statement) {
			sel := as[*sqlast.Select](t, as[*sqlast.QueryStmt](t, s).Query.Body)
			f := as[*sqlast.FuncRef](t, sel.From[0])
			eq(t, "Func", unspanned(f.Func), &sqlast.FuncCall{Name: "load_history", Args: []sqlast.Expr{&sqlast.Literal{Kind: sqlast.LitString, Value: "sales_ods"}}})
		},
	},
	{
		doc: "volume-pipe-dynamic-table-end-to-end",
		sql: `COPY INTO VOLUME pipe_vol SUBDIRECTORY '/' FROM (SELECT * FROM sales_source WHERE dt = '2026-06-01') FILE_FORMAT = (TYPE = CSV);`,
		check: func(t *testing.T, s sqlast.Statement) {
			c := as[*sqlast.CopyIntoVolume](t, s)
			eq(t, "Volume", c.Volume, "pipe_vol")
			eq(t, "Subdirectory", c.Subdirectory, "/")
			eq(t, "FromTable", c.FromTable, (*sqlast.ObjectName)(nil))
			eq(t, "FromQuery", sqlast.FormatQuery(c.FromQuery), "SELECT * FROM sales_source WHERE dt = '2026-06-01'")
			eq(t, "FileFormat", c.FileFormat, "CSV")
		},
	},
	{
		doc: "volume-pipe-dynamic-table-end-to-end",
		sql: `SELECT COUNT(*) FROM sales_ods;`,
		check: func(t *testing.T, s sqlast.Statement) {
			sel := as[*sqlast.Select](t, as[*sqlast.QueryStmt](t, s).Query.Body)
			eq(t, "Items", sel.Items, []sqlast.SelectItem{{Expr: &sqlast.FuncCall{Name: "count", Star: true}}})
			eq(t, "From", sel.From, []sqlast.TableRef{&sqlast.TableName{Name: name("sales_ods")}})
		},
	},
	{
		doc: "volume-pipe-dynamic-table-end-to-end",
		sql: `ALTER TABLE sales_ods SET PROPERTIES ('change_tracking' = 'true');`,
		check: func(t *testing.T, s sqlast.Statement) {
			a := as[*sqlast.AlterTable](t, s)
			eq(t, "Name", a.Name, name("sales_ods"))
			eq(t, "Action", a.Action, "SET_PROPERTIES")
			eq(t, "Props", kv(a.Props), []string{"change_tracking=true"})
		},
	},
	{
		doc: "volume-pipe-dynamic-table-end-to-end",
		sql: `CREATE OR REPLACE DYNAMIC TABLE sales_summary REFRESH INTERVAL 1 HOUR vcluster DEFAULT COMMENT '按品类汇总——增量刷新' AS SELECT category, COUNT(*) AS order_cnt, SUM(amount) AS total_amount, AVG(amount) AS avg_amount, MIN(dt) AS min_date, MAX(dt) AS max_date FROM sales_ods GROUP BY category;`,
		check: func(t *testing.T, s sqlast.Statement) {
			d := as[*sqlast.CreateDynamicTable](t, s)
			eq(t, "OrReplace", d.OrReplace, true)
			eq(t, "Name", d.Name, name("sales_summary"))
			eq(t, "IntervalN", d.IntervalN, 1)
			eq(t, "IntervalUnit", d.IntervalUnit, "HOUR")
			eq(t, "VCluster", d.VCluster, "default")
			eq(t, "Comment", d.Comment, str("按品类汇总——增量刷新"))
			eq(t, "QueryText", d.QueryText, "SELECT category, COUNT(*) AS order_cnt, SUM(amount) AS total_amount, AVG(amount) AS avg_amount, MIN(dt) AS min_date, MAX(dt) AS max_date FROM sales_ods GROUP BY category")
			sel := as[*sqlast.Select](t, d.Query.Body)
			eq(t, "Items", formatItems(sel.Items), "category, count(*) AS order_cnt, sum(amount) AS total_amount, avg(amount) AS avg_amount, min(dt) AS min_date, max(dt) AS max_date")
			eq(t, "GroupBy", sel.GroupBy, []sqlast.Expr{&sqlast.ColumnRef{Parts: []string{"category"}}})
		},
	},
	{
		doc: "volume-pipe-dynamic-table-end-to-end",
		sql: `REFRESH DYNAMIC TABLE sales_summary;`,
		check: func(t *testing.T, s sqlast.Statement) {
			eq(t, "Name", as[*sqlast.RefreshDynamicTable](t, s).Name, name("sales_summary"))
		},
	},
	{
		doc: "volume-pipe-dynamic-table-end-to-end",
		sql: `SELECT * FROM sales_summary ORDER BY category;`,
		check: func(t *testing.T, s sqlast.Statement) {
			q := as[*sqlast.QueryStmt](t, s).Query
			eq(t, "OrderBy", q.OrderBy, []sqlast.OrderItem{{Expr: &sqlast.ColumnRef{Parts: []string{"category"}}}})
			eq(t, "From", as[*sqlast.Select](t, q.Body).From, []sqlast.TableRef{&sqlast.TableName{Name: name("sales_summary")}})
		},
	},
	{
		doc: "volume-pipe-dynamic-table-end-to-end",
		sql: `SHOW DYNAMIC TABLE REFRESH HISTORY WHERE name = 'sales_summary';`,
		check: func(t *testing.T, s sqlast.Statement) {
			h := as[*sqlast.ShowRefreshHistory](t, s)
			eq(t, "Where", unspanned(h.Where), sqlast.Expr(&sqlast.BinaryExpr{Op: "=", L: &sqlast.ColumnRef{Parts: []string{"name"}}, R: &sqlast.Literal{Kind: sqlast.LitString, Value: "sales_summary"}}))
			eq(t, "Limit", h.Limit, (*int)(nil))
		},
	},
	{
		doc: "volume-pipe-dynamic-table-end-to-end",
		sql: `SELECT 'Source' AS stage, COUNT(*) AS rows FROM sales_source UNION ALL SELECT 'ODS' AS stage, COUNT(*) AS rows FROM sales_ods UNION ALL SELECT 'Summary' AS stage, COUNT(*) AS rows FROM sales_summary;`,
		check: func(t *testing.T, s sqlast.Statement) {
			q := as[*sqlast.QueryStmt](t, s).Query
			// UNION ALL is left-associative: (Source ∪ ODS) ∪ Summary.
			top := as[*sqlast.SetOp](t, q.Body)
			eq(t, "Op", top.Op, "UNION")
			eq(t, "All", top.All, true)
			left := as[*sqlast.SetOp](t, top.Left)
			eq(t, "Left.Op", left.Op, "UNION")
			right := as[*sqlast.Select](t, top.Right)
			eq(t, "Right", formatItems(right.Items), "'Summary' AS stage, count(*) AS rows")
			eq(t, "Right.From", right.From, []sqlast.TableRef{&sqlast.TableName{Name: name("sales_summary")}})
			eq(t, "Left.Left", formatItems(as[*sqlast.Select](t, left.Left).Items), "'Source' AS stage, count(*) AS rows")
		},
	},
}
