//go:build integration

package integration

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/shopspring/decimal"

	"github.com/lakepipe/lakepipe/internal/catalog"
	"github.com/lakepipe/lakepipe/internal/chstore"
	"github.com/lakepipe/lakepipe/internal/core"
	"github.com/lakepipe/lakepipe/internal/engine"
	"github.com/lakepipe/lakepipe/internal/formats"
	"github.com/lakepipe/lakepipe/internal/rowio"
	"github.com/lakepipe/lakepipe/internal/sqlparse"
)

// BenchmarkCopy measures one-shot COPY INTO of a 1,000,000-row CSV (about
// 45 MB) and of the same rows as Parquet from the S3 server, against
// clickhouse-client's own CSV insert of the same file in the same run.
// Run with: go tool task bench:copy (or -bench BenchmarkCopy -benchtime 1x).
func BenchmarkCopy(b *testing.B) {
	ctx := context.Background()
	rows := 1_000_000
	if v := os.Getenv("LAKEPIPE_BENCH_ROWS"); v != "" {
		fmt.Sscan(v, &rows)
	}
	chHost, chPort, _ := strings.Cut(chAddr, ":")
	st, err := chstore.Open(ctx, chstore.Config{Addr: chAddr})
	if err != nil {
		b.Skip("ClickHouse not reachable:", err)
	}
	defer st.Close()
	cat, err := catalog.Open(ctx, st)
	if err != nil {
		b.Fatal(err)
	}
	schema := fmt.Sprintf("bench_%d", time.Now().UnixNano())
	eng := engine.New(cat, core.Config{Schema: schema})
	exec1 := func(q string) *core.Result {
		stmts, err := sqlparse.ParseScript(q)
		if err != nil {
			b.Fatal(err)
		}
		var res *core.Result
		for _, s := range stmts {
			if res, err = eng.Exec(ctx, s); err != nil {
				b.Fatalf("%s: %v", q, err)
			}
		}
		return res
	}

	dir := b.TempDir()
	csvPath := filepath.Join(dir, "sales.csv")
	pqPath := filepath.Join(dir, "sales.parquet")
	if err := writeBenchFiles(csvPath, pqPath, rows); err != nil {
		b.Fatal(err)
	}
	fi, _ := os.Stat(csvPath)

	access, secret, bucket := s3AccessKey, s3SecretKey, s3Bucket
	endpoint := strings.TrimPrefix(s3Endpoint, "http://")
	mc := rawS3(b)
	for _, f := range []string{csvPath, pqPath} {
		if _, err := mc.FPutObject(ctx, bucket, schema+"/"+filepath.Base(f), f, minio.PutObjectOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	defer func() {
		for _, f := range []string{csvPath, pqPath} {
			_ = mc.RemoveObject(ctx, bucket, schema+"/"+filepath.Base(f), minio.RemoveObjectOptions{})
		}
		_ = st.Exec(ctx, "DROP DATABASE IF EXISTS `"+schema+"`")
	}()

	cols := "id BIGINT, product STRING, category STRING, amount DECIMAL(10,2), dt STRING"
	exec1(fmt.Sprintf(`CREATE STORAGE CONNECTION IF NOT EXISTS bench_conn TYPE S3 ENDPOINT = 'http://%s' ACCESS_ID = '%s' ACCESS_KEY = '%s';
		CREATE EXTERNAL VOLUME bench_vol LOCATION 's3://%s/%s/' USING CONNECTION bench_conn;
		CREATE TABLE t_client (%s); CREATE TABLE t_csv (%s); CREATE TABLE t_parquet (%s);`,
		endpoint, access, secret, bucket, schema, cols, cols, cols))

	// Baseline: clickhouse-client parsing the same CSV and inserting it.
	timed := func(f func()) time.Duration {
		start := time.Now()
		f()
		return time.Since(start)
	}
	base := timed(func() {
		in, err := os.Open(csvPath)
		if err != nil {
			b.Fatal(err)
		}
		defer in.Close()
		cmd := exec.Command("clickhouse-client", "--host", chHost, "--port", chPort, "--query", "INSERT INTO `"+schema+"`.t_client (id, product, category, amount, dt) FORMAT CSV")
		cmd.Stdin = in
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("clickhouse-client: %v: %s", err, out)
		}
	})
	b.ResetTimer()
	csvT := timed(func() { exec1("COPY INTO t_csv FROM VOLUME bench_vol USING CSV FILES('sales.csv')") })
	pqT := timed(func() { exec1("COPY INTO t_parquet FROM VOLUME bench_vol USING PARQUET FILES('sales.parquet')") })
	b.StopTimer()

	for _, t := range []string{"t_client", "t_csv", "t_parquet"} {
		n := exec1("SELECT count(*) FROM " + t).Rows[0][0]
		if fmt.Sprint(n) != fmt.Sprint(rows) {
			b.Fatalf("%s has %v rows, want %d", t, n, rows)
		}
	}
	rate := func(d time.Duration) float64 { return float64(rows) / d.Seconds() }
	b.ReportMetric(rate(base), "client_rows/s")
	b.ReportMetric(rate(csvT), "csv_rows/s")
	b.ReportMetric(rate(pqT), "parquet_rows/s")
	b.ReportMetric(base.Seconds()/csvT.Seconds(), "csv_ratio")
	b.ReportMetric(base.Seconds()/pqT.Seconds(), "parquet_ratio")
	fmt.Printf("\nCOPY benchmark: %d rows, CSV %.1f MB\n", rows, float64(fi.Size())/1e6)
	fmt.Printf("  clickhouse-client INSERT FORMAT CSV: %6.2fs  %10.0f rows/s  (baseline)\n", base.Seconds(), rate(base))
	fmt.Printf("  COPY INTO … USING CSV:               %6.2fs  %10.0f rows/s  ratio %.2f\n", csvT.Seconds(), rate(csvT), base.Seconds()/csvT.Seconds())
	fmt.Printf("  COPY INTO … USING PARQUET:           %6.2fs  %10.0f rows/s  ratio %.2f\n", pqT.Seconds(), rate(pqT), base.Seconds()/pqT.Seconds())
}

var benchProducts = []string{"iPhone 15", "MacBook Pro", "AirPods", "Nike Air Max", "Yoga Mat", "Kindle", "Running Shoes"}
var benchCategories = []string{"Electronics", "Electronics", "Electronics", "Sports", "Sports", "Books", "Sports"}

// writeBenchFiles writes the same rows as CSV and as Parquet.
func writeBenchFiles(csvPath, pqPath string, rows int) error {
	cf, err := os.Create(csvPath)
	if err != nil {
		return err
	}
	defer cf.Close()
	w := bufio.NewWriterSize(cf, 1<<20)
	pf, err := os.Create(pqPath)
	if err != nil {
		return err
	}
	defer pf.Close()
	pw, err := formats.NewParquetWriter(pf, []rowio.Column{
		{Name: "id", Type: "Int64"}, {Name: "product", Type: "String"}, {Name: "category", Type: "String"},
		{Name: "amount", Type: "Decimal(10, 2)"}, {Name: "dt", Type: "String"},
	})
	if err != nil {
		return err
	}
	var line bytes.Buffer
	for i := 1; i <= rows; i++ {
		k := i % len(benchProducts)
		cents := int64(i%100000)*100 + int64(i%100)
		dt := fmt.Sprintf("2026-06-%02d", 1+i%28)
		line.Reset()
		fmt.Fprintf(&line, "%d,%s,%s,%d.%02d,%s\n", i, benchProducts[k], benchCategories[k], cents/100, cents%100, dt)
		w.Write(line.Bytes())
		if err := pw.Write([]any{int64(i), benchProducts[k], benchCategories[k], decimal.New(cents, -2), dt}); err != nil {
			return err
		}
	}
	if err := pw.Close(); err != nil {
		return err
	}
	return w.Flush()
}
