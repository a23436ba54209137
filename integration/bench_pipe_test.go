//go:build integration

package integration

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/lakepipe/lakepipe/internal/chsql"
	"github.com/lakepipe/lakepipe/internal/chstore"
	"github.com/lakepipe/lakepipe/internal/core"
	"github.com/lakepipe/lakepipe/internal/engine"
	"github.com/lakepipe/lakepipe/internal/orchestrator"
	"github.com/lakepipe/lakepipe/internal/sqlparse"
	"github.com/lakepipe/lakepipe/internal/sqs"
	"github.com/lakepipe/lakepipe/worker"
)

// pipeBench is the benchmarks' view of the stack (Stack needs a
// *testing.T): an engine on a fresh schema, a fresh prefix of the test
// bucket, an in-process worker on a task queue of its own, all removed at
// the end.
type pipeBench struct {
	tb     testing.TB
	ctx    context.Context
	st     *chstore.Store
	eng    *engine.Engine
	schema string // bench_<id>: schema and ClickHouse database
	id     string
	prefix string // bench-<id>/ in the test bucket
	orch   *orchestrator.Temporal
}

func newPipeBench(tb testing.TB) *pipeBench {
	tb.Helper()
	st, c, err := openCatalog()
	if err != nil {
		tb.Skipf("ClickHouse is not reachable at %s (start the local stack: ./task up): %v", chAddr, err)
	}
	id := randID(5)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Minute)
	p := &pipeBench{tb: tb, ctx: ctx, st: st, schema: "bench_" + id, id: id, prefix: "bench-" + id + "/"}
	p.eng = engine.New(c, core.Config{Workspace: "default", Schema: p.schema})
	tb.Cleanup(func() {
		defer cancel()
		cctx, ccancel := context.WithTimeout(context.Background(), time.Minute)
		defer ccancel()
		_ = st.Exec(cctx, "DROP DATABASE IF EXISTS "+chsql.QuoteIdent(p.schema))
		forgetSchema(cctx, st, c, p.schema)
		if s3Client != nil {
			objs := s3Client.ListObjects(cctx, s3Bucket, minio.ListObjectsOptions{Prefix: p.prefix, Recursive: true})
			for range s3Client.RemoveObjects(cctx, s3Bucket, objs, minio.RemoveObjectsOptions{}) {
			}
		}
	})
	return p
}

// run runs a script and returns the last statement's result.
func (p *pipeBench) run(sql string) *core.Result {
	p.tb.Helper()
	stmts, err := sqlparse.ParseScript(sql)
	if err != nil {
		p.tb.Fatalf("%s: %v", sql, err)
	}
	var res *core.Result
	for _, st := range stmts {
		if res, err = p.eng.Exec(p.ctx, st); err != nil {
			p.tb.Fatalf("%s\nfailed: %v", strings.TrimSpace(sql), err)
		}
	}
	return res
}

// dropAtEnd drops a workspace-wide object (connection, volume) at the end.
func (p *pipeBench) dropAtEnd(kind, name string) {
	p.tb.Cleanup(func() {
		stmt, err := sqlparse.Parse("DROP " + kind + " IF EXISTS " + name)
		if err != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_, _ = p.eng.Exec(ctx, stmt)
	})
}

// connection makes a storage connection to an S3 endpoint with the local
// stack's test credentials.
func (p *pipeBench) connection(name, endpoint string) {
	p.run(fmt.Sprintf(`CREATE STORAGE CONNECTION %s TYPE S3 ENDPOINT = '%s' ACCESS_ID = '%s' ACCESS_KEY = '%s' REGION = '%s'`,
		name, endpoint, s3AccessKey, s3SecretKey, s3Region))
	p.dropAtEnd("STORAGE CONNECTION", name)
}

// count is the number of rows of a table of the benchmark's schema.
func (p *pipeBench) count(table string) int64 {
	p.tb.Helper()
	n, err := p.st.Strings(p.ctx, "SELECT count() FROM "+chsql.Table(p.schema, table))
	if err != nil || len(n) != 1 {
		p.tb.Fatalf("count %s: %v", table, err)
	}
	v, _ := strconv.ParseInt(n[0], 10, 64)
	return v
}

// worker starts an in-process worker on the benchmark's own task queue and
// points the engine's pipes at it; it returns the worker's HTTP address.
func (p *pipeBench) worker() string {
	p.tb.Helper()
	var addr string
	p.eng, p.orch, addr = pipeWorker(p.tb, p.eng, p.schema, "bench-"+p.id)
	return addr
}

func benchTail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// benchInt reads a positive whole number from the environment.
// waitMerges waits (up to a minute) until ClickHouse runs no background
// merge, so that a benchmark measures the steady state, not the merges of
// the rows it has just loaded.
func waitMerges(p *pipeBench) {
	for i := 0; i < 600; i++ {
		m, err := p.st.Strings(p.ctx, "SELECT toString(count()) FROM system.merges")
		if err != nil || (len(m) == 1 && m[0] == "0") {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func benchInt(tb testing.TB, name string, def int) int {
	tb.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		tb.Fatalf("%s=%q: want a positive whole number", name, v)
	}
	return n
}

// benchPercentile is the nearest-rank percentile of sorted durations.
func benchPercentile(sorted []time.Duration, pct float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted))*pct/100+0.999999) - 1
	if i < 0 {
		i = 0
	}
	if i >= len(sorted) {
		i = len(sorted) - 1
	}
	return sorted[i]
}

func benchMS(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// BenchmarkPipeLatency measures file-arrival-to-visible latency: one small
// file is uploaded at a random moment, the table is polled until its rows
// are visible, and so on for 100 files (LAKEPIPE_BENCH_LATENCY_FILES), for
//
//	(a) a LIST pipe with POLL_INTERVAL_IN_SECONDS = '1' (the test bucket);
//	(b) an EVENT_NOTIFICATION pipe fed by S3 event notifications: a
//	    versitygw of the benchmark's own posts them to the worker's /events;
//	(c) the same through a Kafka topic the versitygw publishes to;
//	(d) the same through an SQS queue (goaws).
//
// It reports p50/p95 in ms (the ClickZetta documentation's service takes about 30 s; lakepipe's
// target is a p50 under 1 s). Run: ./task bench:pipe -- -bench BenchmarkPipeLatency
func BenchmarkPipeLatency(b *testing.B) {
	n := benchInt(b, "LAKEPIPE_BENCH_LATENCY_FILES", 100)
	const rowsPer = 10
	p := newPipeBench(b)
	mc := rawS3(b)
	addr := p.worker()
	rng := rand.New(rand.NewSource(time.Now().UnixNano()))

	fileData := func(i int) []byte {
		var buf bytes.Buffer
		for j := 0; j < rowsPer; j++ {
			fmt.Fprintf(&buf, "%d,file %d row %d\n", i*rowsPer+j+1, i, j)
		}
		return buf.Bytes()
	}
	// measure uploads the files one at a time, each at a random moment of
	// the pipe's poll cycle, and times each until its rows are visible.
	measure := func(what, table string, put func(name string, data []byte) error) []time.Duration {
		lat := make([]time.Duration, 0, n)
		for i := 0; i < n; i++ {
			time.Sleep(time.Duration(rng.Intn(1000)) * time.Millisecond)
			if err := put(fmt.Sprintf("f%05d.csv", i), fileData(i)); err != nil {
				b.Fatalf("%s: upload file %d: %v", what, i, err)
			}
			arrived := time.Now()
			want := int64(i+1) * rowsPer
			for {
				got := p.count(table)
				if got >= want {
					if got > want {
						b.Fatalf("%s: %d rows after file %d, want %d", what, got, i, want)
					}
					break
				}
				if time.Since(arrived) > 2*time.Minute {
					b.Fatalf("%s: file %d not visible after 2 minutes (%d rows, want %d)", what, i, got, want)
				}
				time.Sleep(10 * time.Millisecond)
			}
			lat = append(lat, time.Since(arrived))
		}
		sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
		return lat
	}

	// (a) LIST, polling every second.
	p.connection("bench_conn_"+p.id, s3Endpoint)
	p.run(fmt.Sprintf(`CREATE EXTERNAL VOLUME bench_list_vol_%s LOCATION 'oss://%s/%slist/' USING CONNECTION bench_conn_%s DIRECTORY = (ENABLE = TRUE, AUTO_REFRESH = FALSE) RECURSIVE = TRUE`,
		p.id, s3Bucket, p.prefix, p.id))
	p.dropAtEnd("VOLUME", "bench_list_vol_"+p.id)
	p.run(`CREATE TABLE lat_list (id BIGINT, note STRING)`)
	p.run(fmt.Sprintf(`CREATE PIPE lat_list_pipe INGEST_MODE = 'LIST' POLL_INTERVAL_IN_SECONDS = '1' AS COPY INTO lat_list FROM VOLUME bench_list_vol_%s USING CSV`, p.id))

	// (b) EVENT_NOTIFICATION, from a versitygw that posts to the worker.
	gw := startEventS3(b, "http://"+addr+"/events")
	p.connection("bench_ev_conn_"+p.id, gw.Endpoint)
	p.run(fmt.Sprintf(`CREATE EXTERNAL VOLUME bench_ev_vol_%s LOCATION 'oss://%s/lat/' USING CONNECTION bench_ev_conn_%s DIRECTORY = (ENABLE = TRUE, AUTO_REFRESH = TRUE) RECURSIVE = TRUE`,
		p.id, gw.Bucket, p.id))
	p.dropAtEnd("VOLUME", "bench_ev_vol_"+p.id)
	p.run(`CREATE TABLE lat_event (id BIGINT, note STRING)`)
	p.run(fmt.Sprintf(`CREATE PIPE lat_event_pipe INGEST_MODE = 'EVENT_NOTIFICATION' AS COPY INTO lat_event FROM VOLUME bench_ev_vol_%s USING CSV`, p.id))

	// (c) EVENT_NOTIFICATION through a Kafka topic a versitygw publishes
	// to, and (d) through an SQS queue (goaws): each named on its pipe
	// (EVENT_QUEUE). No S3 server here sends to SQS: the benchmark sends
	// S3's notification itself right after each upload.
	topic := "bench_s3events_" + p.id
	kafkaTopic(b, topic, 1)
	gwk := startEventS3With(b, "--event-kafka-url", kafkaAddr, "--event-kafka-topic", topic)
	p.connection("bench_evk_conn_"+p.id, gwk.Endpoint)
	p.run(fmt.Sprintf(`CREATE EXTERNAL VOLUME bench_evk_vol_%s LOCATION 'oss://%s/latk/' USING CONNECTION bench_evk_conn_%s DIRECTORY = (ENABLE = TRUE, AUTO_REFRESH = TRUE) RECURSIVE = TRUE`,
		p.id, gwk.Bucket, p.id))
	p.dropAtEnd("VOLUME", "bench_evk_vol_"+p.id)
	p.run(`CREATE TABLE lat_kafka (id BIGINT, note STRING)`)
	p.run(fmt.Sprintf(`CREATE PIPE lat_kafka_pipe INGEST_MODE = 'EVENT_NOTIFICATION' EVENT_QUEUE = 'kafka://%s/%s' AS COPY INTO lat_kafka FROM VOLUME bench_evk_vol_%s USING CSV`, kafkaAddr, topic, p.id))
	queueURL := startGoaws(b)
	sq, err := sqs.New(queueURL, "us-east-1", sqs.Credentials{AccessKey: s3AccessKey, SecretKey: s3SecretKey})
	if err != nil {
		b.Fatal(err)
	}
	p.run(fmt.Sprintf(`CREATE EXTERNAL VOLUME bench_evs_vol_%s LOCATION 'oss://%s/%ssqs/' USING CONNECTION bench_conn_%s DIRECTORY = (ENABLE = TRUE, AUTO_REFRESH = TRUE) RECURSIVE = TRUE`,
		p.id, s3Bucket, p.prefix, p.id))
	p.dropAtEnd("VOLUME", "bench_evs_vol_"+p.id)
	p.run(`CREATE TABLE lat_sqs (id BIGINT, note STRING)`)
	p.run(fmt.Sprintf(`CREATE PIPE lat_sqs_pipe INGEST_MODE = 'EVENT_NOTIFICATION' EVENT_QUEUE = '%s' AS COPY INTO lat_sqs FROM VOLUME bench_evs_vol_%s USING CSV`, queueURL, p.id))
	time.Sleep(worker.DefaultEventQueueRescan + time.Second) // the worker finds the queues

	b.ResetTimer()
	list := measure("LIST pipe", "lat_list", func(name string, data []byte) error {
		_, err := mc.PutObject(p.ctx, s3Bucket, p.prefix+"list/"+name, bytes.NewReader(data), int64(len(data)), minio.PutObjectOptions{})
		return err
	})
	// The LIST pipe's polling would load the machine during (b).
	b.StopTimer()
	p.run(`DROP PIPE lat_list_pipe`)
	b.StartTimer()
	event := measure("EVENT_NOTIFICATION pipe", "lat_event", func(name string, data []byte) error {
		_, err := gw.Client.PutObject(p.ctx, gw.Bucket, "lat/"+name, bytes.NewReader(data), int64(len(data)), minio.PutObjectOptions{})
		return err
	})
	kafkaLat := measure("EVENT_NOTIFICATION pipe through Kafka", "lat_kafka", func(name string, data []byte) error {
		_, err := gwk.Client.PutObject(p.ctx, gwk.Bucket, "latk/"+name, bytes.NewReader(data), int64(len(data)), minio.PutObjectOptions{})
		return err
	})
	sqsLat := measure("EVENT_NOTIFICATION pipe through SQS", "lat_sqs", func(name string, data []byte) error {
		key := p.prefix + "sqs/" + name
		if _, err := mc.PutObject(p.ctx, s3Bucket, key, bytes.NewReader(data), int64(len(data)), minio.PutObjectOptions{}); err != nil {
			return err
		}
		return sq.Send(p.ctx, fmt.Sprintf(`{"Records":[{"eventName":"ObjectCreated:Put","s3":{"bucket":{"name":%q},"object":{"key":%q}}}]}`, s3Bucket, url.QueryEscape(key)))
	})
	b.StopTimer()

	b.ReportMetric(benchMS(benchPercentile(kafkaLat, 50)), "kafka_p50_ms")
	b.ReportMetric(benchMS(benchPercentile(sqsLat, 50)), "sqs_p50_ms")
	b.ReportMetric(benchMS(benchPercentile(list, 50)), "list_p50_ms")
	b.ReportMetric(benchMS(benchPercentile(list, 95)), "list_p95_ms")
	b.ReportMetric(benchMS(benchPercentile(event, 50)), "event_p50_ms")
	b.ReportMetric(benchMS(benchPercentile(event, 95)), "event_p95_ms")
	fmt.Printf("\nPipe latency, file arrival to rows visible, %d files of %d rows each (target p50 < 1000 ms; the ClickZetta Lakehouse service ~30 s):\n", n, rowsPer)
	for _, r := range []struct {
		name string
		lat  []time.Duration
	}{{"LIST, POLL_INTERVAL_IN_SECONDS = '1'", list}, {"EVENT_NOTIFICATION (S3 webhook)", event},
		{"EVENT_NOTIFICATION (Kafka topic)", kafkaLat}, {"EVENT_NOTIFICATION (SQS queue)", sqsLat}} {
		fmt.Printf("  %-38s p50 %6.0f ms  p95 %6.0f ms  min %6.0f ms  max %6.0f ms\n", r.name,
			benchMS(benchPercentile(r.lat, 50)), benchMS(benchPercentile(r.lat, 95)), benchMS(r.lat[0]), benchMS(r.lat[len(r.lat)-1]))
	}
}

// BenchmarkPipeThroughput loads 100 CSV files of 100,000 rows
// (LAKEPIPE_BENCH_PIPE_FILES, LAKEPIPE_BENCH_PIPE_ROWS) with a pipe, timed
// from the end of the first upload to the moment all rows are visible,
// against a baseline measured in the same run: clickhouse-client inserting
// the same files one after the other (INSERT … FORMAT CSV). It reports
// both rates and their ratio (target ≥ 0.7).
// Run: ./task bench:pipe -- -bench BenchmarkPipeThroughput
func BenchmarkPipeThroughput(b *testing.B) {
	nFiles := benchInt(b, "LAKEPIPE_BENCH_PIPE_FILES", 100)
	rowsPer := benchInt(b, "LAKEPIPE_BENCH_PIPE_ROWS", 100_000)
	total := int64(nFiles) * int64(rowsPer)
	p := newPipeBench(b)
	mc := rawS3(b)
	chPort := env("LAKEPIPE_CLICKHOUSE_PORT", "19000")

	// The files, on local disk first (generation is not timed).
	dir := b.TempDir()
	paths := make([]string, nFiles)
	var bytesTotal int64
	for i := range paths {
		paths[i] = filepath.Join(dir, fmt.Sprintf("part%05d.csv", i))
		n, err := writeThroughputFile(paths[i], i*rowsPer, rowsPer)
		if err != nil {
			b.Fatal(err)
		}
		bytesTotal += n
	}
	cols := "id BIGINT, product STRING, category STRING, amount DECIMAL(10,2), dt STRING"
	p.run(fmt.Sprintf(`CREATE TABLE t_client (%s); CREATE TABLE t_pipe (%s)`, cols, cols))

	// Baseline: clickhouse-client inserting the files one by one.
	b.ResetTimer()
	baseStart := time.Now()
	for _, f := range paths {
		in, err := os.Open(f)
		if err != nil {
			b.Fatal(err)
		}
		cmd := exec.Command("clickhouse-client", "--port", chPort, "--query",
			"INSERT INTO "+chsql.Table(p.schema, "t_client")+" (id, product, category, amount, dt) FORMAT CSV")
		cmd.Stdin = in
		out, err := cmd.CombinedOutput()
		in.Close()
		if err != nil {
			b.Fatalf("clickhouse-client: %v: %s", err, out)
		}
	}
	base := time.Since(baseStart)
	b.StopTimer()
	if got := p.count("t_client"); got != total {
		b.Fatalf("t_client has %d rows, want %d", got, total)
	}

	// The pipe: files arrive (4 uploads at a time) while it runs.
	p.worker()
	p.connection("bench_conn_"+p.id, s3Endpoint)
	p.run(fmt.Sprintf(`CREATE EXTERNAL VOLUME bench_thr_vol_%s LOCATION 'oss://%s/%sthroughput/' USING CONNECTION bench_conn_%s DIRECTORY = (ENABLE = TRUE, AUTO_REFRESH = FALSE) RECURSIVE = TRUE`,
		p.id, s3Bucket, p.prefix, p.id))
	p.dropAtEnd("VOLUME", "bench_thr_vol_"+p.id)
	p.run(fmt.Sprintf(`CREATE PIPE thr_pipe INGEST_MODE = 'LIST_PURGE' POLL_INTERVAL_IN_SECONDS = '1' AS COPY INTO t_pipe FROM VOLUME bench_thr_vol_%s USING CSV`, p.id))

	var (
		once       sync.Once
		firstUp    time.Time
		upMu       sync.Mutex
		upErr      error
		wg         sync.WaitGroup
		next       = make(chan string)
		uploadsEnd time.Time
	)
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for f := range next {
				if _, err := mc.FPutObject(p.ctx, s3Bucket, p.prefix+"throughput/"+filepath.Base(f), f, minio.PutObjectOptions{ContentType: "text/csv"}); err != nil {
					upMu.Lock()
					upErr = errors.Join(upErr, err)
					upMu.Unlock()
					continue
				}
				once.Do(func() { firstUp = time.Now() })
			}
		}()
	}
	b.StartTimer()
	upDone := make(chan struct{})
	go func() {
		for _, f := range paths {
			next <- f
		}
		close(next)
		wg.Wait()
		uploadsEnd = time.Now()
		close(upDone)
	}()
	deadline := time.Now().Add(30 * time.Minute)
	for {
		if got := p.count("t_pipe"); got >= total {
			if got > total {
				b.Fatalf("t_pipe has %d rows, want %d", got, total)
			}
			break
		}
		select {
		case <-upDone:
			if upErr != nil {
				b.Fatalf("upload: %v", upErr)
			}
		default:
		}
		if time.Now().After(deadline) {
			b.Fatalf("the pipe did not load %d rows within 30 minutes (%d so far)", total, p.count("t_pipe"))
		}
		time.Sleep(100 * time.Millisecond)
	}
	visible := time.Now()
	b.StopTimer()
	<-upDone // firstUp and uploadsEnd are set
	pipeT := visible.Sub(firstUp)

	rate := func(d time.Duration) float64 { return float64(total) / d.Seconds() }
	ratio := base.Seconds() / pipeT.Seconds()
	b.ReportMetric(rate(base), "client_rows/s")
	b.ReportMetric(rate(pipeT), "pipe_rows/s")
	b.ReportMetric(ratio, "pipe_ratio")
	fmt.Printf("\nPipe throughput: %d files × %d rows = %d rows, CSV %.1f MB (target ratio ≥ 0.7)\n", nFiles, rowsPer, total, float64(bytesTotal)/1e6)
	fmt.Printf("  clickhouse-client INSERT FORMAT CSV, file by file: %7.2fs  %10.0f rows/s  (baseline)\n", base.Seconds(), rate(base))
	fmt.Printf("  pipe, first upload done → all rows visible:        %7.2fs  %10.0f rows/s  ratio %.2f\n", pipeT.Seconds(), rate(pipeT), ratio)
	fmt.Printf("  (the uploads themselves took %.2fs of that, from the first one done)\n", uploadsEnd.Sub(firstUp).Seconds())
}

// writeThroughputFile writes rows rows of the COPY benchmark's shape, ids
// from first+1, and returns the file's size.
func writeThroughputFile(path string, first, rows int) (int64, error) {
	f, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	w := bufio.NewWriterSize(f, 1<<20)
	for i := first + 1; i <= first+rows; i++ {
		k := i % len(benchProducts)
		cents := int64(i%100000)*100 + int64(i%100)
		fmt.Fprintf(w, "%d,%s,%s,%d.%02d,2026-06-%02d\n", i, benchProducts[k], benchCategories[k], cents/100, cents%100, 1+i%28)
	}
	if err := w.Flush(); err != nil {
		return 0, err
	}
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}
