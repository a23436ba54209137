package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/lakepipe/lakepipe/internal/engine"
	"github.com/lakepipe/lakepipe/internal/sqlparse"
)

// demoSQL is the volume part of the seed "Volume + Pipe + Dynamic Table
// end-to-end": a connection and a volume on the local S3 server, a source
// table exported as CSV and Parquet, the directory listed, the files
// queried in place, and loaded into a table. {{…}} are filled in from the
// local stack's settings.
const demoSQL = `
DROP TABLE IF EXISTS sales_source;
DROP TABLE IF EXISTS sales_ods;
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

-- Load the CSV export into an ODS table, as the pipe will do continuously
CREATE TABLE IF NOT EXISTS sales_ods ( id BIGINT COMMENT '订单ID', product STRING COMMENT '商品名',
  category STRING COMMENT '品类', amount DECIMAL(10,2) COMMENT '金额', dt STRING COMMENT '日期' ) COMMENT 'ODS 层';
COPY INTO sales_ods FROM VOLUME my_data_vol USING CSV FILES('export/part00001.csv');
SELECT * FROM load_history('sales_ods');
SELECT 'Source' AS stage, COUNT(*) AS rows FROM sales_source UNION ALL SELECT 'ODS' AS stage, COUNT(*) AS rows FROM sales_ods;
SELECT category, COUNT(*) AS order_cnt, SUM(amount) AS total_amount FROM sales_ods GROUP BY category ORDER BY category;
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
	pr := &tablePrinter{w: stdout}
	for _, ch := range chunks {
		stmt, err := sqlparse.Parse(ch.Text)
		if err != nil {
			fmt.Fprintln(stderr, "lakepipe demo:", err)
			return 1
		}
		fmt.Fprintf(stdout, "\nlakepipe> %s;\n", engine.Redact(stmt))
		res, err := eng.Exec(ctx, stmt)
		if err != nil {
			fmt.Fprintln(stderr, "lakepipe demo: error:", explain(err))
			return 1
		}
		if err := pr.print(res); err != nil {
			return 1
		}
	}
	fmt.Fprintln(stdout, "\ndemo finished: 5 rows went table → volume (CSV, Parquet) → table.")
	return 0
}

// runID keeps each demo run in a fresh directory, so that reruns start clean.
func runID() int64 { return timeNow().Unix() }
