package sqlparse

import (
	"testing"

	"github.com/lakepipe/lakepipe/internal/sqlast"
)

// TestValueSpans: a property's ValueSpan and a literal's Span cover the
// value as written, quotes, escapes and sign included, in the frame of
// Pos.Offset (the whole script for ParseChunk).
func TestValueSpans(t *testing.T) {
	for _, tc := range []struct {
		src, key, want string
	}{
		{`CREATE STORAGE CONNECTION c TYPE S3 ENDPOINT = 'http://h' ACCESS_KEY = 'Sup3r''Secr3t'`, "access_key", `'Sup3r''Secr3t'`},
		{`CREATE STORAGE CONNECTION c TYPE S3 ENDPOINT = 'http://h' ACCESS_KEY = 'a\\b\'c' REGION = 'r'`, "access_key", `'a\\b\'c'`},
		{`CREATE STORAGE CONNECTION c TYPE S3 ENDPOINT = 'http://h' ACCESS_KEY = '数据ü'`, "access_key", `'数据ü'`},
		{`CREATE STORAGE CONNECTION c TYPE S3 ENDPOINT = 'http://h' ACCESS_KEY = -12`, "access_key", `-12`},
		{`CREATE STORAGE CONNECTION c TYPE S3 ENDPOINT = 'http://h' ACCESS_KEY = TRUE`, "access_key", `TRUE`},
	} {
		for _, script := range []string{tc.src, "SHOW TABLES;\n-- a comment\n" + tc.src + ";"} {
			chunks, err := Split(script)
			if err != nil {
				t.Fatal(err)
			}
			s := as[*sqlast.CreateConnection](t, mustChunk(t, chunks[len(chunks)-1]))
			found := false
			for _, p := range s.Props {
				if p.Key == tc.key {
					found = true
					eq(t, "source of "+p.Key, script[p.ValueSpan.Start:p.ValueSpan.End], tc.want)
				}
			}
			if !found {
				t.Fatalf("%s: no property %s", tc.src, tc.key)
			}
		}
	}
	src := "SELECT 1;\nSELECT map('sasl.password', 'p''w\\'d', 'n', 12, 'b', TRUE, 'z', NULL, 'd', DATE '2024-01-01')"
	chunks, err := Split(src)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	sqlast.Inspect(mustChunk(t, chunks[1]), func(n any) bool {
		if l, ok := n.(*sqlast.Literal); ok {
			got = append(got, src[l.Span.Start:l.Span.End])
		}
		return true
	})
	eq(t, "literal sources", got, []string{`'sasl.password'`, `'p''w\'d'`, `'n'`, `12`, `'b'`, `TRUE`, `'z'`, `NULL`, `'d'`, `'2024-01-01'`})
}

func mustChunk(t *testing.T, c Chunk) sqlast.Statement {
	t.Helper()
	s, err := ParseChunk(c)
	if err != nil {
		t.Fatalf("ParseChunk(%q): %v", c.Text, err)
	}
	return s
}

// TestRedact: Redact replaces whole ranges of the statement's own text by
// '***', in any order given, and skips ranges outside the text or overlapping
// one already replaced.
func TestRedact(t *testing.T) {
	script := "SHOW TABLES; CREATE STORAGE CONNECTION c TYPE S3 ENDPOINT = 'http://h' ACCESS_ID = 'a''b' ACCESS_KEY = 'x\\'y'"
	chunks, err := Split(script)
	if err != nil {
		t.Fatal(err)
	}
	s := as[*sqlast.CreateConnection](t, mustChunk(t, chunks[1]))
	id, key := s.Props[1].ValueSpan, s.Props[2].ValueSpan
	for _, tc := range []struct {
		name string
		hide []sqlast.Range
		want string
	}{
		{"none", nil, chunks[1].Text},
		{"one", []sqlast.Range{key}, "CREATE STORAGE CONNECTION c TYPE S3 ENDPOINT = 'http://h' ACCESS_ID = 'a''b' ACCESS_KEY = '***'"},
		{"two, out of order", []sqlast.Range{key, id}, "CREATE STORAGE CONNECTION c TYPE S3 ENDPOINT = 'http://h' ACCESS_ID = '***' ACCESS_KEY = '***'"},
		{"overlap and outside", []sqlast.Range{key, {Start: key.Start + 1, End: key.End - 1}, {Start: 0, End: 4}, {Start: key.Start, End: key.End + 1}, {Start: id.Start, End: id.Start}}, "CREATE STORAGE CONNECTION c TYPE S3 ENDPOINT = 'http://h' ACCESS_ID = 'a''b' ACCESS_KEY = '***'"},
	} {
		got := sqlast.Redact(s, tc.hide)
		eq(t, tc.name, got, tc.want)
		if _, err := Parse(got); err != nil {
			t.Errorf("%s: %q does not parse: %v", tc.name, got, err)
		}
	}
}
