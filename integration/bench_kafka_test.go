//go:build integration

package integration

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/lakepipe/lakepipe/internal/chsql"
)

// kafkaBaseline reads every record of a topic from its beginning with a
// plain franz-go consumer that does nothing with them: the fastest a Kafka
// pipe could possibly go on this machine.
func kafkaBaseline(tb testing.TB, topic string, partitions int32, n int) time.Duration {
	tb.Helper()
	start := time.Now()
	cl := benchConsumer(tb, topic, partitions)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	got := 0
	for got < n {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			tb.Fatalf("baseline consumer: %d of %d records: %v", got, n, err)
		}
		got += fs.NumRecords()
	}
	return time.Since(start)
}

// benchConsumer is a plain franz-go consumer of every partition of the
// topic from its beginning, no group.
func benchConsumer(tb testing.TB, topic string, partitions int32) *kgo.Client {
	tb.Helper()
	parts := map[int32]kgo.Offset{}
	for p := int32(0); p < partitions; p++ {
		parts[p] = kgo.NewOffset().AtStart()
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(kafkaAddr), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: parts}))
	if err != nil {
		tb.Fatal(err)
	}
	return cl
}

// benchRows are the rows the bench's records stand for, made while
// producing them: at[partition][offset] is the record's row.
type benchRows struct {
	at       map[int32][]int32
	times    []time.Time
	levels   []string
	messages []string
}

// add records the row of the produced record r, which logLine("bench", j,
// level) made.
func (br *benchRows) add(tb testing.TB, r *kgo.Record, j int, level string) {
	if br.at == nil {
		br.at = map[int32][]int32{}
	}
	if r.Offset != int64(len(br.at[r.Partition])) {
		tb.Fatalf("partition %d: offset %d after %d records (the floor needs dense offsets)", r.Partition, r.Offset, len(br.at[r.Partition]))
	}
	br.at[r.Partition] = append(br.at[r.Partition], int32(j))
	for len(br.times) <= j {
		br.times, br.levels, br.messages = append(br.times, time.Time{}), append(br.levels, ""), append(br.messages, "")
	}
	br.times[j] = time.Date(2026, 12, 2, 10, (j/60)%60, j%60, 0, time.UTC)
	br.levels[j], br.messages[j] = level, fmt.Sprintf("bench line %d", j)
}

// kafkaFloor reads every record of the topic as kafkaBaseline does and
// inserts the row it stands for into table (log_time, level, message),
// taken from rows made before: no parsing, no evaluation, no exactly-once
// bookkeeping, one INSERT whose blocks of 128 Ki rows are sent as they
// fill (the pipe's block size). It is the floor under any pipe that loads
// these rows on this machine: reading and inserting alone. It returns the
// time until the INSERT ended (the rows visible) and the CPU seconds this
// process spent.
func kafkaFloor(tb testing.TB, conn driver.Conn, table, topic string, partitions int32, rows *benchRows, n int) (time.Duration, float64) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cpu0 := cpuSeconds(os.Getpid())
	start := time.Now()
	cl := benchConsumer(tb, topic, partitions)
	defer cl.Close()
	batch, err := conn.PrepareBatch(ctx, "INSERT INTO "+table+" (log_time, level, message)")
	if err != nil {
		tb.Fatal(err)
	}
	const block = 128 << 10
	var (
		times    = make([]time.Time, 0, block)
		levels   = make([]string, 0, block)
		messages = make([]string, 0, block)
	)
	flush := func() {
		for i, v := range []any{times, levels, messages} {
			if err := batch.Column(i).Append(v); err != nil {
				tb.Fatalf("floor insert: %v", err)
			}
		}
		if err := batch.Flush(); err != nil {
			tb.Fatalf("floor insert: %v", err)
		}
		times, levels, messages = times[:0], levels[:0], messages[:0]
	}
	got := 0
	for got < n {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			tb.Fatalf("floor consumer: %d of %d records: %v", got, n, err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			j := rows.at[r.Partition][r.Offset]
			times, levels, messages = append(times, rows.times[j]), append(levels, rows.levels[j]), append(messages, rows.messages[j])
			got++
			if len(times) == block {
				flush()
			}
		})
	}
	if len(times) > 0 {
		flush()
	}
	if err := batch.Send(); err != nil {
		tb.Fatalf("floor insert: %v", err)
	}
	return time.Since(start), cpuSeconds(os.Getpid()) - cpu0
}

// gcStats is what this process's garbage collector has done so far.
type gcStats struct {
	alloc  uint64  // bytes allocated
	cycles uint64  // collections finished
	cpu    float64 // CPU seconds spent collecting (estimated by the runtime)
}

func gcOf() gcStats {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}, {Name: "/gc/cycles/total:gc-cycles"}, {Name: "/cpu/classes/gc/total:cpu-seconds"}}
	metrics.Read(s)
	return gcStats{alloc: s[0].Value.Uint64(), cycles: s[1].Value.Uint64(), cpu: s[2].Value.Float64()}
}

func (g gcStats) minus(o gcStats) gcStats {
	return gcStats{alloc: g.alloc - o.alloc, cycles: g.cycles - o.cycles, cpu: g.cpu - o.cpu}
}

// profilePhase starts a CPU profile into the file the environment
// variable names, if it names one; the returned function stops it.
func profilePhase(tb testing.TB, env string) func() {
	path := os.Getenv(env)
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		tb.Fatalf("%s: %v (a profile of the whole run, -cpuprofile, cannot be taken beside it)", env, err)
	}
	return func() {
		pprof.StopCPUProfile()
		_ = f.Close()
	}
}

// allocsPhase writes the allocation profile at the start and at the end of
// a phase, into file.0 and file.1, if the environment variable names a
// file: go tool pprof -sample_index=alloc_space -base file.0 file.1 shows
// what the phase allocated (the producing before it left much).
func allocsPhase(tb testing.TB, env string) func() {
	path := os.Getenv(env)
	if path == "" {
		return func() {}
	}
	write := func(suffix string) {
		f, err := os.Create(path + suffix)
		if err != nil {
			tb.Fatal(err)
		}
		defer f.Close()
		if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
			tb.Fatal(err)
		}
	}
	write(".0")
	return func() { write(".1") }
}

// benchDuration reads a duration setting (e.g. "5s").
func benchDuration(tb testing.TB, name string, def time.Duration) time.Duration {
	if v := os.Getenv(name); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			tb.Fatalf("%s=%q: %v", name, v, err)
		}
		return d
	}
	return def
}

// BenchmarkKafkaPipe measures a Kafka pipe against a baseline in the same
// run:
//
//	(a) throughput: N JSON log lines (LAKEPIPE_BENCH_KAFKA_RECORDS, default
//	    1,000,000) on a 6-partition topic, loaded by the Kafka pipe guide's pipe (three
//	    PARSE_JSON fields, TIMESTAMP cast) from CREATE PIPE until every row
//	    is visible, vs a plain franz-go consumer that only reads the same
//	    records (measured before and after the pipe; target ratio ≥ 0.5),
//	    and vs the floor: the same consumer inserting the rows the records
//	    stand for, made beforehand (kafkaFloor), which no pipe can beat;
//	(b) latency with BATCH_INTERVAL_IN_SECONDS = '1': one record produced at
//	    a random moment, the table polled until its row is visible, 40 times
//	    (LAKEPIPE_BENCH_KAFKA_LATENCY); target p50 < 1.5 s.
//
// LAKEPIPE_BENCH_KAFKA_PROFILE=file writes a CPU profile of the pipe's
// phase alone (the worker runs in this process): go tool pprof file.
// LAKEPIPE_BENCH_KAFKA_ALLOCS=file writes what it allocated (see allocsPhase).
//
// LAKEPIPE_BENCH_KAFKA_MAP replaces READ_KAFKA's map() with its value, to
// measure settings: LAKEPIPE_BENCH_KAFKA_MAP="map('max.partition.fetch.bytes', '131072')".
//
// LAKEPIPE_BENCH_KAFKA_RAW=1 measures the lightest pipe instead (the value
// as one string, no JSON), to tell evaluation cost from the rest.
//
// Run: ./task bench:kafka
func BenchmarkKafkaPipe(b *testing.B) {
	n := benchInt(b, "LAKEPIPE_BENCH_KAFKA_RECORDS", 1_000_000)
	nLat := benchInt(b, "LAKEPIPE_BENCH_KAFKA_LATENCY", 40)
	p := newPipeBench(b)
	p.worker()
	topic := "bench_" + p.id
	prod := kafkaTopic(b, topic, 6)
	// Produce the records up front.
	ctx := p.ctx
	const chunk = 10000
	levels := []string{"INFO", "WARN", "ERROR"}
	var rows benchRows
	for i := 0; i < n; i += chunk {
		recs := make([]*kgo.Record, 0, chunk)
		for j := i; j < i+chunk && j < n; j++ {
			recs = append(recs, &kgo.Record{Value: []byte(logLine("bench", j, levels[j%3]))})
		}
		if err := prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			b.Fatalf("produce: %v", err)
		}
		for k, r := range recs {
			rows.add(b, r, i+k, levels[(i+k)%3])
		}
	}
	p.run(`CREATE TABLE logs (log_time TIMESTAMP, level STRING, message STRING)`)
	// The Kafka server persists what it was sent for a few seconds after;
	// both sides are measured after that.
	time.Sleep(benchDuration(b, "LAKEPIPE_BENCH_KAFKA_SETTLE", 10*time.Second))
	// Producing left this process a large heap; collect it now rather than
	// in the middle of the first measurement.
	runtime.GC()

	// The first read of a topic just produced is 2-3 times slower than
	// the next ones (1 M records: 790-950 ms, then 250-570 ms; measured
	// 2026-12-06), and the pipe reads the topic after the baseline: one
	// read first, so that both sides read it warm.
	kafkaBaseline(b, topic, 6, n)
	b.ResetTimer()
	phase := newPhaseCPU(b, "clickhouse", "kafka", "temporal")
	base1 := kafkaBaseline(b, topic, 6, n)
	baseCores := phase.String()
	start := time.Now()
	pipeSQL := kafkaPipeSQL("bench_pipe", "logs", topic, "bench_"+p.id, 0, "")
	if os.Getenv("LAKEPIPE_BENCH_KAFKA_RAW") != "" {
		// The lightest pipe: the value as one string, no JSON.
		pipeSQL = fmt.Sprintf(`CREATE PIPE bench_pipe BATCH_INTERVAL_IN_SECONDS = '1' AS COPY INTO logs (message) FROM (SELECT CAST(VALUE AS STRING) AS message FROM READ_KAFKA('%s', '%s', '', 'bench_%s', '', '', '', '', 'raw', 'raw', 0, map()))`, kafkaAddr, topic, p.id)
	}
	if m := os.Getenv("LAKEPIPE_BENCH_KAFKA_MAP"); m != "" {
		pipeSQL = strings.Replace(pipeSQL, "map()", m, 1)
	}
	chPid := pidOf(b, "clickhouse")
	cpu0, chCPU0 := cpuSeconds(os.Getpid()), cpuSeconds(chPid)
	stopProfile := profilePhase(b, "LAKEPIPE_BENCH_KAFKA_PROFILE")
	stopAllocs := allocsPhase(b, "LAKEPIPE_BENCH_KAFKA_ALLOCS")
	phase.reset()
	gc0 := gcOf()
	p.run(pipeSQL)
	for p.count("logs") < int64(n) {
		if time.Since(start) > 20*time.Minute {
			b.Fatalf("pipe: %d of %d rows after 20 minutes", p.count("logs"), n)
		}
		time.Sleep(50 * time.Millisecond)
	}
	pipe := time.Since(start)
	pipeCores, pipeMachine := phase.String(), phase.machineSeconds()
	gc := gcOf().minus(gc0)
	stopProfile()
	stopAllocs()
	// The worker runs in this process; besides it, only the polling of
	// the row count above (a query every 50 ms) is counted.
	workerCPU := (cpuSeconds(os.Getpid()) - cpu0) / (float64(n) / 1e6)
	chCPU := (cpuSeconds(chPid) - chCPU0) / (float64(n) / 1e6)
	if got := p.count("logs"); got != int64(n) {
		b.Fatalf("pipe loaded %d rows, want %d", got, n)
	}
	p.run(`DROP PIPE bench_pipe`)
	base2 := kafkaBaseline(b, topic, 6, n)
	// The floor runs last: the parts it inserts are merged in the
	// background, which would have slowed what came after it.
	floorTable := chsql.Table(p.schema, "logs_floor")
	if err := p.st.Exec(p.ctx, "CREATE TABLE "+floorTable+" AS "+chsql.Table(p.schema, "logs")); err != nil {
		b.Fatal(err)
	}
	phase.reset()
	floor, floorCPU := kafkaFloor(b, p.st.Conn(), floorTable, topic, 6, &rows, n)
	floorCores, floorMachine := phase.String(), phase.machineSeconds()
	floorCPU /= float64(n) / 1e6
	if got := p.count("logs_floor"); got != int64(n) {
		b.Fatalf("floor loaded %d rows, want %d", got, n)
	}

	// (b) latency.
	latTopic := "benchlat_" + p.id
	lprod := kafkaTopic(b, latTopic, 1)
	p.run(`CREATE TABLE lat (id BIGINT)`)
	p.run(fmt.Sprintf(`CREATE PIPE lat_pipe BATCH_INTERVAL_IN_SECONDS = '1' AS COPY INTO lat FROM (
		SELECT CAST(VALUE AS STRING)::BIGINT AS id FROM READ_KAFKA('%s', '%s', '', 'benchlat_%s', '', '', '', '', 'raw', 'raw', 0, map()))`, kafkaAddr, latTopic, p.id))
	rng := rand.New(rand.NewSource(time.Now().UnixNano()))
	lat := make([]time.Duration, 0, nLat)
	for i := 1; i <= nLat; i++ {
		time.Sleep(time.Duration(rng.Intn(1000)) * time.Millisecond)
		if err := lprod.ProduceSync(ctx, &kgo.Record{Value: []byte(strconv.Itoa(i))}).FirstErr(); err != nil {
			b.Fatalf("produce: %v", err)
		}
		sent := time.Now()
		for p.count("lat") < int64(i) {
			if time.Since(sent) > time.Minute {
				b.Fatalf("record %d not visible after a minute", i)
			}
			time.Sleep(10 * time.Millisecond)
		}
		lat = append(lat, time.Since(sent))
	}
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })

	base := (base1 + base2) / 2
	rate := func(d time.Duration) float64 { return float64(n) / d.Seconds() }
	ratio := base.Seconds() / pipe.Seconds()
	b.ReportMetric(rate(pipe), "pipe_records/s")
	b.ReportMetric(rate(base), "consumer_records/s")
	b.ReportMetric(ratio, "ratio")
	b.ReportMetric(base.Seconds()/floor.Seconds(), "floor_ratio")
	b.ReportMetric(floor.Seconds()/pipe.Seconds(), "pipe_of_floor")
	b.ReportMetric(workerCPU, "worker_cpu_s/M_records")
	b.ReportMetric(float64(gc.alloc)/float64(n), "worker_alloc_B/record")
	b.ReportMetric(gc.cpu/(float64(n)/1e6), "worker_gc_cpu_s/M_records")
	b.ReportMetric(floorCPU, "floor_cpu_s/M_records")
	b.ReportMetric(chCPU, "clickhouse_cpu_s/M_records")
	b.ReportMetric(benchMS(benchPercentile(lat, 50)), "latency_p50_ms")
	b.ReportMetric(benchMS(benchPercentile(lat, 95)), "latency_p95_ms")
	fmt.Printf("\nKafka pipe throughput, %d JSON log lines on 6 partitions (the Kafka pipe guide's pipe: PARSE_JSON ×3, TIMESTAMP cast):\n", n)
	fmt.Printf("  plain franz-go consumer (read only) %9.0f records/s (%v, %v)\n", rate(base), base1.Round(time.Millisecond), base2.Round(time.Millisecond))
	fmt.Printf("  pipe, topic to visible rows         %9.0f records/s (%v)\n", rate(pipe), pipe.Round(time.Millisecond))
	fmt.Printf("  floor: read and insert the rows only  %9.0f records/s (%v)\n", rate(floor), floor.Round(time.Millisecond))
	fmt.Printf("  ratio %.2f (target ≥ 0.5); the floor's ratio %.2f; the pipe at %.2f of the floor's speed\n", ratio, base.Seconds()/floor.Seconds(), floor.Seconds()/pipe.Seconds())
	fmt.Printf("  worker CPU %.2f s per million records (target ≤ 1.2; the floor's %.2f); ClickHouse %.2f s; the pipe took %.2f cores of 2 for %v\n",
		workerCPU, floorCPU, chCPU, (workerCPU+chCPU)*float64(n)/1e6/pipe.Seconds(), pipe.Round(time.Millisecond))
	// Where the time went: a phase that kept the machine's cores busy was
	// bound by the CPU there was, not by waiting.
	fmt.Printf("  the worker's heap during the pipe: %.0f bytes allocated per record, %d collections, %.2f CPU-s per million records collecting\n",
		float64(gc.alloc)/float64(n), gc.cycles, gc.cpu/(float64(n)/1e6))
	fmt.Printf("  CPU during the first consumer read: %s\n", baseCores)
	fmt.Printf("  CPU during the pipe:                %s\n", pipeCores)
	fmt.Printf("  CPU during the floor:               %s\n", floorCores)
	// The most a side could reach here with the CPU it costs: every
	// core busy for it from start to end.
	cores := float64(runtime.NumCPU())
	fmt.Printf("  with every core busy, the CPU they cost would allow a ratio of at most %.2f (the pipe) and %.2f (the floor)\n",
		base.Seconds()*cores/pipeMachine, base.Seconds()*cores/floorMachine)
	fmt.Printf("Kafka pipe latency, BATCH_INTERVAL_IN_SECONDS = '1', %d records produced at random moments:\n", nLat)
	fmt.Printf("  p50 %.0f ms  p95 %.0f ms  min %.0f ms  max %.0f ms (target p50 < 1500 ms)\n",
		benchMS(benchPercentile(lat, 50)), benchMS(benchPercentile(lat, 95)), benchMS(lat[0]), benchMS(lat[len(lat)-1]))
}
