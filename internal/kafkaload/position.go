package kafkaload

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/lakepipe/lakepipe/internal/chsql"
	"github.com/lakepipe/lakepipe/internal/jobs"
	"github.com/lakepipe/lakepipe/schemas"
)

// A Kafka pipe's position lives in its workflow: Temporal recording a
// batch's result moves the pipe past the batch. What the workflow cannot
// tell alone, the pipe's position in ClickHouse (lakepipe.kafka_positions)
// tells:
//
//   - a retried batch whose earlier attempt committed (rows in, change log
//     registered) but whose answer never reached Temporal (the worker died
//     just after): removing and loading its rows again would, for a
//     moment, leave a registered commit without its rows, which a refresh
//     or a stream read then would take as the commit's content;
//   - batches run again because the workflow was reset to an earlier point
//     (`temporal workflow reset`, the UI's Reset): their records are in
//     the table already, and the pipe goes on from where it was;
//   - whether rows of an attempt that did not commit may be under a
//     batch's commit id: only when the batch started and did not commit
//     (or its activity is retried), so a batch that follows a committed
//     one does not look for them (which would read the commit column of
//     the whole table where it is not the table's order, as in keyed
//     tables).
//
// A batch writes its position when it starts (before any of its rows) and
// when it commits (its rows all in, before its registration): one row per
// pipe generation and offset epoch (jobs.KafkaState.Epoch) once merged.
const positionsTable = "kafka_positions"

// position is a pipe's last batch in one epoch.
type position struct {
	commit    uint64
	committed bool
	start     []jobs.PartitionOffset
	// result is a committed batch's; its Offsets are where it ended.
	result jobs.KafkaBatchResult
}

// at is where the pipe's committed batches end: the last committed
// batch's end, or the start of the batch started after it.
func (p *position) at() []jobs.PartitionOffset {
	if p.committed {
		return p.result.Offsets
	}
	return p.start
}

// readPosition reads the pipe's last batch in an epoch; nil when it has
// none (a new pipe or epoch, one idle for longer than the load history's
// retention, or batches of a release before positions).
func (r *KafkaPipeRun) readPosition(ctx context.Context, epoch int64) (*position, error) {
	res, err := r.e.St.Query(ctx, "SELECT argMax(commit_id, version), argMax(committed, version), argMax(start, version), argMax(result, version) FROM "+
		schemas.SystemDB+"."+positionsTable+" WHERE owner = "+chsql.QuoteString(r.target.Owner)+" AND epoch = "+strconv.FormatInt(epoch, 10))
	if err != nil {
		return nil, fmt.Errorf("pipe %s: read its position: %w", r.Name, err)
	}
	if len(res.Rows) != 1 {
		return nil, nil
	}
	row := res.Rows[0]
	p := &position{}
	p.commit, _ = row[0].(uint64)
	if p.commit == 0 {
		return nil, nil // no row: argMax of nothing is 0 (commit ids are odd)
	}
	c, _ := row[1].(uint8)
	p.committed = c == 1
	start, _ := row[2].(string)
	if err := json.Unmarshal([]byte(start), &p.start); err != nil {
		return nil, fmt.Errorf("pipe %s: its position: %w", r.Name, err)
	}
	if p.committed {
		result, _ := row[3].(string)
		if err := json.Unmarshal([]byte(result), &p.result); err != nil {
			return nil, fmt.Errorf("pipe %s: its position: %w", r.Name, err)
		}
	}
	return p, nil
}

// writePosition records that a batch started (res nil) or committed.
func (r *KafkaPipeRun) writePosition(ctx context.Context, epoch int64, commit uint64, start []jobs.PartitionOffset, res *jobs.KafkaBatchResult) error {
	from, err := json.Marshal(start)
	if err != nil {
		return err
	}
	var committed uint8
	var result []byte
	stands, plus := start, uint64(1)
	if res != nil {
		done := *res
		done.NextEnd = nil // a hint for the next batch, not the batch's
		if result, err = json.Marshal(done); err != nil {
			return err
		}
		committed, stands, plus = 1, res.Offsets, 0
	}
	if err := r.e.St.InsertRows(ctx, schemas.SystemDB, positionsTable,
		[]string{"owner", "epoch", "commit_id", "committed", "start", "result", "version", "written_at"},
		[][]any{{r.target.Owner, epoch, commit, committed, string(from), string(result), positionVersion(stands, plus), time.Now().UTC()}}); err != nil {
		return fmt.Errorf("pipe %s: record its position: %w", r.Name, err)
	}
	return nil
}

// positionVersion orders a pipe's positions within an epoch, where
// offsets only grow: a committed batch (plus 0) at the sum of its end
// offsets comes before the batch started there (plus 1), which comes
// before its own commit at a larger sum (it loaded records).
func positionVersion(offsets []jobs.PartitionOffset, plus uint64) uint64 {
	var sum uint64
	for _, o := range offsets {
		sum += uint64(max(o.Offset, 0))
	}
	return 2*sum + plus
}

// behind reports whether a batch starting at from starts before the
// position at: no partition past it, and one short of it. A batch that
// starts at the position is the next one.
func behind(from, at []jobs.PartitionOffset) bool {
	end := make(map[int32]int64, len(at))
	for _, o := range at {
		end[o.Partition] = o.Offset
	}
	short := false
	for _, o := range from {
		e, ok := end[o.Partition]
		if !ok || o.Offset > e {
			return false
		}
		short = short || o.Offset < e
	}
	return short
}

// settle answers a batch the pipe committed before: its registration is
// made sure of when the position is that batch's commit (the worker may
// have died between the commit point and it), and the answer is res.
func (r *KafkaPipeRun) settle(ctx context.Context, p *position, res jobs.KafkaBatchResult) (jobs.KafkaBatchResult, error) {
	if !p.committed {
		return res, nil // the batch before it registered before it started
	}
	if err := r.e.TrackLoad(ctx, r.target.DB, r.target.Table, p.commit, p.result.Rows); err != nil {
		return jobs.KafkaBatchResult{}, fmt.Errorf("pipe %s: %w", r.Name, err)
	}
	if r.dlt != nil {
		if err := r.e.TrackLoad(ctx, r.dlt.DB, r.dlt.Table, p.commit, p.result.DeadLettered); err != nil {
			return jobs.KafkaBatchResult{}, fmt.Errorf("pipe %s: %w", r.Name, err)
		}
	}
	return res, nil
}
