//go:build integration

package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
)

// BenchmarkPipeListing: a LIST pipe over 1,000,000 retained objects
// (LAKEPIPE_BENCH_LISTING_OBJECTS), all loaded already. The objects are
// made straight in the S3 server's directory (1,000 per folder, keys in
// numeric order) and their load records straight in load_history, as if
// the pipe had loaded them. Measured: the pipe's first turn (a full
// listing), then its idle turns (ListFiles' mean execution time from the
// worker's /metrics; target < 1 s), a new file's arrival → visible
// (target within one poll), and the test process's largest RSS, worker
// included (target < 200 MB). The baseline, in the same run, is a plain
// listing of the whole volume with minio-go: what a turn that lists
// everything costs at the least.
// Run: ./task bench:listing
func BenchmarkPipeListing(b *testing.B) {
	n := benchInt(b, "LAKEPIPE_BENCH_LISTING_OBJECTS", 1_000_000)
	const perDir = 1000
	p := newPipeBench(b)
	addr := p.worker()
	mc := rawS3(b)
	rel := p.prefix + "listing/"
	root := filepath.Join(stateDir(), "s3", "root", s3Bucket, filepath.FromSlash(rel))
	// Removed before the bench's own clean-up, which would delete the
	// objects one S3 request at a time.
	b.Cleanup(func() {
		os.RemoveAll(filepath.Join(stateDir(), "s3", "root", s3Bucket, strings.TrimSuffix(p.prefix, "/")))
	})
	key := func(i int) string { return fmt.Sprintf("d%04d/f%07d.csv", i/perDir, i) }

	made := time.Now()
	for i := 0; i < n; i++ {
		if i%perDir == 0 {
			if err := os.MkdirAll(filepath.Join(root, fmt.Sprintf("d%04d", i/perDir)), 0o755); err != nil {
				b.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(root, filepath.FromSlash(key(i))), []byte(strconv.Itoa(i)+",old\n"), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	madeIn := time.Since(made)

	p.connection("bench_conn_"+p.id, s3Endpoint)
	p.run(fmt.Sprintf(`CREATE EXTERNAL VOLUME bench_lst_vol_%s LOCATION 'oss://%s/%s' USING CONNECTION bench_conn_%s DIRECTORY = (ENABLE = TRUE, AUTO_REFRESH = FALSE) RECURSIVE = TRUE`,
		p.id, s3Bucket, rel, p.id))
	p.dropAtEnd("VOLUME", "bench_lst_vol_"+p.id)
	p.run(`CREATE TABLE t (id BIGINT, note STRING)`)
	// 18.16 has no leftPad: the zero-padded numbers are cut from larger ones.
	if err := p.st.Exec(p.ctx, fmt.Sprintf(`INSERT INTO lakepipe.load_history (table_name, pipe_name, file_path, etag, file_size, last_copy_time, status, first_error_message, first_error_line, rows_loaded, rows_rejected, load_id, version)
		SELECT '%s.t', 'lst_pipe', concat('d', substring(toString(10000 + intDiv(number, %d)), 2), '/f', substring(toString(10000000 + number), 2), '.csv'), '', 8, now(), 'LOADED', '', 0, 1, 0, 'bench', 1 FROM system.numbers LIMIT %d`,
		p.schema, perDir, n)); err != nil {
		b.Fatalf("load records: %v", err)
	}

	// Baseline: listing the whole volume, nothing else.
	b.ResetTimer()
	baseStart := time.Now()
	listed := 0
	for o := range mc.ListObjects(p.ctx, s3Bucket, minio.ListObjectsOptions{Prefix: rel, Recursive: true}) {
		if o.Err != nil {
			b.Fatal(o.Err)
		}
		listed++
	}
	base := time.Since(baseStart)
	b.StopTimer()
	if listed != n {
		b.Fatalf("the S3 server lists %d objects, want %d", listed, n)
	}

	// The baseline's million objects were listed in this process too:
	// their garbage is collected and its pages handed back before the
	// worker's RSS is sampled, so that the figure is the worker's.
	debug.FreeOSMemory()
	var maxRSS atomic.Int64
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			if kb := rssKB(os.Getpid()); kb > maxRSS.Load() {
				maxRSS.Store(kb)
			}
			select {
			case <-stop:
				return
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()

	desc := func(prop string) string {
		res := p.run("DESC PIPE EXTENDED lst_pipe")
		for _, r := range res.Rows {
			if fmt.Sprint(r[0]) == prop {
				return fmt.Sprint(r[1])
			}
		}
		return ""
	}
	turns := func() int { v, _ := strconv.Atoi(desc("turns")); return v }
	wait := func(what string, limit time.Duration, cond func() bool) {
		for deadline := time.Now().Add(limit); !cond(); time.Sleep(200 * time.Millisecond) {
			if time.Now().After(deadline) {
				b.Fatalf("%s within %v (listing: %s)", what, limit, desc("listing"))
			}
		}
	}
	b.StartTimer()
	pipeStart := time.Now()
	p.run(fmt.Sprintf(`CREATE PIPE lst_pipe INGEST_MODE = 'LIST' POLL_INTERVAL_IN_SECONDS = '1' AS COPY INTO t FROM VOLUME bench_lst_vol_%s USING CSV`, p.id))
	wait("no first turn", 30*time.Minute, func() bool { return turns() >= 1 })
	firstTurn := time.Since(pipeStart)
	wait("the listing did not become incremental", 30*time.Minute, func() bool { return strings.HasPrefix(desc("listing"), "incremental") })

	// Idle turns: the mean time of 10 of their listings. An idle pipe
	// lists inside its AwaitFiles activity, which records each listing's
	// end against the moment it was due (lakepipe_pipe_poll_lateness_seconds):
	// the listing's time, and the timer's lateness on top. Turns that ran
	// the ListFiles activity instead are counted too.
	sum0, cnt0 := idleListingLatency(b, addr)
	from := turns()
	wait("no 10 idle turns", 10*time.Minute, func() bool { return turns() >= from+10 })
	sum1, cnt1 := idleListingLatency(b, addr)
	if cnt1 <= cnt0 {
		b.Fatalf("the worker's /metrics counted no listing over %d idle turns", turns()-from)
	}
	idle := time.Duration((sum1 - sum0) / (cnt1 - cnt0) * float64(time.Second))

	// A new file, after the others.
	data := []byte("999999999,new\n")
	up := time.Now()
	if _, err := mc.PutObject(p.ctx, s3Bucket, rel+key(n), strings.NewReader(string(data)), int64(len(data)), minio.PutObjectOptions{}); err != nil {
		b.Fatal(err)
	}
	wait("the new file did not load", time.Minute, func() bool { return p.count("t") == 1 })
	newFile := time.Since(up)
	b.StopTimer()

	b.ReportMetric(idle.Seconds()*1000, "idle_list_ms")
	b.ReportMetric(base.Seconds()*1000, "full_list_ms")
	b.ReportMetric(float64(maxRSS.Load())/1024, "max_rss_MB")
	fmt.Printf("\nListing: a LIST pipe over %d loaded objects (made in %.1fs), POLL_INTERVAL_IN_SECONDS = '1'\n", n, madeIn.Seconds())
	fmt.Printf("  plain listing of the whole volume (minio-go):  %8.0f ms  (baseline)\n", base.Seconds()*1000)
	fmt.Printf("  the pipe's first turn (a full listing):        %8.0f ms\n", firstTurn.Seconds()*1000)
	fmt.Printf("  an idle turn's listing (mean of %d):          %8.0f ms  (target < 1000 ms; ratio to the baseline %.4f)\n", int(cnt1-cnt0), idle.Seconds()*1000, idle.Seconds()/base.Seconds())
	fmt.Printf("  a new file, upload → visible:                  %8.0f ms  (target within one poll plus a turn)\n", newFile.Seconds()*1000)
	fmt.Printf("  largest RSS of the test process (worker in it): %7d MB  (target < 200 MB)\n", maxRSS.Load()/1024)
	fmt.Printf("  listing now: %s\n", desc("listing"))
}

// idleListingLatency reads the sum and count of the listings of idle
// pipes from a worker's /metrics: AwaitFiles' (poll lateness) and the
// ListFiles activity's execution times, all label sets added up.
func idleListingLatency(tb testing.TB, addr string) (sum, count float64) {
	tb.Helper()
	for _, line := range strings.Split(scrapeMetrics(tb, addr), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		v, _ := strconv.ParseFloat(f[len(f)-1], 64)
		listFiles := strings.Contains(line, `activity_type="ListFiles"`)
		switch {
		case strings.HasPrefix(line, "lakepipe_pipe_poll_lateness_seconds_sum"),
			listFiles && strings.HasPrefix(line, "temporal_activity_execution_latency_seconds_sum{"):
			sum += v
		case strings.HasPrefix(line, "lakepipe_pipe_poll_lateness_seconds_count"),
			listFiles && strings.HasPrefix(line, "temporal_activity_execution_latency_seconds_count{"):
			count += v
		}
	}
	return sum, count
}
