//go:build integration

package integration

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
)

// sortedText joins rows like rowsText but sorted, for queries whose row
// order the ClickZetta documentation's example leaves open (UNION ALL, SELECT without ORDER BY).
func sortedText(rows [][]string) string {
	lines := make([]string, len(rows))
	for i, r := range rows {
		lines[i] = strings.Join(r, "|")
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

var salesRows = []string{
	"1|iPhone 15|Electronics|8999.00|2026-06-01",
	"2|MacBook Pro|Electronics|14999.00|2026-06-01",
	"3|AirPods|Electronics|1299.00|2026-06-01",
	"4|Nike Air Max|Sports|899.00|2026-06-01",
	"5|Yoga Mat|Sports|199.00|2026-06-01",
}

const salesSourceDDL = `CREATE TABLE IF NOT EXISTS sales_source ( id BIGINT COMMENT '订单ID', product STRING COMMENT '商品名', category STRING COMMENT '品类', amount DECIMAL(10,2) COMMENT '金额', dt STRING COMMENT '日期' ) COMMENT '数据湖加速测试源表'`

const salesInsert = `INSERT INTO sales_source VALUES (1, 'iPhone 15', 'Electronics', 8999.00, '2026-06-01'), (2, 'MacBook Pro', 'Electronics', 14999.00, '2026-06-01'), (3, 'AirPods', 'Electronics', 1299.00, '2026-06-01'), (4, 'Nike Air Max', 'Sports', 899.00, '2026-06-01'), (5, 'Yoga Mat', 'Sports', 199.00, '2026-06-01')`

// TestDocVolumeEndToEnd runs steps 1–4 of the ClickZetta documentation's example "Volume + Pipe +
// Dynamic Table 端到端实践" statement for statement against the local S3
// server, then loads the CSV export into an ODS table the way the pipe of
// step 5 will, and checks the ClickZetta documentation's final consistency query.
func TestDocVolumeEndToEnd(t *testing.T) {
	s := newStack(t)
	conn := "my_oss_conn_" + s.ID
	loc := s.location("data")

	// Step 1: the storage connection, with the ClickZetta documentation's lower-case keys.
	res := s.run(fmt.Sprintf(`CREATE STORAGE CONNECTION IF NOT EXISTS %s TYPE OSS access_id = '%s' access_key = '%s' ENDPOINT = '%s';`,
		conn, s3AccessKey, s3SecretKey, s3Endpoint))
	s.dropAtEnd("STORAGE CONNECTION", conn)
	if !strings.Contains(res.Message, conn) || !strings.Contains(res.Message, "created") {
		t.Errorf("CREATE STORAGE CONNECTION said %q", res.Message)
	}

	// Step 2: the external volume on a bucket sub-directory.
	s.run(fmt.Sprintf(`CREATE EXTERNAL VOLUME IF NOT EXISTS my_data_vol LOCATION '%s' USING CONNECTION %s DIRECTORY = (ENABLE = TRUE, AUTO_REFRESH = FALSE) RECURSIVE = TRUE COMMENT '数据湖加速专用 Volume';`,
		loc, conn))
	s.dropAtEnd("VOLUME", "my_data_vol")
	desc := s.run(`DESC VOLUME my_data_vol`)
	props := map[string]string{}
	for _, r := range table(desc) {
		props[r[0]] = r[1]
	}
	for k, v := range map[string]string{"location": loc, "connection": conn, "comment": "数据湖加速专用 Volume", "directory_enabled": "true", "auto_refresh": "false", "recursive": "true"} {
		if props[k] != v {
			t.Errorf("DESC VOLUME %s = %q, want %q", k, props[k], v)
		}
	}

	// Step 3: the source table, exported as CSV and as Parquet.
	s.run(salesSourceDDL)
	res = s.run(salesInsert)
	if !strings.HasPrefix(res.Message, "5 rows inserted") {
		t.Errorf("INSERT said %q, want 5 rows inserted", res.Message)
	}
	sizes := map[string]string{}
	for _, f := range []struct{ format, file string }{{"CSV", "export/part00001.csv"}, {"PARQUET", "export/part00001.parquet"}} {
		res = s.run(`COPY INTO VOLUME my_data_vol SUBDIRECTORY 'export/' FROM TABLE sales_source FILE_FORMAT = (TYPE = ` + f.format + `);`)
		wantColumns(t, "COPY INTO VOLUME "+f.format, res, "file", "rows", "bytes")
		rows := table(res)
		if len(rows) != 1 || rows[0][0] != f.file || rows[0][1] != "5" {
			t.Fatalf("COPY INTO VOLUME %s wrote %v, want one file %s with 5 rows", f.format, rows, f.file)
		}
		info, err := rawS3(t).StatObject(s.Ctx, s3Bucket, s.key("data/"+f.file), minio.StatObjectOptions{})
		if err != nil {
			t.Fatalf("%s is not in the bucket: %v", f.file, err)
		}
		if rows[0][2] != fmt.Sprint(info.Size) || info.Size == 0 {
			t.Errorf("COPY INTO VOLUME reported %s bytes for %s, the bucket holds %d", rows[0][2], f.file, info.Size)
		}
		sizes[f.file] = fmt.Sprint(info.Size)
	}

	// Step 4: with AUTO_REFRESH = FALSE the directory is the snapshot taken
	// when the volume was created (empty) until ALTER VOLUME … REFRESH.
	dirQuery := `SELECT relative_path, size, last_modified_time FROM DIRECTORY(VOLUME my_data_vol) WHERE relative_path LIKE 'export/%';`
	if res = s.run(dirQuery); len(res.Rows) != 0 {
		t.Errorf("DIRECTORY before ALTER VOLUME REFRESH lists %v; AUTO_REFRESH = FALSE should keep it stale", table(res))
	}
	res = s.run(`ALTER VOLUME my_data_vol REFRESH;`)
	if !strings.Contains(res.Message, "2 files") {
		t.Errorf("ALTER VOLUME REFRESH said %q, want 2 files", res.Message)
	}
	res = s.run(dirQuery)
	wantColumns(t, "DIRECTORY", res, "relative_path", "size", "last_modified_time")
	rows := table(res)
	if len(rows) != 2 {
		t.Fatalf("DIRECTORY lists %v, want the two exports", rows)
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i][0] < rows[j][0] })
	for i, f := range []string{"export/part00001.csv", "export/part00001.parquet"} {
		if rows[i][0] != f || rows[i][1] != sizes[f] {
			t.Errorf("DIRECTORY row %d = %v, want %s with size %s", i, rows[i], f, sizes[f])
		}
		mod, ok := res.Rows[i][2].(time.Time)
		if !ok || time.Since(mod) > 10*time.Minute || time.Until(mod) > 10*time.Minute {
			t.Errorf("DIRECTORY last_modified_time of %s = %v, want about now", f, res.Rows[i][2])
		}
	}

	// The CSV export read in place: no header, so columns f0…f4.
	res = s.run(`SELECT * FROM VOLUME my_data_vol USING CSV FILES('export/part00001.csv');`)
	wantColumns(t, "SELECT FROM VOLUME USING CSV", res, "f0", "f1", "f2", "f3", "f4")
	if got, want := sortedText(table(res)), strings.Join(salesRows, "\n"); got != want {
		t.Errorf("CSV export read back:\n%s\nwant:\n%s", indent(got), indent(want))
	}

	// The Parquet export keeps the column names and types.
	res = s.run(`SELECT id, product, category, amount, dt FROM VOLUME my_data_vol USING PARQUET FILES('export/part00001.parquet');`)
	wantColumns(t, "SELECT FROM VOLUME USING PARQUET", res, "id", "product", "category", "amount", "dt")
	if got, want := sortedText(table(res)), strings.Join(salesRows, "\n"); got != want {
		t.Errorf("Parquet export read back:\n%s\nwant:\n%s", indent(got), indent(want))
	}
	if len(res.Types) == 5 && (!strings.Contains(res.Types[0], "Int64") || !strings.Contains(res.Types[3], "Decimal(10, 2)")) {
		t.Errorf("Parquet columns have types %v, want id Int64 and amount Decimal(10, 2)", res.Types)
	}

	// Load the CSV export into the ODS table, as the pipe will.
	s.run(`CREATE TABLE IF NOT EXISTS sales_ods ( id BIGINT COMMENT '订单ID', product STRING COMMENT '商品名', category STRING COMMENT '品类', amount DECIMAL(10,2) COMMENT '金额', dt STRING COMMENT '日期' ) COMMENT 'ODS 层——Pipe 导入目标表';`)
	res = s.run(`COPY INTO sales_ods FROM VOLUME my_data_vol USING CSV FILES('export/part00001.csv');`)
	wantColumns(t, "COPY INTO", res, "file", "status", "rows_loaded", "rows_rejected", "first_error")
	wantRows(t, "COPY INTO sales_ods", res, "export/part00001.csv|LOADED|5|0|")
	if n := scalar(t, s.run(`SELECT COUNT(*) FROM sales_ods;`)); n != "5" {
		t.Errorf("SELECT COUNT(*) FROM sales_ods = %s, want 5", n)
	}
	wantRows(t, "sales_ods", s.run(`SELECT id, product, category, amount, dt FROM sales_ods ORDER BY id`), salesRows...)
	wantRows(t, "sales_ods by category", s.run(`SELECT category, COUNT(*) AS order_cnt, SUM(amount) AS total_amount FROM sales_ods GROUP BY category ORDER BY category`),
		"Electronics|3|25297.00", "Sports|2|1098.00")

	res = s.run(`SELECT * FROM load_history('sales_ods');`)
	lh := table(res)
	if len(lh) != 1 {
		t.Fatalf("load_history('sales_ods') = %v, want one file", lh)
	}
	for col, want := range map[string]string{"file_path": "export/part00001.csv", "status": "LOADED", "file_size": sizes["export/part00001.csv"], "first_error_message": "", "rows_loaded": "5"} {
		if got := lh[0][column(t, res, col)]; got != want {
			t.Errorf("load_history %s = %q, want %q", col, got, want)
		}
	}
	if ts, ok := res.Rows[0][column(t, res, "last_copy_time")].(time.Time); !ok || time.Since(ts) > 10*time.Minute {
		t.Errorf("load_history last_copy_time = %v, want about now", res.Rows[0][column(t, res, "last_copy_time")])
	}

	// The ClickZetta documentation's consistency check (without the dynamic table, which a
	// later release brings).
	res = s.run(`SELECT 'Source' AS stage, COUNT(*) AS rows FROM sales_source UNION ALL SELECT 'ODS' AS stage, COUNT(*) AS rows FROM sales_ods;`)
	wantColumns(t, "consistency", res, "stage", "rows")
	if got := sortedText(table(res)); got != "ODS|5\nSource|5" {
		t.Errorf("consistency check:\n%s\nwant Source 5 and ODS 5", indent(got))
	}
}
