package workflows

import (
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/lakepipe/lakepipe/internal/jobs"
)

// kafkaTurn loads one batch of a Kafka pipe: the first turn asks where to
// start; every turn hands the activity the offsets it keeps and takes back
// the new ones. The batch runs in loads (the load queue's context).
func kafkaTurn(ctx, loads workflow.Context, p jobs.PipeParams, st *jobs.KafkaState, c *jobs.PipeCounters, fixedEnd bool, get func(workflow.Future, any) error) (more bool, err error) {
	octx := workflow.WithStartToCloseTimeout(ctx, 5*time.Minute)
	if len(st.Offsets) == 0 {
		var start jobs.KafkaOffsetsResult
		if err := get(workflow.ExecuteActivity(octx, jobs.ActivityKafkaOffsets, jobs.KafkaOffsetsInput{Params: p}), &start); err != nil {
			return false, err
		}
		st.Offsets = start.Offsets
	}
	// A RESET_KAFKA_GROUP_OFFSETS moves the offsets at a batch boundary:
	// after a batch that failed for good has been loaded (its retry looks
	// for the rows it left under its offsets), never in the middle of one.
	if st.ResetTo != "" && !st.Unfinished {
		var moved jobs.KafkaOffsetsResult
		if err := get(workflow.ExecuteActivity(octx, jobs.ActivityKafkaOffsets, jobs.KafkaOffsetsInput{Params: p, Reset: st.ResetTo}), &moved); err != nil {
			return false, err
		}
		st.Offsets, st.End, st.ResetTo = moved.Offsets, nil, ""
		// Histories recorded before replay their batches under epoch 0.
		if workflow.GetVersion(ctx, "kafka-reset-epoch", workflow.DefaultVersion, 1) >= 1 {
			st.Epoch++
		}
	}
	if fixedEnd && len(st.End) == 0 {
		var end jobs.KafkaOffsetsResult
		ectx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{ScheduleToCloseTimeout: 2 * time.Minute})
		if err := get(workflow.ExecuteLocalActivity(ectx, jobs.ActivityKafkaEnd, jobs.KafkaOffsetsInput{Params: p}), &end); err != nil {
			return false, err
		}
		st.End = end.Offsets
	}
	// An idle turn, nothing beyond the offsets, ends here: no batch
	// activity (which would open the pipe, read the catalog and find
	// nothing), 6 history events instead of 13. The version is asked only
	// then, so that histories recorded before replay their batches.
	if fixedEnd && !st.Unfinished && jobs.CaughtUp(st.Offsets, st.End) &&
		workflow.GetVersion(ctx, "kafka-skip-idle", workflow.DefaultVersion, 1) >= 1 {
		st.End, st.Lag, c.Backlog = nil, 0, 0
		return false, nil
	}
	var res jobs.KafkaBatchResult
	bctx := workflow.WithStartToCloseTimeout(loads, 30*time.Minute)
	in := jobs.KafkaBatchInput{Params: p, Offsets: st.Offsets, Rejected: c.RowsRejected, Retry: st.Unfinished, End: st.End, Epoch: st.Epoch}
	if err := get(workflow.ExecuteActivity(bctx, jobs.ActivityKafkaBatch, in), &res); err != nil {
		st.Unfinished = true
		return false, err
	}
	st.Unfinished, st.End = false, nil
	if res.Paused {
		st.InvalidReason = res.Reason
		c.LastError = res.Reason
		return false, nil
	}
	st.Offsets, st.Lag = res.Offsets, res.Lag
	// A batch that left a backlog read the topic's ends as it finished:
	// the next batch stops there, with no KafkaEnd before it. The version
	// is asked only then, so that histories recorded before replay their
	// KafkaEnd markers.
	if fixedEnd && res.More && len(res.NextEnd) > 0 &&
		workflow.GetVersion(ctx, "batch-next-end", workflow.DefaultVersion, 1) >= 1 {
		st.End = res.NextEnd
	}
	c.Backlog = int(res.Lag)
	c.RowsLoaded += res.Rows
	c.RowsRejected += res.Rejected
	if res.Rows > 0 {
		c.LastLoadTime = workflow.Now(ctx)
	}
	if res.FirstError != "" {
		c.LastError = res.FirstError
	}
	return res.More, nil
}
