package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/lakepipe/lakepipe/internal/core"
	"github.com/lakepipe/lakepipe/internal/engine"
	"github.com/lakepipe/lakepipe/internal/sqlparse"
	"github.com/lakepipe/lakepipe/worker"
)

// demoSQL is the volume part of the ClickZetta Lakehouse documentation's guide "Volume + Pipe + Dynamic Table
// end-to-end": a connection and a volume on the local S3 server, a source
// table exported as CSV and Parquet, the directory listed, the files
// queried in place, and loaded into a table. {{…}} are filled in from the
// local stack's settings.
const demoSQL = `
DROP PIPE IF EXISTS sales_pipe;
DROP DYNAMIC TABLE IF EXISTS sales_summary;
DROP TABLE IF EXISTS sales_source;
DROP TABLE IF EXISTS sales_ods;
DROP VOLUME IF EXISTS pipe_vol;
DROP VOLUME IF EXISTS my_data_vol;
DROP STORAGE CONNECTION IF EXISTS my_oss_conn;

-- Step 1: a storage connection (the local S3 server stands in for OSS)
CREATE STORAGE CONNECTION IF NOT EXISTS my_oss_conn TYPE OSS
  access_id = '{{ACCESS_ID}}' access_key = '{{ACCESS_KEY}}' ENDPOINT = '{{ENDPOINT}}';

-- Step 2: an external volume on a bucket sub-directory
CREATE EXTERNAL VOLUME IF NOT EXISTS my_data_vol LOCATION 'oss://{{BUCKET}}/demo-{{RUN}}/data/'
  USING CONNECTION my_oss_conn DIRECTORY = (ENABLE = TRUE, AUTO_REFRESH = FALSE) RECURSIVE = TRUE
  COMMENT '数据湖加速专用 Volume';

-- Step 3: a source table, exported to the volume as CSV and as Parquet
CREATE TABLE IF NOT EXISTS sales_source ( id BIGINT COMMENT '订单ID', product STRING COMMENT '商品名',
  category STRING COMMENT '品类', amount DECIMAL(10,2) COMMENT '金额', dt STRING COMMENT '日期' ) COMMENT '数据湖加速测试源表';
INSERT INTO sales_source VALUES (1, 'iPhone 15', 'Electronics', 8999.00, '2026-06-01'),
  (2, 'MacBook Pro', 'Electronics', 14999.00, '2026-06-01'), (3, 'AirPods', 'Electronics', 1299.00, '2026-06-01'),
  (4, 'Nike Air Max', 'Sports', 899.00, '2026-06-01'), (5, 'Yoga Mat', 'Sports', 199.00, '2026-06-01');
COPY INTO VOLUME my_data_vol SUBDIRECTORY 'export/' FROM TABLE sales_source FILE_FORMAT = (TYPE = CSV);
COPY INTO VOLUME my_data_vol SUBDIRECTORY 'export/' FROM TABLE sales_source FILE_FORMAT = (TYPE = PARQUET);

-- Step 4: refresh the directory, list the files, query them in place
ALTER VOLUME my_data_vol REFRESH;
SELECT relative_path, size, last_modified_time FROM DIRECTORY(VOLUME my_data_vol) WHERE relative_path LIKE 'export/%';
SELECT * FROM VOLUME my_data_vol USING CSV FILES('export/part00001.csv');
SELECT id, product, category, amount, dt FROM VOLUME my_data_vol USING PARQUET FILES('export/part00001.parquet');

-- Step 5: a pipe loads files that land in its volume, by itself
CREATE EXTERNAL VOLUME IF NOT EXISTS pipe_vol LOCATION 'oss://{{BUCKET}}/demo-{{RUN}}/data/incoming/'
  USING CONNECTION my_oss_conn DIRECTORY = (ENABLE = TRUE, AUTO_REFRESH = TRUE) RECURSIVE = TRUE COMMENT 'Pipe 持续导入专用 Volume';
CREATE TABLE IF NOT EXISTS sales_ods ( id BIGINT COMMENT '订单ID', product STRING COMMENT '商品名',
  category STRING COMMENT '品类', amount DECIMAL(10,2) COMMENT '金额', dt STRING COMMENT '日期' ) COMMENT 'ODS 层——Pipe 导入目标表';
CREATE PIPE IF NOT EXISTS sales_pipe INGEST_MODE = 'LIST_PURGE' VIRTUAL_CLUSTER = 'DEFAULT' COMMENT '销售数据持续导入管道'
  AS COPY INTO sales_ods FROM VOLUME pipe_vol USING CSV PURGE = TRUE;
DESC PIPE EXTENDED sales_pipe;
-- a new file arrives
COPY INTO VOLUME pipe_vol SUBDIRECTORY '/' FROM (SELECT * FROM sales_source WHERE dt = '2026-06-01') FILE_FORMAT = (TYPE = CSV);
-- the pipe polls every 30 s; REFRESH starts a turn now instead of waiting
ALTER PIPE sales_pipe REFRESH;
{{WAIT sales_ods 5}};
SELECT COUNT(*) FROM sales_ods;
SELECT * FROM load_history('sales_ods');
SELECT relative_path FROM DIRECTORY(VOLUME pipe_vol);
SHOW PIPES LIKE 'sales_pipe';

-- Step 6: a dynamic table keeps a summary of the ODS table fresh
ALTER TABLE sales_ods SET PROPERTIES ('change_tracking' = 'true');
CREATE OR REPLACE DYNAMIC TABLE sales_summary REFRESH INTERVAL 1 HOUR vcluster DEFAULT COMMENT '按品类汇总——增量刷新'
  AS SELECT category, COUNT(*) AS order_cnt, SUM(amount) AS total_amount, AVG(amount) AS avg_amount, MIN(dt) AS min_date, MAX(dt) AS max_date
  FROM sales_ods GROUP BY category;
REFRESH DYNAMIC TABLE sales_summary;
SELECT * FROM sales_summary ORDER BY category;
SHOW DYNAMIC TABLE REFRESH HISTORY WHERE name = 'sales_summary';

-- Every stage of the data flow
SELECT 'Source' AS stage, COUNT(*) AS rows FROM sales_source UNION ALL SELECT 'ODS' AS stage, COUNT(*) AS rows FROM sales_ods
  UNION ALL SELECT 'Summary' AS stage, COUNT(*) AS rows FROM sales_summary;
DROP PIPE sales_pipe;
`

func runDemo(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var c connFlags
	fs := flag.NewFlagSet("lakepipe demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	c.register(fs)
	endpoint := fs.String("s3-endpoint", env("LAKEPIPE_S3_ENDPOINT", "http://127.0.0.1:"+env("LAKEPIPE_S3_PORT", "7070")), "S3 endpoint of the demo's connection (LAKEPIPE_S3_ENDPOINT)")
	bucket := fs.String("bucket", env("LAKEPIPE_S3_BUCKET", "lakepipe"), "bucket of the demo's volume (LAKEPIPE_S3_BUCKET)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	access, secret := env("LAKEPIPE_S3_ACCESS_KEY", "lakepipe-test-access"), env("LAKEPIPE_S3_SECRET_KEY", "lakepipe-test-secret-9f3c2a")
	eng, closeFn, err := connect(ctx, &c)
	if err != nil {
		fmt.Fprintln(stderr, "lakepipe demo:", err)
		return 1
	}
	defer closeFn()
	script := strings.NewReplacer("{{ACCESS_ID}}", access, "{{ACCESS_KEY}}", secret, "{{ENDPOINT}}", *endpoint,
		"{{BUCKET}}", *bucket, "{{RUN}}", fmt.Sprint(runID())).Replace(demoSQL)
	chunks, err := sqlparse.Split(script)
	if err != nil {
		fmt.Fprintln(stderr, "lakepipe demo:", err)
		return 1
	}
	// The demo brings its own worker, so that it needs nothing running
	// besides the stack; a `lakepipe worker` already running shares the work.
	wctx, stopWorker := context.WithCancel(ctx)
	defer stopWorker()
	ready := make(chan string, 1)
	werr := make(chan error, 1)
	chc, err := c.clickhouseConfig()
	if err != nil {
		fmt.Fprintln(stderr, "lakepipe demo:", err)
		return 1
	}
	tc, err := c.temporalConfig()
	if err != nil {
		fmt.Fprintln(stderr, "lakepipe demo:", err)
		return 1
	}
	go func() {
		werr <- worker.Run(wctx, worker.Config{
			ClickHouse: chc,
			Temporal:   tc,
			Workspace:  c.workspace, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Ready: ready,
		})
	}()
	select {
	case <-ready:
	case err := <-werr:
		fmt.Fprintln(stderr, "lakepipe demo: worker:", err)
		return 1
	}
	pr := &tablePrinter{w: stdout, maxRows: defaultMaxRows}
	for _, ch := range chunks {
		if strings.HasPrefix(ch.Text, "{{WAIT") {
			var table string
			var want int
			fmt.Sscanf(strings.Trim(ch.Text, "{}"), "WAIT %s %d", &table, &want)
			if err := waitRows(ctx, eng, table, want, stdout); err != nil {
				fmt.Fprintln(stderr, "lakepipe demo:", err)
				return 1
			}
			continue
		}
		stmt, err := sqlparse.Parse(ch.Text)
		if err != nil {
			fmt.Fprintln(stderr, "lakepipe demo:", err)
			return 1
		}
		fmt.Fprintf(stdout, "\nlakepipe> %s;\n", core.Redact(stmt))
		res, err := eng.Exec(ctx, stmt)
		if err != nil {
			fmt.Fprintln(stderr, "lakepipe demo: error:", explain(err))
			return 1
		}
		if err := pr.print(res); err != nil {
			return 1
		}
	}
	fmt.Fprintln(stdout, "\ndemo finished: 5 rows went table → volume (CSV, Parquet) → pipe → table → dynamic table.")
	return 0
}

// runID keeps each demo run in a fresh directory, so that reruns start clean.
func runID() int64 { return timeNow().Unix() }

// waitRows polls until a table holds want rows, printing progress.
func waitRows(ctx context.Context, eng *engine.Engine, table string, want int, stdout io.Writer) error {
	fmt.Fprintf(stdout, "\n(waiting for the pipe to load %s …)\n", table)
	q, err := sqlparse.Parse("SELECT COUNT(*) FROM " + table)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		res, err := eng.Exec(ctx, q)
		if err != nil {
			return err
		}
		if fmt.Sprint(res.Rows[0][0]) == fmt.Sprint(want) {
			fmt.Fprintf(stdout, "(%s has %d rows)\n", table, want)
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s has %v rows after 2 minutes, want %d (DESC PIPE EXTENDED shows the pipe's state)", table, res.Rows[0][0], want)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}
