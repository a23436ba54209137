package core

import (
	"strings"

	"github.com/lakepipe/lakepipe/internal/kafka"
	"github.com/lakepipe/lakepipe/internal/sqlast"
)

// SecretKeys are connection properties whose values are secrets.
var SecretKeys = map[string]bool{"access_key": true, "secret_key": true, "access_key_secret": true, "secret_access_key": true, "accesskey": true}

// Redact returns a statement's text, as Span gives it, with every secret
// literal replaced by '***': the value of a connection's ACCESS_KEY (or one of
// secretKeys' aliases), and in any map(…), such as READ_KAFKA's, the value of
// a key kafka.SecretKey calls secret (sasl.password, ssl.key.password, …).
// The literal is hidden by where it is written, quotes and escapes included,
// so a secret written with escapes (a doubled quote, a backslash) shows
// neither its value nor its spelling, and the result still parses. An empty
// secret is left as it is. Every output of a statement (--echo, the demo,
// errors and logs, the stored COPY statement of a Kafka pipe that SHOW PIPES
// and DESC PIPE show) goes through Redact.
func Redact(stmt sqlast.Statement) string {
	return sqlast.Redact(stmt, secretRanges(stmt))
}

// HasSecret reports whether a statement holds a secret literal that Redact
// hides.
func HasSecret(stmt sqlast.Statement) bool {
	return len(secretRanges(stmt)) > 0
}

// secretRanges returns where stmt's secret literals are written.
func secretRanges(stmt sqlast.Statement) []sqlast.Range {
	var rs []sqlast.Range
	if c, ok := stmt.(*sqlast.CreateConnection); ok {
		for _, p := range c.Props {
			if SecretKeys[strings.ToLower(p.Key)] && p.Value != "" {
				rs = append(rs, p.ValueSpan)
			}
		}
	}
	sqlast.Inspect(stmt, func(n any) bool {
		f, ok := n.(*sqlast.FuncCall)
		if !ok || !strings.EqualFold(f.Name, "map") {
			return true
		}
		for i := 0; i+1 < len(f.Args); i += 2 {
			// A key that is not a plain string may still name a secret:
			// its value is hidden too.
			if k, ok := f.Args[i].(*sqlast.Literal); ok && k.Kind == sqlast.LitString && !kafka.SecretKey(k.Value) {
				continue
			}
			sqlast.Inspect(f.Args[i+1], func(n any) bool {
				if l, ok := n.(*sqlast.Literal); ok && l.Kind != sqlast.LitNull && l.Value != "" {
					rs = append(rs, l.Span)
				}
				return true
			})
		}
		return true
	})
	return rs
}
