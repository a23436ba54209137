package activities

import (
	"cmp"
	"context"
	"errors"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/lakepipe/lakepipe/internal/core"
	"github.com/lakepipe/lakepipe/internal/errtext"
	"github.com/lakepipe/lakepipe/internal/jobs"
	"github.com/lakepipe/lakepipe/internal/pipehistory"
	"github.com/lakepipe/lakepipe/internal/progress"
)

func (a *Activities) openKafka(ctx context.Context, p jobs.PipeParams) (kafkaRun, error) {
	run, err := a.api().openKafkaPipe(ctx, p)
	if errors.Is(err, core.ErrPipeGone) {
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), jobs.ErrTypePipeGone, err)
	}
	// A pipe that no longer resolves (its table dropped, its COPY no
	// longer valid) pauses with the reason instead of retrying forever.
	return run, classify(err)
}

// KafkaOffsets says where a new Kafka pipe starts, or where
// RESET_KAFKA_GROUP_OFFSETS moves it. It only reads (and mirrors a reset
// to the group), so it is safe to repeat; the workflow keeps its answer.
func (a *Activities) KafkaOffsets(ctx context.Context, in jobs.KafkaOffsetsInput) (jobs.KafkaOffsetsResult, error) {
	run, err := a.openKafka(ctx, in.Params)
	if err != nil {
		return jobs.KafkaOffsetsResult{}, err
	}
	var off []jobs.PartitionOffset
	if in.Reset != "" {
		off, err = run.ResetOffsets(ctx, in.Reset)
	} else {
		off, err = run.InitialOffsets(ctx)
	}
	return jobs.KafkaOffsetsResult{Offsets: off}, classify(err)
}

// KafkaEnd reads where the topic's partitions end: the end offsets of the
// next batch. It only reads.
func (a *Activities) KafkaEnd(ctx context.Context, in jobs.KafkaOffsetsInput) (jobs.KafkaOffsetsResult, error) {
	run, err := a.openKafka(ctx, in.Params)
	if err != nil {
		return jobs.KafkaOffsetsResult{}, err
	}
	off, err := run.EndOffsets(ctx)
	return jobs.KafkaOffsetsResult{Offsets: off}, classify(err)
}

// KafkaBatch loads the records after the given offsets and returns the new
// offsets. A retried attempt removes what an earlier attempt of the same
// batch inserted before loading again, so the batch's records land once.
func (a *Activities) KafkaBatch(ctx context.Context, in jobs.KafkaBatchInput) (jobs.KafkaBatchResult, error) {
	start := time.Now()
	res, err := a.kafkaBatch(ctx, in)
	// Batches that found nothing write no history: it costs what the
	// pipe loads.
	if res.Records > 0 || err != nil || res.Paused {
		t := turnOf(ctx, in.Params, start, err)
		t.Rows, t.Rejected = res.Rows, res.Rejected+res.DeadLettered
		t.OffsetsBefore, t.OffsetsAfter = pipehistory.Offsets(in.Offsets), pipehistory.Offsets(res.Offsets)
		if t.Error == "" {
			t.Error = cmp.Or(res.Reason, res.FirstError)
		}
		a.recordTurn(ctx, t, err)
	}
	return res, err
}

// kafkaBatch is KafkaBatch but for its job history.
func (a *Activities) kafkaBatch(ctx context.Context, in jobs.KafkaBatchInput) (jobs.KafkaBatchResult, error) {
	// Heartbeats show the records read so far; a batch that reads none
	// for StallTimeout (a broker that stopped answering) gives up and is
	// retried.
	read := &progress.Counter{}
	stall := cmp.Or(a.StallTimeout, DefaultStallTimeout)
	ctx, stop := watch(progress.With(ctx, read), stall, read.Load,
		func() []any { return []any{jobs.KafkaProgress{Records: read.Load(), From: in.Offsets, End: in.End}} })
	defer stop()
	run, err := a.openKafka(ctx, in.Params)
	if err != nil {
		return jobs.KafkaBatchResult{}, err
	}
	log := activity.GetLogger(ctx)
	run = run.withWarn(func(msg string) { log.Warn("kafka pipe", "pipe", in.Params.Name, "warning", msg) })
	start := time.Now()
	res, err := run.LoadBatch(ctx, in, in.Retry || activity.GetInfo(ctx).Attempt > 1)
	// A record's error may quote a whole record: the result travels in the
	// history, so its texts are bounded.
	res.FirstError = errtext.Cap(res.FirstError, errtext.MaxMessage)
	res.Reason = errtext.Cap(res.Reason, errtext.MaxMessage)
	if serr := stalled(ctx); serr != nil {
		return res, serr
	}
	if err != nil {
		a.Metrics.Error(in.Params)
		return res, classify(err)
	}
	a.Metrics.KafkaBatch(in.Params, res, time.Since(start))
	return res, nil
}
