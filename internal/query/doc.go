// Package query translates lakepipe's SQL queries for ClickHouse and runs
// them (Runner.Query), with lakepipe's own sources wired in: table streams
// (read from the change log at their offsets, stream.go), VOLUME sources
// and DIRECTORY(VOLUME v) (files read into temporary tables), and
// load_history(). A Session is one statement's translation and the
// temporary tables to drop after it; COPY, INSERT … SELECT, DML and
// dynamic-table refreshes translate their queries through one. The guard
// (guard.go) refuses statements that reach what is not the user's.
//
// It reads and never loads: it must not import the packages that load or
// refresh (loading, kafkaload, streamwrite, dynamic) or the engine.
package query
