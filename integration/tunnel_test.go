//go:build integration

package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lakepipe/lakepipe/internal/catalog"
	"github.com/lakepipe/lakepipe/internal/streamwrite"
	"github.com/lakepipe/lakepipe/internal/tunnelserver"
	"github.com/lakepipe/lakepipe/tunnel"
)

// writeService runs the real write service on a loopback port for the
// test and returns its base URL and token.
func (s *Stack) writeService(cfg tunnelserver.Config) (string, string) {
	s.T.Helper()
	if cfg.Token == "" {
		cfg.Token = "tok-" + randID(12)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	srv, err := tunnelserver.New(s.Eng, cfg)
	if err != nil {
		s.T.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		s.T.Fatal(err)
	}
	hs := &http.Server{Handler: srv}
	go hs.Serve(ln)
	s.T.Cleanup(func() { hs.Close() })
	return "http://" + ln.Addr().String(), cfg.Token
}

// flushRows writes rows into table through a write service of the
// stack's engine, as one record pack flushed once.
func (s *Stack) flushRows(table string, rows ...[]any) {
	s.T.Helper()
	url, token := s.writeService(tunnelserver.Config{})
	sess, err := s.tunnelClient(url, token).BuildStreamUploadSession(s.Schema, table).Build(s.Ctx)
	must(s.T, err)
	pack, err := sess.NewRecordPack()
	must(s.T, err)
	for _, r := range rows {
		must(s.T, pack.AppendRow(r...))
	}
	_, err = pack.Flush()
	must(s.T, err)
}

func (s *Stack) tunnelClient(url, token string) *tunnel.Client {
	s.T.Helper()
	c, err := tunnel.New(url, tunnel.WithToken(token), tunnel.WithSchema(s.Schema))
	if err != nil {
		s.T.Fatal(err)
	}
	return c
}

// post sends a raw request, the way curl would, and returns status and body.
func post(t *testing.T, url, token, ctype, encoding string, body []byte, hdr map[string]string) (int, tunnel.ErrorBody, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	if encoding != "" {
		req.Header.Set("Content-Encoding", encoding)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var eb tunnel.ErrorBody
	_ = json.Unmarshal(raw, &eb)
	return resp.StatusCode, eb, raw
}

func (s *Stack) count(table string) int64 {
	s.T.Helper()
	n, err := strconv.ParseInt(s.pipeScalar("SELECT COUNT(*) FROM "+table), 10, 64)
	if err != nil {
		s.T.Fatal(err)
	}
	return n
}

// TestTunnelFlushVisible: the ClickZetta documentation's example: 1,000 records appended to a
// pack are visible the moment flush returns, which reports trace id,
// record count and bytes; the same pack is reused for a second flush.
func TestTunnelFlushVisible(t *testing.T) {
	s := newStack(t)
	s.run(`CREATE TABLE users (name STRING, age BIGINT, score DOUBLE, joined TIMESTAMP, birthday DATE, balance DECIMAL(10,2), active BOOLEAN)`)
	url, token := s.writeService(tunnelserver.Config{})
	c := s.tunnelClient(url, token)
	sess, err := c.BuildStreamUploadSession(s.Schema, "users").Build(s.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	pack, err := sess.NewRecordPack()
	if err != nil {
		t.Fatal(err)
	}
	joined := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	for i := 0; i < 1000; i++ {
		r := sess.NewRecord()
		must(t, r.SetString("name", fmt.Sprintf("user_%d", i)))
		must(t, r.SetBigint("age", int64(20+i%50)))
		must(t, r.SetDouble("score", float64(i)/4))
		must(t, r.SetTimestamp("joined", joined))
		must(t, r.SetDate("birthday", joined))
		must(t, r.SetDecimal("balance", "12.34"))
		must(t, r.SetBoolean("active", i%2 == 0))
		must(t, pack.Append(r))
	}
	res, err := pack.Flush(tunnel.FlushOption{Timeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if res.TraceID == "" || res.RecordCount != 1000 || res.FlushSize <= 0 {
		t.Fatalf("flush result %+v: want a trace id, 1000 records and the bytes sent", res)
	}
	// No waiting: visible at once.
	if n := s.count("users"); n != 1000 {
		t.Fatalf("right after flush: %d rows, want 1000", n)
	}
	got := s.streamRows(`SELECT name, age, score, joined, birthday, balance, active FROM users WHERE name IN ('user_0', 'user_7')`)
	want := []string{"user_0|20|0|2025-01-02 03:04:05|2025-01-02|12.34|1", "user_7|27|1.75|2025-01-02 03:04:05|2025-01-02|12.34|0"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("rows:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// The pack is reusable; a NULL goes in as NULL.
	r := sess.NewRecord()
	must(t, r.SetString("name", "late"))
	must(t, r.SetNull("age"))
	must(t, pack.Append(r))
	if res, err = pack.Flush(); err != nil || res.RecordCount != 1 {
		t.Fatalf("second flush: %+v, %v", res, err)
	}
	if v := s.pipeScalar(`SELECT COUNT(*) FROM users WHERE name = 'late' AND age IS NULL`); v != "1" {
		t.Fatalf("NULL age: %s rows", v)
	}
	// An empty flush sends nothing and writes nothing.
	if res, err = pack.Flush(); err != nil || res.RecordCount != 0 {
		t.Fatalf("empty flush: %+v, %v", res, err)
	}
	if err := sess.Close(s.Ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := pack.Flush(); err != nil {
		t.Fatalf("empty flush after close: %v", err)
	}
	must(t, pack.Append(r))
	if _, err := pack.Flush(); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("flush on a closed session: %v, want 'does not exist'", err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestTunnelTwoPacks: two packs of one session flushed alternately; each
// flush is visible alone, and the Go SDK example's style AppendRow works.
func TestTunnelTwoPacks(t *testing.T) {
	s := newStack(t)
	s.run(`CREATE TABLE events (id BIGINT, src STRING)`)
	url, token := s.writeService(tunnelserver.Config{})
	c := s.tunnelClient(url, token)
	sess, err := c.CreateStreamUploadSession(s.Ctx, s.Schema, "events")
	if err != nil {
		t.Fatal(err)
	}
	a, err := sess.NewRecordPack()
	must(t, err)
	b, err := sess.OpenRecordPackWriter()
	must(t, err)
	want := int64(0)
	for round := 0; round < 3; round++ {
		for i := 0; i < 100; i++ {
			must(t, a.AppendRow(int64(round*1000+i), "a"))
			must(t, b.AppendRow(int64(round*1000+i), "b"))
		}
		if _, err := a.Flush(); err != nil {
			t.Fatal(err)
		}
		want += 100
		if n := s.count("events"); n != want {
			t.Fatalf("round %d after pack a: %d rows, want %d", round, n, want)
		}
		if _, err := b.Flush(); err != nil {
			t.Fatal(err)
		}
		want += 100
		if n := s.count("events"); n != want {
			t.Fatalf("round %d after pack b: %d rows, want %d", round, n, want)
		}
	}
	if v := s.pipeScalar(`SELECT COUNT(*) FROM (SELECT DISTINCT id, src FROM events) d`); v != "600" {
		t.Fatalf("distinct rows %s, want 600", v)
	}
}

// TestTunnelSchemaMismatch: ALTER TABLE moves the schema version; a strict
// session's flush fails with SchemaMismatch (409) and writes nothing; a new
// session writes the new column; a session allowing mismatch survives ADD
// COLUMN but not the drop of one of its columns.
func TestTunnelSchemaMismatch(t *testing.T) {
	s := newStack(t)
	s.run(`CREATE TABLE logs (id BIGINT, msg STRING)`)
	url, token := s.writeService(tunnelserver.Config{})
	c := s.tunnelClient(url, token)
	strict, err := c.BuildStreamUploadSession(s.Schema, "logs").AllowSchemaMismatch(false).Build(s.Ctx)
	must(t, err)
	tolerant, err := c.BuildStreamUploadSession(s.Schema, "logs").AllowSchemaMismatch(true).Build(s.Ctx)
	must(t, err)
	v0 := strict.SchemaVersion()
	ps, _ := strict.NewRecordPack()
	pt, _ := tolerant.NewRecordPack()
	must(t, ps.AppendRow(int64(1), "before"))
	_, err = ps.Flush()
	must(t, err)

	s.run(`ALTER TABLE logs ADD COLUMN level STRING`)
	must(t, ps.AppendRow(int64(2), "after"))
	_, err = ps.Flush()
	if !errors.Is(err, tunnel.ErrSchemaMismatch) || !tunnel.IsSchemaMismatch(err) {
		t.Fatalf("strict flush after ALTER: %v, want SchemaMismatch", err)
	}
	var te *tunnel.Error
	if !errors.As(err, &te) || te.Status != http.StatusConflict || !strings.Contains(te.Message, "new session") {
		t.Fatalf("error %#v: want 409 saying to open a new session", err)
	}
	if n := s.count("logs"); n != 1 {
		t.Fatalf("%d rows after the refused flush, want 1", n)
	}
	must(t, pt.AppendRow(int64(3), "tolerated"))
	if _, err := pt.Flush(); err != nil {
		t.Fatalf("tolerant session after ADD COLUMN: %v", err)
	}

	// As the ClickZetta documentation's example: rebuild the session, write again.
	fresh, err := c.BuildStreamUploadSession(s.Schema, "logs").Build(s.Ctx)
	must(t, err)
	if fresh.SchemaVersion() == v0 {
		t.Fatalf("schema version did not change: %s", v0)
	}
	pf, _ := fresh.NewRecordPack()
	r := fresh.NewRecord()
	must(t, r.SetBigint("id", 4))
	must(t, r.SetString("msg", "new"))
	must(t, r.SetString("level", "INFO"))
	must(t, pf.Append(r))
	_, err = pf.Flush()
	must(t, err)
	if v := s.pipeScalar(`SELECT level FROM logs WHERE id = 4`); v != "INFO" {
		t.Fatalf("new column: %q", v)
	}
	// Pinning an old version is refused at once.
	if _, err := c.BuildStreamUploadSession(s.Schema, "logs").SetSchemaVersion(v0).Build(s.Ctx); !errors.Is(err, tunnel.ErrSchemaMismatch) {
		t.Fatalf("session pinned to version %s: %v, want SchemaMismatch", v0, err)
	}

	s.run(`ALTER TABLE logs DROP COLUMN msg`)
	must(t, pt.AppendRow(int64(5), "gone"))
	if _, err := pt.Flush(); !errors.Is(err, tunnel.ErrSchemaMismatch) || !strings.Contains(err.Error(), "msg") {
		t.Fatalf("tolerant session after its column was dropped: %v, want SchemaMismatch naming msg", err)
	}
	if n := s.count("logs"); n != 3 {
		t.Fatalf("%d rows, want 3", n)
	}
}

// TestTunnelPartitions: dynamic partitions route rows by their partition
// column; without create partition a flush into a partition that holds no
// data is refused (404 NoSuchPartition) and writes nothing; a session on a
// partition spec fills the partition column itself.
func TestTunnelPartitions(t *testing.T) {
	s := newStack(t)
	s.run(`CREATE TABLE visits (name STRING, age BIGINT, dt STRING) PARTITIONED BY (dt)`)
	url, token := s.writeService(tunnelserver.Config{})
	c := s.tunnelClient(url, token)

	// The ClickZetta documentation's dynamic-partition example.
	dyn, err := c.BuildStreamUploadSession(s.Schema, "visits").SetCreatePartition(true).Build(s.Ctx)
	must(t, err)
	pack, _ := dyn.NewRecordPack()
	r1 := dyn.NewRecord()
	must(t, r1.SetString("name", "alice"))
	must(t, r1.SetBigint("age", 25))
	must(t, r1.SetString("dt", "20250101"))
	must(t, pack.Append(r1))
	r2 := dyn.NewRecord()
	must(t, r2.SetString("name", "bob"))
	must(t, r2.SetBigint("age", 30))
	must(t, r2.SetString("dt", "20250102"))
	must(t, pack.Append(r2))
	_, err = pack.Flush()
	must(t, err)
	if got := s.streamRows(`SELECT dt, name FROM visits`); strings.Join(got, ",") != "20250101|alice,20250102|bob" {
		t.Fatalf("rows %v", got)
	}
	// (Read through the store: lakepipe SQL cannot read system tables.)
	parts, err := s.Store.Strings(s.Ctx, `SELECT COUNT(DISTINCT partition) FROM system.parts WHERE active AND database = '`+s.Schema+`' AND table = 'visits'`)
	if err != nil || len(parts) != 1 || parts[0] != "2" {
		t.Fatalf("%v partitions (%v), want 2", parts, err)
	}

	// Without create partition: existing partitions take rows, new ones
	// are refused and the flush writes nothing.
	strict, err := c.BuildStreamUploadSession(s.Schema, "visits").Build(s.Ctx)
	must(t, err)
	sp, _ := strict.NewRecordPack()
	must(t, sp.AppendRow("carol", int64(40), "20250101"))
	_, err = sp.Flush()
	must(t, err)
	must(t, sp.AppendRow("dave", int64(41), "20250101"))
	must(t, sp.AppendRow("erin", int64(42), "20250103"))
	_, err = sp.Flush()
	if !errors.Is(err, tunnel.ErrNoSuchPartition) || !strings.Contains(err.Error(), "dt=20250103") {
		t.Fatalf("flush into a new partition without create partition: %v", err)
	}
	if n := s.count("visits"); n != 3 {
		t.Fatalf("%d rows, want 3", n)
	}
	// As many new partitions as rows, each named by a long value: the
	// lookup named every value and passed ClickHouse's max_query_size.
	long := strings.Repeat("d", 500)
	mp, _ := strict.NewRecordPack()
	for i := range 20_000 {
		must(t, mp.AppendRow("many", int64(i), fmt.Sprintf("%s%05d", long, i)))
	}
	if _, err = mp.Flush(); !errors.Is(err, tunnel.ErrNoSuchPartition) || !strings.Contains(err.Error(), "dt="+long) {
		t.Fatalf("flush into 20,000 new partitions without create partition: %v", err)
	}

	// A session on a partition: rows need not carry dt.
	fixed, err := c.BuildStreamUploadSession(s.Schema, "visits").SetPartitionSpec("dt=20231001").SetCreatePartition(true).Build(s.Ctx)
	must(t, err)
	fp, _ := fixed.NewRecordPack()
	r := fixed.NewRecord()
	must(t, r.SetString("name", "frank"))
	must(t, r.SetBigint("age", 50))
	must(t, fp.Append(r))
	_, err = fp.Flush()
	must(t, err)
	if v := s.pipeScalar(`SELECT dt FROM visits WHERE name = 'frank'`); v != "20231001" {
		t.Fatalf("frank's dt %q", v)
	}
	// A partition that does not exist, without create partition: refused
	// when the session opens.
	if _, err := c.BuildStreamUploadSession(s.Schema, "visits").SetPartitionSpec("dt=19990101").Build(s.Ctx); !errors.Is(err, tunnel.ErrNoSuchPartition) {
		t.Fatalf("session on a missing partition: %v", err)
	}
	if _, err := c.BuildStreamUploadSession(s.Schema, "visits").SetPartitionSpec("region=hz").Build(s.Ctx); err == nil || !strings.Contains(err.Error(), "not a partition column") {
		t.Fatalf("session on a non-partition column: %v", err)
	}
}

// TestTunnelCompression: every compression the ClickZetta documentation's example lists carries a pack;
// an unknown one gets 415.
func TestTunnelCompression(t *testing.T) {
	s := newStack(t)
	s.run(`CREATE TABLE z (id BIGINT, txt STRING)`)
	url, token := s.writeService(tunnelserver.Config{})
	c := s.tunnelClient(url, token)
	sess, err := c.BuildStreamUploadSession(s.Schema, "z").Build(s.Ctx)
	must(t, err)
	want := int64(0)
	sizes := map[string]int64{}
	for _, comp := range []string{tunnel.CompressNone, tunnel.CompressZlib, tunnel.CompressSnappy, tunnel.CompressLZ4} {
		pack, err := sess.NewRecordPack(tunnel.RecordPackOptions{Compression: comp})
		must(t, err)
		for i := 0; i < 5000; i++ {
			must(t, pack.AppendRow(int64(i), strings.Repeat("lakepipe ", 5)))
		}
		res, err := pack.Flush()
		if err != nil {
			t.Fatalf("%s: %v", comp, err)
		}
		want += 5000
		sizes[comp] = res.FlushSize
		if n := s.count("z"); n != want {
			t.Fatalf("%s: %d rows, want %d", comp, n, want)
		}
	}
	for _, comp := range []string{tunnel.CompressZlib, tunnel.CompressSnappy, tunnel.CompressLZ4} {
		if sizes[comp] >= sizes[tunnel.CompressNone] {
			t.Fatalf("%s sent %d bytes, uncompressed %d", comp, sizes[comp], sizes[tunnel.CompressNone])
		}
	}
	status, eb, _ := post(t, url+"/v1/streams/"+sess.ID()+"/flush", token, tunnel.ContentTypeJSON, "brotli", []byte(`{"id":1}`+"\n"), nil)
	if status != http.StatusUnsupportedMediaType || eb.Error.Code != tunnel.CodeUnsupportedEncoding || !strings.Contains(eb.Error.Message, "lz4") {
		t.Fatalf("brotli: %d %+v", status, eb)
	}
}

// TestTunnelHTTP: the curl path (JSON lines), and everything the API
// refuses: no token (401), a bad payload (400, nothing written, even when
// the bad record comes after blocks were sent), too large (413); a
// repeated flush id writes once.
func TestTunnelHTTP(t *testing.T) {
	s := newStack(t)
	s.run(`CREATE TABLE j (id BIGINT, name STRING, ts TIMESTAMP)`)
	url, token := s.writeService(tunnelserver.Config{MaxFlushBytes: 8 << 20})

	status, eb, raw := post(t, url+"/v1/streams", "", "application/json", "", []byte(`{"table":"j"}`), nil)
	if status != http.StatusUnauthorized || eb.Error.Code != tunnel.CodeUnauthorized {
		t.Fatalf("no token: %d %s", status, raw)
	}
	status, eb, _ = post(t, url+"/v1/streams", "wrong", "application/json", "", []byte(`{"table":"j"}`), nil)
	if status != http.StatusUnauthorized || strings.Contains(eb.Error.Message, token) {
		t.Fatalf("wrong token: %d %+v", status, eb)
	}
	status, eb, _ = post(t, url+"/v1/streams", token, "application/json", "", []byte(`{"schema":"`+s.Schema+`","table":"nope"}`), nil)
	if status != http.StatusNotFound || eb.Error.Code != tunnel.CodeNoSuchTable {
		t.Fatalf("missing table: %d %+v", status, eb)
	}
	status, _, raw = post(t, url+"/v1/streams", token, "application/json", "", []byte(`{"schema":"`+s.Schema+`","table":"j"}`), nil)
	if status != http.StatusCreated {
		t.Fatalf("create: %d %s", status, raw)
	}
	var info tunnel.SessionInfo
	must(t, json.Unmarshal(raw, &info))
	flush := url + "/v1/streams/" + info.ID + "/flush"

	lines := "{\"id\":1,\"name\":\"a\",\"ts\":\"2025-01-01 00:00:00\"}\n{\"id\":2,\"name\":\"b\"}\n"
	status, _, raw = post(t, flush, token, tunnel.ContentTypeJSON, "", []byte(lines), map[string]string{tunnel.HeaderFlushID: "curl-1"})
	var fr tunnel.FlushResult
	_ = json.Unmarshal(raw, &fr)
	if status != http.StatusOK || fr.RecordCount != 2 || fr.TraceID == "" || fr.FlushSize != int64(len(lines)) {
		t.Fatalf("JSON flush: %d %s", status, raw)
	}
	// The same flush id again (a retry after a lost answer): written once.
	status, _, raw = post(t, flush, token, tunnel.ContentTypeJSON, "", []byte(lines), map[string]string{tunnel.HeaderFlushID: "curl-1"})
	if status != http.StatusOK || s.count("j") != 2 {
		t.Fatalf("repeated flush id: %d %s, %d rows", status, raw, s.count("j"))
	}

	bad := []struct{ name, body, want string }{
		{"malformed JSON", "{\"id\":3,\"name\":\"c\"}\n{\"id\":4,\"name\":\n", "record 2"},
		{"not a number", "{\"id\":5}\n{\"id\":\"five\"}\n", "five"},
		{"unknown column", "", ""},
	}
	for _, b := range bad[:2] {
		status, eb, _ = post(t, flush, token, tunnel.ContentTypeJSON, "", []byte(b.body), nil)
		if status != http.StatusBadRequest || eb.Error.Code != tunnel.CodeBadPayload || !strings.Contains(eb.Error.Message, b.want) {
			t.Fatalf("%s: %d %+v, want 400 BadPayload mentioning %q", b.name, status, eb, b.want)
		}
	}
	// A bad record after 300,000 good ones: blocks were already sent when
	// it is met, and they are taken back.
	var big bytes.Buffer
	for i := 0; i < 300000; i++ {
		fmt.Fprintf(&big, "{\"id\":%d,\"name\":\"x\"}\n", 100+i)
	}
	big.WriteString("{\"id\":\"bad\"}\n")
	status, eb, _ = post(t, flush, token, tunnel.ContentTypeJSON, "", big.Bytes(), nil)
	if status != http.StatusBadRequest || !strings.Contains(eb.Error.Message, "nothing of this flush was written") {
		t.Fatalf("late bad record: %d %+v", status, eb)
	}
	if n := s.count("j"); n != 2 {
		t.Fatalf("%d rows after refused packs, want 2", n)
	}
	status, eb, _ = post(t, flush, token, tunnel.ContentTypeArrow, "", []byte("not arrow at all"), nil)
	if status != http.StatusBadRequest || eb.Error.Code != tunnel.CodeBadPayload {
		t.Fatalf("corrupt Arrow: %d %+v", status, eb)
	}
	status, eb, _ = post(t, flush, token, "text/csv", "", []byte("1,a\n"), nil)
	if status != http.StatusUnsupportedMediaType {
		t.Fatalf("CSV: %d %+v", status, eb)
	}
	huge := bytes.Repeat([]byte("{\"id\":1,\"name\":\"0123456789012345678901234567890123456789\"}\n"), 200000)
	status, eb, _ = post(t, flush, token, tunnel.ContentTypeJSON, "", huge, nil)
	if status != http.StatusRequestEntityTooLarge || eb.Error.Code != tunnel.CodeTooLarge {
		t.Fatalf("too large: %d %+v", status, eb)
	}
	if n := s.count("j"); n != 2 {
		t.Fatalf("%d rows, want 2", n)
	}
	status, eb, _ = post(t, url+"/v1/streams/nosuch/flush", token, tunnel.ContentTypeJSON, "", []byte(lines), nil)
	if status != http.StatusNotFound || eb.Error.Code != tunnel.CodeNoSuchSession {
		t.Fatalf("unknown session: %d %+v", status, eb)
	}
	// The service's metrics need no token and count what happened.
	resp, err := http.Get(url + "/metrics")
	must(t, err)
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		// 2 rows written, acknowledged twice more by a repeated flush id.
		fmt.Sprintf(`lakepipe_tunnel_rows_total{table="%s.j"} 4`, s.Schema),
		`lakepipe_tunnel_refused_total{code="Unauthorized",status="401"} 2`,
		`lakepipe_tunnel_refused_total{code="TooLarge",status="413"} 1`,
	} {
		if !strings.Contains(string(metrics), want) {
			t.Errorf("/metrics lacks %s:\n%s", want, metrics)
		}
	}
}

// TestTunnelFeedsStreams: flushes into a change-tracked table are commits
// like any write: a table stream shows them, and an incremental dynamic
// table takes them in with an INCREMENTAL refresh.
func TestTunnelFeedsStreams(t *testing.T) {
	s := newStack(t)
	s.withWorker()
	s.run(`CREATE TABLE orders (id BIGINT, category STRING, amount DOUBLE)`)
	s.run(`ALTER TABLE orders SET PROPERTIES ('change_tracking' = 'true')`)
	s.run(`CREATE TABLE STREAM orders_changes ON TABLE orders WITH PROPERTIES ('TABLE_STREAM_MODE' = 'APPEND_ONLY')`)
	url, token := s.writeService(tunnelserver.Config{})
	c := s.tunnelClient(url, token)
	sess, err := c.BuildStreamUploadSession(s.Schema, "orders").Build(s.Ctx)
	must(t, err)
	pack, _ := sess.NewRecordPack()
	must(t, pack.AppendRow(int64(1), "a", 9.5))
	must(t, pack.AppendRow(int64(2), "b", 10.5))
	_, err = pack.Flush()
	must(t, err)
	s.waitStream(`SELECT id, amount, __change_type FROM orders_changes`, "1|9.5|INSERT", "2|10.5|INSERT")

	s.run(`CREATE DYNAMIC TABLE by_category REFRESH INTERVAL 1 HOUR AS SELECT category, COUNT(*) AS n, SUM(amount) AS total FROM orders GROUP BY category`)
	s.dropAtEnd("DYNAMIC TABLE", "by_category")
	s.run(`REFRESH DYNAMIC TABLE by_category`)
	must(t, pack.AppendRow(int64(3), "a", 1.0))
	_, err = pack.Flush()
	must(t, err)
	time.Sleep(2500 * time.Millisecond) // changes are readable 2 s after their commit
	checkMessage(t, s.run(`REFRESH DYNAMIC TABLE by_category`).Message, "INCREMENTAL")
	if got := s.streamRows(`SELECT category, n, total FROM by_category`); strings.Join(got, ",") != "a|2|10.5,b|1|10.5" {
		t.Fatalf("by_category after the incremental refresh: %v", got)
	}
}

// TestTunnelClientCrash: a client killed at any moment loses only the
// rows it had not flushed: what is in the table is whole packs, at least
// every pack the client saw acknowledged.
func TestTunnelClientCrash(t *testing.T) {
	if os.Getenv("LAKEPIPE_TUNNEL_CHILD") != "" {
		tunnelCrashChild(t)
		return
	}
	s := newStack(t)
	s.run(`CREATE TABLE crash (id BIGINT, pack BIGINT)`)
	url, token := s.writeService(tunnelserver.Config{})
	for round := 0; round < 3; round++ {
		before := s.count("crash")
		cmd := exec.Command(os.Args[0], "-test.run", "^TestTunnelClientCrash$", "-test.v")
		cmd.Env = append(os.Environ(), "LAKEPIPE_TUNNEL_CHILD=1", "LAKEPIPE_TUNNEL_URL="+url, "LAKEPIPE_TUNNEL_TOKEN_TEST="+token,
			"LAKEPIPE_TUNNEL_SCHEMA="+s.Schema, "LAKEPIPE_TUNNEL_ROUND="+strconv.Itoa(round))
		out := &syncBuffer{}
		cmd.Stdout, cmd.Stderr = out, out
		must(t, cmd.Start())
		// Kill it after a few acknowledged flushes, at some moment of its
		// append/flush loop.
		deadline := time.Now().Add(60 * time.Second)
		for strings.Count(out.String(), "FLUSHED") < 3+round && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		time.Sleep(time.Duration(7*round) * time.Millisecond)
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		acked := int64(strings.Count(out.String(), "FLUSHED"))
		if acked < 3 {
			t.Fatalf("round %d: the client acknowledged %d flushes:\n%s", round, acked, out.String())
		}
		got := s.count("crash") - before
		const packRows = 1000
		if got%packRows != 0 || got < acked*packRows || got > (acked+1)*packRows {
			t.Fatalf("round %d: %d new rows after %d acknowledged packs of %d: only whole packs, at least the acknowledged ones", round, got, acked, packRows)
		}
		// One scan, so one snapshot of the table's parts: two counts in
		// separate subqueries can straddle the removal of the pack the
		// killed client never saw acknowledged (its request context ends
		// after the rows landed), and then report rows twice that never were.
		if v := s.pipeScalar(`SELECT COUNT(*) FROM (SELECT id, pack FROM crash GROUP BY id, pack HAVING COUNT(*) > 1) d`); v != "0" {
			t.Fatalf("round %d: %s rows written more than once; the client said:\n%s", round, v, out.String())
		}
		t.Logf("round %d: killed after %d acknowledged packs; %d rows landed", round, acked, got)
	}
}

func tunnelCrashChild(t *testing.T) {
	round, _ := strconv.Atoi(os.Getenv("LAKEPIPE_TUNNEL_ROUND"))
	c, err := tunnel.New(os.Getenv("LAKEPIPE_TUNNEL_URL"), tunnel.WithToken(os.Getenv("LAKEPIPE_TUNNEL_TOKEN_TEST")))
	must(t, err)
	sess, err := c.BuildStreamUploadSession(os.Getenv("LAKEPIPE_TUNNEL_SCHEMA"), "crash").Build(context.Background())
	must(t, err)
	pack, err := sess.NewRecordPack()
	must(t, err)
	for p := int64(0); ; p++ {
		for i := 0; i < 1000; i++ {
			must(t, pack.AppendRow(int64(i), int64(round)*1_000_000+p))
		}
		if _, err := pack.Flush(); err != nil {
			t.Fatal(err)
		}
		fmt.Println("FLUSHED", p)
	}
}

// syncBuffer collects a child process's output while the test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestTunnelSessionExpiry: sessions live as long as they are used;
// maintenance closes those unused for StreamSessionIdleDays (30), so that
// writers that never close sessions do not grow the catalog forever. A
// flush records the use (at most hourly).
func TestTunnelSessionExpiry(t *testing.T) {
	s := newStack(t)
	s.run(`CREATE TABLE e (id BIGINT)`)
	_, cat, err := openCatalog()
	must(t, err)
	url, token := s.writeService(tunnelserver.Config{})
	c := s.tunnelClient(url, token)
	open := func() string {
		sess, err := c.BuildStreamUploadSession(s.Schema, "e").Build(s.Ctx)
		must(t, err)
		return sess.ID()
	}
	age := func(id string, d time.Duration) {
		var spec streamwrite.StreamSession
		ok, err := cat.Get(s.Ctx, catalog.KindStreamSession, "", id, &spec)
		if err != nil || !ok {
			t.Fatalf("session %s: %v %v", id, ok, err)
		}
		spec.CreatedAt, spec.LastUsed = spec.CreatedAt.Add(-d), time.Time{}
		must(t, cat.Put(s.Ctx, catalog.KindStreamSession, "", id, spec, ""))
	}
	idle, fresh, used := open(), open(), open()
	age(idle, 40*24*time.Hour)
	age(used, 40*24*time.Hour)
	// A flush through a service that has not cached the session records
	// its use.
	url2, token2 := s.writeService(tunnelserver.Config{Token: token})
	status, eb, raw := post(t, url2+"/v1/streams/"+used+"/flush", token2, tunnel.ContentTypeJSON, "", []byte("{\"id\":1}\n"), nil)
	if status != http.StatusOK {
		t.Fatalf("flush: %d %+v %s", status, eb, raw)
	}
	must(t, s.Eng.Maintain(s.Ctx))
	for id, want := range map[string]bool{idle: false, fresh: true, used: true} {
		var spec streamwrite.StreamSession
		ok, err := cat.Get(s.Ctx, catalog.KindStreamSession, "", id, &spec)
		must(t, err)
		if ok != want {
			t.Errorf("session %s after maintenance: present %v, want %v", id, ok, want)
		}
	}
	status, eb, _ = post(t, url2+"/v1/streams/"+idle+"/flush", token2, tunnel.ContentTypeJSON, "", []byte("{\"id\":2}\n"), nil)
	if status != http.StatusNotFound || eb.Error.Code != tunnel.CodeNoSuchSession {
		t.Fatalf("flush into an expired session: %d %+v", status, eb)
	}
}
