package worker

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lakepipe/lakepipe/internal/jobs"
	"github.com/lakepipe/lakepipe/internal/loading"
)

// fakeRouter counts catalog reads.
type fakeRouter struct {
	mu     sync.Mutex
	calls  int
	routes []loading.EventRoute
	err    error
}

func (f *fakeRouter) EventRoutes(context.Context) (*loading.EventRoutes, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	return loading.NewEventRoutes(f.routes), f.err
}

type signal struct {
	id, name string
	paths    []string
}

type fakeSignaler struct {
	mu  sync.Mutex
	got []signal
}

func (f *fakeSignaler) Signal(_ context.Context, id, name string, arg any) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := signal{id: id, name: name}
	if fs, ok := arg.(jobs.FilesSignal); ok {
		s.paths = fs.Paths
	}
	f.got = append(f.got, s)
	return nil
}

func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// notification is an S3 event notification body of ObjectCreated records
// for keys (already URL-encoded) in bucket.
func notification(bucket string, keys ...string) string {
	var recs []string
	for _, k := range keys {
		recs = append(recs, fmt.Sprintf(`{"eventName":"s3:ObjectCreated:Put","s3":{"bucket":{"name":%q},"object":{"key":%q}}}`, bucket, k))
	}
	return `{"EventName":"s3:ObjectCreated:Put","Records":[` + strings.Join(recs, ",") + `]}`
}

func post(t *testing.T, h http.Handler, auth, body string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, "/events", strings.NewReader(body))
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// TestEventsRouting: one catalog read per notification however many
// records; keys are URL-decoded ('+' is a space); each pipe gets one
// signal with its paths, without repeats, relative to its volume; test
// events and deletions are ignored without reading the catalog.
func TestEventsRouting(t *testing.T) {
	router := &fakeRouter{routes: []loading.EventRoute{
		{WorkflowID: "pipe.a", Bucket: "b", Prefix: "in/"},
		{WorkflowID: "pipe.b", Bucket: "b", Prefix: "in/x/"},
		{WorkflowID: "pipe.c", Bucket: "other", Prefix: "in/"},
	}}
	sig := &fakeSignaler{}
	h := eventHandler(router, sig, EventsConfig{}, quietLog())
	body := notification("b", "in/a+b.csv", "in/x/c%2Bd%20e.csv", "in/a+b.csv", "out/z.csv", "in/", "in/%zz.csv")
	if rec := post(t, h, "", body); rec.Code != http.StatusOK {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	if router.calls != 1 {
		t.Errorf("catalog read %d times for one notification, want 1", router.calls)
	}
	want := []signal{
		{id: "pipe.a", name: jobs.SignalFiles, paths: []string{"a b.csv", "x/c+d e.csv", "%zz.csv"}},
		{id: "pipe.b", name: jobs.SignalFiles, paths: []string{"c+d e.csv"}},
	}
	if fmt.Sprint(sig.got) != fmt.Sprint(want) {
		t.Errorf("signals\n got %v\nwant %v", sig.got, want)
	}

	router.calls = 0
	test := `{"Service":"S3","Event":"s3:TestEvent","Bucket":"b"}`
	del := `{"Records":[{"eventName":"s3:ObjectRemoved:Delete","s3":{"bucket":{"name":"b"},"object":{"key":"in/a"}}}]}`
	for _, body := range []string{test, del, `{"Records":null}`, `{"Records":[]}`} {
		if rec := post(t, h, "", body); rec.Code != http.StatusOK {
			t.Errorf("%s: status %d: %s", body, rec.Code, rec.Body)
		}
	}
	if router.calls != 0 {
		t.Errorf("catalog read %d times for notifications of no new object", router.calls)
	}

	router.err = errors.New("catalog down")
	if rec := post(t, h, "", notification("b", "in/q")); rec.Code != http.StatusServiceUnavailable {
		t.Errorf("catalog down: status %d, want 503", rec.Code)
	}
}

// TestEventsPathsBound: past MaxPathsPerPipe new files, a pipe is only
// woken (a refresh, no paths).
func TestEventsPathsBound(t *testing.T) {
	router := &fakeRouter{routes: []loading.EventRoute{{WorkflowID: "pipe.a", Bucket: "b", Prefix: "in/"}, {WorkflowID: "pipe.b", Bucket: "b", Prefix: "in/few/"}}}
	sig := &fakeSignaler{}
	h := eventHandler(router, sig, EventsConfig{MaxPathsPerPipe: 3}, quietLog())
	if rec := post(t, h, "", notification("b", "in/1", "in/2", "in/few/3", "in/4")); rec.Code != http.StatusOK {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	want := []signal{{id: "pipe.a", name: jobs.SignalRefresh}, {id: "pipe.b", name: jobs.SignalFiles, paths: []string{"3"}}}
	if fmt.Sprint(sig.got) != fmt.Sprint(want) {
		t.Errorf("signals\n got %v\nwant %v", sig.got, want)
	}
}

// TestEventsToken: with a token, a request without it gets 401 before its
// body is read or the catalog is; Bearer, the bare token and Basic (token
// as password, as a webhook URL's user info sends it) are accepted.
func TestEventsToken(t *testing.T) {
	router := &fakeRouter{routes: []loading.EventRoute{{WorkflowID: "pipe.a", Bucket: "b", Prefix: "in/"}}}
	h := eventHandler(router, &fakeSignaler{}, EventsConfig{Token: "s3cret"}, quietLog())
	body := notification("b", "in/x")
	basic := func(user, pass string) string {
		return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pass))
	}
	for _, auth := range []string{"", "Bearer", "Bearer wrong", "s3cre", "s3cret2", "Token s3cret", basic("s3cret", ""), basic("lakepipe", "x"), "Basic !!!"} {
		rec := post(t, h, auth, body)
		if rec.Code != http.StatusUnauthorized || rec.Header().Get("WWW-Authenticate") == "" || strings.Contains(rec.Body.String(), "s3cret") {
			t.Errorf("Authorization %q: status %d %q, want 401 without the token", auth, rec.Code, rec.Body)
		}
	}
	if router.calls != 0 {
		t.Errorf("the catalog was read for unauthenticated requests")
	}
	for _, auth := range []string{"Bearer s3cret", "bearer  s3cret", "s3cret", basic("lakepipe", "s3cret"), basic("", "s3cret")} {
		if rec := post(t, h, auth, body); rec.Code != http.StatusOK {
			t.Errorf("Authorization %q: status %d %s, want 200", auth, rec.Code, rec.Body)
		}
	}
	// A webhook URL with the token as its password (how versitygw, which
	// sets no headers, sends it): Go's client, as versitygw's, sends Basic.
	srv := httptest.NewServer(h)
	defer srv.Close()
	u, _ := url.Parse(srv.URL + "/events")
	u.User = url.UserPassword("lakepipe", "s3cret")
	resp, err := http.Post(u.String(), "application/json; charset=utf-8", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("token in the webhook URL: %d", resp.StatusCode)
	}
	// The unread body of a refused request is not read.
	req := httptest.NewRequest(http.MethodPost, "/events", &explodingReader{})
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusUnauthorized {
		t.Errorf("unauthenticated: %d", rec.Code)
	}
}

type explodingReader struct{}

func (*explodingReader) Read([]byte) (int, error) { panic("body read before authentication") }

// TestEventsLimits: too large a body (413, also when Content-Length says
// so up front), too many records (413), not a notification (400), not
// POST (405).
func TestEventsLimits(t *testing.T) {
	router := &fakeRouter{routes: []loading.EventRoute{{WorkflowID: "pipe.a", Bucket: "b", Prefix: "in/"}}}
	sig := &fakeSignaler{}
	h := eventHandler(router, sig, EventsConfig{MaxBytes: 4096, MaxRecords: 5}, quietLog())
	keys := func(n int) []string {
		var k []string
		for i := range n {
			k = append(k, fmt.Sprintf("in/%d", i))
		}
		return k
	}
	cases := []struct {
		name, body string
		status     int
		msg        string
	}{
		{"five records", notification("b", keys(5)...), http.StatusOK, ""},
		{"six records", notification("b", keys(6)...), http.StatusRequestEntityTooLarge, "more than 5 records"},
		{"large", notification("b", "in/"+strings.Repeat("x", 5000)), http.StatusRequestEntityTooLarge, "larger than 4096 bytes"},
		{"not JSON", "hello", http.StatusBadRequest, "not an S3 event notification"},
		{"array", "[]", http.StatusBadRequest, "not an S3 event notification"},
		{"Records not array", `{"Records":{}}`, http.StatusBadRequest, "not an array"},
		{"trailing", `{"Records":[]} {}`, http.StatusBadRequest, "data after"},
		{"truncated", notification("b", "in/1")[:40], http.StatusBadRequest, "not an S3 event notification"},
		{"bad record", `{"Records":[{"eventName":1}]}`, http.StatusBadRequest, "not an S3 event notification"},
		{"empty", "", http.StatusBadRequest, "not an S3 event notification"},
	}
	for _, c := range cases {
		rec := post(t, h, "", c.body)
		if rec.Code != c.status || !strings.Contains(rec.Body.String(), c.msg) {
			t.Errorf("%s: %d %q, want %d %q", c.name, rec.Code, rec.Body, c.status, c.msg)
		}
	}
	if len(sig.got) != 1 {
		t.Errorf("refused notifications signalled pipes: %v", sig.got)
	}
	// Content-Length over the limit: refused without reading.
	req := httptest.NewRequest(http.MethodPost, "/events", &explodingReader{})
	req.ContentLength = 1 << 20
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusRequestEntityTooLarge {
		t.Errorf("Content-Length over the limit: %d", rec.Code)
	}
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/events", nil))
	if rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("GET: %d", rec.Code)
	}
}

// TestEventsSlowBody: a body that does not arrive within BodyTimeout gets
// 408 on a real connection, and the server goes on answering.
func TestEventsSlowBody(t *testing.T) {
	router := &fakeRouter{routes: []loading.EventRoute{{WorkflowID: "pipe.a", Bucket: "b", Prefix: "in/"}}}
	sig := &fakeSignaler{}
	srv := httptest.NewUnstartedServer(eventHandler(router, sig, EventsConfig{BodyTimeout: 300 * time.Millisecond}, quietLog()))
	srv.Config = newHTTPServer(srv.Config.Handler)
	srv.Start()
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	conn, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	start := time.Now()
	fmt.Fprintf(conn, "POST /events HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"Records\":[")
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer to a stalled body: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusRequestTimeout || !strings.Contains(string(b), "did not arrive within 300ms") {
		t.Errorf("stalled body: %d %s", resp.StatusCode, b)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("answered after %s", d)
	}
	// A slow signaller must not be cut by the body deadline: the answer
	// of a good notification comes after the deadline would have passed.
	slow := &slowSignaler{d: 500 * time.Millisecond}
	srv2 := httptest.NewUnstartedServer(eventHandler(router, slow, EventsConfig{BodyTimeout: 100 * time.Millisecond}, quietLog()))
	srv2.Config = newHTTPServer(srv2.Config.Handler)
	srv2.Start()
	defer srv2.Close()
	resp, err = http.Post(srv2.URL+"/events", "application/json", strings.NewReader(notification("b", "in/1")))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || slow.ctxErr != nil {
		t.Errorf("slow signal: status %d, signal context %v", resp.StatusCode, slow.ctxErr)
	}
}

type slowSignaler struct {
	d      time.Duration
	ctxErr error
}

func (s *slowSignaler) Signal(ctx context.Context, _, _ string, _ any) error {
	time.Sleep(s.d)
	s.ctxErr = ctx.Err()
	return ctx.Err()
}

// FuzzEventBody: no body, however malformed, panics the handler; the
// answer is 200, 400 or 413; signals stay within the bounds.
func FuzzEventBody(f *testing.F) {
	f.Add(notification("b", "in/a+b.csv", "in/x/%2F..%2F", "in/\x00", "in/%"))
	f.Add(`{"Records":[{"eventName":"ObjectCreated:Put","s3":{"bucket":{"name":"b"},"object":{"key":"in/` + strings.Repeat("a", 1100) + `"}}}]}`)
	f.Add(`{"Service":"S3","Event":"s3:TestEvent"}`)
	f.Add(`{"records":null,"Records":[{}],"RECORDS":[{"s3":null}]}`)
	f.Add(`{"Records":[1,2,3]}`)
	f.Add(`[{"Records":[]}]`)
	f.Add("\xff\xfe{")
	router := &fakeRouter{routes: []loading.EventRoute{{WorkflowID: "pipe.a", Bucket: "b", Prefix: "in/"}, {WorkflowID: "pipe.root", Bucket: "b", Prefix: ""}}}
	f.Fuzz(func(t *testing.T, body string) {
		sig := &fakeSignaler{}
		h := eventHandler(router, sig, EventsConfig{MaxBytes: 8 << 10, MaxRecords: 20, MaxPathsPerPipe: 5}, quietLog())
		rec := post(t, h, "", body)
		if !slices.Contains([]int{http.StatusOK, http.StatusBadRequest, http.StatusRequestEntityTooLarge}, rec.Code) {
			t.Fatalf("status %d: %s", rec.Code, rec.Body)
		}
		if rec.Code != http.StatusOK && len(sig.got) > 0 {
			t.Fatalf("refused (%d) but signalled %v", rec.Code, sig.got)
		}
		for _, s := range sig.got {
			if len(s.paths) > 5 || (s.name == jobs.SignalFiles) != (s.paths != nil) {
				t.Fatalf("signal %v out of bounds", s)
			}
			for _, p := range s.paths {
				if p == "" || len(p) > maxKeyBytes {
					t.Fatalf("path %q", p)
				}
			}
			if _, err := json.Marshal(jobs.FilesSignal{Paths: s.paths}); err != nil {
				t.Fatal(err)
			}
		}
	})
}
