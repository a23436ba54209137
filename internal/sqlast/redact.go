package sqlast

import (
	"sort"
	"strings"
)

// Redact returns stmt's source text, as Span gives it, with the source of
// each range in hide replaced by '***' (quotes included): the whole literal
// goes, however it was spelled (doubled quotes, backslash escapes), so the
// result shows neither its value nor its spelling. hide holds ranges of
// stmt's own text, such as Property.ValueSpan or Literal.Span of nodes under
// stmt; ranges that fall outside the text, are empty, or overlap a range
// already hidden are skipped. When every range is a literal's, the result
// parses as a statement of the same shape.
func Redact(stmt Statement, hide []Range) string {
	start, text := stmt.Span()
	if len(hide) == 0 {
		return text
	}
	rs := make([]Range, 0, len(hide))
	for _, r := range hide {
		a, b := r.Start-start.Offset, r.End-start.Offset
		if a < 0 || b > len(text) || a >= b {
			continue
		}
		rs = append(rs, Range{Start: a, End: b})
	}
	sort.Slice(rs, func(i, j int) bool { return rs[i].Start < rs[j].Start })
	var b strings.Builder
	b.Grow(len(text))
	at := 0
	for _, r := range rs {
		if r.Start < at {
			continue
		}
		b.WriteString(text[at:r.Start])
		b.WriteString(Redacted)
		at = r.End
	}
	b.WriteString(text[at:])
	return b.String()
}
