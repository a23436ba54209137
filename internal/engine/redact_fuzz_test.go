package engine

import (
	"math/rand"
	"strings"
	"testing"

	"github.com/lakepipe/lakepipe/internal/core"
	"github.com/lakepipe/lakepipe/internal/kafkaload"
	"github.com/lakepipe/lakepipe/internal/sqlast"
	"github.com/lakepipe/lakepipe/internal/sqlparse"
)

// spell writes v as a string literal of the dialect, picking at random
// among the spellings the lexer reads back as v: a quote doubled or
// backslashed, a newline or tab raw or escaped, other ASCII letters and
// punctuation sometimes behind a needless backslash.
func spell(r *rand.Rand, v string) string {
	var b strings.Builder
	b.WriteByte('\'')
	for _, c := range []byte(v) {
		switch {
		case c == '\'':
			if r.Intn(2) == 0 {
				b.WriteString("''")
			} else {
				b.WriteString(`\'`)
			}
		case c == '\\':
			b.WriteString(`\\`)
		case c == 0:
			b.WriteString(`\0`)
		case c == '\n' && r.Intn(2) == 0:
			b.WriteString(`\n`)
		case c == '\t' && r.Intn(2) == 0:
			b.WriteString(`\t`)
		case c > ' ' && c < 0x7f && !strings.ContainsRune(`ntr0bZ%_`, rune(c)) && r.Intn(6) == 0:
			b.WriteByte('\\')
			b.WriteByte(c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('\'')
	return b.String()
}

// quoteSimple is the spelling with every quote doubled and every backslash
// doubled, for fuzzed secrets.
func quoteSimple(v string) string {
	return "'" + strings.NewReplacer(`'`, `''`, `\`, `\\`).Replace(v) + "'"
}

// secretPieces are what random secrets are made of: quotes, backslashes,
// comment and statement delimiters, unicode, and words of the statements
// the secrets sit in.
var secretPieces = []string{
	"'", "''", `\`, `\\`, `\'`, `"`, "`", "ü", "数据", "秘密", "🔑", "é", " ", ";", "--", "/*", "*/", "\n", "\t", "\x00",
	"%", "_", "=", "(", ")", ",", "a", "Z", "k", "7", "Sup3r", "Secr3t", "***", "'***'", "map(", "ACCESS_KEY",
	"sasl.password", "http://h:1", "S3", "conn_1", "app_logs", "READ_KAFKA", "SELECT",
}

// wholeParts are secrets equal to other parts of the statements.
var wholeParts = []string{"S3", "conn_1", "http://h:1", "us-east-1", "ACCESS_ID", "sasl.password", "app_logs", "latest", "json", "u", "***", "CREATE", "h1:9092", "value"}

func randomSecret(r *rand.Rand) string {
	switch r.Intn(8) {
	case 0:
		return wholeParts[r.Intn(len(wholeParts))]
	case 1: // long
		return strings.Repeat(secretPieces[r.Intn(len(secretPieces))]+"x", 100+r.Intn(400))
	}
	var b strings.Builder
	for n := 1 + r.Intn(12); n > 0; n-- {
		b.WriteString(secretPieces[r.Intn(len(secretPieces))])
	}
	return b.String()
}

// secretCase is one statement with secrets at known places.
type secretCase struct {
	parts    []string // text between the secrets
	values   []string // decoded secrets
	spelling []string // their literals as written
}

func (c secretCase) text() string { return c.join(c.spelling) }

// redacted is what core.Redact must return: every literal replaced by '***'.
func (c secretCase) redacted() string {
	stars := make([]string, len(c.spelling))
	for i := range stars {
		stars[i] = sqlast.Redacted
	}
	return c.join(stars)
}

func (c secretCase) join(lits []string) string {
	var b strings.Builder
	for i, p := range c.parts {
		b.WriteString(p)
		if i < len(lits) {
			b.WriteString(lits[i])
		}
	}
	return b.String()
}

var (
	connSecretKeys  = []string{"ACCESS_KEY", "access_key", "AccessKey", "SECRET_KEY", "Access_Key_Secret", "SECRET_ACCESS_KEY", "ACCESSKEY"}
	kafkaSecretKeys = []string{"sasl.password", "kafka.sasl.password", "SASL.PASSWORD", "ssl.key.password", "sasl.jaas.config", "sasl.oauthbearer.client.secret"}
)

const kafkaPipePrefix = "CREATE PIPE p1 AS "

func connectionCase(r *rand.Rand) secretCase {
	c := secretCase{}
	c.parts = []string{"CREATE STORAGE CONNECTION conn_1 TYPE S3 ENDPOINT = 'http://h:1' ACCESS_ID = 'id' " + connSecretKeys[r.Intn(len(connSecretKeys))] + " = "}
	tail := " REGION = 'us-east-1'"
	if r.Intn(2) == 0 {
		c.parts = append(c.parts, " "+connSecretKeys[r.Intn(len(connSecretKeys))]+" = ")
	}
	c.parts = append(c.parts, tail)
	return c
}

func kafkaCase(r *rand.Rand) secretCase {
	c := secretCase{}
	c.parts = []string{kafkaPipePrefix + "COPY INTO t1 FROM (SELECT value::STRING AS v FROM READ_KAFKA('h1:9092', 'app_logs', '', 'g', '', '', '', '', 'raw', 'json', 10, map('kafka.auto.offset.reset', 'latest', '" + kafkaSecretKeys[r.Intn(len(kafkaSecretKeys))] + "', "}
	if r.Intn(2) == 0 {
		c.parts = append(c.parts, ", 'sasl.username', 'u', '"+kafkaSecretKeys[r.Intn(len(kafkaSecretKeys))]+"', ")
	}
	c.parts = append(c.parts, ")))")
	return c
}

// checkRedacted asserts the property of core.Redact on one case whose statement
// is the last one of script: the redacted text is the statement with every
// secret literal replaced by '***'; it holds no secret's value or spelling
// (of 4 bytes or more) that does not occur elsewhere in the statement; it
// parses to a statement of the same type, which core.Redact leaves alone.
func checkRedacted(t *testing.T, c secretCase, stmt sqlast.Statement) string {
	t.Helper()
	text := c.text()
	red := core.Redact(stmt)
	want := c.redacted()
	for i, v := range c.values {
		for _, s := range []string{v, c.spelling[i]} {
			if len(s) >= 4 && !strings.Contains(want, s) && strings.Contains(red, s) {
				t.Fatalf("core.Redact(%q) = %q: secret %q shows", text, red, s)
			}
		}
	}
	if red != want {
		t.Fatalf("core.Redact(%q)\n = %q\nwant %q", text, red, want)
	}
	again, err := sqlparse.Parse(red)
	if err != nil {
		t.Fatalf("redacted %q does not parse: %v", red, err)
	}
	if got := core.Redact(again); got != red {
		t.Fatalf("core.Redact of the redacted text changed it: %q", got)
	}
	return red
}

// TestRedactRandomSecrets is the property test of core.Redact over random
// secrets (quotes, backslashes, unicode, long, equal to other parts of the
// statement), in storage connections and in READ_KAFKA maps, parsed alone
// and as the second statement of a script.
func TestRedactRandomSecrets(t *testing.T) {
	r := rand.New(rand.NewSource(20))
	for i := 0; i < 3000; i++ {
		var c secretCase
		kafkaPipe := i%2 == 1
		if kafkaPipe {
			c = kafkaCase(r)
		} else {
			c = connectionCase(r)
		}
		for range c.parts[1:] {
			v := randomSecret(r)
			c.values = append(c.values, v)
			c.spelling = append(c.spelling, spell(r, v))
		}
		text := c.text()
		script := "SHOW TABLES;\n/* x */ " + text + ";"
		chunks, err := sqlparse.Split(script)
		if err != nil || len(chunks) != 2 {
			t.Fatalf("Split(%q) = %d chunks, %v", script, len(chunks), err)
		}
		for _, parse := range []func() (sqlast.Statement, error){
			func() (sqlast.Statement, error) { return sqlparse.Parse(text) },
			func() (sqlast.Statement, error) { return sqlparse.ParseChunk(chunks[1]) },
		} {
			stmt, err := parse()
			if err != nil {
				t.Fatalf("Parse(%q): %v", text, err)
			}
			if !core.HasSecret(stmt) {
				t.Fatalf("core.HasSecret(%q) = false", text)
			}
			checkRedacted(t, c, stmt)
			if !kafkaPipe {
				continue
			}
			// A Kafka pipe stores its COPY redacted, and the COPY as
			// written as its secret: the first must be the redacted
			// statement's COPY, the second must give back the secrets.
			cp := stmt.(*sqlast.CreatePipe).Copy
			if got, want := core.Redact(cp), strings.TrimPrefix(c.redacted(), kafkaPipePrefix); got != want {
				t.Fatalf("core.Redact(COPY of %q)\n = %q\nwant %q", text, got, want)
			}
			back, err := sqlparse.Parse(cp.Text)
			if err != nil {
				t.Fatalf("the kept COPY %q does not parse: %v", cp.Text, err)
			}
			_, fc, err := kafkaload.KafkaQuery(back.(*sqlast.CopyIntoTable).Query)
			if err != nil {
				t.Fatal(err)
			}
			m := fc.Args[11].(*sqlast.FuncCall)
			for j, v := range c.values {
				if got := m.Args[3+4*j].(*sqlast.Literal).Value; got != v {
					t.Fatalf("the kept COPY gives secret %d as %q, want %q", j, got, v)
				}
			}
		}
	}
}

// TestRedactKeepsOthers: literals that are not secrets, and empty secrets,
// are shown as written.
func TestRedactKeepsOthers(t *testing.T) {
	for _, text := range []string{
		"CREATE STORAGE CONNECTION c TYPE S3 ENDPOINT = 'http://h:1' ACCESS_ID = 'id''s' ACCESS_KEY = '' REGION = 'r'",
		"SELECT map('sasl.username', 'u''x', 'client.id', 'c') FROM t WHERE a = 'sasl.password'",
		"CREATE PIPE p AS COPY INTO t FROM (SELECT value::STRING AS v FROM READ_KAFKA('h', 't', '', 'g', '', '', '', '', 'raw', 'raw', 0, map('sasl.password', '')))",
	} {
		stmt, err := sqlparse.Parse(text)
		if err != nil {
			t.Fatal(err)
		}
		if got := core.Redact(stmt); got != text || core.HasSecret(stmt) {
			t.Errorf("core.Redact(%q) = %q, core.HasSecret %v: want it unchanged", text, got, core.HasSecret(stmt))
		}
	}
}

// FuzzRedact: whatever the statement around a secret and whatever the
// secret's bytes, core.Redact does not panic, a statement that parses redacts to
// one that parses, and the secret, when it is a connection's ACCESS_KEY or
// a READ_KAFKA map's sasl.password, shows neither its value nor its
// spelling (when these are 4 bytes or more and occur nowhere else).
func FuzzRedact(f *testing.F) {
	f.Add("Sup3rSecr3t", "my_conn", "", false)
	f.Add("Sup3r'Secr3t", "c", "COMMENT 'x'", false)
	f.Add(`a\b\\c'`, "c", "", true)
	f.Add("数据-秘密-ü", "c", "COMMENT 'x'", false)
	f.Add("a", "c", "", false)
	f.Add("AKIA/abc+def==", "conn_1", "REGION = 'us-east-1'", true)
	f.Add("http://h:1", "c", "", false)
	f.Fuzz(func(t *testing.T, secret, name, tail string, kafkaPipe bool) {
		lit := quoteSimple(secret)
		var before, after string
		if kafkaPipe {
			before = "CREATE PIPE " + name + " AS COPY INTO t FROM (SELECT value::STRING AS v FROM READ_KAFKA('h', 't', '', 'g', '', '', '', '', 'raw', 'raw', 0, map('sasl.password', "
			after = ", " + tail + ")))"
		} else {
			before = "CREATE STORAGE CONNECTION " + name + " TYPE S3 ENDPOINT = 'http://h:1' ACCESS_ID = 'id' ACCESS_KEY = "
			after = " " + tail
		}
		text := before + lit + after
		stmt, err := sqlparse.Parse(text)
		if err != nil {
			return
		}
		red := core.Redact(stmt)
		if _, err := sqlparse.Parse(red); err != nil {
			t.Fatalf("core.Redact(%q) = %q, which does not parse: %v", text, red, err)
		}
		// Is the literal where it was put the secret of its statement?
		at := sqlast.Range{Start: len(before), End: len(before) + len(lit)}
		ours := false
		sqlast.Inspect(stmt, func(n any) bool {
			if f, ok := n.(*sqlast.FuncCall); ok && f.Name == "map" {
				for i := 0; i+1 < len(f.Args); i += 2 {
					k, kok := f.Args[i].(*sqlast.Literal)
					v, vok := f.Args[i+1].(*sqlast.Literal)
					ours = ours || kok && vok && k.Value == "sasl.password" && v.Span == at
				}
			}
			return true
		})
		if c, ok := stmt.(*sqlast.CreateConnection); ok {
			for _, p := range c.Props {
				ours = ours || p.ValueSpan == at && core.SecretKeys[strings.ToLower(p.Key)]
			}
		}
		if !ours || secret == "" {
			return
		}
		elsewhere := before + sqlast.Redacted + after
		for _, s := range []string{secret, lit} {
			if len(s) >= 4 && !strings.Contains(elsewhere, s) && strings.Contains(red, s) {
				t.Fatalf("core.Redact(%q) = %q: %q shows", text, red, s)
			}
		}
	})
}
