package tunnel

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// Sentinel errors, matched with errors.Is against the *Error a call
// returns.
var (
	// ErrSchemaMismatch: the table's schema is no longer the one the
	// session was built for (409 SchemaMismatch). A retry cannot fix it:
	// the pack that saw it is unusable; build a new session, which reads
	// the current schema, and a new pack.
	ErrSchemaMismatch = errors.New("tunnel: schema mismatch")
	// ErrUnauthorized: the token is missing or wrong (401).
	ErrUnauthorized = errors.New("tunnel: unauthorized")
	// ErrNoSuchPartition: rows go to a partition that holds no data and
	// the session was built without CreatePartition (404 NoSuchPartition).
	ErrNoSuchPartition = errors.New("tunnel: no such partition")
	// ErrNoSuchSession: the server does not know the session (404
	// NoSuchSession), for example after Close or a server restart.
	ErrNoSuchSession = errors.New("tunnel: no such session")
	// ErrTooLarge: a flush body is larger than the server accepts (413).
	// Nothing was written.
	ErrTooLarge = errors.New("tunnel: flush too large")
)

// Error is an error answer of the server: its HTTP status and the code,
// message and trace id of its ErrorBody. Code is one of the Code*
// constants, or "" when the answer was not an ErrorBody (a proxy's 502,
// say). Error never holds the client's token.
type Error struct {
	Status  int
	Code    ErrorCode
	Message string
	TraceID string
}

func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "server answered %d", e.Status)
	if e.Code != "" {
		b.WriteString(" " + string(e.Code))
	} else if t := http.StatusText(e.Status); t != "" {
		b.WriteString(" " + t)
	}
	if e.Message != "" {
		b.WriteString(": " + e.Message)
	}
	if e.TraceID != "" {
		b.WriteString(" (trace " + e.TraceID + ")")
	}
	return b.String()
}

// Is matches the sentinel errors by code, and by status when the answer
// had no code (401 is ErrUnauthorized, 413 ErrTooLarge).
func (e *Error) Is(target error) bool {
	switch target {
	case ErrSchemaMismatch:
		return e.Code == CodeSchemaMismatch
	case ErrUnauthorized:
		return e.Code == CodeUnauthorized || (e.Code == "" && e.Status == http.StatusUnauthorized)
	case ErrNoSuchPartition:
		return e.Code == CodeNoSuchPartition
	case ErrNoSuchSession:
		return e.Code == CodeNoSuchSession
	case ErrTooLarge:
		return e.Code == CodeTooLarge || (e.Code == "" && e.Status == http.StatusRequestEntityTooLarge)
	}
	return false
}

// CodeTimeout: the server stopped waiting for a request body that
// stalled or came too slowly (408); nothing of the flush was written, and
// the same request may succeed later.
const CodeTimeout ErrorCode = "Timeout"

// Temporary reports whether the same request may succeed later: 408
// (a body that came too slowly), 429 and 5xx answers are temporary, other
// statuses are not.
func (e *Error) Temporary() bool {
	return e.Status == http.StatusRequestTimeout || e.Status == http.StatusTooManyRequests || e.Status >= 500
}

// IsSchemaMismatch reports whether err is, or wraps, a schema mismatch:
// the session must be rebuilt before more rows can be written.
func IsSchemaMismatch(err error) bool { return errors.Is(err, ErrSchemaMismatch) }

// CodeForbidden: the token is valid but its scope does not cover the
// table (403); a token for that table (or a wider one) is needed.
const CodeForbidden ErrorCode = "Forbidden"
