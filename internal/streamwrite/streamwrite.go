package streamwrite

import (
	"context"
	"crypto/md5"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/lakepipe/lakepipe/internal/catalog"
	"github.com/lakepipe/lakepipe/internal/changes"
	"github.com/lakepipe/lakepipe/internal/chsql"
	"github.com/lakepipe/lakepipe/internal/chstore"
	"github.com/lakepipe/lakepipe/internal/core"
	"github.com/lakepipe/lakepipe/internal/query"
	"github.com/lakepipe/lakepipe/internal/rowio"
	"github.com/lakepipe/lakepipe/internal/staging"
	"github.com/lakepipe/lakepipe/schemas"
	"github.com/lakepipe/lakepipe/tunnel"
)

// Writer writes the record packs of streaming-write sessions.
type Writer struct {
	query.Runner
	// flushLocks serialise flushes that share a commit id (a client retry
	// that overlaps the attempt it retries) of clients that do not number
	// their attempts; copies share it.
	FlushLocks *[64]sync.Mutex
	// MaxAttempt bounds one attempt of a flush (DefaultMaxAttempt when
	// zero); a lock older than it belongs to a dead attempt.
	MaxAttempt time.Duration
}

// StreamError is an error the writer caused and can fix; its message
// names the object and the fix.
type StreamError struct {
	Code tunnel.ErrorCode
	Msg  string
	Err  error // the cause, when there is one
}

func (e *StreamError) Error() string { return e.Msg }

func (e *StreamError) Unwrap() error { return e.Err }

func streamErr(code tunnel.ErrorCode, format string, args ...any) error {
	return &StreamError{Code: code, Msg: fmt.Sprintf(format, args...)}
}

// StreamSessionRequest opens a session; see tunnel.CreateSessionRequest
// for the meaning of each field.
type StreamSessionRequest struct {
	Schema, Table       string
	PartitionSpec       string
	CreatePartition     bool
	SchemaVersion       string
	AllowSchemaMismatch bool
	SlotNum             int
}

// StreamSession is an open streaming-write session. It is kept in the
// catalog, so any write-service process can serve it and it outlives
// restarts ("long-lived", as the ClickZetta Lakehouse documentation says); Close removes it.
type StreamSession struct {
	ID     string `json:"id"`
	Schema string `json:"schema"`
	Table  string `json:"table"`
	// Version is the table's schema version the session was opened on;
	// Columns its columns then.
	Version int                  `json:"version"`
	Columns []catalog.ColumnSpec `json:"columns"`
	// PartitionBy are the table's partition columns; Partition holds the
	// fixed value of each (normalised) when the session names a partition.
	PartitionBy     []string  `json:"partition_by,omitempty"`
	Partition       []string  `json:"partition,omitempty"`
	PartitionSpec   string    `json:"partition_spec,omitempty"`
	CreatePartition bool      `json:"create_partition,omitempty"`
	AllowMismatch   bool      `json:"allow_schema_mismatch,omitempty"`
	SlotNum         int       `json:"slot_num"`
	CreatedAt       time.Time `json:"created_at"`
	// LastUsed is when a flush last recorded its use (at most hourly).
	LastUsed time.Time `json:"last_used,omitzero"`
}

// usedAt is when the session was last known in use.
func (s StreamSession) usedAt() time.Time {
	if s.LastUsed.After(s.CreatedAt) {
		return s.LastUsed
	}
	return s.CreatedAt
}

// sessionTouchEvery is how often a session in use records that it is.
const sessionTouchEvery = time.Hour

// TouchStreamSession records that a session is in use, at most once per
// sessionTouchEvery, so that maintenance keeps it; it returns the session
// as now recorded. Callers keep the returned copy to stay throttled.
func (e *Writer) TouchStreamSession(ctx context.Context, s StreamSession) (StreamSession, error) {
	if time.Since(s.usedAt()) < sessionTouchEvery {
		return s, nil
	}
	s.LastUsed = time.Now().UTC()
	if err := e.Cat.Put(ctx, catalog.KindStreamSession, "", s.ID, s, ""); err != nil {
		return s, err
	}
	return s, nil
}

// ExpireStreamSessions forgets the sessions unused for
// StreamSessionIdleDays.
func (e *Writer) ExpireStreamSessions(ctx context.Context) error {
	objs, err := e.Cat.List(ctx, catalog.KindStreamSession, "")
	if err != nil {
		return err
	}
	cutoff := time.Now().Add(-time.Duration(e.Cfg.StreamSessionIdleDays) * 24 * time.Hour)
	for _, o := range objs {
		var s StreamSession
		if o.Decode(&s) != nil || s.usedAt().After(cutoff) {
			continue
		}
		if err := e.CloseStreamSession(ctx, s); err != nil {
			return err
		}
	}
	return nil
}

// OpenStreamSession checks the request against the table and records the
// session.
func (e *Writer) OpenStreamSession(ctx context.Context, req StreamSessionRequest) (StreamSession, error) {
	if req.Schema == "" {
		req.Schema = e.Cfg.Schema
	}
	if req.Table == "" {
		return StreamSession{}, streamErr(tunnel.CodeBadRequest, "a stream upload session needs a table")
	}
	if req.SlotNum < 0 {
		return StreamSession{}, streamErr(tunnel.CodeBadRequest, "slot_num %d: expected 0 (automatic) or more", req.SlotNum)
	}
	spec, err := e.streamTable(ctx, req.Schema, req.Table)
	if err != nil {
		return StreamSession{}, err
	}
	s := StreamSession{
		ID: newSessionID(), Schema: req.Schema, Table: req.Table,
		Version: spec.SchemaVersion, Columns: spec.Columns, PartitionBy: spec.PartitionBy,
		PartitionSpec: req.PartitionSpec, CreatePartition: req.CreatePartition,
		AllowMismatch: req.AllowSchemaMismatch, SlotNum: req.SlotNum, CreatedAt: time.Now().UTC(),
	}
	if req.SchemaVersion != "" && req.SchemaVersion != strconv.Itoa(spec.SchemaVersion) {
		// Only the latest schema is known: a session can pin the version
		// it expects, and is refused when that is not the table's.
		if _, err := strconv.Atoi(req.SchemaVersion); err != nil {
			return StreamSession{}, streamErr(tunnel.CodeBadRequest, "schema version %q: expected a number (the table's is %d)", req.SchemaVersion, spec.SchemaVersion)
		}
		return StreamSession{}, streamErr(tunnel.CodeSchemaMismatch, "table %s is at schema version %d, not %s: open the session without a schema version to write with the current schema",
			core.Display(req.Schema, req.Table), spec.SchemaVersion, req.SchemaVersion)
	}
	if req.PartitionSpec != "" {
		if s.Partition, err = parsePartitionSpec(req.PartitionSpec, spec, core.Display(req.Schema, req.Table)); err != nil {
			return StreamSession{}, err
		}
		if !req.CreatePartition {
			missing, err := e.missingPartitions(ctx, &s, []string{strings.Join(s.Partition, "\x00")})
			if err != nil {
				return StreamSession{}, err
			}
			if len(missing) > 0 {
				return StreamSession{}, streamErr(tunnel.CodeNoSuchPartition, "table %s has no partition %s: open the session with create partition set to create it",
					core.Display(req.Schema, req.Table), req.PartitionSpec)
			}
		}
	}
	// Sessions are global objects (schema ""): a flush names only the id.
	if err := e.Cat.Put(ctx, catalog.KindStreamSession, "", s.ID, s, ""); err != nil {
		return StreamSession{}, err
	}
	return s, nil
}

// StreamSessionByID loads an open session.
func (e *Writer) StreamSessionByID(ctx context.Context, id string) (StreamSession, error) {
	var s StreamSession
	ok, err := e.Cat.Get(ctx, catalog.KindStreamSession, "", id, &s)
	if err != nil || ok {
		return s, err
	}
	return StreamSession{}, streamErr(tunnel.CodeNoSuchSession, "stream upload session %s does not exist (closed, or never opened): open a new one", id)
}

// CloseStreamSession forgets a session; flushed rows stay.
func (e *Writer) CloseStreamSession(ctx context.Context, s StreamSession) error {
	knownPartitions.Delete(s.ID)
	return e.Cat.Delete(ctx, catalog.KindStreamSession, "", s.ID)
}

func newSessionID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func (e *Writer) streamTable(ctx context.Context, schema, name string) (catalog.TableSpec, error) {
	var spec catalog.TableSpec
	ok, err := e.Cat.Get(ctx, catalog.KindTable, schema, name, &spec)
	if err != nil {
		return spec, err
	}
	if !ok {
		return spec, streamErr(tunnel.CodeNoSuchTable, "table %s does not exist (SHOW TABLES lists the tables of a schema)", core.Display(schema, name))
	}
	return spec, nil
}

// parsePartitionSpec reads "dt=20231001,region=hz" (quotes around values
// and '/' between pairs allowed) into one normalised value per partition
// column of the table, in PARTITIONED BY order.
func parsePartitionSpec(text string, spec catalog.TableSpec, table string) ([]string, error) {
	if len(spec.PartitionBy) == 0 {
		return nil, streamErr(tunnel.CodeBadRequest, "table %s is not partitioned: open the session without a partition spec", table)
	}
	vals := make([]string, len(spec.PartitionBy))
	set := make([]bool, len(spec.PartitionBy))
	for _, pair := range strings.FieldsFunc(text, func(r rune) bool { return r == ',' || r == '/' }) {
		k, v, ok := strings.Cut(strings.TrimSpace(pair), "=")
		k, v = strings.TrimSpace(k), strings.Trim(strings.TrimSpace(v), `'"`)
		if !ok || k == "" {
			return nil, streamErr(tunnel.CodeBadRequest, "partition spec %q: expected col=value[,col=value]", text)
		}
		i := indexFold(spec.PartitionBy, k)
		if i < 0 {
			return nil, streamErr(tunnel.CodeBadRequest, "partition spec %q: %s is not a partition column of %s (partitioned by %s)", text, k, table, strings.Join(spec.PartitionBy, ", "))
		}
		n, err := normalizePartValue(columnType(spec.Columns, spec.PartitionBy[i]), v)
		if err != nil {
			return nil, streamErr(tunnel.CodeBadRequest, "partition spec %q: %s: %v", text, k, err)
		}
		vals[i], set[i] = n, true
	}
	for i, ok := range set {
		if !ok {
			return nil, streamErr(tunnel.CodeBadRequest, "partition spec %q does not give %s (table %s is partitioned by %s)", text, spec.PartitionBy[i], table, strings.Join(spec.PartitionBy, ", "))
		}
	}
	return vals, nil
}

func indexFold(names []string, name string) int {
	for i, n := range names {
		if strings.EqualFold(n, name) {
			return i
		}
	}
	return -1
}

func columnType(cols []catalog.ColumnSpec, name string) string {
	for _, c := range cols {
		if strings.EqualFold(c.Name, name) {
			return c.CHType
		}
	}
	return "String"
}

// normalizePartValue renders a partition value the way ClickHouse's
// toString renders the stored value, so that values from specs, JSON text
// and Arrow arrays compare equal.
func normalizePartValue(chType, v string) (string, error) {
	base, _ := schemas.BaseOf(chType)
	switch {
	case base == "Date":
		t, err := chstore.ParseTime(v)
		if err != nil {
			return "", fmt.Errorf("%q is not a DATE", v)
		}
		return t.Format("2006-01-02"), nil
	case strings.HasPrefix(base, "DateTime"):
		t, err := chstore.ParseTime(v)
		if err != nil {
			return "", fmt.Errorf("%q is not a TIMESTAMP", v)
		}
		return t.Format("2006-01-02 15:04:05"), nil
	case strings.HasPrefix(base, "Int"), strings.HasPrefix(base, "UInt"):
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil {
			return "", fmt.Errorf("%q is not an integer", v)
		}
		return strconv.FormatInt(n, 10), nil
	}
	return v, nil
}

// partitionLookupChunk is how many partition keys one lookup names (35
// bytes each in the query).
const partitionLookupChunk = 10_000

// knownPartitions remembers, per session, partitions seen to exist, so that
// dynamic-partition flushes ask ClickHouse only about new ones.
var knownPartitions = partitionCache{sessions: map[string]map[string]struct{}{}}

// partitionCache bounds what it keeps: sessions that are never closed (a
// client that died) would otherwise stay for the life of the process. Past
// maxCachedSessions sessions, or maxCachedPartitions partitions in one, it
// starts over: the next flushes ask ClickHouse again.
type partitionCache struct {
	mu       sync.Mutex
	sessions map[string]map[string]struct{}
}

const (
	maxCachedSessions   = 1024
	maxCachedPartitions = 100_000
)

// unknown returns those of keys not known to exist for session id.
func (c *partitionCache) unknown(id string, keys []string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	known := c.sessions[id]
	var out []string
	for _, k := range keys {
		if _, ok := known[k]; !ok {
			out = append(out, k)
		}
	}
	return out
}

// add records keys as existing for session id.
func (c *partitionCache) add(id string, keys []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	known := c.sessions[id]
	if known == nil || len(known)+len(keys) > maxCachedPartitions {
		if len(c.sessions) >= maxCachedSessions {
			clear(c.sessions)
		}
		known = map[string]struct{}{}
		c.sessions[id] = known
	}
	for _, k := range keys {
		known[k] = struct{}{}
	}
}

// Delete forgets session id.
func (c *partitionCache) Delete(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.sessions, id)
}

// missingPartitions returns the partition keys (values joined by NUL)
// that hold no rows yet.
func (e *Writer) missingPartitions(ctx context.Context, s *StreamSession, keys []string) ([]string, error) {
	ask := knownPartitions.unknown(s.ID, keys)
	if len(ask) == 0 {
		return nil, nil
	}
	// Keys are named by their MD5, not their text: a flush's partition
	// values are as long and as many as its rows make them, and a query
	// naming them could pass any max_query_size (ClickHouse's error, a
	// server error, instead of the flush's own 4xx).
	exprs := make([]string, len(s.PartitionBy))
	for i, p := range s.PartitionBy {
		exprs[i] = "toString(" + chsql.QuoteIdent(p) + ")"
	}
	keyExpr := exprs[0]
	if len(exprs) > 1 {
		// The key's own form: the values joined by NUL.
		keyExpr = "concat(" + strings.Join(exprs, ", '\\0', ") + ")"
	}
	found := map[string]bool{}
	for chunk := range slices.Chunk(ask, partitionLookupChunk) {
		sums := make([]string, len(chunk))
		for i, k := range chunk {
			sum := md5.Sum([]byte(k))
			sums[i] = "'" + strings.ToUpper(hex.EncodeToString(sum[:])) + "'"
		}
		q := "SELECT DISTINCT " + strings.Join(exprs, ", ") + " FROM " + chsql.Table(s.Schema, s.Table) +
			" WHERE hex(MD5(" + keyExpr + ")) IN (" + strings.Join(sums, ", ") + ")"
		res, err := e.St.Query(ctx, q)
		if err != nil {
			return nil, fmt.Errorf("table %s: look up partitions: %w", core.Display(s.Schema, s.Table), err)
		}
		for _, r := range res.Rows {
			parts := make([]string, len(r))
			for i, v := range r {
				parts[i] = fmt.Sprint(v)
			}
			found[strings.Join(parts, "\x00")] = true
		}
	}
	var exist, missing []string
	for _, k := range ask {
		if found[k] {
			exist = append(exist, k)
		} else {
			missing = append(missing, k)
		}
	}
	knownPartitions.add(s.ID, exist)
	return missing, nil
}

// StreamFlush is one record pack to write.
type StreamFlush struct {
	// ID names the flush (the client's pack id and sequence); the same ID
	// never writes its rows twice. "" gets a random one.
	ID string
	// Reader yields the pack's rows (format ARROW or JSON).
	Reader rowio.Reader
	// Typed says the payload carries types (Arrow), which strict sessions
	// compare with the table's.
	Typed bool
	// Records is the pack's record count as the client counted it, or -1
	// when unknown; it tells a complete earlier attempt from a partial one.
	Records int64
	// Attempt numbers the client's attempts of this flush from 1; 0 when
	// the client does not number them (see fence.go).
	Attempt int
}

// FlushStream writes one record pack of a session: all its rows or none.
// It returns the rows written. A flush whose ID already committed returns
// its row count again without writing.
func (e *Writer) FlushStream(ctx context.Context, s StreamSession, f StreamFlush) (int64, error) {
	// No attempt writes past MaxAttempt: a retry's lock relies on it.
	ctx, cancel := context.WithTimeout(ctx, e.maxAttempt())
	defer cancel()
	// Its commit's open mark names the process's lease (writerlease).
	ctx, release := e.HoldLease(ctx)
	defer release()
	table := core.Display(s.Schema, s.Table)
	spec, err := e.streamTable(ctx, s.Schema, s.Table)
	if err != nil {
		return 0, err
	}
	// A keyed table's flush is staged and shown whole (see keyed.go).
	keyed := spec.Keyed()
	if err := checkSessionSchema(s, spec); err != nil {
		return 0, err
	}
	src := f.Reader.Columns()
	target := core.TableTarget(s.Schema, s.Table, spec, spec.Columns)
	target.Commit = flushCommit(s.ID, f.ID, f.Attempt)
	mapping, err := packMapping(s, f.Typed, src, target, spec)
	if err != nil {
		return 0, err
	}
	// A repeated flush (a client retry after a lost answer) must not write
	// twice. A client that numbers its attempts is fenced across any
	// number of write services (fence.go); one that does not (attempt 0)
	// gets the per-process lock of releases before 2026-12-05.
	var prior []uint64 // earlier attempts' commits a retry removes
	if f.ID != "" {
		// Attempts that reach this process run one after another, as
		// before attempts were numbered: a retry waits for the attempt it
		// repeats to finish, its own clean-up included, so that no reader
		// sees both meanwhile. Across processes the fence below holds.
		mu := &e.FlushLocks[core.FlushIDCommit(s.ID, f.ID)%uint64(len(e.FlushLocks))]
		mu.Lock()
		defer mu.Unlock()
	}
	switch {
	case f.ID == "":
	case f.Attempt == 0 && keyed:
		if _, n, done, err := e.keyedRetry(ctx, s, target, []uint64{target.Commit, core.LegacyFlushCommit(s.ID, f.ID)}, f.Records); err != nil || done {
			return n, err
		}
	case f.Attempt == 0:
		if n, done, err := e.legacyRetry(ctx, s, f, spec, target); err != nil || done {
			return n, err
		}
	case f.Attempt > 1:
		release, err := e.lockFlush(ctx, s.ID, f.ID)
		if err != nil {
			return 0, err
		}
		defer release()
		latest, err := e.latestRetry(ctx, s.ID, f.ID)
		if err != nil {
			return 0, err
		}
		if latest > f.Attempt {
			return 0, fmt.Errorf("flush %s into %s, attempt %d: %w (attempt %d)", f.ID, table, f.Attempt, ErrSuperseded, latest)
		}
		prior = priorCommits(s.ID, f.ID, f.Attempt)
		if changes.Tracked(spec) {
			commit, n, found, err := e.registeredCommit(ctx, target, prior)
			if err != nil {
				return 0, err
			}
			if found {
				// An earlier attempt's rows are whole and registered:
				// they are the flush's; anything else goes.
				if err := e.recordDecision(ctx, s, f, commit); err != nil {
					return 0, err
				}
				if keyed {
					return n, nil // a keyed table's earlier rows are replaced, never removed
				}
				if err := e.dropAttempts(ctx, target, without(prior, commit)); err != nil {
					return 0, fmt.Errorf("flush %s into %s: %w", f.ID, table, err)
				}
				return n, nil
			}
		}
		if keyed {
			commit, n, done, err := e.keyedRetry(ctx, s, target, prior, f.Records)
			if err != nil {
				return 0, err
			}
			if done {
				return n, e.recordDecision(ctx, s, f, commit)
			}
		}
		if err := e.recordDecision(ctx, s, f, target.Commit); err != nil {
			return 0, err
		}
		if !keyed {
			if err := e.dropAttempts(ctx, target, prior); err != nil {
				return 0, fmt.Errorf("flush %s into %s: %w", f.ID, table, err)
			}
		}
	}
	parts, err := partitionSources(s, spec, target, mapping, len(src))
	if err != nil {
		return 0, err
	}
	into := target
	var stg *staging.Stage
	if keyed {
		if stg, err = staging.New(ctx, e.St, target, changes.StageKey(spec)); err != nil {
			return 0, err
		}
		defer stg.Drop(context.WithoutCancel(ctx))
		into = stg.Into(target)
	}
	// Opened before any row can show; registering closes it.
	if err := e.OpenLoads(ctx, target, []uint64{target.Commit}); err != nil {
		return 0, err
	}
	in, err := e.St.NewInserter(ctx, into.DB, into.Table, into.Cols, core.CommitColumn, into.Commit)
	if err != nil {
		return 0, err
	}
	written, read := false, int64(0)
	published := false // a keyed flush's staged rows went to the table (in part, on a cluster)
	fail := func(err error) (int64, error) {
		in.Abort()
		// A fresh context, as ctx may be done.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		if written && !keyed {
			// Blocks already sent are visible: take them back so that the
			// flush leaves nothing.
			if derr := e.DropCommit(cctx, target, target.Commit); derr != nil {
				return 0, fmt.Errorf("%w (and removing its rows already written failed: %v)", err, derr)
			}
		}
		// Closed once its rows are gone. A keyed flush's published rows
		// stay (they are taken by a retry, keyed.go): its commit stays
		// open, so that they show only once registered.
		if !published {
			if cerr := e.AbandonLoads(cctx, target, []uint64{target.Commit}); cerr != nil {
				return 0, fmt.Errorf("%w (and %v)", err, cerr)
			}
		}
		return 0, err
	}
	for {
		b, err := f.Reader.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fail(&StreamError{Code: tunnel.CodeBadPayload, Msg: fmt.Sprintf("record pack for %s: %v", table, err), Err: err})
		}
		if len(b.Errors) > 0 {
			return fail(streamErr(tunnel.CodeBadPayload, "record pack for %s, record %d: %s (nothing of this flush was written)", table, b.Errors[0].Line, b.Errors[0].Msg))
		}
		read += int64(b.Rows)
		if parts != nil {
			if b, err = e.routePartitions(ctx, &s, parts, b, table); err != nil {
				return fail(err)
			}
		}
		errs, err := in.Add(b, mapping)
		if err != nil {
			return fail(err)
		}
		if len(errs) > 0 {
			return fail(streamErr(tunnel.CodeBadPayload, "record pack for %s, record %d: %s (nothing of this flush was written)", table, errs[0].Line, errs[0].Msg))
		}
		written = written || in.Sent() > 0
	}
	if f.Records >= 0 && read != f.Records {
		// A body cut short can still end on a message boundary.
		return fail(streamErr(tunnel.CodeBadPayload, "record pack for %s holds %d records but the client sent %d: it was cut short; nothing of this flush was written", table, read, f.Records))
	}
	written = true
	n, err := in.Close()
	if err != nil {
		return fail(err)
	}
	if f.Attempt == 1 && f.ID != "" {
		sup, err := e.superseded(ctx, s.ID, f.ID)
		if err != nil {
			return fail(err)
		}
		if sup {
			return fail(fmt.Errorf("flush %s into %s: %w", f.ID, table, ErrSuperseded))
		}
	}
	if keyed {
		// Shown whole, the rows they replace kept first (tracked).
		published = true
		if err := e.PublishStaged(ctx, stg, target); err != nil {
			return fail(err)
		}
		if err := e.TrackLoad(ctx, s.Schema, s.Table, target.Commit, n); err != nil {
			return fail(err)
		}
		return n, nil
	}
	if len(prior) > 0 {
		// Blocks of an earlier attempt still dying when we looked.
		if err := e.DropCommits(ctx, target, prior); err != nil {
			return fail(err)
		}
	}
	if changes.Tracked(spec) && n > 0 {
		if err := e.RegisterCommit(ctx, s.Schema, s.Table, target.Commit, changes.CommitInsert, n); err != nil {
			return fail(err)
		}
	} else if err := e.AbandonLoads(ctx, target, []uint64{target.Commit}); err != nil {
		return n, err
	}
	return n, nil
}

// packMapping says, for each column of target, which column of a record
// pack (src) feeds it, or -1. A pack column the table lacks is a bad
// payload; a typed pack's column of another type is a schema mismatch
// unless the session allows one.
func packMapping(s StreamSession, typed bool, src []rowio.Column, target core.LoadTarget, spec catalog.TableSpec) ([]int, error) {
	table := core.Display(s.Schema, s.Table)
	mapping := make([]int, len(target.Cols))
	for i := range mapping {
		mapping[i] = -1
	}
	for j, c := range src {
		i := -1
		for k, t := range target.Cols {
			if strings.EqualFold(t.Name, c.Name) {
				i = k
				break
			}
		}
		if i < 0 {
			return nil, streamErr(tunnel.CodeBadPayload, "the record pack has a column %s that table %s does not have (columns: %s)", c.Name, table, columnNames(spec.Columns))
		}
		if typed && !s.AllowMismatch && c.Type != "" && !sameBaseType(c.Type, target.Cols[i].Type) {
			return nil, streamErr(tunnel.CodeSchemaMismatch, "column %s of table %s is %s but the record pack has %s: write values of the column's type, or open the session allowing schema mismatch",
				c.Name, table, target.Cols[i].Type, c.Type)
		}
		mapping[i] = j
	}
	return mapping, nil
}

// ErrStoreUnavailable marks a flush that failed because ClickHouse did not
// answer a check it needed before writing: nothing was written, and
// retrying the flush is safe (the write service answers 503).
var ErrStoreUnavailable = errors.New("ClickHouse did not answer")

// flushCommit derives the commit id of a flush's attempt from its
// session, flush id and attempt number.
func flushCommit(session, flush string, attempt int) uint64 {
	if flush == "" {
		return core.RandomCommit()
	}
	return core.FlushAttemptCommit(session, flush, attempt)
}

func without(ids []uint64, id uint64) []uint64 {
	out := make([]uint64, 0, len(ids))
	for _, c := range ids {
		if c != id {
			out = append(out, c)
		}
	}
	return out
}

// legacyRetry is the check of a flush whose client does not number its
// attempts, made under the caller's lock of the flush: one lock per
// process serialises attempts that reach this process, so write services
// need session affinity for such clients. done says the flush already committed (n rows) and nothing is to write.
func (e *Writer) legacyRetry(ctx context.Context, s StreamSession, f StreamFlush, spec catalog.TableSpec, target core.LoadTarget) (n int64, done bool, err error) {
	table := target.Display
	for _, commit := range []uint64{target.Commit, core.LegacyFlushCommit(s.ID, f.ID)} {
		n, err := e.CommitRows(ctx, s.Schema, s.Table, commit)
		if err != nil {
			return 0, false, fmt.Errorf("flush %s into %s: %w: %w", f.ID, table, ErrStoreUnavailable, err)
		}
		if n == 0 {
			continue
		}
		if n == f.Records {
			if changes.Tracked(spec) {
				// The earlier attempt may have stopped before its
				// change-log entry; registering is idempotent.
				if err := e.RegisterCommit(ctx, s.Schema, s.Table, commit, changes.CommitInsert, n); err != nil {
					return 0, false, err
				}
			}
			return n, true, nil
		}
		// Part of an earlier attempt (or an attempt of unknown size)
		// is there: remove it and write the pack whole.
		if err := e.DropCommit(ctx, target, commit); err != nil {
			return 0, false, fmt.Errorf("flush %s into %s: %w", f.ID, table, err)
		}
	}
	return 0, false, nil
}

// checkSessionSchema refuses a flush when the table changed since the
// session opened, unless the session allows a compatible mismatch and each
// of its columns is still there with the same type.
func checkSessionSchema(s StreamSession, spec catalog.TableSpec) error {
	if spec.SchemaVersion == s.Version {
		return nil
	}
	table := core.Display(s.Schema, s.Table)
	why := fmt.Sprintf("table %s changed from schema version %d to %d since the session opened", table, s.Version, spec.SchemaVersion)
	if !s.AllowMismatch {
		return streamErr(tunnel.CodeSchemaMismatch, "%s: open a new session to write with the new schema", why)
	}
	for _, c := range s.Columns {
		found := false
		for _, n := range spec.Columns {
			if strings.EqualFold(n.Name, c.Name) {
				found = n.CHType == c.CHType
				if !found {
					return streamErr(tunnel.CodeSchemaMismatch, "%s and column %s is now %s (was %s): open a new session", why, c.Name, n.Type, c.Type)
				}
			}
		}
		if !found {
			return streamErr(tunnel.CodeSchemaMismatch, "%s and column %s was dropped: open a new session", why, c.Name)
		}
	}
	return nil
}

// sameBaseType says whether a payload column of ClickHouse type payload
// (as the Arrow reader maps it) carries the table column's type: the
// client sends each column as formats.ArrowType of the table's type, whose
// reverse mapping need not be the same name (Bool arrives as UInt8, Date32
// as Date), so both sides are compared as Arrow types.
func sameBaseType(payload, table string) bool {
	ap, _, err1 := rowio.ArrowType(payload)
	at, _, err2 := rowio.ArrowType(table)
	if err1 != nil || err2 != nil {
		bp, _ := schemas.BaseOf(payload)
		bt, _ := schemas.BaseOf(table)
		return strings.ReplaceAll(bp, " ", "") == strings.ReplaceAll(bt, " ", "")
	}
	return arrow.TypeEqual(ap, at)
}

func columnNames(cols []catalog.ColumnSpec) string {
	names := make([]string, len(cols))
	for i, c := range cols {
		names[i] = c.Name
	}
	return strings.Join(names, ", ")
}

// partitionPlan says where each partition column's values come from.
type partitionPlan struct {
	cols    []int    // target column index of each partition column
	types   []string // its ClickHouse type
	fixed   []string // session's fixed values (nil: dynamic)
	payload []int    // source column of each, or -1
	extra   int      // index in the batch of the first constant vector
}

// partitionSources prepares partition routing, or returns nil for an
// unpartitioned table. With a fixed partition, constant vectors appended
// after the payload's columns feed the partition columns.
func partitionSources(s StreamSession, spec catalog.TableSpec, target core.LoadTarget, mapping []int, nsrc int) (*partitionPlan, error) {
	if len(spec.PartitionBy) == 0 {
		return nil, nil
	}
	p := &partitionPlan{fixed: s.Partition, extra: nsrc}
	for k, name := range spec.PartitionBy {
		i := -1
		for j, t := range target.Cols {
			if strings.EqualFold(t.Name, name) {
				i = j
			}
		}
		if i < 0 {
			return nil, fmt.Errorf("table %s: partition column %s is not a column", core.Display(s.Schema, s.Table), name)
		}
		p.cols = append(p.cols, i)
		p.types = append(p.types, target.Cols[i].Type)
		p.payload = append(p.payload, mapping[i])
		if p.fixed != nil {
			mapping[i] = nsrc + k
		} else if mapping[i] < 0 {
			return nil, streamErr(tunnel.CodeBadPayload, "the record pack has no partition column %s: write it like any column, or open the session on a partition (partition spec)", name)
		}
	}
	return p, nil
}

// routePartitions checks each row's partition: with a fixed partition the
// row must not name another one; with dynamic partitions every partition
// the rows go to must exist unless the session creates partitions.
func (e *Writer) routePartitions(ctx context.Context, s *StreamSession, p *partitionPlan, b *rowio.Batch, table string) (*rowio.Batch, error) {
	key := make([]string, len(p.cols))
	seen := map[string]int{}
	for r := 0; r < b.Rows; r++ {
		for k := range p.cols {
			src := p.payload[k]
			if src < 0 {
				key[k] = p.fixed[k]
				continue
			}
			v, null := cellText(&b.Cols[src], r)
			if null {
				return nil, streamErr(tunnel.CodeBadPayload, "record pack for %s, record %d: partition column %s is NULL", table, lineOf(b, r), s.PartitionBy[k])
			}
			n, err := normalizePartValue(p.types[k], v)
			if err != nil {
				return nil, streamErr(tunnel.CodeBadPayload, "record pack for %s, record %d: partition column %s: %v", table, lineOf(b, r), s.PartitionBy[k], err)
			}
			if p.fixed != nil && n != p.fixed[k] {
				return nil, streamErr(tunnel.CodeBadPayload, "record pack for %s, record %d: %s is %s but the session writes partition %s", table, lineOf(b, r), s.PartitionBy[k], n, s.PartitionSpec)
			}
			key[k] = n
		}
		if p.fixed == nil {
			k := strings.Join(key, "\x00")
			if _, ok := seen[k]; !ok {
				seen[k] = r
			}
		}
	}
	if p.fixed == nil && !s.CreatePartition {
		keys := make([]string, 0, len(seen))
		for k := range seen {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		missing, err := e.missingPartitions(ctx, s, keys)
		if err != nil {
			return nil, err
		}
		if len(missing) > 0 {
			return nil, streamErr(tunnel.CodeNoSuchPartition, "table %s has no partition %s (record %d): open the session with create partition set to create partitions as rows arrive",
				table, partitionName(s.PartitionBy, missing[0]), lineOf(b, seen[missing[0]]))
		}
	}
	if p.fixed == nil {
		return b, nil
	}
	out := *b
	out.Cols = append(append(make([]rowio.Vector, 0, len(b.Cols)+len(p.fixed)), b.Cols...), constVectors(p.fixed, b.Rows)...)
	return &out, nil
}

func partitionName(cols []string, key string) string {
	vals := strings.Split(key, "\x00")
	parts := make([]string, len(cols))
	for i, c := range cols {
		parts[i] = c + "=" + vals[i]
	}
	return strings.Join(parts, ",")
}

func constVectors(vals []string, rows int) []rowio.Vector {
	out := make([]rowio.Vector, len(vals))
	for i, v := range vals {
		cell := []byte(v)
		text := make([][]byte, rows)
		for r := range text {
			text[r] = cell
		}
		out[i] = rowio.Vector{Text: text}
	}
	return out
}

// cellText renders one cell as text, whatever the vector holds.
func cellText(v *rowio.Vector, r int) (string, bool) {
	if v.Arrow != nil {
		if v.Arrow.IsNull(r) {
			return "", true
		}
		return v.Arrow.ValueStr(r), false
	}
	if v.Null != nil && v.Null[r] {
		return "", true
	}
	return string(v.Text[r]), false
}

func lineOf(b *rowio.Batch, r int) int64 {
	if r < len(b.Line) {
		return b.Line[r]
	}
	return int64(r + 1)
}

// IsStreamError reports whether err is the writer's to fix, and its code.
func IsStreamError(err error) (tunnel.ErrorCode, bool) {
	var se *StreamError
	if errors.As(err, &se) {
		return se.Code, true
	}
	return "", false
}

// dropAttempts removes what earlier attempts of a flush (commits, fenced
// off by now) left, rows and then open marks: an attempt that died
// between opening its commit and registering or abandoning it left its
// mark, which no one else would close.
func (e *Writer) dropAttempts(ctx context.Context, target core.LoadTarget, commits []uint64) error {
	if err := e.DropCommits(ctx, target, commits); err != nil {
		return err
	}
	return e.CloseAbandoned(ctx, target, commits)
}
