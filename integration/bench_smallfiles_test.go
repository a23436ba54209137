//go:build integration

package integration

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
)

// BenchmarkPipeSmallFiles loads 20,000 one-row CSV files
// (LAKEPIPE_BENCH_SMALL_FILES) with a LIST pipe polling every second, timed
// from the first upload to all rows visible (target ≥ 1,000 files/s). The
// baseline, measured in the same run just before, is the S3 server taking
// the same number of files with the same 16 uploaders and no pipe: how
// fast files can arrive here at all. It reports both rates and their ratio,
// and checks every row arrived once. LAKEPIPE_BENCH_SMALL_PROFILE=file
// writes a CPU profile of the pipe phase (the uploaders run in the same
// process); LAKEPIPE_BENCH_SMALL_PROPS adds properties to the pipe (for
// instance COPY_JOB_HINT = '{"parallelism": 8}'). It prints the CPU the
// machine and each process spent while the files were uploaded and after.
// Run: ./task bench:smallfiles
func BenchmarkPipeSmallFiles(b *testing.B) {
	n := benchInt(b, "LAKEPIPE_BENCH_SMALL_FILES", 20_000)
	p := newPipeBench(b)
	mc := rawS3(b)
	upload := func(prefix string, onFirst func()) (time.Duration, error) {
		var (
			next  atomic.Int64
			first sync.Once
			wg    sync.WaitGroup
			mu    sync.Mutex
			upErr error
		)
		next.Store(-1)
		start := time.Now()
		for w := 0; w < 16; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					i := int(next.Add(1))
					if i >= n {
						return
					}
					data := []byte(strconv.Itoa(i+1) + ",small file " + strconv.Itoa(i) + "\n")
					key := fmt.Sprintf("%sf%07d.csv", prefix, i)
					if _, err := mc.PutObject(p.ctx, s3Bucket, key, bytes.NewReader(data), int64(len(data)), minio.PutObjectOptions{}); err != nil {
						mu.Lock()
						upErr = err
						mu.Unlock()
						return
					}
					first.Do(onFirst)
				}
			}()
		}
		wg.Wait()
		return time.Since(start), upErr
	}

	// Baseline: the uploads alone.
	b.ResetTimer()
	base, err := upload(p.prefix+"baseline/", func() {})
	b.StopTimer()
	if err != nil {
		b.Fatalf("baseline upload: %v", err)
	}

	p.worker()
	p.connection("bench_conn_"+p.id, s3Endpoint)
	p.run(fmt.Sprintf(`CREATE EXTERNAL VOLUME bench_small_vol_%s LOCATION 'oss://%s/%ssmall/' USING CONNECTION bench_conn_%s DIRECTORY = (ENABLE = TRUE, AUTO_REFRESH = FALSE) RECURSIVE = TRUE`,
		p.id, s3Bucket, p.prefix, p.id))
	p.dropAtEnd("VOLUME", "bench_small_vol_"+p.id)
	p.run(`CREATE TABLE small (id BIGINT, note STRING)`)
	p.run(fmt.Sprintf(`CREATE PIPE small_pipe INGEST_MODE = 'LIST' POLL_INTERVAL_IN_SECONDS = '1' %s AS COPY INTO small FROM VOLUME bench_small_vol_%s USING CSV`, os.Getenv("LAKEPIPE_BENCH_SMALL_PROPS"), p.id))

	var firstUp time.Time
	phase := newPhaseCPU(b, "clickhouse", "s3", "temporal")
	var upCores, afterCores string
	var atUpEnd int64 // rows visible when the last upload ended
	stopProfile := profilePhase(b, "LAKEPIPE_BENCH_SMALL_PROFILE")
	b.StartTimer()
	upDone := make(chan error, 1)
	var upTook time.Duration
	go func() {
		d, err := upload(p.prefix+"small/", func() { firstUp = time.Now() })
		upTook = d
		upCores = phase.String()
		atUpEnd = p.count("small")
		phase.reset()
		upDone <- err
	}()
	deadline := time.Now().Add(20 * time.Minute)
	uploaded := false
	for {
		if got := p.count("small"); got >= int64(n) {
			if got > int64(n) {
				b.Fatalf("small has %d rows, want %d", got, n)
			}
			break
		}
		if !uploaded {
			select {
			case err := <-upDone:
				if err != nil {
					b.Fatalf("upload: %v", err)
				}
				uploaded = true
			default:
			}
		}
		if time.Now().After(deadline) {
			b.Fatalf("the pipe did not load %d files within 20 minutes (%d so far)", n, p.count("small"))
		}
		time.Sleep(50 * time.Millisecond)
	}
	visible := time.Now()
	b.StopTimer()
	if uploaded {
		afterCores = phase.String()
	}
	stopProfile()
	if !uploaded {
		if err := <-upDone; err != nil {
			b.Fatalf("upload: %v", err)
		}
	}
	pipeT := visible.Sub(firstUp)
	if d, err := p.st.Strings(p.ctx, "SELECT toString(uniqExact(id)) FROM "+p.schema+".small"); err != nil || len(d) != 1 || d[0] != strconv.Itoa(n) {
		b.Fatalf("distinct ids: %v %v, want %d", d, err, n)
	}
	baseRate, pipeRate := float64(n)/base.Seconds(), float64(n)/pipeT.Seconds()
	b.ReportMetric(baseRate, "upload_files/s")
	b.ReportMetric(pipeRate, "pipe_files/s")
	b.ReportMetric(pipeRate/baseRate, "pipe_ratio")
	fmt.Printf("\nSmall files: %d one-row CSV files, a LIST pipe polling every second (target ≥ 1,000 files/s)\n", n)
	fmt.Printf("  uploads alone (16 at a time, no pipe):       %7.2fs  %7.0f files/s  (baseline)\n", base.Seconds(), baseRate)
	fmt.Printf("  pipe, first upload → all rows visible:       %7.2fs  %7.0f files/s  ratio %.2f\n", pipeT.Seconds(), pipeRate, pipeRate/baseRate)
	fmt.Printf("  (its uploads took %.2fs, beside the pipe; %d of the rows were visible when they ended)\n", upTook.Seconds(), atUpEnd)
	// A phase that kept every core busy was bound by the machine.
	fmt.Printf("  CPU while the files were uploaded:  %s\n", upCores)
	if afterCores != "" {
		fmt.Printf("  CPU after the last upload:          %s\n", afterCores)
	}
}
