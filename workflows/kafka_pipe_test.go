package workflows_test

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/activity"
	tlog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/lakepipe/lakepipe/internal/jobs"
	"github.com/lakepipe/lakepipe/workflows"
)

// topic stands in for a Kafka topic and the pipe's activities: records per
// partition, a batch bound, and a record of the batches asked for.
type topic struct {
	env *testsuite.TestWorkflowEnvironment

	mu       sync.Mutex
	ends     []int64  // records per partition
	max      int64    // records per batch (0: all)
	nextEnd  bool     // a batch that leaves a backlog returns the ends (NextEnd)
	starts   int      // KafkaOffsets calls for the start
	resets   []string // KafkaOffsets calls for a RESET_KAFKA_GROUP_OFFSETS
	batches  []batchCall
	endCalls []int // seconds since t0 of each KafkaEnd
	batchErr func(n int, attempt int32) error
	// poison pauses the pipe on the n-th batch call.
	poison map[int]string
	// awaits: seconds since t0 at which each AwaitRecords read the ends,
	// and the offsets it was handed; awaitStarts when each started;
	// awaitErr fails it.
	awaits       []int
	awaitStarts  []int
	awaitOffsets [][]jobs.PartitionOffset
	awaitErr     error
}

type batchCall struct {
	at       time.Duration
	offsets  []jobs.PartitionOffset
	rejected int64
	retry    bool
	attempt  int32
	end      []jobs.PartitionOffset
	epoch    int64
}

func newKafkaEnv(t *testing.T, ends ...int64) (*testsuite.TestWorkflowEnvironment, *topic) {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	s.SetLogger(tlog.NewStructuredLogger(slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))))
	env := s.NewTestWorkflowEnvironment()
	env.SetStartTime(t0)
	env.SetWorkflowRunTimeout(2 * time.Hour)
	tp := &topic{env: env, ends: ends, poison: map[int]string{}}
	env.RegisterWorkflowWithOptions(workflows.PipeWorkflow, workflow.RegisterOptions{Name: jobs.PipeWorkflowName})
	env.RegisterActivityWithOptions(tp.offsets, activity.RegisterOptions{Name: jobs.ActivityKafkaOffsets})
	env.RegisterActivityWithOptions(tp.batch, activity.RegisterOptions{Name: jobs.ActivityKafkaBatch})
	env.RegisterActivityWithOptions(tp.end, activity.RegisterOptions{Name: jobs.ActivityKafkaEnd})
	tp.mockAwait(kafkaPoll)
	return env, tp
}

// kafkaPoll is the batch interval of kafkaParams' pipes in these tests.
const kafkaPoll = 60 * time.Second

// mockAwait stands in for AwaitRecords: each call reads the ends once,
// after the given time on the workflow clock (one poll per call).
func (tp *topic) mockAwait(after time.Duration) {
	tp.env.RegisterActivityWithOptions(func(context.Context, jobs.AwaitRecordsInput) (jobs.AwaitRecordsResult, error) {
		return jobs.AwaitRecordsResult{}, errors.New("mocked")
	}, activity.RegisterOptions{Name: jobs.ActivityAwaitRecords})
	// The matcher sees each call as it starts; the return function runs
	// once its time passed (in this test environment, cancelled or not).
	started := mock.MatchedBy(func(jobs.AwaitRecordsInput) bool {
		tp.mu.Lock()
		tp.awaitStarts = append(tp.awaitStarts, int(tp.env.Now().Sub(t0)/time.Second))
		tp.mu.Unlock()
		return true
	})
	tp.env.OnActivity(jobs.ActivityAwaitRecords, mock.Anything, started).Return(
		func(_ context.Context, in jobs.AwaitRecordsInput) (jobs.AwaitRecordsResult, error) {
			tp.mu.Lock()
			defer tp.mu.Unlock()
			tp.awaits = append(tp.awaits, int(tp.env.Now().Sub(t0)/time.Second))
			tp.awaitOffsets = append(tp.awaitOffsets, slices.Clone(in.Offsets))
			if tp.awaitErr != nil {
				return jobs.AwaitRecordsResult{}, tp.awaitErr
			}
			r := jobs.AwaitRecordsResult{Polls: 1}
			end := offs(tp.ends...)
			if !jobs.CaughtUp(in.Offsets, end) {
				r.End = end
			}
			return r, nil
		}).After(after)
}

func (tp *topic) awaitTimes() []int {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	return slices.Clone(tp.awaits)
}

func (tp *topic) end(ctx context.Context, in jobs.KafkaOffsetsInput) (jobs.KafkaOffsetsResult, error) {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	tp.endCalls = append(tp.endCalls, int(tp.env.Now().Sub(t0)/time.Second))
	var out []jobs.PartitionOffset
	for p, e := range tp.ends {
		out = append(out, jobs.PartitionOffset{Partition: int32(p), Offset: e})
	}
	return jobs.KafkaOffsetsResult{Offsets: out}, nil
}

func (tp *topic) offsets(ctx context.Context, in jobs.KafkaOffsetsInput) (jobs.KafkaOffsetsResult, error) {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	if in.Reset != "" {
		tp.resets = append(tp.resets, in.Reset)
	} else {
		tp.starts++
	}
	var out []jobs.PartitionOffset
	for p, e := range tp.ends {
		o := jobs.PartitionOffset{Partition: int32(p)}
		if in.Reset == "latest" {
			o.Offset = e
		}
		out = append(out, o)
	}
	return jobs.KafkaOffsetsResult{Offsets: out}, nil
}

func (tp *topic) batch(ctx context.Context, in jobs.KafkaBatchInput) (jobs.KafkaBatchResult, error) {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	n := len(tp.batches)
	attempt := activity.GetInfo(ctx).Attempt
	tp.batches = append(tp.batches, batchCall{at: tp.env.Now().Sub(t0), offsets: slices.Clone(in.Offsets), rejected: in.Rejected, retry: in.Retry, attempt: attempt, end: slices.Clone(in.End), epoch: in.Epoch})
	if tp.batchErr != nil {
		if err := tp.batchErr(n, attempt); err != nil {
			return jobs.KafkaBatchResult{}, err
		}
	}
	if reason, ok := tp.poison[n]; ok {
		return jobs.KafkaBatchResult{Offsets: in.Offsets, Paused: true, Reason: reason}, nil
	}
	res := jobs.KafkaBatchResult{}
	budget := tp.max
	if budget == 0 {
		budget = 1 << 62
	}
	ends := slices.Clone(tp.ends)
	for _, e := range in.End { // the batch stops where its input says
		ends[e.Partition] = e.Offset
	}
	for _, o := range in.Offsets {
		next := min(ends[o.Partition], o.Offset+budget)
		budget -= next - o.Offset
		res.Records += next - o.Offset
		res.Lag += ends[o.Partition] - next
		res.Offsets = append(res.Offsets, jobs.PartitionOffset{Partition: o.Partition, Offset: next})
	}
	res.Rows = res.Records
	res.More = res.Lag > 0
	if res.More && tp.nextEnd {
		res.NextEnd = offs(tp.ends...)
	}
	return res, nil
}

func (tp *topic) produce(p int, n int64) {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	tp.ends[p] += n
}

func (tp *topic) calls() []batchCall {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	return slices.Clone(tp.batches)
}

func kafkaParams(poll int) jobs.PipeParams {
	return jobs.PipeParams{Workspace: "default", Schema: "public", Name: "k", Kind: jobs.KindKafka, PollSeconds: poll}
}

func offs(o ...int64) []jobs.PartitionOffset {
	var out []jobs.PartitionOffset
	for p, v := range o {
		out = append(out, jobs.PartitionOffset{Partition: int32(p), Offset: v})
	}
	return out
}

func batchTimes(calls []batchCall) []int {
	var out []int
	for _, c := range calls {
		out = append(out, int(c.at/time.Second))
	}
	return out
}

// The pipe asks where to start once, then hands every batch the offsets
// the previous one returned, one turn per interval. Between batches it
// waits in AwaitRecords, whose read of the ends that shows records is
// where the next batch stops (no KafkaEnd); a read that finds nothing
// beyond the offsets (120 s) is not a turn of the workflow.
func TestKafkaPipeKeepsOffsets(t *testing.T) {
	env, tp := newKafkaEnv(t, 5, 3)
	at(env, 30*time.Second, func() { tp.produce(1, 4) })
	st := statusAt(t, env, 65*time.Second)
	at(env, 150*time.Second, func() { tp.produce(0, 2) })
	signal(env, 185*time.Second, jobs.SignalDrop, nil)
	run(env, jobs.PipeInput{Params: kafkaParams(60)})
	requireClean(t, env)

	calls := tp.calls()
	eq(t, "KafkaOffsets calls", tp.starts, 1)
	eq(t, "KafkaEnd times (s)", tp.endCalls, []int{0})
	eq(t, "AwaitRecords reads (s)", tp.awaitTimes(), []int{60, 120, 180})
	eq(t, "offsets each wait was handed", tp.awaitOffsets, [][]jobs.PartitionOffset{offs(5, 3), offs(5, 7), offs(5, 7)})
	eq(t, "batch times (s)", batchTimes(calls), []int{0, 60, 180})
	eq(t, "end of batch 2 (the wait's)", calls[1].end, offs(5, 7))
	eq(t, "offsets of batch 1", calls[0].offsets, offs(0, 0))
	eq(t, "offsets of batch 2", calls[1].offsets, offs(5, 3))
	eq(t, "offsets of batch 3", calls[2].offsets, offs(5, 7))
	eq(t, "end of batch 3", calls[2].end, offs(7, 7))
	eq(t, "status offsets", st.Kafka.Offsets, offs(5, 7))
	eq(t, "rows loaded", st.Counters.RowsLoaded, int64(12))
	eq(t, "last load", st.Counters.LastLoadTime, t0.Add(60*time.Second))
}

// A batch cut short by max.poll.records is followed by the next at once.
func TestKafkaPipeBacklogRunsAtOnce(t *testing.T) {
	env, tp := newKafkaEnv(t, 10, 10)
	tp.max = 8
	signal(env, 30*time.Second, jobs.SignalDrop, nil)
	run(env, jobs.PipeInput{Params: kafkaParams(60)})
	requireClean(t, env)
	calls := tp.calls()
	eq(t, "batch times (s)", batchTimes(calls), []int{0, 0, 0})
	eq(t, "offsets", []any{calls[1].offsets, calls[2].offsets}, []any{offs(8, 0), offs(10, 6)})
}

// A batch that leaves a backlog hands the next one the ends it read as it
// finished (NextEnd): the catch-up batches need no KafkaEnd before them.
func TestKafkaBacklogTakesNextEnd(t *testing.T) {
	env, tp := newKafkaEnv(t, 10, 10)
	tp.max, tp.nextEnd = 8, true
	signal(env, 30*time.Second, jobs.SignalDrop, nil)
	run(env, jobs.PipeInput{Params: kafkaParams(60)})
	requireClean(t, env)
	calls := tp.calls()
	eq(t, "batch times (s)", batchTimes(calls), []int{0, 0, 0})
	eq(t, "KafkaEnd times (s): the first batch's only", tp.endCalls, []int{0})
	eq(t, "ends of batches 2 and 3 (the batch before's NextEnd)", []any{calls[1].end, calls[2].end}, []any{offs(10, 10), offs(10, 10)})
	eq(t, "offsets", []any{calls[1].offsets, calls[2].offsets}, []any{offs(8, 0), offs(10, 6)})
}

// Too many bad records pause the pipe with the reason; resume clears it
// and tries again from the same offsets; the rejected count travels.
func TestKafkaPipePausesOverMaxErrors(t *testing.T) {
	env, tp := newKafkaEnv(t, 5)
	tp.poison[1] = "topic t partition 0 offset 7: bad"
	at(env, 10*time.Second, func() { tp.produce(0, 5) })
	paused := statusAt(t, env, 100*time.Second)
	signal(env, 200*time.Second, jobs.SignalResume, nil)
	resumed := statusAt(t, env, 201*time.Second)
	signal(env, 230*time.Second, jobs.SignalDrop, nil)
	run(env, jobs.PipeInput{Params: kafkaParams(60), Counters: jobs.PipeCounters{RowsRejected: 2}})
	requireClean(t, env)

	calls := tp.calls()
	eq(t, "batch times (s)", batchTimes(calls), []int{0, 60, 200})
	eq(t, "paused", paused.Paused, true)
	eq(t, "invalid reason", paused.Kafka.InvalidReason, "topic t partition 0 offset 7: bad")
	eq(t, "offsets kept", paused.Kafka.Offsets, offs(5))
	eq(t, "offsets after resume", calls[2].offsets, offs(5))
	eq(t, "rejected handed on", calls[2].rejected, int64(2))
	eq(t, "reason cleared", resumed.Kafka.InvalidReason, "")
	eq(t, "running again", resumed.Paused, false)
}

// A batch that failed for good is retried from the same offsets with
// Retry set, so that the activity removes what the failed one left.
func TestKafkaPipeFailedBatchRetriesClean(t *testing.T) {
	env, tp := newKafkaEnv(t, 5)
	tp.batchErr = func(n int, _ int32) error {
		if n == 0 {
			return temporal.NewNonRetryableApplicationError("insert failed", "Test", nil)
		}
		return nil
	}
	at(env, 30*time.Second, func() { tp.produce(0, 4) }) // more records before the retry
	st := statusAt(t, env, 30*time.Second)
	signal(env, 90*time.Second, jobs.SignalDrop, nil)
	run(env, jobs.PipeInput{Params: kafkaParams(60)})
	requireClean(t, env)
	calls := tp.calls()
	eq(t, "batch times (s)", batchTimes(calls), []int{0, 60})
	eq(t, "retry flags", []bool{calls[0].retry, calls[1].retry}, []bool{false, true})
	eq(t, "same offsets", calls[1].offsets, calls[0].offsets)
	eq(t, "end fixed before the batch", calls[0].end, offs(5))
	eq(t, "the same end for the batch after the failed one, records produced since or not", calls[1].end, calls[0].end)
	if st.Counters.LastError == "" || !st.Kafka.Unfinished {
		t.Errorf("status after the failure: %+v", st)
	}
}

// Continue-as-new carries the offsets, lag and pause reason.
func TestKafkaPipeContinueAsNewCarriesOffsets(t *testing.T) {
	env, _ := newKafkaEnv(t, 4, 2)
	env.SetContinueAsNewSuggested(true)
	run(env, jobs.PipeInput{Params: kafkaParams(60)})
	in := continuedInput(t, env)
	eq(t, "kafka state", *in.Kafka, jobs.KafkaState{Offsets: offs(4, 2)})
	eq(t, "rows", in.Counters.RowsLoaded, int64(6))

	env2, tp2 := newKafkaEnv(t, 6, 2) // two records more
	signal(env2, 10*time.Second, jobs.SignalDrop, nil)
	run(env2, in)
	requireClean(t, env2)
	eq(t, "no new start", tp2.starts, 0)
	eq(t, "continued from", tp2.calls()[0].offsets, offs(4, 2))
}

// RESET_KAFKA_GROUP_OFFSETS (the set update) moves the offsets before the
// next batch, which comes one interval after it; a reset to 'latest' skips
// what waits.
func TestKafkaPipeResetOffsets(t *testing.T) {
	env, tp := newKafkaEnv(t, 5, 3)
	for _, u := range []struct {
		at time.Duration
		to string
	}{{30 * time.Second, "earliest"}, {100 * time.Second, "latest"}} {
		at(env, u.at, func() {
			env.UpdateWorkflow(jobs.UpdateSet, u.to, &testsuite.TestUpdateCallback{
				OnAccept: func() {}, OnReject: func(err error) { t.Error(err) }, OnComplete: func(any, error) {},
			}, jobs.PipeSettings{PollSeconds: 60, ResetOffsets: u.to})
		})
	}
	at(env, 120*time.Second, func() { tp.produce(0, 2) })
	st := statusAt(t, env, 170*time.Second)
	signal(env, 200*time.Second, jobs.SignalDrop, nil)
	run(env, jobs.PipeInput{Params: kafkaParams(60)})
	requireClean(t, env)

	calls := tp.calls()
	eq(t, "resets", tp.resets, []string{"earliest", "latest"})
	// At 160 s the reset to 'latest' moves past what waits, and the turn
	// has nothing left to load: no batch.
	eq(t, "batch times (s)", batchTimes(calls), []int{0, 90})
	eq(t, "offsets of the batch after the reset to earliest", calls[1].offsets, offs(0, 0))
	// It loads the records again as new loads: another epoch, so another
	// commit id than the first batch's, which started there too.
	eq(t, "epochs of the batches", []int64{calls[0].epoch, calls[1].epoch}, []int64{0, 1})
	eq(t, "epoch after the reset to latest", st.Kafka.Epoch, int64(2))
	eq(t, "offsets after the reset to latest", st.Kafka.Offsets, offs(7, 3))
	eq(t, "KafkaEnd times (s)", tp.endCalls, []int{0, 90, 160})
}

// A REFRESH, a pause or a drop cancel the wait: REFRESH turns at once.
func TestKafkaSignalsCancelAwait(t *testing.T) {
	env, tp := newKafkaEnv(t, 5)
	at(env, 20*time.Second, func() { tp.produce(0, 2) })
	signal(env, 30*time.Second, jobs.SignalRefresh, nil)
	st := statusAt(t, env, 31*time.Second)
	signal(env, 40*time.Second, jobs.SignalDrop, nil)
	run(env, jobs.PipeInput{Params: kafkaParams(60)})
	requireClean(t, env)
	calls := tp.calls()
	eq(t, "batch times (s)", batchTimes(calls), []int{0, 30})
	eq(t, "KafkaEnd times (s): the refreshed turn reads its own", tp.endCalls, []int{0, 30})
	tp.mu.Lock()
	eq(t, "AwaitRecords starts (s): after each turn", tp.awaitStarts, []int{0, 30})
	tp.mu.Unlock()
	eq(t, "offsets after the refresh", st.Kafka.Offsets, offs(7))
}

// A failed wait (no worker on the await queue, a broker down) does not
// spin: the pipe waits on its timer once, then tries the wait again.
func TestKafkaAwaitFailureFallsBackToTimer(t *testing.T) {
	env, tp := newKafkaEnv(t, 5)
	tp.awaitErr = errors.New("no brokers")
	at(env, 30*time.Second, func() { tp.produce(0, 1) })
	signal(env, 150*time.Second, jobs.SignalDrop, nil)
	run(env, jobs.PipeInput{Params: kafkaParams(60)})
	requireClean(t, env)
	// Each failed wait reads once, 60 s after it starts (the stand-in's
	// time); the timer follows it, and the turn after the timer reads the
	// ends itself.
	eq(t, "AwaitRecords reads (s)", tp.awaitTimes(), []int{60})
	eq(t, "KafkaEnd times (s)", tp.endCalls, []int{0, 120})
	eq(t, "batch times (s)", batchTimes(tp.calls()), []int{0, 120})
}

// Records found by a wait while a batch interval change (the set update)
// restarts it: the wait starts again under the new interval; a
// RESET_KAFKA_GROUP_OFFSETS instead leaves the wait for the timer, so the
// reset applies at the next interval, records or not (see
// TestKafkaPipeResetOffsets).
func TestKafkaAwaitRestartsOnSet(t *testing.T) {
	env, tp := newKafkaEnv(t, 5)
	at(env, 30*time.Second, func() {
		env.UpdateWorkflow(jobs.UpdateSet, "s", &testsuite.TestUpdateCallback{
			OnAccept: func() {}, OnReject: func(err error) { t.Error(err) }, OnComplete: func(any, error) {},
		}, jobs.PipeSettings{PollSeconds: 60})
	})
	at(env, 50*time.Second, func() { tp.produce(0, 3) })
	signal(env, 100*time.Second, jobs.SignalDrop, nil)
	run(env, jobs.PipeInput{Params: kafkaParams(60)})
	requireClean(t, env)
	tp.mu.Lock()
	eq(t, "AwaitRecords starts (s): the first cancelled at 30, the same wait again, one after the batch", tp.awaitStarts, []int{0, 30, 90})
	tp.mu.Unlock()
	eq(t, "batch times (s)", batchTimes(tp.calls()), []int{0, 90})
	eq(t, "KafkaEnd times (s)", tp.endCalls, []int{0})
}
