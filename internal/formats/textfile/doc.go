// Package textfile reads and writes the text formats: CSV (delimiters,
// quotes, headers, NULL markers; the reader scans in place over a chunked
// buffer) and newline-delimited JSON (or a JSON array of objects), within
// the limits of rowio.Limits. Package formats opens files and picks the
// reader; COPY INTO a volume writes CSV through NewCSVWriter.
//
// It must not import package formats.
package textfile
