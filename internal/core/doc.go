// Package core is what every part of the engine shares: the configuration
// (Config), the catalog, the ClickHouse store and the orchestrator (Core),
// looking up tables, volumes and pipes in the catalog, the DDL and
// mutations of stored tables on a single node or a cluster (cluster.go),
// commit ids (commitid.go), errors that retrying cannot fix
// (permanent.go), and a statement's Result.
//
// It owns no state of its own beyond Core's fields and must not import the
// engine's subsystems (changes, files, query, loading, kafkaload, dynamic,
// streamwrite) or the engine: they all build on it.
package core
