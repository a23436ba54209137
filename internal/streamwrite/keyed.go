package streamwrite

import (
	"context"
	"fmt"

	"github.com/lakepipe/lakepipe/internal/changes"
	"github.com/lakepipe/lakepipe/internal/chsql"
	"github.com/lakepipe/lakepipe/internal/core"
)

// A flush into a keyed table (PRIMARY KEY) is staged (on a cluster, in a
// table of the entry server: package staging): the
// pack's rows go into a staging table and are attached to the table whole,
// once read, after the rows they replace are kept in the change log when
// the table tracks changes (changes.PublishStaged), as loads do. A keyed
// write cannot be taken back: the rows it replaced may be merged away at
// once, so removing it would lose the keys' earlier rows. So a flush into
// a keyed table never removes an earlier attempt's rows as other flushes
// do (and neither does SweepFlushRetries): an attempt shows nothing until
// it is whole, and a retry writes the same rows, which replace an earlier
// attempt's with the same values. A retry that finds an earlier attempt's
// rows all there takes them as the flush's.
//
// What this leaves: a flush whose client saw it fail after its rows were
// shown (its registration failed) keeps them, the table being the same as
// if the client's retry had succeeded; and a retry that comes after other
// flushes replaced and merged away some of the earlier attempt's rows
// finds it short and writes the pack again over them.

// keyedRetry looks for the rows of the earlier attempts candidates of a
// flush of records records (< 0: unknown) in a keyed table: done, with
// that attempt's commit and rows, when one's are all there. Each attempt
// found is registered (tracked tables), so that the change log shows the
// rows it replaced; one found in part (a pack over several partitions,
// its attempt dead between two) stays, and the retry writes the pack
// whole over it.
func (e *Writer) keyedRetry(ctx context.Context, s StreamSession, target core.LoadTarget, candidates []uint64, records int64) (commit uint64, rows int64, done bool, err error) {
	res, err := e.St.Query(ctx, fmt.Sprintf("SELECT %[1]s, toInt64(count()) FROM %[2]s WHERE %[1]s IN (%[3]s) GROUP BY %[1]s",
		chsql.QuoteIdent(core.CommitColumn), chsql.Table(target.DB, target.Table), changes.IDList(candidates)))
	if err != nil {
		return 0, 0, false, fmt.Errorf("flush into %s: count earlier attempts: %w: %w", target.Display, ErrStoreUnavailable, err)
	}
	for _, r := range res.Rows {
		c, _ := r[0].(uint64)
		n, _ := r[1].(int64)
		if err := e.TrackLoad(ctx, s.Schema, s.Table, c, n); err != nil {
			return 0, 0, false, err
		}
		if records < 0 || n == records {
			commit, rows, done = c, n, true
		}
	}
	return commit, rows, done, nil
}
