package tunnelserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lakepipe/lakepipe/internal/catalog"
	"github.com/lakepipe/lakepipe/internal/codec"
	"github.com/lakepipe/lakepipe/internal/engine"
	"github.com/lakepipe/lakepipe/internal/rowio"
	"github.com/lakepipe/lakepipe/internal/streamwrite"
	"github.com/lakepipe/lakepipe/tunnel"
)

const testToken = "test-token"

var testSession = streamwrite.StreamSession{ID: "s1", Schema: "sc", Table: "t", SlotNum: 4,
	Columns: []catalog.ColumnSpec{{Name: "id", Type: "BIGINT", CHType: "Nullable(Int64)"}, {Name: "name", Type: "STRING", CHType: "Nullable(String)"}}}

// fakeStreams knows one session; its FlushStream reads the pack as the
// engine does (every batch, errors as StreamError) without writing, and
// can wait after the read to stand for a slow write.
type fakeStreams struct {
	mu       sync.Mutex
	rows     int64
	after    time.Duration // wait after reading the pack
	ctxErr   error         // of the flush's context after the wait
	flushes  int
	lastRead error
	// tokens are the scoped tokens the fake catalog knows.
	tokens      map[string]engine.TokenScope
	tokenChecks int
	fail        error // FlushStream's error, when set
}

func (f *fakeStreams) CheckWriteToken(_ context.Context, token string) (engine.TokenScope, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.tokenChecks++
	scope, ok := f.tokens[token]
	return scope, ok, nil
}

func (f *fakeStreams) DefaultSchema() string { return "public" }

func (f *fakeStreams) OpenStreamSession(context.Context, streamwrite.StreamSessionRequest) (streamwrite.StreamSession, error) {
	return testSession, nil
}

func (f *fakeStreams) StreamSessionByID(_ context.Context, id string) (streamwrite.StreamSession, error) {
	if id != testSession.ID {
		return streamwrite.StreamSession{}, &streamwrite.StreamError{Code: tunnel.CodeNoSuchSession, Msg: "no session " + id}
	}
	return testSession, nil
}

func (f *fakeStreams) CloseStreamSession(context.Context, streamwrite.StreamSession) error {
	return nil
}

func (f *fakeStreams) TouchStreamSession(_ context.Context, s streamwrite.StreamSession) (streamwrite.StreamSession, error) {
	return s, nil
}

func (f *fakeStreams) FlushStream(ctx context.Context, _ streamwrite.StreamSession, fl streamwrite.StreamFlush) (int64, error) {
	if f.fail != nil {
		return 0, f.fail
	}
	var n int64
	for {
		b, err := fl.Reader.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			// As the engine: the cause is kept, its text in the message.
			return 0, &streamwrite.StreamError{Code: tunnel.CodeBadPayload, Msg: fmt.Sprintf("record pack: %v", err), Err: err}
		}
		if len(b.Errors) > 0 {
			return 0, &streamwrite.StreamError{Code: tunnel.CodeBadPayload, Msg: b.Errors[0].Msg}
		}
		n += int64(b.Rows)
	}
	if f.after > 0 {
		select {
		case <-time.After(f.after):
		case <-ctx.Done():
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ctxErr = ctx.Err()
	f.rows += n
	f.flushes++
	return n, nil
}

func newTestServer(t *testing.T, cfg Config) (*Server, *fakeStreams) {
	t.Helper()
	cfg.Token = testToken
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	f := &fakeStreams{}
	s, err := newServer(f, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s, f
}

// start serves s on a loopback port with the service's own http.Server.
func start(t *testing.T, s *Server) string {
	t.Helper()
	ts := httptest.NewUnstartedServer(s)
	ts.Config = s.HTTPServer()
	ts.Start()
	t.Cleanup(ts.Close)
	return ts.URL
}

type answer struct {
	status int
	body   tunnel.ErrorBody
	result tunnel.FlushResult
	raw    string
}

func do(t *testing.T, h http.Handler, req *http.Request) answer {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	a := answer{status: rec.Code, raw: rec.Body.String()}
	_ = json.Unmarshal(rec.Body.Bytes(), &a.body)
	_ = json.Unmarshal(rec.Body.Bytes(), &a.result)
	return a
}

func flushRequest(body io.Reader, encoding string, hdr map[string]string) *http.Request {
	req := httptest.NewRequest(http.MethodPost, "/v1/streams/"+testSession.ID+"/flush", body)
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("Content-Type", tunnel.ContentTypeJSON)
	if encoding != "" {
		req.Header.Set("Content-Encoding", encoding)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	return req
}

func jsonLines(n int) []byte {
	var b bytes.Buffer
	for i := range n {
		fmt.Fprintf(&b, "{\"id\":%d,\"name\":\"n%d\"}\n", i, i)
	}
	return b.Bytes()
}

func compressed(t testing.TB, enc string, data []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	w, err := codec.NewWriter(enc, &b)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestFlushOK: a flush within every limit is read whole, in each encoding.
func TestFlushOK(t *testing.T) {
	s, f := newTestServer(t, Config{MaxFlushRecords: 100, MaxFlushDecompressedBytes: 1 << 20})
	lines := jsonLines(100)
	for _, enc := range codec.Names() {
		body := compressed(t, enc, lines)
		a := do(t, s, flushRequest(bytes.NewReader(body), enc, map[string]string{tunnel.HeaderRecordCount: "100"}))
		if a.status != http.StatusOK || a.result.RecordCount != 100 || a.result.FlushSize != int64(len(body)) {
			t.Errorf("%s: %d %s", enc, a.status, a.raw)
		}
	}
	if f.rows != 400 {
		t.Errorf("%d rows read, want 400", f.rows)
	}
}

// TestUnauthenticated: no token or a wrong one is 401, before the body is
// read.
func TestUnauthenticated(t *testing.T) {
	s, f := newTestServer(t, Config{})
	for _, auth := range []string{"", "Bearer wrong", testToken, "Basic " + testToken} {
		req := flushRequest(strings.NewReader("{}\n"), "", nil)
		req.Header.Set("Authorization", auth)
		a := do(t, s, req)
		if a.status != http.StatusUnauthorized || a.body.Error.Code != tunnel.CodeUnauthorized || strings.Contains(a.raw, testToken) {
			t.Errorf("Authorization %q: %d %s", auth, a.status, a.raw)
		}
	}
	if f.flushes != 0 {
		t.Error("an unauthenticated flush was read")
	}
}

// TestFlushLimits: a body over MaxFlushBytes (declared, or streamed), a
// decompression bomb, too many records (counted, or declared) are 413
// TooLarge with the limit and its flag named; nothing is written.
func TestFlushLimits(t *testing.T) {
	s, f := newTestServer(t, Config{MaxFlushBytes: 64 << 10, MaxFlushDecompressedBytes: 256 << 10, MaxFlushRecords: 1000})
	big := jsonLines(5000)                                                            // ~125 KiB
	bomb := compressed(t, codec.Deflate, bytes.Repeat([]byte("{\"id\":1}\n"), 1<<20)) // 9 MiB in ~20 KiB
	if len(bomb) > 64<<10 {
		t.Fatalf("the bomb is %d bytes", len(bomb))
	}
	cases := []struct {
		name string
		req  *http.Request
		flag string
	}{
		{"declared length", flushRequest(bytes.NewReader(big), "", nil), "--max-flush-bytes"},
		{"streamed", flushRequest(io.MultiReader(bytes.NewReader(big)), "", nil), "--max-flush-bytes"},
		{"deflate bomb", flushRequest(bytes.NewReader(bomb), codec.Deflate, nil), "--max-flush-decompressed-bytes"},
		{"snappy bomb", flushRequest(bytes.NewReader(compressed(t, codec.Snappy, bytes.Repeat([]byte("{\"id\":1}\n"), 64<<10))), codec.Snappy, nil), "--max-flush-decompressed-bytes"},
		{"lz4 bomb", flushRequest(bytes.NewReader(compressed(t, codec.LZ4, bytes.Repeat([]byte("{\"id\":1}\n"), 1<<20))), codec.LZ4, nil), "--max-flush-decompressed-bytes"},
		{"records", flushRequest(bytes.NewReader(compressed(t, codec.Deflate, jsonLines(1001))), codec.Deflate, nil), "--max-flush-records"},
		{"empty records", flushRequest(bytes.NewReader(bytes.Repeat([]byte("{}\n"), 1001)), "", nil), "--max-flush-records"},
		{"declared records", flushRequest(strings.NewReader("{}\n"), "", map[string]string{tunnel.HeaderRecordCount: "1001"}), "--max-flush-records"},
	}
	cases[1].req.ContentLength = -1
	for _, c := range cases {
		a := do(t, s, c.req)
		if a.status != http.StatusRequestEntityTooLarge || a.body.Error.Code != tunnel.CodeTooLarge || !strings.Contains(a.body.Error.Message, c.flag) {
			t.Errorf("%s: %d %s", c.name, a.status, a.raw)
		}
	}
	if f.rows != 0 {
		t.Errorf("refused flushes wrote %d rows", f.rows)
	}
	// Exactly at the limits is fine.
	a := do(t, s, flushRequest(bytes.NewReader(compressed(t, codec.Deflate, jsonLines(1000))), codec.Deflate, nil))
	if a.status != http.StatusOK || a.result.RecordCount != 1000 {
		t.Errorf("1000 records: %d %s", a.status, a.raw)
	}
	// A corrupt deflate header is a bad payload, an unknown encoding 415.
	if a := do(t, s, flushRequest(strings.NewReader("not zlib"), codec.Deflate, nil)); a.status != http.StatusBadRequest || a.body.Error.Code != tunnel.CodeBadPayload {
		t.Errorf("corrupt deflate: %d %s", a.status, a.raw)
	}
	if a := do(t, s, flushRequest(strings.NewReader("{}"), "br", nil)); a.status != http.StatusUnsupportedMediaType {
		t.Errorf("br: %d %s", a.status, a.raw)
	}
	// A flush id goes into the retries' table and the queries sweeping
	// them: a long one is refused before anything is read.
	long := map[string]string{tunnel.HeaderFlushID: strings.Repeat("i", maxFlushIDBytes+1)}
	if a := do(t, s, flushRequest(bytes.NewReader(jsonLines(1)), "", long)); a.status != http.StatusBadRequest || a.body.Error.Code != tunnel.CodeBadRequest {
		t.Errorf("a %d-byte flush id: %d %s", maxFlushIDBytes+1, a.status, a.raw)
	}
	long[tunnel.HeaderFlushID] = strings.Repeat("i", maxFlushIDBytes)
	if a := do(t, s, flushRequest(bytes.NewReader(jsonLines(1)), "", long)); a.status != http.StatusOK {
		t.Errorf("a %d-byte flush id: %d %s", maxFlushIDBytes, a.status, a.raw)
	}
}

// rawFlush sends a flush's headers and head of its body on a connection
// of its own, then calls more (which may send the rest slowly), and
// returns the answer.
func rawFlush(t *testing.T, url string, length int, head string, more func(net.Conn)) (*http.Response, tunnel.ErrorBody, time.Duration) {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	start := time.Now()
	fmt.Fprintf(conn, "POST /v1/streams/%s/flush HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n%s",
		testSession.ID, testToken, tunnel.ContentTypeJSON, length, head)
	if more != nil {
		go more(conn)
	}
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	defer resp.Body.Close()
	var eb tunnel.ErrorBody
	_ = json.NewDecoder(resp.Body).Decode(&eb)
	return resp, eb, time.Since(start)
}

// TestFlushSlowBody: a body that stalls gets 408 Timeout after
// StallTimeout; one that trickles gets it after ReadTimeout; both on the
// service's own http.Server.
func TestFlushSlowBody(t *testing.T) {
	s, f := newTestServer(t, Config{StallTimeout: 300 * time.Millisecond, ReadTimeout: 1500 * time.Millisecond})
	url := start(t, s)
	resp, eb, d := rawFlush(t, url, 1000, "{\"id\":1}\n{\"id\":", nil)
	if resp.StatusCode != http.StatusRequestTimeout || eb.Error.Code != tunnel.CodeTimeout || !strings.Contains(eb.Error.Message, "--stall-timeout") || d > 3*time.Second {
		t.Errorf("stalled body: %d %+v after %s", resp.StatusCode, eb, d)
	}
	stop := make(chan struct{})
	defer close(stop)
	resp, eb, d = rawFlush(t, url, 100000, "", func(c net.Conn) {
		for {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			if _, err := c.Write([]byte("{\"id\":1}\n")); err != nil {
				return
			}
		}
	})
	if resp.StatusCode != http.StatusRequestTimeout || eb.Error.Code != tunnel.CodeTimeout || !strings.Contains(eb.Error.Message, "--read-timeout") || d > 5*time.Second {
		t.Errorf("trickling body: %d %+v after %s", resp.StatusCode, eb, d)
	}
	if f.flushes != 0 {
		t.Error("a timed-out flush was written")
	}
	if !(&tunnel.Error{Status: http.StatusRequestTimeout, Code: tunnel.CodeTimeout}).Temporary() {
		t.Error("408 is not temporary for the client, which would not retry it")
	}
}

// TestFlushSlowWrite: a flush whose write takes longer than the body
// timeouts, after its body has been read, is not cut: the deadlines are
// lifted once the body has arrived.
func TestFlushSlowWrite(t *testing.T) {
	s, f := newTestServer(t, Config{StallTimeout: 200 * time.Millisecond, ReadTimeout: 400 * time.Millisecond})
	f.after = time.Second
	url := start(t, s)
	req, _ := http.NewRequest(http.MethodPost, url+"/v1/streams/"+testSession.ID+"/flush", bytes.NewReader(jsonLines(10)))
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("Content-Type", tunnel.ContentTypeJSON)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || f.ctxErr != nil {
		t.Errorf("slow write: %d %s, flush context %v", resp.StatusCode, body, f.ctxErr)
	}
	// The connection is still good for the next request.
	resp, err = http.DefaultClient.Do(mustRequest(t, http.MethodGet, url+"/v1/streams/"+testSession.ID))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("session after a slow write: %d", resp.StatusCode)
	}
}

func mustRequest(t *testing.T, method, url string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+testToken)
	return req
}

// TestHTTPServerTimeouts: the service's http.Server bounds headers,
// requests and idle connections.
func TestHTTPServerTimeouts(t *testing.T) {
	s, _ := newTestServer(t, Config{ReadTimeout: time.Minute})
	hs := s.HTTPServer()
	if hs.ReadHeaderTimeout != readHeaderTimeout || hs.ReadTimeout != time.Minute+readHeaderTimeout || hs.WriteTimeout != time.Minute+writeMargin || hs.IdleTimeout != DefaultIdleTimeout || hs.MaxHeaderBytes != maxHeaderBytes {
		t.Errorf("http.Server timeouts: %+v", hs)
	}
	cfg := s.Config()
	if cfg.MaxFlushDecompressedBytes != 4*DefaultMaxFlushBytes || cfg.MaxFlushRecords != DefaultMaxFlushRecords || cfg.StallTimeout != DefaultStallTimeout {
		t.Errorf("defaults: %+v", cfg)
	}
}

// FuzzFlush: any flush body, in any encoding and format, is decoded under
// the limits or refused with an error: no panic, no more decompressed
// bytes or records than the limits, and bounded memory for small inputs.
func FuzzFlush(f *testing.F) {
	lim := packLimits{MaxBytes: 1 << 20, MaxDecompressedBytes: 256 << 10, MaxRecords: 500}
	f.Add(jsonLines(3), uint8(0))
	f.Add(compressed(f, codec.Deflate, bytes.Repeat([]byte("{}\n"), 100000)), uint8(2))
	f.Add(compressed(f, codec.Snappy, jsonLines(20)), uint8(4))
	f.Add(compressed(f, codec.LZ4, jsonLines(20)), uint8(6))
	f.Add([]byte("\xff\xff\xff\xff\x10\x00\x00\x00"), uint8(1))
	f.Add([]byte{0x04, 0x22, 0x4d, 0x18, 0x64, 0x70, 0xb9, 0xff, 0xff, 0x3f, 0x00}, uint8(7))
	f.Fuzz(func(t *testing.T, data []byte, which uint8) {
		enc := codec.Names()[int(which/2)%len(codec.Names())]
		format := []string{"JSON", "ARROW"}[which%2]
		opts := rowio.Options{}
		if format == "JSON" {
			opts.Schema = []rowio.Column{{Name: "id", Type: "Nullable(Int64)"}, {Name: "name", Type: "Nullable(String)"}}
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		p, err := openPack(bytes.NewReader(data), enc, format, opts, lim)
		if p == nil {
			t.Fatalf("%s refused as an encoding: %v", enc, err)
		}
		defer p.Close()
		if err == nil {
			var rows int64
			for {
				b, err := p.rd.Next()
				if err != nil {
					break
				}
				rows += int64(b.Rows)
			}
			if rows > lim.MaxRecords {
				t.Fatalf("%d records read, limit %d", rows, lim.MaxRecords)
			}
		}
		if p.plain != nil && p.plain.n > lim.MaxDecompressedBytes+1 {
			t.Fatalf("%d decompressed bytes read, limit %d", p.plain.n, lim.MaxDecompressedBytes)
		}
		runtime.ReadMemStats(&after)
		if len(data) <= 1<<16 && after.TotalAlloc-before.TotalAlloc > 64<<20 {
			t.Fatalf("%s %s: %d input bytes allocated %d bytes", enc, format, len(data), after.TotalAlloc-before.TotalAlloc)
		}
	})
}

// TestHugeLimits: limits near the largest int64 do not overflow.
func TestHugeLimits(t *testing.T) {
	s, _ := newTestServer(t, Config{MaxFlushBytes: math.MaxInt64, MaxFlushRecords: math.MaxInt64})
	if got := s.Config().MaxFlushDecompressedBytes; got != math.MaxInt64 {
		t.Errorf("MaxFlushDecompressedBytes %d", got)
	}
	a := do(t, s, flushRequest(bytes.NewReader(compressed(t, codec.LZ4, jsonLines(10))), codec.LZ4, nil))
	if a.status != http.StatusOK || a.result.RecordCount != 10 {
		t.Errorf("%d %s", a.status, a.raw)
	}
}

// TestMetricsToken: /metrics is open by default and needs its own token
// (not the write token) once MetricsToken is set.
func TestMetricsToken(t *testing.T) {
	for _, tc := range []struct {
		metricsToken, auth string
		want               int
	}{
		{"", "", http.StatusOK},
		{"m-token", "", http.StatusUnauthorized},
		{"m-token", "Bearer " + testToken, http.StatusUnauthorized},
		{"m-token", "Bearer m-token", http.StatusOK},
	} {
		s, _ := newTestServer(t, Config{MetricsToken: tc.metricsToken})
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		if tc.auth != "" {
			req.Header.Set("Authorization", tc.auth)
		}
		s.ServeHTTP(rec, req)
		if rec.Code != tc.want {
			t.Errorf("MetricsToken %q, Authorization %q: %d, want %d", tc.metricsToken, tc.auth, rec.Code, tc.want)
		}
	}
}

// TestScopedTokens: a token scoped to one table opens sessions on it and
// flushes into it, gets 403 on another table (or another table's session),
// and 401 once revoked (after the cache time); answers are cached, so a
// flood of one bad token reads the catalog once per cache time.
func TestScopedTokens(t *testing.T) {
	s, f := newTestServer(t, Config{TokenCacheTTL: 50 * time.Millisecond})
	f.tokens = map[string]engine.TokenScope{
		"lpw.mine.x":   {Schema: "sc", Table: "t"},
		"lpw.other.y":  {Schema: "sc", Table: "u"},
		"lpw.schema.z": {Schema: "sc"},
	}
	create := func(token, schema, table string) int {
		body := fmt.Sprintf(`{"schema":%q,"table":%q}`, schema, table)
		req := httptest.NewRequest(http.MethodPost, "/v1/streams", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, req)
		return rec.Code
	}
	flush := func(token string) int {
		req := flushRequest(strings.NewReader(`{"id":1,"name":"a"}`+"\n"), "", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		return do(t, s, req).status
	}
	for _, tc := range []struct {
		name string
		got  int
		want int
	}{
		{"table token, its table", create("lpw.mine.x", "sc", "t"), http.StatusCreated},
		{"table token, another table", create("lpw.mine.x", "sc", "v"), http.StatusForbidden},
		{"table token, default schema", create("lpw.mine.x", "", "t"), http.StatusForbidden},
		{"schema token, a table of it", create("lpw.schema.z", "sc", "v"), http.StatusCreated},
		{"schema token, another schema", create("lpw.schema.z", "public", "t"), http.StatusForbidden},
		{"service token", create(testToken, "any", "t"), http.StatusCreated},
		{"unknown token", create("lpw.nope.q", "sc", "t"), http.StatusUnauthorized},
		{"flush, its table's session", flush("lpw.mine.x"), http.StatusOK},
		{"flush, another table's session", flush("lpw.other.y"), http.StatusForbidden},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, tc.got, tc.want)
		}
	}
	// Revoked: refused once the cached answer expires.
	f.mu.Lock()
	delete(f.tokens, "lpw.mine.x")
	f.mu.Unlock()
	time.Sleep(60 * time.Millisecond)
	if got := flush("lpw.mine.x"); got != http.StatusUnauthorized {
		t.Errorf("revoked token: %d, want 401", got)
	}
	f.mu.Lock()
	before := f.tokenChecks
	f.mu.Unlock()
	for range 50 {
		create("lpw.nope.q", "sc", "t")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if n := f.tokenChecks - before; n > 1 {
		t.Errorf("50 requests with one bad token read the catalog %d times, want at most 1", n)
	}
}

// TestFlushStoreUnavailable: a flush that could not check ClickHouse for
// an earlier attempt is 503 (the client retries it), never a success and
// never a client error.
func TestFlushStoreUnavailable(t *testing.T) {
	s, f := newTestServer(t, Config{})
	f.fail = fmt.Errorf("flush f1 into public.t: %w: %w", streamwrite.ErrStoreUnavailable, errors.New("connection refused"))
	a := do(t, s, flushRequest(bytes.NewReader(jsonLines(3)), "", nil))
	if a.status != http.StatusServiceUnavailable || !strings.Contains(a.body.Error.Message, "flush again") {
		t.Fatalf("%d %s, want 503 asking to flush again", a.status, a.raw)
	}
	if !(&tunnel.Error{Status: a.status}).Temporary() {
		t.Fatal("the client does not retry a 503")
	}
}
