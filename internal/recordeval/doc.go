// Package recordeval evaluates a Kafka pipe's SELECT list (and WHERE) on each
// Kafka record:
//
//	CREATE PIPE p AS COPY INTO t FROM (
//	  SELECT CAST(PARSE_JSON(VALUE::STRING)['time'] AS TIMESTAMP) AS log_time, …
//	  FROM READ_KAFKA(…, 'raw', 'raw', 0, map()))
//
// Compile turns the parsed SELECT into a Program; Program.Append evaluates one
// Record and appends one row of text cells to a formats.Batch, in the
// spellings package chstore converts into ClickHouse columns. The SELECT is
// evaluated per record: aggregates, window functions, subqueries, DISTINCT,
// GROUP BY and HAVING are refused by Compile.
//
// # Record columns
//
// key, value, topic, partition, offset, timestamp and headers, matched
// case-insensitively (a qualified name such as k.value uses its last part);
// SELECT * yields all seven in that order. With the 'raw' format, key and
// value are byte strings (a nil key or value is NULL). With 'json', the bytes
// are parsed as JSON once per record, before WHERE, and a record whose key or
// value is not JSON is an error (an empty key or value is NULL). timestamp is
// UTC (NULL when zero); headers is a JSON object of the headers with string
// values (a nil header value is JSON null), so headers['trace-id'] works.
//
// # Values
//
// Expressions yield NULL, STRING, BIGINT, DOUBLE, BOOLEAN, TIMESTAMP, DATE,
// DECIMAL (kept as exact text) or JSON (kept as validated JSON text). Integer
// literals are BIGINT (DECIMAL beyond its range), other number literals
// DOUBLE.
//
// JSON values come from PARSE_JSON, CAST(… AS JSON) and the 'json' formats.
// x['key'] and x[n] index objects and arrays; a missing key, an index out of
// range or indexing anything but an object or array gives NULL, and so does a
// JSON null (JSON null is SQL NULL throughout). When an object has a key
// twice, the last one wins (as in encoding/json and JavaScript). Where a
// scalar is needed (operators, functions), a JSON string acts as its text, a
// number as BIGINT (DECIMAL beyond BIGINT's range) or DOUBLE, true/false as
// BOOLEAN and an object or array as its compact text. PARSE_JSON is memoized:
// calls with the same argument text are parsed once per record.
//
// # Casts
//
// CAST(x AS T), x::T and TRY_CAST (which gives NULL where CAST fails; a failed
// CAST is an error of the record). T is one of:
//
//   - STRING, VARCHAR(n), CHAR(n), TEXT, BINARY: the text of x (n is not
//     enforced, as in Spark's CAST). A JSON string gives its unquoted text, a
//     JSON number its text as written, an object or array compact JSON.
//   - TINYINT, SMALLINT, INT/INTEGER, BIGINT: range-checked; fractions are
//     truncated toward zero; BOOLEAN gives 1/0, TIMESTAMP Unix seconds.
//   - FLOAT, DOUBLE: both evaluate as 64-bit floats (ClickHouse rounds FLOAT
//     columns to 32 bits on insert).
//   - DECIMAL(p,s) (default (10,0)), NUMERIC: rounded half away from zero to
//     s digits; more than p-s integer digits is an error.
//   - BOOLEAN: true/false/t/f/yes/no/y/n/on/off/1/0 in any case; numbers are
//     true when not zero.
//   - TIMESTAMP (_NTZ, _LTZ): text in the spellings below; numbers (and text
//     that is only a number) are Unix time, in seconds when |n| < 1e11,
//     milliseconds when |n| < 1e14, microseconds when |n| < 1e17 and
//     nanoseconds above; a DATE is its midnight.
//   - DATE: as TIMESTAMP, then truncated to the UTC day; but text of 8
//     digits that form a yyyyMMdd date (20240115) is an error (TRY_CAST:
//     NULL) rather than Unix seconds in 1970: TO_DATE(x, 'yyyyMMdd')
//     reads it.
//   - JSON: text is parsed (and must be JSON); scalars become JSON scalars.
//
// Timestamp text is ISO 8601-like — 2024-01-15, 2024-01-15 10:30:00,
// 2024-01-15T10:30:00.123Z, 2024/01/15 10:30:00+02:00, … (date and time
// separated by T or a space, optional seconds and fraction, zone Z, ±hh,
// ±hhmm, ±hh:mm or UTC; none means UTC) — or one of chstore.ParseTime's
// layouts, RFC 1123 or the access-log form 02/Jan/2006:15:04:05 -0700.
// Every time is converted to UTC.
//
// # Operators and functions
//
// + - * / % (integer arithmetic is checked for overflow, / always yields
// DOUBLE, division by zero is an error), || (NULL if either side is), = <>
// < <= > >= (numbers numerically, text bytewise, times as times; a string
// compared with a number, time or boolean is converted first), AND/OR/NOT
// with SQL three-valued logic, [NOT] LIKE/ILIKE (% and _, backslash escapes),
// RLIKE (RE2, unanchored), [NOT] IN (list), [NOT] BETWEEN, IS [NOT] NULL,
// CASE in both forms, ts ± INTERVAL n UNIT. WHERE keeps a record only when it
// is TRUE.
//
// The functions are listed by Functions. Their semantics follow Spark SQL
// unless noted in funcs.go: substr is 1-based (0 acts as 1, negative counts
// from the end), regexp_extract returns "" when nothing matches, date formats
// use Java letters (yyyy-MM-dd HH:mm:ss.SSS), from_unixtime and date_format
// return text in UTC, current_timestamp()/now() is the time Append began the
// record.
//
// # Output
//
// Each cell is text: integers in decimal, floats as strconv 'g' with the
// fewest digits, booleans "true"/"false", timestamps "2006-01-02
// 15:04:05.999999999" in UTC, dates "2006-01-02", decimals their text, JSON
// compact (a JSON string its unquoted text); NULL sets Null[i].
package recordeval
