package workflows

import (
	"time"

	"go.temporal.io/sdk/workflow"
)

// Pipe kinds.
const (
	KindVolume = "VOLUME"
	KindKafka  = "KAFKA"
)

// Activity names of Kafka pipes.
const (
	ActivityKafkaOffsets = "KafkaOffsets"
	ActivityKafkaBatch   = "KafkaBatch"
	// ActivityKafkaEnd reads the ends of the topic's partitions, as a
	// local activity before a batch: the batch's end offsets are then in
	// the history, the same for every attempt of it.
	ActivityKafkaEnd = "KafkaEnd"
)

// PartitionOffset is the offset of the next record to load from one
// partition.
type PartitionOffset struct {
	Partition int32
	Offset    int64
}

// KafkaState is a Kafka pipe's position, kept in the workflow (and carried
// through continue-as-new): the offsets up to which records are loaded.
// Temporal recording a batch's result is the commit point of that batch.
type KafkaState struct {
	Offsets []PartitionOffset // sorted by partition; empty before the first turn
	// Lag is how many records waited beyond the offsets at the last turn.
	Lag int64
	// InvalidReason says why the pipe paused itself (too many bad records);
	// resume clears it.
	InvalidReason string
	// Unfinished is set when a batch activity failed for good: the next
	// batch from the same offsets must look for rows it left.
	Unfinished bool `json:",omitempty"`
	// End is where the batch in progress stops, fixed before its first
	// attempt and kept until it succeeds: every attempt of a batch (and
	// the batch after one that failed for good) loads the same records
	// under its commit id, so the table, the change log and what streams
	// and dynamic tables read of that commit agree.
	End []PartitionOffset `json:",omitempty"`
}

// KafkaOffsetsInput asks where a new Kafka pipe starts.
type KafkaOffsetsInput struct {
	Params PipeParams
}

// KafkaOffsetsResult is where it starts.
type KafkaOffsetsResult struct {
	Offsets []PartitionOffset
}

// KafkaBatchInput asks to load the records after Offsets.
type KafkaBatchInput struct {
	Params  PipeParams
	Offsets []PartitionOffset
	// Rejected is how many bad records the pipe has tolerated so far: the
	// batch may reject max_errors minus that many before the pipe pauses.
	Rejected int64
	// Retry says an earlier activity for these offsets failed: rows it may
	// have left are removed first (retried attempts always do this).
	Retry bool `json:",omitempty"`
	// End, when set, is where the batch stops (partitions not in it load
	// nothing); without it the batch reads the ends when it starts
	// (histories recorded before the "kafka-fixed-end" version).
	End []PartitionOffset `json:",omitempty"`
}

// KafkaBatchResult is what one batch did.
type KafkaBatchResult struct {
	Offsets  []PartitionOffset // the new position (unchanged when Paused)
	Records  int64             // records read
	Rows     int64             // rows inserted
	Filtered int64             // records WHERE left out
	Rejected int64             // bad records skipped
	// FirstError names the topic, partition and offset of the first bad
	// record of the batch and what was wrong with it.
	FirstError string
	Lag        int64 // records beyond the new offsets when the batch began
	More       bool  // the batch stopped at max.poll.records: go on at once
	// Paused is set when the batch had more bad records than max_errors
	// allows: nothing of it was loaded and the pipe pauses with Reason.
	Paused bool
	Reason string
}

// kafkaTurn loads one batch of a Kafka pipe: the first turn asks where to
// start; every turn hands the activity the offsets it keeps and takes back
// the new ones.
func kafkaTurn(ctx workflow.Context, p PipeParams, st *KafkaState, c *PipeCounters, fixedEnd bool, get func(workflow.Future, any) error) (more bool, err error) {
	if len(st.Offsets) == 0 {
		var start KafkaOffsetsResult
		octx := workflow.WithStartToCloseTimeout(ctx, 5*time.Minute)
		if err := get(workflow.ExecuteActivity(octx, ActivityKafkaOffsets, KafkaOffsetsInput{Params: p}), &start); err != nil {
			return false, err
		}
		st.Offsets = start.Offsets
	}
	if fixedEnd && len(st.End) == 0 {
		var end KafkaOffsetsResult
		ectx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{ScheduleToCloseTimeout: 2 * time.Minute})
		if err := get(workflow.ExecuteLocalActivity(ectx, ActivityKafkaEnd, KafkaOffsetsInput{Params: p}), &end); err != nil {
			return false, err
		}
		st.End = end.Offsets
	}
	var res KafkaBatchResult
	bctx := workflow.WithStartToCloseTimeout(ctx, 30*time.Minute)
	in := KafkaBatchInput{Params: p, Offsets: st.Offsets, Rejected: c.RowsRejected, Retry: st.Unfinished, End: st.End}
	if err := get(workflow.ExecuteActivity(bctx, ActivityKafkaBatch, in), &res); err != nil {
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
