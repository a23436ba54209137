// Streaming writes (Tunnel Stream): a session names a table and how rows
// go into it; each flush of a record pack is one load with its own commit
// id, visible when the flush returns. The HTTP layer is package
// tunnelserver.
//
// Package streamwrite owns what a streaming-write session means: opening
// one (table, schema version, partition), checking and converting a record
// pack against the table, writing a flush exactly once under its commit id,
// and expiring unused sessions. It must not import the engine or the other
// loading packages.
package streamwrite
