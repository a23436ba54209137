// Package tunnelserver is lakepipe's write service: the HTTP API of
// streaming writes (Tunnel Stream) described in package tunnel. Sessions
// live in the catalog, so several servers behind a load balancer serve
// the same sessions; a flush is one load, visible when it returns.
package tunnelserver

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"mime"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lakepipe/lakepipe/internal/codec"
	"github.com/lakepipe/lakepipe/internal/engine"
	"github.com/lakepipe/lakepipe/internal/httpauth"
	"github.com/lakepipe/lakepipe/internal/rowio"
	"github.com/lakepipe/lakepipe/internal/streamwrite"
	"github.com/lakepipe/lakepipe/tunnel"
)

// Config of the write service.
type Config struct {
	// Token every request must carry as "Authorization: Bearer <token>".
	// Required: a write service without authentication is refused.
	Token string
	// TokenCacheTTL is how long an answer about a scoped token (`lakepipe
	// tokens create`) is reused (default 5 s): a revoked token is refused
	// at most this long after its revocation.
	TokenCacheTTL time.Duration
	// MetricsToken, when set, is required of /metrics requests (Bearer);
	// without it /metrics is open, as Prometheus scrapes usually are.
	MetricsToken string
	// MaxFlushBytes bounds a flush body as sent (default 256 MiB, room for
	// the 64 MB packs the ClickZetta Lakehouse documentation recommends); larger bodies get 413.
	MaxFlushBytes int64
	// MaxFlushDecompressedBytes bounds a flush body once decompressed
	// (default 4 × MaxFlushBytes, 1 GiB): deflate expands up to 1000-fold,
	// so without it a small body could stand for terabytes. Past it the
	// flush gets 413 TooLarge and nothing of it is written. Clients build
	// packs of at most MaxFlushBytes before compression, well within it.
	MaxFlushDecompressedBytes int64
	// MaxFlushRecords bounds the records of one flush (default
	// DefaultMaxFlushRecords, 100 million); past it 413 TooLarge, nothing
	// written. A flush that declares more (tunnel.HeaderRecordCount) is
	// refused before its body is read.
	MaxFlushRecords int64
	// ReadTimeout is how long a request body may take to arrive, from the
	// end of the request's headers (default 10 minutes: 256 MiB at 3.5
	// Mbit/s; the time the service spends writing rows between reads
	// counts too); a body still arriving then gets 408 Timeout, nothing
	// written.
	ReadTimeout time.Duration
	// StallTimeout is how long the service waits for the next bytes of a
	// body it is reading (default 30 s); a body that stalls longer gets
	// 408 Timeout, nothing written.
	StallTimeout time.Duration
	// WriteTimeout bounds a request from its headers to the end of its
	// answer, on the http.Server of HTTPServer (default ReadTimeout + 5
	// minutes); a flush still writing then loses its answer (its client
	// retries; the flush id keeps the rows from being written twice).
	WriteTimeout time.Duration
	// IdleTimeout closes a kept-alive connection without a request for
	// that long (default 2 minutes), on the http.Server of HTTPServer.
	IdleTimeout time.Duration
	// Slots is the automatic slot count: flushes of one session that run
	// at once when the session asks for 0 (default 2 × GOMAXPROCS).
	Slots  int
	Logger *slog.Logger
}

// streams is what the handlers need of the engine (*engine.Engine; tests
// fake it).
type streams interface {
	OpenStreamSession(ctx context.Context, req streamwrite.StreamSessionRequest) (streamwrite.StreamSession, error)
	StreamSessionByID(ctx context.Context, id string) (streamwrite.StreamSession, error)
	CloseStreamSession(ctx context.Context, s streamwrite.StreamSession) error
	FlushStream(ctx context.Context, s streamwrite.StreamSession, f streamwrite.StreamFlush) (int64, error)
	TouchStreamSession(ctx context.Context, s streamwrite.StreamSession) (streamwrite.StreamSession, error)
	CheckWriteToken(ctx context.Context, token string) (engine.TokenScope, bool, error)
	DefaultSchema() string
}

// Server serves the streaming-write API; safe for concurrent use.
type Server struct {
	eng   streams
	cfg   Config
	log   *slog.Logger
	mux   *http.ServeMux
	slots sync.Map // session id → chan struct{}
	cache sync.Map // session id → engine.StreamSession (sessions never change)
	m     *serviceMetrics
	toks  *tokenChecker
}

// New returns the write service over an engine.
func New(eng *engine.Engine, cfg Config) (*Server, error) {
	return newServer(eng, cfg)
}

func newServer(eng streams, cfg Config) (*Server, error) {
	if cfg.Token == "" {
		return nil, errors.New("the write service needs a token (LAKEPIPE_TUNNEL_TOKEN): requests must authenticate")
	}
	if cfg.MaxFlushBytes <= 0 {
		cfg.MaxFlushBytes = DefaultMaxFlushBytes
	}
	if cfg.MaxFlushDecompressedBytes <= 0 {
		cfg.MaxFlushDecompressedBytes = math.MaxInt64
		if cfg.MaxFlushBytes <= math.MaxInt64/4 {
			cfg.MaxFlushDecompressedBytes = 4 * cfg.MaxFlushBytes
		}
	}
	if cfg.MaxFlushRecords <= 0 {
		cfg.MaxFlushRecords = DefaultMaxFlushRecords
	}
	if cfg.ReadTimeout <= 0 {
		cfg.ReadTimeout = DefaultReadTimeout
	}
	if cfg.StallTimeout <= 0 {
		cfg.StallTimeout = DefaultStallTimeout
	}
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = cfg.ReadTimeout + writeMargin
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = DefaultIdleTimeout
	}
	if cfg.Slots <= 0 {
		cfg.Slots = 2 * runtime.GOMAXPROCS(0)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.TokenCacheTTL <= 0 {
		cfg.TokenCacheTTL = DefaultTokenCacheTTL
	}
	s := &Server{eng: eng, cfg: cfg, log: cfg.Logger, mux: http.NewServeMux(), m: newServiceMetrics(),
		toks: &tokenChecker{check: eng.CheckWriteToken, ttl: cfg.TokenCacheTTL}}
	s.mux.HandleFunc("POST /v1/streams", s.create)
	s.mux.HandleFunc("GET /v1/streams/{id}", s.get)
	s.mux.HandleFunc("POST /v1/streams/{id}/flush", s.flush)
	s.mux.HandleFunc("DELETE /v1/streams/{id}", s.close)
	return s, nil
}

// Config returns the service's settings, defaults filled in.
func (s *Server) Config() Config { return s.cfg }

// HTTPServer returns an http.Server of the service with its timeouts:
// 10 s and 64 KiB for a request's headers, then ReadTimeout, WriteTimeout
// and IdleTimeout from the Config. The handlers bound each body
// themselves (ReadTimeout and StallTimeout, answering 408); the
// http.Server's ReadTimeout only backs them up.
func (s *Server) HTTPServer() *http.Server {
	return &http.Server{
		Handler:           s,
		ReadHeaderTimeout: readHeaderTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		ReadTimeout:       s.cfg.ReadTimeout + readHeaderTimeout,
		WriteTimeout:      s.cfg.WriteTimeout,
		IdleTimeout:       s.cfg.IdleTimeout,
	}
}

// ServeHTTP authenticates, then routes.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	trace := newTraceID()
	w.Header().Set(tunnel.HeaderTraceID, trace)
	r = r.WithContext(context.WithValue(r.Context(), traceKey{}, trace))
	if r.Method == http.MethodGet && r.URL.Path == "/metrics" {
		httpauth.Require(s.cfg.MetricsToken, s.m.http).ServeHTTP(w, r)
		return
	}
	auth := r.Header.Get("Authorization")
	const prefix = "Bearer "
	if !strings.HasPrefix(auth, prefix) {
		s.unauthorized(w, r)
		return
	}
	// The service's own token writes everything; a token made with
	// `lakepipe tokens create` writes what its scope covers.
	scope := engine.TokenScope{All: true}
	if got := auth[len(prefix):]; subtle.ConstantTimeCompare([]byte(got), []byte(s.cfg.Token)) != 1 {
		var ok bool
		var err error
		if scope, ok, err = s.toks.scope(r.Context(), got); err != nil {
			s.fail(w, r, http.StatusServiceUnavailable, tunnel.CodeInternal, "the token could not be checked (the catalog did not answer): try again")
			return
		} else if !ok {
			s.unauthorized(w, r)
			return
		}
	}
	r = r.WithContext(context.WithValue(r.Context(), scopeKey{}, scope))
	if r.Body != nil && r.Body != http.NoBody {
		r.Body = newDeadlineBody(w, r.Body, s.cfg.ReadTimeout, s.cfg.StallTimeout)
	}
	s.mux.ServeHTTP(w, r)
}

type traceKey struct{}

func traceOf(r *http.Request) string { v, _ := r.Context().Value(traceKey{}).(string); return v }

func newTraceID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func (s *Server) create(w http.ResponseWriter, r *http.Request) {
	var req tunnel.CreateSessionRequest
	dec := json.NewDecoder(io.LimitReader(r.Body, 1<<20))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		var te *timeoutError
		if errors.As(err, &te) {
			s.fail(w, r, http.StatusRequestTimeout, tunnel.CodeTimeout, te.Error())
			return
		}
		s.fail(w, r, http.StatusBadRequest, tunnel.CodeBadRequest, "session request: "+err.Error())
		return
	}
	schema := req.Schema
	if schema == "" {
		schema = s.eng.DefaultSchema()
	}
	if err := s.allowed(r, schema, req.Table); err != nil {
		s.engineError(w, r, err)
		return
	}
	sess, err := s.eng.OpenStreamSession(r.Context(), streamwrite.StreamSessionRequest{
		Schema: req.Schema, Table: req.Table, PartitionSpec: req.PartitionSpec, CreatePartition: req.CreatePartition,
		SchemaVersion: req.SchemaVersion, AllowSchemaMismatch: req.AllowSchemaMismatch, SlotNum: req.SlotNum,
	})
	if err != nil {
		s.engineError(w, r, err)
		return
	}
	s.cache.Store(sess.ID, sess)
	s.log.Info("stream session opened", "session", sess.ID, "table", sess.Schema+"."+sess.Table, "schema_version", sess.Version, "trace_id", traceOf(r))
	s.reply(w, http.StatusCreated, s.info(sess))
}

func (s *Server) info(sess streamwrite.StreamSession) tunnel.SessionInfo {
	info := tunnel.SessionInfo{
		ID: sess.ID, Schema: sess.Schema, Table: sess.Table, SchemaVersion: strconv.Itoa(sess.Version),
		PartitionSpec: sess.PartitionSpec, CreatePartition: sess.CreatePartition, AllowSchemaMismatch: sess.AllowMismatch,
		SlotNum: s.slotCount(sess), Compressions: codec.Names(), MaxFlushBytes: s.cfg.MaxFlushBytes,
	}
	for _, c := range sess.Columns {
		part := false
		for _, p := range sess.PartitionBy {
			part = part || strings.EqualFold(p, c.Name)
		}
		info.Columns = append(info.Columns, tunnel.Column{Name: c.Name, Type: c.Type, CHType: c.CHType, Partition: part})
	}
	return info
}

func (s *Server) slotCount(sess streamwrite.StreamSession) int {
	if sess.SlotNum > 0 {
		return sess.SlotNum
	}
	return s.cfg.Slots
}

func (s *Server) session(r *http.Request) (streamwrite.StreamSession, error) {
	id := r.PathValue("id")
	if v, ok := s.cache.Load(id); ok {
		sess := v.(streamwrite.StreamSession)
		return sess, s.allowed(r, sess.Schema, sess.Table)
	}
	sess, err := s.eng.StreamSessionByID(r.Context(), id)
	if err != nil {
		return sess, err
	}
	s.cache.Store(id, sess)
	return sess, s.allowed(r, sess.Schema, sess.Table)
}

func (s *Server) unauthorized(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="lakepipe"`)
	s.fail(w, r, http.StatusUnauthorized, tunnel.CodeUnauthorized, "missing, wrong or revoked token: send Authorization: Bearer <token>")
}

// forbidden is a table the request's token does not cover.
type forbidden struct{ schema, table string }

func (f forbidden) Error() string {
	return fmt.Sprintf("this token may not write %s.%s: use a token whose scope covers it (lakepipe tokens create NAME --scope table:%s.%s)", f.schema, f.table, f.schema, f.table)
}

// allowed checks the request's token scope against a table.
func (s *Server) allowed(r *http.Request, schema, table string) error {
	if scopeOf(r.Context()).Allows(schema, table) {
		return nil
	}
	return forbidden{schema, table}
}

func (s *Server) get(w http.ResponseWriter, r *http.Request) {
	sess, err := s.session(r)
	if err != nil {
		s.engineError(w, r, err)
		return
	}
	s.reply(w, http.StatusOK, s.info(sess))
}

func (s *Server) close(w http.ResponseWriter, r *http.Request) {
	sess, err := s.session(r)
	if err != nil {
		s.engineError(w, r, err)
		return
	}
	if err := s.eng.CloseStreamSession(r.Context(), sess); err != nil {
		s.engineError(w, r, err)
		return
	}
	s.cache.Delete(sess.ID)
	s.slots.Delete(sess.ID)
	s.log.Info("stream session closed", "session", sess.ID, "trace_id", traceOf(r))
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) flush(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	if r.ContentLength > s.cfg.MaxFlushBytes {
		s.fail(w, r, http.StatusRequestEntityTooLarge, tunnel.CodeTooLarge, s.tooLarge())
		return
	}
	sess, err := s.session(r)
	if err != nil {
		s.engineError(w, r, err)
		return
	}
	format, typed := "", false
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch mt {
	case tunnel.ContentTypeArrow, "application/vnd.apache.arrow.file":
		format, typed = "ARROW", true
	case tunnel.ContentTypeJSON, "application/json", "application/jsonl", "application/x-jsonlines":
		format = "JSON"
	default:
		s.fail(w, r, http.StatusUnsupportedMediaType, tunnel.CodeUnsupportedEncoding,
			fmt.Sprintf("Content-Type %q: send %s (Arrow IPC stream) or %s (one JSON object per line)", mt, tunnel.ContentTypeArrow, tunnel.ContentTypeJSON))
		return
	}
	ctx := r.Context()
	if ms := r.Header.Get(tunnel.HeaderTimeout); ms != "" {
		n, err := strconv.Atoi(ms)
		if err != nil || n <= 0 {
			s.fail(w, r, http.StatusBadRequest, tunnel.CodeBadRequest, fmt.Sprintf("%s %q: expected milliseconds", tunnel.HeaderTimeout, ms))
			return
		}
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(n)*time.Millisecond)
		defer cancel()
	}
	records := int64(-1)
	if v := r.Header.Get(tunnel.HeaderRecordCount); v != "" {
		if records, err = strconv.ParseInt(v, 10, 64); err != nil || records < 0 {
			s.fail(w, r, http.StatusBadRequest, tunnel.CodeBadRequest, fmt.Sprintf("%s %q: expected a count", tunnel.HeaderRecordCount, v))
			return
		}
		if records > s.cfg.MaxFlushRecords {
			s.fail(w, r, http.StatusRequestEntityTooLarge, tunnel.CodeTooLarge, tooManyRecords(s.cfg.MaxFlushRecords).Error())
			return
		}
	}
	attempt := 0
	if v := r.Header.Get(tunnel.HeaderFlushAttempt); v != "" {
		if attempt, err = strconv.Atoi(v); err != nil || attempt < 1 || attempt > 1_000_000 {
			s.fail(w, r, http.StatusBadRequest, tunnel.CodeBadRequest, fmt.Sprintf("%s %q: expected the attempt's number, from 1", tunnel.HeaderFlushAttempt, v))
			return
		}
	}
	// A flush id goes into lakepipe.flush_retries and into the queries
	// that sweep it, 1,000 ids a query: its length is bounded.
	if id := r.Header.Get(tunnel.HeaderFlushID); len(id) > maxFlushIDBytes {
		s.fail(w, r, http.StatusBadRequest, tunnel.CodeBadRequest, fmt.Sprintf("%s is %d bytes long: at most %d", tunnel.HeaderFlushID, len(id), maxFlushIDBytes))
		return
	}
	// Slots bound the flushes of one session that run at once.
	v, _ := s.slots.LoadOrStore(sess.ID, make(chan struct{}, s.slotCount(sess)))
	slot := v.(chan struct{})
	select {
	case slot <- struct{}{}:
		defer func() { <-slot }()
	case <-ctx.Done():
		s.fail(w, r, http.StatusServiceUnavailable, tunnel.CodeInternal, "flush timed out waiting for a free slot of the session")
		return
	}

	opts := rowio.Options{}
	if format == "JSON" {
		// Keys are matched to the session's columns; JSON carries no
		// types, so every value is converted like a file's.
		for _, c := range sess.Columns {
			opts.Schema = append(opts.Schema, rowio.Column{Name: c.Name, Type: c.CHType})
		}
	}
	enc := r.Header.Get("Content-Encoding")
	p, err := openPack(http.MaxBytesReader(w, r.Body, s.cfg.MaxFlushBytes), enc, format, opts, s.limits())
	if p == nil {
		s.fail(w, r, http.StatusUnsupportedMediaType, tunnel.CodeUnsupportedEncoding, err.Error())
		return
	}
	defer p.Close()
	if err != nil {
		s.payloadError(w, r, p, unreadable{err})
		return
	}
	n, err := s.eng.FlushStream(ctx, sess, streamwrite.StreamFlush{ID: r.Header.Get(tunnel.HeaderFlushID), Reader: p.rd, Typed: typed, Records: records, Attempt: attempt})
	if err != nil {
		s.payloadError(w, r, p, err)
		return
	}
	// Read to the end so that FlushSize counts the whole body.
	_, _ = io.Copy(io.Discard, p.body)
	res := tunnel.FlushResult{TraceID: traceOf(r), RecordCount: n, FlushSize: p.body.n}
	s.m.flushed(sess.Schema+"."+sess.Table, n, res.FlushSize, time.Since(start))
	// A session in use is kept by maintenance; recording the use is
	// throttled (hourly), and its failure only costs that record.
	if used, err := s.eng.TouchStreamSession(ctx, sess); err == nil {
		s.cache.Store(used.ID, used)
	} else {
		s.log.Warn("record stream session use", "session", sess.ID, "error", err)
	}
	s.log.Debug("flush", "session", sess.ID, "table", sess.Schema+"."+sess.Table, "records", n, "bytes", res.FlushSize,
		"encoding", enc, "ms", time.Since(start).Milliseconds(), "trace_id", res.TraceID)
	s.reply(w, http.StatusOK, res)
}

func (s *Server) limits() packLimits {
	return packLimits{MaxBytes: s.cfg.MaxFlushBytes, MaxDecompressedBytes: s.cfg.MaxFlushDecompressedBytes, MaxRecords: s.cfg.MaxFlushRecords}
}

func (s *Server) tooLarge() string {
	return fmt.Sprintf("the flush body is larger than the service's limit of %d bytes (lakepipe serve --max-flush-bytes): flush smaller record packs (a lower flush threshold)", s.cfg.MaxFlushBytes)
}

// payloadError maps an error met while reading or writing a pack: a
// limit the pack ran into (413, or 408 for a body that did not arrive in
// time), a timeout of the flush, a pack the readers refuse (400), else
// what the engine says. The pack's readers are asked first, as a format
// reader's error need not wrap the read error under it.
func (s *Server) payloadError(w http.ResponseWriter, r *http.Request, p *pack, err error) {
	if lerr := p.limitErr(); lerr != nil {
		err = lerr
	}
	var mb *http.MaxBytesError
	var le *limitError
	var te *timeoutError
	switch {
	case errors.As(err, &te):
		s.fail(w, r, http.StatusRequestTimeout, tunnel.CodeTimeout, te.Error()+"; nothing of the flush was written: flush again (the same flush id never writes twice)")
	case errors.As(err, &mb):
		s.fail(w, r, http.StatusRequestEntityTooLarge, tunnel.CodeTooLarge, s.tooLarge())
	case errors.As(err, &le):
		s.fail(w, r, http.StatusRequestEntityTooLarge, tunnel.CodeTooLarge, le.Error()+"; nothing of the flush was written")
	case errors.Is(err, context.DeadlineExceeded):
		s.fail(w, r, http.StatusGatewayTimeout, tunnel.CodeInternal, "the flush did not finish within its timeout; nothing of it was written: flush again (the same flush id never writes twice)")
	default:
		var u unreadable
		if errors.As(err, &u) {
			s.fail(w, r, http.StatusBadRequest, tunnel.CodeBadPayload, err.Error())
			return
		}
		s.engineError(w, r, err)
	}
}

// unreadable marks a pack the format readers could not open.
type unreadable struct{ error }

func (u unreadable) Unwrap() error { return u.error }

func (s *Server) engineError(w http.ResponseWriter, r *http.Request, err error) {
	var fb forbidden
	if errors.As(err, &fb) {
		s.fail(w, r, http.StatusForbidden, tunnel.CodeForbidden, fb.Error())
		return
	}
	if errors.Is(err, streamwrite.ErrBusy) || errors.Is(err, streamwrite.ErrSuperseded) {
		s.fail(w, r, http.StatusServiceUnavailable, tunnel.CodeInternal, err.Error()+": flush again (the same flush id never writes twice)")
		return
	}
	if errors.Is(err, streamwrite.ErrStoreUnavailable) {
		s.log.Warn("write service", "path", r.URL.Path, "error", err, "trace_id", traceOf(r))
		s.fail(w, r, http.StatusServiceUnavailable, tunnel.CodeInternal, err.Error()+"; nothing of the flush was written: flush again (the same flush id never writes twice)")
		return
	}
	code, ok := streamwrite.IsStreamError(err)
	if !ok {
		s.log.Error("write service", "path", r.URL.Path, "error", err, "trace_id", traceOf(r))
		s.fail(w, r, http.StatusInternalServerError, tunnel.CodeInternal, err.Error())
		return
	}
	status := map[tunnel.ErrorCode]int{
		tunnel.CodeBadRequest: http.StatusBadRequest, tunnel.CodeBadPayload: http.StatusBadRequest,
		tunnel.CodeNoSuchSession: http.StatusNotFound, tunnel.CodeNoSuchTable: http.StatusNotFound,
		tunnel.CodeNoSuchPartition: http.StatusNotFound, tunnel.CodeSchemaMismatch: http.StatusConflict,
	}[code]
	if status == 0 {
		status = http.StatusBadRequest
	}
	s.fail(w, r, status, code, err.Error())
}

func (s *Server) fail(w http.ResponseWriter, r *http.Request, status int, code tunnel.ErrorCode, msg string) {
	var body tunnel.ErrorBody
	body.Error.Code, body.Error.Message, body.Error.TraceID = code, msg, traceOf(r)
	s.m.refused.WithLabelValues(strconv.Itoa(status), string(code)).Inc()
	if status != http.StatusInternalServerError {
		s.log.Info("write service refused a request", "path", r.URL.Path, "status", status, "code", code, "error", msg, "trace_id", body.Error.TraceID)
	}
	// The client may still be sending a large body; close the connection
	// rather than read it all.
	if r.Method == http.MethodPost && status >= 400 {
		w.Header().Set("Connection", "close")
	}
	s.reply(w, status, body)
}

func (s *Server) reply(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
