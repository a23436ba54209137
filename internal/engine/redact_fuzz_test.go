package engine

import (
	"strings"
	"testing"

	"github.com/lakepipe/lakepipe/internal/sqlparse"
)

// FuzzRedact: whatever the statement, Redact does not panic, and a
// connection's secret written without quotes or backslashes in it (so
// that its source text is its value) never shows in the redacted text.
// Secrets written with escapes are redacted by span (issue 20).
func FuzzRedact(f *testing.F) {
	f.Add("Sup3rSecr3t", "my_conn", "")
	f.Add("数据-秘密-ü", "c", "COMMENT 'x'")
	f.Add("a", "c", "")
	f.Add("AKIA/abc+def==", "conn_1", "REGION = 'us-east-1'")
	f.Fuzz(func(t *testing.T, secret, name, tail string) {
		text := "CREATE STORAGE CONNECTION " + name + " TYPE S3 ENDPOINT = 'http://h:1' ACCESS_ID = 'id' ACCESS_KEY = '" + secret + "' " + tail
		stmt, err := sqlparse.Parse(text)
		if err != nil {
			return
		}
		red := Redact(stmt)
		if len(secret) < 4 || strings.ContainsAny(secret, `'\`) {
			return
		}
		c, ok := stmt.(*sqlparse.CreateConnection)
		if !ok {
			return
		}
		for _, p := range c.Props {
			if secretKeys[strings.ToLower(p.Key)] && p.Value == secret && strings.Contains(red, secret) {
				t.Fatalf("Redact(%q) = %q: the secret shows", text, red)
			}
		}
	})
}
