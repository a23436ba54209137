package kafkaload

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/lakepipe/lakepipe/internal/chsql"
	"github.com/lakepipe/lakepipe/internal/jobs"
	"github.com/lakepipe/lakepipe/schemas"
)

// A Kafka pipe's position lives in its workflow: Temporal recording a
// batch's result moves the pipe past the batch. Two things the workflow
// cannot tell alone, the pipe's committed position in ClickHouse
// (lakepipe.kafka_positions) tells:
//
//   - a retried batch whose earlier attempt committed (rows in, change log
//     registered) but whose answer never reached Temporal (the worker died
//     just after): removing and loading its rows again would, for a
//     moment, leave a registered commit without its rows, which a refresh
//     or a stream read then would take as the commit's content;
//   - batches run again because the workflow was reset to an earlier point
//     (`temporal workflow reset`, the UI's Reset): their records are in
//     the table already, and the pipe goes on from where it was.
//
// The position is written once a batch's rows are all in, before its
// registration: it is the batch's commit point in ClickHouse. One row per
// pipe generation and offset epoch (jobs.KafkaState.Epoch), replaced by
// each batch.
const positionsTable = "kafka_positions"

// position is a pipe's last committed batch in one epoch.
type position struct {
	commit uint64
	// result is the batch's; its Offsets are where the batch ended.
	result jobs.KafkaBatchResult
}

// committedPosition reads the pipe's last committed batch in an epoch;
// nil when it has none (a new pipe or epoch, or one idle for longer than
// the load history's retention).
func (r *KafkaPipeRun) committedPosition(ctx context.Context, epoch int64) (*position, error) {
	v, err := r.e.St.Strings(ctx, "SELECT concat(toString(argMax(commit_id, version)), ' ', argMax(result, version)) FROM "+
		schemas.SystemDB+"."+positionsTable+" WHERE owner = "+chsql.QuoteString(r.target.Owner)+" AND epoch = "+strconv.FormatInt(epoch, 10))
	if err != nil {
		return nil, fmt.Errorf("pipe %s: read its committed position: %w", r.Name, err)
	}
	if len(v) != 1 {
		return nil, nil
	}
	id, result, _ := strings.Cut(v[0], " ")
	p := &position{}
	if p.commit, err = strconv.ParseUint(id, 10, 64); err != nil || p.commit == 0 {
		return nil, nil // no row: argMax of nothing is 0
	}
	if err := json.Unmarshal([]byte(result), &p.result); err != nil {
		return nil, fmt.Errorf("pipe %s: its committed position: %w", r.Name, err)
	}
	return p, nil
}

// recordPosition writes a batch's commit point: its commit id, where it
// started and its result.
func (r *KafkaPipeRun) recordPosition(ctx context.Context, epoch int64, commit uint64, start []jobs.PartitionOffset, res jobs.KafkaBatchResult) error {
	res.NextEnd = nil // a hint for the next batch, not the batch's
	result, err := json.Marshal(res)
	if err != nil {
		return err
	}
	from, err := json.Marshal(start)
	if err != nil {
		return err
	}
	var version uint64
	for _, o := range res.Offsets {
		version += uint64(max(o.Offset, 0))
	}
	if err := r.e.St.InsertRows(ctx, schemas.SystemDB, positionsTable,
		[]string{"owner", "epoch", "commit_id", "start", "result", "version", "committed_at"},
		[][]any{{r.target.Owner, epoch, commit, string(from), string(result), version, time.Now().UTC()}}); err != nil {
		return fmt.Errorf("pipe %s: record the batch's commit: %w", r.Name, err)
	}
	return nil
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

// settle answers a batch the pipe committed before from its position:
// the batch's registration is made sure of (the worker may have died
// between the commit point and it), and the result is the position's.
func (r *KafkaPipeRun) settle(ctx context.Context, p *position, res jobs.KafkaBatchResult) (jobs.KafkaBatchResult, error) {
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
