// Package fileread reads the files of volumes into ClickHouse tables: it
// selects a volume's files (FILES, REGEXP, SUBDIRECTORY), reads them in
// their format with the limits of formats.Limits, maps their columns to
// the target's, streams or stages their rows into an INSERT, turns a
// reader's panic into that file's error (safe.go), and records and reads
// load_history (history.go). COPY, volume pipes and queries over VOLUME
// sources all read files through it.
//
// It decides nothing about exactly-once: callers give each load its
// commit id (core.LoadTarget.Commit) and record it. It must not import the
// packages above it (query, loading, the engine).
package fileread
