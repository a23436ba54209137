package tunnel

// The HTTP API of the write service (`lakepipe serve`). The Go client in
// this package speaks it; so can curl. Every request carries
// `Authorization: Bearer <token>`; without the configured token the answer
// is 401.
//
//	POST   /v1/streams                  CreateSessionRequest → 201 SessionInfo
//	GET    /v1/streams/{id}             → 200 SessionInfo
//	POST   /v1/streams/{id}/flush       record pack → 200 FlushResult
//	DELETE /v1/streams/{id}             → 204
//
// A flush body is one record pack: an Arrow IPC stream
// (Content-Type ContentTypeArrow) whose fields are named after table
// columns, or newline-delimited JSON objects (ContentTypeJSON) keyed by
// column name. Content-Encoding selects the compression: identity (none),
// deflate or zlib (RFC 1950 zlib), snappy (framed), lz4 (LZ4 frame).
// Columns a pack leaves out get NULL (or the column's zero value).
//
// A flush is synchronous and exactly-once: when it returns 200 every row is
// visible to SELECT, and a retried flush with the same HeaderFlushID never
// adds its rows twice. Errors are JSON ErrorBody objects with a stable
// code: 400 BadPayload/BadRequest, 401 Unauthorized, 404 NoSuchSession/
// NoSuchTable/NoSuchPartition, 409 SchemaMismatch, 413 TooLarge,
// 415 UnsupportedEncoding, 500 Internal.

// Content types of a flush body.
const (
	ContentTypeArrow = "application/vnd.apache.arrow.stream"
	ContentTypeJSON  = "application/x-ndjson"
)

// Request and response headers.
const (
	// HeaderFlushID names one flush of one pack (pack id and sequence);
	// a retry with the same id is answered without writing twice.
	HeaderFlushID = "Lakepipe-Flush-Id"
	// HeaderFlushAttempt numbers the attempts of one flush id from 1; a
	// client sends attempt a+1 only after giving up on attempt a. With it
	// any number of write services behind a balancer write the flush once
	// (without it, a service serialises only the attempts it receives).
	HeaderFlushAttempt = "Lakepipe-Flush-Attempt"
	// HeaderRecordCount is the number of records in the pack as the
	// client counted them; with it a retry can tell a complete earlier
	// attempt from a partial one without rewriting (optional).
	HeaderRecordCount = "Lakepipe-Record-Count"
	// HeaderTimeout is the flush timeout in milliseconds the client
	// waits; the server gives up (and writes nothing) after it.
	HeaderTimeout = "Lakepipe-Timeout-Ms"
	// HeaderTraceID is set on every response, errors included.
	HeaderTraceID = "Lakepipe-Trace-Id"
)

// Compression names accepted in Content-Encoding.
const (
	CompressNone   = "identity"
	CompressZlib   = "deflate"
	CompressSnappy = "snappy"
	CompressLZ4    = "lz4"
)

// ErrorCode is the code of an error response; the server's engine uses
// the same values, so each has one definition.
type ErrorCode string

// Error codes.
const (
	CodeBadRequest          ErrorCode = "BadRequest"
	CodeBadPayload          ErrorCode = "BadPayload"
	CodeUnauthorized        ErrorCode = "Unauthorized"
	CodeNoSuchSession       ErrorCode = "NoSuchSession"
	CodeNoSuchTable         ErrorCode = "NoSuchTable"
	CodeNoSuchPartition     ErrorCode = "NoSuchPartition"
	CodeSchemaMismatch      ErrorCode = "SchemaMismatch"
	CodeTooLarge            ErrorCode = "TooLarge"
	CodeUnsupportedEncoding ErrorCode = "UnsupportedEncoding"
	CodeInternal            ErrorCode = "Internal"
)

// CreateSessionRequest opens a stream upload session on a table.
type CreateSessionRequest struct {
	// Schema and Table name the target; Schema "" is the server's default.
	Schema string `json:"schema,omitempty"`
	Table  string `json:"table"`
	// PartitionSpec ("dt=20231001" or "dt=20231001,region=hz") fixes the
	// partition every row goes to; empty means dynamic partitions: rows
	// carry their partition columns like any other column.
	PartitionSpec string `json:"partition_spec,omitempty"`
	// CreatePartition lets rows go to partitions that hold no data yet;
	// without it such a flush (or session) fails with NoSuchPartition.
	CreatePartition bool `json:"create_partition,omitempty"`
	// SchemaVersion pins the table schema version the writer was built
	// for; "" means the latest.
	SchemaVersion string `json:"schema_version,omitempty"`
	// AllowSchemaMismatch lets a session on an older schema version keep
	// flushing while its columns still exist with the same types (for
	// example after ADD COLUMN); otherwise any schema change makes flush
	// fail with SchemaMismatch.
	AllowSchemaMismatch bool `json:"allow_schema_mismatch,omitempty"`
	// SlotNum is how many flushes of this session the server runs at once
	// (0: automatic).
	SlotNum int `json:"slot_num,omitempty"`
}

// Column is one column of the session's schema.
type Column struct {
	Name string `json:"name"`
	// Type is the type as declared in SQL (DECIMAL(10,2)); CHType the
	// ClickHouse storage type (Nullable(Decimal(10, 2))).
	Type      string `json:"type"`
	CHType    string `json:"ch_type"`
	Partition bool   `json:"partition,omitempty"`
}

// SessionInfo describes an open session.
type SessionInfo struct {
	ID                  string   `json:"session_id"`
	Schema              string   `json:"schema"`
	Table               string   `json:"table"`
	SchemaVersion       string   `json:"schema_version"`
	Columns             []Column `json:"columns"`
	PartitionSpec       string   `json:"partition_spec,omitempty"`
	CreatePartition     bool     `json:"create_partition,omitempty"`
	AllowSchemaMismatch bool     `json:"allow_schema_mismatch,omitempty"`
	SlotNum             int      `json:"slot_num"`
	// Compressions lists the Content-Encoding values the server accepts.
	Compressions []string `json:"compressions"`
	// MaxFlushBytes is the largest flush body the server accepts.
	MaxFlushBytes int64 `json:"max_flush_bytes"`
}

// FlushResult is what a successful flush returns.
type FlushResult struct {
	TraceID     string `json:"trace_id"`
	RecordCount int64  `json:"record_count"`
	// FlushSize is the bytes of the flush body as sent (compressed).
	FlushSize int64 `json:"flush_size"`
}

// ErrorBody is the JSON body of every error response.
type ErrorBody struct {
	Error struct {
		Code    ErrorCode `json:"code"`
		Message string    `json:"message"`
		TraceID string    `json:"trace_id"`
	} `json:"error"`
}
