//go:build integration

package integration

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/lakepipe/lakepipe/internal/chsql"
	"github.com/lakepipe/lakepipe/internal/tunnelserver"
	"github.com/lakepipe/lakepipe/tunnel"
)

// BenchmarkTunnelWrite measures streaming writes in the same run as their
// baseline:
//
//   - throughput: N rows (LAKEPIPE_BENCH_TUNNEL_ROWS, default 10,000,000;
//     BIGINT, STRING, DOUBLE) through the client in 64 MB record packs,
//     against clickhouse-go inserting the same rows directly in INSERTs of
//     the same size; each side runs twice, alternately, and the better run
//     of each counts (target ratio ≥ 0.8);
//   - latency: flushes of 1,000-row packs, p50 and p99 (target p50 < 20 ms).
//
// The write service runs in this process on a loopback port, as in a
// deployment next to the writer. Run: ./task bench:tunnel
func BenchmarkTunnelWrite(b *testing.B) {
	n := benchInt(b, "LAKEPIPE_BENCH_TUNNEL_ROWS", 10_000_000)
	flushes := benchInt(b, "LAKEPIPE_BENCH_TUNNEL_FLUSHES", 300)
	p := newPipeBench(b)
	p.run(`CREATE TABLE via_tunnel (id BIGINT, name STRING, amount DOUBLE)`)
	p.run(`CREATE TABLE direct (id BIGINT, name STRING, amount DOUBLE)`)
	p.run(`CREATE TABLE latency (id BIGINT, name STRING, amount DOUBLE)`)

	srv, err := tunnelserver.New(p.eng, tunnelserver.Config{Token: "bench-token", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	hs := &http.Server{Handler: srv}
	go hs.Serve(ln)
	defer hs.Close()
	c, err := tunnel.New("http://"+ln.Addr().String(), tunnel.WithToken("bench-token"))
	if err != nil {
		b.Fatal(err)
	}
	names := make([]string, 1024)
	for i := range names {
		names[i] = "customer " + strconv.Itoa(i*7919)
	}

	packRows := 0
	viaTunnel := func() time.Duration {
		sess, err := c.BuildStreamUploadSession(p.schema, "via_tunnel").Build(p.ctx)
		if err != nil {
			b.Fatal(err)
		}
		pack, err := sess.NewRecordPack(tunnel.RecordPackOptions{
			Compression: tunnel.CompressNone,
			OnFlush: func(r tunnel.FlushResult) {
				if packRows == 0 {
					packRows = int(r.RecordCount)
				}
			},
		})
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		for i := 0; i < n; i++ {
			if err := pack.AppendRow(int64(i), names[i&1023], float64(i)*0.25); err != nil {
				b.Fatal(err)
			}
		}
		if _, err := pack.Flush(); err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}
	direct := func() time.Duration {
		rows := packRows
		if rows == 0 {
			rows = 1 << 21
		}
		q := "INSERT INTO " + chsql.Table(p.schema, "direct") + " (id, name, amount)"
		ids, strs, amounts := make([]int64, 0, rows), make([]string, 0, rows), make([]float64, 0, rows)
		send := func() {
			batch, err := p.st.Conn().PrepareBatch(p.ctx, q)
			if err != nil {
				b.Fatal(err)
			}
			for i, v := range []any{ids, strs, amounts} {
				if err := batch.Column(i).Append(v); err != nil {
					b.Fatal(err)
				}
			}
			if err := batch.Send(); err != nil {
				b.Fatal(err)
			}
			ids, strs, amounts = ids[:0], strs[:0], amounts[:0]
		}
		start := time.Now()
		for i := 0; i < n; i++ {
			ids = append(ids, int64(i))
			strs = append(strs, names[i&1023])
			amounts = append(amounts, float64(i)*0.25)
			if len(ids) == rows {
				send()
			}
		}
		if len(ids) > 0 {
			send()
		}
		return time.Since(start)
	}

	b.ResetTimer()
	var tT, dT []time.Duration
	for round := 0; round < 2; round++ {
		tT = append(tT, viaTunnel())
		dT = append(dT, direct())
	}
	for _, tbl := range []string{"via_tunnel", "direct"} {
		if got := p.run("SELECT COUNT(*), COUNT(DISTINCT id) FROM " + tbl); fmt.Sprint(got.Rows) != fmt.Sprintf("[[%d %d]]", 2*n, n) {
			b.Fatalf("%s: %v, want %d rows, %d distinct", tbl, got.Rows, 2*n, n)
		}
	}
	best := func(d []time.Duration) time.Duration {
		sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
		return d[0]
	}
	bt, bd := best(tT), best(dT)
	ratio := bd.Seconds() / bt.Seconds()

	// Latency of small flushes.
	sess, err := c.BuildStreamUploadSession(p.schema, "latency").Build(p.ctx)
	if err != nil {
		b.Fatal(err)
	}
	pack, err := sess.NewRecordPack(tunnel.RecordPackOptions{Compression: tunnel.CompressNone})
	if err != nil {
		b.Fatal(err)
	}
	var lat []time.Duration
	for f := 0; f < flushes; f++ {
		for i := 0; i < 1000; i++ {
			if err := pack.AppendRow(int64(f*1000+i), names[i&1023], float64(i)); err != nil {
				b.Fatal(err)
			}
		}
		t0 := time.Now()
		if _, err := pack.Flush(); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	p50, p99 := lat[len(lat)/2], lat[len(lat)*99/100]
	b.ReportMetric(float64(n)/bt.Seconds(), "tunnel_rows/s")
	b.ReportMetric(float64(n)/bd.Seconds(), "direct_rows/s")
	b.ReportMetric(ratio, "ratio")
	b.ReportMetric(float64(p50.Microseconds())/1000, "p50_ms")
	b.ReportMetric(float64(p99.Microseconds())/1000, "p99_ms")
	b.Logf("%d rows, packs of %d rows: tunnel %v %v, direct %v %v; ratio %.2f (target ≥ 0.8)", n, packRows, tT[0], tT[1], dT[0], dT[1], ratio)
	b.Logf("%d flushes of 1,000 rows: p50 %v, p99 %v (target p50 < 20 ms)", flushes, p50, p99)
}
