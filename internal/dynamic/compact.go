package dynamic

import (
	"context"
	"fmt"

	"github.com/lakepipe/lakepipe/internal/chsql"
	"github.com/lakepipe/lakepipe/schemas"
)

// CompactStates removes from the states of dynamic tables of rows what
// their refreshes took back (appendDelta): the rows hidden, then the
// _lp_marker = 2 rows that hid them. Until then a state keeps both, and
// every read of the table filters them out, so maintenance runs this: the
// hidden rows a state holds are those taken back since the last
// maintenance run (or FULL refresh), not since the table began.
//
// Each step is a mutation that leaves what readers see unchanged: the
// first deletes rows already hidden; the second, once the first is done,
// deletes the marker rows no row matches any more. A refresh may write
// meanwhile: its new rows have a version no marker names, and a marker it
// writes names rows still there, which the second step keeps.
func (e *Refresher) CompactStates(ctx context.Context) error {
	db := chsql.QuoteString(schemas.ChangesDB)
	states, err := e.St.Strings(ctx, "SELECT table FROM system.columns WHERE database = "+db+" AND name = "+chsql.QuoteString(rowColumn)+" AND table LIKE 'dt\\\\_\\\\_%'")
	if err != nil {
		return fmt.Errorf("compact the states of dynamic tables: %w", err)
	}
	for _, name := range states {
		state := chsql.Table(schemas.ChangesDB, name)
		n, err := e.St.Strings(ctx, "SELECT count() FROM "+state+" PREWHERE _lp_marker = 2")
		if err != nil || len(n) != 1 || n[0] == "0" {
			continue // gone meanwhile (a FULL refresh swapped it), or nothing taken back
		}
		for _, step := range []string{
			"DELETE WHERE _lp_marker = 0 AND " + retractedRows(state, "IN"),
			"DELETE WHERE _lp_marker = 2 AND (" + retractKey + ") NOT IN (SELECT " + retractKey + " FROM " + state + " PREWHERE _lp_marker = 0)",
		} {
			if err := e.St.Exec(ctx, "ALTER TABLE "+state+" "+step); err != nil {
				return fmt.Errorf("compact the state %s: %w", state, err)
			}
			if err := e.WaitMutations(ctx, schemas.ChangesDB, name, "compact", "the state "+state); err != nil {
				return err
			}
		}
	}
	return nil
}
