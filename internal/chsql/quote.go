// Package chsql builds ClickHouse SQL text: quoting of identifiers and
// literals, and translation of parsed lakepipe queries into ClickHouse's
// dialect (types, casts, function names). Every identifier and literal that
// reaches ClickHouse from lakepipe goes through QuoteIdent or QuoteString.
package chsql

import "strings"

// QuoteIdent returns s as a back-quoted ClickHouse identifier.
func QuoteIdent(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('`')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '`', '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case 0:
			b.WriteString(`\0`)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('`')
	return b.String()
}

// QuoteString returns s as a single-quoted ClickHouse string literal.
func QuoteString(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('\'')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\'', '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case 0:
			b.WriteString(`\0`)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('\'')
	return b.String()
}

// Table returns db.table, both quoted.
func Table(db, table string) string {
	return QuoteIdent(db) + "." + QuoteIdent(table)
}

// StringList quotes each string and joins them with commas, for IN (…).
func StringList(ss []string) string { return QuoteList(ss, func(s string) string { return s }) }

// QuoteList is StringList of str of each x.
func QuoteList[T any](xs []T, str func(T) string) string {
	var b strings.Builder
	for i, x := range xs {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(QuoteString(str(x)))
	}
	return b.String()
}
