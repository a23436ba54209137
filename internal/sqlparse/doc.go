// Package sqlparse parses lakepipe's SQL dialect (the statements of the
// ClickZetta Lakehouse documentation: connections, volumes, tables, COPY,
// pipes, dynamic tables, table streams and queries) into the syntax tree
// of package sqlast. It does no I/O and knows nothing of ClickHouse:
// translation to ClickHouse SQL lives in package chsql.
//
// Unquoted identifiers are case-insensitive and are stored lower-cased;
// back-quoted (and double-quoted) identifiers keep their case. Keywords are
// case-insensitive. Strings are single-quoted.
package sqlparse
