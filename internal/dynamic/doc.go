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
// rows bring it to, in an AggregatingMergeTree keyed by _lp_marker and the
// groups (its background merges fold each group's rows into one). Every
// write of the state adds a marker row (_lp_marker = 1, empty aggregates,
// the version it brings the state to), which merges fold into one too:
// the state's version is read from it, not from every group, so that
// what a refresh reads of its state follows the delta, not the number of
// groups. The view merges the states of each group (-Merge … GROUP BY).
//
// The state aggregates signed rows (_lp_sign): COUNT, SUM and AVG keep
// sums of each row's contribution times its sign, so rows deleted or
// updated in the source are taken back by adding them with sign -1, and
// _lp_rows counts each group's rows, so that a group whose rows are all
// gone leaves the view. A refresh (incrementalDelta) reads the state's
// version and the change log after it (readWindow, one query), then
// INSERTs into the state the partial aggregates of the signed rows of the
// window up to the read horizon hi (summaryDelta, windowRows): the rows of
// its INSERT and UPDATE commits (found through t's primary index: work
// follows the changes), those it added that a commit after hi removed
// (from the change table: they were there at hi), and, negated, the rows
// counted before that its DELETE and UPDATE commits removed. It is written
// as one part tagged hi, so the aggregates and the version appear
// together, to readers too: the INSERT is the commit, and it fails unless
// the state is still at the version the window was read from. MIN, MAX
// and COUNT(DISTINCT) cannot take rows back: after a DELETE or UPDATE a
// summary with one of them rebuilds the groups the removed rows were in
// (regroup): a copy of the state without them, plus the window's rows of
// the other groups, plus those groups from every row present at hi,
// swapped in with one RENAME. Its cost is the state, the delta and a read
// of the source filtered by the touched groups' keys, not an aggregation
// of the whole source. A change of a dimension table regroups too: the
// groups its changed rows, as they were (its change table) and as they are,
// join (dimTouched, from fromDims). A first refresh or a change log
// trimmed past the state rebuild the whole state (FULL, incrementalFull).
//
// Queries whose rows each come from one row of a changing table
// (projections and filters of it, its INNER or LEFT joins with dimension
// tables, UNION ALL of those: planAppend) keep their rows in the state
// instead, each with the commit of the source row it came from (_lp_src),
// in a MergeTree ordered by (_lp_marker, _lp_src, _lp_upto): each refresh
// INSERTs the rows its new source rows give plus one marker row carrying
// the version, in one part; the view hides the markers. Rows deleted or
// updated in the source, and dimension rows changed, are taken back by
// source commit (appendDelta, append.go): the rows of the commits they
// touch are hidden by (_lp_marker = 2) rows naming them and written again
// from the commits' present rows, in the same INSERT. Summaries may read
// such a join too (planAggregate). The marker row carries the checks
// itself (its HAVING), so that no refresh takes the version past what it
// did not write.
//
// A query whose FROM is one dynamic table with a plan is planned as that
// table's query (planOverDynamic), recursively: its state is kept from the
// tables the chain starts at, and the outer queries (incPlan.outers) are
// applied in its view. A chain of summaries and filters thus refreshes
// INCREMENTAL at every layer, each layer with its own state, and reading a
// layer computes the queries above the innermost one over its state.
//
// Refreshes of one table must not overlap (two from the same version
// would both add the same rows): the table's workflow runs them one at a
// time (workflows/refresh_owned.go).
package dynamic
