// Package rowio is what the file readers and writers of package formats
// (and of its subpackages) share, and what their callers exchange with
// them: a file's columns (Column), its rows in columnar batches (Batch,
// Vector, RowError), the Reader and Writer interfaces, the options a COPY
// gives (Options, ParseOptions), the allocation limits every reader obeys
// (Limits, LimitError, CorruptError, LimitsFromEnv), decompression with a
// bounded ratio, the text readers' chunked input buffer, and the mapping
// between Arrow and ClickHouse types.
//
// It reads no format itself and must not import package formats.
package rowio
