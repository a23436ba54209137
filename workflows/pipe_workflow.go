// Package workflows holds lakepipe's Temporal workflows: deterministic code
// only (workflow.* APIs, no I/O, no wall clock, no goroutines, no map-order
// decisions). All I/O is in package activities.
package workflows

import (
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/lakepipe/lakepipe/internal/jobs"
)

// maxHints bounds the event-notified paths a pipe keeps between turns: a
// flood of notifications must not grow the history without bound. Paths
// beyond it are dropped; the wake-up stays, and the turn's listing finds
// their files anyway.
const maxHints = 1000

// localListTimeout bounds a local listing; one that takes longer (a slow
// store) is left to a regular ListFiles.
const localListTimeout = 10 * time.Second

// historyLimit is where the pipe continues as new even if the server has
// not suggested it yet: a pipe runs forever, its history must not.
const historyLimit = 2000

// An idle polling pipe waits in AwaitFiles (version "await-listing"), an
// idle Kafka pipe in AwaitRecords (version "await-records"):
// awaitFor is how long one wait lasts at most (a few history events per
// awaitFor, however short the poll interval); awaitHeartbeat is its
// heartbeat timeout, how soon a wait on a dead worker is noticed;
// awaitStart is how long it may wait for a worker that serves the await
// queue before the pipe falls back to its timer; awaitSlack covers a
// last listing that runs long (a full listing of a large volume).
const (
	awaitFor       = 10 * time.Minute
	awaitHeartbeat = 2 * time.Minute
	awaitStart     = time.Minute
	awaitSlack     = 30 * time.Minute
)

// VolumePipeWorkflow is a pipe over a volume's files, KafkaPipeWorkflow
// one over a Kafka topic; PipeWorkflow is the type of both before they
// had their own (runs started then keep it, continuing as new under it).
// All three run pipeWorkflow: list (or read the topic) → load → record →
// sleep, forever, until dropped. Pause, resume and refresh arrive as
// updates (ALTER PIPE, which waits for the reply) or signals (the Temporal
// CLI); file events as signals; status is a query. A run started with
// lakepipe's search attributes keeps LakepipeStatus and the memo's
// figures current.
func VolumePipeWorkflow(ctx workflow.Context, in jobs.PipeInput) error {
	return runPipe(ctx, jobs.VolumePipeWorkflowName, in)
}

// KafkaPipeWorkflow: see VolumePipeWorkflow.
func KafkaPipeWorkflow(ctx workflow.Context, in jobs.PipeInput) error {
	return runPipe(ctx, jobs.KafkaPipeWorkflowName, in)
}

// PipeWorkflow: see VolumePipeWorkflow.
func PipeWorkflow(ctx workflow.Context, in jobs.PipeInput) error {
	return runPipe(ctx, jobs.PipeWorkflowName, in)
}

// pipeWorkflow is one run of a pipe: its state, and methods for its loop
// and its message handlers (Temporal's safe-message-handler style). The
// handlers only change state; the loop decides what to do.
type pipeWorkflow struct {
	ctx      workflow.Context
	typeName string // the workflow type it continues as new under
	p        jobs.PipeParams

	paused, running, dropped, wake bool
	rearm                          bool // settings changed: restart the wait between turns
	counters                       jobs.PipeCounters
	invalid                        string
	kst                            *jobs.KafkaState
	hints                          []string
	list                           jobs.ListState
	turnBegan                      time.Time // the last turn's start: the poll interval counts from it

	// versions of this run's history (workflow.GetVersion)
	signalsDuringTurn, localListing, fixedEnd, awaitListing, awaitRecords bool

	vis   *visibility
	kick  workflow.Channel // wakes the loop after an update
	loads workflow.Context // activity context on the load queue

	pauseCh, resumeCh, refreshCh, filesCh, dropCh, setCh workflow.ReceiveChannel
}

// apply takes new settings (ALTER PIPE … SET), from the next turn on; the
// wait for it starts again under the new interval. It says what applies.
func (w *pipeWorkflow) apply(s jobs.PipeSettings) string {
	if s.PollSeconds > 0 {
		w.p.PollSeconds = s.PollSeconds
	}
	if s.MaxFilesPerTurn > 0 {
		w.p.MaxFilesPerTurn = s.MaxFilesPerTurn
	}
	w.rearm = true
	if w.p.Kind == jobs.KindKafka {
		detail := fmt.Sprintf("from its next batch: one every %d s", w.p.PollSeconds)
		if s.ResetOffsets != "" {
			w.kst.ResetTo = s.ResetOffsets
			detail = "its next batch reads from " + s.ResetOffsets + "; " + detail
		}
		return detail
	}
	return fmt.Sprintf("from its next turn: one every %d s, at most %d files each", w.p.PollSeconds, w.p.MaxFilesPerTurn)
}

func runPipe(ctx workflow.Context, typeName string, in jobs.PipeInput) error {
	w := &pipeWorkflow{ctx: ctx, typeName: typeName, p: in.Params, paused: in.Paused, counters: in.Counters,
		invalid: in.InvalidReason, kst: in.Kafka, list: in.List}
	if w.p.PollSeconds <= 0 {
		w.p.PollSeconds = 30
	}
	if w.p.MaxFilesPerTurn <= 0 {
		w.p.MaxFilesPerTurn = 2000
	}
	if w.p.Kind == jobs.KindKafka && w.kst == nil {
		w.kst = &jobs.KafkaState{}
	}
	// The order of these calls is the order of their markers in every
	// recorded history: it must not change.
	//
	// From version 1 on, signals are applied while a turn's activities run,
	// in the order they arrive. Before, they waited in their channels until
	// the turn ended and were then taken channel by channel, pause before
	// resume: a resume followed by a pause during a turn left the pipe
	// running. Runs recorded before keep the old behaviour on replay.
	w.signalsDuringTurn = workflow.GetVersion(ctx, "signals-during-turn", workflow.DefaultVersion, 1) >= 1
	// From version 1 on, the turns of a pipe whose listing is incremental
	// list in a local activity: an idle turn is then one workflow task and
	// ~6 history events instead of two tasks, an activity task and ~12.
	w.localListing = w.p.Kind != jobs.KindKafka && workflow.GetVersion(ctx, "local-listing", workflow.DefaultVersion, 1) >= 1
	// From version 1 on, a Kafka batch's end offsets are read before it
	// (a local activity) and passed to every attempt of it.
	w.fixedEnd = w.p.Kind == jobs.KindKafka && workflow.GetVersion(ctx, "kafka-fixed-end", workflow.DefaultVersion, 1) >= 1
	// From version 1 on, an idle pipe that polls (LIST, LIST_PURGE) waits
	// in AwaitFiles, which lists every poll interval and returns once
	// files wait: an idle poll adds no history event and no workflow task.
	// Before, every poll was a timer, a workflow task and a listing.
	w.awaitListing = w.p.Kind != jobs.KindKafka && workflow.GetVersion(ctx, "await-listing", workflow.DefaultVersion, 1) >= 1
	// From version 1 on, an idle Kafka pipe waits in AwaitRecords, which
	// reads the topic's ends every batch interval and returns once records
	// wait, the end of the next batch: an idle interval adds no history
	// event. Before, every interval was a timer, a workflow task and a
	// KafkaEnd.
	w.awaitRecords = w.p.Kind == jobs.KindKafka && workflow.GetVersion(ctx, "await-records", workflow.DefaultVersion, 1) >= 1

	if err := workflow.SetQueryHandler(ctx, jobs.QueryStatus, w.queryStatus); err != nil {
		return err
	}
	w.ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		// Copying a batch of big files may run long, so it heartbeats
		// (every 5 s and per file); a worker that dies is noticed within
		// the heartbeat timeout and the batch goes to another.
		StartToCloseTimeout: 2 * time.Hour,
		HeartbeatTimeout:    30 * time.Second,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:    time.Second,
			BackoffCoefficient: 2,
			MaximumInterval:    time.Minute,
			// Retries go on: a pipe waits out a ClickHouse or S3 outage.
			NonRetryableErrorTypes: []string{jobs.ErrTypePipeGone, jobs.ErrTypePipeInvalid},
		},
	})
	ctx = w.ctx
	// Visibility. A run started without lakepipe's search attributes (a
	// namespace without them, runs of earlier releases) never upserts, so
	// its history replays unchanged.
	w.vis = newVisibility(ctx)
	// kick wakes the loop after an update changed the state: the loop
	// waits in selectors, which updates do not reach otherwise.
	w.kick = workflow.NewBufferedChannel(ctx, 1)
	if err := setPipeUpdates(ctx, w.p.Name, pipeControl{
		paused:  func() bool { return w.paused },
		running: func() bool { return w.running },
		dropped: func() bool { return w.dropped },
		pause:   func() { w.setPaused(true) },
		resume:  w.resume,
		refresh: func() { w.wake = true },
		set:     w.apply,
		status:  w.status,
		kick:    func() { w.kick.SendAsync(nil) },
	}); err != nil {
		return err
	}
	// Copies and Kafka batches run on the load queue (version "load-queue").
	w.loads = loadQueue(ctx)

	w.pauseCh = workflow.GetSignalChannel(ctx, jobs.SignalPause)
	w.resumeCh = workflow.GetSignalChannel(ctx, jobs.SignalResume)
	w.refreshCh = workflow.GetSignalChannel(ctx, jobs.SignalRefresh)
	w.filesCh = workflow.GetSignalChannel(ctx, jobs.SignalFiles)
	w.dropCh = workflow.GetSignalChannel(ctx, jobs.SignalDrop)
	w.setCh = workflow.GetSignalChannel(ctx, jobs.SignalSet)
	return w.loop()
}

func (w *pipeWorkflow) queryStatus() (jobs.PipeStatus, error) {
	return jobs.PipeStatus{Params: w.p, Paused: w.paused, Running: w.running, Counters: w.counters, Kafka: w.kst, InvalidReason: w.invalid, List: w.list}, nil
}

func (w *pipeWorkflow) status() jobs.Status {
	if w.paused {
		return jobs.StatusPaused
	}
	return jobs.StatusRunning
}

func (w *pipeWorkflow) setPaused(v bool) {
	w.paused = v
	w.vis.showStatus(w.ctx, w.status())
}

// resume runs the pipe again and forgets why it paused itself.
func (w *pipeWorkflow) resume() {
	w.setPaused(false)
	w.wake, w.invalid = true, ""
	if w.kst != nil {
		w.kst.InvalidReason = ""
	}
}

// addSignals registers every signal on a selector; the handlers only
// change state, the loop decides what to do.
func (w *pipeWorkflow) addSignals(sel workflow.Selector) {
	ctx := w.ctx
	sel.AddReceive(w.pauseCh, func(c workflow.ReceiveChannel, _ bool) { c.Receive(ctx, nil); w.setPaused(true) })
	sel.AddReceive(w.resumeCh, func(c workflow.ReceiveChannel, _ bool) { c.Receive(ctx, nil); w.resume() })
	sel.AddReceive(w.kick, func(c workflow.ReceiveChannel, _ bool) { c.Receive(ctx, nil) })
	sel.AddReceive(w.refreshCh, func(c workflow.ReceiveChannel, _ bool) { c.Receive(ctx, nil); w.wake = true })
	sel.AddReceive(w.filesCh, func(c workflow.ReceiveChannel, _ bool) {
		var f jobs.FilesSignal
		c.Receive(ctx, &f)
		if room := maxHints - len(w.hints); room > 0 {
			w.hints = append(w.hints, f.Paths[:min(room, len(f.Paths))]...)
		}
		w.wake = true
	})
	sel.AddReceive(w.dropCh, func(c workflow.ReceiveChannel, _ bool) { c.Receive(ctx, nil); w.dropped = true })
	sel.AddReceive(w.setCh, func(c workflow.ReceiveChannel, _ bool) {
		var st jobs.PipeSettings
		c.Receive(ctx, &st)
		w.apply(st)
	})
}

// get waits for an activity's result, applying signals meanwhile.
func (w *pipeWorkflow) get(f workflow.Future, v any) error {
	if w.signalsDuringTurn {
		awaitTakingSignals(w.ctx, f, w.addSignals)
	}
	return f.Get(w.ctx, v)
}

// initialDelay holds a new pipe's first turn back for
// INITIAL_DELAY_IN_SECONDS, taking signals: a REFRESH, a drop or a pause
// ends the wait.
func (w *pipeWorkflow) initialDelay() {
	ctx, cancel := workflow.WithCancel(w.ctx)
	defer cancel()
	timer := workflow.NewTimer(ctx, time.Duration(w.p.InitialDelaySeconds)*time.Second)
	for fired := false; !fired && !w.wake && !w.dropped && !w.paused; {
		sel := workflow.NewSelector(w.ctx)
		sel.AddFuture(timer, func(workflow.Future) { fired = true })
		w.addSignals(sel)
		sel.Select(w.ctx)
	}
}

// loop runs turns until the pipe is dropped or continues as new.
func (w *pipeWorkflow) loop() error {
	if c := w.counters; w.p.InitialDelaySeconds > 0 && c.Turns == 0 && c.ContinuedRuns == 0 {
		w.initialDelay()
	}
	ctx := w.ctx
	var pre *jobs.ListResult // files AwaitFiles found, the next turn's listing
	for {
		p := w.p // settings change between turns (apply)
		drainSignals(ctx, w.addSignals)
		if w.dropped {
			return nil
		}
		if w.paused {
			sel := workflow.NewSelector(ctx)
			w.addSignals(sel)
			sel.Select(ctx)
			continue
		}

		// One turn.
		w.turnBegan = workflow.Now(ctx)
		w.wake = false
		w.running = true
		var more bool
		var err error
		if p.Kind == jobs.KindKafka {
			more, err = kafkaTurn(ctx, w.loads, p, w.kst, &w.counters, w.fixedEnd, w.get)
			if w.kst.InvalidReason != "" {
				w.setPaused(true)
			}
		} else {
			more, err = turn(ctx, w.loads, p, &w.counters, &w.hints, &w.list, pre, w.localListing, w.get)
			pre = nil
		}
		w.running = false
		w.counters.Turns++
		w.counters.LastTurnTime = workflow.Now(ctx)
		var appErr *temporal.ApplicationError
		if errors.As(err, &appErr) && appErr.Type() == jobs.ErrTypePipeGone {
			return nil
		}
		if err != nil {
			w.counters.LastError = err.Error()
			workflow.GetLogger(ctx).Warn("pipe turn failed", "pipe", p.Name, "error", err)
			// From version 1 on, an error no retry fixes pauses the pipe
			// (runs recorded before retried it at every poll). The version
			// is asked only when such an error comes, so that histories
			// without one replay unchanged.
			if errors.As(err, &appErr) && appErr.Type() == jobs.ErrTypePipeInvalid &&
				workflow.GetVersion(ctx, "pause-on-invalid", workflow.DefaultVersion, 1) >= 1 {
				w.setPaused(true)
				w.invalid = appErr.Message()
			}
		}
		c := w.counters
		fig := jobs.PipeFigures{FilesLoaded: c.FilesLoaded, RowsLoaded: c.RowsLoaded, FilesFailed: c.FilesFailed, LastLoadTime: c.LastLoadTime, Backlog: c.Backlog}
		w.vis.showFigures(ctx, fig, fig == jobs.PipeFigures{})

		info := workflow.GetInfo(ctx)
		if info.GetContinueAsNewSuggested() || info.GetCurrentHistoryLength() > historyLimit {
			drainSignals(ctx, w.addSignals)
			if w.dropped {
				return nil
			}
			_ = workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) })
			w.counters.ContinuedRuns++
			return workflow.NewContinueAsNewError(ctx, w.typeName, jobs.PipeInput{Params: p, Paused: w.paused, Counters: w.counters, Kafka: w.kst, InvalidReason: w.invalid, List: w.list})
		}
		if more || w.wake || len(w.hints) > 0 || w.paused || w.dropped {
			continue
		}
		// Sleep until the poll timer fires or a signal wakes the pipe; new
		// settings start the wait again under their interval.
		w.rearm = false
		if w.awaitListing && p.IngestMode != "EVENT_NOTIFICATION" {
			var waited bool
			if pre, waited = w.awaitFiles(); waited {
				continue
			}
		}
		// A Kafka pipe waits for records once its last turn found none
		// (no batch in progress; a failed turn retries on the timer).
		if w.awaitRecords && err == nil && len(w.kst.End) == 0 && !w.kst.Unfinished && len(w.kst.Offsets) > 0 && w.kst.ResetTo == "" {
			if w.awaitKafka() {
				continue
			}
		}
		for {
			timerCtx, cancel := workflow.WithCancel(ctx)
			sel := workflow.NewSelector(ctx)
			timedOut := false
			sel.AddFuture(workflow.NewTimer(timerCtx, time.Duration(w.p.PollSeconds)*time.Second), func(workflow.Future) { timedOut = true })
			w.addSignals(sel)
			for !timedOut && !w.wake && !w.dropped && !w.paused && !w.rearm {
				sel.Select(ctx)
			}
			cancel()
			if !w.rearm || w.wake || w.dropped || w.paused {
				break
			}
			w.rearm = false
		}
	}
}

// awaitFiles is the wait of an idle polling pipe: AwaitFiles lists every
// poll interval until files wait. It returns the listing that found them,
// for the next turn.
func (w *pipeWorkflow) awaitFiles() (found *jobs.ListResult, waited bool) {
	waited = w.idle(
		func(ctx workflow.Context, since time.Time) workflow.Future {
			return workflow.ExecuteActivity(ctx, jobs.ActivityAwaitFiles, jobs.AwaitInput{Params: w.p, State: w.list, For: awaitFor, Since: since})
		},
		func(f workflow.Future) (int, bool, error) {
			var r jobs.AwaitResult
			if err := f.Get(w.ctx, &r); err != nil {
				return 0, false, err
			}
			w.list = r.State
			w.counters.Backlog = r.Backlog
			if len(r.Files) > 0 {
				found = &r.ListResult
			}
			return r.Polls, found != nil, nil
		},
		func() bool { return true })
	return found, waited
}

// awaitKafka is the wait of an idle Kafka pipe: AwaitRecords reads the
// topic's ends every batch interval until records wait; the ends it read
// are where the next batch stops (as KafkaEnd's would be).
func (w *pipeWorkflow) awaitKafka() (waited bool) {
	return w.idle(
		func(ctx workflow.Context, since time.Time) workflow.Future {
			return workflow.ExecuteActivity(ctx, jobs.ActivityAwaitRecords, jobs.AwaitRecordsInput{Params: w.p, Offsets: w.kst.Offsets, For: awaitFor, Since: since})
		},
		func(f workflow.Future) (polls int, found bool, err error) {
			var r jobs.AwaitRecordsResult
			if err := f.Get(w.ctx, &r); err != nil {
				return 0, false, err
			}
			if len(r.End) > 0 {
				w.kst.End = r.End
			}
			return r.Polls, len(r.End) > 0, nil
		},
		// A RESET_KAFKA_GROUP_OFFSETS applies at the next interval, found
		// records or not: the timer's.
		func() bool { return w.kst.ResetTo == "" })
}

// idle runs the waits of an idle pipe (AwaitFiles, AwaitRecords), one
// after another on the await queue, until one finds work or a signal or
// update wakes the pipe (REFRESH, pause, drop), which cancels it. New
// settings start the wait again under them, while keep holds. start
// schedules one wait, since the turn that came before it (zero for the
// waits after the first); took reads a finished one. waited is false when
// a wait failed (no worker serves its queue, its worker died, a poll
// failed) or keep no longer holds: the pipe then waits on its timer this
// once, so that a failing wait never spins.
func (w *pipeWorkflow) idle(start func(workflow.Context, time.Time) workflow.Future, took func(workflow.Future) (polls int, found bool, err error), keep func() bool) (waited bool) {
	since := w.turnBegan
	for {
		ctx, cancel := workflow.WithCancel(w.ctx)
		actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
			TaskQueue:              jobs.AwaitQueue(workflow.GetInfo(ctx).TaskQueueName),
			ScheduleToStartTimeout: awaitStart,
			StartToCloseTimeout:    awaitFor + awaitSlack,
			HeartbeatTimeout:       awaitHeartbeatFor(w.p.PollSeconds),
			// A failed wait is not retried: the turn that follows lists
			// with the regular activities, whose retries and errors the
			// pipe knows.
			RetryPolicy: &temporal.RetryPolicy{MaximumAttempts: 1},
		})
		// The first wait after a turn counts the interval from the turn's
		// start; the waits after it from their own.
		f := start(actx, since)
		since = time.Time{}
		done := false
		sel := workflow.NewSelector(w.ctx)
		sel.AddFuture(f, func(workflow.Future) { done = true })
		w.addSignals(sel)
		w.rearm = false
		for !done && !w.wake && !w.dropped && !w.paused && !w.rearm {
			sel.Select(w.ctx)
		}
		if !done {
			// Woken: the wait is cancelled (the attempt learns of it at its
			// next heartbeat) and the loop turns at once.
			cancel()
			if w.rearm && !w.wake && !w.dropped && !w.paused {
				if !keep() {
					return false
				}
				continue // the same wait under the new settings
			}
			return true
		}
		cancel()
		polls, found, err := took(f)
		if err != nil {
			workflow.GetLogger(w.ctx).Warn("pipe wait failed; waiting on the timer", "pipe", w.p.Name, "error", err)
			return false
		}
		if polls > 0 {
			w.counters.Turns += int64(polls)
			w.counters.LastTurnTime = workflow.Now(w.ctx)
		}
		if found {
			// The poll that found them is the turn that loads them, which
			// the loop counts.
			w.counters.Turns--
			return true
		}
		info := workflow.GetInfo(w.ctx)
		if info.GetContinueAsNewSuggested() || info.GetCurrentHistoryLength() > historyLimit {
			return true // the turn that follows continues as new
		}
	}
}

// awaitHeartbeatFor is the heartbeat timeout of a wait: four poll
// intervals, between 15 s and awaitHeartbeat. The SDK sends a wait's
// heartbeat every 80 % of it, and the heartbeat carries the polls made,
// which DESC PIPE adds to the turns: a pipe polling every second shows
// its listings within 12 s, one polling every 30 s costs Temporal a call
// every 90 s (the await worker's heartbeat throttle).
func awaitHeartbeatFor(pollSeconds int) time.Duration {
	return min(max(4*time.Duration(pollSeconds)*time.Second, 15*time.Second), awaitHeartbeat)
}

// turn lists and loads one batch; more reports a backlog beyond it. The
// copy runs in loads (the load queue's context); get waits for an
// activity's result. pre, when set, is the listing already made (by
// AwaitFiles).
func turn(ctx, loads workflow.Context, p jobs.PipeParams, c *jobs.PipeCounters, hints *[]string, ls *jobs.ListState, pre *jobs.ListResult, local bool, get func(workflow.Future, any) error) (more bool, err error) {
	var list jobs.ListResult
	h := *hints
	*hints = nil
	listed := false
	if pre != nil && len(h) == 0 {
		list, listed = *pre, true
	}
	if !listed && local && ls.Ordered && len(h) == 0 {
		// One attempt: any failure, and a full listing due, go to the
		// regular activity, whose retries and errors the pipe knows.
		lctx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
			ScheduleToCloseTimeout: localListTimeout,
			RetryPolicy:            &temporal.RetryPolicy{MaximumAttempts: 1},
		})
		var r jobs.ListResult
		if err := get(workflow.ExecuteLocalActivity(lctx, jobs.ActivityListNewFiles, jobs.ListInput{Params: p, State: *ls}), &r); err == nil && !r.NeedFull {
			list, listed = r, true
		}
	}
	// A large volume may take a while to list; the listing heartbeats all
	// along, so a worker killed mid-listing is noticed within the heartbeat
	// timeout (without one, its attempt would hold the pipe for the whole
	// start-to-close timeout).
	lctx := workflow.WithStartToCloseTimeout(ctx, 30*time.Minute)
	if !listed {
		if err := get(workflow.ExecuteActivity(lctx, jobs.ActivityListFiles, jobs.ListInput{Params: p, Hint: h, State: *ls}), &list); err != nil {
			return false, err
		}
	}
	*ls = list.State
	c.Backlog = list.Backlog
	if len(list.Files) == 0 {
		return false, nil
	}
	var res jobs.CopyResult
	if err := get(workflow.ExecuteActivity(loads, jobs.ActivityCopyFiles, jobs.CopyInput{Params: p, Files: list.Files}), &res); err != nil {
		return false, err
	}
	if list.CursorAfter != "" {
		// The batch is handled: the next listing starts after it, not
		// where this one did. (No command: histories without it replay.)
		ls.Cursor = list.CursorAfter
	}
	for _, f := range res.Files {
		switch f.Status {
		case jobs.FileLoaded, jobs.FilePartiallyLoaded:
			c.FilesLoaded++
			c.LastLoadTime = workflow.Now(ctx)
		case jobs.FileFailed:
			c.FilesFailed++
			c.LastError = f.Path + ": " + f.FirstError
		}
		c.RowsLoaded += f.Rows
		c.RowsRejected += f.Rejected
	}
	return list.Backlog > 0, nil
}
