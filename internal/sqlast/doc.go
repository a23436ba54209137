// Package sqlast is the syntax tree of lakepipe's SQL (the statements of
// the ClickZetta Lakehouse documentation), as package sqlparse builds it:
// the node types, their canonical text (Format, with identifiers quoted
// where a keyword or character requires it), traversal (Inspect), the
// keyword sets the parser and the formatter share, and Redact, which
// hides secret literals in a statement's source text.
//
// Like go/ast beside go/parser, it does no parsing and no I/O, and knows
// nothing of ClickHouse (package chsql translates the tree).
package sqlast
