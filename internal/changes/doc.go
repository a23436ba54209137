// The change log of change-tracked tables ('change_tracking' = 'true').
//
// Every committed write of such a table is a row of lakepipe.table_commits:
// a commit version (increasing), the write's commit id and its kind. The
// rows a write added carry its commit id in the table's _lp_commit column
// (tables are ordered by it, so finding one commit's rows reads only their
// granules); the rows a DELETE or UPDATE removed are copied, before they go,
// into lakepipe_changes.<schema>__<table> with the commit id of that write.
// An UPDATE is an INSERT of the new rows under its commit id followed by the
// removal of the old ones. A keyed table's write replaces rows without a
// mutation; the rows it replaces are copied the same way, before the write
// shows (replaced.go for loads, the engine for SQL statements). So the changes between two versions are found
// from the commits between them alone, whatever the size of the table.
//
// Commit versions are registration times in nanoseconds. A reader takes
// only commits older than changeFence, so that a write registered a moment
// later (or by a worker whose clock is a little behind) cannot slip in
// below a version a reader has already passed.
//
// Package changes owns the change log (lakepipe.table_commits and the
// removed rows' tables), the reading of changes between two versions that
// table streams and incremental refreshes use, and the caches of those
// reads (CommitCache, Freshness). It must not import the engine or the
// packages that load data (loading, kafkaload, streamwrite, dynamic): they
// register their commits through it.
package changes
