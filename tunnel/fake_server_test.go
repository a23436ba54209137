package tunnel

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lakepipe/lakepipe/internal/codec"
)

const testToken = "s3cr3t-token-value"

// flushCall is what the fake server saw of one flush request.
type flushCall struct {
	Header http.Header
	Fields []arrow.Field
	Rows   [][]any // nil for NULL; see cell
	Bytes  int64   // body bytes as sent
	Status int     // what the server answered
}

// fakeServer is a write service that decodes flush bodies the way the real
// one does (codec.NewReader, then an Arrow IPC reader) and keeps them.
type fakeServer struct {
	t       *testing.T
	srv     *httptest.Server
	columns []Column
	// fail, if set, may answer a flush attempt (n counts from 1) instead
	// of the server: it returns the status and code, or 0.
	fail func(n int, r *http.Request) (status int, code ErrorCode)
	// info, if set, edits the SessionInfo answers.
	info func(*SessionInfo)

	mu       sync.Mutex
	creates  []CreateSessionRequest
	flushes  []flushCall // every attempt, answered or failed
	deletes  int
	attempts int
}

func newFakeServer(t *testing.T, columns []Column) *fakeServer {
	f := &fakeServer{t: t, columns: columns}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/streams", f.create)
	mux.HandleFunc("POST /v1/streams/{id}/flush", f.flush)
	mux.HandleFunc("GET /v1/streams/{id}", func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("id") != "sess-1" {
			writeError(w, http.StatusNotFound, CodeNoSuchSession, "no session "+r.PathValue("id"))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(SessionInfo{ID: "sess-1", Table: "t", SchemaVersion: "3", Columns: f.columns})
	})
	mux.HandleFunc("DELETE /v1/streams/{id}", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.deletes++
		f.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	})
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set(HeaderTraceID, "trace-"+fmt.Sprint(time.Now().UnixNano()))
		if r.Header.Get("Authorization") != "Bearer "+testToken {
			// A careless server that echoes what it got.
			writeError(w, http.StatusUnauthorized, CodeUnauthorized, "bad token in "+r.Header.Get("Authorization"))
			return
		}
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeServer) client(t *testing.T, opts ...Option) *Client {
	c, err := New(f.srv.URL, append([]Option{WithToken(testToken)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func writeError(w http.ResponseWriter, status int, code ErrorCode, msg string) {
	var body ErrorBody
	body.Error.Code, body.Error.Message, body.Error.TraceID = code, msg, w.Header().Get(HeaderTraceID)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(body)
}

func (f *fakeServer) create(w http.ResponseWriter, r *http.Request) {
	var req CreateSessionRequest
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		writeError(w, 400, CodeBadRequest, err.Error())
		return
	}
	f.mu.Lock()
	f.creates = append(f.creates, req)
	f.mu.Unlock()
	info := SessionInfo{
		ID: "sess-1", Schema: req.Schema, Table: req.Table, SchemaVersion: "3",
		Columns: f.columns, PartitionSpec: req.PartitionSpec, CreatePartition: req.CreatePartition,
		AllowSchemaMismatch: req.AllowSchemaMismatch, SlotNum: max(req.SlotNum, 4),
		Compressions: []string{"identity", "deflate", "zlib", "snappy", "lz4"}, MaxFlushBytes: 256 << 20,
	}
	if f.info != nil {
		f.info(&info)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	json.NewEncoder(w).Encode(info)
}

func (f *fakeServer) flush(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.attempts++
	n := f.attempts
	f.mu.Unlock()
	call := flushCall{Header: r.Header.Clone()}
	record := func(status int) {
		call.Status = status
		f.mu.Lock()
		f.flushes = append(f.flushes, call)
		f.mu.Unlock()
	}
	if f.fail != nil {
		if status, code := f.fail(n, r); status != 0 {
			io.Copy(io.Discard, r.Body)
			record(status)
			if status < 0 { // drop the connection without an answer
				panic(http.ErrAbortHandler)
			}
			writeError(w, status, code, fmt.Sprintf("attempt %d refused", n))
			return
		}
	}
	body := &countingReader{r: r.Body}
	zr, err := codec.NewReader(r.Header.Get("Content-Encoding"), body)
	if err != nil {
		record(415)
		writeError(w, 415, CodeUnsupportedEncoding, err.Error())
		return
	}
	defer zr.Close()
	rd, err := ipc.NewReader(zr, ipc.WithAllocator(memory.NewGoAllocator()))
	if err != nil {
		record(400)
		writeError(w, 400, CodeBadPayload, err.Error())
		return
	}
	defer rd.Release()
	call.Fields = rd.Schema().Fields()
	for rd.Next() {
		rec := rd.RecordBatch()
		for i := 0; i < int(rec.NumRows()); i++ {
			row := make([]any, rec.NumCols())
			for j, col := range rec.Columns() {
				row[j] = cell(col, i)
			}
			call.Rows = append(call.Rows, row)
		}
	}
	if err := rd.Err(); err != nil {
		record(400)
		writeError(w, 400, CodeBadPayload, err.Error())
		return
	}
	io.Copy(io.Discard, body)
	call.Bytes = body.n
	record(200)
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(FlushResult{TraceID: w.Header().Get(HeaderTraceID), RecordCount: int64(len(call.Rows)), FlushSize: body.n})
}

// ok returns the flushes the server answered with 200.
func (f *fakeServer) ok() []flushCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []flushCall
	for _, c := range f.flushes {
		if c.Status == 200 {
			out = append(out, c)
		}
	}
	return out
}

func (f *fakeServer) all() []flushCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]flushCall(nil), f.flushes...)
}

// rows returns every row the server accepted, in order.
func (f *fakeServer) rows() [][]any {
	var out [][]any
	for _, c := range f.ok() {
		out = append(out, c.Rows...)
	}
	return out
}

// cell renders one Arrow value as a comparable Go value: integers as
// int64/uint64, floats as float64, decimals as their text, dates as
// "2006-01-02", timestamps as time.Time in UTC.
func cell(col arrow.Array, i int) any {
	if col.IsNull(i) {
		return nil
	}
	switch a := col.(type) {
	case *array.Int8:
		return int64(a.Value(i))
	case *array.Int16:
		return int64(a.Value(i))
	case *array.Int32:
		return int64(a.Value(i))
	case *array.Int64:
		return a.Value(i)
	case *array.Uint8:
		return uint64(a.Value(i))
	case *array.Uint16:
		return uint64(a.Value(i))
	case *array.Uint32:
		return uint64(a.Value(i))
	case *array.Uint64:
		return a.Value(i)
	case *array.Float32:
		return float64(a.Value(i))
	case *array.Float64:
		return a.Value(i)
	case *array.Boolean:
		return a.Value(i)
	case *array.String:
		return a.Value(i)
	case *array.Decimal128:
		return a.Value(i).ToString(a.DataType().(*arrow.Decimal128Type).Scale)
	case *array.Date32:
		return a.Value(i).ToTime().Format("2006-01-02")
	case *array.Timestamp:
		return a.Value(i).ToTime(a.DataType().(*arrow.TimestampType).Unit).UTC()
	}
	return fmt.Sprintf("unexpected %T", col)
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

func fieldNames(fs []arrow.Field) string {
	names := make([]string, len(fs))
	for i, f := range fs {
		names[i] = f.Name
	}
	return strings.Join(names, ",")
}
