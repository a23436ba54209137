package tunnel

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/lakepipe/lakepipe/internal/codec"
)

var allColumns = []Column{
	{Name: "id", Type: "BIGINT", CHType: "Int64"},
	{Name: "name", Type: "STRING", CHType: "Nullable(String)"},
	{Name: "score", Type: "DOUBLE", CHType: "Float64"},
	{Name: "amount", Type: "DECIMAL(10,2)", CHType: "Nullable(Decimal(10, 2))"},
	{Name: "ts", Type: "TIMESTAMP", CHType: "DateTime64(3)"},
	{Name: "day", Type: "DATE", CHType: "Nullable(Date32)"},
	{Name: "ok", Type: "BOOLEAN", CHType: "Bool"},
	{Name: "small", Type: "TINYINT", CHType: "Nullable(Int8)"},
	{Name: "u", Type: "INT UNSIGNED", CHType: "UInt32"},
	{Name: "f", Type: "FLOAT", CHType: "Float32"},
	{Name: "tags", Type: "ARRAY<STRING>", CHType: "Array(String)"},
	{Name: "ns", Type: "TIMESTAMP_NS", CHType: "Nullable(DateTime64(9))"},
}

func openPack(t *testing.T, f *fakeServer, opts ...RecordPackOptions) (*StreamUploadSession, *RecordPack) {
	t.Helper()
	s, err := f.client(t).CreateStreamUploadSession(context.Background(), "", "t")
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.NewRecordPack(opts...)
	if err != nil {
		t.Fatal(err)
	}
	return s, p
}

var flushIDRe = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}-([0-9]+)$`)

func TestAppendFlushRows(t *testing.T) {
	f := newFakeServer(t, allColumns)
	s, p := openPack(t, f)
	sh := time.FixedZone("Asia/Shanghai", 8*3600)
	ts := time.Date(2023, 10, 1, 23, 30, 15, 123456789, sh)

	r := s.NewRecord()
	r.SetBigint("id", 1)
	r.SetString("name", "alice")
	r.SetDouble("score", 1.5)
	r.SetDecimal("amount", decimal.RequireFromString("12.30"))
	r.SetTimestamp("ts", ts)
	r.SetDate("day", ts) // the calendar date in Shanghai
	r.SetBoolean("ok", true)
	r.SetInt("small", -7)
	r.SetBigint("u", 4000000000)
	r.SetFloat("f", 0.25)
	r.SetTimestamp("ns", ts)
	if err := p.Append(r); err != nil {
		t.Fatal(err)
	}

	// Reused: unset values are NULL or the zero value.
	r.Reset()
	r.SetBigint("id", 2)
	r.SetNull("name")
	r.SetDecimal("amount", "-0.05")
	r.SetNull("tags") // only NULL: the column is not sent
	if err := p.Append(r); err != nil {
		t.Fatal(err)
	}

	// By position, Go values.
	if err := p.AppendRow(int64(3), nil, 2.0, "1e3", ts, nil, false, int8(127), uint32(7), float32(-1), nil, nil); err != nil {
		t.Fatal(err)
	}
	if got := p.RecordCount(); got != 3 {
		t.Fatalf("RecordCount = %d", got)
	}
	if p.Size() <= 0 {
		t.Fatalf("Size = %d", p.Size())
	}

	res, err := p.Flush(FlushOption{Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ok := f.ok()
	if len(ok) != 1 {
		t.Fatalf("%d flushes", len(ok))
	}
	call := ok[0]
	if res.RecordCount != 3 || res.FlushSize != call.Bytes || res.TraceID == "" {
		t.Errorf("result %+v, server saw %d bytes", res, call.Bytes)
	}
	if p.RecordCount() != 0 || p.Size() != 0 {
		t.Errorf("after flush: %d rows, %d bytes pending", p.RecordCount(), p.Size())
	}

	h := call.Header
	if h.Get("Content-Type") != ContentTypeArrow || h.Get("Content-Encoding") != CompressNone {
		t.Errorf("Content-Type %q, Content-Encoding %q", h.Get("Content-Type"), h.Get("Content-Encoding"))
	}
	if m := flushIDRe.FindStringSubmatch(h.Get(HeaderFlushID)); m == nil || m[1] != "1" || !strings.HasPrefix(h.Get(HeaderFlushID), p.ID()) {
		t.Errorf("flush id %q (pack %s)", h.Get(HeaderFlushID), p.ID())
	}
	if h.Get(HeaderRecordCount) != "3" {
		t.Errorf("record count header %q", h.Get(HeaderRecordCount))
	}
	if ms, err := strconv.Atoi(h.Get(HeaderTimeout)); err != nil || ms <= 0 || ms > 5000 {
		t.Errorf("timeout header %q", h.Get(HeaderTimeout))
	}
	if h.Get("Authorization") != "Bearer "+testToken {
		t.Errorf("Authorization %q", h.Get("Authorization"))
	}

	if got := fieldNames(call.Fields); got != "id,name,score,amount,ts,day,ok,small,u,f,ns" {
		t.Errorf("fields %s (tags has no Arrow type and is left out)", got)
	}
	for _, fl := range call.Fields {
		if want := fl.Name == "name" || fl.Name == "amount" || fl.Name == "day" || fl.Name == "small" || fl.Name == "ns"; fl.Nullable != want {
			t.Errorf("field %s nullable %v", fl.Name, fl.Nullable)
		}
	}
	utc := ts.UTC()
	want := [][]any{
		{int64(1), "alice", 1.5, "12.30", utc.Truncate(time.Microsecond), "2023-10-01", true, int64(-7), uint64(4000000000), 0.25, utc},
		{int64(2), nil, 0.0, "-0.05", time.Unix(0, 0).UTC(), nil, false, nil, uint64(0), 0.0, nil},
		{int64(3), nil, 2.0, "1000.00", utc.Truncate(time.Microsecond), nil, false, int64(127), uint64(7), -1.0, nil},
	}
	if got := f.rows(); !reflect.DeepEqual(got, want) {
		t.Errorf("rows:\n got %v\nwant %v", got, want)
	}

	// The pack is reused: the next flush has the next sequence number.
	if err := p.AppendRow(int64(4), "x", 0, nil, ts, ts, true, nil, 0, 0, nil, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Flush(); err != nil {
		t.Fatal(err)
	}
	if id := f.ok()[1].Header.Get(HeaderFlushID); id != p.ID()+"-2" {
		t.Errorf("second flush id %q", id)
	}
}

func TestEmptyFlushSendsNothing(t *testing.T) {
	f := newFakeServer(t, testColumns)
	_, p := openPack(t, f)
	res, err := p.Flush()
	if err != nil || res != (FlushResult{}) || len(f.all()) != 0 {
		t.Errorf("empty flush: %+v, %v, %d requests", res, err, len(f.all()))
	}
}

func TestCompressions(t *testing.T) {
	for _, enc := range append(codec.Names(), "zlib", "none") {
		t.Run(enc, func(t *testing.T) {
			f := newFakeServer(t, testColumns)
			_, p := openPack(t, f, RecordPackOptions{Compression: enc})
			var want [][]any
			for i := range 5000 {
				name := any(fmt.Sprintf("user_%d", i%100))
				if i%10 == 0 {
					name = nil
				}
				if err := p.AppendRow(int64(i), name, float64(i)/4); err != nil {
					t.Fatal(err)
				}
				want = append(want, []any{int64(i), name, float64(i) / 4})
			}
			raw := p.Size()
			res, err := p.Flush()
			if err != nil {
				t.Fatal(err)
			}
			canon, _ := codec.Canonical(enc)
			call := f.ok()[0]
			if got := call.Header.Get("Content-Encoding"); got != canon {
				t.Errorf("Content-Encoding %q, want %q", got, canon)
			}
			if !reflect.DeepEqual(f.rows(), want) {
				t.Errorf("rows differ")
			}
			if canon != codec.Identity && res.FlushSize > raw*7/10 {
				t.Errorf("%s: %d bytes for %d bytes of rows: not compressed?", enc, res.FlushSize, raw)
			}
		})
	}
}

func TestCompressionTheServerLacks(t *testing.T) {
	f := newFakeServer(t, testColumns)
	f.info = func(i *SessionInfo) { i.Compressions = []string{"identity", "deflate"} }
	s, _ := openPack(t, f)
	if _, err := s.NewRecordPack(RecordPackOptions{Compression: "lz4"}); err == nil {
		t.Error("lz4 accepted by a server that does not list it")
	}
	if _, err := s.NewRecordPack(RecordPackOptions{Compression: "zlib"}); err != nil {
		t.Error(err)
	}
}

func TestAutoFlush(t *testing.T) {
	f := newFakeServer(t, testColumns)
	var auto []FlushResult
	_, p := openPack(t, f, RecordPackOptions{
		Compression:    "snappy",
		FlushThreshold: 4 << 10,
		OnFlush:        func(r FlushResult) { auto = append(auto, r) },
	})
	const n = 2000
	for i := range n {
		if err := p.AppendRow(int64(i), "some text to fill the pack", 1.0); err != nil {
			t.Fatal(err)
		}
		if p.Size() > 4<<10+64 {
			t.Fatalf("pack grew to %d bytes past its threshold", p.Size())
		}
	}
	if len(auto) < 10 {
		t.Fatalf("%d automatic flushes", len(auto))
	}
	last, err := p.Flush()
	if err != nil {
		t.Fatal(err)
	}
	total := last.RecordCount
	for _, r := range auto {
		total += r.RecordCount
		if r.RecordCount == 0 || r.FlushSize == 0 || r.TraceID == "" {
			t.Errorf("automatic flush result %+v", r)
		}
	}
	rows := f.rows()
	if total != n || len(rows) != n {
		t.Fatalf("flushed %d rows, server has %d, want %d", total, len(rows), n)
	}
	for i, r := range rows {
		if r[0] != int64(i) {
			t.Fatalf("row %d has id %v: order lost", i, r[0])
		}
	}
	for i, c := range f.ok() {
		if id := c.Header.Get(HeaderFlushID); id != p.ID()+"-"+strconv.Itoa(i+1) {
			t.Errorf("flush %d has id %s", i, id)
		}
	}
}

func TestRetryKeepsFlushID(t *testing.T) {
	f := newFakeServer(t, testColumns)
	f.fail = func(n int, r *http.Request) (int, ErrorCode) {
		switch n {
		case 1:
			return http.StatusServiceUnavailable, CodeInternal
		case 2:
			return -1, "" // connection dropped without an answer
		case 3:
			return http.StatusTooManyRequests, ""
		}
		return 0, ""
	}
	_, p := openPack(t, f)
	p.AppendRow(int64(1), "a", 1.0)
	p.AppendRow(int64(2), "b", 2.0)
	res, err := p.Flush()
	if err != nil {
		t.Fatal(err)
	}
	calls := f.all()
	if len(calls) != 4 {
		t.Fatalf("%d attempts, want 4", len(calls))
	}
	for _, c := range calls {
		if id := c.Header.Get(HeaderFlushID); id != p.ID()+"-1" {
			t.Errorf("attempt with flush id %q, want %s-1", id, p.ID())
		}
	}
	if res.RecordCount != 2 || len(f.rows()) != 2 {
		t.Errorf("result %+v, %d rows", res, len(f.rows()))
	}
}

func TestRetryGivesUpAtTimeout(t *testing.T) {
	f := newFakeServer(t, testColumns)
	f.fail = func(int, *http.Request) (int, ErrorCode) { return http.StatusInternalServerError, CodeInternal }
	_, p := openPack(t, f)
	p.AppendRow(int64(1), "a", 1.0)
	start := time.Now()
	_, err := p.Flush(FlushOption{Timeout: 400 * time.Millisecond})
	if err == nil {
		t.Fatal("no error")
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("gave up after %s", d)
	}
	var e *Error
	if !errors.As(err, &e) || e.Status != 500 {
		t.Errorf("err = %v, want the last answer", err)
	}
	if n := len(f.all()); n < 2 {
		t.Errorf("%d attempts", n)
	}
	if p.RecordCount() != 1 {
		t.Errorf("%d rows left, want 1", p.RecordCount())
	}
}

// TestFailedFlushIsResentFirst: rows of a failed flush keep their flush id
// and go before rows appended after the failure, which get a new one.
func TestFailedFlushIsResentFirst(t *testing.T) {
	f := newFakeServer(t, testColumns)
	f.fail = func(n int, r *http.Request) (int, ErrorCode) {
		if n == 1 {
			return http.StatusBadRequest, CodeBadPayload // permanent: not retried
		}
		return 0, ""
	}
	_, p := openPack(t, f)
	p.AppendRow(int64(1), "a", 1.0)
	if _, err := p.Flush(); err == nil {
		t.Fatal("no error")
	}
	if len(f.all()) != 1 {
		t.Fatalf("a 400 was retried: %d attempts", len(f.all()))
	}
	p.AppendRow(int64(2), "b", 2.0)
	if p.RecordCount() != 2 {
		t.Fatalf("RecordCount %d", p.RecordCount())
	}
	res, err := p.Flush()
	if err != nil {
		t.Fatal(err)
	}
	if res.RecordCount != 2 {
		t.Errorf("result %+v", res)
	}
	ok := f.ok()
	if len(ok) != 2 || ok[0].Header.Get(HeaderFlushID) != p.ID()+"-1" || ok[1].Header.Get(HeaderFlushID) != p.ID()+"-2" {
		t.Fatalf("flushes %v", ok)
	}
	if !reflect.DeepEqual(f.rows(), [][]any{{int64(1), "a", 1.0}, {int64(2), "b", 2.0}}) {
		t.Errorf("rows %v", f.rows())
	}

	// Discard drops what a failed flush left.
	f.fail = func(int, *http.Request) (int, ErrorCode) { return 400, CodeBadPayload }
	p.AppendRow(int64(3), "c", 3.0)
	p.Flush()
	p.Discard()
	if p.RecordCount() != 0 || p.Size() != 0 {
		t.Errorf("after Discard: %d rows", p.RecordCount())
	}
	f.fail = nil
	before := len(f.all())
	if _, err := p.Flush(); err != nil || len(f.all()) != before {
		t.Errorf("flush after Discard: %v, %d requests", err, len(f.all())-before)
	}
}

func TestSchemaMismatch(t *testing.T) {
	f := newFakeServer(t, testColumns)
	f.fail = func(int, *http.Request) (int, ErrorCode) { return http.StatusConflict, CodeSchemaMismatch }
	_, p := openPack(t, f, RecordPackOptions{FlushThreshold: 1})
	p.AppendRow(int64(1), "a", 1.0)
	_, err := p.Flush()
	if !errors.Is(err, ErrSchemaMismatch) || !IsSchemaMismatch(err) {
		t.Fatalf("err = %v", err)
	}
	if len(f.all()) != 1 {
		t.Errorf("a schema mismatch was retried: %d attempts", len(f.all()))
	}
	// The pack is unusable now.
	if err := p.AppendRow(int64(2), "b", 2.0); !errors.Is(err, ErrSchemaMismatch) {
		t.Errorf("append after mismatch: %v", err)
	}
	if _, err := p.Flush(); !errors.Is(err, ErrSchemaMismatch) {
		t.Errorf("flush after mismatch: %v", err)
	}
	if p.RecordCount() != 0 {
		t.Errorf("%d rows kept", p.RecordCount())
	}
}

// TestAutoFlushFailureKeepsRow: when the automatic flush of Append fails,
// the row is not added, and appending it again after the server recovers
// writes every row once.
func TestAutoFlushFailureKeepsRow(t *testing.T) {
	f := newFakeServer(t, testColumns)
	down := true
	f.fail = func(int, *http.Request) (int, ErrorCode) {
		if down {
			return 400, CodeBadPayload
		}
		return 0, ""
	}
	_, p := openPack(t, f, RecordPackOptions{FlushThreshold: 1})
	if err := p.AppendRow(int64(1), "a", 1.0); err != nil {
		t.Fatal(err) // the pack was empty: nothing to flush first
	}
	if err := p.AppendRow(int64(2), "b", 2.0); err == nil {
		t.Fatal("no error from the failed automatic flush")
	}
	if p.RecordCount() != 1 {
		t.Fatalf("RecordCount %d, want 1", p.RecordCount())
	}
	down = false
	if err := p.AppendRow(int64(2), "b", 2.0); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Flush(); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(f.rows(), [][]any{{int64(1), "a", 1.0}, {int64(2), "b", 2.0}}) {
		t.Errorf("rows %v", f.rows())
	}
}

func TestPartitionColumns(t *testing.T) {
	cols := append(testColumns[:2:2], Column{Name: "dt", Type: "STRING", CHType: "String", Partition: true})
	f := newFakeServer(t, cols)
	c := f.client(t)
	ctx := context.Background()

	// Dynamic partitions: the partition column is written like any other.
	s, err := c.BuildStreamUploadSession("", "t").SetCreatePartition(true).Build(ctx)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := s.NewRecordPack()
	r := s.NewRecord()
	r.SetString("name", "alice")
	r.SetBigint("id", 25)
	r.SetString("dt", "20250101")
	p.Append(r)
	p.AppendRow(int64(30), "bob", "20250102")
	if _, err := p.Flush(); err != nil {
		t.Fatal(err)
	}
	want := [][]any{{int64(25), "alice", "20250101"}, {int64(30), "bob", "20250102"}}
	if got := f.rows(); !reflect.DeepEqual(got, want) {
		t.Errorf("rows %v", got)
	}

	// A fixed partition: dt is not part of records.
	s, err = c.CreateStreamUploadSession(ctx, "", "t", WithPartitionKey("dt=20231001"))
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Schema()) != 2 {
		t.Errorf("schema %v", s.Schema())
	}
	r = s.NewRecord()
	r.SetString("dt", "20231001")
	if r.Err() == nil {
		t.Error("setting a fixed partition column succeeded")
	}
}

func TestSessionClose(t *testing.T) {
	f := newFakeServer(t, testColumns)
	s, _ := openPack(t, f)
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(s.String(), "sess-1") {
		t.Errorf("String() = %s", s)
	}
}

func TestBackgroundFlush(t *testing.T) {
	f := newFakeServer(t, testColumns)
	var auto int64
	_, p := openPack(t, f, RecordPackOptions{
		FlushThreshold:  4 << 10,
		BackgroundFlush: true,
		Compression:     "lz4",
		OnFlush:         func(r FlushResult) { auto += r.RecordCount },
	})
	const n = 3000
	for i := range n {
		if err := p.AppendRow(int64(i), "some text to fill the pack", float64(i)); err != nil {
			t.Fatal(err)
		}
	}
	res, err := p.Flush()
	if err != nil {
		t.Fatal(err)
	}
	rows := f.rows()
	if auto+res.RecordCount != n || len(rows) != n || p.RecordCount() != 0 {
		t.Fatalf("automatic %d + last %d rows, server has %d, want %d", auto, res.RecordCount, len(rows), n)
	}
	for i, r := range rows {
		if r[0] != int64(i) {
			t.Fatalf("row %d has id %v: order lost", i, r[0])
		}
	}
	for i, c := range f.ok() {
		if id := c.Header.Get(HeaderFlushID); id != p.ID()+"-"+strconv.Itoa(i+1) {
			t.Errorf("flush %d has id %s", i, id)
		}
	}
}

// TestBackgroundFlushFailure: a background flush that fails is reported
// by the next Append that needs it done, which adds nothing; its rows are
// sent again (same flush id) and nothing is written twice or lost.
func TestBackgroundFlushFailure(t *testing.T) {
	f := newFakeServer(t, testColumns)
	down := true
	f.fail = func(int, *http.Request) (int, ErrorCode) {
		if down {
			return http.StatusBadRequest, CodeBadPayload
		}
		return 0, ""
	}
	_, p := openPack(t, f, RecordPackOptions{FlushThreshold: 1, BackgroundFlush: true})
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(p.AppendRow(int64(1), "a", 1.0))
	must(p.AppendRow(int64(2), "b", 2.0)) // flushes row 1 in the background
	if err := p.AppendRow(int64(3), "c", 3.0); err == nil {
		t.Fatal("the failed background flush was not reported")
	}
	if p.RecordCount() != 2 {
		t.Fatalf("RecordCount %d, want 2", p.RecordCount())
	}
	down = false
	must(p.AppendRow(int64(3), "c", 3.0)) // resends row 1 in the background
	must(p.AppendRow(int64(4), "d", 4.0)) // then rows 2 and 3
	if _, err := p.Flush(); err != nil {
		t.Fatal(err)
	}
	want := [][]any{{int64(1), "a", 1.0}, {int64(2), "b", 2.0}, {int64(3), "c", 3.0}, {int64(4), "d", 4.0}}
	if got := f.rows(); !reflect.DeepEqual(got, want) {
		t.Errorf("rows %v", got)
	}
	ids := []string{}
	for _, c := range f.all() {
		ids = append(ids, strings.TrimPrefix(c.Header.Get(HeaderFlushID), p.ID()))
	}
	if strings.Join(ids, " ") != "-1 -1 -2 -3" {
		t.Errorf("flush ids %v", ids)
	}
}
