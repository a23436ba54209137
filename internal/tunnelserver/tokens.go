package tunnelserver

import (
	"context"
	"crypto/sha256"
	"sync"
	"time"

	"github.com/lakepipe/lakepipe/internal/engine"
)

// DefaultTokenCacheTTL is how long an answer about a write token is
// reused: a revoked token is refused at most this long after the
// revocation, and a flood of requests costs a catalog read per distinct
// token per TTL.
const DefaultTokenCacheTTL = 5 * time.Second

// tokenCacheMax bounds the answers kept: a flood of distinct bad tokens
// must not grow it without bound. Past it the cache starts afresh.
const tokenCacheMax = 10_000

// tokenChecker answers "what may this token write", remembering answers
// for a short while. Keys are SHA-256 of the token, so the cache holds no
// token.
type tokenChecker struct {
	check func(ctx context.Context, token string) (engine.TokenScope, bool, error)
	ttl   time.Duration

	mu      sync.Mutex
	answers map[[32]byte]tokenAnswer
}

type tokenAnswer struct {
	scope engine.TokenScope
	ok    bool
	until time.Time
}

func (c *tokenChecker) scope(ctx context.Context, token string) (engine.TokenScope, bool, error) {
	key := sha256.Sum256([]byte(token))
	now := time.Now()
	c.mu.Lock()
	if a, hit := c.answers[key]; hit && now.Before(a.until) {
		c.mu.Unlock()
		return a.scope, a.ok, nil
	}
	c.mu.Unlock()
	scope, ok, err := c.check(ctx, token)
	if err != nil && err != engine.ErrNotWriteToken {
		return engine.TokenScope{}, false, err // the catalog failed: ask again next time
	}
	c.mu.Lock()
	if c.answers == nil || len(c.answers) >= tokenCacheMax {
		c.answers = map[[32]byte]tokenAnswer{}
	}
	c.answers[key] = tokenAnswer{scope: scope, ok: ok, until: now.Add(c.ttl)}
	c.mu.Unlock()
	return scope, ok, nil
}

type scopeKey struct{}

// scopeOf is the scope the request's token grants (set by ServeHTTP).
func scopeOf(ctx context.Context) engine.TokenScope {
	s, ok := ctx.Value(scopeKey{}).(engine.TokenScope)
	if !ok {
		return engine.TokenScope{}
	}
	return s
}
