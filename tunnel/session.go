package tunnel

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"

	"github.com/lakepipe/lakepipe/internal/codec"
)

// DefaultCompression is the Content-Encoding of flush bodies when neither
// the session nor the pack names one: identity (none). ClickZetta
// Lakehouse's SDKs default to zlib since 0.51.2, but on the loopback path the write
// service is meant for (next to the writer) zlib costs more than it
// saves. Measured on 2 cores: a 64 MiB pack of (BIGINT, STRING, DOUBLE)
// rows takes ~150 ms to compress (zlib level 1; level 6 twice that) and
// ~100 ms to decompress, and 10,000,000 rows pushed through the client
// (BenchmarkPush) took ~115 ns a row with zlib against ~65 with identity,
// ~75 with snappy and ~90 with lz4 (those two send 2.3-2.6× fewer bytes,
// zlib 4×). Choose deflate for slow links, snappy or lz4 for a cheap
// middle way.
const DefaultCompression = CompressNone

// SessionBuilder collects the settings of a stream upload session; Build
// opens it. Setters return the builder so calls chain, as in the Java SDK:
//
//	s, err := c.BuildStreamUploadSession("", "events").SetCreatePartition(true).Build(ctx)
type SessionBuilder struct {
	c           *Client
	req         CreateSessionRequest
	compression string
}

// BuildStreamUploadSession starts building a session on schema.table;
// schema "" is the client's WithSchema, or else the server's default.
func (c *Client) BuildStreamUploadSession(schema, table string) *SessionBuilder {
	if schema == "" {
		schema = c.schema
	}
	return &SessionBuilder{c: c, req: CreateSessionRequest{Schema: schema, Table: table}}
}

// SetPartitionSpec fixes the partition every row goes to ("dt=20231001"
// or "dt=20231001,region=hz"); the partition columns are then not part of
// the session's records. Empty (the default) means dynamic partitions:
// records carry their partition columns like any other column.
func (b *SessionBuilder) SetPartitionSpec(spec string) *SessionBuilder {
	b.req.PartitionSpec = spec
	return b
}

// SetCreatePartition lets rows go to partitions that hold no data yet
// (default false: such a flush fails with ErrNoSuchPartition).
func (b *SessionBuilder) SetCreatePartition(create bool) *SessionBuilder {
	b.req.CreatePartition = create
	return b
}

// SetSchemaVersion pins the table schema version the writer was built for
// (default "": the latest).
func (b *SessionBuilder) SetSchemaVersion(version string) *SessionBuilder {
	b.req.SchemaVersion = version
	return b
}

// AllowSchemaMismatch lets the session keep flushing after the table's
// schema changed, as long as its columns still exist with the same types
// (after ADD COLUMN, say). The default is false, strict as the Go SDK of
// the ClickZetta Lakehouse documentation is: any schema change makes flush fail with ErrSchemaMismatch.
func (b *SessionBuilder) AllowSchemaMismatch(allow bool) *SessionBuilder {
	b.req.AllowSchemaMismatch = allow
	return b
}

// SetSlotNum sets how many flushes of the session the server runs at once
// (default 0: the server decides).
func (b *SessionBuilder) SetSlotNum(n int) *SessionBuilder {
	b.req.SlotNum = n
	return b
}

// SetCompressor sets the default compression of the session's packs: a
// Content-Encoding name of wire.go (identity, deflate, snappy, lz4; "zlib"
// and "none" are accepted too). Default DefaultCompression.
func (b *SessionBuilder) SetCompressor(encoding string) *SessionBuilder {
	b.compression = encoding
	return b
}

// Build opens the session (POST /v1/streams). It fails with ErrNoSuchPartition
// when a fixed partition does not exist and CreatePartition is off, with
// *Error for other refusals, and before any request when the compression
// is unknown or a setting is invalid.
func (b *SessionBuilder) Build(ctx context.Context) (*StreamUploadSession, error) {
	if b.req.Table == "" {
		return nil, errors.New("tunnel: build session: no table")
	}
	if b.req.SlotNum < 0 {
		return nil, fmt.Errorf("tunnel: build session on %s: negative slot number %d", b.target(), b.req.SlotNum)
	}
	comp := b.compression
	if comp == "" {
		comp = DefaultCompression
	}
	comp, err := codec.Canonical(comp)
	if err != nil {
		return nil, fmt.Errorf("tunnel: build session on %s: %w", b.target(), err)
	}
	var info SessionInfo
	if err := b.c.doJSON(ctx, http.MethodPost, b.c.streamURL("", ""), &b.req, &info); err != nil {
		return nil, fmt.Errorf("tunnel: create session on %s: %w", b.target(), err)
	}
	return newSession(b.c, info, comp)
}

func (b *SessionBuilder) target() string {
	if b.req.Schema == "" {
		return b.req.Table
	}
	return b.req.Schema + "." + b.req.Table
}

// SessionOption configures CreateStreamUploadSession; each sets what the
// SessionBuilder method of the same meaning sets.
type SessionOption func(*SessionBuilder)

// WithPartitionKey is SetPartitionSpec.
func WithPartitionKey(spec string) SessionOption {
	return func(b *SessionBuilder) { b.SetPartitionSpec(spec) }
}

// WithCreatePartition is SetCreatePartition(true).
func WithCreatePartition() SessionOption {
	return func(b *SessionBuilder) { b.SetCreatePartition(true) }
}

// WithSchemaVersion is SetSchemaVersion.
func WithSchemaVersion(version string) SessionOption {
	return func(b *SessionBuilder) { b.SetSchemaVersion(version) }
}

// WithAllowSchemaMismatch is AllowSchemaMismatch.
func WithAllowSchemaMismatch(allow bool) SessionOption {
	return func(b *SessionBuilder) { b.AllowSchemaMismatch(allow) }
}

// WithSlotNum is SetSlotNum.
func WithSlotNum(n int) SessionOption {
	return func(b *SessionBuilder) { b.SetSlotNum(n) }
}

// WithCompressor is SetCompressor.
func WithCompressor(encoding string) SessionOption {
	return func(b *SessionBuilder) { b.SetCompressor(encoding) }
}

// CreateStreamUploadSession opens a session on schema.table, the Go SDK
// way; it is BuildStreamUploadSession(schema, table), the options applied,
// then Build.
func (c *Client) CreateStreamUploadSession(ctx context.Context, schema, table string, opts ...SessionOption) (*StreamUploadSession, error) {
	b := c.BuildStreamUploadSession(schema, table)
	for _, o := range opts {
		o(b)
	}
	return b.Build(ctx)
}

// GetStreamUploadSession attaches to an open session by id (GET
// /v1/streams/{id}), for example one created by another process. Its packs
// use DefaultCompression unless told otherwise.
func (c *Client) GetStreamUploadSession(ctx context.Context, id string) (*StreamUploadSession, error) {
	var info SessionInfo
	if err := c.doJSON(ctx, http.MethodGet, c.streamURL(id, ""), nil, &info); err != nil {
		return nil, fmt.Errorf("tunnel: get session %s: %w", id, err)
	}
	return newSession(c, info, DefaultCompression)
}

// StreamUploadSession is an open session on one table. Rows written
// through its packs are visible when the pack's Flush returns. A session
// is safe for concurrent use and may have any number of packs. It stays
// open until Close, or until the server forgets it: flushes then fail with
// ErrNoSuchSession and a new session is needed.
type StreamUploadSession struct {
	c           *Client
	info        SessionInfo
	l           *layout
	compression string
}

func newSession(c *Client, info SessionInfo, compression string) (*StreamUploadSession, error) {
	if info.ID == "" {
		return nil, errors.New("tunnel: server answered a session without an id")
	}
	l, err := newLayout(info)
	if err != nil {
		return nil, fmt.Errorf("tunnel: session %s: %w", info.ID, err)
	}
	return &StreamUploadSession{c: c, info: info, l: l, compression: compression}, nil
}

// ID returns the server's session id.
func (s *StreamUploadSession) ID() string { return s.info.ID }

// Info returns the session as the server described it when it was opened.
func (s *StreamUploadSession) Info() SessionInfo {
	info := s.info
	info.Columns = slices.Clone(info.Columns)
	info.Compressions = slices.Clone(info.Compressions)
	return info
}

// Schema returns the columns of the session's records, in table order:
// every column of the table except, when the session has a fixed
// partition spec, the partition columns. AppendRow takes its values in
// this order and SetAt its indexes.
func (s *StreamUploadSession) Schema() []Column { return slices.Clone(s.l.cols) }

// SchemaVersion returns the table schema version the session writes to.
func (s *StreamUploadSession) SchemaVersion() string { return s.info.SchemaVersion }

// String names the session and its table.
func (s *StreamUploadSession) String() string {
	t := s.info.Table
	if s.info.Schema != "" {
		t = s.info.Schema + "." + t
	}
	return fmt.Sprintf("tunnel.StreamUploadSession(%s on %s)", s.info.ID, t)
}

// NewRecord returns an empty record (every value unset) of the session's
// schema.
func (s *StreamUploadSession) NewRecord() *Record { return newRecord(s.l) }

// Close ends the session (DELETE /v1/streams/{id}). Rows already flushed
// stay; packs of the session cannot flush afterwards. Closing a session
// the server no longer knows is not an error.
func (s *StreamUploadSession) Close(ctx context.Context) error {
	err := s.c.doJSON(ctx, http.MethodDelete, s.c.streamURL(s.info.ID, ""), nil, nil)
	if err != nil && !errors.Is(err, ErrNoSuchSession) {
		return fmt.Errorf("tunnel: close session %s: %w", s.info.ID, err)
	}
	return nil
}
