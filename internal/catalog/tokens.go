package catalog

import "time"

// KindWriteToken is a token of the write service (workspace-wide: schema
// ""). Its spec holds the token's hash, never the token.
const KindWriteToken Kind = "write_token"

// WriteTokenSpec is a write-service token: what it may write, and the
// SHA-256 of its secret part.
type WriteTokenSpec struct {
	// Scope is "all", "schema:<schema>" or "table:<schema>.<table>".
	Scope     string
	Hash      string // hex SHA-256 of the token's secret part
	CreatedAt time.Time
	Comment   string `json:",omitempty"`
}
