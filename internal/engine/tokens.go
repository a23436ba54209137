package engine

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/lakepipe/lakepipe/internal/catalog"
	"github.com/lakepipe/lakepipe/internal/core"
)

// Write-service tokens are "lpw.<name>.<secret>": the name finds the
// token's catalog entry, which holds the SHA-256 of the secret (256 random
// bits, so a plain hash suffices) and the token's scope. The token itself
// is shown once, when it is made.
const writeTokenPrefix = "lpw."

var tokenName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// WriteToken describes a write-service token, without its secret.
type WriteToken struct {
	Name      string
	Scope     string
	CreatedAt time.Time
}

// TokenScope is what a write token may write: everything, one schema's
// tables, or one table.
type TokenScope struct {
	All           bool
	Schema, Table string // Table "" for a whole schema
}

// ParseTokenScope reads "all", "schema:<s>" or "table:<s>.<t>".
func ParseTokenScope(s string) (TokenScope, error) {
	s = strings.TrimSpace(s)
	switch {
	case strings.EqualFold(s, "all"):
		return TokenScope{All: true}, nil
	case strings.HasPrefix(s, "schema:"):
		if name := strings.TrimPrefix(s, "schema:"); name != "" && !strings.Contains(name, ".") {
			return TokenScope{Schema: name}, nil
		}
	case strings.HasPrefix(s, "table:"):
		sch, tbl, ok := strings.Cut(strings.TrimPrefix(s, "table:"), ".")
		if ok && sch != "" && tbl != "" && !strings.Contains(tbl, ".") {
			return TokenScope{Schema: sch, Table: tbl}, nil
		}
	}
	return TokenScope{}, fmt.Errorf("token scope %q: want all, schema:<schema> or table:<schema>.<table>", s)
}

func (s TokenScope) String() string {
	switch {
	case s.All:
		return "all"
	case s.Table == "":
		return "schema:" + s.Schema
	}
	return "table:" + s.Schema + "." + s.Table
}

// Allows reports whether the scope covers schema.table.
func (s TokenScope) Allows(schema, table string) bool {
	switch {
	case s.All:
		return true
	case s.Table == "":
		return s.Schema == schema
	}
	return s.Schema == schema && s.Table == table
}

// CreateWriteToken makes a token of the write service with the given
// scope and returns it; only its hash is kept, so this is the one time
// it can be read.
func (e *Engine) CreateWriteToken(ctx context.Context, name string, scope TokenScope) (string, error) {
	if !tokenName.MatchString(name) {
		return "", fmt.Errorf("token name %q: use 1 to 64 letters, digits, '_' and '-'", name)
	}
	var old catalog.WriteTokenSpec
	ok, err := e.Cat.Get(ctx, catalog.KindWriteToken, core.GlobalSchema, name, &old)
	if err != nil {
		return "", err
	}
	if ok {
		return "", fmt.Errorf("write token %s already exists (revoke it first)", name)
	}
	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", err
	}
	secret := base64.RawURLEncoding.EncodeToString(raw[:])
	sum := sha256.Sum256([]byte(secret))
	spec := catalog.WriteTokenSpec{Scope: scope.String(), Hash: hex.EncodeToString(sum[:]), CreatedAt: time.Now().UTC()}
	if err := e.Cat.Put(ctx, catalog.KindWriteToken, core.GlobalSchema, name, spec, ""); err != nil {
		return "", err
	}
	return writeTokenPrefix + name + "." + secret, nil
}

// WriteTokens lists the write-service tokens, by name.
func (e *Engine) WriteTokens(ctx context.Context) ([]WriteToken, error) {
	objs, err := e.Cat.List(ctx, catalog.KindWriteToken, core.GlobalSchema)
	if err != nil {
		return nil, err
	}
	var out []WriteToken
	for _, o := range objs {
		var spec catalog.WriteTokenSpec
		if o.Decode(&spec) != nil {
			continue
		}
		out = append(out, WriteToken{Name: o.Name, Scope: spec.Scope, CreatedAt: spec.CreatedAt})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// RevokeWriteToken removes a token: requests carrying it are refused from
// then on (within the write service's token cache time).
func (e *Engine) RevokeWriteToken(ctx context.Context, name string) error {
	var spec catalog.WriteTokenSpec
	ok, err := e.Cat.Get(ctx, catalog.KindWriteToken, core.GlobalSchema, name, &spec)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("write token %s does not exist (lakepipe tokens list shows them)", name)
	}
	return e.Cat.Delete(ctx, catalog.KindWriteToken, core.GlobalSchema, name)
}

// ErrNotWriteToken is returned for a token that is not of the lpw. form.
var ErrNotWriteToken = errors.New("not a lakepipe write token")

// CheckWriteToken returns the scope of a valid token; ok is false for an
// unknown, revoked or wrong one. Errors are the catalog's (or
// ErrNotWriteToken).
func (e *Engine) CheckWriteToken(ctx context.Context, token string) (scope TokenScope, ok bool, err error) {
	rest, found := strings.CutPrefix(token, writeTokenPrefix)
	name, secret, found2 := strings.Cut(rest, ".")
	if !found || !found2 || !tokenName.MatchString(name) || secret == "" {
		return TokenScope{}, false, ErrNotWriteToken
	}
	var spec catalog.WriteTokenSpec
	got, err := e.Cat.Get(ctx, catalog.KindWriteToken, core.GlobalSchema, name, &spec)
	if err != nil || !got {
		return TokenScope{}, false, err
	}
	sum := sha256.Sum256([]byte(secret))
	want, err := hex.DecodeString(spec.Hash)
	if err != nil || subtle.ConstantTimeCompare(sum[:], want) != 1 {
		return TokenScope{}, false, nil
	}
	scope, err = ParseTokenScope(spec.Scope)
	if err != nil {
		return TokenScope{}, false, nil
	}
	return scope, true, nil
}

// DefaultSchema is the schema of names given without one.
func (e *Engine) DefaultSchema() string { return e.Cfg.Schema }
