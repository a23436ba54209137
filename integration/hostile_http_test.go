//go:build integration

package integration

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lakepipe/lakepipe/internal/chstore"
	"github.com/lakepipe/lakepipe/internal/orchestrator"
	"github.com/lakepipe/lakepipe/internal/tunnelserver"
	"github.com/lakepipe/lakepipe/tunnel"
	"github.com/lakepipe/lakepipe/worker"
)

// floodRequest is one request of a flood and the status it must get.
type floodRequest struct {
	name   string
	url    string
	auth   string
	ctype  string
	enc    string
	body   []byte
	length int64 // Content-Length to declare, when not len(body)
	want   int
}

// flood sends reqs from 8 goroutines, each request with a 20 s timeout,
// and reports requests whose status differs from what they want.
func flood(t *testing.T, reqs []floodRequest) {
	t.Helper()
	client := &http.Client{Timeout: 20 * time.Second}
	work := make(chan floodRequest)
	var mu sync.Mutex
	bad := map[string]int{}
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for fr := range work {
				req, _ := http.NewRequest(http.MethodPost, fr.url, bytes.NewReader(fr.body))
				if fr.length > 0 {
					req.ContentLength = fr.length
					req.Body = io.NopCloser(io.MultiReader(bytes.NewReader(fr.body), zeros{}))
				}
				if fr.auth != "" {
					req.Header.Set("Authorization", fr.auth)
				}
				req.Header.Set("Content-Type", fr.ctype)
				if fr.enc != "" {
					req.Header.Set("Content-Encoding", fr.enc)
				}
				status := 0
				if resp, err := client.Do(req); err == nil {
					status = resp.StatusCode
					_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
					resp.Body.Close()
				}
				if status != fr.want {
					mu.Lock()
					bad[fmt.Sprintf("%s: %d, want %d", fr.name, status, fr.want)]++
					mu.Unlock()
				}
			}
		}()
	}
	for _, fr := range reqs {
		work <- fr
	}
	close(work)
	wg.Wait()
	for k, n := range bad {
		t.Errorf("%d× %s", n, k)
	}
}

// zeros is an endless body.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// stallers opens n connections that send a request's headers and the
// head of its body, then nothing; it returns a channel of the statuses
// they get (0 when the connection ended without an answer).
func stallers(t *testing.T, addr, request string, n int) <-chan int {
	t.Helper()
	out := make(chan int, n)
	for range n {
		go func() {
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				out <- -1
				return
			}
			defer conn.Close()
			_, _ = io.WriteString(conn, request)
			_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				out <- 0
				return
			}
			resp.Body.Close()
			out <- resp.StatusCode
		}()
	}
	return out
}

func expectStatuses(t *testing.T, what string, got <-chan int, n, want int) {
	t.Helper()
	for range n {
		if s := <-got; s != want {
			t.Errorf("%s: status %d, want %d", what, s, want)
		}
	}
}

// TestHostileWriteService: a bounded flood of bad requests (no token,
// over the size limit, decompression bombs, too many records, garbage)
// and stalled bodies, from one client on loopback, is refused with the
// right status each, while a normal flush still answers promptly.
func TestHostileWriteService(t *testing.T) {
	s := newStack(t)
	s.run(`CREATE TABLE h (id BIGINT, name STRING)`)
	srv, err := tunnelserver.New(s.Eng, tunnelserver.Config{Token: "tok-" + randID(12), MaxFlushBytes: 1 << 20, MaxFlushRecords: 100_000,
		StallTimeout: time.Second, ReadTimeout: 20 * time.Second, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	token := srv.Config().Token
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := srv.HTTPServer()
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close() })
	base := "http://" + ln.Addr().String()

	status, _, raw := post(t, base+"/v1/streams", token, "application/json", "", []byte(`{"schema":"`+s.Schema+`","table":"h"}`), nil)
	if status != http.StatusCreated {
		t.Fatalf("create: %d %s", status, raw)
	}
	var info tunnel.SessionInfo
	must(t, json.Unmarshal(raw, &info))
	flushURL := base + "/v1/streams/" + info.ID + "/flush"

	var bomb bytes.Buffer
	zw, _ := zlib.NewWriterLevel(&bomb, zlib.BestCompression)
	line := []byte("{\"id\":1,\"name\":\"x\"}\n")
	for range 1 << 20 { // 20 MiB of records in ~40 KiB
		_, _ = zw.Write(line)
	}
	zw.Close()
	var many bytes.Buffer
	zw, _ = zlib.NewWriterLevel(&many, zlib.BestCompression)
	for range 100_001 {
		_, _ = zw.Write([]byte("{}\n"))
	}
	zw.Close()
	bearer := "Bearer " + token
	var reqs []floodRequest
	for i := range 200 {
		switch i % 5 {
		case 0:
			reqs = append(reqs, floodRequest{name: "no token", url: flushURL, ctype: tunnel.ContentTypeJSON, body: bytes.Repeat(line, 10000), want: http.StatusUnauthorized})
		case 1:
			reqs = append(reqs, floodRequest{name: "too large", url: flushURL, auth: bearer, ctype: tunnel.ContentTypeJSON, body: line, length: 64 << 20, want: http.StatusRequestEntityTooLarge})
		case 2:
			reqs = append(reqs, floodRequest{name: "deflate bomb", url: flushURL, auth: bearer, ctype: tunnel.ContentTypeJSON, enc: "deflate", body: bomb.Bytes(), want: http.StatusRequestEntityTooLarge})
		case 3:
			reqs = append(reqs, floodRequest{name: "too many records", url: flushURL, auth: bearer, ctype: tunnel.ContentTypeJSON, enc: "deflate", body: many.Bytes(), want: http.StatusRequestEntityTooLarge})
		case 4:
			reqs = append(reqs, floodRequest{name: "garbage", url: flushURL, auth: bearer, ctype: tunnel.ContentTypeArrow, enc: "lz4", body: bytes.Repeat([]byte{0xff}, 4096), want: http.StatusBadRequest})
		}
	}
	stalled := stallers(t, ln.Addr().String(), fmt.Sprintf("POST /v1/streams/%s/flush HTTP/1.1\r\nHost: x\r\nAuthorization: %s\r\nContent-Type: %s\r\nContent-Length: 1000\r\n\r\n{\"id\":", info.ID, bearer, tunnel.ContentTypeJSON), 16)

	start := time.Now()
	done := make(chan struct{})
	go func() { defer close(done); flood(t, reqs) }()
	// Meanwhile a good flush goes through promptly.
	time.Sleep(200 * time.Millisecond)
	t0 := time.Now()
	status, _, raw = post(t, flushURL, token, tunnel.ContentTypeJSON, "", []byte("{\"id\":1,\"name\":\"a\"}\n{\"id\":2,\"name\":\"b\"}\n"), map[string]string{tunnel.HeaderFlushID: "good-1"})
	if status != http.StatusOK {
		t.Errorf("good flush during the flood: %d %s", status, raw)
	}
	if d := time.Since(t0); d > 10*time.Second {
		t.Errorf("good flush during the flood took %s", d)
	}
	t.Logf("good flush during the flood: %s", time.Since(t0))
	<-done
	expectStatuses(t, "stalled body", stalled, 16, http.StatusRequestTimeout)
	t.Logf("flood of %d requests and 16 stalled bodies answered in %s", len(reqs), time.Since(start))
	if d := time.Since(start); d > 90*time.Second {
		t.Errorf("the flood took %s", d)
	}
	if n := s.count("h"); n != 2 {
		t.Errorf("%d rows after the flood, want the good flush's 2", n)
	}
}

// TestHostileEvents: with a token, a flood of unauthenticated or oversized
// notifications and stalled bodies at the worker's /events is refused
// cheaply (401, 413, 408) while /healthz and an authenticated
// notification still answer promptly.
func TestHostileEvents(t *testing.T) {
	s := newStack(t)
	orch := orchestrator.New(temporalConfig(""))
	if _, err := orch.Client(); err != nil {
		t.Skipf("Temporal is needed (deploy/local/start.sh temporal): %v", err)
	}
	orch.Close()
	token := "ev-" + randID(12)
	logPath := filepath.Join(t.TempDir(), "worker.log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	runDone := make(chan error, 1)
	go func() {
		runDone <- worker.Run(ctx, worker.Config{
			ClickHouse: chstore.Config{Addr: chAddr},
			Temporal:   temporalConfig("it-" + s.ID),
			Workspace:  "default",
			HTTPAddr:   "127.0.0.1:0",
			Events:     worker.EventsConfig{Token: token, BodyTimeout: time.Second},
			Logger:     slog.New(slog.NewTextHandler(logf, &slog.HandlerOptions{Level: slog.LevelWarn})),
			Ready:      ready,
		})
	}()
	var addr string
	select {
	case addr = <-ready:
	case err := <-runDone:
		cancel()
		t.Fatalf("worker did not start: %v", err)
	case <-time.After(30 * time.Second):
		cancel()
		t.Fatal("worker did not start within 30 s")
	}
	t.Cleanup(func() {
		cancel()
		<-runDone
		logf.Close()
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			t.Logf("worker log:\n%s", benchTail(string(b), 40))
		}
	})
	events := "http://" + addr + "/events"
	note := []byte(`{"Records":[{"eventName":"s3:ObjectCreated:Put","s3":{"bucket":{"name":"no-such-bucket-` + s.ID + `"},"object":{"key":"in/a+b.csv"}}}]}`)
	var reqs []floodRequest
	for i := range 300 {
		switch i % 3 {
		case 0:
			reqs = append(reqs, floodRequest{name: "no token", url: events, ctype: "application/json", body: bytes.Repeat(note, 5000), want: http.StatusUnauthorized})
		case 1:
			reqs = append(reqs, floodRequest{name: "wrong token", url: events, auth: "Bearer x" + token, ctype: "application/json", body: note, want: http.StatusUnauthorized})
		case 2:
			reqs = append(reqs, floodRequest{name: "too large", url: events, auth: "Bearer " + token, ctype: "application/json", body: note, length: 8 << 20, want: http.StatusRequestEntityTooLarge})
		}
	}
	stalled := stallers(t, addr, "POST /events HTTP/1.1\r\nHost: x\r\nAuthorization: "+token+"\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"Records\":[", 16)
	start := time.Now()
	done := make(chan struct{})
	go func() { defer close(done); flood(t, reqs) }()
	time.Sleep(100 * time.Millisecond)
	for range 5 {
		t0 := time.Now()
		resp, err := http.Get("http://" + addr + "/healthz")
		if err != nil {
			t.Fatalf("/healthz during the flood: %v", err)
		}
		resp.Body.Close()
		if d := time.Since(t0); resp.StatusCode != http.StatusOK || d > 2*time.Second {
			t.Errorf("/healthz during the flood: %d after %s", resp.StatusCode, d)
		}
		t0 = time.Now()
		req, _ := http.NewRequest(http.MethodPost, events, bytes.NewReader(note))
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err = http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("/events during the flood: %v", err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if d := time.Since(t0); resp.StatusCode != http.StatusOK || d > 5*time.Second {
			t.Errorf("authenticated notification during the flood: %d %s after %s", resp.StatusCode, strings.TrimSpace(string(b)), d)
		}
		time.Sleep(100 * time.Millisecond)
	}
	<-done
	expectStatuses(t, "stalled notification", stalled, 16, http.StatusRequestTimeout)
	t.Logf("flood of %d notifications and 16 stalled bodies answered in %s", len(reqs), time.Since(start))
	if d := time.Since(start); d > 60*time.Second {
		t.Errorf("the flood took %s", d)
	}
}
