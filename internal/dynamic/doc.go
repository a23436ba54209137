// Package dynamic owns dynamic tables: their DDL (CREATE, ALTER, DROP,
// SHOW, DESC, refresh history), the incremental planner (which queries can
// be maintained from their sources' changes, and how) and the refresh
// itself, INCREMENTAL when the plan and the changes allow it, FULL
// otherwise. It reads changes through package changes and translates
// queries through package query; it must not import the engine, the
// loading packages or the workflows (the refresh workflows call it through
// the activities).
//
// Incremental refresh of GROUP BY summaries.
//
// A dynamic table `SELECT k…, AGG(x) AS a… FROM t [WHERE …] GROUP BY k…`
// over a change-tracked table t is a view of its state table
// (lakepipe_changes.dt__<schema>__<name>): ClickHouse -State values per
// group plus _lp_upto, maxState of the change-log versions the state's
// rows bring it to, in an AggregatingMergeTree keyed by the groups (its
// background merges fold each group's rows into one). The view merges the
// states of each group (-Merge … GROUP BY).
//
// A refresh whose source has only new rows since the last one is one
// INSERT into the state (incrementalDelta): the partial aggregates of the
// rows of the INSERT commits above the state's version (found through t's
// primary index: work follows the changes), up to the read horizon hi,
// tagged hi. It is written as one part, so the aggregates and the version
// appear together, to readers too: the INSERT is the commit, and running
// it again adds nothing. A DELETE or UPDATE commit in that range fails it
// (throwIf) and the refresh rebuilds the state from every committed row
// up to hi (FULL, incrementalFull), as does a first refresh. Either way
// the state holds exactly the rows of commits up to its version: the rows
// present when change tracking was turned on (the BASELINE commits) and
// every INSERT commit registered since.
//
// Queries whose rows each come from one row of a changing table
// (projections and filters of it, its INNER or LEFT joins with dimension
// tables, UNION ALL of those: planAppend) keep their rows in the state
// instead, a MergeTree ordered by (_lp_marker, _lp_upto): each refresh
// INSERTs the rows its new source rows give plus one marker row carrying
// the version, in one part; the view hides the markers. Summaries may read
// such a join too (planAggregate). A dimension table that changed since the
// state's version fails the INSERT (throwIf) and makes the refresh FULL.
// The marker row carries the checks itself (its HAVING), so that no
// refresh takes the version past such a change, or a DELETE, even when no
// new row comes with it.
//
// Refreshes of one table must not overlap (two from the same version
// would both add the same rows): the table's workflow runs them one at a
// time (workflows/refresh_owned.go).
package dynamic
