package tunnel

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/lakepipe/lakepipe/internal/codec"
)

// benchNames are the STRING values of the benchmarks' rows.
var benchNames = func() []string {
	s := make([]string, 1024)
	for i := range s {
		s[i] = "user_" + strconv.Itoa(i*7919)
	}
	return s
}()

// BenchmarkAppendRow measures AppendRow of (BIGINT, STRING, DOUBLE) rows
// into the Arrow builders, without flushing.
func BenchmarkAppendRow(b *testing.B) {
	l := testLayout(b, testColumns)
	s := &StreamUploadSession{c: &Client{}, info: SessionInfo{ID: "s"}, l: l, compression: "identity"}
	p, err := s.NewRecordPack(RecordPackOptions{FlushThreshold: -1})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if err := p.AppendRow(int64(i), benchNames[i&1023], float64(i)*0.5); err != nil {
			b.Fatal(err)
		}
		if i++; i%(1<<20) == 0 {
			p.Discard()
		}
	}
}

// BenchmarkRecordAppend is BenchmarkAppendRow with setters by name.
func BenchmarkRecordAppend(b *testing.B) {
	l := testLayout(b, testColumns)
	s := &StreamUploadSession{c: &Client{}, info: SessionInfo{ID: "s"}, l: l, compression: "identity"}
	p, _ := s.NewRecordPack(RecordPackOptions{FlushThreshold: -1})
	r := s.NewRecord()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		r.SetBigint("id", int64(i))
		r.SetString("name", benchNames[i&1023])
		r.SetDouble("score", float64(i)*0.5)
		if err := p.Append(r); err != nil {
			b.Fatal(err)
		}
		if i++; i%(1<<20) == 0 {
			p.Discard()
		}
	}
}

// BenchmarkPush pushes rows through the whole client, 64 MiB packs, to a
// server that decompresses each body and drops it: what the client and
// the decompression cost on the loopback path, per codec.
func BenchmarkPush(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.URL.Path == "/v1/streams" {
			w.WriteHeader(http.StatusCreated)
			json.NewEncoder(w).Encode(SessionInfo{ID: "s", Columns: testColumns})
			return
		}
		zr, err := codec.NewReader(r.Header.Get("Content-Encoding"), r.Body)
		if err != nil {
			http.Error(w, err.Error(), 415)
			return
		}
		// Large reads, as the real server's Arrow reader makes.
		io.CopyBuffer(struct{ io.Writer }{io.Discard}, zr, make([]byte, 1<<20))
		zr.Close()
		json.NewEncoder(w).Encode(FlushResult{})
	}))
	defer srv.Close()
	c, _ := New(srv.URL)
	for _, name := range append(codec.Names(), "identity-background") {
		enc, background := strings.CutSuffix(name, "-background")
		b.Run(name, func(b *testing.B) {
			s, err := c.CreateStreamUploadSession(context.Background(), "", "t", WithCompressor(enc))
			if err != nil {
				b.Fatal(err)
			}
			var sent, rows int64
			p, _ := s.NewRecordPack(RecordPackOptions{
				BackgroundFlush: background,
				OnFlush:         func(r FlushResult) { sent += r.FlushSize; rows += r.RecordCount },
			})
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if err := p.AppendRow(int64(i), benchNames[i&1023], float64(i)*0.5); err != nil {
					b.Fatal(err)
				}
				i++
			}
			res, err := p.Flush()
			if err != nil {
				b.Fatal(err)
			}
			sent += res.FlushSize
			rows += res.RecordCount
			if rows != int64(i) {
				b.Fatalf("%d rows flushed of %d", rows, i)
			}
			b.ReportMetric(float64(sent)/float64(i), "wire-B/row")
		})
	}
}
