package kafkaload

import (
	"context"
	"fmt"
	"testing"

	"github.com/lakepipe/lakepipe/internal/chstore"
	"github.com/lakepipe/lakepipe/internal/core"
	"github.com/lakepipe/lakepipe/internal/recordeval"
	"github.com/lakepipe/lakepipe/internal/rowio"
	"github.com/lakepipe/lakepipe/internal/sqlast"
	"github.com/lakepipe/lakepipe/internal/sqlparse"
)

// BenchmarkKafkaEvalConvert is a Kafka pipe's CPU between the fetched
// records and the ClickHouse columns, without servers: the Kafka pipe
// guide's SELECT (PARSE_JSON ×3, a TIMESTAMP cast) evaluated into batches
// and converted into a DateTime and two String columns. "text" hands every
// value over as text (the path before typed vectors), "typed" the TIMESTAMP
// as a time; run both to read the ratio:
//
//	go test ./internal/engine -run XXX -bench KafkaEvalConvert
func BenchmarkKafkaEvalConvert(b *testing.B) {
	q, err := sqlparse.ParseQuery(`SELECT CAST(PARSE_JSON(VALUE::STRING)['time'] AS TIMESTAMP) AS log_time,
		PARSE_JSON(VALUE::STRING)['level']::STRING AS level, PARSE_JSON(VALUE::STRING)['message']::STRING AS message
		FROM READ_KAFKA('b:9092', 't', '', 'g', '', '', '', '', 'raw', 'raw', 0, map())`)
	if err != nil {
		b.Fatal(err)
	}
	prog, err := recordeval.Compile(q.Body.(*sqlast.Select), "raw", "raw")
	if err != nil {
		b.Fatal(err)
	}
	const n = 8192
	recs := make([]recordeval.Record, n)
	for i := range recs {
		recs[i] = recordeval.Record{Offset: int64(i), Value: fmt.Appendf(nil, `{"time":"2026-12-02 10:%02d:%02d","level":"%s","message":"bench line %d"}`,
			(i/60)%60, i%60, []string{"INFO", "WARN", "ERROR"}[i%3], i)}
	}
	for _, mode := range []string{"text", "typed"} {
		b.Run(mode, func(b *testing.B) {
			var typed []bool
			if mode == "typed" {
				typed = []bool{true, false, false}
			}
			batch := prog.NewBatch(n, typed)
			cols := []rowio.Column{{Name: "log_time", Type: "DateTime"}, {Name: "level", Type: "String"}, {Name: "message", Type: "String"}}
			// Add only converts (a block is sent at BlockRows): a store
			// without a connection does.
			st := &chstore.Store{}
			ev := prog.Evaluator()
			b.ReportAllocs()
			for b.Loop() {
				recordeval.ResetBatch(batch)
				for i := range recs {
					if _, err := ev.Append(batch, &recs[i]); err != nil {
						b.Fatal(err)
					}
				}
				ins, err := st.NewInserter(context.Background(), "db", "t", cols, core.CommitColumn, 1)
				if err != nil {
					b.Fatal(err)
				}
				ins.BlockRows, ins.BlockBytes = 1<<30, 1<<40
				ins.Expect(int64(n)) // as the pipe does
				if errs, err := ins.Add(batch, []int{0, 1, 2}); err != nil || len(errs) > 0 {
					b.Fatal(err, errs)
				}
				ins.Abort()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/record")
		})
	}
}
